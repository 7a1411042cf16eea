//! The comparison as a page (`--html`), built with maud (every value escaped): what the runs
//! are (a rescore, a rejudge), the pairing warning, the per-model differences (a forest plot
//! and a table, each model's test and noise floor shown), the tested groups, the exploratory
//! ones apart, a rescore's regraded dialogues, and the flipped dialogues, each saying why each
//! side passed or failed and opening both runs' transcripts side by side. No script:
//! `<details>` does the opening. Wide tables scroll in their own box, so the page is never
//! wider than the window. The DOM contract is in docs/report.md ("Compare").

use super::text::{delta_text, dialogues_text, overall_text, p_text, q_text, turns_text};
use super::{
    Change, Comparison, FlipKind, FlipTranscripts, Links, Relation, Row, Verdict, dialogue_href,
};
use super::{FLIPS_LISTED, FLIPS_SHOWN};
use crate::charts::raw;
use crate::page::{Page, Section};
use maud::{Markup, html};

/// The style of the comparison: the warning box, rows marked by verdict, the forest plot, the
/// flips and their side-by-side transcripts.
const COMPARE_CSS: &str = "\
.warning{border:2px solid var(--bad);background:color-mix(in srgb,var(--bad) 12%,var(--bg));color:var(--fg);padding:10px 14px;border-radius:6px;margin:14px 0;font-size:15px}\
.warning strong{color:var(--bad)}\
.relation{border:2px solid var(--accent);padding:10px 14px;border-radius:6px;margin:14px 0;font-size:15px}\
svg.forest{max-width:100%;height:auto}\
span.why{color:var(--muted);font-size:12px;flex-basis:100%}\
table.data tr.regression td:first-child{box-shadow:inset 3px 0 var(--bad)}\
table.data tr.improvement td:first-child{box-shadow:inset 3px 0 var(--good)}\
td.verdict{font-size:12px}\
svg.forest{font-size:12px}\
svg.forest .noise-floor{fill:var(--line);opacity:.75}\
svg.forest .zero{stroke:var(--fg);stroke-dasharray:4 3}\
svg.forest .whisker{stroke:var(--fg);stroke-width:1.5}\
svg.forest .grid{stroke:var(--line)}\
svg.forest circle.mark{fill:var(--muted)}\
svg.forest circle.mark.regression{fill:var(--bad)}\
svg.forest circle.mark.improvement{fill:var(--good)}\
details.flip{border-bottom:1px solid var(--line)}\
details.flip>summary{cursor:pointer;padding:4px 2px;display:flex;flex-wrap:wrap;gap:4px 14px;align-items:baseline}\
details.flip>summary::before{content:'▸';color:var(--muted)}\
details.flip[open]>summary::before{content:'▾'}\
details.flip[open]>summary{background:var(--panel)}";

