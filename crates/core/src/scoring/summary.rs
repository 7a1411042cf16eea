//! Aggregation of dialogue records into the run's summary (summary.json): breakdowns by model,
//! scenario, adversarial level and turn depth, the released code's variants, judge agreement,
//! repeats, route coverage, tokens and cost. Every mean carries a cluster-bootstrap interval.
//!
//! The records are folded one at a time ([`SummaryFold`]) into accumulators that do not grow
//! with the records (but for one small entry per case when cases are repeated): sums in exact
//! fixed-point arithmetic, and a Poisson bootstrap whose weights each dialogue draws from its
//! own id, so the summary depends only on the set of records and the seed, never on their order
//! or on the process that folded them.

use super::stats::{Bootstrap, Cluster, Metric, Money, RatioFold, mean, median, poisson_weights};
use super::turn::{answered_chat_scores, chat_dimensions, logic, overall, values_equal};
use crate::protocol::{
    CallRecord, DialogueEnd, DialogueJob, DialogueRecord, JudgeTurns, ServiceOutcome, TurnRecord,
    TurnScores,
};
use crate::scenario::{Adversarial, Value};
use crate::sop::Route;
use indexmap::IndexMap;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The turn depths broken out (besides each dialogue's final turn), as in the paper's Table 2.
pub const TURN_DEPTHS: [u32; 4] = crate::protocol::PAPER_JUDGED_TURNS;

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
    /// Which turns the judges scored (`paper`, `every` or the list), as the dialogues' jobs
    /// say: every score and breakdown is over judged turns only. `null` when the dialogues were
    /// judged on different turns (or there are none).
    #[serde(default)]
    pub judged_turns: Option<JudgeTurns>,
    /// The run's cost budgets and what was spent against them (see
    /// [`super::budget::BudgetSummary`]); absent when the run has no budget.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub budget: Option<super::budget::BudgetSummary>,
}

/// Everything about one service model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ModelSummary {
    /// The model's name.
    pub model: String,
    /// Whether it is a built-in simulated backend.
    pub simulated: bool,
    /// The structured-output form it was asked with as the agent under test, when its
    /// configuration sets one that sends a schema (labelled "structured"); absent otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub structured_output: Option<crate::plan::model::StructuredOutput>,
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
    /// pass^k for k = 1, 2, ... (tau2-bench's estimator, see [`PassK`]); present only when the
    /// run repeats its cases (left out of summary.json otherwise).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pass_k: Vec<PassK>,
    /// The smallest difference in OA between this run and an independent rerun of the same
    /// design (another seed: other cases drawn the same way, other noise) that the run could
    /// tell from noise: half the width of the 95% bootstrap interval of that difference, from
    /// the run's own replicates (see [`RatioFold::rerun_half_width`]), in OA points.
    /// docs/metrics-scoring.md, "Noise floor". `null` without a scored turn or resamples.
    #[serde(default)]
    pub noise_floor: Option<f64>,
}

/// pass^k of one model for one k: the chance that all of k repeats of a case, drawn without
/// replacement from its n repeats, pass (reach the target action, [`reached_target`]),
/// averaged over the cases: the mean over cases of C(c, k) / C(n, k), with c passes of n
/// (tau2-bench's unbiased estimator). pass^1 is the plain pass rate.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct PassK {
    /// k.
    pub k: u32,
    /// pass^k, %.
    pub pass: f64,
    /// Cases counted: those that ran at least k times.
    pub cases: usize,
}

/// The statistics of one group of turns.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GroupStats {
    /// Dialogues with at least one turn in the group.
    pub dialogues: usize,
    /// Scored turns: the turns every score mean (OA, Logic, Chat, ...) averages over, each
    /// metric's `n`: a valid answer the judges scored, or a format error on a judged turn
    /// (scored with Logic 0). A turn not judged (`judge_turns`) is not a scored turn, whatever
    /// the agent answered.
    pub turns: usize,
    /// Scored turns with a valid answer.
    pub valid_turns: usize,
    /// Turns whose answer did not parse, judged or not: the numerator of the format-error rate.
    /// Those on judged turns are scored turns (Logic 0); the others are not.
    pub format_error_turns: usize,
    /// Turns not scored for infrastructure reasons: the agent unreachable, or a valid answer no
    /// judge (or the rule engine) answered for.
    pub infra_error_turns: usize,
    /// Valid answers on turns the judges were not asked about (`judge_turns`): counted in the
    /// format-error rate (as answers that parsed), with no scores; not in `turns`.
    #[serde(default)]
    pub unjudged_turns: usize,
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
    /// Format-error turns over the turns the agent answered (judged or not), %.
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
    /// Of the prompt tokens, those read from the provider's prompt cache (priced at the cached
    /// rate); left out of summary.json when 0.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub cached_input_tokens: u64,
    /// Completion tokens.
    pub output_tokens: u64,
    /// Cost in US dollars.
    pub cost_usd: f64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// The tokens and money one scored turn took, on average: a role's totals over the scored
