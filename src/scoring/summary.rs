//! Aggregation of dialogue records into the run's summary (summary.json): breakdowns by model,
//! scenario, adversarial level and turn depth, the released code's variants, judge agreement,
//! repeats, route coverage, tokens and cost. Every mean carries a cluster-bootstrap interval.
//!
//! Records are sorted by dialogue id first, and every group draws its resamples from a stream
//! derived from its own label, so the summary depends only on the set of records and the seed.

use super::stats::{Bootstrap, ClusterSums, Metric, mean, median};
use super::turn::{answered_chat_scores, chat_dimensions, logic, overall, values_equal};
use crate::protocol::{
    CallRecord, DialogueEnd, DialogueJob, DialogueRecord, ServiceOutcome, TurnRecord, TurnScores,
};
use crate::scenario::{Adversarial, Value};
use crate::sop::Route;
use indexmap::{IndexMap, IndexSet};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};

/// The turn depths broken out (besides each dialogue's final turn), as in the paper's Table 2.
pub const TURN_DEPTHS: [u32; 4] = [1, 5, 10, 15];

/// Key of the released variant that drops format-error turns.
pub const RELEASED_DROP_FORMAT_ERRORS: &str = "released_drop_format_errors";
/// Key of the released variant that scores paths by common prefix.
pub const RELEASED_PREFIX_PATH: &str = "released_prefix_path";
/// Key of both released variants together.
pub const RELEASED_BOTH: &str = "released_both";

/// The whole run's aggregates.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    /// How the intervals were drawn.
    pub bootstrap: Bootstrap,
    /// Dialogue records summarized.
    pub dialogues: usize,
    /// One entry per service model, by model name.
    pub models: Vec<ModelSummary>,
    /// Judge agreement per scenario (all models together).
    pub judge_agreement: BTreeMap<String, Agreement>,
    /// Per scenario: dialogues per target route (see [`route_key`]), all models together.
    pub coverage: BTreeMap<String, BTreeMap<String, usize>>,
    /// Every model call of the run, by model name.
    pub calls_by_model: BTreeMap<String, CallTotals>,
}

/// Everything about one service model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ModelSummary {
    /// The model's name.
    pub model: String,
    /// Whether it is a built-in simulated backend.
    pub simulated: bool,
    /// Its dialogues.
    pub dialogues: usize,
    /// The headline numbers: every scored turn (the paper's averages).
    pub all: GroupStats,
    /// The turn-level evaluation variant: turns 1, 5, 10, 15 and each dialogue's final turn
    /// (each turn counted once).
    pub turn_level: GroupStats,
    /// Per scenario id.
    pub by_scenario: BTreeMap<String, GroupStats>,
    /// Per adversarial level (`zero`, `weak`, `strong`; levels without dialogues left out).
    pub by_adversarial: IndexMap<String, GroupStats>,
    /// Per turn depth: `t1`, `t5`, `t10`, `t15` and `final` (each dialogue's last scored turn);
    /// depths no dialogue reached are left out. "All turns" is [`ModelSummary::all`].
    pub by_turn: IndexMap<String, GroupStats>,
    /// The released code's variants over every turn: [`RELEASED_DROP_FORMAT_ERRORS`],
    /// [`RELEASED_PREFIX_PATH`], [`RELEASED_BOTH`].
    pub released: IndexMap<String, GroupStats>,
    /// Dialogues the customer ended before the agent took the target action.
    pub ended_early: usize,
    /// Dialogues per end reason (`resolved`, `user_ended_early`, `max_turns`, `infra_error`).
    pub end_reasons: IndexMap<String, usize>,
    /// Tokens and cost of the calls made in this model's dialogues.
    pub calls: ModelCalls,
    /// Per-case medians across repeats; present only when some case ran more than once.
    pub repeats: Option<RepeatSummary>,
}

