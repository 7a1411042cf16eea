//! The dialogue driver: plays one dialogue turn by turn through a [`Transport`] (user, service,
//! judge panel, rule engine), judges and scores the turns its job's `judge_turns` picks, and
//! returns the finished record. A dialogue plays from its first turn (a run) or from a stored
//! dialogue's turn ([`Start`]: a fork's branch, `sage fork`): the turns before are kept as
//! given, and the first turn played replays the stored customer message against a given
//! reference.

use sage_core::protocol::{
    DialogueEnd, DialogueJob, DialogueRecord, JudgeReply, JudgeRequest, Line, RuleRequest,
    ServiceOutcome, ServiceReply, ServiceRequest, Speaker, TurnRecord, Usage, UserReply,
    UserRequest,
};
use sage_core::scoring;
use sage_core::scoring::fidelity;
use sage_core::scoring::rejudge::{agent_chat, history_of, no_judge_answered};
use sage_core::sop::{Route, Sop, Values};
use sage_ports::telemetry::{DialogueMetrics, genai};
use sage_ports::transport::{Transport, TransportError};
use std::collections::HashMap;
use std::sync::Arc;
use tracing::Instrument;

/// Consecutive turns the agent may be unreachable before the dialogue ends.
pub const MAX_SERVICE_FAILURES: u32 = 3;

/// A turn record for a turn that could not be played or scored.
fn infra_turn(
    turn: u32,
    user_message: String,
    error: String,
    calls: Vec<sage_core::protocol::CallRecord>,
) -> TurnRecord {
    TurnRecord {
        turn,
        user_message,
        raw_output: None,
        outcome: ServiceOutcome::InfraError {
            error: error.clone(),
        },
        judges: None,
        reference: None,
        scores: None,
        infra_error: Some(error),
        calls,
        customer_retry: None,
        off_case: None,
    }
}

/// Keeps a played turn and counts it.
fn push(turns: &mut Vec<TurnRecord>, metrics: &DialogueMetrics, turn: TurnRecord) {
    metrics.turn(&turn);
    turns.push(turn);
}

/// What judging a turn needs: the judges, the rule engine and the scenario.
struct Panel<'a> {
    transport: &'a dyn Transport,
    job: &'a Arc<DialogueJob>,
    sop: Option<&'a Sop>,
    variables: &'a sage_core::sop::Values,
}

impl Panel<'_> {
    /// Asks the judges about a played turn (`history`: the lines before it), then the rule
    /// engine for the consensus's reference route, and scores the turn. Whatever fails is
    /// recorded in the turn's `infra_error`; the calls made are added to the turn's.
    async fn judge(&self, record: &mut TurnRecord, history: Arc<Vec<Line>>, agent_chat: &str) {
        match self.ask_judges(record, history, agent_chat).await {
            Err(e) => record.infra_error = Some(e.to_string()),
            Ok(mut panel) => {
                record.calls.append(&mut panel.calls);
                match &panel.consensus {
                    None => record.infra_error = Some(no_judge_answered(&panel)),
                    Some(consensus) => {
                        let reference = self
                            .transport
                            .rule(RuleRequest {
                                scenario: self.job.scenario.clone(),
                                fields: consensus.clone(),
                                variables: self.variables.clone(),
                            })
                            .await;
                        match reference {
                            Ok(r) => record.reference = Some(r.route),
                            Err(e) => record.infra_error = Some(e.to_string()),
                        }
                    }
                }
                record.judges = Some(panel);
            }
        }
        if record.infra_error.is_none() {
            record.scores = self
                .sop
                .and_then(|sop| scoring::turn::score_record(record, sop));
        }
    }

    /// The judge panel's reply about `record`'s turn.
    async fn ask_judges(
        &self,
        record: &TurnRecord,
        history: Arc<Vec<Line>>,
        agent_chat: &str,
    ) -> Result<JudgeReply, TransportError> {
        self.transport
            .judge(JudgeRequest {
                job: self.job.clone(),
                turn: record.turn,
                history,
                user_message: record.user_message.clone(),
                agent_chat: agent_chat.to_string(),
            })
            .await
    }

    /// Scores a replayed turn against a given reference (a fork's: the parent turn's
    /// consensus and route). With `reference.judge` the judges are asked about the reply for
    /// its Chat (their classification is kept in their verdicts; the consensus stays the
    /// given one); else no judge is asked and the turn has no Chat, so no scores.
    async fn judge_against(
        &self,
        record: &mut TurnRecord,
        history: Arc<Vec<Line>>,
        agent_chat: &str,
        reference: &Reference,
    ) {
        let mut panel = JudgeReply {
            judgments: Vec::new(),
            consensus: None,
            calls: Vec::new(),
        };
        if reference.judge {
            match self.ask_judges(record, history, agent_chat).await {
                Ok(reply) => panel = reply,
                Err(e) => record.infra_error = Some(e.to_string()),
            }
        }
        record.calls.append(&mut panel.calls);
        panel.consensus = Some(reference.consensus.clone());
        record.judges = Some(panel);
        record.reference = Some(reference.route.clone());
        if record.infra_error.is_none() {
            record.scores = self
                .sop
                .and_then(|sop| scoring::turn::score_record(record, sop));
        }
    }
}

