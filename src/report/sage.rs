//! The SAGE suite's report, folded one record at a time ([`SageReport::add`]) next to the
//! summary, and rendered with it ([`SageReport::sections`], [`SageReport::page`]): the run
//! header, the leaderboard, the charts, the SOP graphs with their routes, the judges and the
//! dialogue explorer. Its memory grows with its output only: per route, stage and field a few
//! counters, a bounded list of split turns, and the explorer's rows and compressed transcripts.

use super::charts::{self, BarGroup, Line, num, raw};
use super::explorer::{self, ExplorerFold, dialogue_anchor};
use super::graph::{self, GraphUse};
use super::page::{Page, Section, escape};
use super::stats::{Confusion, Mean, category};
use crate::plan::RunConfig;
use crate::protocol::{DialogueRecord, FormatError, ServiceOutcome};
use crate::scoring::summary::{GroupStats, route_key};
use crate::scoring::{Metric, Summary};
use crate::sop::Sop;
use indexmap::IndexMap;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write;
use std::sync::Arc;

/// What the report says about the run besides its records (from its manifest).
#[derive(Debug, Clone, PartialEq)]
pub struct RunInfo {
    /// The run id.
    pub run_id: String,
    /// When it started (UTC, RFC 3339).
    pub created_at: String,
    /// SAGE-RS version that ran it.
    pub sage_version: String,
    /// Its configuration.
    pub config: RunConfig,
    /// Scenario ids with the SHA-256 of their YAML.
    pub scenarios: Vec<(String, String)>,
    /// Models that are built-in simulations.
    pub simulated_models: Vec<String>,
    /// Dialogue jobs planned.
    pub jobs: usize,
}

/// Split turns listed in the judges section (the count covers them all).
pub const MAX_SPLITS: usize = 300;
/// Infrastructure errors quoted in the run header (the counts cover them all).
pub const MAX_INFRA_EXAMPLES: usize = 12;

/// One route of a scenario as the runs used it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RouteUse {
    /// Dialogues with a scored turn whose reference route is this one.
    pub dialogues: usize,
    /// The Logic of those turns.
    pub logic: Mean,
    /// Per model under test.
    pub by_model: BTreeMap<String, Mean>,
    /// Per model under test, its dialogues that reached the route.
    pub dialogues_by_model: BTreeMap<String, usize>,
}

/// Judge agreement on one field: each pair of judges ([`judge_pairs`]) and the consensus
/// against the customer's true value.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct FieldJudges {
    /// Per pair of judges, in [`judge_pairs`] order (judge 1 vs 2, 1 vs 3, 2 vs 3, ...), over
    /// the turns where both answered.
    pub pairs: Vec<Confusion>,
    /// The consensus vs the job's value.
    pub truth: Confusion,
}

/// The pairs of judges of a panel of `n` (0-based), in order: (0, 1), (0, 2), ..., (1, 2), ...
pub fn judge_pairs(n: usize) -> impl Iterator<Item = (usize, usize)> {
    (0..n).flat_map(move |a| (a + 1..n).map(move |b| (a, b)))
}

impl FieldJudges {
    /// The mean of the pairwise Cohen's kappas that are defined (Light's kappa).
    pub fn kappa(&self) -> Option<f64> {
        let ks: Vec<f64> = self.pairs.iter().filter_map(Confusion::kappa).collect();
        (!ks.is_empty()).then(|| ks.iter().sum::<f64>() / ks.len() as f64)
    }
}

/// A turn where the judges did not all give the same value to a field.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Split {
    /// The dialogue.
    pub dialogue: String,
    /// The turn.
    pub turn: u32,
    /// The model under test.
    pub model: String,
    /// The field.
    pub field: String,
    /// Each judge's value (`None`: the judge failed or gave none).
    pub votes: Vec<Option<String>>,
    /// The customer's true value.
    pub truth: Option<String>,
}

/// An infrastructure error met in the run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InfraExample {
    /// The model under test of its dialogue.
    pub model: String,
    /// The dialogue.
    pub dialogue: String,
    /// The error.
    pub error: String,
}

/// The SAGE report's fold.
#[derive(Debug)]
pub struct SageReport {
    info: RunInfo,
    sops: Vec<Arc<Sop>>,
    /// Per scenario, per route key.
    routes: BTreeMap<String, BTreeMap<String, RouteUse>>,
    /// Per scenario.
    graphs: BTreeMap<String, GraphUse>,
    /// Per model, turns per format-error kind ([`FormatError::KINDS`]).
    format_errors: BTreeMap<String, [u64; 8]>,
    /// Per scenario, per field.
    judges: BTreeMap<String, IndexMap<String, FieldJudges>>,
    /// The [`MAX_SPLITS`] splits of smallest key (a hash of dialogue, turn and field), so that
    /// the list does not depend on the order the records came in.
    splits: BTreeMap<(u64, String, u32, String), Split>,
    split_turns: u64,
    /// The largest judge panel met.
    panel: usize,
    /// Per model, infrastructure-error turns.
    infra_turns: BTreeMap<String, u64>,
    infra_examples: Vec<InfraExample>,
    explorer: ExplorerFold,
}

impl SageReport {
    /// An empty report of a run (`sops`: its compiled scenarios, for the graphs; a scenario
    /// missing there is reported without its graph).
    pub fn new(info: RunInfo, sops: Vec<Arc<Sop>>) -> SageReport {
        SageReport {
            info,
            sops,
            routes: BTreeMap::new(),
            graphs: BTreeMap::new(),
            format_errors: BTreeMap::new(),
            judges: BTreeMap::new(),
            splits: BTreeMap::new(),
            split_turns: 0,
            panel: 0,
            infra_turns: BTreeMap::new(),
            infra_examples: Vec::new(),
            explorer: ExplorerFold::default(),
        }
    }

    /// The run.
    pub fn info(&self) -> &RunInfo {
        &self.info
    }

    /// Per scenario, per route key (see [`route_key`]): how the runs used each route reached
    /// by a turn's reference.
    pub fn routes(&self) -> &BTreeMap<String, BTreeMap<String, RouteUse>> {
        &self.routes
    }

    /// Per scenario, per field: the judges' agreement.
    pub fn judges(&self) -> &BTreeMap<String, IndexMap<String, FieldJudges>> {
        &self.judges
    }

    /// Up to [`MAX_SPLITS`] (turn, field) pairs where the judges split (a sample that does not
    /// depend on the records' order, sorted by dialogue, turn and field), and how many turns
    /// had a split in all.
    pub fn splits(&self) -> (Vec<&Split>, u64) {
        let mut list: Vec<&Split> = self.splits.values().collect();
        list.sort_by(|a, b| (&a.dialogue, a.turn, &a.field).cmp(&(&b.dialogue, b.turn, &b.field)));
        (list, self.split_turns)
    }

    /// Per model, turns per format-error kind.
    pub fn format_errors(&self) -> &BTreeMap<String, [u64; 8]> {
        &self.format_errors
    }