/// The statistics of one group of turns.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GroupStats {
    /// Dialogues with at least one turn in the group.
    pub dialogues: usize,
    /// Turns counted: valid and scored, or a format error.
    pub turns: usize,
    /// Turns with a valid answer that were scored.
    pub valid_turns: usize,
    /// Turns whose answer did not parse (scored with Logic 0 when judged; counted in the
    /// format-error rate whether or not a judge answered).
    pub format_error_turns: usize,
    /// Turns not scored for infrastructure reasons: the agent unreachable, or a valid answer no
    /// judge (or the rule engine) answered for.
    pub infra_error_turns: usize,
    /// Overall score, 0-100.
    pub overall: Option<Metric>,
    /// Logic score, 0-100.
    pub logic: Option<Metric>,
    /// Chat score, 0-100.
    pub chat: Option<Metric>,
    /// Classification accuracy, 0-100.
    pub acc_cls: Option<Metric>,
    /// Path similarity, 0-100.
    pub sim_path: Option<Metric>,
    /// Action correctness, 0-100.
    pub acc_action: Option<Metric>,
    /// Execution gap: mean Acc_cls - mean Acc_action, 0-100 points.
    pub execution_gap: Option<Metric>,
    /// Format-error turns over scored turns, %.
    pub format_error_rate: Option<Metric>,
    /// Characters of the agent's `chat` over valid turns.
    pub chat_length: Option<Metric>,
    /// The five chat dimensions, 0-100 each.
    pub chat_dimensions: ChatDimensions,
}

/// Each chat dimension's mean on 0-100 (`s / 9 * 100`; per turn, the mean over the judges that
/// answered), as in the paper's Table 4.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChatDimensions {
    /// Linguistic quality.
    pub linguistic_quality: Option<Metric>,
    /// Anthropomorphism and emotion.
    pub anthropomorphism_emotion: Option<Metric>,
    /// Content utility.
    pub content_utility: Option<Metric>,
    /// User satisfaction.
    pub user_satisfaction: Option<Metric>,
    /// Instruction compliance.
    pub instruction_compliance: Option<Metric>,
}

/// Judge agreement in one scenario, over its scored turns that have a consensus.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Agreement {
    /// Turns counted.
    pub turns: usize,
    /// Turns where the answering judges agree on every field, %.
    pub unanimous_all_fields: f64,
    /// Turns where the consensus equals the job's ground truth on every field the job fixes, %
    /// (`None` when the jobs fix no field).
    pub truth_all_fields: Option<f64>,
    /// (turn, field) pairs where the consensus equals the job's ground truth, %.
    pub truth_mean_over_fields: Option<f64>,
    /// Per field, in the scenario's declaration order.
    pub fields: IndexMap<String, FieldAgreement>,
}

/// Judge agreement on one field.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FieldAgreement {
    /// Turns where every answering judge gave the same value, %.
    pub unanimous: f64,
    /// Turns where the consensus equals the job's ground truth, % (`None` when the jobs do not
    /// fix the field).
    pub matches_truth: Option<f64>,
}

/// Token and cost totals of a set of model calls.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct CallTotals {
    /// Calls.
    pub calls: u64,
    /// Calls that failed after retries.
    pub errors: u64,
    /// Calls served from the response cache.
    pub cached: u64,
    /// Prompt tokens.
    pub input_tokens: u64,
    /// Completion tokens.
    pub output_tokens: u64,
    /// Cost in US dollars.
    pub cost_usd: f64,
}

impl CallTotals {
    fn add(&mut self, c: &CallRecord) {
        self.calls += 1;
        self.errors += u64::from(c.error.is_some());
        self.cached += u64::from(c.cached);
        self.input_tokens = self.input_tokens.saturating_add(c.usage.input_tokens);
        self.output_tokens = self.output_tokens.saturating_add(c.usage.output_tokens);
        self.cost_usd += c.cost_usd;
    }
}

