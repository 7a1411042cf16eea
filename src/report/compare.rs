//! Two runs compared: `sage report A --compare B` (B the baseline). Per model present in both,
//! and per model x scenario, adversarial level and target route, the difference in mean Overall
//! (and Logic, Chat) between the runs over the dialogues both hold (the same dialogue id and the
//! same case), with a paired cluster-bootstrap interval; regressions first (the interval of the
//! Overall difference entirely below 0), then improvements, then the unchanged; and the
//! dialogues that went from passing (reaching the target action) to failing, and back.
//!
//! Pure and streaming: the baseline's records are folded first ([`CompareFold::add_baseline`]),
//! keeping about a hundred bytes per dialogue (its case's fingerprint, its score sums, whether
//! it passed), then the current run's ([`CompareFold::add_current`]), each paired with its
//! baseline at once; [`CompareFold::finish`] draws the intervals one model at a time. Each
//! dialogue weighs the same in a resample on both sides (its Poisson weights come from its id,
//! as in the summary), which is what makes the interval paired.

pub use super::encode_uri_component;
use super::page::{Page, Section, escape};
use crate::plan::derive_seed;
use crate::protocol::{DialogueEnd, DialogueRecord};
use crate::scenario::Adversarial;
use crate::scoring::leaderboard::Table;
use crate::scoring::stats::{Bootstrap, Cluster, Difference, RatioFold, poisson_weights};
use crate::scoring::summary::{counted_scores, reached_target, route_key};
use indexmap::IndexSet;
use std::collections::{BTreeMap, HashMap};
use std::fmt::Write;

/// Shared dialogues a group needs before it is called a regression or an improvement (below,
/// a bootstrap over a handful of dialogues says little, however narrow its interval).
pub const MIN_DIALOGUES: usize = 5;

/// Flipped dialogues the terminal lists per direction (the HTML lists them all).
const TEXT_FLIPS: usize = 20;
/// Regressions and improvements the terminal lists each (the HTML lists them all).
const TEXT_ROWS: usize = 25;

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

/// One run as the comparison names it: its id and its scenarios with their content hashes
/// (from its manifest).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunInfo {
    /// The run id.
    pub id: String,
    /// Scenario ids with the SHA-256 of their YAML.
    pub scenarios: Vec<(String, String)>,
}

/// A group of a model's dialogues.
#[derive(Debug, Clone, PartialEq, Eq)]
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
        }
    }

    /// The group for people: `all`, `scenario ID`, `adversarial LEVEL`, `route SCENARIO: ROUTE`.
    pub fn label(&self) -> String {
        match self {
            Group::All => "all".into(),
            Group::Scenario(s) => format!("scenario {s}"),
            Group::Adversarial(level) => format!("adversarial {level}"),
            Group::Route { scenario, route } => format!("route {scenario}: {route}"),
        }
    }
}

/// What the comparison says of a group.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Status {
    /// The interval of the Overall difference lies entirely below 0.
    Regression,
    /// It lies entirely above 0.
    Improvement,
    /// It holds 0, or the group has fewer than [`MIN_DIALOGUES`] shared dialogues.
    Unchanged,
}

impl Status {
    /// `regression`, `improvement` or `unchanged` (the row's class in the HTML).
    pub fn name(self) -> &'static str {
        match self {
            Status::Regression => "regression",
            Status::Improvement => "improvement",
            Status::Unchanged => "unchanged",
        }
    }
}

/// One metric in both runs and their paired difference.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Change {
    /// The current run's mean over the shared dialogues, 0-100.
    pub current: f64,
    /// The baseline's mean over the same dialogues, 0-100.
    pub baseline: f64,
    /// Current minus baseline, with its paired bootstrap interval.
    pub difference: Difference,
}

/// One row of the comparison: a group of one model's shared dialogues.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    /// The model under test.
    pub model: String,
    /// The group.
    pub group: Group,
    /// Shared dialogues in the group.
    pub dialogues: usize,
    /// Regression, improvement or unchanged (decided on Overall).
    pub status: Status,
    /// Overall (mean over every scored turn, as in the leaderboard).
    pub overall: Change,
    /// Logic.
    pub logic: Option<Change>,
    /// Chat.
    pub chat: Option<Change>,
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
}

