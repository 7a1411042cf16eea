//! The aggregator: receives every finished dialogue, appends it to the results store at once,
//! folds it into the run's report and keeps the run's progress. The report's fold does not
//! depend on the order dialogues finished in, and keeps no record.

use actix::{Actor, Context, Handler, Message, MessageResult};
use sage_core::protocol::{DialogueEnd, DialogueRecord};
use sage_ports::store::{DialogueWriter, SageFold, StoreError};

/// A finished dialogue to store.
pub struct Finished(pub DialogueRecord);

impl Message for Finished {
    type Result = Result<(), StoreError>;
}

/// Ask for the counts so far.
pub struct Progress;

impl Message for Progress {
    type Result = Counts;
}

/// What the aggregator has seen.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counts {
    /// Dialogues stored.
    pub dialogues: usize,
    /// Turns stored.
    pub turns: usize,
    /// Dialogues the user side ended before the agent took the target action.
    pub user_ended_early: usize,
    /// Dialogues an infrastructure error touched ([`DialogueRecord::had_infra_error`]).
    pub infra_errors: usize,
}

/// Hand over the report folded so far (the actor keeps an empty one).
pub struct TakeReport;

impl Message for TakeReport {
    type Result = Option<SageFold>;
}

/// The aggregator actor.
pub struct Aggregator {
    writer: DialogueWriter,
    report: Option<SageFold>,
    counts: Counts,
    progress: Option<indicatif::ProgressBar>,
}

impl Aggregator {
    /// An aggregator appending to `writer` and folding into `report`, ticking `progress` if
    /// given.
    pub fn new(
        writer: DialogueWriter,
        report: SageFold,
        progress: Option<indicatif::ProgressBar>,
    ) -> Aggregator {
        Aggregator {
            writer,
            report: Some(report),
            counts: Counts::default(),
            progress,
        }
    }
}

impl Actor for Aggregator {
    type Context = Context<Self>;
    fn started(&mut self, ctx: &mut Context<Self>) {
        ctx.set_mailbox_capacity(super::MAILBOX);
    }
}

impl Handler<Finished> for Aggregator {
    type Result = Result<(), StoreError>;
    fn handle(&mut self, msg: Finished, _: &mut Context<Self>) -> Self::Result {
        let record = msg.0;
        let at = self.writer.append(&record)?;
        if let Some(report) = &mut self.report {
            report.add(&record, at);
        }
        self.counts.dialogues += 1;
        self.counts.turns += record.turns.len();
        if record.end == DialogueEnd::UserEndedEarly {
            self.counts.user_ended_early += 1;
        }
        if record.had_infra_error() {
            self.counts.infra_errors += 1;
        }
        if let Some(p) = &self.progress {
            p.inc(1);
        }
        Ok(())
    }
}

impl Handler<TakeReport> for Aggregator {
    type Result = MessageResult<TakeReport>;
    fn handle(&mut self, _: TakeReport, _: &mut Context<Self>) -> Self::Result {
        MessageResult(self.report.take())
    }
}

impl Handler<Progress> for Aggregator {
    type Result = MessageResult<Progress>;
    fn handle(&mut self, _: Progress, _: &mut Context<Self>) -> Self::Result {
        MessageResult(self.counts)
    }
}