    /// Folds a record in (the caller skips repeated dialogue ids).
    pub fn add(&mut self, record: &DialogueRecord) {
        let job = &record.job;
        let model = &job.service_model;
        let routes = self.routes.entry(job.scenario.clone()).or_default();
        let graph = self.graphs.entry(job.scenario.clone()).or_default();
        let judges = self.judges.entry(job.scenario.clone()).or_default();
        let mut reached: BTreeSet<String> = BTreeSet::new();
        for t in &record.turns {
            let infra = matches!(t.outcome, ServiceOutcome::InfraError { .. });
            if let ServiceOutcome::FormatError { error, .. } = &t.outcome {
                let kinds = self.format_errors.entry(model.clone()).or_default();
                if let Some(k) = FormatError::KINDS.iter().position(|k| *k == error.kind()) {
                    kinds[k] += 1;
                }
            }
            let error = match &t.outcome {
                ServiceOutcome::InfraError { error } => Some(error),
                _ => t.infra_error.as_ref(),
            };
            if let Some(error) = error {
                *self.infra_turns.entry(model.clone()).or_default() += 1;
                if self.infra_examples.len() < MAX_INFRA_EXAMPLES
                    && !self.infra_examples.iter().any(|e| &e.error == error)
                {
                    self.infra_examples.push(InfraExample {
                        model: model.clone(),
                        dialogue: job.dialogue_id.clone(),
                        error: error.clone(),
                    });
                }
            }
            // Routes and graph: scored turns with a reference route.
            if let (Some(scores), Some(Ok(route)), false) = (t.scores, &t.reference, infra) {
                let key = route_key(route);
                let used = routes.entry(key.clone()).or_default();
                used.logic.add(scores.logic);
                used.by_model
                    .entry(model.clone())
                    .or_default()
                    .add(scores.logic);
                reached.insert(key);
                graph.add(model, &route.path, &route.action, scores.logic);
            }
            // Judges: every turn the panel classified.
            if let Some(panel) = &t.judges {
                let votes: Vec<Option<&BTreeMap<String, crate::scenario::Value>>> = panel
                    .judgments
                    .iter()
                    .map(|j| j.as_ref().ok().map(|j| &j.classification))
                    .collect();
                if votes.iter().all(Option::is_none) {
                    continue;
                }
                self.panel = self.panel.max(votes.len());
                let names: Vec<&String> = job
                    .fields
                    .keys()
                    .chain(votes.iter().flatten().flat_map(|v| v.keys()))
                    .collect::<indexmap::IndexSet<_>>()
                    .into_iter()
                    .collect();
                let mut split_here = false;
                for name in names {
                    let values: Vec<Option<String>> = votes
                        .iter()
                        .map(|v| v.and_then(|v| v.get(name)).map(category))
                        .collect();
                    let field = judges.entry(name.clone()).or_default();
                    for (p, (a, b)) in judge_pairs(values.len()).enumerate() {
                        if field.pairs.len() <= p {
                            field.pairs.resize_with(p + 1, Confusion::default);
                        }
                        if let (Some(Some(x)), Some(Some(y))) = (values.get(a), values.get(b)) {
                            field.pairs[p].add(x, y);
                        }
                    }
                    let truth = job.fields.get(name).map(category);
                    if let (Some(truth), Some(consensus)) =
                        (&truth, panel.consensus.as_ref().and_then(|c| c.get(name)))
                    {
                        field.truth.add(&category(consensus), truth);
                    }
                    let answered: Vec<&String> = values.iter().flatten().collect();
                    let split = answered.windows(2).any(|w| w[0] != w[1])
                        || (answered.len() < values.len() && !answered.is_empty());
                    if split {
                        split_here = true;
                        let key = (
                            crate::plan::derive_seed(format!(
                                "{}#{}#{name}",
                                job.dialogue_id, t.turn
                            )),
                            job.dialogue_id.clone(),
                            t.turn,
                            name.clone(),
                        );
                        let full = self.splits.len() >= MAX_SPLITS;
                        if !full || self.splits.last_key_value().is_some_and(|(k, _)| key < *k) {
                            self.splits.insert(
                                key,
                                Split {
                                    dialogue: job.dialogue_id.clone(),
                                    turn: t.turn,
                                    model: model.clone(),
                                    field: name.clone(),
                                    votes: values,
                                    truth,
                                },
                            );
                            if full {
                                self.splits.pop_last();
                            }
                        }
                    }
                }
                self.split_turns += u64::from(split_here);
            }
        }
        for key in reached {
            if let Some(r) = routes.get_mut(&key) {
                r.dialogues += 1;
                *r.dialogues_by_model.entry(model.clone()).or_default() += 1;
            }
        }
        self.explorer.add(record);
    }

    /// The page's sections (`run`, `leaderboard`, `charts`, `sop-graphs`, `judges`,
    /// `explorer`) for `summary` (the summary folded from the same records). Closes the
    /// explorer's open chunk of transcripts.
    pub fn sections(&mut self, summary: &Summary) -> Vec<Section> {
        vec![
            Section::new("run", "Run", self.run_html(summary)),
            Section::new("leaderboard", "Leaderboard", leaderboard_html(summary)),
            Section::new("charts", "Charts", self.charts_html(summary)),
            Section::new(
                "sop-graphs",
                "SOP graphs and routes",
                self.graphs_html(summary),
            ),
            Section::new("judges", "Judges", self.judges_html(summary)),
            Section::new("explorer", "Dialogue explorer", self.explorer.html()),
        ]
    }

    /// The whole page: [`SageReport::sections`] with their styles and scripts. Other suites'
    /// or a comparison's sections can be pushed onto it before [`Page::render`].
    pub fn page(&mut self, summary: &Summary) -> Page {
        Page {
            title: format!("SAGE run {}", self.info.run_id),
            sections: self.sections(summary),
            styles: styles(),
            scripts: scripts(),
        }
    }