/// The comparison of two runs.
#[derive(Debug, Clone, PartialEq)]
pub struct Comparison {
    /// The current run's id.
    pub current: String,
    /// The baseline's id.
    pub baseline: String,
    /// How the intervals were drawn.
    pub bootstrap: Bootstrap,
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
    /// Regressions (worst first), improvements (best first), then the unchanged (by model and
    /// group).
    pub rows: Vec<Row>,
    /// Pass to fail first, then fail to pass, each by dialogue id.
    pub flips: Vec<Flip>,
}

/// What is kept of a baseline dialogue until its current counterpart comes.
#[derive(Debug, Clone)]
struct Baseline {
    case: u64,
    scores: Cluster<3, 1>,
    pass: bool,
    end: DialogueEnd,
}

/// A shared dialogue: its groups (as indexes) and both runs' score sums.
#[derive(Debug, Clone)]
struct Pair {
    id: String,
    model: u32,
    scenario: u32,
    level: u8,
    route: u32,
    scores: Cluster<6, 2>,
}

/// A group as its model's fold orders it: kind (all, scenario, level, route), then indexes.
type GroupKey = (u8, u32, u32);

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
    pairs: Vec<Pair>,
    flips: Vec<Flip>,
}

impl CompareFold {
    /// An empty comparison of `current` against `baseline`, drawing intervals as `bootstrap`
    /// says; refused when the runs share no scenario.
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
            pairs: Vec::new(),
            flips: Vec::new(),
        })
    }

    /// Folds a baseline record in (a dialogue id met twice: the first record counts).
    pub fn add_baseline(&mut self, record: &DialogueRecord) {
        self.baseline_dialogues += 1;
        let id = &record.job.dialogue_id;
        if self.waiting.contains_key(id) {
            return;
        }
        let scores = sums(record);
        self.waiting.insert(
            id.clone(),
            Baseline {
                case: case_fingerprint(record),
                scores,
                pass: reached_target(record),
                end: record.end,
            },
        );
    }

    /// Folds a current record in, paired with its baseline (after every baseline record).
    pub fn add_current(&mut self, record: &DialogueRecord) {
        self.current_dialogues += 1;
        let job = &record.job;
        let Some(base) = self.waiting.remove(&job.dialogue_id) else {
            return;
        };
        if base.case != case_fingerprint(record) {
            self.mismatched += 1;
            return;
        }
        let current = sums(record);
        let mut scores = Cluster::<6, 2>::new();
        scores.point[..3].copy_from_slice(&current.point);
        scores.point[3..].copy_from_slice(&base.scores.point);
        scores.boot[..3].copy_from_slice(&current.boot);
        scores.boot[3..].copy_from_slice(&base.scores.boot);
        scores.count = [current.count[0], base.scores.count[0]];
        let pass = reached_target(record);
        if pass != base.pass {
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
                baseline_end: base.end,
            });
        }
        let index = |set: &mut IndexSet<String>, value: &str| {
            set.get_index_of(value)
                .unwrap_or_else(|| set.insert_full(value.to_string()).0) as u32
        };
        let level = LEVELS
            .iter()
            .position(|l| *l == job.adversarial)
            .unwrap_or(0) as u8;
        self.pairs.push(Pair {
            id: job.dialogue_id.clone(),
            model: index(&mut self.models, &job.service_model),
            scenario: index(&mut self.scenarios, &job.scenario),
            level,
            route: index(&mut self.routes, &route_key(&job.target)),
            scores,
        });
    }

    /// The comparison; refused when the runs share no dialogue.
    pub fn finish(mut self) -> Result<Comparison, CompareError> {
        if self.pairs.is_empty() {
            return Err(CompareError::NoSharedDialogue {
                current: self.current.id,
                baseline: self.baseline.id,
                current_dialogues: self.current_dialogues,
                baseline_dialogues: self.baseline_dialogues,
                mismatched: self.mismatched,
            });
        }
        let shared = self.pairs.len();
        let mut pairs = std::mem::take(&mut self.pairs);
        pairs.sort_by_key(|p| p.model);
        let mut rows = Vec::new();
        for chunk in pairs.chunk_by(|a, b| a.model == b.model) {
            rows.extend(self.model_rows(chunk));
        }
        rows.sort_by(|a, b| {
            let order = a.status.cmp(&b.status);
            let delta = |r: &Row| r.overall.difference.delta;
            match a.status {
                _ if order.is_ne() => order,
                Status::Regression => delta(a).total_cmp(&delta(b)),
                Status::Improvement => delta(b).total_cmp(&delta(a)),
                Status::Unchanged => std::cmp::Ordering::Equal,
            }
        });
        let mut flips = std::mem::take(&mut self.flips);
        flips.sort_by(|a, b| (a.kind, &a.dialogue_id).cmp(&(b.kind, &b.dialogue_id)));
        Ok(Comparison {
            current: self.current.id,
            baseline: self.baseline.id,
            bootstrap: self.bootstrap,
            shared,
            only_current: self.current_dialogues - shared - self.mismatched,
            only_baseline: self.waiting.len(),
            mismatched: self.mismatched,
            notes: self.notes,
            rows,
            flips,
        })
    }

    /// The rows of one model's pairs, in group order (all, scenarios, levels, routes).
    fn model_rows(&self, pairs: &[Pair]) -> Vec<Row> {
        let mut groups: BTreeMap<GroupKey, (usize, RatioFold<6, 2>)> = BTreeMap::new();
        for p in pairs {
            let weights = poisson_weights(self.bootstrap.seed, &p.id, self.bootstrap.resamples);
            let keys: [GroupKey; 4] = [
                (0, 0, 0),
                (1, p.scenario, 0),
                (2, u32::from(p.level), 0),
                (3, p.scenario, p.route),
            ];
            for key in keys {
                let (n, fold) = groups
                    .entry(key)
                    .or_insert_with(|| (0, RatioFold::new([0, 0, 0, 1, 1, 1])));
                *n += 1;
                fold.add(&p.scores, &weights);
            }
        }
        let model = &self.models[pairs[0].model as usize];
        let means_only = Bootstrap {
            resamples: 0,
            ..self.bootstrap
        };
        groups
            .iter()
            .filter_map(|(&(kind, a, b), (dialogues, fold))| {
                let means = fold.metrics(&means_only);
                let change = |m: usize| {
                    Some(Change {
                        current: means[m]?.mean,
                        baseline: means[m + 3]?.mean,
                        difference: fold.difference(m, m + 3, &self.bootstrap)?,
                    })
                };
                let overall = change(0)?;
                let d = overall.difference;
                let status = if *dialogues < MIN_DIALOGUES {
                    Status::Unchanged
                } else if d.ci_high < 0.0 {
                    Status::Regression
                } else if d.ci_low > 0.0 {
                    Status::Improvement
                } else {
                    Status::Unchanged
                };
                let scenario = || self.scenarios[a as usize].clone();
                let group = match kind {
                    0 => Group::All,
                    1 => Group::Scenario(scenario()),
                    2 => Group::Adversarial(LEVELS[a as usize]),
                    _ => Group::Route {
                        scenario: scenario(),
                        route: self.routes[b as usize].clone(),
                    },
                };
                Some(Row {
                    model: model.clone(),
                    group,
                    dialogues: *dialogues,
                    status,
                    overall,
                    logic: change(1),
                    chat: change(2),
                })
            })
            .collect()
    }
}

