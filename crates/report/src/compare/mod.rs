//! Two runs compared: `sage report A --compare B` (B the baseline). Per model present in both,
//! and per model x scenario, adversarial level and target route, the difference in mean Overall
//! (and Logic, Chat) between the runs, with a bootstrap interval and a two-sided bootstrap
//! p-value. Each model is tested one of two ways ([`Test`]): *paired* over the dialogues both
//! runs hold (the same dialogue id and the same case) when they are at least half of the
//! model's dialogues in each run, a paired cluster bootstrap; otherwise *unpaired* over all of
//! the model's dialogues in both runs, a bootstrap of each run's cases stratified by scenario
//! and target route ([`sage_core::scoring::unpaired`]). The groups with enough cases
//! ([`MIN_PAIRED`]) form one family whose p-values are adjusted for the false discovery rate
//! (Benjamini-Hochberg q-values), and a group is a regression or an improvement only when its
//! q is below [`ALPHA`]; smaller groups are exploratory (no verdict). Then the dialogues that
//! went from passing (reaching the target action) to failing, and back, each side saying why.
//!
//! When the current run is a rescore or a rejudge of the baseline ([`Relation`]), the
//! transcripts are the same and only the grading changed: every dialogue pairs by id, the
//! verdicts say "scored lower/higher" instead of "regression/improvement", and a rescore's
//! changed dialogues are a group of their own and listed ([`ChangedRow`]).
//!
//! Pure and streaming: the baseline's records are folded first ([`CompareFold::add_baseline`]),
//! keeping about a hundred bytes per dialogue (its case's fingerprint, its score sums, whether
//! it passed), then the current run's ([`CompareFold::add_current`]), each paired with its
//! baseline at once; [`CompareFold::finish`] draws the intervals one model at a time, a bounded
//! number of groups at once ([`BOOTSTRAP_BYTES`]). Each case weighs the same in a resample on
//! both sides (its Poisson weights come from its id), which is what makes the interval paired;
//! the repeats of a case weigh together (the case is the bootstrap's cluster).
//!
//! The renderings are in the submodules: [`text`] (the terminal), [`html`] (the page: forest
//! plot, tables, flips side by side, [`flips`]), [`json`] (`--format json`).

pub mod cases;
pub mod flips;
pub mod html;
pub mod json;
mod outcome;
pub mod text;
mod unpaired;

pub use super::encode_uri_component;
pub use flips::FlipTranscripts;

use indexmap::IndexSet;
use outcome::Outcome;
use sage_core::plan::derive_seed;
use sage_core::protocol::{DialogueEnd, DialogueRecord};
use sage_core::scenario::Adversarial;
use sage_core::scoring::rescore::ChangedDialogue;
use sage_core::scoring::stats::{
    Bootstrap, Cluster, Difference, RatioFold, benjamini_hochberg, poisson_weights,
};
use sage_core::scoring::summary::{case_key, counted_scores, reached_target, route_key};
use sage_core::scoring::unpaired::CaseSums;
use std::collections::{BTreeMap, HashMap};

/// Cases a group needs to be tested: paired cases (the bootstrap's clusters; paired dialogues
/// when a run has no repeats) for the paired test, cases in each run for the unpaired one.
/// Smaller groups are exploratory: shown with their interval, never called a regression or an
/// improvement, and left out of the false-discovery-rate family (docs/report.md, "Compare",
/// says why 30).
pub const MIN_PAIRED: usize = 30;

/// The false discovery rate the verdicts control (Benjamini-Hochberg q below it).
pub const ALPHA: f64 = 0.05;

/// Fewest bootstrap resamples a comparison draws.
pub const MIN_RESAMPLES: usize = 2_000;

/// Most bootstrap resamples a comparison draws (the time it takes grows with them).
pub const MAX_RESAMPLES: usize = 20_000;

/// Bytes of bootstrap sums held at once while the intervals are drawn: the groups of a model are
/// folded a batch at a time so that their sums (8 per resample) stay under this.
pub const BOOTSTRAP_BYTES: usize = 32 << 20;

/// The resamples for a family of `tested` groups: enough that the smallest p-value the test can
/// give, `2 / (B + 1)`, passes Benjamini-Hochberg's first threshold `ALPHA / tested` (so one
/// group far from 0 can be found among all of them): `2 · tested / ALPHA` rounded up to a
/// thousand, within [`MIN_RESAMPLES`] and [`MAX_RESAMPLES`] (above 500 tested groups a lone
/// difference can no longer pass; several can).
pub fn resamples_for(tested: usize) -> usize {
    let needed = (2.0 * tested as f64 / ALPHA).ceil() as usize;
    needed
        .div_ceil(1000)
        .saturating_mul(1000)
        .clamp(MIN_RESAMPLES, MAX_RESAMPLES)
}

/// Why two runs cannot be compared.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CompareError {
    /// No scenario in common.
    #[error(
        "runs `{current}` and `{baseline}` share no scenario (`{current}`: {current_scenarios}; `{baseline}`: {baseline_scenarios}); compare two runs of the same scenarios"
    )]
    NoSharedScenario {
        /// The current run's id.
        current: String,
        /// The baseline's id.
        baseline: String,
        /// The current run's scenarios, listed.
        current_scenarios: String,
        /// The baseline's scenarios, listed.
        baseline_scenarios: String,
    },
    /// No dialogue in common.
    #[error(
        "runs `{current}` and `{baseline}` share no dialogue: none of the {current_dialogues} dialogues of `{current}` is among the {baseline_dialogues} of `{baseline}` with the same id and case ({mismatched} ids are in both with a different case: another seed?); compare runs of the same scenarios, cases and models"
    )]
    NoSharedDialogue {
        /// The current run's id.
        current: String,
        /// The baseline's id.
        baseline: String,
        /// Dialogues of the current run.
        current_dialogues: usize,
        /// Dialogues of the baseline.
        baseline_dialogues: usize,
        /// Ids in both runs whose cases differ.
        mismatched: usize,
    },
}

/// One run as the comparison names it: its id, its seed and its scenarios with their content
/// hashes (from its manifest).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunInfo {
    /// The run id.
    pub id: String,
    /// The run seed (it draws the cases: two seeds, two sets of cases).
    pub seed: u64,
    /// Scenario ids with the SHA-256 of their YAML.
    pub scenarios: Vec<(String, String)>,
    /// Who played the customer (`None`: not recorded, a run from before).
    pub simulator: Option<sage_core::protocol::simulator::Simulator>,
}

/// A group of a model's dialogues.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum Group {
    /// All of them.
    All,
    /// Those of one scenario.
    Scenario(String),
    /// Those of one adversarial level.
    Adversarial(Adversarial),
    /// Those of one target route of one scenario (the route as [`route_key`] writes it).
    Route {
        /// The scenario.
        scenario: String,
        /// The route.
        route: String,
    },
    /// In a rescore comparison, the dialogues whose references the rescore changed (its
    /// rescore.json's `changed`).
    Changed,
}