    fn run_html(&self, summary: &Summary) -> String {
        let info = &self.info;
        let c = &info.config;
        let mut out = String::new();
        let _ = write!(
            out,
            "<table class=\"data run-facts\"><tr><th>Run id</th><td data-fact=\"run-id\">{}</td></tr><tr><th>Started</th><td data-fact=\"date\">{}</td></tr><tr><th>Seed</th><td data-fact=\"seed\">{}</td></tr><tr><th>Dialogues</th><td data-fact=\"dialogues\">{} of {} planned</td></tr><tr><th>Repeats</th><td>{}</td></tr><tr><th>Most turns</th><td>{}</td></tr><tr><th>Judged turns</th><td data-fact=\"judged-turns\">{}</td></tr><tr><th>SAGE-RS</th><td>{}</td></tr></table>",
            escape(&info.run_id),
            escape(&info.created_at),
            c.seed,
            summary.dialogues,
            info.jobs,
            c.repeats,
            c.max_turns,
            escape(&crate::scoring::leaderboard::judged_turns(summary)),
            escape(&info.sage_version)
        );
        out.push_str("<h3>Scenarios</h3><table class=\"data scenarios\"><tr><th>Scenario</th><th>SHA-256 of its YAML</th><th class=\"num\">Routes</th><th class=\"num\">Dialogues</th></tr>");
        for (id, hash) in &info.scenarios {
            let routes = self
                .sop(id)
                .map_or("—".to_string(), |s| s.routes().len().to_string());
            let dialogues: usize = summary.coverage.get(id).map_or(0, |c| c.values().sum());
            let _ = write!(
                out,
                "<tr data-scenario=\"{}\"><td>{}</td><td><code title=\"{}\">{}</code></td><td class=\"num\">{routes}</td><td class=\"num\">{dialogues}</td></tr>",
                escape(id),
                escape(id),
                escape(hash),
                escape(&hash.chars().take(16).collect::<String>())
            );
        }
        out.push_str("</table><h3>Models</h3><table class=\"data models\"><tr><th>Model</th><th>Role</th><th class=\"num\">Calls</th><th class=\"num\">Errors</th><th class=\"num\">Cached</th><th class=\"num\">Input tokens</th><th class=\"num\">Output tokens</th><th class=\"num\">Cost (USD)</th></tr>");
        let mut roles: IndexMap<&str, Vec<&str>> = IndexMap::new();
        for m in &c.service_models {
            roles.entry(m).or_default().push("under test");
        }
        roles.entry(&c.user_model).or_default().push("customer");
        for m in &c.judge_models {
            roles.entry(m).or_default().push("judge");
        }
        for model in summary.calls_by_model.keys() {
            roles.entry(model).or_default();
        }
        for (model, role) in &roles {
            let sim = if info.simulated_models.iter().any(|m| m == model) {
                " <span class=\"tag sim\">simulated</span>"
            } else {
                ""
            };
            let t = summary
                .calls_by_model
                .get(*model)
                .copied()
                .unwrap_or_default();
            let _ = write!(
                out,
                "<tr data-model=\"{}\"><td>{}{sim}</td><td>{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\" data-value=\"{}\">{:.4}</td></tr>",
                escape(model),
                escape(model),
                escape(&role.join(", ")),
                t.calls,
                t.errors,
                t.cached,
                t.input_tokens,
                t.output_tokens,
                raw(t.cost_usd),
                t.cost_usd
            );
        }
        out.push_str("</table><h3>Calls by role, per model under test</h3><p class=\"note\">The calls made in each model's dialogues: its own (service), the customer's and the judges'.</p><table class=\"data calls\"><tr><th>Model under test</th><th>Role</th><th class=\"num\">Calls</th><th class=\"num\">Errors</th><th class=\"num\">Input tokens</th><th class=\"num\">Of which cached</th><th class=\"num\">Output tokens</th><th class=\"num\">Cost (USD)</th><th class=\"num\">Tokens / scored turn</th><th class=\"num\">Cost / scored turn (USD)</th></tr>");
        for m in &summary.models {
            for (role, t) in &m.calls.by_role {
                let per_turn = m.calls.per_scored_turn.get(role);
                let _ = write!(
                    out,
                    "<tr data-model=\"{}\" data-role=\"{}\"><td>{}</td><td>{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\" data-value=\"{}\">{:.4}</td><td class=\"num\">{}</td><td class=\"num\">{}</td></tr>",
                    escape(&m.model),
                    escape(role),
                    escape(&m.model),
                    escape(role),
                    t.calls,
                    t.errors,
                    t.input_tokens,
                    t.cached_input_tokens,
                    t.output_tokens,
                    raw(t.cost_usd),
                    t.cost_usd,
                    per_turn.map_or("-".into(), |p| format!(
                        "{:.0}",
                        p.input_tokens + p.output_tokens
                    )),
                    per_turn.map_or("-".into(), |p| format!("{:.6}", p.cost_usd)),
                );
            }
        }
        out.push_str("</table><h3>Infrastructure errors</h3>");
        let total: u64 = self.infra_turns.values().sum();
        if total == 0 {
            out.push_str("<p class=\"good\" data-infra-errors=\"0\">None: every turn reached its models.</p>");
        } else {
            let _ = write!(
                out,
                "<p class=\"bad\" data-infra-errors=\"{total}\">{total} turns were not scored for infrastructure reasons.</p><table class=\"data infra\"><tr><th>Model under test</th><th class=\"num\">Turns</th><th class=\"num\">Dialogues ended by one</th></tr>"
            );
            for (model, n) in &self.infra_turns {
                let ended = summary
                    .models
                    .iter()
                    .find(|m| &m.model == model)
                    .and_then(|m| m.end_reasons.get("infra_error").copied())
                    .unwrap_or(0);
                let _ = write!(
                    out,
                    "<tr data-model=\"{}\"><td>{}</td><td class=\"num\">{n}</td><td class=\"num\">{ended}</td></tr>",
                    escape(model),
                    escape(model)
                );
            }
            out.push_str("</table><ul class=\"infra-examples\">");
            for e in &self.infra_examples {
                let _ = write!(
                    out,
                    "<li><a href=\"{}\">{}</a> ({}): <code>{}</code></li>",
                    escape(&dialogue_anchor(&e.dialogue)),
                    escape(&e.dialogue),
                    escape(&e.model),
                    escape(&e.error)
                );
            }
            out.push_str("</ul>");
        }
        out
    }

    fn sop(&self, id: &str) -> Option<&Arc<Sop>> {
        self.sops.iter().find(|s| s.scenario().id == id)
    }

    fn charts_html(&self, summary: &Summary) -> String {
        let models = &summary.models;
        let mean = |m: &Option<Metric>| m.map(|m| m.mean);
        let mut out = String::new();
        out.push_str("<h3>Execution gap</h3><p class=\"note\">Per model: classification accuracy (Acc_cls), path similarity (Sim_path) and action correctness (Acc_action), 0-100. Knowing the answer (classification) but not acting on it shows as the gap between the first and the last bar.</p>");
        let groups: Vec<BarGroup> = models
            .iter()
            .map(|m| BarGroup {
                model: m.model.clone(),
                values: vec![
                    mean(&m.all.acc_cls),
                    mean(&m.all.sim_path),
                    mean(&m.all.acc_action),
                ],
            })
            .collect();
        out.push_str(&charts::grouped_bars(
            "execution-gap",
            &["Acc_cls", "Sim_path", "Acc_action"],
            &groups,
            100.0,
            "",
        ));
        let by_oa: Vec<(&str, Option<f64>)> = models
            .iter()
            .map(|m| (m.model.as_str(), mean(&m.all.overall)))
            .collect();
        let focus = charts::focus(&by_oa);
        let focus_note = match &focus {
            Some(f) => format!(
                " <span data-chart-focus=\"{}\">{} models: the {} best and {} worst by OA in colour ({}), the others grey; click a model in the legend to colour or grey its line.</span>",
                f.len(),
                models.len(),
                charts::FOCUS_EACH,
                charts::FOCUS_EACH,
                escape(&f.join(", "))
            ),
            None => String::new(),
        };
        let _ = write!(
            out,
            "<h3>Turn depth</h3><p class=\"note\">Overall score (OA) at turns 1, 5, 10, 15 and each dialogue's final turn, one line per model.{focus_note}</p>"
        );
        let depths = ["t1", "t5", "t10", "t15", "final"];
        let lines: Vec<Line> = models
            .iter()
            .map(|m| Line {
                model: m.model.clone(),
                values: depths
                    .iter()
                    .map(|d| m.by_turn.get(*d).and_then(|g| mean(&g.overall)))
                    .collect(),
            })
            .collect();
        out.push_str(&charts::line_panels(
            "turn-depth",
            &["T1", "T5", "T10", "T15", "Final"],
            &[("OA", lines)],
            100.0,
            focus.as_deref(),
        ));
        let _ = write!(
            out,
            "<h3>Adversarial degradation</h3><p class=\"note\">OA, Logic and Chat at each adversarial level. Empathy resilience: Chat holding while Logic falls.{focus_note}</p>"
        );
        let levels = ["zero", "weak", "strong"];
        let panel = |get: fn(&GroupStats) -> Option<Metric>| -> Vec<Line> {
            models
                .iter()
                .map(|m| Line {
                    model: m.model.clone(),
                    values: levels
                        .iter()
                        .map(|l| {
                            m.by_adversarial
                                .get(*l)
                                .and_then(|g| get(g).map(|x| x.mean))
                        })
                        .collect(),
                })
                .collect()
        };
        out.push_str(&charts::line_panels(
            "adversarial",
            &levels,
            &[
                ("OA", panel(|g| g.overall)),
                ("Logic", panel(|g| g.logic)),
                ("Chat", panel(|g| g.chat)),
            ],
            100.0,
            focus.as_deref(),
        ));
        out.push_str("<h3>Format errors by kind</h3><p class=\"note\">Turns whose answer did not parse, per model and kind.</p>");
        let kinds: Vec<usize> = (0..FormatError::KINDS.len())
            .filter(|k| self.format_errors.values().any(|c| c[*k] > 0))
            .collect();
        let kind_names: Vec<&str> = kinds.iter().map(|k| FormatError::KINDS[*k]).collect();
        let groups: Vec<BarGroup> = models
            .iter()
            .map(|m| {
                let counts = self
                    .format_errors
                    .get(&m.model)
                    .copied()
                    .unwrap_or_default();
                BarGroup {
                    model: m.model.clone(),
                    values: kinds.iter().map(|k| Some(counts[*k] as f64)).collect(),
                }
            })
            .collect();
        let most = groups
            .iter()
            .flat_map(|g| g.values.iter().flatten())
            .cloned()
            .fold(0.0, f64::max);
        if kinds.is_empty() {
            out.push_str("<p data-chart-empty=\"format-errors\">No format errors in this run.</p>");
        }
        out.push_str(&charts::grouped_bars(
            "format-errors",
            &kind_names,
            &groups,
            nice_max(most),
            " turns",
        ));
        out.push_str("<h3>Chat sub-dimensions</h3><p class=\"note\">The judges' five chat dimensions, 0-100.</p>");
        let groups: Vec<BarGroup> = models
            .iter()
            .map(|m| {
                let d = &m.all.chat_dimensions;
                BarGroup {
                    model: m.model.clone(),
                    values: vec![
                        mean(&d.linguistic_quality),
                        mean(&d.anthropomorphism_emotion),
                        mean(&d.content_utility),
                        mean(&d.user_satisfaction),
                        mean(&d.instruction_compliance),
                    ],
                }
            })
            .collect();
        out.push_str(&charts::grouped_bars(
            "chat-dimensions",
            &[
                "Linguistic",
                "Anthropomorphism",
                "Utility",
                "Satisfaction",
                "Compliance",
            ],
            &groups,
            100.0,
            "",
        ));
        out
    }

