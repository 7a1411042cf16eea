//! The runtime: actix actors for the dialogue driver, the roles (user simulator, service agent,
//! judge panel, rule engine) and the aggregator. The actors are thin: the logic lives in plain
//! structs ([`roles`], [`dialogue`]) so the same code runs in-process or behind a broker.
//!
//! Every actor answers with a future that runs while the actor takes its next message, so one
//! actor serves thousands of dialogues at once; mailboxes are bounded, so a full one makes the
//! sender wait (backpressure) instead of queueing without limit.

pub mod aggregator;
pub mod call;
pub mod cluster;
pub mod desk;
pub mod dialogue;
pub mod draft;
pub mod fork;
pub mod lanes;
pub mod rehearsal;
pub mod rejudge;
pub mod roles;
pub mod runner;
pub mod suite;
pub mod tau2;

use actix::{Actor, Context, Handler, ResponseFuture};
use roles::{JudgePanel, Registry, RuleRole, ServiceRole, UserRole};
use sage_core::protocol::call::{ModelCallReply, ModelCallRequest};
use sage_core::protocol::desk::{
    DeskAgentReply, DeskAgentRequest, DeskCustomerReply, DeskCustomerRequest, DeskJudgeReply,
    DeskJudgeRequest,
};
use sage_core::protocol::{
    DialogueJob, DialogueRecord, JudgeReply, JudgeRequest, Role, RuleReply, RuleRequest,
    ServiceReply, ServiceRequest, UserReply, UserRequest,
};
use sage_core::sop::Sop;
use sage_ports::telemetry::metrics;
use sage_ports::transport::Transport;
use sage_ports::transport::local::{Ask, LocalTransport};
use std::collections::HashMap;
use std::sync::Arc;
use tracing::Instrument;

/// Mailbox capacity of every actor (messages waiting beyond the ones being served).
pub const MAILBOX: usize = 1024;

/// Has a role actor answer `Ask<$req, $rep>` with its logic's `$method`, counting the model
/// calls of the reply.
macro_rules! role_handler {
    ($actor:ident, $role:expr, $req:ty, $rep:ty, $method:ident) => {
        impl Handler<Ask<$req, $rep>> for $actor {
            type Result = ResponseFuture<$rep>;
            fn handle(&mut self, msg: Ask<$req, $rep>, _: &mut Context<Self>) -> Self::Result {
                let logic = self.0.clone();
                let span = msg.2;
                Box::pin(
                    async move {
                        let reply = logic.$method(msg.0).await;
                        metrics().observe_calls($role, &reply.calls);
                        reply
                    }
                    .instrument(span),
                )
            }
        }
    };
}

macro_rules! role_actor {
    ($actor:ident, $logic:ident) => {
        /// The actor around the role's logic.
        pub struct $actor(pub Arc<$logic>);

        impl Actor for $actor {
            type Context = Context<Self>;
            fn started(&mut self, ctx: &mut Context<Self>) {
                ctx.set_mailbox_capacity(MAILBOX);
            }
        }
    };
}

role_actor!(UserActor, UserRole);
role_actor!(ServiceActor, ServiceRole);
role_actor!(JudgeActor, JudgePanel);
role_handler!(UserActor, Role::User, UserRequest, UserReply, handle);
role_handler!(
    ServiceActor,
    Role::Service,
    ServiceRequest,
    ServiceReply,
    handle
);
role_handler!(JudgeActor, Role::Judge, JudgeRequest, JudgeReply, handle);
role_handler!(
    UserActor,
    Role::User,
    DeskCustomerRequest,
    DeskCustomerReply,
    desk
);
role_handler!(
    ServiceActor,
    Role::Service,
    DeskAgentRequest,
    DeskAgentReply,
    desk
);
role_handler!(
    JudgeActor,
    Role::Judge,
    DeskJudgeRequest,
    DeskJudgeReply,
    desk
);

role_handler!(
    ServiceActor,
    Role::Service,
    ModelCallRequest,
    ModelCallReply,
    call
);
role_handler!(
    UserActor,
    Role::User,
    ModelCallRequest,
    ModelCallReply,
    call
);
role_handler!(
    JudgeActor,
    Role::Judge,
    ModelCallRequest,
    ModelCallReply,
    call
);

/// The rule engine's actor (synchronous logic).
pub struct RuleActor(pub Arc<RuleRole>);

impl Actor for RuleActor {
    type Context = Context<Self>;
    fn started(&mut self, ctx: &mut Context<Self>) {
        ctx.set_mailbox_capacity(MAILBOX);
    }
}

impl Handler<Ask<RuleRequest, RuleReply>> for RuleActor {
    type Result = actix::MessageResult<Ask<RuleRequest, RuleReply>>;
    fn handle(&mut self, msg: Ask<RuleRequest, RuleReply>, _: &mut Context<Self>) -> Self::Result {
        actix::MessageResult(self.0.handle(msg.0))
    }
}

