//! `sage report A --compare B` for a suite on the one lifecycle whose records pass or fail a
//! case (tau2 retail: a task's trials): per agent in both runs, the pass rate over the cases
//! both ran, paired case by case. The difference comes with its 95% bootstrap interval over
//! the cases and a p-value; the p-values of the agents are adjusted together
//! (Benjamini-Hochberg). An agent is called better or worse only when its adjusted p-value is
//! below 0.05 and its interval leaves out 0; otherwise no change is claimed: noise is not a
//! change. Runs whose scores depend on different things (another user simulator or other
//! judges) are compared without a verdict.

use sage_core::scoring::stats::{benjamini_hochberg, bootstrap_p, quantile};
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet};

/// Per (agent, case): trials graded, trials passed.
pub type Cases = BTreeMap<(String, String), (u32, u32)>;

/// Resamples of the cases.
pub const RESAMPLES: usize = 2000;
/// Coverage of the intervals.
const CONFIDENCE: f64 = 0.95;
/// The adjusted p-value below which a change is claimed.
const ALPHA: f64 = 0.05;

/// What the comparison says of one agent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// Passes more cases in the current run, beyond the noise.
    Better,
    /// Passes fewer cases in the current run, beyond the noise.
    Worse,
    /// No change told from the noise.
    NoChange,
    /// The runs' scores depend on different things: no verdict.
    NotCompared,
}

/// One agent in both runs.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AgentChange {
    /// The agent.
    pub agent: String,
    /// Cases graded in both runs (the pairs).
    pub cases: usize,
    /// Its pass rate over those cases in the baseline (the mean over cases of the share of
    /// trials passed).
    pub baseline: f64,
    /// The same in the current run.
    pub current: f64,
    /// `current - baseline`.
    pub delta: f64,
    /// The difference's 95% interval (cases resampled).
    pub ci_low: f64,
    /// Upper bound.
    pub ci_high: f64,
    /// The two-sided bootstrap p-value of "no difference".
    pub p: f64,
    /// `p` adjusted over the agents compared (Benjamini-Hochberg).
    pub q: f64,
    /// What is claimed.
    pub verdict: Verdict,
}

/// Two runs compared.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CaseComparison {
    /// The current run's id.
    pub current: String,
    /// The baseline run's id.
    pub baseline: String,
    /// One row an agent in both runs, in name order.
    pub agents: Vec<AgentChange>,
    /// What a reader must know (agents in one run only, why there is no verdict).
    pub notes: Vec<String>,
}

/// Compares the `current` run's cases with the `baseline` run's (`ids`: current, baseline);
/// `comparable`: why not, when their scores depend on different things (no verdict then).
/// Resampled with `seed`.
pub fn compare(
    (current, baseline): (&Cases, &Cases),
    ids: (&str, &str),
    not_comparable: Option<String>,
    seed: u64,
) -> CaseComparison {
    let agents =
        |cases: &Cases| -> BTreeSet<String> { cases.keys().map(|(a, _)| a.clone()).collect() };
    let (in_current, in_baseline) = (agents(current), agents(baseline));
    let mut notes = Vec::new();
    for (agent, only, other) in in_current
        .difference(&in_baseline)
        .map(|a| (a, ids.0, ids.1))
        .chain(
            in_baseline
                .difference(&in_current)
                .map(|a| (a, ids.1, ids.0)),
        )
    {
        notes.push(format!(
            "agent `{agent}` is in `{only}` only, not in `{other}`: not compared"
        ));
    }
    let mut rows: Vec<AgentChange> = Vec::new();
    for agent in in_current.intersection(&in_baseline) {
        let rate = |(n, passed): (u32, u32)| f64::from(passed.min(n)) / f64::from(n);
        let pairs: Vec<(f64, f64)> = current
            .iter()
            .filter(|((a, _), (n, _))| a == agent && *n > 0)
            .filter_map(|((_, case), &c)| {
                let b = *baseline.get(&(agent.clone(), case.clone()))?;
                (b.0 > 0).then(|| (rate(c), rate(b)))
            })
            .collect();
        if pairs.is_empty() {
            notes.push(format!("agent `{agent}`: no case graded in both runs"));
            continue;
        }
        let n = pairs.len() as f64;
        let diffs: Vec<f64> = pairs.iter().map(|(c, b)| c - b).collect();
        let draws = crate::resample::means(&diffs, RESAMPLES, seed);
        let tail = (1.0 - CONFIDENCE) / 2.0;
        let delta = diffs.iter().sum::<f64>() / n;
        rows.push(AgentChange {
            agent: agent.clone(),
            cases: pairs.len(),
            baseline: pairs.iter().map(|p| p.1).sum::<f64>() / n,
            current: pairs.iter().map(|p| p.0).sum::<f64>() / n,
            delta,
            ci_low: quantile(&draws, tail).unwrap_or(delta),
            ci_high: quantile(&draws, 1.0 - tail).unwrap_or(delta),
            p: bootstrap_p(&draws),
            q: 1.0,
            verdict: Verdict::NoChange,
        });
    }
    let q = benjamini_hochberg(&rows.iter().map(|r| r.p).collect::<Vec<_>>());
    for (row, q) in rows.iter_mut().zip(q) {
        row.q = q;
        row.verdict = match &not_comparable {
            Some(_) => Verdict::NotCompared,
            None if q < ALPHA && row.ci_low > 0.0 => Verdict::Better,
            None if q < ALPHA && row.ci_high < 0.0 => Verdict::Worse,
            None => Verdict::NoChange,
        };
    }
    if let Some(why) = not_comparable {
        notes.push(format!(
            "{why}: a difference may not be the agents'; no verdict"
        ));
    }
    CaseComparison {
        current: ids.0.to_string(),
        baseline: ids.1.to_string(),
        agents: rows,
        notes,
    }
}

