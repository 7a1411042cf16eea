//! The SAGE suite's explorer: a row per dialogue (model, scenario, target and reached routes,
//! adversarial level, persona, end, mean Overall, flags), its filters, and its transcript as
//! the browser reads it (every turn: the customer's message, the agent's chat, cot and raw
//! output, its classification, path and action beside the reference and the judges, the calls'
//! tokens, latency and cost per role, the scores on one 0-100 scale).

use super::{Index, Names, Standing, Suite, case_id};
use maud::{Markup, html};
use sage_core::protocol::{CallRecord, DialogueJob, DialogueRecord, ServiceOutcome};
use sage_core::scenario::Value;
use sage_core::scoring::fidelity::{self, OffCase};
use sage_core::scoring::summary::{counted_scores, reached_target, route_key};
use sage_core::scoring::turn::judge_chat;
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use super::super::stats::{Mean, category};

/// Bit of a row's flags: a turn with a format error.
pub const FLAG_FORMAT_ERROR: u8 = 1;
/// Bit of a row's flags: a turn with an infrastructure error.
pub const FLAG_INFRA_ERROR: u8 = 2;
/// Bit of a row's flags: an off-case customer line.
pub const FLAG_OFF_CASE: u8 = 4;

/// The explorer's name of a route of a scenario (its `route` and `reached` filters' option
/// text): `SCENARIO: KEY`, KEY as [`route_key`] writes it.
pub fn reached_label(scenario: &str, key: &str) -> String {
    format!("{scenario}: {key}")
}

/// The adversarial levels, in the `adversarial` filter's order.
const LEVELS: [&str; 3] = ["zero", "weak", "strong"];

/// One turn of a transcript as the browser reads it (short keys: it is embedded many times).
#[derive(Serialize)]
struct Turn<'a> {
    /// Turn number.
    n: u32,
    /// The customer's message.
    u: &'a str,
    /// 0 valid, 1 format error, 2 infrastructure error.
    k: u8,
    /// The agent's chat (or the raw reply of a format error).
    c: &'a str,
    /// The agent's chain of thought (its `cot`), when it gave one.
    #[serde(skip_serializing_if = "is_empty")]
    h: &'a str,
    /// The model's raw output, when recorded.
    #[serde(skip_serializing_if = "Option::is_none")]
    w: Option<&'a str>,
    /// The outcome's error (format or infrastructure), if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    e: Option<String>,
    /// The turn's infrastructure error when it is not the outcome's (a format error whose
    /// judges could not be reached, say).
    #[serde(skip_serializing_if = "Option::is_none")]
    i: Option<&'a str>,
    /// 1 when the judges were not asked about this turn (`judge_turns`).
    #[serde(skip_serializing_if = "is_zero")]
    z: u8,
    /// The audit's finding when the customer's line is off-case ([`OffCase::describe`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    v: Option<String>,
    /// 1 when the agent failed here after an off-case customer line (possibly the
    /// simulator's doing).
    #[serde(skip_serializing_if = "is_zero")]
    y: u8,
    /// The agent's classification, aligned with the dialogue's field names.
    #[serde(skip_serializing_if = "Option::is_none")]
    a: Option<Vec<Option<String>>>,
    /// The agent's path.
    #[serde(skip_serializing_if = "Option::is_none")]
    p: Option<&'a [String]>,
    /// The agent's action.
    #[serde(skip_serializing_if = "Option::is_none")]
    x: Option<&'a str>,
    /// The agent's extra outputs, `NAME=value`.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    o: Vec<String>,
    /// The reference: path, action and outputs (or why there is none).
    #[serde(skip_serializing_if = "Option::is_none")]
    r: Option<Reference<'a>>,
    /// Per judge: its classification (aligned with the fields; left out when it is the
    /// consensus), its five 3/6/9 chat scores and their weighted 0-100 Chat, or its error.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    j: Vec<Judge>,
    /// The judges' consensus, aligned with the fields: left out when it is the customer's
    /// truth (`g`), empty when the judges reached none.
    #[serde(skip_serializing_if = "Option::is_none")]
    q: Option<Vec<Option<String>>>,
    /// Scores, 0-100: Acc_cls, Sim_path, Acc_action, Logic, Chat, Overall.
    #[serde(skip_serializing_if = "Option::is_none")]
    s: Option<[f64; 6]>,
    /// The turn's model calls per role (`agent`, `customer`, `judges`, `other`): calls, input
    /// tokens, output tokens, latency (ms, summed), cost (USD).
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    m: BTreeMap<&'static str, [f64; 5]>,
}