impl Comparison {
    /// The `compare` section.
    pub fn section(&self, links: &Links, transcripts: &FlipTranscripts) -> Section {
        let groups: Vec<&Row> = self.groups().collect();
        let tested: Vec<&Row> = groups.iter().copied().filter(|r| r.tested()).collect();
        let exploratory: Vec<&Row> = groups.iter().copied().filter(|r| !r.tested()).collect();
        let count = |v: Verdict| tested.iter().filter(|r| r.verdict == v).count();
        let html = html! {
            @if let Some(relation) = self.relation_text() {
                div.relation #relation data-relation=(self.relation.name()) { (relation) }
            }
            @if let Some(warning) = self.pairing_warning() {
                div.warning #pairing role="alert" {
                    strong { "Few dialogues pair: compared unpaired. " } (sentence(&warning))
                }
            }
            p { (self.header()) }
            p.note #compare-method { (self.method_text()) }
            @for note in &self.notes {
                p.note.warn { (note) }
            }
            h3 { "Per model" }
            (self.forest(&self.models().collect::<Vec<_>>()))
            p.note {
                "Dot: ΔOverall; whisker: its 95% bootstrap interval (paired or unpaired, as the table's "
                "Test says); shaded band: the model's noise floor (± half the interval's width), the "
                "smallest difference this pair of runs can tell from noise."
            }
            (self.models_table("compare-models", &self.models().collect::<Vec<_>>()))
            @if self.relation == Relation::Rescore {
                h3 { "Per model, the regraded dialogues only" }
                (self.models_table("compare-regraded", &self.regraded().collect::<Vec<_>>()))
            }
            h3 { "Groups" }
            p {
                (format!(
                    "Model x scenario, adversarial level and target route{}. {} tested (at least {} cases, paired or in each run): {} {}, {} {}, {} unchanged.",
                    if self.changed.is_empty() { "" } else { ", and the regraded dialogues" },
                    tested.len(),
                    self.method.min_paired,
                    count(Verdict::Regression),
                    self.verdict_name(Verdict::Regression),
                    count(Verdict::Improvement),
                    self.verdict_name(Verdict::Improvement),
                    count(Verdict::Unchanged),
                ))
            }
            @if tested.is_empty() {
                p.note { (format!("No group other than the models has {} cases.", self.method.min_paired)) }
            } @else {
                (self.group_table("compare-table", &tested, true))
            }
            details #exploratory {
                summary {
                    (format!(
                        "{} exploratory groups (fewer than {} cases): shown with their interval, no verdict, not in the false-discovery-rate family",
                        exploratory.len(),
                        self.method.min_paired
                    ))
                }
                (self.group_table("compare-exploratory", &exploratory, false))
            }
            (self.changed_html())
            (self.flips_html(links, transcripts))
        };
        Section::new("compare", "Compare", html)
    }

    /// The flipped dialogues: `div#compare-flips`, one `details.flip` each.
    fn flips_html(&self, links: &Links, transcripts: &FlipTranscripts) -> Markup {
        let down = self.flips_of(FlipKind::PassToFail).count();
        let up = self.flips_of(FlipKind::FailToPass).count();
        let listed = &self.flips[..self.flips.len().min(FLIPS_LISTED)];
        html! {
            h3 { "Dialogues that flipped" }
            @if self.flips.is_empty() {
                p { "A dialogue passes when it reaches its target action. No paired dialogue went from pass to fail or back." }
            } @else {
            p {
                (format!(
                    "A dialogue passes when it reaches its target action. {down} went from pass to fail, {up} from fail to pass. Click one to open both transcripts side by side (baseline left, current right); the page holds the transcripts of the first {} (pass to fail first, then by id){}.",
                    FLIPS_SHOWN.min(self.flips.len()),
                    if self.flips.len() > FLIPS_LISTED {
                        format!(" and lists the first {FLIPS_LISTED} of {} (--format json lists them all)", self.flips.len())
                    } else {
                        String::new()
                    }
                ))
            }
            div #compare-flips {
                @for f in listed {
                    details.flip data-dialogue=(f.dialogue_id) data-flip=(f.kind.name()) {
                        summary {
                            code { (f.dialogue_id) }
                            span { (f.model) }
                            span { (f.scenario) }
                            span class=(match f.kind { FlipKind::PassToFail => "bad", FlipKind::FailToPass => "good" }) {
                                (f.kind.name())
                            }
                            span.muted { "baseline " (f.baseline_end.name()) " → current " (f.current_end.name()) }
                            span {
                                a.baseline href=(dialogue_href(&links.baseline, &f.dialogue_id)) { "baseline report" }
                                " · "
                                a.current href=(dialogue_href(&links.current, &f.dialogue_id)) { "current report" }
                            }
                            span.why.baseline { "baseline: " (f.baseline_why) }
                            span.why.current { "current: " (f.current_why) }
                        }
                        @if let Some(view) = transcripts.get(&f.dialogue_id) {
                            (view)
                        } @else {
                            p.note {
                                "Transcripts not embedded (the page holds the first "
                                (FLIPS_SHOWN) "): open them in each run's report."
                            }
                        }
                    }
                }
            }
            }
        }
    }

    /// A table of one row per model (`id`: `compare-models`, its `all` rows;
    /// `compare-regraded`, a rescore's regraded dialogues), in its scroll box.
    fn models_table(&self, id: &str, rows: &[&Row]) -> Markup {
        html! {
            div.table-box {
            table.data id=(id) {
                thead {
                    tr {
                        th { "Model" } th { "Verdict" } th { "Test" }
                        th.num title="paired dialogues, or current / baseline when unpaired" { "Dialogues" }
                        th.num { "OA baseline" } th.num { "OA current" } th.num { "ΔOA" }
                        th.num { "95% CI" } th.num { "Noise floor" } th.num { "q" }
                        th.num { "ΔLogic" } th.num { "ΔChat" }
                    }
                }
                tbody {
                    @for r in rows {
                        tr class=(r.verdict.name()) data-model=(r.model) data-verdict=(self.verdict_name(r.verdict))
                            data-test=(r.test.name())
                            data-delta=(raw(r.overall.difference.delta))
                            data-ci-low=(raw(r.overall.difference.ci_low))
                            data-ci-high=(raw(r.overall.difference.ci_high))
                            data-noise-floor=(raw(r.noise_floor()))
                            data-q=(r.q.map_or_else(String::new, raw)) {
                            td { (r.model) }
                            (self.verdict_cell(r))
                            td.test { (r.test.name()) }
                            td.num data-value=(r.dialogues) { (dialogues_text(r)) }
                            (overall_cells(r))
                            td.num data-metric="noise_floor" data-value=(raw(r.noise_floor())) {
                                (format!("±{:.2}", r.noise_floor()))
                            }
                            td.num data-metric="q" { (q_text(r)) }
                            (change_cell("logic", r.logic.as_ref()))
                            (change_cell("chat", r.chat.as_ref()))
                        }
                    }
                }
            }
            }
        }
    }

    /// A rescore's regraded dialogues: `table#compare-changed`, one row each by id (nothing
    /// for another comparison).
    fn changed_html(&self) -> Markup {
        html! {
            @if !self.changed.is_empty() {
                h3 { "Regraded dialogues" }
                p {
                    (format!(
                        "The {} dialogues whose reference routes the rescore changed, by id: the turns regraded, whether the case's target route changed, and the dialogue's mean Overall before and after.",
                        self.changed.len()
                    ))
                }
                div.table-box {
                table.data #compare-changed {
                    thead {
                        tr {
                            th { "Dialogue" } th { "Model" } th { "Turns regraded" } th { "Target changed" }
                            th.num { "OA before" } th.num { "OA after" }
                        }
                    }
                    tbody {
                        @for c in &self.changed {
                            tr data-dialogue=(c.regraded.dialogue_id) data-model=(c.model) {
                                td { code { (c.regraded.dialogue_id) } }
                                td { (c.model) }
                                td { (turns_text(&c.regraded.turns)) }
                                td { @if c.regraded.target_changed { "yes" } @else { "no" } }
                                td.num { (overall_text(c.baseline_overall)) }
                                td.num { (overall_text(c.current_overall)) }
                            }
                        }
                    }
                }
                }
            }
        }
    }

    /// The verdict cell, worded for the comparison ([`Comparison::verdict_name`]).
    fn verdict_cell(&self, r: &Row) -> Markup {
        let tone = match r.verdict {
            Verdict::Regression => "verdict bad",
            Verdict::Improvement => "verdict good",
            _ => "verdict",
        };
        html! { td class=(tone) { (self.verdict_name(r.verdict)) } }
    }

    /// A table of groups (`tested`: with their verdict and q), in its scroll box.
    fn group_table(&self, id: &str, rows: &[&Row], tested: bool) -> Markup {
        html! {
            div.table-box {
            table.data id=(id) {
                thead {
                    tr {
                        th { "Model" } th { "Group" }
                        @if tested { th { "Verdict" } }
                        th { "Test" }
                        th.num title="paired dialogues, or current / baseline when unpaired" { "Dialogues" }
                        th.num { "OA baseline" } th.num { "OA current" }
                        th.num { "ΔOA" } th.num { "95% CI" } th.num { "p" }
                        @if tested { th.num { "q" } }
                        th.num { "ΔLogic" } th.num { "ΔChat" }
                    }
                }
                tbody {
                    @for r in rows {
                        tr class=(r.verdict.name()) data-model=(r.model) data-group=(r.group.key())
                            data-verdict=(self.verdict_name(r.verdict))
                            data-test=(r.test.name())
                            data-delta=(raw(r.overall.difference.delta))
                            data-ci-low=(raw(r.overall.difference.ci_low))
                            data-ci-high=(raw(r.overall.difference.ci_high))
                            data-p=(raw(r.p))
                            data-q=(r.q.map_or_else(String::new, raw))
                            data-paired=(r.dialogues) {
                            td { (r.model) }
                            td { (r.group.label()) }
                            @if tested { (self.verdict_cell(r)) }
                            td.test { (r.test.name()) }
                            td.num data-value=(r.dialogues) { (dialogues_text(r)) }
                            (overall_cells(r))
                            td.num data-metric="p" data-value=(raw(r.p)) { (p_text(r.p)) }
                            @if tested { td.num data-metric="q" { (q_text(r)) } }
                            (change_cell("logic", r.logic.as_ref()))
                            (change_cell("chat", r.chat.as_ref()))
                        }
                    }
                }
            }
            }
        }
    }

    /// The comparison as a whole page (one `compare` section).
    pub fn page(&self, links: &Links, transcripts: &FlipTranscripts) -> Page {
        Page {
            title: format!(
                "SAGE-RS comparison: {} against {}",
                self.current, self.baseline
            ),
            sections: vec![self.section(links, transcripts)],
            styles: vec![
                COMPARE_CSS.to_string(),
                crate::side_by_side::CSS.to_string(),
            ],
            scripts: Vec::new(),
        }
    }
}

