//! The comparison as one JSON document (`sage report A --compare B --format json`), for scripts
//! and CI: the runs and how they are related, the pairing, the method, every group with its
//! test and verdict, a rescore's regraded dialogues, and every flip with why each side passed
//! or failed. The
//! schema is documented in docs/report.md ("Compare", "JSON"); [`SCHEMA`] names its version, and
//! a field is only ever added to a version, never renamed or removed.

use super::{Change, ChangedRow, Comparison, Flip, Row};
use serde::Serialize;

/// The document's `schema`: its version.
pub const SCHEMA: &str = "sage-compare/1";

/// The whole document.
#[derive(Debug, Clone, Serialize)]
pub struct Document<'a> {
    /// [`SCHEMA`].
    pub schema: &'static str,
    /// `runs`, `rescore` (the current run is the baseline graded again) or `rejudge` (one run
    /// is the other judged again by another panel).
    pub relation: &'static str,
    /// What the relation means (`null` for two runs): that only the grading changed.
    pub relation_note: Option<String>,
    /// The current run.
    pub current: RunJson<'a>,
    /// The baseline.
    pub baseline: RunJson<'a>,
    /// How the dialogues paired.
    pub pairing: PairingJson,
    /// How the groups were tested.
    pub method: MethodJson,
    /// Scenarios in one run only, scenarios whose text changed, judged turns that differ.
    pub notes: &'a [String],
    /// Groups per verdict.
    pub verdicts: VerdictCounts,
    /// Every group: each model's row (`group` = `all`) first, then the others, each part in
    /// the comparison's order (regressions worst first, improvements best first, unchanged,
    /// exploratory).
    pub groups: Vec<GroupJson<'a>>,
    /// Every flipped dialogue, pass to fail first, then by id.
    pub flips: Vec<FlipJson<'a>>,
    /// A rescore's regraded dialogues, by id (empty for another comparison).
    pub changed: Vec<ChangedJson<'a>>,
}

/// A dialogue a rescore graded differently.
#[derive(Debug, Clone, Serialize)]
pub struct ChangedJson<'a> {
    /// Its id.
    pub dialogue_id: &'a str,
    /// The model under test.
    pub model: &'a str,
    /// The turns whose reference route changed.
    pub turns: &'a [u32],
    /// Whether the case's target route changed.
    pub target_changed: bool,
    /// Its mean Overall in the baseline (`null` without a scored turn).
    pub baseline_overall: Option<f64>,
    /// Its mean Overall regraded.
    pub current_overall: Option<f64>,
}

/// A run.
#[derive(Debug, Clone, Serialize)]
pub struct RunJson<'a> {
    /// Its id.
    pub run_id: &'a str,
    /// Its seed.
    pub seed: u64,
    /// Its dialogues.
    pub dialogues: usize,
    /// Its customer simulator (summary.json's `simulator`; `null`: not recorded).
    pub simulator: Option<&'a sage_core::protocol::simulator::Simulator>,
}

/// How the dialogues paired.
#[derive(Debug, Clone, Serialize)]
pub struct PairingJson {
    /// Dialogues in both runs with the same id and case.
    pub paired: usize,
    /// Of the current run's dialogues, the share paired (0-1).
    pub current_share: f64,
    /// Of the baseline's, the share paired (0-1).
    pub baseline_share: f64,
    /// Ids in both runs whose cases differ (left out).
    pub mismatched: usize,
    /// Dialogues of the current run only.
    pub only_current: usize,
    /// Dialogues of the baseline only.
    pub only_baseline: usize,
    /// The warning when under half of either run pairs; `null` otherwise.
    pub warning: Option<String>,
}

/// How the groups were tested.
#[derive(Debug, Clone, Serialize)]
pub struct MethodJson {
    /// What Δ is.
    pub difference: &'static str,
    /// How the paired groups' intervals are drawn.
    pub interval: &'static str,
    /// How the unpaired groups' intervals are drawn.
    pub unpaired_interval: &'static str,
    /// Resamples drawn (B).
    pub resamples: usize,
    /// Coverage of the intervals (0.95).
    pub confidence: f64,
    /// Seed of the resamples' weights.
    pub seed: u64,
    /// How p is computed.
    pub p_value: &'static str,
    /// The smallest p the test can give, 2 / (B + 1).
    pub smallest_p: f64,
    /// `benjamini-hochberg`.
    pub fdr: &'static str,
    /// The false discovery rate controlled (q below it).
    pub alpha: f64,
    /// Cases a group needs to be tested, paired or in each run (smaller: `exploratory`).
    pub min_paired_cases: usize,
    /// Groups tested: the family the q-values are computed over (per-model rows included).
    pub tested: usize,
}

