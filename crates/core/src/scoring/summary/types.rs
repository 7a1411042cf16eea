//! What summary.json holds: the run's aggregates, per model, group, turn depth and judge,
//! with their intervals, calls, tokens and cost.

use crate::protocol::JudgeTurns;
use crate::scoring::stats::{Bootstrap, Metric};
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
    /// [`crate::scoring::budget::BudgetSummary`]); absent when the run has no budget.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub budget: Option<crate::scoring::budget::BudgetSummary>,
    /// The simulated customer's fidelity: per customer model and adversarial level, and per
    /// model under test (docs/judges.md, "Customer fidelity"); absent in summaries from before.
    #[serde(default, skip_serializing_if = "CustomerFidelitySummary::is_empty")]
    pub customer_fidelity: CustomerFidelitySummary,
    /// The scenario texts the run was scored against: id to the SHA-256 of its YAML, as the
    /// manifest names them (the store adds them; a rescore against a corrected scenario
    /// changes its hash, and `sage report --compare` refuses to compare across it).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub scenario_sha256: BTreeMap<String, String>,
    /// An adaptive run's standings (`sage run --adaptive`): per model whether it stopped
    /// early, after how many dialogues and why; absent in a run that is not adaptive.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub adaptive: Option<crate::scoring::adaptive::AdaptiveSummary>,
    /// Who played the customer (the run's manifest names it): a score depends on it. Absent
    /// for runs from before it was recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub simulator: Option<crate::protocol::simulator::Simulator>,
    /// In a run with several customer simulators (`user_models`), each model's OA under each
    /// and how far it moved from the first (the leaderboard ranks under the first); absent
    /// with one simulator.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub simulator_sensitivity: Vec<crate::scoring::sensitivity::SimulatorSensitivity>,
    /// With `sage report --exclude-off-case`: the dialogues left out because their customer
    /// went off-case (every figure here is without them); absent otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub off_case_excluded: Option<usize>,
}

/// The customer's fidelity, by who played the customer and how hard, and by whom it talked to.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CustomerFidelitySummary {
    /// Per customer model and adversarial level (`service_model` absent).
    pub by_customer: Vec<CustomerFidelity>,
    /// Per customer model and model under test (`adversarial` absent): a model whose low score
    /// comes with an off-intent customer shows it here.
    pub by_agent: Vec<CustomerFidelity>,
}

impl CustomerFidelitySummary {
    /// Whether there is nothing (no dialogue).
    pub fn is_empty(&self) -> bool {
        self.by_customer.is_empty() && self.by_agent.is_empty()
    }
}

/// One group's customer-fidelity figures (see [`crate::scoring::fidelity`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CustomerFidelity {
    /// The customer (user-simulator) model.
    pub customer_model: String,
    /// The adversarial level, in `by_customer`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub adversarial: Option<crate::scenario::Adversarial>,
    /// The model under test, in `by_agent`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub service_model: Option<String>,
    /// Dialogues.
    pub dialogues: usize,
    /// Turns with a panel consensus.
    pub judged_turns: usize,
    /// Percent of judged turns whose consensus differs from the case's truth on some field
    /// (the customer left its intent, or the judges misread it); none without judged turns.
    pub off_intent: Option<f64>,
    /// Percent of dialogues the customer ended before the target action.
    pub ended_early: f64,
    /// Customer lines.
    pub lines: usize,
    /// Percent of customer lines repeating an earlier one of the dialogue.
    pub repeated: Option<f64>,
    /// Customer turns asked again by `customer_guard` (0 without it).
    #[serde(default)]
    pub retried: usize,
    /// Customer lines the audit found off-case: asserting what the case does not hold
    /// ([`crate::scoring::fidelity::OffCase`]).
    #[serde(default)]
    pub off_case_lines: usize,
    /// Dialogues with an off-case customer line.
    #[serde(default)]
    pub off_case_dialogues: usize,
    /// Scored turns where the agent failed (Logic below 100).
    #[serde(default)]
    pub failures: usize,
    /// Of those, the turns at or after their dialogue's first off-case customer line:
    /// possibly the simulator's doing.
    #[serde(default)]
    pub failures_after_off_case: usize,
    /// `failures_after_off_case` as a percent of `failures`; none without failures.
    #[serde(default)]
    pub possibly_simulator: Option<f64>,
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
    /// Judges in the panel (the largest panel of the turns counted; 0 in summaries from before).
    #[serde(default)]
    pub judges: usize,
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
    /// The mean correlation, over the pairs of judges, of their errors (a judge errs on a turn
    /// when its value differs from the job's truth, or from the consensus where the job does
    /// not fix the field); `None` when no pair has errors that vary.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_correlation: Option<f64>,
    /// Kish's effective number of independent votes of the panel on this field:
    /// judges / (1 + (judges - 1) x error_correlation), within 1 to judges. A panel of 3 or 5
    /// worth fewer than 1.5 votes like one judge.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub effective_judges: Option<f64>,
}

/// A panel of 3 or more judges whose effective number on a field is below this votes like one
/// judge there: the report warns.
pub const FEW_EFFECTIVE_JUDGES: f64 = 1.5;

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
    pub(super) fn of(totals: &CallTotals, turns: usize) -> TurnCost {
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