fn is_empty(s: &&str) -> bool {
    s.is_empty()
}

fn is_zero(x: &u8) -> bool {
    *x == 0
}

#[derive(Serialize)]
#[serde(untagged)]
enum Reference<'a> {
    Route {
        p: &'a [String],
        x: &'a str,
        #[serde(skip_serializing_if = "Vec::is_empty")]
        o: Vec<String>,
    },
    Error {
        e: &'a str,
    },
}

#[derive(Serialize)]
#[serde(untagged)]
enum Judge {
    Verdict {
        #[serde(skip_serializing_if = "Option::is_none")]
        c: Option<Vec<Option<String>>>,
        d: [u8; 5],
        /// The weighted chat score, 0-100.
        w: f64,
    },
    Error {
        e: String,
    },
}

/// A dialogue's transcript line.
#[derive(Serialize)]
struct Transcript<'a> {
    /// Its id.
    i: &'a str,
    /// Its model under test.
    m: &'a str,
    /// The field names of its classifications.
    f: Vec<&'a str>,
    /// The customer's true values (the job's), aligned with the fields.
    g: Vec<Option<String>>,
    /// The judges' model names.
    jm: &'a [String],
    /// Its turns.
    t: Vec<Turn<'a>>,
}

fn aligned(names: &[&str], values: &BTreeMap<String, Value>) -> Vec<Option<String>> {
    names.iter().map(|n| values.get(*n).map(category)).collect()
}

fn outputs(map: &BTreeMap<String, String>) -> Vec<String> {
    map.iter().map(|(k, v)| format!("{k}={v}")).collect()
}

fn round(x: f64, scale: f64) -> f64 {
    (x * scale).round() / scale
}

/// The role of a call in a dialogue, by its model (as the summary counts them).
pub fn call_role(job: &DialogueJob, call: &CallRecord) -> &'static str {
    if call.model == job.service_model {
        "agent"
    } else if call.model == job.user_model {
        "customer"
    } else if job.judge_models.contains(&call.model) {
        "judges"
    } else {
        "other"
    }
}

/// A turn's calls per role: calls, input tokens, output tokens, latency (ms), cost (USD).
pub fn calls_by_role<'a>(
    job: &DialogueJob,
    calls: impl IntoIterator<Item = &'a CallRecord>,
) -> BTreeMap<&'static str, [f64; 5]> {
    let mut out: BTreeMap<&'static str, [f64; 5]> = BTreeMap::new();
    for call in calls {
        let v = out.entry(call_role(job, call)).or_default();
        v[0] += 1.0;
        v[1] += call.usage.input_tokens as f64;
        v[2] += call.usage.output_tokens as f64;
        v[3] += call.latency_ms as f64;
        v[4] += call.cost_usd;
    }
    out
}

/// The transcript of a record.
fn transcript(record: &DialogueRecord) -> Transcript<'_> {
    let job = &record.job;
    let names: Vec<&str> = job.fields.keys().map(String::as_str).collect();
    let truth: Vec<Option<String>> = names
        .iter()
        .map(|n| job.fields.get(*n).map(category))
        .collect();
    let off_case_from = fidelity::first_off_case(record).unwrap_or(usize::MAX);
    let turns = record
        .turns
        .iter()
        .enumerate()
        .map(|(index, t)| {
            let (k, c, e, agent) = match &t.outcome {
                ServiceOutcome::Valid { turn } => (0, turn.chat.as_str(), None, Some(turn)),
                ServiceOutcome::FormatError { error, chat } => {
                    (1, chat.as_str(), Some(error.to_string()), None)
                }
                ServiceOutcome::InfraError { error } => (2, "", Some(error.clone()), None),
            };
            // The turn's own infrastructure error (the user, agent or judges unreachable)
            // shows beside a format error, never in place of it.
            let i = t
                .infra_error
                .as_deref()
                .filter(|i| e.as_deref() != Some(*i));
            let r = t.reference.as_ref().map(|r| match r {
                Ok(route) => Reference::Route {
                    p: &route.path,
                    x: &route.action,
                    o: outputs(&route.outputs),
                },
                Err(e) => Reference::Error { e },
            });
            let (j, q) = match &t.judges {
                Some(panel) => {
                    let consensus = panel
                        .consensus
                        .as_ref()
                        .map_or_else(Vec::new, |c| aligned(&names, c));
                    let judges = panel
                        .judgments
                        .iter()
                        .map(|j| match j {
                            Ok(j) => Judge::Verdict {
                                c: Some(aligned(&names, &j.classification))
                                    .filter(|c| *c != consensus),
                                d: [
                                    j.chat.linguistic_quality,
                                    j.chat.anthropomorphism_emotion,
                                    j.chat.content_utility,
                                    j.chat.user_satisfaction,
                                    j.chat.instruction_compliance,
                                ],
                                w: round(judge_chat(&j.chat), 100.0),
                            },
                            Err(e) => Judge::Error { e: e.clone() },
                        })
                        .collect();
                    (judges, Some(consensus).filter(|c| *c != truth))
                }
                None => (Vec::new(), None),
            };
            Turn {
                n: t.turn,
                u: &t.user_message,
                k,
                c,
                h: agent.map_or("", |a| a.cot.as_str()),
                w: t.raw_output.as_deref(),
                e,
                i,
                z: u8::from(t.judges.is_none() && k != 2 && t.infra_error.is_none()),
                v: t.off_case.as_ref().map(OffCase::describe),
                y: u8::from(fidelity::failed(t) && index >= off_case_from),
                a: agent.map(|a| aligned(&names, &a.classification)),
                p: agent.map(|a| a.path.as_slice()),
                x: agent.map(|a| a.action.as_str()),
                o: agent.map(|a| outputs(&a.outputs)).unwrap_or_default(),
                r,
                j,
                q,
                s: t.scores.filter(|_| k != 2).map(|s| {
                    [
                        round(100.0 * s.acc_cls, 100.0),
                        round(100.0 * s.sim_path, 100.0),
                        round(100.0 * s.acc_action, 100.0),
                        round(s.logic, 100.0),
                        round(s.chat, 100.0),
                        round(s.overall, 100.0),
                    ]
                }),
                m: calls_by_role(job, &t.calls),
            }
        })
        .collect();
    Transcript {
        i: &job.dialogue_id,
        m: &job.service_model,
        f: names,
        g: truth,
        jm: &job.judge_models,
        t: turns,
    }
}