/// turns ([`GroupStats::turns`]) of the model's dialogues. Turns not judged
/// (`judge_turns`) are not scored turns, yet the calls they made are counted: this is what a
/// scored turn costs as the run was configured.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct TurnCost {
    /// Prompt tokens per scored turn.
    pub input_tokens: f64,
    /// Completion tokens per scored turn.
    pub output_tokens: f64,
    /// US dollars per scored turn.
    pub cost_usd: f64,
}

impl TurnCost {
    fn of(totals: &CallTotals, turns: usize) -> TurnCost {
        let per = |x: f64| round4(x / turns as f64);
        TurnCost {
            input_tokens: per(totals.input_tokens as f64),
            output_tokens: per(totals.output_tokens as f64),
            cost_usd: totals.cost_usd / turns as f64,
        }
    }
}

/// Rounded to 4 decimals (token means: no float noise in summary.json).
fn round4(x: f64) -> f64 {
    (x * 1e4).round() / 1e4
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
    /// Scored turns of the model's dialogues (`all.turns`, see [`GroupStats::turns`]): the
    /// denominator of `per_scored_turn`.
    #[serde(default)]
    pub scored_turns: usize,
    /// Tokens and cost per scored turn, for every call (`all`) and per role as in `by_role`;
    /// empty without a scored turn.
    #[serde(default)]
    pub per_scored_turn: IndexMap<String, TurnCost>,
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

/// Summarizes dialogue records (a [`SummaryFold`] over them): the same summary whatever their
/// order.
pub fn summarize(records: &[DialogueRecord], bootstrap: &Bootstrap) -> Summary {
    let repeats = records
        .iter()
        .map(|r| r.job.repeat.saturating_add(1))
        .max()
        .unwrap_or(1);
    let mut fold = SummaryFold::new(*bootstrap, repeats);
    for r in records {
        fold.add(r);
    }
    fold.summary()
}

/// Whether a dialogue reached its target action: it did not end on an infrastructure error and
/// the agent's last valid answer took the job's target action (the rule that ends a dialogue
/// `resolved` when the customer leaves).
pub fn reached_target(record: &DialogueRecord) -> bool {
    record.end != DialogueEnd::InfraError
        && record
            .turns
            .iter()
            .rev()
            .find_map(|t| match &t.outcome {
                ServiceOutcome::Valid { turn } => Some(turn.action.as_str()),
                _ => None,
            })
            .is_some_and(|action| action == record.job.target.action)
}

/// C(c, k) / C(n, k): the chance that k draws without replacement from n repeats, c of which
/// pass, all pass (0 when k > c; `None` when k is 0 or above n).
pub fn pass_hat(c: u32, n: u32, k: u32) -> Option<f64> {
    if k == 0 || k > n || c > n {
        return None;
    }
    Some(
        (0..k)
            .map(|i| f64::from(c.saturating_sub(i)) / f64::from(n - i))
            .product(),
    )
}

/// The scores every summary mean counts of a dialogue: the turns scored (a valid answer the
/// judges scored, or a format error), in order.
pub fn counted_scores(record: &DialogueRecord) -> impl Iterator<Item = &TurnScores> {
    record
        .turns
        .iter()
        .filter(|t| kind(t) != Kind::Infra)
        .filter_map(|t| t.scores.as_ref())
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
    /// A valid answer on a turn the judges were not asked about.
    Unjudged,
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
    /// Its observations (see [`TurnFact::observe`]), as a cluster of this turn alone.
    observed: Cluster<METRICS, COLUMNS>,
}

impl<'r> TurnFact<'r> {
    fn new(record: &'r TurnRecord, is_final: bool) -> TurnFact<'r> {
        let kind = kind(record);
        let mut fact = TurnFact {
            record,
            kind,
            scores: record.scores.filter(|_| kind != Kind::Infra),
            is_final,
            observed: Cluster::new(),
        };
        fact.observe();
        fact
    }

    /// Records the turn's observation of each metric, in the order [`GroupFold::stats`]
    /// unpacks them (`None` where the turn does not count for a metric).
    fn observe(&mut self) {
        // The agent's format error is known from its answer alone, judged or not.
        let format_error = match &self.record.outcome {
            ServiceOutcome::FormatError { .. } => Some(100.0),
            ServiceOutcome::Valid { .. } => Some(0.0),
            ServiceOutcome::InfraError { .. } => None,
        };
        let Some(s) = self.scores else {
            let mut observed = [None; METRICS];
            observed[FORMAT_ERROR] = format_error;
            self.observed = observations(&observed);
            return;
        };
        let chat_length = match &self.record.outcome {
            ServiceOutcome::Valid { turn } => Some(turn.chat.chars().count() as f64),
            _ => None,
        };
        // Each chat dimension's mean over the judges that answered (summed in their order).
        let (mut sums, mut judges) = ([0.0; 5], 0usize);
        for chat in answered_chat_scores(self.record) {
            for (sum, x) in sums.iter_mut().zip(chat_dimensions(chat)) {
                *sum += x;
            }
            judges += 1;
        }
        let dim = |k: usize| (judges > 0).then(|| sums[k] / judges as f64);
        self.observed = observations(&[
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
        ]);
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

    /// The released code's path variant of each turn whose scores it changes (Sim_path
    /// replaced by the prefix score, Logic and Overall recomputed): the turn's index and its
    /// facts as the variant sees them.
    fn prefix_path_changes(&self) -> Vec<(usize, TurnFact<'r>)> {
        let mut out = Vec::new();
        for (i, f) in self.turns.iter().enumerate() {
            let Some(s) = f.scores else { continue };
            let mut variant = s;
            variant.sim_path = s.sim_path_prefix;
            variant.logic = logic(variant.acc_cls, variant.sim_path, variant.acc_action);
            variant.overall = overall(variant.logic, variant.chat);
            if variant != s {
                let mut fact = f.clone();
                fact.scores = Some(variant);
                fact.observe();
                out.push((i, fact));
            }
        }
        out
    }

    /// Means of the scored turns' (overall, logic, chat); `None` without a scored turn.
    fn mean_scores(&self) -> Option<[f64; 3]> {
        let scores: Vec<TurnScores> = self.turns.iter().filter_map(|f| f.scores).collect();
        let of = |get: fn(&TurnScores) -> f64| mean(&scores.iter().map(get).collect::<Vec<_>>());
        Some([of(|s| s.overall)?, of(|s| s.logic)?, of(|s| s.chat)?])
    }
}

/// A format error is one whether or not a judge answered (the parse needs no judge); a valid
/// answer no judge scored is not counted as a turn (its scores are unknown), nor is a valid
/// answer on a turn not judged.
fn kind(t: &TurnRecord) -> Kind {
    match (&t.outcome, t.scores) {
        (ServiceOutcome::FormatError { .. }, _) => Kind::FormatError,
        (ServiceOutcome::Valid { .. }, Some(_)) => Kind::Valid,
        (ServiceOutcome::Valid { .. }, None) if t.judges.is_none() && t.infra_error.is_none() => {
            Kind::Unjudged
        }
        (ServiceOutcome::InfraError { .. }, _) | (ServiceOutcome::Valid { .. }, None) => {
            Kind::Infra
        }
    }
}

/// Metrics observed per turn.
const METRICS: usize = 14;
/// The place of the Overall observation among them.
const OVERALL: usize = 0;
/// The place of the format-error observation among them.
const FORMAT_ERROR: usize = 7;

/// The denominator column of each metric: the turns observing it (scored turns; turns the agent
/// answered; valid scored turns; scored turns with a judge's chat scores).
const DENOMINATORS: [usize; METRICS] = [0, 0, 0, 0, 0, 0, 0, 1, 2, 3, 3, 3, 3, 3];
/// Denominator columns.
const COLUMNS: usize = 4;

/// The accumulators of one group of turns (a model's turns at depth 5, in one scenario, ...).
#[derive(Debug, Clone)]
struct GroupFold {
    dialogues: usize,
    turns: TurnCounts,
    means: RatioFold<METRICS, COLUMNS>,
}

/// Turns of a group by what happened in them.
#[derive(Debug, Clone, Copy, Default)]
struct TurnCounts {
    /// Turns with scores (see [`GroupStats::turns`]).
    scored: i64,
    valid: i64,
    format_errors: i64,
    infra: i64,
    unjudged: i64,
}

impl TurnCounts {
    fn combine(&mut self, other: &TurnCounts, sign: i64) {
        self.scored += sign * other.scored;
        self.valid += sign * other.valid;
        self.format_errors += sign * other.format_errors;
        self.infra += sign * other.infra;
        self.unjudged += sign * other.unjudged;
    }
}

impl Default for GroupFold {
    fn default() -> Self {
        GroupFold {
            dialogues: 0,
            turns: TurnCounts::default(),
            means: RatioFold::new(DENOMINATORS),
        }
    }
}

/// The turns of `d` that `select` picks, as one cluster of observations and their counts;
/// `None` when it picks none.
fn gather(
    d: &Dialogue,
    select: impl Fn(&TurnFact) -> bool,
) -> Option<(Cluster<METRICS, COLUMNS>, TurnCounts)> {
    let mut cluster = Cluster::<METRICS, COLUMNS>::new();
    let mut counts = TurnCounts::default();
    let mut any = false;
    for f in d.turns.iter().filter(|f| select(f)) {
        any = true;
        counts.scored += i64::from(f.scores.is_some());
        match f.kind {
            Kind::Valid => counts.valid += 1,
            Kind::FormatError => counts.format_errors += 1,
            Kind::Infra => counts.infra += 1,
            Kind::Unjudged => counts.unjudged += 1,
        }
        cluster.plus(&f.observed);
    }
    any.then_some((cluster, counts))
}

/// A turn's observation of each metric (`None` where it does not count for one), in the order
/// [`GroupFold::stats`] unpacks them, as a cluster of that turn alone.
fn observations(observed: &[Option<f64>; METRICS]) -> Cluster<METRICS, COLUMNS> {
    let mut cluster = Cluster::new();
    for (m, x) in observed.iter().enumerate() {
        cluster.observe(m, *x);
    }
    for (column, first) in [(0, 0), (1, FORMAT_ERROR), (2, 8), (3, 9)] {
        if observed[first].is_some() {
            cluster.count(column);
        }
    }
    cluster
}

impl GroupFold {
    /// Adds the turns of `d` that `select` picks (nothing when it picks none); whether it
    /// picked any.
    fn add(&mut self, d: &Dialogue, select: impl Fn(&TurnFact) -> bool, weights: &[u8]) -> bool {
        let Some((cluster, counts)) = gather(d, select) else {
            return false;
        };
        self.dialogues += 1;
        self.turns.combine(&counts, 1);
        self.means.add(&cluster, weights);
        true
    }

    /// The fold of both groups' dialogues (disjoint groups).
    fn plus(&self, other: &GroupFold) -> GroupFold {
        let mut out = self.clone();
        out.dialogues += other.dialogues;
        out.turns.combine(&other.turns, 1);
        out.means.plus(&other.means);
        out
    }

    /// This group without the turns of `part` (turns of its dialogues), counting `dialogues`.
    fn without(&self, part: &GroupFold, dialogues: usize) -> GroupFold {
        let mut out = self.clone();
        out.dialogues = dialogues;
        out.turns.combine(&part.turns, -1);
        out.means.minus(&part.means);
        out
    }

    /// The sum of `groups` (disjoint).
    fn sum<'g>(groups: impl IntoIterator<Item = &'g GroupFold>) -> GroupFold {
        groups
            .into_iter()
            .fold(GroupFold::default(), |acc, g| acc.plus(g))
    }

    fn stats(&self, bootstrap: &Bootstrap) -> GroupStats {
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
        ] = self.means.metrics(bootstrap);
        let count = |n: i64| usize::try_from(n).unwrap_or(0);
        GroupStats {
            dialogues: self.dialogues,
            turns: count(self.turns.scored),
            valid_turns: count(self.turns.valid),
            format_error_turns: count(self.turns.format_errors),
            infra_error_turns: count(self.turns.infra),
            unjudged_turns: count(self.turns.unjudged),
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
}

/// Token and cost sums of a set of calls (the cost held exactly).
#[derive(Debug, Clone, Copy, Default)]
struct CallSums {
    calls: u64,
    errors: u64,
    cached: u64,
    input_tokens: u64,
    cached_input_tokens: u64,
    output_tokens: u64,
    cost: Money,
}

impl CallSums {
    fn add(&mut self, c: &CallRecord) {
        self.calls += 1;
        self.errors += u64::from(c.error.is_some());
        self.cached += u64::from(c.cached);
        self.input_tokens = self.input_tokens.saturating_add(c.usage.input_tokens);
        self.cached_input_tokens = self
            .cached_input_tokens
            .saturating_add(c.usage.cached_input_tokens);
        self.output_tokens = self.output_tokens.saturating_add(c.usage.output_tokens);
        self.cost.add(c.cost_usd);
    }

    fn totals(&self) -> CallTotals {
        CallTotals {
            calls: self.calls,
            errors: self.errors,
            cached: self.cached,
            input_tokens: self.input_tokens,
            cached_input_tokens: self.cached_input_tokens,
            output_tokens: self.output_tokens,
            cost_usd: self.cost.usd(),
        }
    }
}

/// The roles of [`ModelCalls::by_role`], in their order.
const ROLES: [&str; 4] = ["service", "user", "judge", "other"];
/// The adversarial levels, in their order.
const LEVELS: [Adversarial; 3] = [Adversarial::Zero, Adversarial::Weak, Adversarial::Strong];

/// Everything folded about one model under test. Each dialogue is folded into as few groups
/// as its breakdowns need; the summary's other groups are sums and differences of these
/// (exact: see [`RatioFold::plus`]), which spares the run most of the bootstrap's work.
#[derive(Debug, Clone, Default)]
struct ModelFold {
    simulated: bool,
    structured_output: Option<crate::plan::model::StructuredOutput>,
    dialogues: usize,
    /// Every turn, per scenario (the model's `all` is their sum).
    by_scenario: BTreeMap<String, GroupFold>,
    by_adversarial: [GroupFold; 3],
    /// The turns at `t1`, `t5`, `t10`, `t15`.
    by_depth: [GroupFold; 4],
    /// The final turn when it is at none of those depths, and when it is at one.
    final_off: GroupFold,
    final_on: GroupFold,
    /// Dialogues with a turn at one of the depths or a final turn (the turn-level group's).
    turn_level_dialogues: usize,
    /// The format-error turns (the released code's drop-format-errors variant is every turn
    /// but these).
    format_error_turns: GroupFold,
    /// Dialogues with a turn that is not a format error.
    kept_dialogues: usize,
    /// The released code's prefix-path scores less the paper's, over the turns that are not
    /// format errors and over those that are (a dialogue whose paths score the same adds
    /// nothing; format errors seldom change).
    prefix_change: [RatioFold<METRICS, COLUMNS>; 2],
    end_reasons: [usize; 4],
    calls_total: CallSums,
    calls_by_role: [CallSums; 4],
    calls_by_model: BTreeMap<String, CallSums>,
    /// Per case, when repeats are tracked.
    cases: BTreeMap<String, CaseFold>,
}

impl Default for RatioFold<METRICS, COLUMNS> {
    fn default() -> Self {
        RatioFold::new(DENOMINATORS)
    }
}

/// What is kept of one case (its repeats) of one model.
#[derive(Debug, Clone, Default)]
struct CaseFold {
    /// Each scored repeat's mean (overall, logic, chat).
    scores: Vec<[f64; 3]>,
    /// Repeats folded.
    runs: u32,
    /// Repeats that reached the target action.
    passes: u32,
}

impl ModelFold {
    fn add(&mut self, d: &Dialogue, weights: &[u8], track_repeats: bool) {
        let job = d.job();
        self.simulated |= d.record.simulated;
        self.structured_output = self.structured_output.or(d.record.structured_output);
        self.dialogues += 1;
        let every = |_: &TurnFact| true;
        let no_format_error = |f: &TurnFact| f.kind != Kind::FormatError;
        slot(&mut self.by_scenario, &job.scenario).add(d, every, weights);
        if let Some(i) = LEVELS.iter().position(|l| *l == job.adversarial) {
            self.by_adversarial[i].add(d, every, weights);
        }
        let mut turn_level = false;
        for (i, depth) in TURN_DEPTHS.iter().enumerate() {
            turn_level |= self.by_depth[i].add(d, |f| f.record.turn == *depth, weights);
        }
        let at_depth = |f: &TurnFact| TURN_DEPTHS.contains(&f.record.turn);
        turn_level |= self
            .final_off
            .add(d, |f| f.is_final && !at_depth(f), weights);
        self.final_on.add(d, |f| f.is_final && at_depth(f), weights);
        self.turn_level_dialogues += usize::from(turn_level);
        self.format_error_turns
            .add(d, |f| f.kind == Kind::FormatError, weights);
        self.kept_dialogues += usize::from(d.turns.iter().any(no_format_error));
        // A cluster is the sum of its turns' observations: the variant's change is the sum of
        // the changed turns' changes.
        let changes = d.prefix_path_changes();
        if !changes.is_empty() {
            let format_error = |f: &TurnFact| f.kind == Kind::FormatError;
            let selections: [&dyn Fn(&TurnFact) -> bool; 2] = [&no_format_error, &format_error];
            for (fold, select) in self.prefix_change.iter_mut().zip(selections) {
                let mut change = Cluster::new();
                for (i, variant) in changes.iter().filter(|(_, f)| select(f)) {
                    change.plus(&variant.observed);
                    change.minus(&d.turns[*i].observed);
                }
                fold.add(&change, weights);
            }
        }
        if let Some(i) = DialogueEnd::ALL.iter().position(|e| *e == d.record.end) {
            self.end_reasons[i] += 1;
        }
        for c in d.calls() {
            let role = if c.model == job.service_model {
                0
            } else if c.model == job.user_model {
                1
            } else if job.judge_models.contains(&c.model) {
                2
            } else {
                3
            };
            self.calls_total.add(c);
            self.calls_by_role[role].add(c);
            slot(&mut self.calls_by_model, &c.model).add(c);
        }
        if track_repeats {
            let case = self
                .cases
                .entry(case_key(&job.dialogue_id).to_string())
                .or_default();
            case.runs += 1;
            case.passes += u32::from(reached_target(d.record));
            if let Some(scores) = d.mean_scores() {
                case.scores.push(scores);
            }
        }
    }

    fn summary(&self, model: &str, bootstrap: &Bootstrap) -> ModelSummary {
        // Breakdowns without dialogues are left out.
        let present =
            |key: String, g: &GroupFold| (g.dialogues > 0).then(|| (key, g.stats(bootstrap)));
        let end_reasons: IndexMap<String, usize> = DialogueEnd::ALL
            .iter()
            .zip(self.end_reasons)
            .map(|(end, n)| (end.name().to_string(), n))
            .collect();
        let by_role: IndexMap<String, CallTotals> = ROLES
            .iter()
            .zip(&self.calls_by_role)
            .filter(|(role, sums)| **role != "other" || sums.calls > 0)
            .map(|(role, sums)| (role.to_string(), sums.totals()))
            .collect();
        let all = GroupFold::sum(self.by_scenario.values());
        let turn_level = GroupFold {
            dialogues: self.turn_level_dialogues,
            ..GroupFold::sum(self.by_depth.iter().chain([&self.final_off]))
        };
        let by_turn: Vec<GroupFold> = self
            .by_depth
            .iter()
            .cloned()
            .chain([self.final_off.plus(&self.final_on)])
            .collect();
        let kept = all.without(&self.format_error_turns, self.kept_dialogues);
        let [kept_change, format_error_change] = &self.prefix_change;
        let mut prefix_path = all.clone();
        prefix_path.means.plus(kept_change);
        prefix_path.means.plus(format_error_change);
        let mut both = kept.clone();
        both.means.plus(kept_change);
        let released = [kept, prefix_path, both];
        let scored_turns = usize::try_from(all.turns.scored).unwrap_or(0);
        ModelSummary {
            model: model.to_string(),
            simulated: self.simulated,
            structured_output: self.structured_output,
            dialogues: self.dialogues,
            all: all.stats(bootstrap),
            turn_level: turn_level.stats(bootstrap),
            by_scenario: self
                .by_scenario
                .iter()
                .filter_map(|(sc, g)| present(sc.clone(), g))
                .collect(),
            by_adversarial: LEVELS
                .iter()
                .zip(&self.by_adversarial)
                .filter_map(|(level, g)| present(level.to_string(), g))
                .collect(),
            by_turn: TURN_DEPTHS
                .iter()
                .map(|k| format!("t{k}"))
                .chain(["final".to_string()])
                .zip(&by_turn)
                .filter_map(|(key, g)| present(key, g))
                .collect(),
            released: [
                RELEASED_DROP_FORMAT_ERRORS,
                RELEASED_PREFIX_PATH,
                RELEASED_BOTH,
            ]
            .iter()
            .zip(&released)
            .map(|(key, g)| (key.to_string(), g.stats(bootstrap)))
            .collect(),
            ended_early: end_reasons[DialogueEnd::UserEndedEarly.name()],
            end_reasons,
            calls: ModelCalls {
                total: self.calls_total.totals(),
                scored_turns,
                per_scored_turn: if scored_turns == 0 {
                    IndexMap::new()
                } else {
                    std::iter::once(("all", self.calls_total.totals()))
                        .chain(by_role.iter().map(|(r, t)| (r.as_str(), *t)))
                        .map(|(r, t)| (r.to_string(), TurnCost::of(&t, scored_turns)))
                        .collect()
                },
                by_role,
                by_model: self
                    .calls_by_model
                    .iter()
                    .map(|(m, sums)| (m.clone(), sums.totals()))
                    .collect(),
            },
            repeats: repeat_summary(&self.cases),
            pass_k: pass_k(&self.cases),
            noise_floor: all.means.rerun_half_width(OVERALL, bootstrap),
        }
    }
}

/// Per-case medians across repeats; `None` when no case ran twice.
fn repeat_summary(cases: &BTreeMap<String, CaseFold>) -> Option<RepeatSummary> {
    let max_repeats = cases.values().map(|c| c.scores.len()).max()?;
    if max_repeats < 2 {
        return None;
    }
    let stat = |k: usize| {
        // Cases in key order, so the mean is the same whatever order the runs came in.
        let medians: Vec<f64> = cases
            .values()
            .filter_map(|c| median(&c.scores.iter().map(|r| r[k]).collect::<Vec<_>>()))
            .collect();
        CaseStat {
            mean: mean(&medians).unwrap_or_default(),
            median: median(&medians).unwrap_or_default(),
        }
    };
    Some(RepeatSummary {
        cases: cases.values().filter(|c| !c.scores.is_empty()).count(),
        max_repeats,
        overall: stat(0),
        logic: stat(1),
        chat: stat(2),
    })
}

/// pass^k for k = 1 to the most repeats of a case, each over the cases that ran at least k
/// times (cases in key order, so the sum is the same whatever order the records came in);
/// empty when no case ran twice.
fn pass_k(cases: &BTreeMap<String, CaseFold>) -> Vec<PassK> {
    let most = cases.values().map(|c| c.runs).max().unwrap_or(0);
    if most < 2 {
        return Vec::new();
    }
    (1..=most)
        .map(|k| {
            let shares: Vec<f64> = cases
                .values()
                .filter_map(|c| pass_hat(c.passes, c.runs, k))
                .collect();
            PassK {
                k,
                pass: 100.0 * mean(&shares).unwrap_or_default(),
                cases: shares.len(),
            }
        })
        .collect()
}

/// Counts behind [`FieldAgreement`], and where the field first appears in a turn's list of
/// fields (the scenario's declaration order comes first: the job's ground truth lists its fields
/// in that order).
#[derive(Debug, Clone, Default)]
struct FieldCounts {
    position: usize,
    turns: usize,
    unanimous: usize,
    truth_turns: usize,
    truth: usize,
}

/// The value under `key` in `map`, made with its default when new (the key is copied only
/// then: this runs for every call of every turn).
fn slot<'a, V: Default>(map: &'a mut BTreeMap<String, V>, key: &str) -> &'a mut V {
    if !map.contains_key(key) {
        map.insert(key.to_string(), V::default());
    }
    map.get_mut(key).expect("inserted above")
}

/// Judge agreement counts of one scenario.
#[derive(Debug, Clone, Default)]
struct AgreementFold {
    turns: usize,
    unanimous_all: usize,
    truth_all: usize,
    /// Per field, in the order first seen.
    fields: Vec<(String, FieldCounts)>,
}

impl AgreementFold {
    /// Counts the scored turns of `d` that have a consensus.
    fn add(&mut self, d: &Dialogue) {
        let truth = &d.job().fields;
        // The truth's names as a judgment's map holds them (sorted).
        let mut sorted_truth: Vec<&String> = truth.keys().collect();
        sorted_truth.sort_unstable();
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
            // The field names in their first order (a handful: a list beats a hash set).
            let mut names: Vec<&String> = truth.keys().collect();
            let same_names =
                |m: &BTreeMap<String, Value>| m.keys().eq(sorted_truth.iter().copied());
            for map in std::iter::once(consensus).chain(judged.iter().copied()) {
                if same_names(map) {
                    continue;
                }
                for name in map.keys() {
                    if !names.contains(&name) {
                        names.push(name);
                    }
                }
            }
            self.turns += 1;
            let (mut all_agree, mut all_true) = (true, true);
            for (position, name) in names.into_iter().enumerate() {
                let counts = self.field(name, position);
                counts.position = counts.position.min(position);
                let agree = judged.iter().all(|j| match (first.get(name), j.get(name)) {
                    (Some(a), Some(b)) => values_equal(a, b),
                    _ => false,
                });
                counts.turns += 1;
                counts.unanimous += usize::from(agree);
                all_agree &= agree;
                // `names` begins with the truth's names, in its order.
                if let Some((_, t)) = truth.get_index(position) {
                    let right = consensus.get(name).is_some_and(|c| values_equal(c, t));
                    counts.truth_turns += 1;
                    counts.truth += usize::from(right);
                    all_true &= right;
                }
            }
            self.unanimous_all += usize::from(all_agree);
            self.truth_all += usize::from(all_true);
        }
    }

    /// The counts of field `name`, seen at `position` in a turn (made when new). A scenario's
    /// turns name the same fields in the same order: the field is looked for there first.
    fn field(&mut self, name: &str, position: usize) -> &mut FieldCounts {
        let at = match self.fields.get(position) {
            Some((known, _)) if known == name => position,
            _ => match self.fields.iter().position(|(known, _)| known == name) {
                Some(at) => at,
                None => {
                    let counts = FieldCounts {
                        position,
                        ..Default::default()
                    };
                    self.fields.push((name.to_string(), counts));
                    self.fields.len() - 1
                }
            },
        };
        &mut self.fields[at].1
    }

    /// The agreement; `None` without a counted turn.
    fn agreement(&self) -> Option<Agreement> {
        if self.turns == 0 {
            return None;
        }
        let percent = |part: usize, whole: usize| 100.0 * part as f64 / whole as f64;
        let (truth, truth_turns) =
            (self.fields.iter()).fold((0, 0), |(t, n), (_, c)| (t + c.truth, n + c.truth_turns));
        let mut fields: Vec<(&String, &FieldCounts)> =
            self.fields.iter().map(|(name, c)| (name, c)).collect();
        fields.sort_by_key(|(name, c)| (c.position, *name));
        Some(Agreement {
            turns: self.turns,
            unanimous_all_fields: percent(self.unanimous_all, self.turns),
            truth_all_fields: (truth_turns > 0).then(|| percent(self.truth_all, self.turns)),
            truth_mean_over_fields: (truth_turns > 0).then(|| percent(truth, truth_turns)),
            fields: fields
                .into_iter()
                .map(|(name, c)| {
                    let field = FieldAgreement {
                        unanimous: percent(c.unanimous, c.turns),
                        matches_truth: (c.truth_turns > 0).then(|| percent(c.truth, c.truth_turns)),
                    };
                    (name.clone(), field)
                })
                .collect(),
        })
    }
}