impl Group {
    /// The group as `data-group` holds it: `all`, `scenario:ID`, `adversarial:LEVEL` or
    /// `route:SCENARIO:ROUTE`.
    pub fn key(&self) -> String {
        match self {
            Group::All => "all".into(),
            Group::Scenario(s) => format!("scenario:{s}"),
            Group::Adversarial(level) => format!("adversarial:{level}"),
            Group::Route { scenario, route } => format!("route:{scenario}:{route}"),
            Group::Changed => "changed".into(),
        }
    }

    /// The group for people: `all`, `scenario ID`, `adversarial LEVEL`, `route SCENARIO: ROUTE`.
    pub fn label(&self) -> String {
        match self {
            Group::All => "all".into(),
            Group::Scenario(s) => format!("scenario {s}"),
            Group::Adversarial(level) => format!("adversarial {level}"),
            Group::Route { scenario, route } => format!("route {scenario}: {route}"),
            Group::Changed => "regraded dialogues".into(),
        }
    }

    /// `all`, `scenario`, `adversarial` or `route`.
    pub fn kind(&self) -> &'static str {
        match self {
            Group::All => "all",
            Group::Scenario(_) => "scenario",
            Group::Adversarial(_) => "adversarial",
            Group::Route { .. } => "route",
            Group::Changed => "changed",
        }
    }
}

/// How a model's two runs were compared.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Test {
    /// Over the dialogues both runs hold (the same id and case): a paired cluster bootstrap.
    Paired,
    /// Over all the model's dialogues in both runs: a bootstrap of each run's cases,
    /// stratified by scenario and target route, resampled independently.
    Unpaired,
}

impl Test {
    /// `paired` or `unpaired` (`test` in the JSON, `data-test` in the HTML).
    pub fn name(self) -> &'static str {
        match self {
            Test::Paired => "paired",
            Test::Unpaired => "unpaired",
        }
    }
}

/// How the two runs are related.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Relation {
    /// Two runs (the usual case): a difference is the models'.
    Runs,
    /// The current run is the baseline's dialogues graded again (`sage rescore`, maybe
    /// against a corrected scenario): the same transcripts, other references.
    Rescore,
    /// One run is the other's dialogues judged again by another panel (`sage rejudge`): the
    /// same transcripts, another panel.
    Rejudge,
}

impl Relation {
    /// `runs`, `rescore` or `rejudge` (`relation` in the JSON).
    pub fn name(self) -> &'static str {
        match self {
            Relation::Runs => "runs",
            Relation::Rescore => "rescore",
            Relation::Rejudge => "rejudge",
        }
    }
}

/// The dialogues and cases a row compared in each run (for a paired row, the paired ones: the
/// same in both).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Sides {
    /// Dialogues of the current run.
    pub current_dialogues: usize,
    /// Dialogues of the baseline.
    pub baseline_dialogues: usize,
    /// Cases of the current run (a case's repeats count once).
    pub current_cases: usize,
    /// Cases of the baseline.
    pub baseline_cases: usize,
}

/// What the comparison says of a group.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Verdict {
    /// A tested group whose Overall difference is below 0: q < [`ALPHA`] and its interval
    /// entirely below 0.
    Regression,
    /// A tested group whose Overall difference is above 0 (q < [`ALPHA`], interval above 0).
    Improvement,
    /// A tested group with no difference the comparison can tell from noise.
    Unchanged,
    /// A group of fewer than [`MIN_PAIRED`] cases: shown, not tested.
    Exploratory,
}

impl Verdict {
    /// `regression`, `improvement`, `unchanged` or `exploratory` (the row's class in the HTML,
    /// `verdict` in the JSON).
    pub fn name(self) -> &'static str {
        match self {
            Verdict::Regression => "regression",
            Verdict::Improvement => "improvement",
            Verdict::Unchanged => "unchanged",
            Verdict::Exploratory => "exploratory",
        }
    }
}

/// One metric in both runs and their difference.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Change {
    /// The current run's mean, 0-100: over the paired dialogues (paired test), or
    /// post-stratified over all of them (unpaired test: `Σ w_s m_s`, the strata weighed by
    /// their share of both runs' counted turns).
    pub current: f64,
    /// The baseline's mean, likewise.
    pub baseline: f64,
    /// Current minus baseline, with its bootstrap interval.
    pub difference: Difference,
}

/// One row of the comparison: a group of one model's dialogues.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    /// The model under test.
    pub model: String,
    /// The group.
    pub group: Group,
    /// How it was tested (the model's test: all its groups are tested alike).
    pub test: Test,
    /// Dialogues compared: the paired ones (paired test), or both runs' together (unpaired).
    pub dialogues: usize,
    /// The cases the test's size is counted in: paired cases (the bootstrap's clusters: a
    /// case's repeats count once), or the smaller run's cases (unpaired).
    pub cases: usize,
    /// Dialogues and cases in each run.
    pub sides: Sides,
    /// Regression, improvement, unchanged or exploratory (decided on Overall).
    pub verdict: Verdict,
    /// Overall (mean over every scored turn, as in the leaderboard).
    pub overall: Change,
    /// Logic.
    pub logic: Option<Change>,
    /// Chat.
    pub chat: Option<Change>,
    /// The two-sided bootstrap p-value of the Overall difference (unadjusted).
    pub p: f64,
    /// Its Benjamini-Hochberg q-value in the family of tested groups; `None` for an
    /// exploratory group (not in the family).
    pub q: Option<f64>,
}

impl Row {
    /// The noise floor of the group: half the width of its ΔOverall interval, about the
    /// smallest |Δ| this pair of runs would call significant at 95% in it (before the false
    /// discovery rate correction).
    pub fn noise_floor(&self) -> f64 {
        let d = &self.overall.difference;
        (d.ci_high - d.ci_low) / 2.0
    }

    /// Whether the group is in the tested family (enough cases).
    pub fn tested(&self) -> bool {
        self.q.is_some()
    }
}

/// Which way a dialogue flipped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum FlipKind {
    /// It reached the target action in the baseline and not in the current run.
    PassToFail,
    /// The other way.
    FailToPass,
}

impl FlipKind {
    /// `pass-to-fail` or `fail-to-pass` (`data-flip` in the HTML).
    pub fn name(self) -> &'static str {
        match self {
            FlipKind::PassToFail => "pass-to-fail",
            FlipKind::FailToPass => "fail-to-pass",
        }
    }
}

