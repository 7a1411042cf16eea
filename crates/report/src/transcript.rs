//! One dialogue's transcript as plain text (`sage show DIR DIALOGUE_ID`): the case, then per
//! turn the customer's message, the agent's reply, its classification, path, action and outputs
//! beside the reference (the judges' consensus and the route the rule engine derived from it;
//! `==` where they agree, `!=` where they differ), each judge's vote (its five 3/6/9 chat
//! scores and their weighted Chat), the turn's scores on the 0-100 scale the HTML report uses,
//! and its model calls per role (tokens, latency, cost). A turn the judges were not asked about
//! (`judge_turns`) says "not judged" and compares nothing.

use sage_core::protocol::{DialogueRecord, ServiceOutcome, TurnRecord};
use sage_core::scenario::Value;
use sage_core::scoring::summary::{counted_scores, reached_target, route_key};
use sage_core::scoring::turn::{judge_chat, values_equal};
use std::collections::BTreeMap;
use std::fmt::Write;

/// `text` as a terminal may print it: every control character but the line break and the tab (escape
/// sequences that set the window title, write the clipboard, clear the screen; a carriage
/// return that overwrites a line; a bell) and every bidirectional-formatting character (text
/// shown in another order than written) is written visibly as its escape (`\u{1b}`,
/// `\u{202e}`); borrowed when there is none. Model text is anyone's: it goes through this
/// before a terminal shows it.
pub fn terminal_safe(text: &str) -> std::borrow::Cow<'_, str> {
    let unsafe_char = |c: char| {
        (c.is_control() && c != '\n' && c != '\t')
            || matches!(c, '\u{200e}' | '\u{200f}' | '\u{061c}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
    };
    if !text.chars().any(unsafe_char) {
        return std::borrow::Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        if unsafe_char(c) {
            out.extend(c.escape_unicode());
        } else {
            out.push(c);
        }
    }
    std::borrow::Cow::Owned(out)
}

/// The transcript of `record`.
pub fn transcript_text(record: &DialogueRecord) -> String {
    let job = &record.job;
    let mut out = String::new();
    let _ = writeln!(out, "Dialogue {}", job.dialogue_id);
    let _ = writeln!(
        out,
        "  model {}{} · scenario {} · intent {} · persona {} · adversarial {} · repeat {}",
        job.service_model,
        if record.simulated { " (simulated)" } else { "" },
        job.scenario,
        job.intent,
        job.persona,
        job.adversarial,
        job.repeat
    );
    let _ = writeln!(out, "  target  {}", route_key(&job.target));
    let _ = writeln!(out, "  truth   {}", assignment(&job.fields));
    if !job.variables.is_empty() {
        let _ = writeln!(out, "  system  {}", assignment(&job.variables));
    }
    let _ = writeln!(
        out,
        "  ended   {} · target action reached: {}",
        record.end.name(),
        if reached_target(record) { "yes" } else { "no" }
    );
    for t in &record.turns {
        turn(&mut out, t, job);
    }
    let scores: Vec<_> = counted_scores(record).collect();
    if !scores.is_empty() {
        let n = scores.len() as f64;
        let mean = |f: fn(&sage_core::protocol::TurnScores) -> f64| {
            scores.iter().map(|s| f(s)).sum::<f64>() / n
        };
        let _ = writeln!(
            out,
            "\nMeans over {} scored turns: OA {:.2} · Logic {:.2} · Chat {:.2}",
            scores.len(),
            mean(|s| s.overall),
            mean(|s| s.logic),
            mean(|s| s.chat)
        );
    }
    let cost = record.cost_usd;
    let _ = writeln!(
        out,
        "Tokens {} in, {} out · cost ${cost:.4}",
        record.usage.input_tokens, record.usage.output_tokens
    );
    out
}

/// `A=x, B=y` (`-` when empty).
fn assignment<'a>(values: impl IntoIterator<Item = (&'a String, &'a Value)>) -> String {
    let parts: Vec<String> = values
        .into_iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect();
    if parts.is_empty() {
        "-".into()
    } else {
        parts.join(", ")
    }
}

use sage_core::scoring::leaderboard::said;

/// Rows of a turn: the width of the label column.
struct Rows<'a> {
    out: &'a mut String,
    width: usize,
}