/// A dialogue's Overall, Logic and Chat sums over the turns the summary counts, and their
/// number.
fn sums(record: &DialogueRecord) -> Cluster<3, 1> {
    let mut c = Cluster::new();
    for s in counted_scores(record) {
        c.observe(0, Some(s.overall));
        c.observe(1, Some(s.logic));
        c.observe(2, Some(s.chat));
        c.count(0);
    }
    c
}

/// What makes a dialogue's case: its scenario, intent, persona, level, target route, ground
/// truth and system variables (not the seed, nor the model), hashed.
fn case_fingerprint(record: &DialogueRecord) -> u64 {
    let job = &record.job;
    let text = serde_json::to_string(&(
        &job.scenario,
        &job.intent,
        &job.persona,
        &job.adversarial,
        &job.target,
        &job.fields,
        &job.variables,
    ))
    .unwrap_or_default();
    derive_seed(text)
}

/// `-3.21 [-5.0, -1.4]`.
fn delta_text(d: &Difference) -> String {
    format!("{:+.2} [{:+.1}, {:+.1}]", d.delta, d.ci_low, d.ci_high)
}

fn change_text(c: Option<&Change>) -> String {
    c.map_or_else(|| "-".into(), |c| delta_text(&c.difference))
}

impl Comparison {
    /// The rows of one status.
    pub fn rows_of(&self, status: Status) -> impl Iterator<Item = &Row> {
        self.rows.iter().filter(move |r| r.status == status)
    }

