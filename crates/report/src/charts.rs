//! Inline SVG charts, built with [`maud`]: bar panels (one bar per model in each panel, one panel
//! per series) and line panels (one line per model). Every data mark is an element of class
//! `mark` with `data-model`, `data-series` and `data-value` (the raw number), `data-n` (the
//! turns behind it) and, when it has one, its 95% interval in `data-ci-low` and `data-ci-high`
//! (drawn as a whisker, `.whisker`), and a `<title>` tooltip that says them, so the chart reads
//! the same without JavaScript and a test can check each value. Every chart has its axis titles
//! (`text.axis-title[data-axis="x|y"]`) with their units.
//!
//! Colour = model: a model keeps one colour, dash and marker in every chart, legend and table of
//! a page ([`model_style`], by its position in `summary.models`).

use maud::{Markup, html};
use sage_core::scoring::Metric;

/// The models' colours: the Okabe-Ito palette, safe for the common colour-vision deficiencies,
/// in an order that puts its palest colour (yellow) last.
pub const MODEL_PALETTE: [&str; 8] = [
    "#0072b2", "#d55e00", "#009e73", "#cc79a7", "#e69f00", "#56b4e9", "#000000", "#f0e442",
];

/// The shape of a model's points.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Marker {
    /// A disc.
    Circle,
    /// A square.
    Square,
    /// A triangle pointing up.
    Triangle,
    /// A square on its corner.
    Diamond,
}

/// How a model is drawn everywhere on a page: its colour, its line's dash pattern (an SVG
/// `stroke-dasharray`, `None` for a solid line) and its points' marker.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ModelStyle {
    /// The colour (`#rrggbb`).
    pub colour: &'static str,
    /// The dash pattern of its lines.
    pub dash: Option<&'static str>,
    /// The shape of its points.
    pub marker: Marker,
}

/// The style of the model at `index` in `summary.models`: the first eight get the eight colours
/// of [`MODEL_PALETTE`] with solid lines and discs; each next round of eight the same colours
/// with another dash pattern and marker, so up to 96 models are told apart.
pub fn model_style(index: usize) -> ModelStyle {
    let round = index / MODEL_PALETTE.len();
    ModelStyle {
        colour: MODEL_PALETTE[index % MODEL_PALETTE.len()],
        dash: [None, Some("6 3"), Some("2 2")][round % 3],
        marker: [
            Marker::Circle,
            Marker::Square,
            Marker::Triangle,
            Marker::Diamond,
        ][round % 4],
    }
}

/// The colour of the model at `index` in `summary.models` ([`model_style`]).
pub fn model_colour(index: usize) -> &'static str {
    model_style(index).colour
}

/// The SVG path of `marker` centred on (`x`, `y`), about `r` across half its width.
fn marker_path(marker: Marker, x: f64, y: f64, r: f64) -> String {
    match marker {
        Marker::Circle => format!(
            "M{},{}a{r},{r} 0 1,0 {},0a{r},{r} 0 1,0 {},0z",
            c(x - r),
            c(y),
            2.0 * r,
            -2.0 * r
        ),
        Marker::Square => {
            let s = r * 0.9;
            format!(
                "M{},{}h{}v{}h{}z",
                c(x - s),
                c(y - s),
                2.0 * s,
                2.0 * s,
                -2.0 * s
            )
        }
        Marker::Triangle => {
            let s = r * 1.15;
            format!(
                "M{},{}L{},{}L{},{}z",
                c(x),
                c(y - s),
                c(x + s),
                c(y + s * 0.8),
                c(x - s),
                c(y + s * 0.8)
            )
        }
        Marker::Diamond => {
            let s = r * 1.2;
            format!(
                "M{},{}L{},{}L{},{}L{},{}z",
                c(x),
                c(y - s),
                c(x + s),
                c(y),
                c(x),
                c(y + s),
                c(x - s),
                c(y)
            )
        }
    }
}

