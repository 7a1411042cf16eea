//! How the dialogue driver reaches the roles: one request/reply call per role. The driver is
//! handed a [`Transport`] and never knows whether the roles run in this process ([`local`]) or
//! behind a message broker.

pub mod local;
pub mod nats;

use crate::protocol::{
    JudgeReply, JudgeRequest, RuleReply, RuleRequest, ServiceReply, ServiceRequest, UserReply,
    UserRequest,
};

/// A role could not be reached.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TransportError {
    /// No process serves the role, or it went away.
    #[error("role {role} unavailable: {message}")]
    Unavailable {
        /// The role.
        role: &'static str,
        /// Why.
        message: String,
    },
    /// No reply in time.
    #[error("role {role} did not answer in time")]
    Timeout {
        /// The role.
        role: &'static str,
    },
    /// A message could not be encoded or decoded.
    #[error("role {role}: bad message: {message}")]
    Codec {
        /// The role.
        role: &'static str,
        /// The codec error.
        message: String,
    },
}

/// Request/reply to each role.
#[async_trait::async_trait]
pub trait Transport: Send + Sync {
    /// The next customer message.
    async fn user(&self, request: UserRequest) -> Result<UserReply, TransportError>;
    /// The agent under test answers.
    async fn service(&self, request: ServiceRequest) -> Result<ServiceReply, TransportError>;
    /// The judge panel's verdict.
    async fn judge(&self, request: JudgeRequest) -> Result<JudgeReply, TransportError>;
    /// The rule engine's reference.
    async fn rule(&self, request: RuleRequest) -> Result<RuleReply, TransportError>;
}
