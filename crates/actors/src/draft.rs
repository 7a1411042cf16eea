//! `sage scenario draft`: a model drafts a scenario from a policy's sentences, in steps (the
//! keys, the stages, the routes) or whole, each step's answer held to its JSON Schema where the
//! model supports structured output and checked by the validator before the next step; the
//! validator's messages drive the repair, round after round, until the step validates or its
//! rounds are spent. Every round is logged (step, request, answer, the validator's messages,
//! cost).

use sage_core::prompts::draft::{self, Draft, DraftLog, Round, Step};
use sage_core::sop::Sop;
use sage_ports::llm::{ChatRequest, Endpoint, Structured};
use std::sync::Arc;

/// A draft that validated: the compiled scenario and its YAML.
pub struct Valid {
    /// The compiled scenario.
    pub sop: Sop,
    /// Its YAML.
    pub yaml: String,
}

/// How a drafting ended: its log, the last draft's YAML (the rejected one when no draft
/// validated), and the scenario when it validated.
pub struct Drafted {
    /// Every round.
    pub log: DraftLog,
    /// The last draft's YAML (none when no answer was ever read).
    pub last: Option<String>,
    /// The scenario, when every step validated.
    pub valid: Option<Valid>,
}

/// Drafts a scenario from `sentences` with `endpoint`, step by step (`steps`), each step at most
/// `rounds` rounds (a first answer, then repairs), stopping when the money spent reaches
/// `max_cost_usd`; `file` labels the validator's messages.
pub async fn draft(
    endpoint: &Endpoint,
    sentences: &[String],
    steps: &[Step],
    rounds: u32,
    max_cost_usd: Option<f64>,
    file: &str,
) -> Drafted {
    let mut log = DraftLog {
        model: endpoint.name().to_string(),
        systems: steps
            .iter()
            .map(|s| (s.name().to_string(), s.system()))
            .collect(),
        ..Default::default()
    };
    let mut so_far = Draft::default();
    let mut last: Option<String> = None;
    for &step in steps {
        let structured = Structured {
            schema: Arc::new(step.schema()),
            default_on: true,
        };
        let mut rejected: Option<(String, Vec<String>)> = None;
        let mut done = false;
        for attempt in 0..rounds.max(1) {
            if max_cost_usd.is_some_and(|max| log.cost_usd >= max) {
                log.budget_spent = true;
                break;
            }
            let messages = step.messages(
                sentences,
                &so_far,
                rejected.as_ref().map(|(a, e)| (a.as_str(), e.as_slice())),
            );
            let request = messages
                .last()
                .map(|m| m.content.to_string())
                .unwrap_or_default();
            let called = endpoint
                .call(&ChatRequest {
                    messages,
                    attempt,
                    json: true,
                    structured: Some(structured.clone()),
                    ..Default::default()
                })
                .await;
            let mut round = Round {
                step,
                request,
                answer: String::new(),
                errors: Vec::new(),
                call_error: None,
                cost_usd: called.record.cost_usd,
            };
            log.cost_usd += called.record.cost_usd;
            let response = match called.result {
                Ok(r) => r,
                Err(e) => {
                    // A model that cannot be reached is not a draft the validator rejected.
                    round.call_error = Some(e.to_string());
                    log.rounds.push(round);
                    return Drafted {
                        log,
                        last,
                        valid: None,
                    };
                }
            };
            round.answer = response.text.clone();
            let yaml = draft::yaml_of(&response.text).to_string();
            let next = Draft::from_yaml(&yaml)
                .map_err(|e| vec![format!("{file}: {e}")])
                .and_then(|answer| so_far.with(step, &answer));
            match next {
                Ok(next) => {
                    round.errors = next.check(step, file);
                    last = Some(next.yaml());
                    if round.errors.is_empty() {
                        so_far = next;
                        done = true;
                    }
                }
                Err(errors) => round.errors = errors,
            }
            rejected = Some((yaml, round.errors.clone()));
            log.rounds.push(round);
            if done {
                break;
            }
        }
        if !done {
            return Drafted {
                log,
                last,
                valid: None,
            };
        }
    }
    let yaml = so_far.yaml();
    match sage_core::sop::from_yaml(&yaml, file) {
        Ok(sop) => {
            log.validated = true;
            Drafted {
                log,
                last: Some(yaml.clone()),
                valid: Some(Valid { sop, yaml }),
            }
        }
        Err(_) => Drafted {
            log,
            last: Some(yaml),
            valid: None,
        },
    }
}