/// A small inline SVG of the model's line and marker (its colour, dash and shape), for legends
/// and tables: `svg.swatch` (decorative, hidden from screen readers: the model's name is beside
/// it).
pub fn swatch(index: usize) -> Markup {
    let s = model_style(index);
    html! {
        svg.swatch width="22" height="10" viewBox="0 0 22 10" aria-hidden="true" {
            line x1="0" y1="5" x2="22" y2="5" stroke=(s.colour) stroke-width="2"
                stroke-dasharray=[s.dash] {}
            path d=(marker_path(s.marker, 11.0, 5.0, 3.5)) fill=(s.colour) {}
        }
    }
}

/// A coordinate for an SVG attribute (one decimal).
fn c(x: f64) -> String {
    format!("{x:.1}")
}

/// Formats a number for display (at most two decimals, no trailing zeros).
pub fn num(x: f64) -> String {
    let s = format!("{x:.2}");
    let s = s.trim_end_matches('0').trim_end_matches('.');
    if s == "-0" { "0".into() } else { s.into() }
}

/// A raw value for a `data-value` attribute (shortest round-trip form).
pub fn raw(x: f64) -> String {
    format!("{x}")
}

/// The size of a chart's text, pixels (`svg.chart{font-size:11px}`).
const TEXT_PX: f64 = 11.0;

/// The widest a model's name is drawn in a chart, pixels: a longer one is cut with `…` (its
/// whole name in its tooltip). 44 characters of a typical model id fit.
pub const MAX_NAME_W: f64 = 300.0;

/// The width of the widest of `names` as a chart draws it (at most [`MAX_NAME_W`]).
fn names_width<'a>(names: impl IntoIterator<Item = &'a str>) -> f64 {
    names
        .into_iter()
        .map(|n| crate::text::text_width(n, TEXT_PX, false))
        .fold(0.0, f64::max)
        .min(MAX_NAME_W)
}

/// A model's name as a chart's `<text>` holds it: whole when it fits [`MAX_NAME_W`], else cut
/// with `…`; with the whole name as its tooltip either way.
fn name_text(name: &str) -> Markup {
    let shown = if crate::text::text_width(name, TEXT_PX, false) <= MAX_NAME_W {
        name.to_string()
    } else {
        let mut cut = String::new();
        for ch in name.chars() {
            if crate::text::text_width(&format!("{cut}{ch}…"), TEXT_PX, false) > MAX_NAME_W {
                break;
            }
            cut.push(ch);
        }
        cut.push('…');
        cut
    };
    html! { title { (name) } (shown) }
}

/// One value drawn: its mean, its 95% interval when it has one, and what it is a mean of.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Estimate {
    /// The value.
    pub value: f64,
    /// Its 95% interval (low, high).
    pub interval: Option<(f64, f64)>,
    /// The turns behind it.
    pub n: Option<usize>,
    /// The dialogues those turns come from.
    pub dialogues: Option<usize>,
}

impl Estimate {
    /// A value with nothing known of its uncertainty.
    pub fn plain(value: f64) -> Estimate {
        Estimate {
            value,
            interval: None,
            n: None,
            dialogues: None,
        }
    }

    /// A summary statistic (its mean, interval and turns), from `dialogues` dialogues when
    /// known.
    pub fn of(m: Metric, dialogues: Option<usize>) -> Estimate {
        Estimate {
            value: m.mean,
            interval: Some((m.ci_low, m.ci_high)),
            n: Some(m.n),
            dialogues,
        }
    }

    /// The tooltip: `VALUE UNIT (95% interval LOW to HIGH; n = N TURNS, D dialogues)`; a share
    /// (unit `%`) of its n says `K of N TURNS`.
    fn describe(&self, unit: &str, n_of: &str) -> String {
        let mut text = format!("{}{unit}", num(self.value));
        let mut said = Vec::new();
        if let Some((low, high)) = self.interval {
            said.push(format!("95% interval {} to {}", num(low), num(high)));
        }
        if let Some(n) = self.n {
            let mut n = if unit == "%" {
                // A share of the n: say how many.
                format!("{} of {n} {n_of}", (self.value * n as f64 / 100.0).round())
            } else {
                format!("n = {n} {n_of}")
            };
            if let Some(d) = self.dialogues {
                n.push_str(&format!(", {d} dialogues"));
            }
            said.push(n);
        }
        if !said.is_empty() {
            text.push_str(&format!(" ({})", said.join("; ")));
        }
        text
    }
}

