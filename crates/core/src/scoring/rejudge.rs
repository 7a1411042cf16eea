//! Judging stored dialogues again with a new panel (`sage rejudge`): which turns a panel is
//! asked about, the history each judge reads (as the dialogue driver gave it), and a turn's new
//! verdicts turned into its reference route and scores. Pure: the judge calls are the actors'.

use crate::protocol::{
    CallRecord, DialogueEnd, DialogueRecord, JudgeReply, JudgeTurns, Line, ServiceOutcome, Speaker,
    TurnRecord, Usage,
};
use crate::scoring::turn::score_record;
use crate::sop::{Sop, Values};
use serde::{Deserialize, Serialize};

/// What `sage rejudge` did: NEW/rejudge.json.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RejudgeFile {
    /// The folder judged again (as given).
    pub from: String,
    /// The stored run's id.
    pub from_run_id: String,
    /// The new panel.
    pub judge_models: Vec<String>,
    /// The turns judged (`paper`, `every` or a list).
    pub judge_turns: String,
    /// What the last session did (absent while it runs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub done: Option<Rejudged>,
}

/// What a rejudge session did, and the new folder's totals.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Rejudged {
    /// Dialogues judged again in this session.
    pub judged: usize,
    /// Dialogues already in the new folder (a resume), kept as they were.
    pub kept: usize,
    /// Dialogues left unjudged because the budget was spent (a resume with a higher budget
    /// judges them).
    pub left_for_budget: usize,
    /// Judge calls made in this session (each attempt counts).
    pub judge_calls: usize,
    /// What the new judges' calls cost, in US dollars, over the whole new folder.
    pub cost_usd: f64,
}

/// The agent's words of a turn as the judges and the customer read them.
pub fn agent_chat(outcome: &ServiceOutcome) -> &str {
    match outcome {
        ServiceOutcome::Valid { turn } => &turn.chat,
        ServiceOutcome::FormatError { chat, .. } | ServiceOutcome::InfraError { error: chat } => {
            chat
        }
    }
}

/// Whether the agent answered the turn (it was not an infrastructure error on the agent's or
/// the customer's side): only such a turn can be judged.
fn answered(turn: &TurnRecord) -> bool {
    !matches!(turn.outcome, ServiceOutcome::InfraError { .. })
}

/// The indices (into `record.turns`) of the turns `judge_turns` picks, as the dialogue driver
/// picks them: the fixed turns, and under `paper` the dialogue's final turn (the last, when the
/// customer ended the dialogue or `max_turns` was reached). Turns the agent did not answer are
/// never judged.
pub fn judged_turns(record: &DialogueRecord, judge_turns: &JudgeTurns) -> Vec<usize> {
    let last = record.turns.len().checked_sub(1);
    let ended = matches!(
        record.end,
        DialogueEnd::Resolved | DialogueEnd::UserEndedEarly
    );
    record
        .turns
        .iter()
        .enumerate()
        .filter(|(i, t)| {
            let is_final = Some(*i) == last && (ended || t.turn == record.job.max_turns);
            answered(t) && judge_turns.judges(t.turn, is_final)
        })
        .map(|(i, _)| i)
        .collect()
}

/// The conversation before turn `index` as the judges read it: each earlier turn's customer
/// line, then the agent's (none for a turn the agent did not answer).
pub fn history_before(record: &DialogueRecord, index: usize) -> Vec<Line> {
    history_of(&record.turns[..index.min(record.turns.len())])
}

/// The conversation `turns` make, as the customer, the agent and the judges read it: each
/// turn's customer line, then the agent's (none for a turn the agent did not answer).
pub fn history_of(turns: &[TurnRecord]) -> Vec<Line> {
    let mut lines = Vec::with_capacity(2 * turns.len());
    for turn in turns {
        lines.push(Line {
            speaker: Speaker::User,
            text: turn.user_message.clone(),
        });
        if answered(turn) {
            lines.push(Line {
                speaker: Speaker::Agent,
                text: agent_chat(&turn.outcome).to_string(),
            });
        }
    }
    lines
}

/// Forgets what the old panel said about every turn: its verdicts, references, scores and the
/// errors of judging (an agent's infrastructure error stays), and its calls (those of
/// `old_judges` that are not also the customer's or the agent's model). Totals recounted.
pub fn forget_judges(record: &mut DialogueRecord, old_judges: &[String]) {
    let (user, agent) = (&record.job.user_model, &record.job.service_model);
    let keep =
        |c: &CallRecord| !old_judges.contains(&c.model) || c.model == *user || c.model == *agent;
    for turn in &mut record.turns {
        turn.calls.retain(keep);
        turn.judges = None;
        turn.reference = None;
        turn.scores = None;
        if answered(turn) {
            turn.infra_error = None;
        }
    }
    recount(record);
}

