//! The ports of SAGE-RS: how the actors reach the outside. [`transport`] carries role requests
//! in-process or over NATS JetStream, [`llm`] talks to the models (OpenAI-compatible, Anthropic,
//! HTTP agents, simulated), [`store`] reads and writes the results folder and exports training
//! data, [`telemetry`] serves Prometheus metrics and exports traces.

pub mod llm;
pub mod store;
pub mod telemetry;
pub mod transport;

/// Makes sure rustls has a process-wide crypto provider (ring, the project's choice): reqwest is
/// built with `rustls-no-provider` and panics when building a client without one (the model
/// backends', the OTLP exporter's), and async-nats's TLS shares it.
pub(crate) fn ensure_crypto_provider() {
    if rustls::crypto::CryptoProvider::get_default().is_none() {
        // An error means another thread installed one first: fine either way.
        let _ = rustls::crypto::ring::default_provider().install_default();
    }
}