/// A value axis: its title with the unit (`"OA, 0-100"`), its range 0..`max`, the unit put
/// after values in tooltips (`"%"`, `""`) and what `n` counts (`"scored turns"`).
#[derive(Debug, Clone, Copy)]
pub struct Axis<'a> {
    /// The title, with the unit.
    pub title: &'a str,
    /// The axis runs from 0 to this.
    pub max: f64,
    /// Put after a value in its tooltip.
    pub unit: &'a str,
    /// What the `n` of a value counts.
    pub n_of: &'a str,
}

/// A model in a chart: its name and its position in `summary.models` (its [`model_style`]).
#[derive(Debug, Clone, Copy)]
pub struct ChartModel<'a> {
    /// The name.
    pub name: &'a str,
    /// Its position in `summary.models`.
    pub index: usize,
}

/// One panel of a bar chart: a series (`Acc_cls`) and its value per model, in the chart's
/// model order (`None`: no data).
#[derive(Debug, Clone)]
pub struct BarPanel {
    /// The series.
    pub series: String,
    /// One value per model.
    pub values: Vec<Option<Estimate>>,
}

/// Horizontal bars in panels side by side: one panel per series, in each one bar per model
/// (a row per model, named on the left with its swatch), coloured by the model, with its
/// interval as a whisker; all panels on the 0..`axis.max` axis.
pub fn bar_panels(
    chart: &str,
    models: &[ChartModel<'_>],
    panels: &[BarPanel],
    axis: &Axis<'_>,
) -> Markup {
    // Room for the longest name, its gap and its marker.
    let label_w = (names_width(models.iter().map(|m| m.name)) + 30.0).max(120.0);
    let gap = 36.0;
    let panel_w =
        ((760.0 - gap * panels.len() as f64) / panels.len().max(1) as f64).clamp(110.0, 240.0);
    let row_h = 15.0;
    let bar_h = 10.0;
    let top = 34.0;
    let plot_h = row_h * models.len().max(1) as f64;
    let bottom = top + plot_h;
    let width = label_w + (panel_w + gap) * panels.len().max(1) as f64 + 10.0;
    let height = bottom + 44.0;
    let max = if axis.max > 0.0 { axis.max } else { 1.0 };
    let px = |x0: f64, v: f64| x0 + (v.max(0.0) / max).min(1.0) * panel_w;
    let row_y = |i: usize| top + row_h * i as f64 + (row_h - bar_h) / 2.0;
    let plots_w = (panel_w + gap) * panels.len() as f64 - gap;
    html! {
        svg.chart data-chart=(chart) viewBox={ "0 0 " (c(width)) " " (c(height)) }
            width=(c(width)) height=(c(height)) role="img" {
            text.axis-title data-axis="y" x=(c(label_w - 8.0)) y="28" text-anchor="end" { "model" }
            @for (i, m) in models.iter().enumerate() {
                @let y = row_y(i) + bar_h / 2.0;
                text.model-name data-model=(m.name) x=(c(label_w - 22.0)) y=(c(y + 4.0)) text-anchor="end" { (name_text(m.name)) }
                path d=(marker_path(model_style(m.index).marker, label_w - 13.0, y, 4.0))
                    fill=(model_colour(m.index)) {}
            }
            @for (p, panel) in panels.iter().enumerate() {
                @let x0 = label_w + (panel_w + gap) * p as f64;
                text.panel-title x=(c(x0 + panel_w / 2.0)) y="14" text-anchor="middle" { (panel.series) }
                @for q in 0..=4 {
                    @let x = x0 + panel_w * q as f64 / 4.0;
                    @let tick = max * q as f64 / 4.0;
                    line.axis.grid data-tick=(raw(tick)) x1=(c(x)) y1=(c(top - 4.0)) x2=(c(x)) y2=(c(bottom)) {}
                    @if q % 2 == 0 || panel_w >= 160.0 {
                        text x=(c(x)) y=(c(bottom + 13.0)) text-anchor="middle" { (num(tick)) }
                    }
                }
                @for (i, (m, value)) in models.iter().zip(&panel.values).enumerate() {
                    @if let Some(v) = value {
                        @let y = row_y(i);
                        rect.mark data-model=(m.name) data-series=(panel.series) data-value=(raw(v.value))
                            data-n=[v.n] data-ci-low=[v.interval.map(|i| raw(i.0))]
                            data-ci-high=[v.interval.map(|i| raw(i.1))]
                            x=(c(x0)) y=(c(y)) width=(c(px(x0, v.value) - x0)) height=(c(bar_h))
                            fill=(model_colour(m.index)) {
                            title { (m.name) " · " (panel.series) ": " (v.describe(axis.unit, axis.n_of)) }
                        }
                        @if let Some((low, high)) = v.interval {
                            @let (a, b, yc) = (px(x0, low), px(x0, high), y + bar_h / 2.0);
                            path.whisker.on-bar data-model=(m.name) data-series=(panel.series)
                                d={ "M" (c(a)) "," (c(yc - 3.0)) "v6M" (c(a)) "," (c(yc)) "H" (c(b))
                                    "M" (c(b)) "," (c(yc - 3.0)) "v6" } {}
                        }
                    }
                }
            }
            text.axis-title data-axis="x" x=(c(label_w + plots_w / 2.0)) y=(c(bottom + 32.0))
                text-anchor="middle" { (axis.title) }
        }
    }
}

/// One line: a model, its position in `summary.models` and its value at each x label (`None`:
/// no point).
#[derive(Debug, Clone)]
pub struct Line {
    /// The model.
    pub model: String,
    /// Its position in `summary.models` ([`model_style`]).
    pub index: usize,
    /// One value per x label.
    pub values: Vec<Option<Estimate>>,
}

/// The category axis of line panels: its title and labels (`"turn"`, `T1`, `T5`, ...).
#[derive(Debug, Clone, Copy)]
pub struct XAxis<'a> {
    /// The title.
    pub title: &'a str,
    /// One label per position.
    pub labels: &'a [&'a str],
}

