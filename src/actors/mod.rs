//! The runtime: actix actors for the dialogue driver, the roles (user simulator, service agent,
//! judge panel, rule engine) and the aggregator. The actors are thin: the logic lives in plain
//! structs ([`roles`], [`dialogue`]) so the same code runs in-process or behind a broker.
//!
//! Every actor answers with a future that runs while the actor takes its next message, so one
//! actor serves thousands of dialogues at once; mailboxes are bounded, so a full one makes the
//! sender wait (backpressure) instead of queueing without limit.

pub mod aggregator;
pub mod dialogue;
pub mod roles;
pub mod runner;

use crate::protocol::{
    DialogueJob, DialogueRecord, JudgeReply, JudgeRequest, RuleReply, RuleRequest, ServiceReply,
    ServiceRequest, UserReply, UserRequest,
};
use crate::sop::Sop;
use crate::transport::Transport;
use crate::transport::local::{Ask, LocalTransport};
use actix::{Actor, Context, Handler, ResponseFuture};
use roles::{JudgePanel, Registry, RuleRole, ServiceRole, UserRole};
use std::collections::HashMap;
use std::sync::Arc;

/// Mailbox capacity of every actor (messages waiting beyond the ones being served).
pub const MAILBOX: usize = 1024;

macro_rules! role_actor {
    ($actor:ident, $logic:ident, $req:ty, $rep:ty) => {
        /// The actor around the role's logic.
        pub struct $actor(pub Arc<$logic>);

        impl Actor for $actor {
            type Context = Context<Self>;
            fn started(&mut self, ctx: &mut Context<Self>) {
                ctx.set_mailbox_capacity(MAILBOX);
            }
        }

        impl Handler<Ask<$req, $rep>> for $actor {
            type Result = ResponseFuture<$rep>;
            fn handle(&mut self, msg: Ask<$req, $rep>, _: &mut Context<Self>) -> Self::Result {
                let logic = self.0.clone();
                Box::pin(async move { logic.handle(msg.0).await })
            }
        }
    };
}

role_actor!(UserActor, UserRole, UserRequest, UserReply);
role_actor!(ServiceActor, ServiceRole, ServiceRequest, ServiceReply);
role_actor!(JudgeActor, JudgePanel, JudgeRequest, JudgeReply);

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

/// Starts the four role actors in this process and returns the transport that reaches them.
/// Must run inside an actix `System`. The judge panel (three calls a turn, the busiest role)
/// and the rule engine run on `second` when given (another thread), the rest on the current
/// arbiter, so a burst of replies is served by two cores.
pub fn start_local_roles(
    registry: Arc<Registry>,
    second: Option<&actix::ArbiterHandle>,
) -> LocalTransport {
    let judge = JudgeActor(Arc::new(JudgePanel(registry.clone())));
    let rule = RuleActor(Arc::new(RuleRole(registry.clone())));
    let (judge, rule) = match second {
        Some(arbiter) => (
            JudgeActor::start_in_arbiter(arbiter, |_| judge),
            RuleActor::start_in_arbiter(arbiter, |_| rule),
        ),
        None => (judge.start(), rule.start()),
    };
    LocalTransport {
        user: UserActor(Arc::new(UserRole(registry.clone())))
            .start()
            .recipient(),
        service: ServiceActor(Arc::new(ServiceRole(registry)))
            .start()
            .recipient(),
        judge: judge.recipient(),
        rule: rule.recipient(),
    }
}

/// Play this dialogue job.
pub struct RunDialogue(pub DialogueJob);

impl actix::Message for RunDialogue {
    type Result = DialogueRecord;
}

/// The dialogue driver's actor: plays each job it is sent through its transport.
pub struct DialogueActor {
    /// How the driver reaches the roles.
    pub transport: Arc<dyn Transport>,
    /// The scenarios, for scoring.
    pub sops: Arc<HashMap<String, Arc<Sop>>>,
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
        let transport = self.transport.clone();
        let sops = self.sops.clone();
        Box::pin(async move { dialogue::run_dialogue(transport.as_ref(), &sops, msg.0).await })
    }
}