/// A shared dialogue that passed in one run and failed in the other.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Flip {
    /// Its id (the same in both runs).
    pub dialogue_id: String,
    /// The model under test.
    pub model: String,
    /// The scenario.
    pub scenario: String,
    /// Which way.
    pub kind: FlipKind,
    /// How it ended in the current run.
    pub current_end: DialogueEnd,
    /// How it ended in the baseline.
    pub baseline_end: DialogueEnd,
    /// Why it passed or failed in the current run, in words: "reached the target action
    /// Refund at turn 4 (ended max_turns)", "never took the target action Refund; last action
    /// Reject at turn 8 (ended max_turns)", "infrastructure error at turn 3 (ended
    /// infra_error)".
    pub current_why: String,
    /// Why it passed or failed in the baseline, likewise.
    pub baseline_why: String,
    /// Where the current run's record is in its dialogues.jsonl (the byte its line starts at),
    /// when the caller said ([`CompareFold::add_current_at`]): to read it again for the page.
    pub current_at: Option<u64>,
    /// Where the baseline's record is, likewise.
    pub baseline_at: Option<u64>,
}

/// How the comparison tested its groups.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Method {
    /// The bootstrap (resamples as drawn: [`resamples_for`] the tested groups).
    pub bootstrap: Bootstrap,
    /// The false discovery rate controlled ([`ALPHA`]).
    pub alpha: f64,
    /// Cases a group needs to be tested ([`MIN_PAIRED`]): paired cases, or cases in each run.
    pub min_paired: usize,
    /// Groups tested (the Benjamini-Hochberg family).
    pub tested: usize,
}

impl Method {
    /// The smallest p-value the test can give: `2 / (B + 1)`.
    pub fn smallest_p(&self) -> f64 {
        2.0 / (self.bootstrap.resamples as f64 + 1.0)
    }
}

/// The comparison of two runs.
#[derive(Debug, Clone, PartialEq)]
pub struct Comparison {
    /// The current run's id.
    pub current: String,
    /// The baseline's id.
    pub baseline: String,
    /// The current run's seed.
    pub current_seed: u64,
    /// The baseline's seed.
    pub baseline_seed: u64,
    /// The current run's customer simulator (`None`: not recorded).
    pub current_simulator: Option<sage_core::protocol::simulator::Simulator>,
    /// The baseline's.
    pub baseline_simulator: Option<sage_core::protocol::simulator::Simulator>,
    /// Dialogues of the current run (first records of each id and later ones alike).
    pub current_dialogues: usize,
    /// Dialogues of the baseline.
    pub baseline_dialogues: usize,
    /// How the groups were tested.
    pub method: Method,
    /// Dialogues in both runs (same id, same case).
    pub shared: usize,
    /// Dialogues of the current run not in the baseline.
    pub only_current: usize,
    /// Dialogues of the baseline not in the current run.
    pub only_baseline: usize,
    /// Ids in both runs whose cases differ (left out).
    pub mismatched: usize,
    /// What else to know (scenarios in one run only, scenarios whose text changed).
    pub notes: Vec<String>,
    /// Every group: the tested ones first, regressions (worst first), improvements (best
    /// first), then the unchanged; then the exploratory; the last two by model and group.
    pub rows: Vec<Row>,
    /// Pass to fail first, then fail to pass, each by dialogue id.
    pub flips: Vec<Flip>,
    /// How the runs are related (two runs, a rescore, a rejudge).
    pub relation: Relation,
    /// In a rescore comparison, the dialogues it graded differently, by dialogue id.
    pub changed: Vec<ChangedRow>,
    /// Strata (scenario x target route) of the unpaired models held by one run only, left out
    /// of their estimates; and their dialogues.
    pub left_out: (usize, usize),
}

/// A dialogue a rescore graded differently, in both gradings.
#[derive(Debug, Clone, PartialEq)]
pub struct ChangedRow {
    /// Its id, the turns whose reference route changed and whether its target did (as
    /// rescore.json lists it).
    pub regraded: ChangedDialogue,
    /// The model under test.
    pub model: String,
    /// Its mean Overall in the baseline (`None` without a scored turn).
    pub baseline_overall: Option<f64>,
    /// Its mean Overall regraded.
    pub current_overall: Option<f64>,
}

/// What is kept of a baseline dialogue until its current counterpart comes.
#[derive(Debug, Clone)]
struct Baseline {
    case: u64,
    scores: Cluster<3, 1>,
    pass: bool,
    /// Its mean Overall (for a rescore's changed dialogues).
    overall: Option<f64>,
    outcome: Outcome,
    at: Option<u64>,
}

/// A shared case of one model: its groups (as indexes) and both runs' score sums over its
/// paired dialogues (one per repeat).
#[derive(Debug, Clone)]
struct Pair {
    /// The case's key (the dialogue id without its repeat): the bootstrap's cluster.
    case: String,
    model: u32,
    scenario: u32,
    level: u8,
    route: u32,
    dialogues: usize,
    scores: Cluster<6, 2>,
    /// Whether a rescore changed its references (a rescore comparison's `changed` group).
    changed: bool,
}

impl Pair {
    /// The groups the case is in.
    fn keys(&self) -> impl Iterator<Item = GroupKey> {
        group_keys(self.scenario, self.level, self.route).chain(self.changed.then_some(CHANGED))
    }

    /// Adds another paired dialogue of the same case (a repeat).
    fn absorb(&mut self, other: &Pair) {
        let (a, b) = (&mut self.scores, &other.scores);
        for m in 0..6 {
            a.point[m] += b.point[m];
            a.boot[m] += b.boot[m];
        }
        for d in 0..2 {
            a.count[d] += b.count[d];
        }
        self.dialogues += other.dialogues;
    }
}

/// A group as its model's fold orders it: kind (all, scenario, level, route, changed), then
/// indexes.
type GroupKey = (u8, u32, u32);

/// The `changed` group's key.
const CHANGED: GroupKey = (4, 0, 0);

/// The groups of a case of scenario, level and route indexes: all, its scenario, its level, its
/// route.
fn group_keys(scenario: u32, level: u8, route: u32) -> impl Iterator<Item = GroupKey> {
    [
        (0, 0, 0),
        (1, scenario, 0),
        (2, u32::from(level), 0),
        (3, scenario, route),
    ]
    .into_iter()
}

/// The adversarial levels, in their order.
const LEVELS: [Adversarial; 3] = [Adversarial::Zero, Adversarial::Weak, Adversarial::Strong];

/// Two runs' records folded into a [`Comparison`]: every baseline record first, then every
/// current one.
#[derive(Debug, Clone)]
pub struct CompareFold {
    current: RunInfo,
    baseline: RunInfo,
    bootstrap: Bootstrap,
    notes: Vec<String>,
    waiting: HashMap<String, Baseline>,
    baseline_dialogues: usize,
    current_dialogues: usize,
    mismatched: usize,
    models: IndexSet<String>,
    scenarios: IndexSet<String>,
    routes: IndexSet<String>,
    actions: IndexSet<String>,
    pairs: Vec<Pair>,
    entries: Vec<unpaired::Entry>,
    flips: Vec<Flip>,
    relation: Relation,
    regraded: HashMap<String, ChangedDialogue>,
    changed: Vec<ChangedRow>,
    /// The runs' customer simulators differ, and no verdict is drawn.
    simulator_changed: bool,
}