/// The calls made in one service model's dialogues.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ModelCalls {
    /// Every call (user, service, judges).
    pub total: CallTotals,
    /// Per role (`service`, `user`, `judge`, and `other` if any), told apart by model name: a
    /// call is the service's when its model is the job's service model, else the user's when it
    /// is the user model, else a judge's when it is a judge model. A model playing two roles has
    /// its calls counted under the first.
    pub by_role: IndexMap<String, CallTotals>,
    /// Per model name.
    pub by_model: BTreeMap<String, CallTotals>,
}

/// Per-case medians across repeats (as SupportAgentBench publishes): a case is the dialogue id
/// without its `/r<N>` suffix; per case, the median over repeats of each dialogue's mean score
/// over its scored turns; then the mean and the median over cases.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RepeatSummary {
    /// Cases with at least one scored dialogue.
    pub cases: usize,
    /// Most repeats of one case.
    pub max_repeats: usize,
    /// Overall score.
    pub overall: CaseStat,
    /// Logic score.
    pub logic: CaseStat,
    /// Chat score.
    pub chat: CaseStat,
}

/// The mean and the median over cases of the per-case medians.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct CaseStat {
    /// Mean over cases.
    pub mean: f64,
    /// Median over cases.
    pub median: f64,
}

/// Summarizes dialogue records. Deterministic: the records are sorted by dialogue id (then
/// service model, then run) before anything is computed, and the intervals are seeded.
pub fn summarize(records: &[DialogueRecord], bootstrap: &Bootstrap) -> Summary {
    let mut sorted: Vec<&DialogueRecord> = records.iter().collect();
    sorted.sort_by(|a, b| sort_key(a).cmp(&sort_key(b)));
    let dialogues: Vec<Dialogue> = sorted.into_iter().map(Dialogue::new).collect();

    let mut by_model: BTreeMap<&str, Vec<&Dialogue>> = BTreeMap::new();
    let mut by_scenario: BTreeMap<&str, Vec<&Dialogue>> = BTreeMap::new();
    let mut calls_by_model: BTreeMap<String, CallTotals> = BTreeMap::new();
    for d in &dialogues {
        by_model.entry(&d.job().service_model).or_default().push(d);
        by_scenario.entry(&d.job().scenario).or_default().push(d);
        for c in d.calls() {
            calls_by_model.entry(c.model.clone()).or_default().add(c);
        }
    }
    Summary {
        bootstrap: *bootstrap,
        dialogues: dialogues.len(),
        models: by_model
            .iter()
            .map(|(model, ds)| model_summary(model, ds, bootstrap))
            .collect(),
        judge_agreement: by_scenario
            .iter()
            .filter_map(|(sc, ds)| Some((sc.to_string(), agreement(ds)?)))
            .collect(),
        coverage: by_scenario
            .iter()
            .map(|(sc, ds)| {
                let mut routes = BTreeMap::new();
                for d in ds {
                    *routes.entry(route_key(&d.job().target)).or_default() += 1;
                }
                (sc.to_string(), routes)
            })
            .collect(),
        calls_by_model,
    }
}

/// Records are summarized in this order.
fn sort_key(r: &DialogueRecord) -> (&str, &str, &str) {
    (&r.job.dialogue_id, &r.job.service_model, &r.job.run_id)
}

/// A route as one line: `step1>step2>step3 -> Action [OUTPUT=value, ...]` (the brackets only
/// when the route has outputs).
pub fn route_key(route: &Route) -> String {
    let mut key = format!("{} -> {}", route.path.join(">"), route.action);
    if !route.outputs.is_empty() {
        let outputs: Vec<String> = route
            .outputs
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect();
        key.push_str(&format!(" [{}]", outputs.join(", ")));
    }
    key
}

/// The case a dialogue id belongs to: the id without a trailing `/r<N>` repeat suffix.
pub fn case_key(dialogue_id: &str) -> &str {
    match dialogue_id.rsplit_once('/') {
        Some((case, tail))
            if tail.len() > 1
                && tail.starts_with('r')
                && tail[1..].bytes().all(|b| b.is_ascii_digit()) =>
        {
            case
        }
        _ => dialogue_id,
    }
}