    /// The flips of one kind.
    pub fn flips_of(&self, kind: FlipKind) -> impl Iterator<Item = &Flip> {
        self.flips.iter().filter(move |f| f.kind == kind)
    }

    /// One line on what was compared, and how.
    fn header(&self) -> String {
        let models: IndexSet<&str> = self.rows.iter().map(|r| r.model.as_str()).collect();
        let mut out = format!(
            "`{}` (current) against `{}` (baseline): {} shared dialogues, {} model{}; {} only in `{}`, {} only in `{}`",
            self.current,
            self.baseline,
            self.shared,
            models.len(),
            if models.len() == 1 { "" } else { "s" },
            self.only_current,
            self.current,
            self.only_baseline,
            self.baseline
        );
        if self.mismatched > 0 {
            let _ = write!(
                out,
                "; {} ids in both with a different case, left out",
                self.mismatched
            );
        }
        out.push('.');
        out
    }

    /// How the differences are computed, in one sentence.
    fn method(&self) -> String {
        format!(
            "Δ = current - baseline, 0-100 points, means over every scored turn of the shared dialogues; [..] is the {:.0}% interval of a paired cluster bootstrap over them (B = {}, seed {}); a regression's interval lies entirely below 0 (groups of at least {MIN_DIALOGUES} dialogues).",
            self.bootstrap.confidence * 100.0,
            self.bootstrap.resamples,
            self.bootstrap.seed
        )
    }

