//! The ports of SAGE-RS: how the actors reach the outside. [`transport`] carries role requests
//! in-process or over NATS JetStream, [`llm`] talks to the models (OpenAI-compatible, Anthropic,
//! HTTP agents, simulated), [`store`] reads and writes the results folder and exports training
//! data, [`telemetry`] serves Prometheus metrics and exports traces.

pub mod llm;
pub mod store;
pub mod telemetry;
pub mod transport;