/// What happened in a turn, for counting.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Valid,
    FormatError,
    /// Not scored (infrastructure error, or no judge answered).
    Infra,
}

/// One turn as the aggregation sees it.
#[derive(Debug, Clone)]
struct TurnFact<'r> {
    record: &'r TurnRecord,
    kind: Kind,
    /// The scores (possibly recomputed for a variant); `None` for `Kind::Infra` and for a format
    /// error no judge answered.
    scores: Option<TurnScores>,
    /// The dialogue's last scored turn.
    is_final: bool,
    /// Its observation of each metric (see [`TurnFact::observe`]).
    observed: [Option<f64>; METRICS],
}

impl<'r> TurnFact<'r> {
    fn new(record: &'r TurnRecord, is_final: bool) -> TurnFact<'r> {
        let kind = kind(record);
        let mut fact = TurnFact {
            record,
            kind,
            scores: record.scores.filter(|_| kind != Kind::Infra),
            is_final,
            observed: [None; METRICS],
        };
        fact.observe();
        fact
    }

    /// Records the turn's observation of each metric, in the order [`group_stats`] unpacks
    /// them (`None` where the turn does not count for a metric).
    fn observe(&mut self) {
        // The agent's format error is known from its answer alone, judged or not.
        let format_error = match &self.record.outcome {
            ServiceOutcome::FormatError { .. } => Some(100.0),
            ServiceOutcome::Valid { .. } => Some(0.0),
            ServiceOutcome::InfraError { .. } => None,
        };
        let Some(s) = self.scores else {
            self.observed = [None; METRICS];
            self.observed[FORMAT_ERROR] = format_error;
            return;
        };
        let chat_length = match &self.record.outcome {
            ServiceOutcome::Valid { turn } => Some(turn.chat.chars().count() as f64),
            _ => None,
        };
        let dims: Vec<[f64; 5]> = answered_chat_scores(self.record)
            .iter()
            .map(chat_dimensions)
            .collect();
        let dim = |k: usize| mean(&dims.iter().map(|d| d[k]).collect::<Vec<_>>());
        self.observed = [
            Some(s.overall),
            Some(s.logic),
            Some(s.chat),
            Some(100.0 * s.acc_cls),
            Some(100.0 * s.sim_path),
            Some(100.0 * s.acc_action),
            Some(100.0 * (s.acc_cls - s.acc_action)),
            format_error,
            chat_length,
            dim(0),
            dim(1),
            dim(2),
            dim(3),
            dim(4),
        ];
    }
}

/// One dialogue as the aggregation sees it.
#[derive(Debug, Clone)]
struct Dialogue<'r> {
    record: &'r DialogueRecord,
    turns: Vec<TurnFact<'r>>,
}

impl<'r> Dialogue<'r> {
    fn new(record: &'r DialogueRecord) -> Dialogue<'r> {
        let last_scored = record
            .turns
            .iter()
            .rposition(|t| kind(t) != Kind::Infra && t.scores.is_some());
        let turns = record
            .turns
            .iter()
            .enumerate()
            .map(|(i, t)| TurnFact::new(t, Some(i) == last_scored))
            .collect();
        Dialogue { record, turns }
    }

    fn job(&self) -> &'r DialogueJob {
        &self.record.job
    }