/// A run's summary, folded one record at a time: the embedded run, the aggregator and
/// `sage report` feed it the records as they pass, and read the [`Summary`] at any point. Its
/// memory follows the models, scenarios and groups (and, when cases are repeated, one small
/// entry per case), not the records: see [`Bootstrap`] for how intervals are drawn without
/// keeping the dialogues.
#[derive(Debug, Clone)]
pub struct SummaryFold {
    bootstrap: Bootstrap,
    track_repeats: bool,
    dialogues: usize,
    models: BTreeMap<String, ModelFold>,
    agreement: BTreeMap<String, AgreementFold>,
    coverage: BTreeMap<String, BTreeMap<String, usize>>,
    calls_by_model: BTreeMap<String, CallSums>,
    /// The distinct `judge_turns` of the dialogues folded.
    judged_turns: Vec<JudgeTurns>,
}

impl SummaryFold {
    /// An empty fold; `repeats` is the run's configured repeats (per-case medians are kept only
    /// when it is above 1).
    pub fn new(bootstrap: Bootstrap, repeats: u32) -> SummaryFold {
        SummaryFold {
            bootstrap,
            track_repeats: repeats > 1,
            dialogues: 0,
            models: BTreeMap::new(),
            agreement: BTreeMap::new(),
            coverage: BTreeMap::new(),
            calls_by_model: BTreeMap::new(),
            judged_turns: Vec::new(),
        }
    }