    fn graphs_html(&self, summary: &Summary) -> String {
        let models: Vec<&String> = summary.models.iter().map(|m| &m.model).collect();
        let mut out = String::from(
            "<p class=\"note\">Each scenario's decision graph. A stage or action is coloured by the mean Logic of the turns whose reference route passes through it (red 0, yellow 50, green 100); an edge is as wide as the turns that took it (all models); dashed: never reached. Below each graph, every route with the dialogues that reached it (a scored turn whose reference is the route) and the mean Logic of those turns, then the mean Logic per route and model (the worst model of each route outlined). Each count and each model's cell links to those dialogues in the explorer, worst first.</p>",
        );
        let _ = write!(
            out,
            "<p class=\"graph-model\"><label>Colour the graphs and routes by <select data-graph-model><option value=\"\">all models</option>{}</select></label> <noscript><span class=\"muted\">(needs JavaScript; the per-model table below each graph reads without it)</span></noscript></p>",
            models
                .iter()
                .map(|m| format!("<option value=\"{}\">{}</option>", escape(m), escape(m)))
                .collect::<String>()
        );
        let scenarios: Vec<&String> = self
            .info
            .scenarios
            .iter()
            .map(|(id, _)| id)
            .chain(self.routes.keys())
            .collect::<indexmap::IndexSet<_>>()
            .into_iter()
            .collect();
        let empty = BTreeMap::new();
        for (i, id) in scenarios.iter().enumerate() {
            let _ = write!(out, "<h3 id=\"sop-{}\">{}</h3>", escape(id), escape(id));
            let used = self.routes.get(*id).unwrap_or(&empty);
            let targeted = summary.coverage.get(*id);
            let mut keys: Vec<String> = Vec::new();
            match self.sop(id) {
                Some(sop) => {
                    out.push_str(&graph::svg(sop, self.graphs.get(*id).unwrap_or(&GraphUse::default()), i));
                    keys.extend(sop.routes().iter().map(|r| route_key(&r.route)));
                }
                None => out.push_str("<p class=\"warn\">The scenario's YAML is not available (or changed since the run): its graph is not drawn; the routes below are those the run reached.</p>"),
            }
            for k in used
                .keys()
                .chain(targeted.into_iter().flat_map(|t| t.keys()))
            {
                if !keys.contains(k) {
                    keys.push(k.clone());
                }
            }
            let untested = keys
                .iter()
                .filter(|k| used.get(*k).is_none_or(|u| u.dialogues == 0))
                .count();
            let _ = write!(
                out,
                "<p>{} routes, {} reached, <span class=\"{}\">{untested} never tested</span>.</p>",
                keys.len(),
                keys.len() - untested,
                if untested > 0 { "bad" } else { "good" }
            );
            let _ = write!(
                out,
                "<table class=\"data routes\" data-scenario=\"{}\"><tr><th>Route</th><th class=\"num\">Targeted</th><th class=\"num\">Dialogues</th><th class=\"num\">Turns</th><th class=\"num\">Mean Logic</th><th>Weakest model</th></tr>",
                escape(id)
            );
            for k in &keys {
                let u = used.get(k).cloned().unwrap_or_default();
                out.push_str(&route_row(
                    id,
                    k,
                    &u,
                    targeted.and_then(|t| t.get(k)).copied().unwrap_or(0),
                ));
            }
            out.push_str("</table>");
            if !models.is_empty() && keys.iter().any(|k| used.contains_key(k)) {
                out.push_str(&route_models_table(id, &keys, used, &models));
            }
        }
        out
    }

    fn judges_html(&self, summary: &Summary) -> String {
        let mut out = String::from(
            "<p class=\"note\">Per scenario and field: the share of turns where the judges gave the same value, the share where their consensus equals the customer's true value (the job's), Cohen's kappa between each pair of judges (their mean: Light's kappa) and between the consensus and the truth.</p>",
        );
        let pct = |x: Option<f64>| x.map_or("—".to_string(), |x| format!("{}%", num(x)));
        let k = |x: Option<f64>| x.map_or("—".to_string(), |x| format!("{x:.3}"));
        let kv = |x: Option<f64>| x.map(raw).unwrap_or_default();
        let pairs = judge_pairs(self.panel).count();
        let pair_headers: String = judge_pairs(self.panel)
            .enumerate()
            .map(|(i, (a, b))| {
                let judges = if i == 0 { "judges " } else { "" };
                format!("<th class=\"num\">κ {judges}{}-{}</th>", a + 1, b + 1)
            })
            .collect();
        for (scenario, fields) in &self.judges {
            let agreement = summary.judge_agreement.get(scenario);
            let _ = write!(
                out,
                "<h3>{}</h3><table class=\"data judges\" data-scenario=\"{}\"><tr><th>Field</th><th class=\"num\">Unanimous</th><th class=\"num\">Consensus = truth</th>{pair_headers}<th class=\"num\">κ mean</th><th class=\"num\">κ consensus-truth</th></tr>",
                escape(scenario),
                escape(scenario)
            );
            for (name, f) in fields {
                let a = agreement.and_then(|a| a.fields.get(name));
                let _ = write!(
                    out,
                    "<tr data-field=\"{}\"><td>{}</td><td class=\"num\" data-value=\"{}\">{}</td><td class=\"num\" data-value=\"{}\">{}</td>",
                    escape(name),
                    escape(name),
                    kv(a.map(|a| a.unanimous)),
                    pct(a.map(|a| a.unanimous)),
                    kv(a.and_then(|a| a.matches_truth)),
                    pct(a.and_then(|a| a.matches_truth))
                );
                let none = Confusion::default();
                for p in (0..pairs).map(|i| f.pairs.get(i).unwrap_or(&none)) {
                    let _ = write!(
                        out,
                        "<td class=\"num\" data-value=\"{}\">{}</td>",
                        kv(p.kappa()),
                        k(p.kappa())
                    );
                }
                let _ = write!(
                    out,
                    "<td class=\"num\" data-metric=\"kappa\" data-value=\"{}\">{}</td><td class=\"num\" data-value=\"{}\">{}</td></tr>",
                    kv(f.kappa()),
                    k(f.kappa()),
                    kv(f.truth.kappa()),
                    k(f.truth.kappa())
                );
            }
            out.push_str("</table>");
        }
        let _ = write!(
            out,
            "<h3>Turns where the judges split</h3><p data-split-turns=\"{}\">{} turns had a field the judges did not agree on{}.</p>",
            self.split_turns,
            self.split_turns,
            if self.split_turns as usize > self.splits.len() {
                format!(
                    "; a sample of {} (turn, field) pairs is listed",
                    self.splits.len()
                )
            } else {
                String::new()
            }
        );
        let (splits, _) = self.splits();
        if !splits.is_empty() {
            out.push_str("<details><summary>The split turns, linked to their transcripts</summary><table class=\"data splits\"><tr><th>Dialogue</th><th class=\"num\">Turn</th><th>Model</th><th>Field</th>");
            for i in 1..=self.panel {
                let _ = write!(out, "<th>Judge {i}</th>");
            }
            out.push_str("<th>Truth</th></tr>");
            for s in splits {
                let _ = write!(
                    out,
                    "<tr data-split-dialogue=\"{}\"><td><a href=\"{}\">{}</a></td><td class=\"num\">{}</td><td>{}</td><td>{}</td>",
                    escape(&s.dialogue),
                    escape(&dialogue_anchor(&s.dialogue)),
                    escape(&s.dialogue),
                    s.turn,
                    escape(&s.model),
                    escape(&s.field)
                );
                for i in 0..self.panel {
                    let v = s.votes.get(i).cloned().flatten();
                    let class = if v != s.truth { " class=\"bad\"" } else { "" };
                    let _ = write!(
                        out,
                        "<td{class}>{}</td>",
                        escape(v.as_deref().unwrap_or("—"))
                    );
                }
                let _ = write!(
                    out,
                    "<td>{}</td></tr>",
                    escape(s.truth.as_deref().unwrap_or("—"))
                );
            }
            out.push_str("</table></details>");
        }
        out
    }
}