/// What the explorer keeps of a dialogue for its row.
#[derive(Debug, Clone)]
pub struct SageRow {
    id: Box<str>,
    model: Arc<str>,
    scenario: Arc<str>,
    route: Arc<str>,
    level: u8,
    persona: Arc<str>,
    end: &'static str,
    /// The mean Overall of its scored turns (0-100, two decimals).
    score: Option<f64>,
    flags: u8,
    turns: u32,
    /// Per route its scored turns' references reached (`SCENARIO: KEY`), their mean Logic.
    reached: Vec<(Arc<str>, f64)>,
    /// Each turn against its reference, one [`sage_core::protocol::TurnVerdict::letter`] per turn.
    verdicts: Box<str>,
}

/// The SAGE suite of the explorer ([`super::Explorer`]): rows, filters, transcripts.
#[derive(Debug, Default)]
pub struct SageExplorer {
    /// The strings the rows share (models, scenarios, routes, personas).
    strings: super::Interner,
    /// The models in the leaderboard's order: the `models` table (the model filter, the case
    /// view's rows) follows it.
    ranked: Vec<String>,
}

impl SageExplorer {
    /// Lists the models in this order (the leaderboard's, best first) wherever the explorer
    /// orders them; a model not named here comes after, by name.
    pub fn rank_models(&mut self, ranked: Vec<String>) {
        self.ranked = ranked;
    }
}

/// Sorted distinct values and each value's index.
fn table<'a>(values: impl Iterator<Item = &'a str>) -> (Vec<&'a str>, BTreeMap<&'a str, usize>) {
    let set: BTreeSet<&str> = values.collect();
    let list: Vec<&str> = set.into_iter().collect();
    let index = list.iter().enumerate().map(|(i, s)| (*s, i)).collect();
    (list, index)
}

/// Distinct values in the order of `ranked` (those it names), then the others sorted, and
/// each value's index.
fn ranked_table<'a>(
    values: impl Iterator<Item = &'a str>,
    ranked: &'a [String],
) -> (Vec<&'a str>, BTreeMap<&'a str, usize>) {
    let (sorted, _) = table(values);
    let mut list: Vec<&str> = ranked
        .iter()
        .map(String::as_str)
        .filter(|m| sorted.binary_search(m).is_ok())
        .collect();
    let named: BTreeSet<&str> = list.iter().copied().collect();
    list.extend(sorted.into_iter().filter(|m| !named.contains(m)));
    let index = list.iter().enumerate().map(|(i, s)| (*s, i)).collect();
    (list, index)
}

impl Suite for SageExplorer {
    type Record = DialogueRecord;
    type Row = SageRow;
    const NAMES: Names = Names {
        root: "explorer",
        table: "explorer-table",
        count: "explorer-count",
        view: "dialogue-view",
        data: "explorer-data",
        key: "dialogue",
        noun: "dialogue",
        nouns: "dialogues",
    };

