//! Telemetry port: the process's Prometheus metrics and their HTTP endpoints ([`metrics`],
//! [`server`]), and logging/tracing with optional OTLP export ([`trace`]).

pub mod metrics;
pub mod server;
pub mod trace;

pub use metrics::{DialogueMetrics, metrics};
pub use server::Health;