    fn calls(&self) -> impl Iterator<Item = &'r CallRecord> {
        (self.record.turns.iter().flat_map(|t| &t.calls)).chain(&self.record.closing_calls)
    }

    /// The released code's path variant: Sim_path replaced by the prefix score, Logic and
    /// Overall recomputed.
    fn with_prefix_path(&self) -> Dialogue<'r> {
        let mut d = self.clone();
        for f in &mut d.turns {
            if let Some(s) = &mut f.scores {
                s.sim_path = s.sim_path_prefix;
                s.logic = logic(s.acc_cls, s.sim_path, s.acc_action);
                s.overall = overall(s.logic, s.chat);
            }
            f.observe();
        }
        d
    }

    /// Means of the scored turns' (overall, logic, chat); `None` without a scored turn.
    fn mean_scores(&self) -> Option<[f64; 3]> {
        let scores: Vec<TurnScores> = self.turns.iter().filter_map(|f| f.scores).collect();
        let of = |get: fn(&TurnScores) -> f64| mean(&scores.iter().map(get).collect::<Vec<_>>());
        Some([of(|s| s.overall)?, of(|s| s.logic)?, of(|s| s.chat)?])
    }
}

/// A format error is one whether or not a judge answered (the parse needs no judge); a valid
/// answer no judge scored is not counted as a turn (its scores are unknown).
fn kind(t: &TurnRecord) -> Kind {
    match (&t.outcome, t.scores) {
        (ServiceOutcome::FormatError { .. }, _) => Kind::FormatError,
        (ServiceOutcome::Valid { .. }, Some(_)) => Kind::Valid,
        (ServiceOutcome::InfraError { .. }, _) | (ServiceOutcome::Valid { .. }, None) => {
            Kind::Infra
        }
    }
}

/// Metrics observed per turn.
const METRICS: usize = 14;
/// The place of the format-error observation among them.
const FORMAT_ERROR: usize = 7;

/// The statistics of the turns `select` picks from `dialogues`; `label` names the group's
/// bootstrap stream.
fn group_stats(
    dialogues: &[&Dialogue],
    select: impl Fn(&TurnFact) -> bool,
    bootstrap: &Bootstrap,
    label: &str,
) -> GroupStats {
    let mut clusters: Vec<ClusterSums<METRICS>> = Vec::new();
    let (mut valid, mut format_errors, mut infra) = (0, 0, 0);
    for d in dialogues {
        let selected: Vec<&TurnFact> = d.turns.iter().filter(|f| select(f)).collect();
        if selected.is_empty() {
            continue;
        }
        let mut sums = [(0.0, 0.0); METRICS];
        for f in selected {
            match f.kind {
                Kind::Valid => valid += 1,
                Kind::FormatError => format_errors += 1,
                Kind::Infra => infra += 1,
            }
            for ((sum, count), x) in sums.iter_mut().zip(f.observed) {
                if let Some(x) = x {
                    *sum += x;
                    *count += 1.0;
                }
            }
        }
        clusters.push(sums);
    }
    let [
        overall,
        logic,
        chat,
        acc_cls,
        sim_path,
        acc_action,
        execution_gap,
        format_error_rate,
        chat_length,
        linguistic_quality,
        anthropomorphism_emotion,
        content_utility,
        user_satisfaction,
        instruction_compliance,
    ] = bootstrap.metrics(&clusters, label);
    GroupStats {
        dialogues: clusters.len(),
        turns: valid + format_errors,
        valid_turns: valid,
        format_error_turns: format_errors,
        infra_error_turns: infra,
        overall,
        logic,
        chat,
        acc_cls,
        sim_path,
        acc_action,
        execution_gap,
        format_error_rate,
        chat_length,
        chat_dimensions: ChatDimensions {
            linguistic_quality,
            anthropomorphism_emotion,
            content_utility,
            user_satisfaction,
            instruction_compliance,
        },
    }
}