/// Line charts with more models than this draw only [`FOCUS_EACH`] best and worst in colour.
pub const MAX_COLOURED_LINES: usize = 8;
/// How many of the best and of the worst models a crowded line chart draws in colour.
pub const FOCUS_EACH: usize = 4;
/// A point from fewer turns than this is drawn hollow (class `few`): its mean is uncertain.
pub const FEW_TURNS: usize = 30;

/// The models a line chart draws in colour: all when there are at most [`MAX_COLOURED_LINES`]
/// (`None`), else the [`FOCUS_EACH`] best and worst by `score` (models without one left out;
/// ties by name), best first.
pub fn focus(models: &[(&str, Option<f64>)]) -> Option<Vec<String>> {
    if models.len() <= MAX_COLOURED_LINES {
        return None;
    }
    let mut scored: Vec<(&str, f64)> = models
        .iter()
        .filter_map(|(m, s)| Some((*m, (*s)?)))
        .collect();
    scored.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(b.0)));
    let n = scored.len();
    let picked = scored
        .iter()
        .enumerate()
        .filter(|(i, _)| *i < FOCUS_EACH || *i + FOCUS_EACH >= n)
        .map(|(_, (m, _))| m.to_string())
        .collect();
    Some(picked)
}

/// Line panels side by side in one SVG (one per `(title, lines)`), sharing the x axis and the
/// 0..`y.max` axis; every point with its 95% interval as a whisker (hollow when fewer than
/// [`FEW_TURNS`] turns are behind it), points of different models nudged apart so that their
/// whiskers do not hide each other; a legend of the models below, and a key to the whiskers and
/// hollow points. With `coloured`, only those models' lines are in colour, the others grey and
/// thin behind them (class `bg`, drawn first); a click on a legend entry
/// (`g.legend[data-model]`, [`SCRIPT`]) colours or greys a model's line.
pub fn line_panels(
    chart: &str,
    x: &XAxis<'_>,
    panels: &[(&str, Vec<Line>)],
    y: &Axis<'_>,
    coloured: Option<&[String]>,
) -> Markup {
    let panel_w = if panels.len() == 1 { 560.0 } else { 300.0 };
    let panel_h = 200.0;
    let left = 64.0;
    let gap = 44.0;
    let y0 = 24.0;
    let models: Vec<(&str, usize)> = panels
        .first()
        .map(|(_, lines)| lines.iter().map(|l| (l.model.as_str(), l.index)).collect())
        .unwrap_or_default();
    let width = left + (panel_w + gap) * panels.len().max(1) as f64 - gap + 16.0;
    // A legend column holds the longest name (cut at [`MAX_NAME_W`]) with its swatch.
    let legend_w = (names_width(models.iter().map(|(m, _)| *m)) + 40.0).max(120.0);
    let columns = (((width - left) / legend_w) as usize).max(1);
    let legend_y = y0 + panel_h + 54.0;
    let legend_rows = models.len().div_ceil(columns).max(1) as f64;
    let key_y = legend_y + 16.0 * legend_rows + 4.0;
    let height = key_y + 12.0;
    let max = if y.max > 0.0 { y.max } else { 1.0 };
    let on = |m: &str| coloured.is_none_or(|c| c.iter().any(|x| x == m));
    let steps = x.labels.len().max(2) as f64 - 1.0;
    let step = (panel_w - 30.0) / steps;
    // The coloured models' points are nudged sideways so that their whiskers do not hide each
    // other (at most a quarter of the step for all of them); the grey ones sit on the tick,
    // without whiskers, so that a crowd of them reads as one band rather than a smear.
    let slots: Vec<Option<usize>> = {
        let mut next = 0;
        models
            .iter()
            .map(|(m, _)| {
                on(m).then(|| {
                    next += 1;
                    next - 1
                })
            })
            .collect()
    };
    let coloured = slots.iter().flatten().count();
    let nudge = (step * 0.25 / coloured.max(1) as f64).min(6.0);
    let py = |v: f64| y0 + panel_h - panel_h * (v.max(0.0) / max).min(1.0);
    let plots_w = (panel_w + gap) * panels.len() as f64 - gap;
    html! {
        svg.chart.lines data-chart=(chart) viewBox={ "0 0 " (c(width)) " " (c(height)) }
            width=(c(width)) height=(c(height)) role="img" {
            text.axis-title data-axis="y" x="14" y=(c(y0 + panel_h / 2.0)) text-anchor="middle"
                transform={ "rotate(-90 14 " (c(y0 + panel_h / 2.0)) ")" } { (y.title) }
            @for (p, (title, lines)) in panels.iter().enumerate() {
                @let x0 = left + (panel_w + gap) * p as f64;
                @let px = |i: usize, model: usize| {
                    let offset = slots[model].map_or(0.0, |s| s as f64 - (coloured as f64 - 1.0) / 2.0);
                    x0 + 15.0 + step * i as f64 + offset * nudge
                };
                text.panel-title x=(c(x0 + panel_w / 2.0)) y="14" text-anchor="middle" { (title) }
                @for q in 0..=4 {
                    @let tick = max * q as f64 / 4.0;
                    @let yy = py(tick);
                    line.axis.grid data-tick=(raw(tick)) x1=(c(x0)) y1=(c(yy)) x2=(c(x0 + panel_w)) y2=(c(yy)) {}
                    text x=(c(x0 - 4.0)) y=(c(yy + 4.0)) text-anchor="end" { (num(tick)) }
                }
                @for (i, label) in x.labels.iter().enumerate() {
                    text x=(c(x0 + 15.0 + step * i as f64)) y=(c(y0 + panel_h + 15.0)) text-anchor="middle" { (label) }
                }
                // Grey lines first, under the coloured ones.
                @for (slot, line) in lines.iter().enumerate().filter(|(_, l)| !on(&l.model))
                    .chain(lines.iter().enumerate().filter(|(_, l)| on(&l.model))) {
                    @let s = model_style(line.index);
                    @let bg = !on(&line.model);
                    @let points: Vec<String> = line.values.iter().enumerate()
                        .filter_map(|(i, v)| v.map(|v| format!("{},{}", c(px(i, slot)), c(py(v.value)))))
                        .collect();
                    @if points.len() > 1 {
                        polyline.line.bg[bg] data-model=(line.model) fill="none" stroke=(s.colour)
                            stroke-width="1.8" stroke-dasharray=[s.dash] points=(points.join(" ")) {}
                    }
                    @for (i, v) in line.values.iter().enumerate() {
                        @if let Some(v) = v {
                            @let series = format!("{title} {}", x.labels[i]);
                            @let (xx, yy) = (px(i, slot), py(v.value));
                            @if let Some((low, high)) = v.interval {
                                path.whisker.bg[bg] data-model=(line.model) data-series=(series)
                                    stroke=(s.colour) stroke-width="1.2" fill="none"
                                    d={ "M" (c(xx - 3.0)) "," (c(py(high))) "h6M" (c(xx)) "," (c(py(high)))
                                        "V" (c(py(low))) "M" (c(xx - 3.0)) "," (c(py(low))) "h6" } {}
                            }
                            path.mark.bg[bg].few[v.n.is_some_and(|n| n < FEW_TURNS)]
                                data-model=(line.model) data-series=(series) data-value=(raw(v.value))
                                data-n=[v.n] data-ci-low=[v.interval.map(|i| raw(i.0))]
                                data-ci-high=[v.interval.map(|i| raw(i.1))]
                                d=(marker_path(s.marker, xx, yy, 3.5)) fill=(s.colour) stroke=(s.colour)
                                stroke-width="1.5" {
                                title { (line.model) " · " (title) " at " (x.labels[i]) ": " (v.describe(y.unit, y.n_of)) }
                            }
                        }
                    }
                }
            }
            text.axis-title data-axis="x" x=(c(left + plots_w / 2.0)) y=(c(y0 + panel_h + 34.0))
                text-anchor="middle" { (x.title) }
            @for (i, (m, index)) in models.iter().enumerate() {
                @let lx = left + legend_w * (i % columns) as f64;
                @let ly = legend_y + 16.0 * (i / columns) as f64;
                @let s = model_style(*index);
                g.legend.bg[!on(m)] data-model=(m) {
                    line x1=(c(lx)) y1=(c(ly - 4.0)) x2=(c(lx + 22.0)) y2=(c(ly - 4.0)) stroke=(s.colour)
                        stroke-width="2" stroke-dasharray=[s.dash] {}
                    path d=(marker_path(s.marker, lx + 11.0, ly - 4.0, 3.5)) fill=(s.colour) {}
                    text x=(c(lx + 27.0)) y=(c(ly)) { (name_text(m)) }
                    title { (m) ": point at it to highlight its line; click to colour or grey it" }
                }
            }
            g.key {
                path d={ "M" (c(left)) "," (c(key_y - 9.0)) "h6M" (c(left + 3.0)) "," (c(key_y - 9.0)) "v8M"
                    (c(left)) "," (c(key_y - 1.0)) "h6" } stroke="currentColor" fill="none" {}
                text x=(c(left + 10.0)) y=(c(key_y)) { "95% interval" }
                path.few d=(marker_path(Marker::Circle, left + 110.0, key_y - 4.0, 3.5))
                    stroke="currentColor" stroke-width="1.5" {}
                text x=(c(left + 118.0)) y=(c(key_y)) { "hollow: fewer than " (FEW_TURNS) " " (y.n_of) }
            }
        }
    }
}