/// Where a dialogue starts: its first turn (the default), or after turns already played.
#[derive(Debug, Clone, Default)]
pub struct Start {
    /// The turns already played, kept as they are (a fork: the parent's turns before the fork
    /// turn); the history, the agent's last action and the next turn come from them.
    pub turns: Vec<TurnRecord>,
    /// How the first turn played is played: replayed from a stored dialogue (`None`: as in a
    /// run).
    pub replay: Option<Replay>,
}

/// The first turn played, replayed from a stored dialogue (a fork's branch): the stored
/// customer message, not asked again; the agent asked (or its reply given), and the turn
/// scored against a given reference.
#[derive(Debug, Clone)]
pub struct Replay {
    /// The customer's message as stored.
    pub user_message: String,
    /// The agent's reply when it is given (not asked): a fork's fix.
    pub reply: Option<ServiceReply>,
    /// The sample asked for ([`ServiceRequest::sample`]).
    pub sample: Option<u32>,
    /// The reference the turn is scored against.
    pub reference: Reference,
}

/// A reference given for a replayed turn.
#[derive(Debug, Clone)]
pub struct Reference {
    /// The classification the agent's is compared with (the stored judges' consensus).
    pub consensus: Values,
    /// The route the rule engine derived from it.
    pub route: Result<Route, String>,
    /// Ask the judges about the reply, for its Chat.
    pub judge: bool,
}

/// Plays one dialogue to its end, judging and scoring the turns its job's `judge_turns` picks
/// (the format of every answer is checked). Never fails: whatever goes wrong on the
/// way is recorded in the turns and the end reason. `simulated`: whether the run's
/// configuration declares the job's service model a simulated one.
pub async fn run_dialogue(
    transport: &dyn Transport,
    sops: &HashMap<String, Arc<Sop>>,
    job: DialogueJob,
    simulated: bool,
) -> DialogueRecord {
    play(transport, sops, job, simulated, Start::default()).await
}