fn model_summary(model: &str, ds: &[&Dialogue], bootstrap: &Bootstrap) -> ModelSummary {
    let stats = |ds: &[&Dialogue], select: &dyn Fn(&TurnFact) -> bool, group: &str| {
        group_stats(ds, select, bootstrap, &format!("{model}|{group}"))
    };
    let every = |_: &TurnFact| true;
    let at_depth = |f: &TurnFact| TURN_DEPTHS.contains(&f.record.turn);
    let no_format_error = |f: &TurnFact| f.kind != Kind::FormatError;
    // Breakdowns without dialogues are left out.
    let present = |(k, g): (String, GroupStats)| (g.dialogues > 0).then_some((k, g));

    let scenarios: BTreeSet<&str> = ds.iter().map(|d| d.job().scenario.as_str()).collect();
    // The stats of the dialogues whose job matches, labelled `kind|key`.
    let group = |kind: &str, key: String, matches: &dyn Fn(&DialogueJob) -> bool| {
        let of: Vec<&Dialogue> = ds.iter().copied().filter(|d| matches(d.job())).collect();
        let label = format!("{kind}|{key}");
        (key, stats(&of, &every, &label))
    };
    let by_scenario = scenarios
        .into_iter()
        .map(|sc| group("scenario", sc.to_string(), &|j| j.scenario == sc))
        .filter_map(present)
        .collect();
    let by_adversarial = [Adversarial::Zero, Adversarial::Weak, Adversarial::Strong]
        .into_iter()
        .map(|level| {
            group("adversarial", level.to_string(), &|j| {
                j.adversarial == level
            })
        })
        .filter_map(present)
        .collect();
    let by_turn = TURN_DEPTHS
        .iter()
        .map(|&k| {
            let key = format!("t{k}");
            let g = stats(
                ds,
                &|f: &TurnFact| f.record.turn == k,
                &format!("turn|{key}"),
            );
            (key, g)
        })
        .chain([(
            "final".to_string(),
            stats(ds, &|f: &TurnFact| f.is_final, "turn|final"),
        )])
        .filter_map(present)
        .collect();

    let prefixed: Vec<Dialogue> = ds.iter().map(|d| d.with_prefix_path()).collect();
    let prefixed: Vec<&Dialogue> = prefixed.iter().collect();
    let released = [
        (
            RELEASED_DROP_FORMAT_ERRORS,
            stats(ds, &no_format_error, RELEASED_DROP_FORMAT_ERRORS),
        ),
        (
            RELEASED_PREFIX_PATH,
            stats(&prefixed, &every, RELEASED_PREFIX_PATH),
        ),
        (
            RELEASED_BOTH,
            stats(&prefixed, &no_format_error, RELEASED_BOTH),
        ),
    ]
    .into_iter()
    .map(|(k, g)| (k.to_string(), g))
    .collect();

    let end_reasons: IndexMap<String, usize> = DialogueEnd::ALL
        .into_iter()
        .map(|end| {
            let n = ds.iter().filter(|d| d.record.end == end).count();
            (end.name().to_string(), n)
        })
        .collect();

    ModelSummary {
        model: model.to_string(),
        simulated: ds.iter().any(|d| d.record.simulated),
        dialogues: ds.len(),
        all: stats(ds, &every, "all"),
        turn_level: stats(ds, &|f: &TurnFact| at_depth(f) || f.is_final, "turn_level"),
        by_scenario,
        by_adversarial,
        by_turn,
        released,
        ended_early: end_reasons[DialogueEnd::UserEndedEarly.name()],
        end_reasons,
        calls: model_calls(ds),
        repeats: repeat_summary(ds),
    }
}

fn model_calls(ds: &[&Dialogue]) -> ModelCalls {
    let mut calls = ModelCalls {
        total: CallTotals::default(),
        by_role: ["service", "user", "judge"]
            .into_iter()
            .map(|r| (r.to_string(), CallTotals::default()))
            .collect(),
        by_model: BTreeMap::new(),
    };
    for d in ds {
        let job = d.job();
        for c in d.calls() {
            let role = if c.model == job.service_model {
                "service"
            } else if c.model == job.user_model {
                "user"
            } else if job.judge_models.contains(&c.model) {
                "judge"
            } else {
                "other"
            };
            calls.total.add(c);
            calls.by_role.entry(role.to_string()).or_default().add(c);
            calls.by_model.entry(c.model.clone()).or_default().add(c);
        }
    }
    calls
}