/// Sets a turn's new panel: its verdicts and calls, the reference route the rule engine
/// derives from the consensus, and its scores. A panel with no consensus is the turn's
/// infrastructure error (no judge answered), as in a run.
pub fn apply_panel(turn: &mut TurnRecord, mut panel: JudgeReply, sop: &Sop, variables: &Values) {
    turn.calls.append(&mut panel.calls);
    match &panel.consensus {
        None => turn.infra_error = Some(no_judge_answered(&panel)),
        Some(consensus) => {
            turn.reference = Some(sop.route(consensus, variables).map_err(|e| e.to_string()));
        }
    }
    turn.judges = Some(panel);
    if turn.infra_error.is_none() {
        turn.scores = score_record(turn, sop);
    }
}

/// A turn's infrastructure error when no judge of its panel answered: each judge's reason.
pub fn no_judge_answered(panel: &JudgeReply) -> String {
    let why: Vec<String> = panel
        .judgments
        .iter()
        .filter_map(|j| j.as_ref().err().cloned())
        .collect();
    format!("no judge answered: {}", why.join("; "))
}

/// Recounts a record's token and cost totals from its calls.
pub fn recount(record: &mut DialogueRecord) {
    let mut usage = Usage::default();
    let mut cost_usd = 0.0;
    for call in record.calls() {
        usage += call.usage;
        cost_usd += call.cost_usd;
    }
    record.usage = usage;
    record.cost_usd = cost_usd;
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::AgentTurn;
    use crate::scenario::Adversarial;

    fn turn(n: u32, outcome: ServiceOutcome) -> TurnRecord {
        TurnRecord {
            turn: n,
            user_message: format!("customer {n}"),
            raw_output: None,
            outcome,
            judges: None,
            reference: None,
            scores: None,
            infra_error: None,
            calls: Vec::new(),
            customer_retry: None,
            off_case: None,
        }
    }

    fn valid(chat: &str) -> ServiceOutcome {
        ServiceOutcome::Valid {
            turn: AgentTurn {
                classification: Default::default(),
                cot: String::new(),
                path: Vec::new(),
                action: "Ask".into(),
                outputs: Default::default(),
                chat: chat.into(),
            },
        }
    }

    fn record(turns: Vec<TurnRecord>, end: DialogueEnd, max_turns: u32) -> DialogueRecord {
        let mut job = crate::scoring::tests::job("d", "agent", "s", Adversarial::Zero);
        job.max_turns = max_turns;
        DialogueRecord {
            job,
            turns,
            closing_calls: Vec::new(),
            end,
            simulated: true,
            structured_output: None,
            usage: Usage::default(),
            cost_usd: 0.0,
            fork: None,
        }
    }

    #[test]
    fn the_paper_judges_its_fixed_turns_and_the_final_one_the_customer_ended_on() {
        let turns: Vec<TurnRecord> = (1..=6).map(|n| turn(n, valid("ok"))).collect();
        let ended = record(turns.clone(), DialogueEnd::UserEndedEarly, 8);
        assert_eq!(judged_turns(&ended, &JudgeTurns::Paper), vec![0, 4, 5]);
        // Cut short by an infrastructure error: the last turn was not the final one.
        let cut = record(turns.clone(), DialogueEnd::InfraError, 8);
        assert_eq!(judged_turns(&cut, &JudgeTurns::Paper), vec![0, 4]);
        // At max_turns the last turn is final whatever the end says.
        let full = record(turns, DialogueEnd::MaxTurns, 6);
        assert_eq!(judged_turns(&full, &JudgeTurns::Paper), vec![0, 4, 5]);
        assert_eq!(
            judged_turns(&full, &JudgeTurns::List(vec![2, 3])),
            vec![1, 2]
        );
    }

    #[test]
    fn a_turn_the_agent_did_not_answer_is_neither_judged_nor_an_agent_line() {
        let turns = vec![
            turn(1, valid("hello")),
            turn(
                2,
                ServiceOutcome::InfraError {
                    error: "agent down".into(),
                },
            ),
            turn(3, valid("back")),
        ];
        let r = record(turns, DialogueEnd::MaxTurns, 3);
        assert_eq!(judged_turns(&r, &JudgeTurns::Every), vec![0, 2]);
        let lines: Vec<(Speaker, String)> = history_before(&r, 2)
            .into_iter()
            .map(|l| (l.speaker, l.text))
            .collect();
        let said = |s: Speaker, t: &str| (s, t.to_string());
        assert_eq!(
            lines,
            vec![
                said(Speaker::User, "customer 1"),
                said(Speaker::Agent, "hello"),
                said(Speaker::User, "customer 2"),
            ]
        );
    }
}