/// Groups per verdict.
#[derive(Debug, Clone, Serialize)]
pub struct VerdictCounts {
    /// Regressions.
    pub regression: usize,
    /// Improvements.
    pub improvement: usize,
    /// In a rescore or a rejudge, groups the new grading scored lower (0 between two runs).
    pub lower: usize,
    /// In a rescore or a rejudge, groups the new grading scored higher.
    pub higher: usize,
    /// Tested and unchanged.
    pub unchanged: usize,
    /// Too small to test.
    pub exploratory: usize,
}

/// One group.
#[derive(Debug, Clone, Serialize)]
pub struct GroupJson<'a> {
    /// The model under test.
    pub model: &'a str,
    /// `all`, `scenario:ID`, `adversarial:LEVEL` or `route:SCENARIO:ROUTE`.
    pub group: String,
    /// `all`, `scenario`, `adversarial`, `route` or `changed` (a rescore's regraded
    /// dialogues).
    pub kind: &'static str,
    /// `paired` or `unpaired`.
    pub test: &'static str,
    /// Paired dialogues (0 when unpaired).
    pub paired: usize,
    /// Paired cases (the bootstrap's clusters; repeats of a case count once), or unpaired the
    /// smaller run's cases.
    pub cases: usize,
    /// Dialogues compared in each run.
    pub dialogues: SidesJson,
    /// Cases compared in each run.
    pub cases_per_run: SidesJson,
    /// Overall in both runs and its difference.
    pub overall: ChangeJson,
    /// Logic, `null` without a value.
    pub logic: Option<ChangeJson>,
    /// Chat, `null` without a value.
    pub chat: Option<ChangeJson>,
    /// Half the width of the ΔOverall interval.
    pub noise_floor: f64,
    /// Two-sided bootstrap p-value of ΔOverall (unadjusted).
    pub p: f64,
    /// Benjamini-Hochberg q-value; `null` for an exploratory group.
    pub q: Option<f64>,
    /// `regression`, `improvement`, `unchanged` or `exploratory`; in a rescore or a rejudge
    /// `lower` and `higher` instead of the first two.
    pub verdict: &'static str,
}

/// A count in each run.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct SidesJson {
    /// The current run's.
    pub current: usize,
    /// The baseline's.
    pub baseline: usize,
}

/// A metric in both runs.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct ChangeJson {
    /// The baseline's mean, 0-100.
    pub baseline: f64,
    /// The current run's mean, 0-100.
    pub current: f64,
    /// Current − baseline.
    pub delta: f64,
    /// Lower bound of the interval of delta.
    pub ci_low: f64,
    /// Upper bound.
    pub ci_high: f64,
}

/// A flipped dialogue.
#[derive(Debug, Clone, Serialize)]
pub struct FlipJson<'a> {
    /// Its id.
    pub dialogue_id: &'a str,
    /// The model under test.
    pub model: &'a str,
    /// The scenario.
    pub scenario: &'a str,
    /// `pass-to-fail` or `fail-to-pass`.
    pub flip: &'static str,
    /// How it ended in the baseline.
    pub baseline_end: &'static str,
    /// How it ended in the current run.
    pub current_end: &'static str,
    /// Why it passed or failed in the baseline.
    pub baseline_why: &'a str,
    /// Why it passed or failed in the current run.
    pub current_why: &'a str,
}

impl From<&Change> for ChangeJson {
    fn from(c: &Change) -> ChangeJson {
        ChangeJson {
            baseline: c.baseline,
            current: c.current,
            delta: c.difference.delta,
            ci_low: c.difference.ci_low,
            ci_high: c.difference.ci_high,
        }
    }
}