    /// Folds one dialogue record in.
    pub fn add(&mut self, record: &DialogueRecord) {
        let d = Dialogue::new(record);
        let job = d.job();
        let weights = poisson_weights(
            self.bootstrap.seed,
            &job.dialogue_id,
            self.bootstrap.resamples,
        );
        self.dialogues += 1;
        if !self.judged_turns.contains(&job.judge_turns) {
            self.judged_turns.push(job.judge_turns.clone());
        }
        slot(&mut self.models, &job.service_model).add(&d, &weights, self.track_repeats);
        slot(&mut self.agreement, &job.scenario).add(&d);
        *self
            .coverage
            .entry(job.scenario.clone())
            .or_default()
            .entry(route_key(&job.target))
            .or_default() += 1;
        for c in d.calls() {
            slot(&mut self.calls_by_model, &c.model).add(c);
        }
    }

    /// Dialogues folded so far.
    pub fn dialogues(&self) -> usize {
        self.dialogues
    }

    /// The summary of the records folded so far.
    pub fn summary(&self) -> Summary {
        Summary {
            bootstrap: self.bootstrap,
            dialogues: self.dialogues,
            models: self
                .models
                .iter()
                .map(|(model, fold)| fold.summary(model, &self.bootstrap))
                .collect(),
            judge_agreement: self
                .agreement
                .iter()
                .filter_map(|(sc, fold)| Some((sc.clone(), fold.agreement()?)))
                .collect(),
            coverage: self.coverage.clone(),
            calls_by_model: self
                .calls_by_model
                .iter()
                .map(|(m, sums)| (m.clone(), sums.totals()))
                .collect(),
            judged_turns: match self.judged_turns.as_slice() {
                [one] => Some(one.clone()),
                _ => None,
            },
            // Known from the run's plan, not from its records: the store adds it.
            budget: None,
        }
    }
}