/// Starts the four role actors and returns the transport that reaches them (the user, service
/// and judge actors answer support-desk requests too). The user and
/// service roles run on `first`; the judge panel (three calls a turn, the busiest role) and the
/// rule engine on `second` when given (another thread), so a burst of replies is served by two
/// cores.
pub fn start_local_roles(
    registry: Arc<Registry>,
    first: &actix::ArbiterHandle,
    second: Option<&actix::ArbiterHandle>,
) -> LocalTransport {
    let judge = JudgeActor(Arc::new(JudgePanel(registry.clone())));
    let rule = RuleActor(Arc::new(RuleRole(registry.clone())));
    let user = UserActor(Arc::new(UserRole(registry.clone())));
    let service = ServiceActor(Arc::new(ServiceRole(registry)));
    let second = second.unwrap_or(first);
    let user = UserActor::start_in_arbiter(first, |_| user);
    let service = ServiceActor::start_in_arbiter(first, |_| service);
    let judge = JudgeActor::start_in_arbiter(second, |_| judge);
    LocalTransport {
        user: user.clone().recipient(),
        service: service.clone().recipient(),
        judge: judge.clone().recipient(),
        rule: RuleActor::start_in_arbiter(second, |_| rule).recipient(),
        desk_agent: service.clone().recipient(),
        desk_customer: user.clone().recipient(),
        desk_judge: judge.clone().recipient(),
        agent_call: service.recipient(),
        customer_call: user.recipient(),
        judge_call: judge.recipient(),
    }
}

/// Play this dialogue job, through the driver's transport or the one given, from its first
/// turn or from where `start` says (a fork's branch).
pub struct RunDialogue {
    /// The job.
    pub job: DialogueJob,
    /// A transport for this dialogue only (the driver's own when `None`).
    pub through: Option<Arc<dyn Transport>>,
    /// Where the dialogue starts (its first turn by default).
    pub start: dialogue::Start,
}

impl RunDialogue {
    /// Play `job` through the driver's transport.
    pub fn new(job: DialogueJob) -> RunDialogue {
        RunDialogue::from(job, dialogue::Start::default())
    }

    /// Play `job` from `start` through the driver's transport.
    pub fn from(job: DialogueJob, start: dialogue::Start) -> RunDialogue {
        RunDialogue {
            job,
            through: None,
            start,
        }
    }
}

impl actix::Message for RunDialogue {
    type Result = DialogueRecord;
}

/// The dialogue driver's actor: plays each job it is sent through its transport.
pub struct DialogueActor {
    /// How the driver reaches the roles.
    pub transport: Arc<dyn Transport>,
    /// The scenarios, for scoring.
    pub sops: Arc<HashMap<String, Arc<Sop>>>,
    /// The models the run's configuration declares simulated (a record is labelled by its
    /// configuration, not by which calls happened to be made).
    pub simulated: Arc<std::collections::BTreeSet<String>>,
    /// The service models whose configuration sets a structured-output form that sends a
    /// schema ([`sage_core::plan::model::ModelConfig::agent_structured_label`]), with that form.
    pub structured:
        Arc<std::collections::BTreeMap<String, sage_core::plan::model::StructuredOutput>>,
}

impl DialogueActor {
    /// The driver of a SAGE run's dialogues, embedded or on a worker: it reaches the roles
    /// through `transport`, scores against `sops` (by id) and labels the records by the run's
    /// configuration (which models are simulated, which agents answer in a structured form).
    pub fn for_run(
        config: &sage_core::plan::RunConfig,
        sops: HashMap<String, Arc<Sop>>,
        transport: Arc<dyn Transport>,
    ) -> DialogueActor {
        DialogueActor {
            transport,
            sops: Arc::new(sops),
            simulated: Arc::new(
                sage_ports::store::simulated_models(&config.models)
                    .into_iter()
                    .collect(),
            ),
            structured: Arc::new(sage_core::plan::model::structured_agents(&config.models)),
        }
    }
}

impl Actor for DialogueActor {
    type Context = Context<Self>;
    fn started(&mut self, ctx: &mut Context<Self>) {
        ctx.set_mailbox_capacity(MAILBOX);
    }
}

impl Handler<RunDialogue> for DialogueActor {
    type Result = ResponseFuture<DialogueRecord>;
    fn handle(&mut self, msg: RunDialogue, _: &mut Context<Self>) -> Self::Result {
        let transport = msg.through.unwrap_or_else(|| self.transport.clone());
        let sops = self.sops.clone();
        let simulated = self.simulated.contains(&msg.job.service_model);
        let structured = self.structured.get(&msg.job.service_model).copied();
        // None when spans are not exported.
        let span = sage_ports::telemetry::genai::dialogue_span(&msg.job);
        Box::pin(
            async move {
                let started = std::time::SystemTime::now();
                let mut record =
                    dialogue::play(transport.as_ref(), &sops, msg.job, simulated, msg.start).await;
                record.structured_output = structured;
                sage_ports::telemetry::genai::record_dialogue(&tracing::Span::current(), &record);
                // A dialogue the sample rate left out is traced all the same when it erred.
                sage_ports::telemetry::genai::keep_errored(&record, started);
                record
            }
            .instrument(span),
        )
    }
}