impl Rows<'_> {
    /// One row of the comparison with the reference: `label  agent  ==|!=  reference`.
    fn row(&mut self, label: &str, agent: &str, same: Option<bool>, reference: &str) {
        let mark = match same {
            Some(true) => "==",
            Some(false) => "!=",
            None => "  ",
        };
        let width = self.width;
        let _ = writeln!(
            self.out,
            "    {label:<width$} {agent:<24} {mark} {reference}"
        );
    }

    /// A row of one text: `label  text`.
    fn line(&mut self, label: &str, text: &str) {
        let width = self.width;
        let _ = writeln!(self.out, "    {label:<width$} {text}");
    }
}

/// The label column's width for a turn: its longest field or output name, at least 14.
fn label_width(t: &TurnRecord) -> usize {
    let mut names: Vec<&String> = Vec::new();
    if let ServiceOutcome::Valid { turn } = &t.outcome {
        names.extend(turn.classification.keys().chain(turn.outputs.keys()));
    }
    if let Some(c) = t.judges.as_ref().and_then(|p| p.consensus.as_ref()) {
        names.extend(c.keys());
    }
    if let Some(Ok(r)) = &t.reference {
        names.extend(r.outputs.keys());
    }
    names
        .iter()
        .map(|n| n.chars().count())
        .max()
        .unwrap_or(0)
        .max(14)
}