impl CompareFold {
    /// Draws verdicts even though the runs' customer simulators differ
    /// (`--allow-simulator-change`): the note stays, saying it was allowed.
    pub fn allow_simulator_change(mut self) -> CompareFold {
        if self.simulator_changed {
            self.simulator_changed = false;
            if let Some(note) = self.notes.first_mut() {
                *note = note.replace(
                    "every group is exploratory (no regression or improvement) unless --allow-simulator-change",
                    "verdicts drawn all the same (--allow-simulator-change)",
                );
            }
        }
        self
    }

    /// An empty comparison of `current` against `baseline`, drawing intervals as `bootstrap`
    /// says (its seed and confidence; at least its resamples, more when many groups are tested:
    /// [`resamples_for`]); refused when the runs share no scenario.
    pub fn new(
        current: RunInfo,
        baseline: RunInfo,
        bootstrap: Bootstrap,
    ) -> Result<CompareFold, CompareError> {
        let hash_of = |run: &RunInfo, id: &str| {
            run.scenarios
                .iter()
                .find(|(s, _)| s == id)
                .map(|(_, h)| h.clone())
        };
        let mut notes = Vec::new();
        let mut shared = 0;
        for (id, hash) in &current.scenarios {
            match hash_of(&baseline, id) {
                Some(h) if h == *hash => shared += 1,
                Some(_) => {
                    shared += 1;
                    notes.push(format!(
                        "scenario `{id}` differs between the runs (another YAML text): its dialogues are compared all the same"
                    ));
                }
                None => notes.push(format!(
                    "scenario `{id}` is only in `{}`: left out",
                    current.id
                )),
            }
        }
        for (id, _) in &baseline.scenarios {
            if hash_of(&current, id).is_none() {
                notes.push(format!(
                    "scenario `{id}` is only in `{}`: left out",
                    baseline.id
                ));
            }
        }
        // Another customer simulator moves every score: said first, and no verdict is drawn
        // unless it is allowed (`allow_simulator_change`).
        let simulator_change = match (&current.simulator, &baseline.simulator) {
            (Some(a), Some(b)) => a.differences(b),
            _ => Vec::new(),
        };
        if !simulator_change.is_empty() {
            notes.insert(
                0,
                format!(
                    "the runs' customer simulators differ ({}): a difference may be the simulator's, not the models'; every group is exploratory (no regression or improvement) unless --allow-simulator-change",
                    simulator_change.join("; ")
                ),
            );
        }
        for run in [&current, &baseline] {
            if run.simulator.is_none() {
                notes.push(format!(
                    "run `{}` does not record its customer simulator (an older version): a change of simulator cannot be ruled out",
                    run.id
                ));
            }
        }
        if shared == 0 {
            let list = |run: &RunInfo| {
                let ids: Vec<&str> = run.scenarios.iter().map(|(s, _)| s.as_str()).collect();
                if ids.is_empty() {
                    "none".to_string()
                } else {
                    ids.join(", ")
                }
            };
            return Err(CompareError::NoSharedScenario {
                current_scenarios: list(&current),
                baseline_scenarios: list(&baseline),
                current: current.id,
                baseline: baseline.id,
            });
        }
        Ok(CompareFold {
            current,
            baseline,
            bootstrap,
            notes,
            waiting: HashMap::new(),
            baseline_dialogues: 0,
            current_dialogues: 0,
            mismatched: 0,
            models: IndexSet::new(),
            scenarios: IndexSet::new(),
            routes: IndexSet::new(),
            actions: IndexSet::new(),
            pairs: Vec::new(),
            entries: Vec::new(),
            flips: Vec::new(),
            relation: Relation::Runs,
            regraded: HashMap::new(),
            changed: Vec::new(),
            simulator_changed: !simulator_change.is_empty(),
        })
    }

    /// Makes this a rescore comparison: the current run is the baseline's dialogues graded
    /// again, `changed` those whose references changed (its rescore.json's). Every dialogue
    /// pairs by id (a changed target changes the case's fingerprint, not its transcript), the
    /// changed dialogues are a group of their own and listed. Before any record is folded.
    pub fn rescore(mut self, changed: Vec<ChangedDialogue>) -> CompareFold {
        self.relation = Relation::Rescore;
        self.regraded = changed
            .into_iter()
            .map(|c| (c.dialogue_id.clone(), c))
            .collect();
        self
    }

    /// Makes this a rejudge comparison: one run is the other's dialogues judged again by
    /// another panel, so a difference is the panel's.
    pub fn rejudge(mut self) -> CompareFold {
        self.relation = Relation::Rejudge;
        self
    }

    /// Folds a baseline record in (a dialogue id met twice: the first record counts).
    pub fn add_baseline(&mut self, record: &DialogueRecord) {
        self.add_baseline_record(record, None);
    }

    /// [`CompareFold::add_baseline`] of the record whose line starts at byte `at` of the
    /// baseline's dialogues.jsonl (kept for the flips, to show their transcripts).
    pub fn add_baseline_at(&mut self, record: &DialogueRecord, at: u64) {
        self.add_baseline_record(record, Some(at));
    }

    fn add_baseline_record(&mut self, record: &DialogueRecord, at: Option<u64>) {
        // Runs are compared under their first customer simulator, as they are ranked.
        if record.job.user_model_index != 0 {
            return;
        }
        self.baseline_dialogues += 1;
        let id = &record.job.dialogue_id;
        if self.waiting.contains_key(id) {
            return;
        }
        let (scores, case_sums) = sums(record);
        self.push_entry(record, false, case_sums);
        let outcome = Outcome::of(record, &mut self.actions);
        self.waiting.insert(
            id.clone(),
            Baseline {
                case: case_fingerprint(record),
                scores,
                pass: reached_target(record),
                overall: mean_overall(&case_sums),
                outcome,
                at,
            },
        );
    }

    /// Keeps a dialogue for the unpaired test: its model, case, scenario, level, route and
    /// score sums.
    fn push_entry(&mut self, record: &DialogueRecord, current: bool, sums: CaseSums<3>) {
        let job = &record.job;
        let level = LEVELS
            .iter()
            .position(|l| *l == job.adversarial)
            .unwrap_or(0) as u8;
        self.entries.push(unpaired::Entry {
            current,
            model: index(&mut self.models, &job.service_model),
            case: derive_seed(case_key(&job.dialogue_id)),
            scenario: index(&mut self.scenarios, &job.scenario),
            route: index(&mut self.routes, &route_key(&job.target)),
            level,
            dialogues: 1,
            sums,
        });
    }