impl CaseComparison {
    /// Whether some agent is worse.
    pub fn has_regression(&self) -> bool {
        self.agents.iter().any(|a| a.verdict == Verdict::Worse)
    }

    /// The comparison as text for a terminal: a row an agent, then the notes.
    pub fn text(&self) -> String {
        let mut table = sage_core::scoring::leaderboard::Table::with(&[
            "Agent",
            "Cases",
            "Baseline",
            "Current",
            "Change",
            "95% interval",
            "q",
            "Verdict",
        ]);
        for a in &self.agents {
            table.rows.push(vec![
                a.agent.clone(),
                a.cases.to_string(),
                format!("{:.3}", a.baseline),
                format!("{:.3}", a.current),
                format!("{:+.3}", a.delta),
                format!("[{:+.3}, {:+.3}]", a.ci_low, a.ci_high),
                format!("{:.3}", a.q),
                match a.verdict {
                    Verdict::Better => "better",
                    Verdict::Worse => "worse",
                    Verdict::NoChange => "no change",
                    Verdict::NotCompared => "not compared",
                }
                .into(),
            ]);
        }
        let mut out = format!(
            "`{}` against `{}`: pass rate over the cases both ran, paired by case\n\n",
            self.current, self.baseline
        );
        out.push_str(&table.text_within(sage_core::scoring::leaderboard::TERMINAL_WIDTH));
        out.push_str(
            "\nA change is claimed only when its q-value (p adjusted over the agents) is below 0.05 and its interval leaves out 0.\n",
        );
        for note in &self.notes {
            out.push_str(&format!("note: {note}\n"));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cases(agent: &str, passed: &[u32], trials: u32) -> Cases {
        passed
            .iter()
            .enumerate()
            .map(|(i, &p)| ((agent.to_string(), format!("t{i}")), (trials, p)))
            .collect()
    }

    #[test]
    fn a_clear_drop_is_worse_and_noise_is_no_change() {
        // 40 tasks: every one passed before; 30 of them failed now.
        let before = cases("a", &[1; 40], 1);
        let mut now_passed = vec![0; 30];
        now_passed.extend([1; 10]);
        let now = cases("a", &now_passed, 1);
        let c = compare((&now, &before), ("now", "before"), None, 7);
        let a = &c.agents[0];
        assert_eq!((a.cases, a.baseline, a.current), (40, 1.0, 0.25));
        assert!((a.delta + 0.75).abs() < 1e-12);
        assert!(a.ci_high < 0.0 && a.q < 0.05, "{a:?}");
        assert_eq!(a.verdict, Verdict::Worse);
        assert!(c.has_regression());
        // One task of 40 flipped: within the noise.
        let mut one = vec![1; 40];
        one[0] = 0;
        let c = compare((&cases("a", &one, 1), &before), ("now", "before"), None, 7);
        assert_eq!(c.agents[0].verdict, Verdict::NoChange);
        assert!(c.agents[0].ci_low < 0.0 && c.agents[0].ci_high >= 0.0);
        assert!(!c.has_regression());
    }

    #[test]
    fn pairs_only_the_common_cases_and_names_the_rest() {
        let mut before = cases("a", &[1, 1, 0], 2);
        before.extend(cases("gone", &[1], 1));
        let mut now = cases("a", &[2, 2], 2);
        now.extend(cases("new", &[1], 1));
        let c = compare((&now, &before), ("now", "before"), None, 1);
        assert_eq!(c.agents.len(), 1);
        assert_eq!(c.agents[0].cases, 2);
        assert_eq!((c.agents[0].baseline, c.agents[0].current), (0.5, 1.0));
        assert!(c.notes.iter().any(|n| n.contains("`new` is in `now` only")));
        assert!(
            c.notes
                .iter()
                .any(|n| n.contains("`gone` is in `before` only"))
        );
    }

    #[test]
    fn runs_of_another_simulator_get_no_verdict() {
        let before = cases("a", &[1; 40], 1);
        let now = cases("a", &[0; 40], 1);
        let c = compare(
            (&now, &before),
            ("now", "before"),
            Some("the user simulator differs".into()),
            7,
        );
        assert_eq!(c.agents[0].verdict, Verdict::NotCompared);
        assert!(!c.has_regression());
        assert!(c.text().contains("not compared"));
        assert!(c.notes[0].contains("no verdict"));
    }
}
