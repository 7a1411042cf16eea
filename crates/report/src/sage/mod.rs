//! The SAGE suite's report, folded one record at a time ([`SageReport::add`]) next to the
//! summary, and rendered with it ([`SageReport::sections`], [`SageReport::page`]): the run
//! header, the leaderboard, the charts, the SOP graphs with their routes, the judges and the
//! dialogue explorer. Its memory grows with its output only: per route, stage and field a few
//! counters, a bounded list of split turns, and the explorer's rows and compressed transcripts.

use super::charts::{self, Line, num, raw};
use super::explorer::{self, Embedded, Explorer, Limits, Records, SageExplorer, dialogue_anchor};
use super::graph::{self, GraphUse};
use super::page::Section;
use super::stats::{Confusion, Mean, category};
use indexmap::IndexMap;
use sage_core::plan::RunConfig;
use sage_core::protocol::{DialogueRecord, FormatError, ServiceOutcome};
use sage_core::scoring::summary::{GroupStats, route_key};
use sage_core::scoring::{Metric, Summary};
use sage_core::sop::Sop;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

mod chart_section;
pub mod fork;
mod judges;
mod leaderboard;
mod routes;
mod run;

use leaderboard::LEADERBOARD_CSS;
pub use leaderboard::{
    Better, Column, LEADERBOARD, SORT_SCRIPT, best_of, leaderboard_html, pass_ks, scenario_matrix,
};
pub use routes::route_anchor;

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
    /// The case (`report::explorer::case_id`) of the dialogue with the lowest mean Logic on the
    /// route, with that mean (ties: the smaller case id): the case to read across models.
    pub worst_case: Option<(f64, String)>,
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
    /// Per model called, what its calls met of the provider's limits.
    limits: BTreeMap<String, crate::limits::LimitsMet>,
    infra_examples: Vec<InfraExample>,
    explorer: Explorer<SageExplorer>,
    /// The judges against people, when the run was calibrated (calibration.json).
    calibration: Option<sage_core::scoring::labels::Calibration>,
    /// A fork's branches (none in a run's report).
    fork: fork::ForkSection,
}