    /// Folds a current record in, paired with its baseline (after every baseline record).
    pub fn add_current(&mut self, record: &DialogueRecord) {
        self.add_current_record(record, None);
    }

    /// [`CompareFold::add_current`] of the record whose line starts at byte `at` of the current
    /// run's dialogues.jsonl.
    pub fn add_current_at(&mut self, record: &DialogueRecord, at: u64) {
        self.add_current_record(record, Some(at));
    }

    fn add_current_record(&mut self, record: &DialogueRecord, at: Option<u64>) {
        if record.job.user_model_index != 0 {
            return;
        }
        self.current_dialogues += 1;
        let job = &record.job;
        let (current, case_sums) = sums(record);
        self.push_entry(record, true, case_sums);
        let Some(base) = self.waiting.remove(&job.dialogue_id) else {
            return;
        };
        // A rescore pairs by id: its transcripts are the baseline's, whatever its target.
        if self.relation != Relation::Rescore && base.case != case_fingerprint(record) {
            self.mismatched += 1;
            return;
        }
        let regraded = self.regraded.get(&job.dialogue_id);
        if let Some(c) = regraded {
            self.changed.push(ChangedRow {
                regraded: c.clone(),
                model: job.service_model.clone(),
                baseline_overall: base.overall,
                current_overall: mean_overall(&case_sums),
            });
        }
        let mut scores = Cluster::<6, 2>::new();
        scores.point[..3].copy_from_slice(&current.point);
        scores.point[3..].copy_from_slice(&base.scores.point);
        scores.boot[..3].copy_from_slice(&current.boot);
        scores.boot[3..].copy_from_slice(&base.scores.boot);
        scores.count = [current.count[0], base.scores.count[0]];
        let pass = reached_target(record);
        if pass != base.pass {
            let outcome = Outcome::of(record, &mut self.actions);
            self.flips.push(Flip {
                dialogue_id: job.dialogue_id.clone(),
                model: job.service_model.clone(),
                scenario: job.scenario.clone(),
                kind: if base.pass {
                    FlipKind::PassToFail
                } else {
                    FlipKind::FailToPass
                },
                current_end: record.end,
                baseline_end: base.outcome.end,
                current_why: outcome.why(&self.actions),
                baseline_why: base.outcome.why(&self.actions),
                current_at: at,
                baseline_at: base.at,
            });
        }
        // The indexes the entry just pushed holds.
        let entry = self.entries.last().expect("pushed above");
        self.pairs.push(Pair {
            case: case_key(&job.dialogue_id).to_string(),
            model: entry.model,
            scenario: entry.scenario,
            level: entry.level,
            route: entry.route,
            dialogues: 1,
            scores,
            changed: regraded.is_some(),
        });
    }

    /// The comparison; refused when the runs share no model's dialogues (no model with a
    /// dialogue of a shared scenario in each run).
    pub fn finish(mut self) -> Result<Comparison, CompareError> {
        let shared = self.pairs.len();
        // Per model: its dialogues in each run and its paired ones.
        let models = self.models.len();
        let mut held = vec![[0usize; 2]; models];
        for e in &self.entries {
            held[e.model as usize][usize::from(e.current)] += 1;
        }
        let mut paired = vec![0usize; models];
        for p in &self.pairs {
            paired[p.model as usize] += 1;
        }
        let in_both = |m: usize| held[m][0] > 0 && held[m][1] > 0;
        if !(0..models).any(in_both) {
            return Err(CompareError::NoSharedDialogue {
                current: self.current.id,
                baseline: self.baseline.id,
                current_dialogues: self.current_dialogues,
                baseline_dialogues: self.baseline_dialogues,
                mismatched: self.mismatched,
            });
        }
        // The test of each model: paired when its paired dialogues are at least half of its
        // dialogues in each run (a rescore's or a rejudge's always are), else unpaired.
        let tests: Vec<Option<Test>> = (0..models)
            .map(|m| {
                in_both(m).then(|| {
                    if paired[m] > 0 && 2 * paired[m] >= held[m][0] && 2 * paired[m] >= held[m][1] {
                        Test::Paired
                    } else {
                        Test::Unpaired
                    }
                })
            })
            .collect();
        let is = |m: u32, test: Test| tests[m as usize] == Some(test);
        // One entry per case: the repeats of a case are one cluster.
        let mut pairs = std::mem::take(&mut self.pairs);
        pairs.retain(|p| is(p.model, Test::Paired));
        pairs.sort_by(|a, b| (a.model, &a.case).cmp(&(b.model, &b.case)));
        pairs.dedup_by(|later, first| {
            let same = later.model == first.model && later.case == first.case;
            if same {
                first.absorb(later);
            }
            same
        });
        let mut entries = std::mem::take(&mut self.entries);
        entries.retain(|e| is(e.model, Test::Unpaired));
        let entries = unpaired::cases(entries);
        // Every group's size, to know the family before drawing.
        let mut sizes: BTreeMap<(u32, GroupKey), Sides> = BTreeMap::new();
        for p in &pairs {
            for key in p.keys() {
                let size = sizes.entry((p.model, key)).or_default();
                size.current_cases += 1;
                size.baseline_cases += 1;
                size.current_dialogues += p.dialogues;
                size.baseline_dialogues += p.dialogues;
            }
        }
        for e in &entries {
            for key in group_keys(e.scenario, e.level, e.route) {
                let size = sizes.entry((e.model, key)).or_default();
                if e.current {
                    size.current_cases += 1;
                    size.current_dialogues += e.dialogues;
                } else {
                    size.baseline_cases += 1;
                    size.baseline_dialogues += e.dialogues;
                }
            }
        }
        let tested = sizes
            .values()
            .filter(|s| s.current_cases.min(s.baseline_cases) >= MIN_PAIRED)
            .count();
        let bootstrap = Bootstrap {
            resamples: self.bootstrap.resamples.max(resamples_for(tested)),
            ..self.bootstrap
        };
        let groups_of = |model: u32| -> Vec<(GroupKey, Sides)> {
            sizes
                .range((model, (0, 0, 0))..=(model, (u8::MAX, u32::MAX, u32::MAX)))
                .map(|(&(_, key), &size)| (key, size))
                .collect()
        };
        let mut rows = Vec::new();
        for chunk in pairs.chunk_by(|a, b| a.model == b.model) {
            rows.extend(self.model_rows(chunk, &groups_of(chunk[0].model), &bootstrap));
        }
        let mut left_out = (0, 0);
        let names = unpaired::Names::new(&self.scenarios, &self.routes);
        for chunk in entries.chunk_by(|a, b| a.model == b.model) {
            let model = &self.models[chunk[0].model as usize];
            let sizes: HashMap<GroupKey, Sides> = groups_of(chunk[0].model).into_iter().collect();
            let (model_rows, out) = unpaired::model_rows(model, chunk, &names, &bootstrap);
            left_out.0 += out.0;
            left_out.1 += out.1;
            rows.extend(model_rows.into_iter().filter_map(|(key, change)| {
                let sides = *sizes.get(&key)?;
                Some(self.row(model, key, Test::Unpaired, sides, change))
            }));
        }
        // The family: every tested group, the per-model rows included.
        let family: Vec<usize> = (0..rows.len())
            .filter(|&i| rows[i].cases >= MIN_PAIRED)
            .collect();
        let p: Vec<f64> = family.iter().map(|&i| rows[i].p).collect();
        for (&i, q) in family.iter().zip(benjamini_hochberg(&p)) {
            let row = &mut rows[i];
            let d = row.overall.difference;
            row.q = Some(q);
            row.verdict = if self.simulator_changed {
                // Another simulator: shown with its interval and q, never called a change.
                Verdict::Exploratory
            } else if q >= ALPHA {
                Verdict::Unchanged
            } else if d.ci_high < 0.0 {
                Verdict::Regression
            } else if d.ci_low > 0.0 {
                Verdict::Improvement
            } else {
                Verdict::Unchanged
            };
        }
        rows.sort_by(|a, b| {
            let delta = |r: &Row| r.overall.difference.delta;
            a.verdict
                .cmp(&b.verdict)
                .then_with(|| match a.verdict {
                    Verdict::Regression => delta(a).total_cmp(&delta(b)),
                    Verdict::Improvement => delta(b).total_cmp(&delta(a)),
                    _ => std::cmp::Ordering::Equal,
                })
                .then_with(|| (&a.model, &a.group).cmp(&(&b.model, &b.group)))
        });
        let mut flips = std::mem::take(&mut self.flips);
        flips.sort_by(|a, b| (a.kind, &a.dialogue_id).cmp(&(b.kind, &b.dialogue_id)));
        let mut changed = std::mem::take(&mut self.changed);
        changed.sort_by(|a, b| a.regraded.dialogue_id.cmp(&b.regraded.dialogue_id));
        Ok(Comparison {
            current_seed: self.current.seed,
            baseline_seed: self.baseline.seed,
            current_simulator: self.current.simulator,
            baseline_simulator: self.baseline.simulator,
            current: self.current.id,
            baseline: self.baseline.id,
            current_dialogues: self.current_dialogues,
            baseline_dialogues: self.baseline_dialogues,
            method: Method {
                bootstrap,
                alpha: ALPHA,
                min_paired: MIN_PAIRED,
                tested,
            },
            shared,
            only_current: self.current_dialogues - shared - self.mismatched,
            only_baseline: self.waiting.len(),
            mismatched: self.mismatched,
            notes: self.notes,
            rows,
            flips,
            relation: self.relation,
            changed,
            left_out,
        })
    }