/// The explorer fragment listing the dialogues of `scenario` that reached route `key` (those of
/// `model` only when given), worst first: `#explore=scenario:S;reached:S%3A%20KEY;sort:worst`
/// and `;model:M` last (see [`explorer::explore_anchor`]).
pub fn route_anchor(scenario: &str, key: &str, model: Option<&str>) -> String {
    let label = explorer::reached_label(scenario, key);
    let mut filters = vec![
        ("scenario", scenario),
        ("reached", label.as_str()),
        ("sort", "worst"),
    ];
    if let Some(m) = model {
        filters.push(("model", m));
    }
    explorer::explore_anchor(&filters)
}

/// One row of a scenario's routes table: the route, the dialogues that targeted it, the
/// dialogues that reached it (linked to them in the explorer), their turns, the mean Logic of
/// those turns and the weakest model (linked to its dialogues there); per model the same
/// numbers in `data-*-by-model` JSON attributes for the graph's model view.
fn route_row(scenario: &str, key: &str, u: &RouteUse, targeted: usize) -> String {
    let logic = u.logic.get();
    let weakest = u
        .by_model
        .iter()
        .filter_map(|(m, x)| x.get().map(|v| (m, v)))
        .min_by(|a, b| a.1.total_cmp(&b.1));
    let class = if u.dialogues == 0 {
        " class=\"untested\""
    } else {
        ""
    };
    let all = route_anchor(scenario, key, None);
    let dialogues = if u.dialogues == 0 {
        "0".to_string()
    } else {
        format!(
            "<a class=\"explore\" href=\"{}\" data-explore=\"{}\" title=\"these dialogues in the explorer, worst first\">{}</a>",
            escape(&all),
            escape(&all),
            u.dialogues
        )
    };
    let logic_by_model = graph::by_model_json(u.by_model.iter().map(|(m, x)| (m, x.get())));
    let turns_by_model = graph::by_model_json(u.by_model.iter().map(|(m, x)| (m, Some(x.n()))));
    let dialogues_by_model = graph::by_model_json(
        u.dialogues_by_model
            .iter()
            .map(|(m, n)| (m, Some(*n as u64))),
    );
    format!(
        "<tr data-route=\"{}\" data-dialogues=\"{}\" data-logic=\"{}\"{class} data-turns=\"{}\" data-logic-by-model=\"{}\" data-dialogues-by-model=\"{}\" data-turns-by-model=\"{}\"><td><code>{}</code>{}</td><td class=\"num\">{targeted}</td><td class=\"num\" data-col=\"dialogues\">{dialogues}</td><td class=\"num\" data-col=\"turns\">{}</td><td class=\"num\" data-col=\"logic\"{}>{}</td><td>{}</td></tr>",
        escape(key),
        u.dialogues,
        logic.map(raw).unwrap_or_default(),
        u.logic.n(),
        escape(&logic_by_model),
        escape(&dialogues_by_model),
        escape(&turns_by_model),
        escape(key),
        if u.dialogues == 0 {
            " <span class=\"tag bad\">untested</span>"
        } else {
            ""
        },
        u.logic.n(),
        logic
            .map(|l| format!(" style=\"background:{}\"", graph::score_fill(l)))
            .unwrap_or_default(),
        logic.map(num).unwrap_or_else(|| "—".into()),
        weakest
            .map(|(m, v)| format!(
                "<a href=\"{}\" title=\"its dialogues on this route, worst first\">{}</a> ({})",
                escape(&route_anchor(scenario, key, Some(m))),
                escape(m),
                num(v)
            ))
            .unwrap_or_default()
    )
}

/// The mean Logic per route (rows) and model (columns) of a scenario, open: which branch model
/// X gets wrong, without JavaScript. Each value links to that model's dialogues on the route;
/// the worst model of a route (when two or more have a value) is outlined (`td.worst`).
fn route_models_table(
    scenario: &str,
    keys: &[String],
    used: &BTreeMap<String, RouteUse>,
    models: &[&String],
) -> String {
    let mut out = format!(
        "<details open class=\"route-models\"><summary>Mean Logic per route and model (outlined: the route's worst model; a value links to its dialogues there, worst first)</summary><div class=\"scroll-x\"><table class=\"data route-models\" data-scenario=\"{}\"><tr><th>Route</th>",
        escape(scenario)
    );
    for m in models {
        let _ = write!(
            out,
            "<th class=\"num\" data-model=\"{}\">{}</th>",
            escape(m),
            escape(m)
        );
    }
    out.push_str("</tr>");
    for k in keys {
        let Some(u) = used.get(k) else { continue };
        let values: Vec<Option<f64>> = models
            .iter()
            .map(|m| u.by_model.get(*m).and_then(Mean::get))
            .collect();
        let present: Vec<f64> = values.iter().flatten().copied().collect();
        let worst = (present.len() >= 2).then(|| present.iter().copied().fold(f64::MAX, f64::min));
        let _ = write!(
            out,
            "<tr data-route-key=\"{}\"><td><code>{}</code></td>",
            escape(k),
            escape(k)
        );
        for (m, v) in models.iter().zip(values) {
            match v {
                Some(v) => {
                    let class = if worst == Some(v) { " worst" } else { "" };
                    let _ = write!(
                        out,
                        "<td class=\"num{class}\" data-model=\"{}\" data-value=\"{}\" data-reached=\"{}\" style=\"background:{}\"><a href=\"{}\">{}</a></td>",
                        escape(m),
                        raw(v),
                        u.dialogues_by_model.get(*m).copied().unwrap_or(0),
                        graph::score_fill(v),
                        escape(&route_anchor(scenario, k, Some(m))),
                        num(v)
                    );
                }
                None => {
                    let _ = write!(
                        out,
                        "<td class=\"num\" data-model=\"{}\" data-value=\"\" data-reached=\"0\">—</td>",
                        escape(m)
                    );
                }
            }
        }
        out.push_str("</tr>");
    }
    out.push_str("</table></div></details>");
    out
}