    fn row(&mut self, record: &DialogueRecord) -> (SageRow, Standing) {
        let job = &record.job;
        let mut flags = 0u8;
        // Per reached route, the Logic of its turns.
        let mut on_route: BTreeMap<String, Mean> = BTreeMap::new();
        for t in &record.turns {
            let infra = matches!(t.outcome, ServiceOutcome::InfraError { .. });
            if let (Some(s), Some(Ok(route)), false) = (t.scores, &t.reference, infra) {
                on_route
                    .entry(reached_label(&job.scenario, &route_key(route)))
                    .or_default()
                    .add(s.logic);
            }
            match t.outcome {
                ServiceOutcome::FormatError { .. } => flags |= FLAG_FORMAT_ERROR,
                ServiceOutcome::InfraError { .. } => flags |= FLAG_INFRA_ERROR,
                ServiceOutcome::Valid { .. } => {}
            }
            if t.infra_error.is_some() {
                flags |= FLAG_INFRA_ERROR;
            }
            if t.off_case.is_some() {
                flags |= FLAG_OFF_CASE;
            }
        }
        // The mean Overall of the turns the summary counts.
        let mut mean = Mean::default();
        for s in counted_scores(record) {
            mean.add(s.overall);
        }
        let exact = mean.get();
        let score = exact.map(|x| round(x, 100.0));
        let reached = on_route
            .into_iter()
            .filter_map(|(label, m)| Some((self.strings.get(&label), round(m.get()?, 100.0))))
            .collect();
        let row = SageRow {
            id: job.dialogue_id.as_str().into(),
            model: self.strings.get(&job.service_model),
            scenario: self.strings.get(&job.scenario),
            route: self
                .strings
                .get(&reached_label(&job.scenario, &route_key(&job.target))),
            level: match job.adversarial {
                sage_core::scenario::Adversarial::Zero => 0,
                sage_core::scenario::Adversarial::Weak => 1,
                sage_core::scenario::Adversarial::Strong => 2,
            },
            persona: self.strings.get(&job.persona),
            end: record.end.name(),
            score,
            flags,
            turns: record.turns.len() as u32,
            reached,
            verdicts: record
                .turns
                .iter()
                .map(|t| t.verdict().letter())
                .collect::<String>()
                .into(),
        };
        let standing = Standing {
            group: format!("{}\u{1f}{}", job.service_model, job.scenario),
            failing: !reached_target(record),
            score: exact,
        };
        (row, standing)
    }

    fn id(row: &SageRow) -> &str {
        &row.id
    }

    fn case(row: &SageRow) -> String {
        case_id(&row.id, &row.model)
    }

    fn transcript(&self, record: &DialogueRecord, out: &mut Vec<u8>) -> serde_json::Result<()> {
        serde_json::to_writer(out, &transcript(record))
    }

    fn index(&self, rows: &[&SageRow]) -> Index {
        let (models, m) = ranked_table(rows.iter().map(|r| &*r.model), &self.ranked);
        let (scenarios, s) = table(rows.iter().map(|r| &*r.scenario));
        let (routes, t) = table(rows.iter().map(|r| &*r.route));
        let (reached, x) = table(
            rows.iter()
                .flat_map(|r| r.reached.iter().map(|(l, _)| &**l)),
        );
        let (personas, p) = table(rows.iter().map(|r| &*r.persona));
        let (ends, e) = table(rows.iter().map(|r| r.end));
        let cells = rows
            .iter()
            .map(|r| {
                super::cells(&serde_json::json!([
                    m[&*r.model],
                    s[&*r.scenario],
                    t[&*r.route],
                    r.level,
                    p[&*r.persona],
                    e[r.end],
                    r.score,
                    r.flags,
                    r.turns,
                    r.reached
                        .iter()
                        .map(|(l, v)| serde_json::json!([x[&**l], v]))
                        .collect::<Vec<_>>(),
                    &*r.verdicts,
                ]))
            })
            .collect();
        Index {
            tables: serde_json::json!({
                "models": models,
                "scenarios": scenarios,
                "routes": routes,
                "reached": reached,
                "personas": personas,
                "ends": ends,
                "levels": LEVELS,
            }),
            cells,
        }
    }