    /// A row of `model`'s group `key`, its verdict still to decide.
    fn row(&self, model: &str, key: GroupKey, test: Test, sides: Sides, change: Changes) -> Row {
        let (kind, a, b) = key;
        let scenario = || self.scenarios[a as usize].clone();
        let group = match kind {
            0 => Group::All,
            1 => Group::Scenario(scenario()),
            2 => Group::Adversarial(LEVELS[a as usize]),
            3 => Group::Route {
                scenario: scenario(),
                route: self.routes[b as usize].clone(),
            },
            _ => Group::Changed,
        };
        let (dialogues, cases) = match test {
            Test::Paired => (sides.current_dialogues, sides.current_cases),
            Test::Unpaired => (
                sides.current_dialogues + sides.baseline_dialogues,
                sides.current_cases.min(sides.baseline_cases),
            ),
        };
        Row {
            model: model.to_string(),
            group,
            test,
            dialogues,
            cases,
            sides,
            verdict: Verdict::Exploratory,
            overall: change.overall,
            logic: change.logic,
            chat: change.chat,
            p: change.p,
            q: None,
        }
    }

    /// The rows of one model's paired cases (`pairs`), for its `groups` (key, sizes),
    /// verdicts still to decide. The groups' bootstrap sums are held a batch at a time, within
    /// [`BOOTSTRAP_BYTES`]; a case's weights are drawn once per batch it is in.
    fn model_rows(
        &self,
        pairs: &[Pair],
        groups: &[(GroupKey, Sides)],
        bootstrap: &Bootstrap,
    ) -> Vec<Row> {
        let bytes_per_group = bootstrap.resamples.max(1) * 8 * std::mem::size_of::<f64>();
        let batch = (BOOTSTRAP_BYTES / bytes_per_group).max(1);
        let model = &self.models[pairs[0].model as usize];
        let means_only = Bootstrap {
            resamples: 0,
            ..*bootstrap
        };
        let mut rows = Vec::new();
        for batch in groups.chunks(batch) {
            let mut folds: BTreeMap<GroupKey, RatioFold<6, 2>> = batch
                .iter()
                .map(|(key, _)| (*key, RatioFold::new([0, 0, 0, 1, 1, 1])))
                .collect();
            for p in pairs {
                let mut weights = None;
                for key in p.keys() {
                    if let Some(fold) = folds.get_mut(&key) {
                        let w = weights.get_or_insert_with(|| {
                            poisson_weights(bootstrap.seed, &p.case, bootstrap.resamples)
                        });
                        fold.add(&p.scores, w);
                    }
                }
            }
            for &(key, sides) in batch {
                let Some(fold) = folds.get(&key) else {
                    continue;
                };
                let means = fold.metrics(&means_only);
                let change = |m: usize| {
                    Some(Change {
                        current: means[m]?.mean,
                        baseline: means[m + 3]?.mean,
                        difference: fold.difference(m, m + 3, bootstrap)?,
                    })
                };
                let Some(test) = fold.paired_test(0, 3, bootstrap) else {
                    continue;
                };
                let (Some(current), Some(baseline)) = (means[0], means[3]) else {
                    continue;
                };
                let changes = Changes {
                    overall: Change {
                        current: current.mean,
                        baseline: baseline.mean,
                        difference: test.difference,
                    },
                    logic: change(1),
                    chat: change(2),
                    p: test.p,
                };
                rows.push(self.row(model, key, Test::Paired, sides, changes));
            }
        }
        rows
    }
}

/// A group's Overall, Logic and Chat in both runs, and the p-value of the Overall difference.
#[derive(Debug, Clone, Copy)]
struct Changes {
    overall: Change,
    logic: Option<Change>,
    chat: Option<Change>,
    p: f64,
}