/// `text` with its first letter in capitals.
fn sentence(text: &str) -> String {
    let mut chars = text.chars();
    chars.next().map_or_else(String::new, |first| {
        first.to_uppercase().chain(chars).collect()
    })
}

/// OA baseline, OA current, ΔOA and its interval.
fn overall_cells(r: &Row) -> Markup {
    let d = &r.overall.difference;
    html! {
        td.num data-metric="overall_baseline" data-value=(raw(r.overall.baseline)) { (format!("{:.2}", r.overall.baseline)) }
        td.num data-metric="overall_current" data-value=(raw(r.overall.current)) { (format!("{:.2}", r.overall.current)) }
        td.num data-metric="overall" data-value=(raw(d.delta)) { (format!("{:+.2}", d.delta)) }
        td.num.ci { (format!("[{:+.1}, {:+.1}]", d.ci_low, d.ci_high)) }
    }
}

/// A ΔLogic or ΔChat cell.
fn change_cell(metric: &str, c: Option<&Change>) -> Markup {
    match c {
        Some(c) => html! {
            td.num data-metric=(metric) data-value=(raw(c.difference.delta)) { (delta_text(&c.difference)) }
        },
        None => html! { td.num { "-" } },
    }
}

/// The forest plot's geometry: label column (at least, at most), plot, value column, row,
/// top, axis (SVG units), and the labels' font size.
const LABEL_MIN: f64 = 120.0;
const LABEL_MAX: f64 = 330.0;
const PLOT_W: f64 = 400.0;
const VALUE_W: f64 = 290.0;
const ROW_H: f64 = 30.0;
const LINE_H: f64 = 14.0;
const TOP: f64 = 8.0;
const AXIS_H: f64 = 46.0;
const FONT: f64 = 12.0;

