//! The comparison as one JSON document (`sage report A --compare B --format json`), for scripts
//! and CI: the runs, the pairing, the method, every group with its verdict, and every flip. The
//! schema is documented in docs/report.md ("Compare", "JSON"); [`SCHEMA`] names its version, and
//! a field is only ever added to a version, never renamed or removed.

use super::{Change, Comparison, Flip, Row};
use serde::Serialize;

/// The document's `schema`: its version.
pub const SCHEMA: &str = "sage-compare/1";

/// The whole document.
#[derive(Debug, Clone, Serialize)]
pub struct Document<'a> {
    /// [`SCHEMA`].
    pub schema: &'static str,
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
    /// `paired cluster bootstrap (Poisson weights, cluster = case)`.
    pub interval: &'static str,
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
    /// Paired cases a group needs to be tested (smaller: `exploratory`).
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
    /// `all`, `scenario`, `adversarial` or `route`.
    pub kind: &'static str,
    /// Paired dialogues.
    pub paired: usize,
    /// Paired cases (the bootstrap's clusters; repeats of a case count once).
    pub cases: usize,
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
    /// `regression`, `improvement`, `unchanged` or `exploratory`.
    pub verdict: &'static str,
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

impl<'a> From<&'a Row> for GroupJson<'a> {
    fn from(r: &'a Row) -> GroupJson<'a> {
        GroupJson {
            model: &r.model,
            group: r.group.key(),
            kind: r.group.kind(),
            paired: r.dialogues,
            cases: r.cases,
            overall: (&r.overall).into(),
            logic: r.logic.as_ref().map(Into::into),
            chat: r.chat.as_ref().map(Into::into),
            noise_floor: r.noise_floor(),
            p: r.p,
            q: r.q,
            verdict: r.verdict.name(),
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
        Document {
            schema: SCHEMA,
            current: RunJson {
                run_id: &self.current,
                seed: self.current_seed,
                dialogues: self.current_dialogues,
            },
            baseline: RunJson {
                run_id: &self.baseline,
                seed: self.baseline_seed,
                dialogues: self.baseline_dialogues,
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
                difference: "current - baseline, points 0-100, means over every scored turn of the paired dialogues",
                interval: "percentile interval of a paired cluster bootstrap (Poisson weights, cluster = case)",
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
                regression: count(super::Verdict::Regression),
                improvement: count(super::Verdict::Improvement),
                unchanged: count(super::Verdict::Unchanged),
                exploratory: count(super::Verdict::Exploratory),
            },
            groups: self
                .models()
                .chain(self.groups())
                .map(GroupJson::from)
                .collect(),
            flips: self.flips.iter().map(FlipJson::from).collect(),
        }
    }

    /// The JSON document, pretty-printed, with a final newline.
    pub fn json(&self) -> Result<String, serde_json::Error> {
        let mut out = serde_json::to_string_pretty(&self.document())?;
        out.push('\n');
        Ok(out)
    }
}
