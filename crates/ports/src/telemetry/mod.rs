//! Telemetry port: the process's Prometheus metrics and their HTTP endpoints ([`metrics`],
//! [`server`]), logging/tracing with optional OTLP export ([`trace`]), and model calls as
//! GenAI spans ([`genai`]).

pub mod genai;
pub mod metrics;
pub mod server;
pub mod trace;

pub use metrics::{DialogueMetrics, metrics};
pub use server::Health;