/// The control above a line chart that highlights one model over the others in grey:
/// `select[data-chart-pick=CHART]`, its first option the chart's default view (`default`), then
/// the models (`models`, the leaderboard's order). Pointing at a model's line or legend entry
/// highlights it too ([`SCRIPT`]).
pub fn pick_control(chart: &str, default: &str, models: &[&str]) -> Markup {
    html! {
        label.chart-pick {
            "Highlight "
            select data-chart-pick=(chart) {
                option value="" { (default) }
                @for m in models { option value=(m) { (m) } }
            }
        }
    }
}

/// Line charts' models: a click on `g.legend[data-model]` toggles class `bg` (grey, behind) on
/// that model's line, points, whiskers and legend entry in that chart; pointing at a model's
/// line, point or legend entry, or picking it in the chart's `select[data-chart-pick]`,
/// highlights it (class `hl`, its whiskers shown) over every other model in grey
/// (`svg.hl-on`).
pub const SCRIPT: &str = include_str!("js/charts.js");

/// Style of the charts: axis titles, hollow points, whiskers over bars, the grey lines and
/// clickable legends, swatches, and black drawn light in dark mode.
pub const CSS: &str = r##"
svg.chart .axis-title{font-size:12px;fill:var(--muted)}
svg.chart .panel-title{font-weight:bold}
svg.chart .mark.few,svg.chart g.key .few{fill:var(--bg)}
svg.chart g.key{color:var(--fg);fill:var(--fg)}
svg.chart .whisker.on-bar{stroke:var(--fg);stroke-width:1.2;fill:none}
svg.chart g.legend{cursor:pointer}
svg.chart g.legend.bg:not(.hl) line,svg.chart.hl-on g.legend:not(.hl) line{stroke:#b8bec9;stroke-dasharray:none}
svg.chart g.legend.bg:not(.hl) path,svg.chart.hl-on g.legend:not(.hl) path{fill:#b8bec9}
svg.chart g.legend.bg:not(.hl) text,svg.chart.hl-on g.legend:not(.hl) text{fill:var(--muted)}
svg.chart g.legend.hl text{font-weight:bold}
svg.chart polyline.bg:not(.hl),svg.chart.hl-on polyline.line:not(.hl){stroke:#b8bec9;stroke-width:1;stroke-dasharray:none;opacity:.7}
svg.chart polyline.hl{stroke-width:3}
svg.chart.lines .whisker.bg:not(.hl),svg.chart.hl-on.lines .whisker:not(.hl){display:none}
svg.chart.lines .mark.bg:not(.hl),svg.chart.hl-on.lines .mark:not(.hl){fill:#b8bec9;stroke:#b8bec9;opacity:.7}
label.chart-pick{display:block;margin:4px 0;font-size:13px}
label.chart-pick select{max-width:100%}
svg.swatch{vertical-align:middle;margin-right:4px}
@media (prefers-color-scheme:dark){svg [fill="#000000"]{fill:#e6e9ef}svg [stroke="#000000"]{stroke:#e6e9ef}}
"##;

#[cfg(test)]
mod tests {
    use super::*;

    fn est(value: f64, low: f64, high: f64, n: usize) -> Option<Estimate> {
        Some(Estimate {
            value,
            interval: Some((low, high)),
            n: Some(n),
            dialogues: Some(n),
        })
    }

    const OA: Axis<'static> = Axis {
        title: "OA, 0-100",
        max: 100.0,
        unit: "",
        n_of: "scored turns",
    };

    #[test]
    fn numbers_are_short() {
        assert_eq!(num(12.345), "12.35");
        assert_eq!(num(50.0), "50");
        assert_eq!(num(-0.001), "0");
        assert_eq!(raw(0.1 + 0.2), "0.30000000000000004");
    }

    #[test]
    fn a_model_keeps_one_style_and_the_first_96_differ() {
        assert_eq!(model_colour(0), "#0072b2");
        assert_eq!(model_colour(8), model_colour(0));
        assert_ne!(model_style(8), model_style(0));
        let styles: std::collections::HashSet<String> =
            (0..96).map(|i| format!("{:?}", model_style(i))).collect();
        assert_eq!(styles.len(), 96);
    }

    #[test]
    fn every_value_is_a_mark_with_its_interval_and_n() {
        let svg = bar_panels(
            "execution-gap",
            &[ChartModel {
                name: "m<1>",
                index: 1,
            }],
            &[
                BarPanel {
                    series: "a".into(),
                    values: vec![est(40.0, 30.0, 50.0, 12)],
                },
                BarPanel {
                    series: "b".into(),
                    values: vec![None],
                },
            ],
            &OA,
        )
        .into_string();
        assert_eq!(svg.matches("class=\"mark\"").count(), 1);
        assert!(svg.contains("<rect class=\"mark\" data-model=\"m&lt;1&gt;\" data-series=\"a\" data-value=\"40\" data-n=\"12\" data-ci-low=\"30\" data-ci-high=\"50\""), "{svg}");
        assert!(svg.contains("fill=\"#d55e00\""));
        assert!(svg.contains("<title>m&lt;1&gt; · a: 40 (95% interval 30 to 50; n = 12 scored turns, 12 dialogues)</title>"), "{svg}");
        assert!(svg.contains("<text class=\"axis-title\" data-axis=\"x\""));
        assert!(svg.contains(">OA, 0-100</text>"));
        let svg = line_panels(
            "turn-depth",
            &XAxis {
                title: "turn",
                labels: &["T1", "T5"],
            },
            &[(
                "OA",
                vec![Line {
                    model: "m".into(),
                    index: 0,
                    values: vec![est(1.0, 0.0, 2.0, 40), est(2.5, 0.0, 100.0, 3)],
                }],
            )],
            &OA,
            None,
        )
        .into_string();
        assert_eq!(svg.matches("class=\"mark\"").count(), 1);
        assert_eq!(svg.matches("class=\"mark few\"").count(), 1, "{svg}");
        assert_eq!(svg.matches("class=\"whisker\"").count(), 2);
        assert!(
            svg.contains("data-value=\"2.5\" data-n=\"3\" data-ci-low=\"0\" data-ci-high=\"100\"")
        );
        // The whisker of 0..100 spans the whole 200-pixel plot (y 24 to 224).
        assert!(svg.contains("V224.0"), "{svg}");
        assert!(svg.contains(">turn</text>"));
    }

    #[test]
    fn crowded_line_charts_colour_the_best_and_worst_only() {
        let names: Vec<String> = (0..10).map(|i| format!("m{i}")).collect();
        let scores: Vec<(&str, Option<f64>)> = names
            .iter()
            .enumerate()
            .map(|(i, m)| (m.as_str(), (i != 9).then_some(i as f64 * 10.0)))
            .collect();
        assert_eq!(focus(&scores[..8]), None, "eight lines are all coloured");
        // m9 has no score; of m0..m8 (0..80) the best four and the worst four.
        let picked = focus(&scores).unwrap();
        assert_eq!(
            picked,
            ["m8", "m7", "m6", "m5", "m3", "m2", "m1", "m0"].map(String::from)
        );
        let lines: Vec<Line> = names
            .iter()
            .enumerate()
            .map(|(index, m)| Line {
                model: m.clone(),
                index,
                values: vec![Some(Estimate::plain(1.0)), Some(Estimate::plain(2.0))],
            })
            .collect();
        let svg = line_panels(
            "turn-depth",
            &XAxis {
                title: "turn",
                labels: &["T1", "T5"],
            },
            &[("OA", lines)],
            &OA,
            Some(&picked),
        )
        .into_string();
        // Every point is still a mark; m4 and m9 are grey, drawn first, and so is their legend.
        assert_eq!(svg.matches("class=\"mark").count(), 20);
        assert_eq!(svg.matches("class=\"mark bg\"").count(), 4);
        assert_eq!(svg.matches("<polyline class=\"line bg\"").count(), 2);
        assert!(svg.find("data-model=\"m4\"").unwrap() < svg.find("data-model=\"m0\"").unwrap());
        assert!(svg.contains("<g class=\"legend bg\" data-model=\"m9\">"));
        assert!(svg.contains("<g class=\"legend\" data-model=\"m0\">"));
        // m8 keeps its own style (dashed, square), whatever the focus.
        assert!(svg.contains("data-model=\"m8\" fill=\"none\" stroke=\"#0072b2\" stroke-width=\"1.8\" stroke-dasharray=\"6 3\""), "{svg}");
    }
}
