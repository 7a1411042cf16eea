//! Aggregation of dialogue records into the run's summary (summary.json): breakdowns by model,
//! scenario, adversarial level and turn depth, the released code's variants, judge agreement,
//! repeats, route coverage, tokens and cost. Every mean carries a cluster-bootstrap interval.
//!
//! The records are folded one at a time ([`SummaryFold`]) into accumulators that do not grow
//! with the records (but for one small entry per case when cases are repeated): sums in exact
//! fixed-point arithmetic, and a Poisson bootstrap whose weights each dialogue draws from its
//! own id, so the summary depends only on the set of records and the seed, never on their order
//! or on the process that folded them.
//!
//! The summary's shape (what summary.json holds) is in [`types`], re-exported here; the judges'
//! agreement counts in [`agreement`].

mod agreement;
mod types;

pub use types::*;

use agreement::{AgreementFold, slot};
pub use agreement::{ErrorCorrelation, effective_judges};

use crate::protocol::{
    CallRecord, DialogueEnd, DialogueJob, DialogueRecord, JudgeTurns, ServiceOutcome, TurnRecord,
    TurnScores,
};
use crate::scenario::Adversarial;
use crate::scoring::fidelity::DialogueFidelity;
use crate::scoring::sensitivity::SensitivityFold;
use crate::scoring::stats::{
    Bootstrap, Cluster, Money, RatioFold, mean, median, poisson_weights, ratio,
};
use crate::scoring::turn::{answered_chat_scores, chat_dimensions, logic, overall};
use crate::sop::Route;
use indexmap::IndexMap;
use std::collections::BTreeMap;

/// Summarizes dialogue records (a [`SummaryFold`] over them): the same summary whatever their
/// order.
pub fn summarize(records: &[DialogueRecord], bootstrap: &Bootstrap) -> Summary {
    let repeats = records
        .iter()
        .map(|r| r.job.repeat.saturating_add(1))
        .max()
        .unwrap_or(1);
    let simulators = records
        .iter()
        .map(|r| r.job.user_model_index as usize + 1)
        .max()
        .unwrap_or(1);
    let mut fold = SummaryFold::new(*bootstrap, repeats).with_simulators(simulators);
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
    record.turns.iter().filter_map(TurnRecord::counted_scores)
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
        self.record.calls()
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
    /// Customer fidelity per (customer model, adversarial level) and (customer, agent).
    by_customer: BTreeMap<(String, Adversarial), FidelitySums>,
    by_agent: BTreeMap<(String, String), FidelitySums>,
    /// Each model's OA under each customer simulator, in a run with several.
    sensitivity: Option<SensitivityFold>,
}

/// Customer-fidelity counts of a group of dialogues.
#[derive(Debug, Clone, Copy, Default)]
struct FidelitySums {
    dialogues: usize,
    ended_early: usize,
    off_case_dialogues: usize,
    counts: DialogueFidelity,
}

impl FidelitySums {
    fn add(&mut self, d: &DialogueFidelity) {
        self.dialogues += 1;
        self.ended_early += usize::from(d.ended_early);
        self.off_case_dialogues += usize::from(d.went_off_case());
        self.counts.off_case += d.off_case;
        self.counts.failures += d.failures;
        self.counts.failures_after_off_case += d.failures_after_off_case;
        self.counts.judged += d.judged;
        self.counts.off_intent += d.off_intent;
        self.counts.lines += d.lines;
        self.counts.repeated += d.repeated;
        self.counts.retried += d.retried;
    }

    fn figures(
        &self,
        customer_model: &str,
        adversarial: Option<Adversarial>,
        service_model: Option<&str>,
    ) -> CustomerFidelity {
        let percent = |part: usize, whole: usize| 100.0 * ratio(part, whole);
        let c = &self.counts;
        CustomerFidelity {
            customer_model: customer_model.to_string(),
            adversarial,
            service_model: service_model.map(str::to_string),
            dialogues: self.dialogues,
            judged_turns: c.judged,
            off_intent: (c.judged > 0).then(|| percent(c.off_intent, c.judged)),
            ended_early: percent(self.ended_early, self.dialogues),
            lines: c.lines,
            repeated: (c.lines > 0).then(|| percent(c.repeated, c.lines)),
            retried: c.retried,
            off_case_lines: c.off_case,
            off_case_dialogues: self.off_case_dialogues,
            failures: c.failures,
            failures_after_off_case: c.failures_after_off_case,
            possibly_simulator: (c.failures > 0)
                .then(|| percent(c.failures_after_off_case, c.failures)),
        }
    }
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
            by_customer: BTreeMap::new(),
            by_agent: BTreeMap::new(),
            sensitivity: None,
        }
    }

    /// The fold of a run that plays each case with `simulators` customer simulators
    /// (`user_models`): with more than one, the models are ranked under the first and the
    /// summary's `simulator_sensitivity` compares them.
    pub fn with_simulators(mut self, simulators: usize) -> SummaryFold {
        self.sensitivity = (simulators > 1).then(|| SensitivityFold::new(self.bootstrap));
        self
    }

    /// Folds one dialogue record in.
    pub fn add(&mut self, record: &DialogueRecord) {
        let d = Dialogue::new(record);
        let job = d.job();
        self.dialogues += 1;
        if !self.judged_turns.contains(&job.judge_turns) {
            self.judged_turns.push(job.judge_turns.clone());
        }
        // The models are ranked under the first customer simulator; the others' dialogues
        // count in the sensitivity, the judges' agreement, the calls and the fidelity.
        if job.user_model_index == 0 {
            let weights = poisson_weights(
                self.bootstrap.seed,
                &job.dialogue_id,
                self.bootstrap.resamples,
            );
            slot(&mut self.models, &job.service_model).add(&d, &weights, self.track_repeats);
            *self
                .coverage
                .entry(job.scenario.clone())
                .or_default()
                .entry(route_key(&job.target))
                .or_default() += 1;
            if let Some(sensitivity) = &mut self.sensitivity {
                sensitivity.add(record, Some(&weights));
            }
        } else if let Some(sensitivity) = &mut self.sensitivity {
            sensitivity.add(record, None);
        }
        slot(&mut self.agreement, &job.scenario).add(&d);
        for c in d.calls() {
            slot(&mut self.calls_by_model, &c.model).add(c);
        }
        let fidelity = DialogueFidelity::of(record);
        self.by_customer
            .entry((job.user_model.clone(), job.adversarial))
            .or_default()
            .add(&fidelity);
        self.by_agent
            .entry((job.user_model.clone(), job.service_model.clone()))
            .or_default()
            .add(&fidelity);
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
            // Named by the run's manifest, not its records: the store adds them.
            scenario_sha256: BTreeMap::new(),
            // Decided by the run's configuration and the records' order: the store adds it.
            adaptive: None,
            // Named by the run's manifest: the store adds it.
            simulator: None,
            simulator_sensitivity: self
                .sensitivity
                .as_ref()
                .map(SensitivityFold::summary)
                .unwrap_or_default(),
            // Decided by `sage report --exclude-off-case`: the store adds it.
            off_case_excluded: None,
            customer_fidelity: CustomerFidelitySummary {
                by_customer: (self.by_customer.iter())
                    .map(|((user, level), sums)| sums.figures(user, Some(*level), None))
                    .collect(),
                by_agent: (self.by_agent.iter())
                    .map(|((user, agent), sums)| sums.figures(user, None, Some(agent)))
                    .collect(),
            },
        }
    }
}