/// A dialogue's Overall, Logic and Chat sums over the turns the summary counts, and their
/// number: for the paired bootstrap and for the unpaired one.
fn sums(record: &DialogueRecord) -> (Cluster<3, 1>, CaseSums<3>) {
    let mut c = Cluster::new();
    let mut plain = CaseSums::new();
    for s in counted_scores(record) {
        c.observe(0, Some(s.overall));
        c.observe(1, Some(s.logic));
        c.observe(2, Some(s.chat));
        c.count(0);
        plain.observe([s.overall, s.logic, s.chat]);
    }
    (c, plain)
}

/// A dialogue's mean Overall from its sums; `None` without a counted turn.
fn mean_overall(sums: &CaseSums<3>) -> Option<f64> {
    (sums.turns > 0).then(|| sums.sums[0] / sums.turns as f64)
}

/// The index of `value` in `set`, added when new.
fn index(set: &mut IndexSet<String>, value: &str) -> u32 {
    set.get_index_of(value)
        .unwrap_or_else(|| set.insert_full(value.to_string()).0) as u32
}

/// What makes a dialogue's case: its scenario, intent, persona, level, target route, ground
/// truth and system variables (not the seed, nor the model), hashed; the values by name
/// (whatever order a record lists them in).
fn case_fingerprint(record: &DialogueRecord) -> u64 {
    let job = &record.job;
    let text = serde_json::to_string(&(
        &job.scenario,
        &job.intent,
        &job.persona,
        &job.adversarial,
        &job.target,
        by_name(&job.fields),
        by_name(&job.variables),
    ))
    .unwrap_or_default();
    derive_seed(text)
}

/// An assignment's values by name.
fn by_name(values: &sage_core::sop::Assignment) -> BTreeMap<&String, &sage_core::scenario::Value> {
    values.iter().collect()
}

impl Comparison {
    /// The rows of one verdict.
    pub fn rows_of(&self, verdict: Verdict) -> impl Iterator<Item = &Row> {
        self.rows.iter().filter(move |r| r.verdict == verdict)
    }

    /// Each model's row over all its shared dialogues, in the order of [`Comparison::rows`]
    /// (regressions first).
    pub fn models(&self) -> impl Iterator<Item = &Row> {
        self.rows.iter().filter(|r| r.group == Group::All)
    }

    /// In a rescore comparison, each model's row over its regraded dialogues, in the same order.
    pub fn regraded(&self) -> impl Iterator<Item = &Row> {
        self.rows.iter().filter(|r| r.group == Group::Changed)
    }

    /// The other groups (scenario, adversarial level, route, regraded), in the same order.
    pub fn groups(&self) -> impl Iterator<Item = &Row> {
        self.rows.iter().filter(|r| r.group != Group::All)
    }

    /// The flips of one kind.
    pub fn flips_of(&self, kind: FlipKind) -> impl Iterator<Item = &Flip> {
        self.flips.iter().filter(move |f| f.kind == kind)
    }

    /// The flips whose transcripts the page shows side by side: the first [`FLIPS_SHOWN`] of
    /// [`Comparison::flips`] (pass to fail first, then by dialogue id).
    pub fn flips_shown(&self) -> &[Flip] {
        &self.flips[..self.flips.len().min(FLIPS_SHOWN)]
    }

    /// The models compared unpaired, by name.
    pub fn unpaired_models(&self) -> Vec<&str> {
        let mut names: Vec<&str> = self
            .models()
            .filter(|r| r.test == Test::Unpaired)
            .map(|r| r.model.as_str())
            .collect();
        names.sort_unstable();
        names
    }

    /// The warning when some model was compared unpaired (fewer than half of its dialogues
    /// pair in one run or the other): how many dialogues paired of how many, why, which models
    /// were compared unpaired and what that means; `None` when every model was compared paired.
    pub fn pairing_warning(&self) -> Option<String> {
        let unpaired = self.unpaired_models();
        if unpaired.is_empty() {
            return None;
        }
        let share = |n: usize| 100.0 * self.shared as f64 / n.max(1) as f64;
        let (why, remedy) = if self.current_seed != self.baseline_seed {
            (
                format!(
                    "the runs have different seeds ({} and {}) and the seed draws the cases, so most dialogue ids name another case in each run ({} ids are in both with a different case)",
                    self.current_seed, self.baseline_seed, self.mismatched
                ),
                format!(
                    "rerun `{}`'s configuration with `--seed {}`",
                    self.current, self.baseline_seed
                ),
            )
        } else {
            (
                format!(
                    "the runs hold different dialogues ({} only in `{}`, {} only in `{}`, {} ids in both with a different case: other cases per scenario, scenarios, models or repeats?)",
                    self.only_current,
                    self.current,
                    self.only_baseline,
                    self.baseline,
                    self.mismatched
                ),
                "compare two runs of one configuration".to_string(),
            )
        };
        let list: Vec<String> = unpaired.iter().map(|m| format!("`{m}`")).collect();
        let every = list.len() == self.models().count();
        // Every model: named when they are few (27 names would bury the sentence).
        let who = match (every, list.len()) {
            (true, n) if n > 4 => format!("every model ({n})"),
            (true, _) => format!("every model ({})", list.join(", ")),
            (false, _) => list.join(", "),
        };
        let one = list.len() == 1;
        Some(format!(
            "only {} of the {} dialogues of `{}` ({:.0}%) and of the {} of `{}` ({:.0}%) pair (same id, same case): {why}. So {who} {} compared unpaired: over all {} dialogues in both runs, each run's cases resampled apart within each scenario and target route (a model is compared paired only when at least half of its dialogues pair in each run). The unpaired test is sound, but the cases differ between the runs, so it needs a larger difference to find one than a paired test of the same runs would: {remedy} to pair every dialogue.",
            self.shared,
            self.current_dialogues,
            self.current,
            share(self.current_dialogues),
            self.baseline_dialogues,
            self.baseline,
            share(self.baseline_dialogues),
            if one || every { "was" } else { "were" },
            if one { "its" } else { "their" },
        ))
    }

    /// Whether some group is a regression of a model: never in a rescore or a rejudge
    /// comparison, where the agents' transcripts are the same and a difference is the
    /// grading's.
    pub fn has_regression(&self) -> bool {
        self.relation == Relation::Runs && self.rows_of(Verdict::Regression).next().is_some()
    }