/// A tick step that puts at most four ticks on each side of 0 up to `extent`.
fn tick_step(extent: f64) -> f64 {
    const STEPS: [f64; 12] = [
        0.1, 0.2, 0.25, 0.5, 1.0, 2.0, 2.5, 5.0, 10.0, 20.0, 25.0, 50.0,
    ];
    STEPS
        .into_iter()
        .find(|s| extent / s <= 4.0)
        .unwrap_or(50.0)
}

/// The forest plot's label column: as wide as the longest model name (estimated on the wide
/// side), within [`LABEL_MIN`] and [`LABEL_MAX`]; and each name cut into the lines it takes in
/// that width (one, but for a name wider than [`LABEL_MAX`], wrapped at its hyphens, slashes
/// and the like; never cut short).
fn labels(rows: &[&Row]) -> (f64, Vec<Vec<String>>) {
    let widest = rows
        .iter()
        .map(|r| crate::text::text_width(&r.model, FONT, false))
        .fold(0.0, f64::max);
    let text_w = widest.clamp(LABEL_MIN, LABEL_MAX);
    let lines = rows
        .iter()
        .map(|r| crate::text::wrap(&r.model, text_w, FONT, false))
        .collect();
    (text_w + 16.0, lines)
}

impl Comparison {
    /// `svg.chart.forest#compare-forest`: per model a `g.forest-row` (its `data-*` the
    /// unrounded numbers) with its name (whole: the label column is sized to the longest, and
    /// a name wider than [`LABEL_MAX`] wraps), its noise-floor band `rect.noise-floor`, the
    /// interval `line.whisker` and the difference `circle.mark`; a dashed line at 0, a
    /// symmetric axis with its title and unit. The svg scales down to the page's width.
    fn forest(&self, rows: &[&Row]) -> Markup {
        let reach = rows
            .iter()
            .flat_map(|r| {
                let d = r.overall.difference;
                [
                    d.ci_low.abs(),
                    d.ci_high.abs(),
                    d.delta.abs(),
                    r.noise_floor(),
                ]
            })
            .filter(|x| x.is_finite())
            .fold(0.5_f64, f64::max);
        let step = tick_step(reach * 1.05);
        let extent = (reach * 1.05 / step).ceil() * step;
        let (label_w, names) = labels(rows);
        let x = |v: f64| label_w + (v.clamp(-extent, extent) + extent) / (2.0 * extent) * PLOT_W;
        // Each row's top and height (a wrapped name makes its row taller).
        let heights: Vec<f64> = names
            .iter()
            .map(|lines| ROW_H.max(LINE_H * lines.len() as f64 + 8.0))
            .collect();
        let tops: Vec<f64> = heights
            .iter()
            .scan(TOP, |top, h| {
                let this = *top;
                *top += h;
                Some(this)
            })
            .collect();
        let bottom = TOP + heights.iter().sum::<f64>();
        let height = bottom + AXIS_H;
        let width = label_w + PLOT_W + VALUE_W;
        let ticks = (extent / step).round() as i64;
        let f = |v: f64| format!("{v:.1}");
        html! {
            svg.chart.forest #compare-forest data-chart="forest" viewBox=(format!("0 0 {width} {height}"))
                width=(width) height=(height) role="img" aria-label="ΔOverall per model with its 95% interval and noise floor" {
                @for i in -ticks..=ticks {
                    @let v = i as f64 * step;
                    line.grid x1=(f(x(v))) y1=(f(TOP)) x2=(f(x(v))) y2=(f(bottom)) {}
                    text x=(f(x(v))) y=(f(bottom + 14.0)) text-anchor="middle" {
                        (format!("{}{}", if v > 0.0 { "+" } else { "" }, crate::charts::num(v)))
                    }
                }
                @for (i, r) in rows.iter().enumerate() {
                    @let d = r.overall.difference;
                    @let (top, h) = (tops[i], heights[i]);
                    @let y = top + h / 2.0;
                    @let floor = r.noise_floor();
                    @let lines = &names[i];
                    @let first = y + 4.0 - LINE_H * (lines.len() as f64 - 1.0) / 2.0;
                    g.forest-row data-model=(r.model) data-verdict=(self.verdict_name(r.verdict))
                        data-test=(r.test.name())
                        data-delta=(raw(d.delta)) data-ci-low=(raw(d.ci_low)) data-ci-high=(raw(d.ci_high))
                        data-noise-floor=(raw(floor)) {
                        title {
                            (format!(
                                "{}: ΔOverall {:+.2}, 95% CI [{:+.2}, {:+.2}], noise floor ±{:.2}, {} dialogues ({}), q {} ({})",
                                r.model, d.delta, d.ci_low, d.ci_high, floor, dialogues_text(r), r.test.name(), q_text(r), self.verdict_name(r.verdict)
                            ))
                        }
                        rect.noise-floor x=(f(x(-floor))) y=(f(top + 3.0))
                            width=(f(x(floor) - x(-floor))) height=(f(h - 6.0)) {}
                        text.label x=(f(label_w - 8.0)) y=(f(first)) text-anchor="end" {
                            @for (k, line) in lines.iter().enumerate() {
                                @if k == 0 {
                                    (line)
                                } @else {
                                    tspan x=(f(label_w - 8.0)) dy=(f(LINE_H)) { (line) }
                                }
                            }
                        }
                        line.whisker x1=(f(x(d.ci_low))) y1=(f(y)) x2=(f(x(d.ci_high))) y2=(f(y)) {}
                        line.whisker x1=(f(x(d.ci_low))) y1=(f(y - 5.0)) x2=(f(x(d.ci_low))) y2=(f(y + 5.0)) {}
                        line.whisker x1=(f(x(d.ci_high))) y1=(f(y - 5.0)) x2=(f(x(d.ci_high))) y2=(f(y + 5.0)) {}
                        circle class=(format!("mark {}", r.verdict.name())) cx=(f(x(d.delta))) cy=(f(y)) r="5"
                            data-model=(r.model) data-series="overall" data-value=(raw(d.delta)) {}
                        text x=(f(label_w + PLOT_W + 10.0)) y=(f(y + 4.0)) {
                            (format!("{} · ±{:.2} · {}", delta_text(&d), floor, self.verdict_name(r.verdict)))
                        }
                    }
                }
                line.zero x1=(f(x(0.0))) y1=(f(TOP - 4.0)) x2=(f(x(0.0))) y2=(f(bottom + 2.0)) {}
                text.axis-title x=(f(label_w + PLOT_W / 2.0)) y=(f(bottom + 36.0)) text-anchor="middle" {
                    "ΔOverall (current − baseline), points 0-100"
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A row of `model` (the rest of it does not matter to the labels).
    fn row(model: &str) -> Row {
        let change = Change {
            current: 1.0,
            baseline: 1.0,
            difference: sage_core::scoring::stats::Difference {
                delta: 0.0,
                ci_low: 0.0,
                ci_high: 0.0,
            },
        };
        Row {
            model: model.into(),
            group: super::super::Group::All,
            test: super::super::Test::Paired,
            dialogues: 1,
            cases: 1,
            sides: Default::default(),
            verdict: Verdict::Exploratory,
            overall: change,
            logic: None,
            chat: None,
            p: 1.0,
            q: None,
        }
    }

    #[test]
    fn the_label_column_fits_the_longest_name_and_a_longer_one_wraps_whole() {
        let short = row("m");
        let long = row("meta-llama--Meta-Llama-3.1-405B-Instruct-Turbo");
        // The column: the longest name's width (at least LABEL_MIN) and a margin.
        let (width, lines) = labels(&[&short, &long]);
        let longest = crate::text::text_width(&long.model, FONT, false);
        assert!(longest > LABEL_MIN && longest < LABEL_MAX, "{longest}");
        assert_eq!(width, longest + 16.0);
        assert_eq!(lines, [vec!["m".to_string()], vec![long.model.clone()]]);
        assert_eq!(labels(&[&short]).0, LABEL_MIN + 16.0);
        // Wider than LABEL_MAX: wrapped at its hyphens, every line within, nothing lost.
        let huge = row(
            "organization-with-a-long-name--model-family-with-a-long-name-70B-Instruct-Turbo-2024-08-06-preview",
        );
        let (width, lines) = labels(&[&short, &huge]);
        assert_eq!(width, LABEL_MAX + 16.0);
        assert!(lines[1].len() > 1, "{lines:?}");
        assert_eq!(lines[1].concat(), huge.model);
        for line in &lines[1] {
            assert!(
                crate::text::text_width(line, FONT, false) <= LABEL_MAX,
                "{line}"
            );
        }
    }

    #[test]
    fn ticks_are_round_and_few() {
        assert_eq!(tick_step(0.6), 0.2);
        assert_eq!(tick_step(3.0), 1.0);
        assert_eq!(tick_step(9.0), 2.5);
        assert_eq!(tick_step(30.0), 10.0);
        assert_eq!(tick_step(400.0), 50.0);
    }
}
