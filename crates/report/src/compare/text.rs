//! The comparison in the terminal: the pairing warning first when it applies, what was compared
//! and how, the per-model differences with their noise floor, the tested groups' regressions
//! and improvements, how many are unchanged and exploratory, and the flipped dialogues.

use super::{Change, Comparison, FlipKind, Row, Verdict};
use sage_core::scoring::leaderboard::Table;
use sage_core::scoring::stats::Difference;
use std::fmt::Write;

/// Flipped dialogues the terminal lists per direction (the HTML and the JSON list more).
const TEXT_FLIPS: usize = 20;
/// Regressions and improvements the terminal lists each (the HTML and the JSON list them all).
const TEXT_ROWS: usize = 25;

/// `-3.21 [-5.0, -1.4]`.
pub(super) fn delta_text(d: &Difference) -> String {
    format!("{:+.2} [{:+.1}, {:+.1}]", d.delta, d.ci_low, d.ci_high)
}

fn change_text(c: Option<&Change>) -> String {
    c.map_or_else(|| "-".into(), |c| delta_text(&c.difference))
}

/// A p- or q-value: 4 decimals, `<0.0001` below.
pub(super) fn p_text(p: f64) -> String {
    if p < 0.0001 {
        "<0.0001".into()
    } else {
        format!("{p:.4}")
    }
}

/// A row's q-value, `-` when it was not tested.
pub(super) fn q_text(row: &Row) -> String {
    row.q.map_or_else(|| "-".into(), p_text)
}

impl Comparison {
    /// The comparison for the terminal.
    pub fn text(&self) -> String {
        let mut out = String::new();
        if let Some(warning) = self.pairing_warning() {
            let _ = writeln!(out, "WARNING: {warning}\n");
        }
        let _ = writeln!(out, "Comparing {}\n{}", self.header(), self.method_text());
        for note in &self.notes {
            let _ = writeln!(out, "note: {note}");
        }
        let mut models = Table::with(&[
            "Model",
            "Verdict",
            "Paired",
            "OA baseline",
            "OA current",
            "ΔOA [95% CI]",
            "Noise floor",
            "q",
            "ΔLogic",
            "ΔChat",
        ])
        .labels(2);
        for r in self.models() {
            models.rows.push(vec![
                r.model.clone(),
                r.verdict.name().into(),
                r.dialogues.to_string(),
                format!("{:.2}", r.overall.baseline),
                format!("{:.2}", r.overall.current),
                delta_text(&r.overall.difference),
                format!("±{:.2}", r.noise_floor()),
                q_text(r),
                change_text(r.logic.as_ref()),
                change_text(r.chat.as_ref()),
            ]);
        }
        let _ = write!(
            out,
            "\nPer model (ΔOA = current − baseline, points 0-100; noise floor: the smallest |ΔOA| this pair of runs can tell from noise)\n{}",
            models.text()
        );
        let tested = self.groups().filter(|r| r.tested()).count();
        let _ = writeln!(
            out,
            "\nGroups (model x scenario, adversarial level, target route): {tested} tested, {} exploratory.",
            self.groups().filter(|r| !r.tested()).count()
        );
        for (verdict, title) in [
            (
                Verdict::Regression,
                "Regressions (q < 0.05, ΔOA interval below 0), worst first",
            ),
            (
                Verdict::Improvement,
                "Improvements (q < 0.05, ΔOA interval above 0), best first",
            ),
        ] {
            let mut table = Table::with(&[
                "Model",
                "Group",
                "Paired",
                "ΔOA [95% CI]",
                "p",
                "q",
                "ΔLogic",
                "ΔChat",
            ])
            .labels(2);
            let rows: Vec<&Row> = self.groups().filter(|r| r.verdict == verdict).collect();
            for r in rows.iter().take(TEXT_ROWS) {
                table.rows.push(vec![
                    r.model.clone(),
                    r.group.label(),
                    r.dialogues.to_string(),
                    delta_text(&r.overall.difference),
                    p_text(r.p),
                    q_text(r),
                    change_text(r.logic.as_ref()),
                    change_text(r.chat.as_ref()),
                ]);
            }
            if table.rows.is_empty() {
                let _ = writeln!(out, "\n{title}: none");
            } else {
                let _ = write!(out, "\n{title}\n{}", table.text());
                if rows.len() > TEXT_ROWS {
                    let _ = writeln!(
                        out,
                        "... and {} more (--html or --format json lists them all)",
                        rows.len() - TEXT_ROWS
                    );
                }
            }
        }
        let _ = writeln!(
            out,
            "\nUnchanged: {} tested groups. Exploratory: {} groups of fewer than {} paired cases, no verdict (--html or --format json lists every group).",
            self.groups()
                .filter(|r| r.verdict == Verdict::Unchanged)
                .count(),
            self.groups()
                .filter(|r| r.verdict == Verdict::Exploratory)
                .count(),
            self.method.min_paired
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
}