fn turn(out: &mut String, t: &TurnRecord, job: &sage_core::protocol::DialogueJob) {
    let judges = &job.judge_models;
    let width = label_width(t);
    let _ = writeln!(out, "\nTurn {}", t.turn);
    said(out, "customer: ", &t.user_message);
    if let Some(off) = &t.off_case {
        said(out, "off-case: ", &off.describe());
    }
    let consensus = t.judges.as_ref().and_then(|p| p.consensus.as_ref());
    let reference = match &t.reference {
        Some(Ok(route)) => Some(route),
        _ => None,
    };
    match &t.outcome {
        ServiceOutcome::Valid { turn } => {
            said(out, "agent:    ", &turn.chat);
            if !turn.cot.is_empty() {
                said(out, "cot:      ", &turn.cot);
            }
            let mut rows = Rows { out, width };
            rows.row(
                "",
                "agent",
                None,
                "reference (judges' consensus, rule engine)",
            );
            let empty = BTreeMap::new();
            let consensus_fields = consensus.unwrap_or(&empty);
            let names: std::collections::BTreeSet<&String> = turn
                .classification
                .keys()
                .chain(consensus_fields.keys())
                .collect();
            for name in names {
                let (mine, theirs) = (turn.classification.get(name), consensus_fields.get(name));
                let same = consensus.map(|_| match (mine, theirs) {
                    (Some(a), Some(b)) => values_equal(a, b),
                    _ => false,
                });
                let show = |v: Option<&Value>| v.map_or_else(|| "-".to_string(), Value::to_string);
                rows.row(name, &show(mine), same, &show(theirs));
            }
            let path = turn.path.join(">");
            match reference {
                Some(r) => {
                    rows.row("path", &path, Some(turn.path == r.path), &r.path.join(">"));
                    rows.row(
                        "action",
                        &turn.action,
                        Some(turn.action == r.action),
                        &r.action,
                    );
                    let keys: std::collections::BTreeSet<&String> =
                        turn.outputs.keys().chain(r.outputs.keys()).collect();
                    for key in keys {
                        let (a, b) = (turn.outputs.get(key), r.outputs.get(key));
                        let show = |v: Option<&String>| v.cloned().unwrap_or_else(|| "-".into());
                        rows.row(key, &show(a), Some(a == b), &show(b));
                    }
                }
                None => {
                    let why = match &t.reference {
                        Some(Err(e)) => format!("no reference: {e}"),
                        _ if t.judges.is_none() => "not judged".to_string(),
                        _ => "no reference".to_string(),
                    };
                    rows.row("path", &path, None, &why);
                    rows.row("action", &turn.action, None, "");
                }
            }
        }
        ServiceOutcome::FormatError { error, chat } => {
            said(out, "agent:    ", chat);
            let _ = writeln!(out, "    format error: {error}");
            if let Some(r) = reference {
                Rows { out, width }.line("reference", &route_key(r));
            }
        }
        ServiceOutcome::InfraError { error } => {
            let _ = writeln!(out, "  agent:    (not reached) {error}");
        }
    }
    let mut rows = Rows { out, width };
    if let Some(panel) = &t.judges {
        for (i, judgment) in panel.judgments.iter().enumerate() {
            let name = judges.get(i).map_or("judge", String::as_str);
            let label = if i == 0 { "judges" } else { "" };
            let vote = match judgment {
                Ok(j) => {
                    let c = &j.chat;
                    format!(
                        "{name}: {} · chat {} {} {} {} {} (3/6/9; weighted {:.1} of 100)",
                        assignment(&j.classification),
                        c.linguistic_quality,
                        c.anthropomorphism_emotion,
                        c.content_utility,
                        c.user_satisfaction,
                        c.instruction_compliance,
                        judge_chat(c)
                    )
                }
                Err(e) => format!("{name}: failed: {e}"),
            };
            rows.line(label, &vote);
        }
    }
    if let Some(s) = &t.scores {
        // One unit for every score, as the HTML report shows them: 0-100.
        let scores = format!(
            "OA {:.2} · Logic {:.2} (Acc_cls {:.2}, Sim_path {:.2}, Acc_action {:.2}) · Chat {:.2} (0-100)",
            s.overall,
            s.logic,
            100.0 * s.acc_cls,
            100.0 * s.sim_path,
            100.0 * s.acc_action,
            s.chat
        );
        rows.line("scores", &scores);
    } else if t.judges.is_none() && !matches!(t.outcome, ServiceOutcome::InfraError { .. }) {
        rows.line(
            "not judged",
            "the run's judge_turns did not ask the judges about this turn: no reference, no scores",
        );
    }
    for (role, v) in super::explorer::sage::calls_by_role(job, &t.calls) {
        rows.line(
            if role == "agent" { "calls" } else { "" },
            &format!(
                "{role}: {} · {} tokens in, {} out · {} ms · ${:.4}",
                v[0], v[1], v[2], v[3], v[4]
            ),
        );
    }
    if let Some(e) = &t.infra_error {
        rows.line("infra error", &format!("not scored: {e}"));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sage_core::protocol::{
        AgentTurn, ChatScores, DialogueEnd, DialogueJob, JudgeReply, Judgment, TurnScores, Usage,
    };
    use sage_core::scenario::Adversarial;
    use sage_core::sop::Route;

    fn route(path: &[&str], action: &str) -> Route {
        Route {
            path: path.iter().map(|s| s.to_string()).collect(),
            action: action.into(),
            outputs: BTreeMap::new(),
        }
    }

    fn fields(pairs: &[(&str, &str)]) -> BTreeMap<String, Value> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), Value::Str(v.to_string())))
            .collect()
    }

    #[test]
    fn differences_from_the_reference_are_marked() {
        let chat = ChatScores {
            linguistic_quality: 9,
            anthropomorphism_emotion: 6,
            content_utility: 9,
            user_satisfaction: 6,
            instruction_compliance: 9,
        };
        let record = DialogueRecord {
            job: DialogueJob {
                run_id: "run".into(),
                dialogue_id: "tp/0001/m/r0".into(),
                scenario: "tp".into(),
                target: route(&["a", "b"], "Refund"),
                fields: fields(&[("A", "x")]).into_iter().collect(),
                variables: Default::default(),
                intent: "refund".into(),
                persona: "calm".into(),
                adversarial: Adversarial::Weak,
                service_model: "m".into(),
                user_model: "u".into(),
                user_model_index: 0,
                judge_models: vec!["j1".into(), "j2".into()],
                judge_turns: sage_core::protocol::JudgeTurns::Every,
                max_turns: 5,
                seed: 1,
                repeat: 0,
            },
            turns: vec![TurnRecord {
                turn: 1,
                user_message: "I want my money back".into(),
                raw_output: None,
                outcome: ServiceOutcome::Valid {
                    turn: AgentTurn {
                        classification: fields(&[("A", "y")]),
                        cot: String::new(),
                        path: vec!["a".into(), "c".into()],
                        action: "Refund".into(),
                        outputs: BTreeMap::new(),
                        chat: "Sure.\nDone.".into(),
                    },
                },
                judges: Some(JudgeReply {
                    judgments: vec![
                        Ok(Judgment {
                            classification: fields(&[("A", "x")]),
                            chat,
                        }),
                        Err("timeout".into()),
                    ],
                    consensus: Some(fields(&[("A", "x")])),
                    calls: vec![],
                }),
                reference: Some(Ok(route(&["a", "b"], "Refund"))),
                scores: Some(TurnScores {
                    acc_cls: 0.0,
                    sim_path: 0.5,
                    acc_action: 1.0,
                    logic: 40.0,
                    chat: 80.0,
                    overall: 48.0,
                    sim_path_prefix: 0.5,
                }),
                infra_error: None,
                calls: vec![],
                customer_retry: None,
                off_case: None,
            }],
            closing_calls: vec![],
            end: DialogueEnd::Resolved,
            simulated: false,
            structured_output: None,
            usage: Usage::default(),
            cost_usd: 0.0,
            fork: None,
        };
        let text = transcript_text(&record);
        let lines: Vec<&str> = text.lines().map(str::trim_end).collect();
        assert_eq!(lines[0], "Dialogue tp/0001/m/r0");
        assert!(lines.contains(&"  ended   resolved · target action reached: yes"));
        assert!(lines.contains(&"  customer: I want my money back"));
        assert!(lines.contains(&"  agent:    Sure."));
        assert!(lines.contains(&"            Done."));
        assert!(lines.contains(&format!("    {:<14} {:<24} != x", "A", "y").as_str()));
        assert!(lines.contains(&format!("    {:<14} {:<24} != a>b", "path", "a>c").as_str()));
        assert!(
            lines.contains(&format!("    {:<14} {:<24} == Refund", "action", "Refund").as_str())
        );
        assert!(text.contains("judges         j1: A=x · chat 9 6 9 6 9"));
        assert!(text.contains("j2: failed: timeout"));
        assert!(text.contains(
            "OA 48.00 · Logic 40.00 (Acc_cls 0.00, Sim_path 50.00, Acc_action 100.00) · Chat 80.00 (0-100)"
        ));
        assert!(text.contains("Means over 1 scored turns: OA 48.00"));
        assert!(text.contains("j1: A=x · chat 9 6 9 6 9 (3/6/9; weighted 86.7 of 100)"));

        // A turn the judges were not asked about: "not judged", nothing compared.
        let mut unjudged = record.clone();
        let t = &mut unjudged.turns[0];
        t.judges = None;
        t.reference = None;
        t.scores = None;
        t.calls = vec![sage_core::protocol::CallRecord {
            model: "m".into(),
            simulated: false,
            request: vec![],
            response: None,
            finish_reason: None,
            error: None,
            attempts: 1,
            usage: Usage {
                input_tokens: 120,
                output_tokens: 30,
                ..Usage::default()
            },
            cost_usd: 0.0015,
            cached: false,
            latency_ms: 850,
            refused: 0,
            limit_wait_ms: 0,
        }];
        let text = transcript_text(&unjudged);
        assert!(!text.contains(" != "), "{text}");
        assert!(
            text.contains("    not judged     the run's judge_turns did not ask the judges"),
            "{text}"
        );
        assert!(
            text.contains(&format!("    {:<14} {:<24}    not judged", "path", "a>c")),
            "{text}"
        );
        assert!(
            text.contains("calls          agent: 1 · 120 tokens in, 30 out · 850 ms · $0.0015"),
            "{text}"
        );
    }

    #[test]
    fn control_and_bidi_characters_are_shown_as_escapes() {
        // Window title, clipboard (OSC 52), clear screen, carriage return, bell, right-to-left
        // override: written visibly, nothing a terminal would act on left.
        let hostile = "a\u{1b}]0;pwned\u{7}b\u{1b}]52;c;clip\u{7}\u{1b}[2J\rx\u{202e}y\nz\tw";
        assert_eq!(
            terminal_safe(hostile),
            "a\\u{1b}]0;pwned\\u{7}b\\u{1b}]52;c;clip\\u{7}\\u{1b}[2J\\u{d}x\\u{202e}y\nz\tw"
        );
        assert!(matches!(
            terminal_safe("plain, accentué, 日本語\n"),
            std::borrow::Cow::Borrowed(_)
        ));
    }
}