/// A round axis maximum at or above `x` (1, 2, 5 times a power of ten).
fn nice_max(x: f64) -> f64 {
    if x <= 0.0 {
        return 1.0;
    }
    let p = 10f64.powf(x.log10().floor());
    for m in [1.0, 2.0, 5.0, 10.0] {
        if m * p >= x {
            return m * p;
        }
    }
    10.0 * p
}

/// The leaderboard's columns: (summary.json key under `all`, heading, is a percentage of
/// turns).
pub const LEADERBOARD: [(&str, &str); 9] = [
    ("overall", "OA"),
    ("logic", "Logic"),
    ("chat", "Chat"),
    ("acc_cls", "Acc_cls"),
    ("sim_path", "Sim_path"),
    ("acc_action", "Acc_action"),
    ("execution_gap", "Exec. gap"),
    ("format_error_rate", "Format err. %"),
    ("chat_length", "Chat length"),
];

fn metric(g: &GroupStats, key: &str) -> Option<Metric> {
    match key {
        "overall" => g.overall,
        "logic" => g.logic,
        "chat" => g.chat,
        "acc_cls" => g.acc_cls,
        "sim_path" => g.sim_path,
        "acc_action" => g.acc_action,
        "execution_gap" => g.execution_gap,
        "format_error_rate" => g.format_error_rate,
        "chat_length" => g.chat_length,
        _ => None,
    }
}

/// The k of the pass^k columns: every k some model reports (`models[].pass_k`), ascending;
/// none without repeats.
pub fn pass_ks(summary: &Summary) -> Vec<u32> {
    summary
        .models
        .iter()
        .flat_map(|m| m.pass_k.iter().map(|p| p.k))
        .collect::<BTreeSet<u32>>()
        .into_iter()
        .collect()
}

/// The Table-1 leaderboard: one row per model (in the summary's order), each metric of
/// `models[].all` with its interval; `data-value` holds the unrounded mean. With repeats,
/// columns pass^1 .. pass^k (`data-metric="pass^K"`, `data-value` = `models[].pass_k[].pass`).
pub fn leaderboard_html(summary: &Summary) -> String {
    let ks = pass_ks(summary);
    let mut out = String::from(
        "<p class=\"note\">Every scored turn of each model; ± half the 95% bootstrap interval (the interval on hover). Click a heading to sort.",
    );
    if let Some(k) = ks.last() {
        let _ = write!(
            out,
            " pass^k (k = 1 to {k}): the share of cases, %, whose dialogues reach the target action in all of k repeats drawn from the case's repeats (tau2-bench's estimator; pass^1 is the plain pass rate)."
        );
    }
    out.push_str("</p><table id=\"leaderboard-table\" class=\"data\"><thead><tr><th data-sort=\"model\">Model</th><th class=\"num\" data-sort=\"dialogues\">Dialogues</th>");
    for (key, title) in LEADERBOARD {
        let _ = write!(out, "<th class=\"num\" data-sort=\"{key}\">{title}</th>");
    }
    for k in &ks {
        let _ = write!(
            out,
            "<th class=\"num\" data-sort=\"pass^{k}\" title=\"cases passing all of {k} repeats, %\">pass^{k}</th>"
        );
    }
    out.push_str("</tr></thead><tbody>");
    for m in &summary.models {
        let mut sim = if m.simulated {
            " <span class=\"tag sim\">simulated</span>".to_string()
        } else {
            String::new()
        };
        if let Some(form) = m.structured_output {
            let _ = write!(
                sim,
                " <span class=\"tag structured\" title=\"asked with a JSON Schema of its answer (structured_output: {})\">structured</span>",
                form.as_str()
            );
        }
        let _ = write!(
            out,
            "<tr data-model=\"{}\"><td data-metric=\"model\" data-value=\"{}\">{}{sim}</td><td class=\"num\" data-metric=\"dialogues\" data-value=\"{}\">{}</td>",
            escape(&m.model),
            escape(&m.model),
            escape(&m.model),
            m.dialogues,
            m.dialogues
        );
        for (key, _) in LEADERBOARD {
            match metric(&m.all, key) {
                Some(x) => {
                    let _ = write!(
                        out,
                        "<td class=\"num\" data-metric=\"{key}\" data-value=\"{}\" title=\"95% interval {} to {}, {} turns\">{} <span class=\"ci\">±{}</span></td>",
                        raw(x.mean),
                        num(x.ci_low),
                        num(x.ci_high),
                        x.n,
                        num(x.mean),
                        num(x.half_width())
                    );
                }
                None => {
                    let _ = write!(
                        out,
                        "<td class=\"num\" data-metric=\"{key}\" data-value=\"\">—</td>"
                    );
                }
            }
        }
        for k in &ks {
            match m.pass_k.iter().find(|p| p.k == *k) {
                Some(p) => {
                    let _ = write!(
                        out,
                        "<td class=\"num\" data-metric=\"pass^{k}\" data-value=\"{}\" title=\"{} cases ran at least {k} times\">{}</td>",
                        raw(p.pass),
                        p.cases,
                        num(p.pass)
                    );
                }
                None => {
                    let _ = write!(
                        out,
                        "<td class=\"num\" data-metric=\"pass^{k}\" data-value=\"\">—</td>"
                    );
                }
            }
        }
        out.push_str("</tr>");
    }
    out.push_str("</tbody></table>");
    out
}

/// Style rules of the SAGE sections.
pub fn styles() -> Vec<String> {
    vec![
        charts::CSS.to_string(),
        graph::CSS.to_string(),
        explorer::CSS.to_string(),
        LEADERBOARD_CSS.to_string(),
    ]
}

/// Scripts of the SAGE sections: the leaderboard's sorting and the explorer.
pub fn scripts() -> Vec<String> {
    vec![
        SORT_SCRIPT.to_string(),
        charts::SCRIPT.to_string(),
        graph::SCRIPT.to_string(),
        explorer::SCRIPT.to_string(),
    ]
}