    /// A verdict as this comparison words it: `regression`, `improvement`, `unchanged`,
    /// `exploratory` between two runs; `lower` and `higher` instead of the first two in a
    /// rescore or a rejudge (the grading moved the scores, not the models).
    pub fn verdict_name(&self, verdict: Verdict) -> &'static str {
        match (self.relation, verdict) {
            (Relation::Runs, v) => v.name(),
            (_, Verdict::Regression) => "lower",
            (_, Verdict::Improvement) => "higher",
            (_, v) => v.name(),
        }
    }

    /// What a regression and an improvement are called in titles: "Regressions" and
    /// "Improvements"; "Scored lower under the corrected scenario" and "... higher ..." in a
    /// rescore; "The panel scored lower" and "... higher" in a rejudge.
    pub fn verdict_title(&self, verdict: Verdict) -> String {
        let lower = verdict == Verdict::Regression;
        match self.relation {
            Relation::Runs => if lower { "Regressions" } else { "Improvements" }.to_string(),
            Relation::Rescore => format!(
                "Scored {} under the corrected scenario",
                if lower { "lower" } else { "higher" }
            ),
            Relation::Rejudge => format!(
                "The panel scored {}",
                if lower { "lower" } else { "higher" }
            ),
        }
    }

    /// What the relation of the runs means, said first: `None` for two runs.
    pub fn relation_text(&self) -> Option<String> {
        match self.relation {
            Relation::Runs => None,
            Relation::Rescore => Some(format!(
                "`{}` is `{}` graded again (`sage rescore`): the agents' transcripts are the same, only the references changed, so every difference below is the grading's, not the models'. {} dialogues were graded differently (their reference routes changed); the `regraded dialogues` rows compare them, and they are listed below. `lower` and `higher` say how the corrected scenario scores the same answers.",
                self.current,
                self.baseline,
                self.changed.len()
            )),
            Relation::Rejudge => Some(format!(
                "`{}` and `{}` hold the same transcripts judged by different panels (`sage rejudge`): only the judge panel changed, so every difference below is the panel's, not the models'. `lower` and `higher` say how the new panel scores the same answers.",
                self.current, self.baseline
            )),
        }
    }

    /// One line on what was compared.
    fn header(&self) -> String {
        let models = self.models().count();
        let unpaired = self.unpaired_models().len();
        let mut out = format!(
            "`{}` (current) against `{}` (baseline): {} paired dialogues, {} model{}{}; {} only in `{}`, {} only in `{}`",
            self.current,
            self.baseline,
            self.shared,
            models,
            if models == 1 { "" } else { "s" },
            if unpaired > 0 {
                format!(" ({unpaired} compared unpaired)")
            } else {
                String::new()
            },
            self.only_current,
            self.current,
            self.only_baseline,
            self.baseline
        );
        if self.mismatched > 0 {
            out.push_str(&format!(
                "; {} ids in both with a different case, left out of the paired tests",
                self.mismatched
            ));
        }
        out.push('.');
        if self.left_out.0 > 0 {
            out.push_str(&format!(
                " Unpaired: {} strata (scenario x target route) held by one run only, {} dialogues, left out of the estimates.",
                self.left_out.0, self.left_out.1
            ));
        }
        out
    }

    /// How the differences are computed and tested, in a few sentences.
    fn method_text(&self) -> String {
        let m = &self.method;
        let tests = self
            .models()
            .map(|r| r.test)
            .collect::<std::collections::BTreeSet<_>>();
        let paired = "Paired (a model with at least half of its dialogues paired in each run): means over every scored turn of the paired dialogues, and [..] the {conf} interval of a paired cluster bootstrap over the cases.";
        let unpaired = "Unpaired (a model with fewer of its dialogues paired): over all the model's dialogues in both runs, Δ the post-stratified difference Σ w_s (m_current,s − m_baseline,s) over the strata s (scenario x target route; an adversarial level's: its scenarios) both runs hold, m the mean over every scored turn of a run's cases in the stratum and w_s its share of both runs' scored turns; [..] the {conf} interval of a bootstrap that resamples each run's cases apart within each stratum.";
        let mut how: Vec<&str> = Vec::new();
        if tests.contains(&Test::Paired) {
            how.push(paired);
        }
        if tests.contains(&Test::Unpaired) {
            how.push(unpaired);
        }
        let conf = format!("{:.0}%", m.bootstrap.confidence * 100.0);
        format!(
            "Δ = current − baseline, points 0-100. {} B = {}, seed {}; p is two-sided from the same resamples (the smallest possible is {:.5}). Groups of at least {} cases (paired cases, or cases in each run) are tested ({} groups, the per-model rows included) and their p-values adjusted together by Benjamini-Hochberg: a group is `{}` or `{}` only when q < {} and its interval excludes 0. Smaller groups are exploratory: no verdict. The noise floor is half the interval's width: a smaller |Δ| cannot be told from noise.",
            how.join(" ").replace("{conf}", &conf),
            m.bootstrap.resamples,
            m.bootstrap.seed,
            m.smallest_p(),
            m.min_paired,
            m.tested,
            self.verdict_name(Verdict::Regression),
            self.verdict_name(Verdict::Improvement),
            m.alpha,
        )
    }
}

/// Where both runs' reports are, as URLs relative to the comparison's file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Links {
    /// The current run's report.html.
    pub current: String,
    /// The baseline's report.html.
    pub baseline: String,
}

/// The link to a dialogue's transcript in a report: `REPORT#dialogue=<encodeURIComponent(id)>`.
pub fn dialogue_href(report: &str, dialogue_id: &str) -> String {
    format!("{report}{}", super::dialogue_anchor(dialogue_id))
}

/// The URL of file `to` relative to folder `from` (both absolute, without `.` or `..`):
/// `../B/report.html`; each name percent-encoded.
pub fn relative_url(from: &std::path::Path, to: &std::path::Path) -> String {
    let from: Vec<_> = from.components().collect();
    let to: Vec<_> = to.components().collect();
    let common = from.iter().zip(&to).take_while(|(a, b)| a == b).count();
    let mut parts: Vec<String> = vec!["..".to_string(); from.len() - common];
    parts.extend(
        to[common..]
            .iter()
            .map(|c| encode_uri_component(&c.as_os_str().to_string_lossy())),
    );
    parts.join("/")
}

/// Flipped dialogues whose transcripts the page embeds side by side (the first of
/// [`Comparison::flips`]); the others are listed with their links.
pub const FLIPS_SHOWN: usize = 200;

/// Flipped dialogues the page lists at most (the JSON lists them all).
pub const FLIPS_LISTED: usize = 2_000;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resamples_grow_with_the_family_so_one_group_can_pass() {
        assert_eq!(resamples_for(0), MIN_RESAMPLES);
        assert_eq!(resamples_for(12), MIN_RESAMPLES);
        // 80 groups: 2 · 80 / 0.05 = 3,200, rounded up to 4,000.
        assert_eq!(resamples_for(80), 4_000);
        assert_eq!(resamples_for(10_000), MAX_RESAMPLES);
        for tested in [1, 50, 80, 200, 499] {
            let b = resamples_for(tested) as f64;
            assert!(2.0 / (b + 1.0) <= ALPHA / tested as f64, "{tested}");
        }
    }
}