impl<'a> GroupJson<'a> {
    /// Row `r` of comparison `c`.
    fn new(c: &Comparison, r: &'a Row) -> GroupJson<'a> {
        let s = &r.sides;
        GroupJson {
            model: &r.model,
            group: r.group.key(),
            kind: r.group.kind(),
            test: r.test.name(),
            paired: match r.test {
                super::Test::Paired => r.dialogues,
                super::Test::Unpaired => 0,
            },
            cases: r.cases,
            dialogues: SidesJson {
                current: s.current_dialogues,
                baseline: s.baseline_dialogues,
            },
            cases_per_run: SidesJson {
                current: s.current_cases,
                baseline: s.baseline_cases,
            },
            overall: (&r.overall).into(),
            logic: r.logic.as_ref().map(Into::into),
            chat: r.chat.as_ref().map(Into::into),
            noise_floor: r.noise_floor(),
            p: r.p,
            q: r.q,
            verdict: c.verdict_name(r.verdict),
        }
    }
}

impl<'a> From<&'a ChangedRow> for ChangedJson<'a> {
    fn from(c: &'a ChangedRow) -> ChangedJson<'a> {
        ChangedJson {
            dialogue_id: &c.regraded.dialogue_id,
            model: &c.model,
            turns: &c.regraded.turns,
            target_changed: c.regraded.target_changed,
            baseline_overall: c.baseline_overall,
            current_overall: c.current_overall,
        }
    }
}

impl<'a> From<&'a Flip> for FlipJson<'a> {
    fn from(f: &'a Flip) -> FlipJson<'a> {
        FlipJson {
            dialogue_id: &f.dialogue_id,
            model: &f.model,
            scenario: &f.scenario,
            flip: f.kind.name(),
            baseline_end: f.baseline_end.name(),
            current_end: f.current_end.name(),
            baseline_why: &f.baseline_why,
            current_why: &f.current_why,
        }
    }
}

impl Comparison {
    /// The comparison as the JSON document's value.
    pub fn document(&self) -> Document<'_> {
        let m = &self.method;
        let share = |n: usize| {
            if n == 0 {
                0.0
            } else {
                self.shared as f64 / n as f64
            }
        };
        let count = |v: super::Verdict| self.rows_of(v).count();
        // Regressions and improvements are the models' between two runs; in a rescore or a
        // rejudge the same verdicts are the grading's: `lower` and `higher`.
        let runs = self.relation == super::Relation::Runs;
        let models = |n: usize| if runs { n } else { 0 };
        let grading = |n: usize| if runs { 0 } else { n };
        Document {
            schema: SCHEMA,
            relation: self.relation.name(),
            relation_note: self.relation_text(),
            current: RunJson {
                run_id: &self.current,
                seed: self.current_seed,
                dialogues: self.current_dialogues,
                simulator: self.current_simulator.as_ref(),
            },
            baseline: RunJson {
                run_id: &self.baseline,
                seed: self.baseline_seed,
                dialogues: self.baseline_dialogues,
                simulator: self.baseline_simulator.as_ref(),
            },
            pairing: PairingJson {
                paired: self.shared,
                current_share: share(self.current_dialogues),
                baseline_share: share(self.baseline_dialogues),
                mismatched: self.mismatched,
                only_current: self.only_current,
                only_baseline: self.only_baseline,
                warning: self.pairing_warning(),
            },
            method: MethodJson {
                difference: "current - baseline, points 0-100: paired, means over every scored turn of the paired dialogues; unpaired, the post-stratified difference sum_s w_s (m_current,s - m_baseline,s) over the strata (scenario x target route) both runs hold, w_s the stratum's share of both runs' scored turns",
                interval: "paired: percentile interval of a paired cluster bootstrap (Poisson weights, cluster = case)",
                unpaired_interval: "unpaired: percentile interval of a stratified bootstrap, each run's cases resampled apart within each stratum (n - 1 draws with replacement from a stratum's n cases)",
                resamples: m.bootstrap.resamples,
                confidence: m.bootstrap.confidence,
                seed: m.bootstrap.seed,
                p_value: "two-sided bootstrap: min(1, 2 min((#{d* <= 0} + 1) / (B + 1), (#{d* >= 0} + 1) / (B + 1)))",
                smallest_p: m.smallest_p(),
                fdr: "benjamini-hochberg",
                alpha: m.alpha,
                min_paired_cases: m.min_paired,
                tested: m.tested,
            },
            notes: &self.notes,
            verdicts: VerdictCounts {
                regression: models(count(super::Verdict::Regression)),
                improvement: models(count(super::Verdict::Improvement)),
                lower: grading(count(super::Verdict::Regression)),
                higher: grading(count(super::Verdict::Improvement)),
                unchanged: count(super::Verdict::Unchanged),
                exploratory: count(super::Verdict::Exploratory),
            },
            groups: self
                .models()
                .chain(self.groups())
                .map(|r| GroupJson::new(self, r))
                .collect(),
            flips: self.flips.iter().map(FlipJson::from).collect(),
            changed: self.changed.iter().map(ChangedJson::from).collect(),
        }
    }

    /// The JSON document, pretty-printed, with a final newline.
    pub fn json(&self) -> Result<String, serde_json::Error> {
        let mut out = serde_json::to_string_pretty(&self.document())?;
        out.push('\n');
        Ok(out)
    }
}
