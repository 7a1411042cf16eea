//! `sage scenario draft`: a model drafts a scenario from a policy's sentences, and the
//! validator's messages drive its repair, round after round, until the draft validates or the
//! rounds are spent. Every round is logged (request, answer, the validator's messages, cost).

use sage_core::prompts::draft::{self, DraftLog, Round};
use sage_core::sop::Sop;
use sage_ports::llm::{ChatRequest, Endpoint};

/// A draft that validated: the compiled scenario and its YAML.
pub struct Valid {
    /// The compiled scenario.
    pub sop: Sop,
    /// Its YAML as the model wrote it.
    pub yaml: String,
}

/// Drafts a scenario from `sentences` with `endpoint`, at most `rounds` rounds (a first draft,
/// then repairs), stopping when the money spent reaches `max_cost_usd`; `file` labels the
/// validator's messages. Returns the log and the last draft's YAML, with its scenario when it
/// validated.
pub async fn draft(
    endpoint: &Endpoint,
    sentences: &[String],
    rounds: u32,
    max_cost_usd: Option<f64>,
    file: &str,
) -> (DraftLog, Option<String>, Option<Valid>) {
    let mut log = DraftLog {
        model: endpoint.name().to_string(),
        system: draft::system(),
        ..Default::default()
    };
    let mut last: Option<(String, Vec<String>)> = None;
    for attempt in 0..rounds.max(1) {
        if max_cost_usd.is_some_and(|max| log.cost_usd >= max) {
            break;
        }
        let messages = match &last {
            None => draft::draft_messages(sentences),
            Some((yaml, errors)) => draft::repair_messages(sentences, yaml, errors),
        };
        let request = messages
            .last()
            .map(|m| m.content.to_string())
            .unwrap_or_default();
        let called = endpoint
            .call(&ChatRequest {
                messages,
                attempt,
                ..Default::default()
            })
            .await;
        let mut round = Round {
            request,
            cost_usd: called.record.cost_usd,
            ..Default::default()
        };
        log.cost_usd += called.record.cost_usd;
        let response = match called.result {
            Ok(r) => r,
            Err(e) => {
                // A model that cannot be reached is not a draft the validator rejected.
                round.call_error = Some(e.to_string());
                log.rounds.push(round);
                break;
            }
        };
        round.answer = response.text.clone();
        let yaml = draft::yaml_of(&response.text).to_string();
        match sage_core::sop::from_yaml(&yaml, file) {
            Ok(sop) => {
                log.rounds.push(round);
                log.validated = true;
                return (log, Some(yaml.clone()), Some(Valid { sop, yaml }));
            }
            Err(e) => {
                round.errors = e.problems.iter().map(|p| p.to_string()).collect();
                last = Some((yaml, round.errors.clone()));
                log.rounds.push(round);
            }
        }
    }
    let yaml = last.map(|(y, _)| y);
    (log, yaml, None)
}