    fn controls(&self, index: &Index) -> Markup {
        // The options' values are indexes into the tables.
        let select = |key: &str, label: &str, table: &str| {
            let options: Vec<(String, String)> = index
                .names(table)
                .into_iter()
                .enumerate()
                .map(|(i, name)| (i.to_string(), name))
                .collect();
            super::select_filter(key, label, &options)
        };
        html! {
            div.filters {
                (select("model", "Model", "models"))
                (select("scenario", "Scenario", "scenarios"))
                (select("route", "Target route", "routes"))
                (select("reached", "Reached route", "reached"))
                (select("adversarial", "Adversarial", "levels"))
                (select("persona", "Persona", "personas"))
                (select("end", "End", "ends"))
                label { "Overall from " input type="number" min="0" max="100" step="any" data-filter="min-score" size="5"; }
                label { "to " input type="number" min="0" max="100" step="any" data-filter="max-score" size="5"; }
                label { input type="checkbox" data-filter="format-error"; " format-error turns" }
                label { input type="checkbox" data-filter="infra-error"; " infrastructure-error turns" }
                label { input type="checkbox" data-filter="off-case"; " off-case customer" }
                label { "Order "
                    select data-sort-rows {
                        option value="" { "by dialogue id" }
                        option value="worst" { "worst first" }
                    }
                }
            }
        }
    }

    fn head(&self) -> Markup {
        html! {
            thead {
                tr {
                    th { "Dialogue" }
                    th.num title="the mean Overall (0-100) of the dialogue's scored turns" { "Overall" }
                    th.num title="the mean Logic (0-100) of the dialogue's turns on the reached route filtered to" { "Logic on route" }
                    th.num { "Turns" }
                    th { "Model" }
                    th { "Scenario" }
                    th { "Target route" }
                    th { "Adversarial" }
                    th { "Persona" }
                    th { "End" }
                }
            }
        }
    }
}

/// The SAGE explorer's script: its columns, filters and transcript (the engine is
/// [`super::SCRIPT`]).
pub const SCRIPT: &str = include_str!("../js/sage_explorer.js");

/// The SAGE transcript's style.
pub const CSS: &str = r#"
#dialogue-view .turn{border:1px solid var(--line);border-radius:6px;padding:8px 10px;margin:10px 0;scroll-margin-top:44px}
#dialogue-view .turn.on-route{box-shadow:inset 4px 0 0 var(--accent)}
#dialogue-view .turn.differs h4{color:var(--bad)}
#dialogue-view .turn.broke{border:2px solid var(--bad)}
#dialogue-view .turn h4 .tag{margin-left:8px}
#dialogue-view .turn h4{margin:0 0 6px;font-size:14px}
#dialogue-view .msg{white-space:pre-wrap;padding:6px 8px;border-radius:6px;margin:4px 0}
#dialogue-view .msg.customer{background:var(--panel)}
#dialogue-view .msg.agent{border:1px solid var(--line)}
#dialogue-view .msg.cot{border:1px dashed var(--line);color:var(--muted)}
#dialogue-view .diff{background:rgba(198,40,40,.16);color:var(--bad);font-weight:600}
#dialogue-view .err{color:var(--bad)}
#dialogue-view .not-judged{color:var(--muted)}
#dialogue-view table.data th,#dialogue-view table.data td{padding:2px 6px}
#dialogue-view table.calls td,#dialogue-view table.calls th{padding:1px 6px}
#dialogue-view .scores .tag{margin-right:4px}
#dialogue-view .case-overview{margin:6px 0 14px}
#dialogue-view .case-overview .table-box{max-height:60vh}
#dialogue-view table.case-verdicts td.model label{white-space:nowrap;cursor:pointer}
#dialogue-view table.case-verdicts td.model a{font-size:12px}
#dialogue-view table.case-verdicts th.turn-n{min-width:1.9em}
#dialogue-view .verdict{text-align:center;font-weight:700}
#dialogue-view table.case-verdicts td.verdict{padding:2px 3px}
#dialogue-view .verdict.v-followed{color:var(--good)}
#dialogue-view .verdict.v-left{color:var(--bad);background:rgba(198,40,40,.12)}
#dialogue-view .verdict.v-format{color:var(--bad);background:rgba(198,40,40,.24)}
#dialogue-view .verdict.v-infra{color:var(--warn)}
#dialogue-view .verdict.v-unjudged,#dialogue-view .verdict.v-noref{color:var(--muted);font-weight:400}
#dialogue-view .case-scroll{overflow-x:auto;max-width:100%}
#dialogue-view table.case-turns .turn{margin:0}
#dialogue-view table.case-turns .facts{margin:4px 0;font-size:12px}
#dialogue-view table.compare th,#dialogue-view table.compare td{overflow-wrap:normal}
#dialogue-view table.judge-chat th{font-weight:600}
"#;