impl SageReport {
    /// Per model called, what its calls met of the provider's limits.
    pub fn limits_met(&self) -> &BTreeMap<String, crate::limits::LimitsMet> {
        &self.limits
    }

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
            limits: BTreeMap::new(),
            infra_examples: Vec::new(),
            explorer: Explorer::new(SageExplorer::default(), Limits::default()),
            calibration: None,
            fork: fork::ForkSection::default(),
        }
    }

    /// The same report whose explorer embeds at most `limits`.
    pub fn with_limits(mut self, limits: Limits) -> SageReport {
        self.explorer = Explorer::new(SageExplorer::default(), limits);
        self
    }

    /// Shows the judges against people (`sage judges calibrate`'s calibration.json), or how
    /// to get there when `None`.
    pub fn set_calibration(
        &mut self,
        calibration: Option<sage_core::scoring::labels::Calibration>,
    ) {
        self.calibration = calibration;
    }

    /// The fork section's fold (a fork's report: `sage fork`).
    pub fn fork_mut(&mut self) -> &mut fork::ForkSection {
        &mut self.fork
    }

    /// The explorer's fold.
    pub fn explorer(&self) -> &Explorer<SageExplorer> {
        &self.explorer
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

    /// Folds a record in (the caller skips repeated dialogue ids), whose line starts at byte
    /// `at` of dialogues.jsonl (the explorer reads the records it embeds back from there when
    /// the page is written).
    pub fn add(&mut self, record: &DialogueRecord, at: u64) {
        for call in record.calls() {
            self.limits.entry(call.model.clone()).or_default().add(call);
        }
        let job = &record.job;
        let model = &job.service_model;
        let routes = self.routes.entry(job.scenario.clone()).or_default();
        let graph = self.graphs.entry(job.scenario.clone()).or_default();
        let judges = self.judges.entry(job.scenario.clone()).or_default();
        // Per reached route, the Logic of this dialogue's turns on it.
        let mut reached: BTreeMap<String, Mean> = BTreeMap::new();
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
                reached.entry(key).or_default().add(scores.logic);
                graph.add(model, &route.path, &route.action, scores.logic);
            }
            // Judges: every turn the panel classified.
            if let Some(panel) = &t.judges {
                let votes: Vec<Option<&BTreeMap<String, sage_core::scenario::Value>>> = panel
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
                            sage_core::plan::derive_seed(format!(
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
        for (key, logic) in reached {
            if let Some(r) = routes.get_mut(&key) {
                r.dialogues += 1;
                *r.dialogues_by_model.entry(model.clone()).or_default() += 1;
                if let Some(logic) = logic.get() {
                    let case = explorer::case_id(&job.dialogue_id, model);
                    let worse = r
                        .worst_case
                        .as_ref()
                        .is_none_or(|(l, c)| logic.total_cmp(l).then_with(|| case.cmp(c)).is_lt());
                    if worse {
                        r.worst_case = Some((logic, case));
                    }
                }
            }
        }
        self.fork.add(record);
        self.explorer.add(record, at);
    }

    /// The page's sections before the explorer, the leaderboard first (`leaderboard`, `run`,
    /// `charts`, `sop-graphs`, `judges`; a fork's report opens on `fork`) for `summary` (the
    /// summary folded from the same records).
    pub fn sections(&mut self, summary: &Summary) -> Vec<Section> {
        // A fork's report opens on the fork: its replies have a Logic and, without
        // `--judge`, no Chat, so its leaderboard says less than the fork section.
        let mut sections: Vec<Section> = self
            .fork
            .any()
            .then(|| self.fork.section())
            .into_iter()
            .collect();
        sections.push(Section::new(
            "leaderboard",
            "Leaderboard",
            self.leaderboard_section(summary),
        ));
        sections.extend([
            Section::new("run", "Run", self.run_html(summary)),
            Section::new("charts", "Charts", self.charts_html(summary)),
            Section::new(
                "sop-graphs",
                "SOP graphs and routes",
                self.graphs_html(summary),
            ),
            Section::new("judges", "Judges", self.judges_html(summary)),
        ]);
        sections
    }

    /// Writes the whole page to `out`, each section as it is rendered, the dialogue explorer
    /// (`explorer`) last: its transcripts are read back from `records` by the places given to
    /// [`SageReport::add`] and compressed into `spool` (a scratch file) first. `show` is the
    /// `sage show` command (without the id) printed for the dialogues the page leaves out.
    /// What the explorer embeds.
    pub fn write_page<W: std::io::Write, X: std::io::Read + std::io::Write + std::io::Seek>(
        &mut self,
        summary: &Summary,
        out: W,
        records: &mut dyn Records<DialogueRecord>,
        spool: &mut X,
        show: &str,
    ) -> std::io::Result<Embedded> {
        let ranked = sage_core::scoring::leaderboard::ranked(summary)
            .into_iter()
            .map(|m| m.model.clone())
            .collect();
        self.explorer.suite_mut().rank_models(ranked);
        let parts = explorer::PageParts {
            title: format!("SAGE run {}", self.info.run_id),
            styles: styles(),
            scripts: scripts(),
            sections: self.sections(summary),
            explorer: ("explorer", "Dialogue explorer"),
        };
        self.explorer.write_page(parts, out, records, spool, show)
    }
}

/// Style rules of the SAGE sections.
pub fn styles() -> Vec<String> {
    vec![
        charts::CSS.to_string(),
        graph::css(),
        explorer::CSS.to_string(),
        explorer::sage::CSS.to_string(),
        LEADERBOARD_CSS.to_string(),
        fork::CSS.to_string(),
        crate::side_by_side::CSS.to_string(),
    ]
}

/// Scripts of the SAGE sections: the leaderboard's sorting and the explorer.
pub fn scripts() -> Vec<&'static str> {
    vec![
        SORT_SCRIPT,
        charts::SCRIPT,
        graph::SCRIPT,
        explorer::SCRIPT,
        explorer::sage::SCRIPT,
    ]
}

#[cfg(test)]
mod tests;
