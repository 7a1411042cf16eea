//! The comparison in the terminal: what the runs are (a rescore, a rejudge) and the pairing
//! warning first when they apply, what was compared and how, the per-model differences with
//! their test and noise floor, the tested groups' regressions and improvements, how many are
//! unchanged and exploratory, a rescore's regraded dialogues, and the flipped dialogues with
//! why each side passed or failed.

use super::{Change, Comparison, FlipKind, Relation, Row, Test, Verdict};
use sage_core::scoring::leaderboard::Table;
use sage_core::scoring::stats::Difference;
use std::fmt::Write;

/// Flipped dialogues the terminal lists per direction (the HTML and the JSON list more).
const TEXT_FLIPS: usize = 20;
/// Regressions and improvements the terminal lists each (the HTML and the JSON list them all).
const TEXT_ROWS: usize = 25;
/// A rescore's regraded dialogues the terminal lists (the HTML and the JSON list them all).
const TEXT_CHANGED: usize = 50;

/// Turns as `1, 5, 8`.
pub(super) fn turns_text(turns: &[u32]) -> String {
    let turns: Vec<String> = turns.iter().map(u32::to_string).collect();
    turns.join(", ")
}

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

/// A row's dialogues: `40` paired, or `41 / 38` (current / baseline) unpaired.
pub(super) fn dialogues_text(row: &Row) -> String {
    match row.test {
        Test::Paired => row.dialogues.to_string(),
        Test::Unpaired => format!(
            "{} / {}",
            row.sides.current_dialogues, row.sides.baseline_dialogues
        ),
    }
}

/// An optional Overall: `71.25`, or `-`.
pub(super) fn overall_text(x: Option<f64>) -> String {
    x.map_or_else(|| "-".into(), |x| format!("{x:.2}"))
}

impl Comparison {
    /// A table of one row per model (its `all` or its `regraded dialogues` group).
    fn model_table<'a>(&self, rows: impl Iterator<Item = &'a Row>) -> Table {
        let mut table = Table::with(&[
            "Model",
            "Verdict",
            "Test",
            "Dialogues",
            "OA baseline",
            "OA current",
            "ΔOA [95% CI]",
            "Noise floor",
            "q",
            "ΔLogic",
            "ΔChat",
        ])
        .labels(3);
        for r in rows {
            table.rows.push(vec![
                r.model.clone(),
                self.verdict_name(r.verdict).into(),
                r.test.name().into(),
                dialogues_text(r),
                format!("{:.2}", r.overall.baseline),
                format!("{:.2}", r.overall.current),
                delta_text(&r.overall.difference),
                format!("±{:.2}", r.noise_floor()),
                q_text(r),
                change_text(r.logic.as_ref()),
                change_text(r.chat.as_ref()),
            ]);
        }
        table
    }

    /// The comparison for the terminal.
    pub fn text(&self) -> String {
        let mut out = String::new();
        if let Some(relation) = self.relation_text() {
            let _ = writeln!(out, "{relation}\n");
        }
        if let Some(warning) = self.pairing_warning() {
            let _ = writeln!(out, "WARNING: {warning}\n");
        }
        let _ = writeln!(out, "Comparing {}\n{}", self.header(), self.method_text());
        for note in &self.notes {
            let _ = writeln!(out, "note: {note}");
        }
        let _ = write!(
            out,
            "\nPer model (ΔOA = current − baseline, points 0-100; noise floor: the smallest |ΔOA| this pair of runs can tell from noise)\n{}",
            self.model_table(self.models()).text()
        );
        if self.relation == Relation::Rescore {
            let _ = write!(
                out,
                "\nPer model, the regraded dialogues only (those whose reference routes the rescore changed)\n{}",
                self.model_table(self.regraded()).text()
            );
        }
        let tested = self.groups().filter(|r| r.tested()).count();
        let _ = writeln!(
            out,
            "\nGroups (model x scenario, adversarial level, target route): {tested} tested, {} exploratory.",
            self.groups().filter(|r| !r.tested()).count()
        );
        for (verdict, side) in [
            (Verdict::Regression, "below 0), worst first"),
            (Verdict::Improvement, "above 0), best first"),
        ] {
            let title = format!(
                "{} (q < 0.05, ΔOA interval {side}",
                self.verdict_title(verdict)
            );
            let mut table = Table::with(&[
                "Model",
                "Group",
                "Test",
                "Dialogues",
                "ΔOA [95% CI]",
                "p",
                "q",
                "ΔLogic",
                "ΔChat",
            ])
            .labels(3);
            let rows: Vec<&Row> = self.groups().filter(|r| r.verdict == verdict).collect();
            for r in rows.iter().take(TEXT_ROWS) {
                table.rows.push(vec![
                    r.model.clone(),
                    r.group.label(),
                    r.test.name().into(),
                    dialogues_text(r),
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
            "\nUnchanged: {} tested groups. Exploratory: {} groups of fewer than {} cases, no verdict (--html or --format json lists every group).",
            self.groups()
                .filter(|r| r.verdict == Verdict::Unchanged)
                .count(),
            self.groups()
                .filter(|r| r.verdict == Verdict::Exploratory)
                .count(),
            self.method.min_paired
        );
        if !self.changed.is_empty() {
            let mut table = Table::with(&[
                "Dialogue",
                "Model",
                "Turns regraded",
                "Target changed",
                "OA before",
                "OA after",
            ])
            .labels(4);
            for c in self.changed.iter().take(TEXT_CHANGED) {
                table.rows.push(vec![
                    c.regraded.dialogue_id.clone(),
                    c.model.clone(),
                    turns_text(&c.regraded.turns),
                    if c.regraded.target_changed {
                        "yes"
                    } else {
                        "no"
                    }
                    .into(),
                    overall_text(c.baseline_overall),
                    overall_text(c.current_overall),
                ]);
            }
            let _ = write!(
                out,
                "\nRegraded dialogues (their reference routes changed), by id: {}{}\n{}",
                self.changed.len(),
                if self.changed.len() > TEXT_CHANGED {
                    format!(", the first {TEXT_CHANGED} (--format json lists them all)")
                } else {
                    String::new()
                },
                table.text()
            );
        }
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
                    "  {}\n    baseline: {}\n    current:  {}",
                    f.dialogue_id, f.baseline_why, f.current_why
                );
            }
        }
        out
    }
}