    /// The comparison for the terminal: per model, the regressions, the improvements, how many
    /// groups are unchanged, and the flipped dialogues (the first few of each way).
    pub fn text(&self) -> String {
        let mut out = format!("Comparing {}\n{}\n", self.header(), self.method());
        for note in &self.notes {
            let _ = writeln!(out, "note: {note}");
        }
        let mut models = Table::with(&[
            "Model",
            "Status",
            "Dialogues",
            "OA baseline",
            "OA current",
            "ΔOA [95% CI]",
            "ΔLogic",
            "ΔChat",
        ])
        .labels(2);
        let mut per_model: Vec<&Row> = self.rows.iter().filter(|r| r.group == Group::All).collect();
        per_model.sort_by(|a, b| a.model.cmp(&b.model));
        for r in per_model {
            models.rows.push(vec![
                r.model.clone(),
                r.status.name().into(),
                r.dialogues.to_string(),
                format!("{:.2}", r.overall.baseline),
                format!("{:.2}", r.overall.current),
                delta_text(&r.overall.difference),
                change_text(r.logic.as_ref()),
                change_text(r.chat.as_ref()),
            ]);
        }
        let _ = write!(out, "\nPer model\n{}", models.text());
        for (status, title) in [
            (
                Status::Regression,
                "Regressions (ΔOA interval below 0), worst first",
            ),
            (
                Status::Improvement,
                "Improvements (ΔOA interval above 0), best first",
            ),
        ] {
            let mut table = Table::with(&[
                "Model",
                "Group",
                "Dialogues",
                "ΔOA [95% CI]",
                "ΔLogic",
                "ΔChat",
            ])
            .labels(2);
            let total = self.rows_of(status).count();
            for r in self.rows_of(status).take(TEXT_ROWS) {
                table.rows.push(vec![
                    r.model.clone(),
                    r.group.label(),
                    r.dialogues.to_string(),
                    delta_text(&r.overall.difference),
                    change_text(r.logic.as_ref()),
                    change_text(r.chat.as_ref()),
                ]);
            }
            if table.rows.is_empty() {
                let _ = writeln!(out, "\n{title}: none");
            } else {
                let _ = write!(out, "\n{title}\n{}", table.text());
                if total > TEXT_ROWS {
                    let _ = writeln!(
                        out,
                        "... and {} more (the HTML comparison lists them all: --html)",
                        total - TEXT_ROWS
                    );
                }
            }
        }
        let _ = writeln!(
            out,
            "\nUnchanged: {} groups (the HTML comparison lists every group: --html).",
            self.rows_of(Status::Unchanged).count()
        );
        for (kind, title) in [
            (FlipKind::PassToFail, "Pass to fail"),
            (FlipKind::FailToPass, "Fail to pass"),
        ] {
            let n = self.flips_of(kind).count();
            let _ = writeln!(
                out,
                "\n{title} (reached the target action in one run, not in the other): {n} dialogue{}{}",
                if n == 1 { "" } else { "s" },
                if n > TEXT_FLIPS {
                    format!(", the first {TEXT_FLIPS}")
                } else {
                    String::new()
                }
            );
            for f in self.flips_of(kind).take(TEXT_FLIPS) {
                let _ = writeln!(
                    out,
                    "  {}  (baseline {}, current {})",
                    f.dialogue_id,
                    f.baseline_end.name(),
                    f.current_end.name()
                );
            }
        }
        out
    }