/// Plays a dialogue from `start` to its end (`job.max_turns`, or the customer's), as
/// [`run_dialogue`] plays one from its first turn: the same turns, judging, scoring and end.
pub async fn play(
    transport: &dyn Transport,
    sops: &HashMap<String, Arc<Sop>>,
    job: DialogueJob,
    simulated: bool,
    start: Start,
) -> DialogueRecord {
    // Shared with every request of the dialogue; the history is appended in place once the
    // requests of a turn (which hold it) are done.
    let job = Arc::new(job);
    let metrics = DialogueMetrics::start(&job);
    let sop = sops.get(&job.scenario).cloned();
    let Start {
        mut turns,
        mut replay,
    } = start;
    let first = turns.last().map_or(1, |t| t.turn + 1);
    let mut history: Arc<Vec<Line>> = Arc::new(history_of(&turns));
    turns.reserve(job.max_turns.saturating_sub(first - 1) as usize);
    let mut last_action: Option<String> = turns.iter().rev().find_map(|t| match &t.outcome {
        ServiceOutcome::Valid { turn } => Some(turn.action.clone()),
        _ => None,
    });
    // The history length before the last turn while that turn waits to learn whether it is
    // the dialogue's final one (judged under `paper`); it is counted in the metrics once
    // settled.
    let mut pending: Option<usize> = None;
    let mut end = DialogueEnd::MaxTurns;
    let mut service_failures = 0;
    // The customer's call that ended the dialogue (it belongs to no turn).
    let mut closing_calls = Vec::new();
    // The variables as the rule engine reads them, once per dialogue.
    let variables = sage_core::sop::values(&job.variables);
    let panel = Panel {
        transport,
        job: &job,
        sop: sop.as_deref(),
        variables: &variables,
    };
    // The span of the turn waiting to learn whether it is the final one.
    let mut pending_span = tracing::Span::none();
    for turn in first..=job.max_turns {
        // Each turn a span under the dialogue's; the roles' model calls under it.
        let span = genai::turn_span(&job, turn);
        // A replayed turn (only the first played): the stored customer message.
        let given = replay.take();
        let user = match &given {
            Some(r) => Ok(UserReply {
                message: Some(r.user_message.clone()),
                calls: Vec::new(),
                infra_error: None,
                retry: None,
                // The stored line audited again, as a played one is.
                off_case: (sop.as_deref())
                    .and_then(|sop| fidelity::off_case(sop, &job, &r.user_message)),
            }),
            None => {
                transport
                    .user(UserRequest {
                        job: job.clone(),
                        turn,
                        history: history.clone(),
                        last_action: last_action.clone(),
                    })
                    .instrument(span.clone())
                    .await
            }
        };
        // The turn before waited to learn whether it is the final one: it is when the
        // customer ends the dialogue now (no extra call: the judges read the same history).
        if let Some(len) = pending.take()
            && let Some(last) = turns.last_mut()
        {
            if matches!(&user, Ok(u) if u.infra_error.is_none() && u.message.is_none()) {
                let before = Arc::new(history[..len].to_vec());
                let chat = agent_chat(&last.outcome).to_string();
                panel
                    .judge(last, before, &chat)
                    .instrument(pending_span.clone())
                    .await;
            }
            genai::record_turn(&pending_span, last);
            metrics.turn(last);
        }
        let user = match user {
            Ok(u) => u,
            Err(e) => {
                push(
                    &mut turns,
                    &metrics,
                    infra_turn(turn, String::new(), e.to_string(), Vec::new()),
                );
                end = DialogueEnd::InfraError;
                break;
            }
        };
        let mut calls = user.calls;
        // The customer's first line when `customer_guard` asked again (kept in the turn).
        let customer_retry = user.retry;
        let off_case = user.off_case;
        if let Some(error) = user.infra_error {
            push(
                &mut turns,
                &metrics,
                infra_turn(turn, String::new(), error, calls),
            );
            end = DialogueEnd::InfraError;
            break;
        }
        let Some(user_message) = user.message else {
            closing_calls = calls;
            end = if last_action.as_deref() == Some(job.target.action.as_str()) {
                DialogueEnd::Resolved
            } else {
                DialogueEnd::UserEndedEarly
            };
            break;
        };
        let (reply, sample) = match &given {
            Some(r) => (r.reply.clone(), r.sample),
            None => (None, None),
        };
        let service = match reply {
            Some(reply) => Ok(reply),
            None => {
                transport
                    .service(ServiceRequest {
                        job: job.clone(),
                        turn,
                        history: history.clone(),
                        user_message: user_message.clone(),
                        sample,
                    })
                    .instrument(span.clone())
                    .await
            }
        };
        // An agent that cannot be reached: the turn is an infrastructure error; after
        // `MAX_SERVICE_FAILURES` in a row the dialogue ends (it would only burn user calls).
        let service = match service {
            Ok(s) if !matches!(s.outcome, ServiceOutcome::InfraError { .. }) => s,
            failed => {
                let error = match failed {
                    Err(e) => e.to_string(),
                    Ok(s) => {
                        calls.extend(s.calls);
                        match s.outcome {
                            ServiceOutcome::InfraError { error } => error,
                            _ => String::from("the agent could not be reached"),
                        }
                    }
                };
                Arc::make_mut(&mut history).push(Line {
                    speaker: Speaker::User,
                    text: user_message.clone(),
                });
                let mut failed = infra_turn(turn, user_message, error, calls);
                failed.customer_retry = customer_retry;
                failed.off_case = off_case;
                genai::record_turn(&span, &failed);
                push(&mut turns, &metrics, failed);
                service_failures += 1;
                if service_failures >= MAX_SERVICE_FAILURES {
                    end = DialogueEnd::InfraError;
                    break;
                }
                continue;
            }
        };
        service_failures = 0;
        calls.extend(service.calls);
        let agent_chat = agent_chat(&service.outcome).to_string();
        let mut record = TurnRecord {
            turn,
            user_message: user_message.clone(),
            raw_output: service.raw,
            outcome: service.outcome,
            judges: None,
            reference: None,
            scores: None,
            infra_error: None,
            calls,
            customer_retry,
            off_case,
        };
        // A turn judged whatever follows is judged now (the last possible turn is the final
        // one); under `paper` any other turn might be the final one: it waits for the next
        // customer call to tell.
        let judged_now = given.is_some() || job.judge_turns.judges(turn, turn == job.max_turns);
        match &given {
            Some(r) => {
                panel
                    .judge_against(&mut record, history.clone(), &agent_chat, &r.reference)
                    .instrument(span.clone())
                    .await
            }
            None if judged_now => {
                panel
                    .judge(&mut record, history.clone(), &agent_chat)
                    .instrument(span.clone())
                    .await
            }
            None => {}
        }
        if let ServiceOutcome::Valid { turn } = &record.outcome {
            last_action = Some(turn.action.clone());
        }
        Arc::make_mut(&mut history).push(Line {
            speaker: Speaker::User,
            text: user_message,
        });
        Arc::make_mut(&mut history).push(Line {
            speaker: Speaker::Agent,
            text: agent_chat,
        });
        if !judged_now && job.judge_turns.final_turn() {
            pending = Some(history.len() - 2);
            pending_span = span;
            turns.push(record);
        } else {
            genai::record_turn(&span, &record);
            push(&mut turns, &metrics, record);
        }
    }
    metrics.finish(end);
    let mut record = DialogueRecord {
        job: Arc::try_unwrap(job).unwrap_or_else(|shared| (*shared).clone()),
        turns,
        closing_calls,
        end,
        simulated,
        structured_output: None, // set by the caller, which knows the configuration
        usage: Usage::default(),
        cost_usd: 0.0,
        fork: None,
    };
    scoring::rejudge::recount(&mut record);
    record
}
