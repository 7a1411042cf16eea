//! How the dialogue driver reaches the roles: one request/reply call per role. The driver is
//! handed a [`Transport`] and never knows whether the roles run in this process ([`local`]) or
//! behind a message broker.

pub mod local;
pub mod nats;

use sage_core::protocol::call::{CallRole, ModelCallReply, ModelCallRequest};
use sage_core::protocol::desk::{
    DeskAgentReply, DeskAgentRequest, DeskCustomerReply, DeskCustomerRequest, DeskJudgeReply,
    DeskJudgeRequest,
};
use sage_core::protocol::{
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
    /// Support desk: the agent under test plays a turn with its tools (the service role).
    async fn desk_agent(&self, request: DeskAgentRequest)
    -> Result<DeskAgentReply, TransportError>;
    /// Support desk: the customer's next message (the user role).
    async fn desk_customer(
        &self,
        request: DeskCustomerRequest,
    ) -> Result<DeskCustomerReply, TransportError>;
    /// Support desk: the two judges score a conversation (the judge role).
    async fn desk_judge(&self, request: DeskJudgeRequest)
    -> Result<DeskJudgeReply, TransportError>;
    /// One model call of a suite whose driver writes its own prompts (tau2 retail), served by
    /// the role process of its [`CallRole`](sage_core::protocol::call::CallRole).
    async fn call(&self, request: ModelCallRequest) -> Result<ModelCallReply, TransportError>;
}

/// Which roles a [`Routed`] transport serves in this process.
#[derive(Debug, Clone, Default)]
pub struct LocalRoles {
    /// The user role.
    pub user: bool,
    /// The service role: `None` when not served here; otherwise the models served (all when
    /// empty).
    pub service: Option<Vec<String>>,
    /// The judge panel.
    pub judge: bool,
    /// The rule engine.
    pub rule: bool,
}

/// Roles this process serves are asked in-process, the others through `remote`: a worker that
/// drives dialogues and also serves a role answers its own dialogues' requests for that role
/// without a round trip through the broker (other processes' requests still reach it there).
pub struct Routed {
    /// The roles served here.
    pub local: std::sync::Arc<dyn Transport>,
    /// Everything else.
    pub remote: std::sync::Arc<dyn Transport>,
    /// Which roles are served here.
    pub roles: LocalRoles,
}

impl Routed {
    /// Whether the service role for `model` is served here.
    fn serves_model(&self, model: &str) -> bool {
        self.roles
            .service
            .as_ref()
            .is_some_and(|models| models.is_empty() || models.iter().any(|m| m == model))
    }

    fn pick(&self, here: bool) -> &dyn Transport {
        if here {
            self.local.as_ref()
        } else {
            self.remote.as_ref()
        }
    }
}

#[async_trait::async_trait]
impl Transport for Routed {
    async fn user(&self, request: UserRequest) -> Result<UserReply, TransportError> {
        self.pick(self.roles.user).user(request).await
    }

    async fn service(&self, request: ServiceRequest) -> Result<ServiceReply, TransportError> {
        let here = self.serves_model(&request.job.service_model);
        self.pick(here).service(request).await
    }

    async fn judge(&self, request: JudgeRequest) -> Result<JudgeReply, TransportError> {
        self.pick(self.roles.judge).judge(request).await
    }

    async fn rule(&self, request: RuleRequest) -> Result<RuleReply, TransportError> {
        self.pick(self.roles.rule).rule(request).await
    }

    async fn desk_agent(
        &self,
        request: DeskAgentRequest,
    ) -> Result<DeskAgentReply, TransportError> {
        let here = self.serves_model(&request.job.model);
        self.pick(here).desk_agent(request).await
    }

    async fn desk_customer(
        &self,
        request: DeskCustomerRequest,
    ) -> Result<DeskCustomerReply, TransportError> {
        self.pick(self.roles.user).desk_customer(request).await
    }

    async fn desk_judge(
        &self,
        request: DeskJudgeRequest,
    ) -> Result<DeskJudgeReply, TransportError> {
        self.pick(self.roles.judge).desk_judge(request).await
    }

    async fn call(&self, request: ModelCallRequest) -> Result<ModelCallReply, TransportError> {
        let here = match request.role {
            CallRole::Agent => self.serves_model(&request.model),
            CallRole::Customer => self.roles.user,
            CallRole::Judge => self.roles.judge,
        };
        self.pick(here).call(request).await
    }
}