fn repeat_summary(ds: &[&Dialogue]) -> Option<RepeatSummary> {
    let mut cases: BTreeMap<&str, Vec<[f64; 3]>> = BTreeMap::new();
    for d in ds {
        if let Some(scores) = d.mean_scores() {
            cases
                .entry(case_key(&d.job().dialogue_id))
                .or_default()
                .push(scores);
        }
    }
    let max_repeats = cases.values().map(Vec::len).max()?;
    if max_repeats < 2 {
        return None;
    }
    let stat = |k: usize| {
        let medians: Vec<f64> = cases
            .values()
            .filter_map(|runs| median(&runs.iter().map(|r| r[k]).collect::<Vec<_>>()))
            .collect();
        CaseStat {
            mean: mean(&medians).unwrap_or_default(),
            median: median(&medians).unwrap_or_default(),
        }
    };
    Some(RepeatSummary {
        cases: cases.len(),
        max_repeats,
        overall: stat(0),
        logic: stat(1),
        chat: stat(2),
    })
}

/// Counts behind [`FieldAgreement`].
#[derive(Default)]
struct FieldCounts {
    turns: usize,
    unanimous: usize,
    truth_turns: usize,
    truth: usize,
}

/// Judge agreement over one scenario's scored turns with a consensus; `None` without any.
fn agreement(ds: &[&Dialogue]) -> Option<Agreement> {
    let mut fields: IndexMap<String, FieldCounts> = IndexMap::new();
    let (mut turns, mut unanimous_all, mut truth_all) = (0, 0, 0);
    for d in ds {
        let truth = &d.job().fields;
        for f in d.turns.iter().filter(|f| f.scores.is_some()) {
            let Some(panel) = &f.record.judges else {
                continue;
            };
            let Some(consensus) = &panel.consensus else {
                continue;
            };
            let judged: Vec<&BTreeMap<String, Value>> = panel
                .judgments
                .iter()
                .filter_map(|j| j.as_ref().ok().map(|j| &j.classification))
                .collect();
            let Some(first) = judged.first() else {
                continue;
            };
            let names: IndexSet<&String> = truth
                .keys()
                .chain(consensus.keys())
                .chain(judged.iter().flat_map(|j| j.keys()))
                .collect();
            turns += 1;
            let (mut all_agree, mut all_true) = (true, true);
            for name in names {
                let counts = fields.entry(name.clone()).or_default();
                let agree = judged.iter().all(|j| match (first.get(name), j.get(name)) {
                    (Some(a), Some(b)) => values_equal(a, b),
                    _ => false,
                });
                counts.turns += 1;
                counts.unanimous += usize::from(agree);
                all_agree &= agree;
                if let Some(t) = truth.get(name) {
                    let right = consensus.get(name).is_some_and(|c| values_equal(c, t));
                    counts.truth_turns += 1;
                    counts.truth += usize::from(right);
                    all_true &= right;
                }
            }
            unanimous_all += usize::from(all_agree);
            truth_all += usize::from(all_true);
        }
    }
    if turns == 0 {
        return None;
    }
    let percent = |part: usize, whole: usize| 100.0 * part as f64 / whole as f64;
    let (truth, truth_turns) = fields
        .values()
        .fold((0, 0), |(t, n), c| (t + c.truth, n + c.truth_turns));
    Some(Agreement {
        turns,
        unanimous_all_fields: percent(unanimous_all, turns),
        truth_all_fields: (truth_turns > 0).then(|| percent(truth_all, turns)),
        truth_mean_over_fields: (truth_turns > 0).then(|| percent(truth, truth_turns)),
        fields: fields
            .into_iter()
            .map(|(name, c)| {
                let field = FieldAgreement {
                    unanimous: percent(c.unanimous, c.turns),
                    matches_truth: (c.truth_turns > 0).then(|| percent(c.truth, c.truth_turns)),
                };
                (name, field)
            })
            .collect(),
    })
}
