//! The in-process transport: each role is an actix actor in this process, reached through its
//! mailbox (bounded: a full mailbox makes the caller wait).

use super::{Transport, TransportError};
use actix::Recipient;
use sage_core::protocol::call::{CallRole, ModelCallReply, ModelCallRequest};
use sage_core::protocol::desk::{
    DeskAgentReply, DeskAgentRequest, DeskCustomerReply, DeskCustomerRequest, DeskJudgeReply,
    DeskJudgeRequest,
};
use sage_core::protocol::{
    JudgeReply, JudgeRequest, RuleReply, RuleRequest, ServiceReply, ServiceRequest, UserReply,
    UserRequest,
};
use std::marker::PhantomData;

/// A request to a role actor, answered with `Rep`, with the span it was asked in (the turn's:
/// the role's model calls are its children, as across processes through `traceparent`).
pub struct Ask<Req, Rep>(pub Req, pub PhantomData<fn() -> Rep>, pub tracing::Span);

impl<Req, Rep> Ask<Req, Rep> {
    /// Wraps a request, in the current span.
    pub fn new(request: Req) -> Self {
        Ask(request, PhantomData, tracing::Span::current())
    }
}

impl<Req, Rep: 'static> actix::Message for Ask<Req, Rep> {
    type Result = Rep;
}

/// The mailboxes of the role actors.
#[derive(Clone)]
pub struct LocalTransport {
    /// The user role.
    pub user: Recipient<Ask<UserRequest, UserReply>>,
    /// The service role.
    pub service: Recipient<Ask<ServiceRequest, ServiceReply>>,
    /// The judge panel.
    pub judge: Recipient<Ask<JudgeRequest, JudgeReply>>,
    /// The rule engine.
    pub rule: Recipient<Ask<RuleRequest, RuleReply>>,
    /// The service role's support-desk turns.
    pub desk_agent: Recipient<Ask<DeskAgentRequest, DeskAgentReply>>,
    /// The user role's support-desk customer.
    pub desk_customer: Recipient<Ask<DeskCustomerRequest, DeskCustomerReply>>,
    /// The judge role's support-desk judges.
    pub desk_judge: Recipient<Ask<DeskJudgeRequest, DeskJudgeReply>>,
    /// Model calls of the agent under test (the service role).
    pub agent_call: Recipient<Ask<ModelCallRequest, ModelCallReply>>,
    /// Model calls of the customer (the user role).
    pub customer_call: Recipient<Ask<ModelCallRequest, ModelCallReply>>,
    /// Model calls of the judges (the judge role).
    pub judge_call: Recipient<Ask<ModelCallRequest, ModelCallReply>>,
}

fn gone(role: &'static str) -> impl FnOnce(actix::MailboxError) -> TransportError {
    move |e| TransportError::Unavailable {
        role,
        message: e.to_string(),
    }
}

#[async_trait::async_trait]
impl Transport for LocalTransport {
    async fn user(&self, request: UserRequest) -> Result<UserReply, TransportError> {
        self.user
            .send(Ask::new(request))
            .await
            .map_err(gone("user"))
    }

    async fn service(&self, request: ServiceRequest) -> Result<ServiceReply, TransportError> {
        self.service
            .send(Ask::new(request))
            .await
            .map_err(gone("service"))
    }

    async fn judge(&self, request: JudgeRequest) -> Result<JudgeReply, TransportError> {
        self.judge
            .send(Ask::new(request))
            .await
            .map_err(gone("judge"))
    }

    async fn rule(&self, request: RuleRequest) -> Result<RuleReply, TransportError> {
        self.rule
            .send(Ask::new(request))
            .await
            .map_err(gone("rule"))
    }

    async fn desk_agent(
        &self,
        request: DeskAgentRequest,
    ) -> Result<DeskAgentReply, TransportError> {
        self.desk_agent
            .send(Ask::new(request))
            .await
            .map_err(gone("service"))
    }

    async fn desk_customer(
        &self,
        request: DeskCustomerRequest,
    ) -> Result<DeskCustomerReply, TransportError> {
        self.desk_customer
            .send(Ask::new(request))
            .await
            .map_err(gone("user"))
    }

    async fn desk_judge(
        &self,
        request: DeskJudgeRequest,
    ) -> Result<DeskJudgeReply, TransportError> {
        self.desk_judge
            .send(Ask::new(request))
            .await
            .map_err(gone("judge"))
    }

    async fn call(&self, request: ModelCallRequest) -> Result<ModelCallReply, TransportError> {
        let to = match request.role {
            CallRole::Agent => &self.agent_call,
            CallRole::Customer => &self.customer_call,
            CallRole::Judge => &self.judge_call,
        };
        let role = request.role.role().as_str();
        to.send(Ask::new(request)).await.map_err(gone(role))
    }
}