const LEADERBOARD_CSS: &str = r#"
#leaderboard-table th[data-sort]{cursor:pointer;user-select:none}
#leaderboard-table th[aria-sort=ascending]::after{content:" ▲"}
#leaderboard-table th[aria-sort=descending]::after{content:" ▼"}
.tag.sim{color:var(--warn)}
.tag.bad{color:var(--bad)}
table.routes tr.untested td{color:var(--bad)}
table.route-models td{font-size:12px;color:#1d2330}
"#;

/// Sorts `table.data` tables with `th[data-sort]` headings by the clicked column's
/// `data-value` (numbers numerically, missing values last).
pub const SORT_SCRIPT: &str = r#"(function(){
document.querySelectorAll("table th[data-sort]").forEach(function(th){
  th.addEventListener("click",function(){
    var table=th.closest("table"),body=table.tBodies[0],key=th.getAttribute("data-sort");
    var asc=th.getAttribute("aria-sort")==="descending";
    table.querySelectorAll("th[data-sort]").forEach(function(h){h.removeAttribute("aria-sort");});
    th.setAttribute("aria-sort",asc?"ascending":"descending");
    var rows=Array.prototype.slice.call(body.rows);
    function val(r){var c=r.querySelector('[data-metric="'+key+'"]');return c?c.getAttribute("data-value"):"";}
    rows.sort(function(a,b){
      var x=val(a),y=val(b);
      if(x===""&&y==="")return 0;if(x==="")return 1;if(y==="")return -1;
      var nx=Number(x),ny=Number(y),d=(!isNaN(nx)&&!isNaN(ny))?nx-ny:(x<y?-1:x>y?1:0);
      return asc?d:-d;
    });
    rows.forEach(function(r){body.appendChild(r);});
  });
});
})();"#;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::DialogueRecord;
    use serde_json::{Value as Json, json};

    fn route(path: &[&str], action: &str) -> Json {
        json!({"path": path, "action": action, "outputs": {}})
    }

    fn judge(a: &str) -> Json {
        json!({"Ok": {"classification": {"A": a}, "chat": {"linguistic_quality": 9,
            "anthropomorphism_emotion": 9, "content_utility": 9, "user_satisfaction": 9,
            "instruction_compliance": 9}}})
    }

    /// A scored turn referencing `reference` with Logic `logic`, judged `votes` on field A.
    fn turn(n: u32, logic: f64, reference: Json, votes: [&str; 3]) -> Json {
        json!({
            "turn": n, "user_message": "hi", "raw_output": null,
            "outcome": {"kind": "valid", "turn": {"classification": {"A": "x"}, "cot": "",
                "path": ["s1"], "action": "Done", "outputs": {}, "chat": "hello"}},
            "judges": {"judgments": votes.iter().map(|v| judge(v)).collect::<Vec<_>>(),
                "consensus": {"A": votes[0]}, "calls": []},
            "reference": {"Ok": reference},
            "scores": {"acc_cls": 1.0, "sim_path": 1.0, "acc_action": 1.0, "logic": logic,
                "chat": 100.0, "overall": 0.8 * logic + 20.0, "sim_path_prefix": 1.0},
            "infra_error": null, "calls": []
        })
    }

    fn record(id: &str, model: &str, turns: Vec<Json>) -> DialogueRecord {
        let value = json!({
            "job": {"run_id": "r", "dialogue_id": id, "scenario": "sc",
                "target": route(&["s1"], "Done"), "fields": {"A": "x"}, "variables": {},
                "intent": "i", "persona": "p", "adversarial": "zero", "service_model": model,
                "user_model": "u", "judge_models": ["j1", "j2", "j3"], "max_turns": 4,
                "seed": 1, "repeat": 0},
            "turns": turns, "end": "resolved", "simulated": true,
            "usage": {"input_tokens": 0, "output_tokens": 0}, "cost_usd": 0.0
        });
        match serde_json::from_value(value) {
            Ok(r) => r,
            Err(e) => panic!("a record: {e}"),
        }
    }

    fn info() -> RunInfo {
        RunInfo {
            run_id: "r".into(),
            created_at: "2025-01-01T00:00:00Z".into(),
            sage_version: "0".into(),
            config: RunConfig::default(),
            scenarios: vec![("sc".into(), "ab".repeat(32))],
            simulated_models: vec!["m1".into()],
            jobs: 2,
        }
    }

    fn folded() -> SageReport {
        let r1 = route(&["s1", "s2"], "Done");
        let r2 = route(&["s1"], "Stop");
        let mut report = SageReport::new(info(), Vec::new());
        let mut infra = turn(3, 0.0, r2.clone(), ["x", "x", "x"]);
        infra["outcome"] = json!({"kind": "infra_error", "error": "timeout"});
        infra["infra_error"] = json!("timeout");
        let mut format = turn(4, 0.0, r2.clone(), ["x", "x", "x"]);
        format["outcome"] = json!({"kind": "format_error", "error": {"type": "missing_key", "key": "cot"}, "chat": "?"});
        report.add(&record(
            "sc/0001/m1/r0",
            "m1",
            vec![
                turn(1, 80.0, r1.clone(), ["x", "x", "y"]),
                turn(2, 60.0, r1.clone(), ["x", "x", "x"]),
                turn(3, 40.0, r2.clone(), ["y", "x", "x"]),
            ],
        ));
        report.add(&record(
            "sc/0002/m2/r0",
            "m2",
            vec![turn(1, 100.0, r1, ["x", "y", "y"]), infra, format],
        ));
        report
    }

    #[test]
    fn routes_count_dialogues_and_mean_logic_of_their_turns() {
        let report = folded();
        let routes = &report.routes()["sc"];
        let r1 = &routes["s1>s2 -> Done"];
        assert_eq!(r1.dialogues, 2);
        assert_eq!(r1.logic.n(), 3);
        assert_eq!(r1.logic.get(), Some(80.0));
        assert_eq!(r1.by_model["m1"].get(), Some(70.0));
        assert_eq!(r1.by_model["m2"].get(), Some(100.0));
        // The infrastructure-error turn is not counted; the format error scored 0 is.
        let r2 = &routes["s1 -> Stop"];
        assert_eq!((r2.dialogues, r2.logic.n()), (2, 2));
        assert_eq!(r2.logic.get(), Some(20.0));
        let graph = &report.graphs["sc"];
        assert_eq!(graph.nodes["s1"].n(), 5);
        assert_eq!(graph.nodes["s1"].get(), Some(56.0));
        assert_eq!(graph.edges[&("start".into(), "s1".into())], 5);
        assert_eq!(graph.edges[&("s1".into(), "s2".into())], 3);
        assert_eq!(graph.edges[&("s1".into(), "Stop".into())], 2);
        assert_eq!(report.format_errors()["m2"][3], 1, "missing_key");
        assert_eq!(report.infra_turns["m2"], 1);
        assert_eq!(report.infra_examples.len(), 1);
    }

    #[test]
    fn routes_per_model_count_dialogues_and_mark_the_worst_model() {
        let report = folded();
        let routes = &report.routes()["sc"];
        let r2 = &routes["s1 -> Stop"];
        assert_eq!(r2.dialogues_by_model["m1"], 1);
        assert_eq!(r2.dialogues_by_model["m2"], 1);
        assert_eq!(r2.by_model["m2"].get(), Some(0.0));
        assert_eq!(
            report.graphs["sc"].nodes_by_model["s1"]["m1"].get(),
            Some(60.0)
        );
        assert_eq!(
            report.graphs["sc"].nodes_by_model["s1"]["m2"].get(),
            Some(50.0)
        );
        let (m1, m2, m3) = ("m1".to_string(), "m2".to_string(), "m3".to_string());
        let keys = ["s1>s2 -> Done".to_string(), "s1 -> Stop".to_string()];
        let table = route_models_table("sc", &keys, routes, &[&m1, &m2, &m3]);
        assert!(table.starts_with("<details open class=\"route-models\">"));
        // s1 -> Stop: m1 40, m2 0 (the worst, outlined), m3 no turn there.
        assert!(table.contains("<tr data-route-key=\"s1 -&gt; Stop\"><td><code>s1 -&gt; Stop</code></td><td class=\"num\" data-model=\"m1\" data-value=\"40\" data-reached=\"1\" style=\"background:hsl(48,70%,82%)\"><a href=\"#explore=scenario:sc;reached:sc%3A%20s1%20-%3E%20Stop;sort:worst;model:m1\">40</a></td><td class=\"num worst\" data-model=\"m2\" data-value=\"0\" data-reached=\"1\""), "{table}");
        assert!(table.contains(
            "<td class=\"num\" data-model=\"m3\" data-value=\"\" data-reached=\"0\">—</td></tr>"
        ));
        assert_eq!(table.matches("class=\"num worst\"").count(), 2);
        // A single model with a value is no one's worst.
        assert!(!route_models_table("sc", &keys, routes, &[&m1]).contains("worst\""));
    }

    #[test]
    fn a_structured_agent_is_tagged_in_the_leaderboard() {
        let mut summary = crate::scoring::summarize(
            &[record(
                "sc/0001/m1/r0",
                "m1",
                vec![turn(1, 80.0, route(&["s1"], "Done"), ["x", "x", "x"])],
            )],
            &Default::default(),
        );
        assert!(!leaderboard_html(&summary).contains("tag structured"));
        summary.models[0].structured_output =
            Some(crate::plan::model::StructuredOutput::JsonSchema);
        let html = leaderboard_html(&summary);
        assert!(
            html.contains(">m1 <span class=\"tag sim\">simulated</span> <span class=\"tag structured\" title=\"asked with a JSON Schema of its answer (structured_output: json_schema)\">structured</span></td>"),
            "{html}"
        );
    }

    #[test]
    fn pass_k_columns_show_summary_values() {
        let mut summary = crate::scoring::summarize(&[], &Default::default());
        assert!(
            !leaderboard_html(&summary).contains("pass^"),
            "no repeats, no column"
        );
        let mut model = crate::scoring::summarize(
            &[record(
                "sc/0001/m1/r0",
                "m1",
                vec![turn(1, 80.0, route(&["s1"], "Done"), ["x", "x", "x"])],
            )],
            &Default::default(),
        )
        .models
        .remove(0);
        model.pass_k = vec![
            crate::scoring::summary::PassK {
                k: 1,
                pass: 83.51648351648352,
                cases: 2,
            },
            crate::scoring::summary::PassK {
                k: 2,
                pass: 50.0,
                cases: 2,
            },
        ];
        summary.models.push(model);
        assert_eq!(pass_ks(&summary), [1, 2]);
        let html = leaderboard_html(&summary);
        assert!(html.contains("<th class=\"num\" data-sort=\"pass^2\""));
        assert!(html.contains("<td class=\"num\" data-metric=\"pass^1\" data-value=\"83.51648351648352\" title=\"2 cases ran at least 1 times\">83.52</td><td class=\"num\" data-metric=\"pass^2\" data-value=\"50\""), "{html}");
    }

    #[test]
    fn explore_fragments_encode_each_value() {
        assert_eq!(
            route_anchor("air line", "s1>s2 -> Done [A=1; B]", Some("m:1")),
            "#explore=scenario:air%20line;reached:air%20line%3A%20s1%3Es2%20-%3E%20Done%20%5BA%3D1%3B%20B%5D;sort:worst;model:m%3A1"
        );
    }

    #[test]
    fn judges_kappa_and_splits() {
        let report = folded();
        let a = &report.judges()["sc"]["A"];
        // Judges 1 and 2 over six turns: (x,x) x4, (x,y) x1, (y,x) x1: p_o = 4/6, both
        // marginals 5/6 x and 1/6 y: p_e = 26/36, kappa = (24/36 - 26/36) / (10/36) = -0.2.
        assert_eq!(a.pairs[0].n(), 6);
        let k = a.pairs[0].kappa().unwrap();
        assert!((k + 0.2).abs() < 1e-12, "{k}");
        // Consensus (judge 1's vote here) against the truth x: five x, one y.
        assert_eq!(a.truth.n(), 6);
        assert!((a.truth.agreement().unwrap() - 5.0 / 6.0).abs() < 1e-12);
        let (splits, turns) = report.splits();
        assert_eq!(turns, 3);
        assert_eq!(splits.len(), 3);
        assert_eq!(splits[0].dialogue, "sc/0001/m1/r0");
        assert_eq!(
            splits[0].votes,
            vec![Some("x".into()), Some("x".into()), Some("y".into())]
        );
    }

    #[test]
    fn sections_follow_the_dom_contract() {
        let mut report = folded();
        let summary = crate::scoring::summarize(&[], &Default::default());
        let sections = report.sections(&summary);
        let ids: Vec<&str> = sections.iter().map(|s| s.id.as_str()).collect();
        assert_eq!(
            ids,
            [
                "run",
                "leaderboard",
                "charts",
                "sop-graphs",
                "judges",
                "explorer"
            ]
        );
        let routes = &sections[3].html;
        assert!(routes.contains(
            "<tr data-route=\"s1&gt;s2 -&gt; Done\" data-dialogues=\"2\" data-logic=\"80\" data-turns=\"3\" data-logic-by-model=\"{&quot;m1&quot;:70.0,&quot;m2&quot;:100.0}\" data-dialogues-by-model=\"{&quot;m1&quot;:1,&quot;m2&quot;:1}\" data-turns-by-model=\"{&quot;m1&quot;:2,&quot;m2&quot;:1}\">"
        ), "{routes}");
        // The dialogues that reached the route link to the explorer, filtered to them, worst
        // first; the weakest model to its own.
        assert!(routes.contains(
            "<td class=\"num\" data-col=\"dialogues\"><a class=\"explore\" href=\"#explore=scenario:sc;reached:sc%3A%20s1%3Es2%20-%3E%20Done;sort:worst\" data-explore=\"#explore=scenario:sc;reached:sc%3A%20s1%3Es2%20-%3E%20Done;sort:worst\""
        ), "{routes}");
        assert!(routes.contains(
            "<a href=\"#explore=scenario:sc;reached:sc%3A%20s1%3Es2%20-%3E%20Done;sort:worst;model:m1\" title=\"its dialogues on this route, worst first\">m1</a> (70)"
        ), "{routes}");
        assert!(
            routes.contains(
                "<select data-graph-model><option value=\"\">all models</option></select>"
            )
        );
        let explorer = &sections[5].html;
        assert!(explorer.contains("<div id=\"explorer\">"));
        for f in [
            "model",
            "scenario",
            "route",
            "adversarial",
            "persona",
            "end",
        ] {
            assert!(
                explorer.contains(&format!("<select data-filter=\"{f}\">")),
                "{f}"
            );
        }
        assert!(sections[1].html.contains("id=\"leaderboard-table\""));
        let html = report.page(&summary).render();
        assert!(!html.contains("http://") && !html.contains("https://"));
    }

    #[test]
    fn transcripts_are_gzip_chunks_of_json_lines() {
        use base64::Engine;
        use std::io::Read;
        let mut report = folded();
        let html = report.explorer.html();
        let start = html.find("data-chunk=\"0\">").unwrap() + "data-chunk=\"0\">".len();
        let end = start + html[start..].find('<').unwrap();
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(&html[start..end])
            .unwrap();
        let mut text = String::new();
        flate2::read::GzDecoder::new(&bytes[..])
            .read_to_string(&mut text)
            .unwrap();
        let lines: Vec<Json> = text
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(lines.len(), 2);
        assert_eq!(lines[1]["i"], "sc/0002/m2/r0");
        assert_eq!(lines[1]["t"][1]["k"], 2);
        assert_eq!(lines[1]["t"][2]["k"], 1);
        // Judge 1 agreed with the consensus (left out), judges 2 and 3 did not.
        assert!(lines[1]["t"][0]["j"][0].get("c").is_none());
        assert_eq!(lines[1]["t"][0]["j"][1]["c"], json!(["y"]));
        // The row: id, model 1, scenario 0, route 0, level 0, persona 0, end 0, mean overall
        // of the scored turns (100 + 20) / 2, flags format and infra, 3 turns, chunk 0, line 1.
        // Last, the routes it reached with the mean Logic of its turns there: route 0 (s1>s2
        // -> Done) at 100, route 1 (s1 -> Stop) at 0 (the format error; the infrastructure
        // error is not scored).
        let row = "[\"sc/0002/m2/r0\",1,0,0,0,0,0,60,3,3,0,1,[[0,100],[1,0]]]";
        assert!(html.contains(row), "{row}");
        let row = "[\"sc/0001/m1/r0\",0,0,0,0,0,0,68,0,3,0,0,[[0,70],[1,40]]]";
        assert!(html.contains(row), "{row}");
        assert!(html.contains("\"reached\":[\"sc: s1>s2 -> Done\",\"sc: s1 -> Stop\"]"));
        assert!(html.contains("<option value=\"1\">sc: s1 -&gt; Stop</option>"));
    }

    #[test]
    fn anchors_encode_like_encode_uri_component() {
        assert_eq!(
            dialogue_anchor("telecom/0007/sim strong/r0"),
            "#dialogue=telecom%2F0007%2Fsim%20strong%2Fr0"
        );
        assert_eq!(
            crate::report::encode_uri_component("a-_.!~*'()é"),
            "a-_.!~*'()%C3%A9"
        );
    }
}