    /// The `compare` section: the groups (`#compare-table`, regressions first) and the flipped
    /// dialogues (`#compare-flips`), each linked to its transcript in both runs' reports.
    pub fn section(&self, links: &Links) -> Section {
        let mut html = format!(
            "<p>{}</p><p class=\"note\">{}</p>",
            escape(&self.header()),
            escape(&self.method())
        );
        for note in &self.notes {
            let _ = write!(html, "<p class=\"note warn\">{}</p>", escape(note));
        }
        let counts: Vec<String> = [Status::Regression, Status::Improvement, Status::Unchanged]
            .iter()
            .map(|s| format!("{} {}", self.rows_of(*s).count(), s.name()))
            .collect();
        let _ = write!(
            html,
            "<h3>Groups</h3><p>{}.</p><table id=\"compare-table\" class=\"data\"><thead><tr>\
             <th>Model</th><th>Group</th><th>Status</th><th class=\"num\">Dialogues</th>\
             <th class=\"num\">OA baseline</th><th class=\"num\">OA current</th>\
             <th class=\"num\">ΔOA</th><th class=\"num\">95% CI</th>\
             <th class=\"num\">ΔLogic</th><th class=\"num\">ΔChat</th></tr></thead><tbody>",
            counts.join(", ")
        );
        let num = |metric: &str, x: f64, shown: String| {
            format!("<td class=\"num\" data-metric=\"{metric}\" data-value=\"{x}\">{shown}</td>")
        };
        let opt = |metric: &str, c: Option<&Change>| match c {
            Some(c) => num(
                metric,
                c.difference.delta,
                format!(
                    "{:+.2} <span class=\"ci\">[{:+.1}, {:+.1}]</span>",
                    c.difference.delta, c.difference.ci_low, c.difference.ci_high
                ),
            ),
            None => "<td class=\"num\">-</td>".into(),
        };
        for r in &self.rows {
            let d = &r.overall.difference;
            let tone = match r.status {
                Status::Regression => " bad",
                Status::Improvement => " good",
                Status::Unchanged => "",
            };
            let _ = write!(
                html,
                "<tr class=\"{status}\" data-model=\"{model}\" data-group=\"{group}\" data-delta=\"{delta}\" data-ci-low=\"{low}\" data-ci-high=\"{high}\">\
                 <td>{model}</td><td>{label}</td><td class=\"status{tone}\">{status}</td>\
                 <td class=\"num\" data-value=\"{n}\">{n}</td>{base}{now}\
                 <td class=\"num{tone}\" data-metric=\"overall\" data-value=\"{delta}\">{delta_shown:+.2}</td>\
                 <td class=\"num ci\">[{low_shown:+.1}, {high_shown:+.1}]</td>{logic}{chat}</tr>",
                status = r.status.name(),
                model = escape(&r.model),
                group = escape(&r.group.key()),
                label = escape(&r.group.label()),
                delta = d.delta,
                low = d.ci_low,
                high = d.ci_high,
                n = r.dialogues,
                base = num(
                    "overall_baseline",
                    r.overall.baseline,
                    format!("{:.2}", r.overall.baseline)
                ),
                now = num(
                    "overall_current",
                    r.overall.current,
                    format!("{:.2}", r.overall.current)
                ),
                delta_shown = d.delta,
                low_shown = d.ci_low,
                high_shown = d.ci_high,
                logic = opt("logic", r.logic.as_ref()),
                chat = opt("chat", r.chat.as_ref()),
            );
        }
        html.push_str("</tbody></table>");
        let down = self.flips_of(FlipKind::PassToFail).count();
        let up = self.flips_of(FlipKind::FailToPass).count();
        let _ = write!(
            html,
            "<h3>Dialogues that flipped</h3><p>A dialogue passes when it reaches its target \
             action. {down} went from pass to fail, {up} from fail to pass.</p>\
             <table id=\"compare-flips\" class=\"data\"><thead><tr><th>Dialogue</th>\
             <th>Model</th><th>Scenario</th><th>Flip</th><th>Baseline end</th>\
             <th>Current end</th><th>Transcripts</th></tr></thead><tbody>"
        );
        for f in &self.flips {
            let id = escape(&f.dialogue_id);
            let tone = match f.kind {
                FlipKind::PassToFail => "bad",
                FlipKind::FailToPass => "good",
            };
            let _ = write!(
                html,
                "<tr data-dialogue=\"{id}\" data-flip=\"{kind}\"><td><code>{id}</code></td>\
                 <td>{model}</td><td>{scenario}</td><td class=\"{tone}\">{kind}</td>\
                 <td>{base_end}</td><td>{now_end}</td><td><a class=\"current\" href=\"{now}\">current</a> \
                 · <a class=\"baseline\" href=\"{base}\">baseline</a></td></tr>",
                kind = f.kind.name(),
                model = escape(&f.model),
                scenario = escape(&f.scenario),
                base_end = f.baseline_end.name(),
                now_end = f.current_end.name(),
                now = escape(&dialogue_href(&links.current, &f.dialogue_id)),
                base = escape(&dialogue_href(&links.baseline, &f.dialogue_id)),
            );
        }
        html.push_str("</tbody></table>");
        Section::trusted("compare", "Compare", html)
    }

    /// The comparison as a whole page (one `compare` section).
    pub fn page(&self, links: &Links) -> Page {
        Page {
            title: format!(
                "SAGE-RS comparison: {} against {}",
                self.current, self.baseline
            ),
            sections: vec![self.section(links)],
            styles: vec![COMPARE_CSS.to_string()],
            scripts: Vec::new(),
        }
    }
}

/// The style of the comparison: a regression's row is marked on its left edge.
const COMPARE_CSS: &str = "tr.regression td:first-child{box-shadow:inset 3px 0 var(--bad)}\
tr.improvement td:first-child{box-shadow:inset 3px 0 var(--good)}td.status{font-size:12px}";

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
