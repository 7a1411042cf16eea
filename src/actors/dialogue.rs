//! The dialogue driver: plays one dialogue turn by turn through a [`Transport`] (user, service,
//! judge panel, rule engine), scores each turn, and returns the finished record.

use crate::protocol::{
    DialogueEnd, DialogueJob, DialogueRecord, JudgeRequest, Line, RuleRequest, ServiceOutcome,
    ServiceRequest, Speaker, TurnRecord, Usage, UserRequest,
};
use crate::scoring;
use crate::sop::Sop;
use crate::telemetry::DialogueMetrics;
use crate::transport::Transport;
use std::collections::HashMap;
use std::sync::Arc;

/// Consecutive turns the agent may be unreachable before the dialogue ends.
pub const MAX_SERVICE_FAILURES: u32 = 3;

/// A turn record for a turn that could not be played or scored.
fn infra_turn(
    turn: u32,
    user_message: String,
    error: String,
    calls: Vec<crate::protocol::CallRecord>,
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
    }
}

/// Keeps a played turn and counts it.
fn push(turns: &mut Vec<TurnRecord>, metrics: &DialogueMetrics, turn: TurnRecord) {
    metrics.turn(&turn);
    turns.push(turn);
}

/// Plays one dialogue to its end and scores every turn. Never fails: whatever goes wrong on the
/// way is recorded in the turns and the end reason. `simulated`: whether the run's
/// configuration declares the job's service model a simulated one.
pub async fn run_dialogue(
    transport: &dyn Transport,
    sops: &HashMap<String, Arc<Sop>>,
    job: DialogueJob,
    simulated: bool,
) -> DialogueRecord {
    // Shared with every request of the dialogue; the history is appended in place once the
    // requests of a turn (which hold it) are done.
    let job = Arc::new(job);
    let metrics = DialogueMetrics::start(&job);
    let sop = sops.get(&job.scenario).cloned();
    let mut history: Arc<Vec<Line>> = Arc::new(Vec::with_capacity(2 * job.max_turns as usize));
    let mut turns: Vec<TurnRecord> = Vec::with_capacity(job.max_turns as usize);
    let mut last_action: Option<String> = None;
    let mut end = DialogueEnd::MaxTurns;
    let mut service_failures = 0;
    // The customer's call that ended the dialogue (it belongs to no turn).
    let mut closing_calls = Vec::new();
    // The variables as the rule engine reads them, once per dialogue.
    let variables: crate::sop::Values = job
        .variables
        .iter()
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    for turn in 1..=job.max_turns {
        let user = transport
            .user(UserRequest {
                job: job.clone(),
                turn,
                history: history.clone(),
                last_action: last_action.clone(),
            })
            .await;
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
        let service = transport
            .service(ServiceRequest {
                job: job.clone(),
                turn,
                history: history.clone(),
                user_message: user_message.clone(),
            })
            .await;
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
                push(
                    &mut turns,
                    &metrics,
                    infra_turn(turn, user_message, error, calls),
                );
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
        let agent_chat = match &service.outcome {
            ServiceOutcome::Valid { turn } => turn.chat.clone(),
            ServiceOutcome::FormatError { chat, .. }
            | ServiceOutcome::InfraError { error: chat } => chat.clone(),
        };
        let judges = transport
            .judge(JudgeRequest {
                job: job.clone(),
                turn,
                history: history.clone(),
                user_message: user_message.clone(),
                agent_chat: agent_chat.clone(),
            })
            .await;
        let mut record = TurnRecord {
            turn,
            user_message: user_message.clone(),
            raw_output: service.raw,
            outcome: service.outcome,
            judges: None,
            reference: None,
            scores: None,
            infra_error: None,
            calls: Vec::new(),
        };
        match judges {
            Err(e) => record.infra_error = Some(e.to_string()),
            Ok(mut panel) => {
                calls.append(&mut panel.calls);
                match &panel.consensus {
                    None => {
                        let why: Vec<String> = panel
                            .judgments
                            .iter()
                            .filter_map(|j| j.as_ref().err().cloned())
                            .collect();
                        record.infra_error = Some(format!("no judge answered: {}", why.join("; ")));
                    }
                    Some(consensus) => {
                        let reference = transport
                            .rule(RuleRequest {
                                scenario: job.scenario.clone(),
                                fields: consensus.clone(),
                                variables: variables.clone(),
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
        record.calls = calls;
        if record.infra_error.is_none() {
            record.scores = sop
                .as_deref()
                .and_then(|sop| scoring::turn::score_record(&record, sop));
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
        push(&mut turns, &metrics, record);
    }
    let mut usage = Usage::default();
    let mut cost_usd = 0.0;
    for call in turns.iter().flat_map(|t| &t.calls).chain(&closing_calls) {
        usage += call.usage;
        cost_usd += call.cost_usd;
    }
    metrics.finish(end);
    DialogueRecord {
        job: Arc::try_unwrap(job).unwrap_or_else(|shared| (*shared).clone()),
        turns,
        closing_calls,
        end,
        simulated,
        structured_output: None, // set by the caller, which knows the configuration
        usage,
        cost_usd,
    }
}
