//! Inline SVG charts: horizontal grouped bars (one group per model) and line charts (one line
//! per model). Every data mark is an element of class `mark` with `data-model`, `data-series`
//! and `data-value` (the raw number) and a `<title>` tooltip, so the chart reads the same
//! without JavaScript and a test can check each value.

use super::page::escape;
use std::fmt::Write;

/// Series colours (colour-blind safe, then darker variants).
pub const PALETTE: [&str; 12] = [
    "#4477aa", "#ee6677", "#228833", "#ccbb44", "#66ccee", "#aa3377", "#bbbbbb", "#332288",
    "#117733", "#882255", "#44aa99", "#999933",
];

/// The colour of series (or line) `i`.
pub fn colour(i: usize) -> &'static str {
    PALETTE[i % PALETTE.len()]
}

/// The colour of line `i`: the palette without its grey (grey marks a line in the background).
fn line_colour(i: usize) -> &'static str {
    let c = i % (PALETTE.len() - 1);
    PALETTE[c + usize::from(c >= GREY_AT)]
}

/// Where the palette's grey is (left out of line charts).
const GREY_AT: usize = 6;

/// Dash pattern of line `i` (a second round of colours is dashed).
fn dash(i: usize) -> &'static str {
    match (i / (PALETTE.len() - 1)) % 3 {
        0 => "",
        1 => " stroke-dasharray=\"6 3\"",
        _ => " stroke-dasharray=\"2 3\"",
    }
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

/// One group of bars: a model and its value per series (`None`: no data).
#[derive(Debug, Clone)]
pub struct BarGroup {
    /// The model (group label).
    pub model: String,
    /// One value per series.
    pub values: Vec<Option<f64>>,
}

/// Horizontal grouped bars: one group per model, one bar per series, on a 0..`max` axis.
pub fn grouped_bars(
    chart: &str,
    series: &[&str],
    groups: &[BarGroup],
    max: f64,
    unit: &str,
) -> String {
    let label_w = 190.0;
    let plot_w = 520.0;
    let bar_h = 9.0;
    let group_h = bar_h * series.len() as f64 + 10.0;
    let legend_h = 22.0;
    let height = legend_h + group_h * groups.len().max(1) as f64 + 24.0;
    let width = label_w + plot_w + 60.0;
    let max = if max > 0.0 { max } else { 1.0 };
    let mut out = String::new();
    let _ = write!(
        out,
        "<svg class=\"chart\" data-chart=\"{chart}\" viewBox=\"0 0 {width} {height}\" width=\"{width}\" height=\"{height}\" role=\"img\">"
    );
    legend(&mut out, series, label_w, 14.0);
    // Grid lines at quarters of the axis.
    let top = legend_h;
    let bottom = height - 20.0;
    for q in 0..=4 {
        let x = label_w + plot_w * q as f64 / 4.0;
        let _ = write!(
            out,
            "<line class=\"axis\" x1=\"{x}\" y1=\"{top}\" x2=\"{x}\" y2=\"{bottom}\"/><text x=\"{x}\" y=\"{}\" text-anchor=\"middle\">{}</text>",
            bottom + 13.0,
            num(max * q as f64 / 4.0)
        );
    }
    for (g, group) in groups.iter().enumerate() {
        let y0 = top + group_h * g as f64 + 4.0;
        let model = escape(&group.model);
        let _ = write!(
            out,
            "<text x=\"{}\" y=\"{}\" text-anchor=\"end\">{}</text>",
            label_w - 6.0,
            y0 + group_h / 2.0,
            model
        );
        for (s, value) in group.values.iter().enumerate() {
            let Some(v) = value else { continue };
            let y = y0 + bar_h * s as f64;
            let w = (v.max(0.0) / max).min(1.0) * plot_w;
            let _ = write!(
                out,
                "<rect class=\"mark\" data-model=\"{model}\" data-series=\"{}\" data-value=\"{}\" x=\"{label_w}\" y=\"{y}\" width=\"{w:.1}\" height=\"{}\" fill=\"{}\"><title>{model} · {}: {}{unit}</title></rect>",
                escape(series[s]),
                raw(*v),
                bar_h - 1.0,
                colour(s),
                escape(series[s]),
                num(*v)
            );
        }
    }
    out.push_str("</svg>");
    out
}

/// A legend row of coloured squares at `(x, y)`.
fn legend(out: &mut String, series: &[&str], x: f64, y: f64) {
    let mut x = x;
    for (i, s) in series.iter().enumerate() {
        let _ = write!(
            out,
            "<rect x=\"{x}\" y=\"{}\" width=\"10\" height=\"10\" fill=\"{}\"/><text x=\"{}\" y=\"{y}\">{}</text>",
            y - 9.0,
            colour(i),
            x + 14.0,
            escape(s)
        );
        x += 24.0 + 7.0 * s.chars().count() as f64;
    }
}

/// One line: a model and its value at each x label (`None`: no point).
#[derive(Debug, Clone)]
pub struct Line {
    /// The model.
    pub model: String,
    /// One value per x label.
    pub values: Vec<Option<f64>>,
}

/// Line charts with more models than this draw only [`FOCUS_EACH`] best and worst in colour.
pub const MAX_COLOURED_LINES: usize = 8;
/// How many of the best and of the worst models a crowded line chart draws in colour.
pub const FOCUS_EACH: usize = 4;

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

/// Line panels side by side in one SVG (one per `(title, lines)`), sharing x labels and the
/// 0..`max` axis; a legend of the models below. With `coloured`, only those models' lines are
/// in colour, the others grey and thin behind them (class `bg`, drawn first); a click on a
/// legend entry (`g.legend[data-model]`, [`SCRIPT`]) colours or greys a model's line.
pub fn line_panels(
    chart: &str,
    x_labels: &[&str],
    panels: &[(&str, Vec<Line>)],
    max: f64,
    coloured: Option<&[String]>,
) -> String {
    let panel_w = if panels.len() == 1 { 560.0 } else { 300.0 };
    let panel_h = 200.0;
    let pad = 36.0;
    let models: Vec<&str> = panels
        .first()
        .map(|(_, lines)| lines.iter().map(|l| l.model.as_str()).collect())
        .unwrap_or_default();
    let width = pad + (panel_w + pad) * panels.len().max(1) as f64;
    let columns = (((width - pad) / LEGEND_W) as usize).max(1);
    let legend_rows = models.len().div_ceil(columns).max(1) as f64;
    let height = panel_h + 60.0 + legend_rows * 16.0;
    let max = if max > 0.0 { max } else { 1.0 };
    let mut out = String::new();
    let _ = write!(
        out,
        "<svg class=\"chart\" data-chart=\"{chart}\" viewBox=\"0 0 {width} {height}\" width=\"{width}\" height=\"{height}\" role=\"img\">"
    );
    let on = |m: &str| coloured.is_none_or(|c| c.iter().any(|x| x == m));
    // Colour slots: the coloured models first, so they get distinct colours.
    let mut slots: Vec<&str> = models.iter().copied().filter(|m| on(m)).collect();
    slots.extend(models.iter().copied().filter(|m| !on(m)));
    let slot = |m: &str| slots.iter().position(|x| *x == m).unwrap_or(0);
    let n = x_labels.len().max(2) as f64 - 1.0;
    for (p, (title, lines)) in panels.iter().enumerate() {
        let x0 = pad + (panel_w + pad) * p as f64;
        let y0 = 24.0;
        let _ = write!(
            out,
            "<text x=\"{}\" y=\"14\" text-anchor=\"middle\" font-weight=\"bold\">{}</text>",
            x0 + panel_w / 2.0,
            escape(title)
        );
        for q in 0..=4 {
            let y = y0 + panel_h - panel_h * q as f64 / 4.0;
            let _ = write!(
                out,
                "<line class=\"axis\" x1=\"{x0}\" y1=\"{y}\" x2=\"{}\" y2=\"{y}\"/><text x=\"{}\" y=\"{}\" text-anchor=\"end\">{}</text>",
                x0 + panel_w,
                x0 - 4.0,
                y + 4.0,
                num(max * q as f64 / 4.0)
            );
        }
        let px = |i: usize| x0 + 10.0 + (panel_w - 20.0) * i as f64 / n;
        let py = |v: f64| y0 + panel_h - panel_h * (v.max(0.0) / max).min(1.0);
        for (i, label) in x_labels.iter().enumerate() {
            let _ = write!(
                out,
                "<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">{}</text>",
                px(i),
                y0 + panel_h + 14.0,
                escape(label)
            );
        }
        // Grey lines first, under the coloured ones.
        let order = lines
            .iter()
            .filter(|l| !on(&l.model))
            .chain(lines.iter().filter(|l| on(&l.model)));
        for line in order {
            let l = slot(&line.model);
            let bg = if on(&line.model) { "" } else { " bg" };
            let model = escape(&line.model);
            let points: Vec<String> = line
                .values
                .iter()
                .enumerate()
                .filter_map(|(i, v)| v.map(|v| format!("{:.1},{:.1}", px(i), py(v))))
                .collect();
            if points.len() > 1 {
                let _ = write!(
                    out,
                    "<polyline class=\"line{bg}\" fill=\"none\" stroke=\"{}\" stroke-width=\"1.6\"{} points=\"{}\" data-model=\"{model}\"/>",
                    line_colour(l),
                    dash(l),
                    points.join(" ")
                );
            }
            for (i, v) in line.values.iter().enumerate() {
                let Some(v) = v else { continue };
                let _ = write!(
                    out,
                    "<circle class=\"mark{bg}\" data-model=\"{model}\" data-series=\"{}\" data-value=\"{}\" cx=\"{:.1}\" cy=\"{:.1}\" r=\"3\" fill=\"{}\"><title>{model} · {} {}: {}</title></circle>",
                    escape(&format!("{title} {}", x_labels[i])),
                    raw(*v),
                    px(i),
                    py(*v),
                    line_colour(l),
                    escape(title),
                    escape(x_labels[i]),
                    num(*v)
                );
            }
        }
    }
    // Legend of the models.
    let ly = y0_legend(panel_h);
    for (i, m) in models.iter().enumerate() {
        let x = pad + LEGEND_W * (i % columns) as f64;
        let y = ly + 16.0 * (i / columns) as f64;
        let bg = if on(m) { "" } else { " bg" };
        let _ = write!(
            out,
            "<g class=\"legend{bg}\" data-model=\"{}\"><line x1=\"{x}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"{}\" stroke-width=\"2\"{}/><text x=\"{}\" y=\"{y}\">{}</text><title>{}: click to colour or grey its line</title></g>",
            escape(m),
            y - 4.0,
            x + 18.0,
            y - 4.0,
            line_colour(slot(m)),
            dash(slot(m)),
            x + 22.0,
            escape(m),
            escape(m)
        );
    }
    out.push_str("</svg>");
    out
}

/// Line charts' legends: a click on `g.legend[data-model]` toggles class `bg` (grey, behind)
/// on that model's line, points and legend entry in that chart.
pub const SCRIPT: &str = include_str!("js/charts.js");

/// Style of the charts' grey lines and clickable legends.
pub const CSS: &str = r#"
svg.chart g.legend{cursor:pointer}
svg.chart g.legend.bg line{stroke:#b8bec9;stroke-dasharray:none}
svg.chart g.legend.bg text{fill:var(--muted)}
svg.chart polyline.bg{stroke:#b8bec9;stroke-width:1;stroke-dasharray:none;opacity:.7}
svg.chart circle.mark.bg{fill:#b8bec9;r:1.5px;opacity:.7}
"#;

/// Width of one model in a line chart's legend.
const LEGEND_W: f64 = 170.0;

fn y0_legend(panel_h: f64) -> f64 {
    24.0 + panel_h + 36.0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_are_short() {
        assert_eq!(num(12.345), "12.35");
        assert_eq!(num(50.0), "50");
        assert_eq!(num(-0.001), "0");
        assert_eq!(raw(0.1 + 0.2), "0.30000000000000004");
    }

    #[test]
    fn every_value_is_a_mark() {
        let svg = grouped_bars(
            "execution-gap",
            &["a", "b"],
            &[BarGroup {
                model: "m<1>".into(),
                values: vec![Some(40.0), None],
            }],
            100.0,
            "",
        );
        assert_eq!(svg.matches("class=\"mark\"").count(), 1);
        assert!(svg.contains("data-model=\"m&lt;1&gt;\" data-series=\"a\" data-value=\"40\""));
        let svg = line_panels(
            "turn-depth",
            &["T1", "T5"],
            &[(
                "OA",
                vec![Line {
                    model: "m".into(),
                    values: vec![Some(1.0), Some(2.5)],
                }],
            )],
            100.0,
            None,
        );
        assert_eq!(svg.matches("class=\"mark\"").count(), 2);
        assert!(svg.contains("data-value=\"2.5\""));
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
        assert_eq!(PALETTE[GREY_AT], "#bbbbbb");
        let colours: Vec<&str> = (0..11).map(line_colour).collect();
        assert!(
            !colours.contains(&"#bbbbbb")
                && colours[6] == "#332288"
                && line_colour(11) == PALETTE[0]
        );
        // m9 has no score; of m0..m8 (0..80) the best four and the worst four.
        let picked = focus(&scores).unwrap();
        assert_eq!(
            picked,
            ["m8", "m7", "m6", "m5", "m3", "m2", "m1", "m0"].map(String::from)
        );
        let lines: Vec<Line> = names
            .iter()
            .map(|m| Line {
                model: m.clone(),
                values: vec![Some(1.0), Some(2.0)],
            })
            .collect();
        let svg = line_panels(
            "turn-depth",
            &["T1", "T5"],
            &[("OA", lines)],
            100.0,
            Some(&picked),
        );
        // Every point is still a mark; m4 and m9 are grey, drawn first, and so is their legend.
        assert_eq!(svg.matches("class=\"mark").count(), 20);
        assert_eq!(svg.matches("class=\"mark bg\"").count(), 4);
        assert_eq!(svg.matches("<polyline class=\"line bg\"").count(), 2);
        assert!(svg.find("data-model=\"m4\"").unwrap() < svg.find("data-model=\"m0\"").unwrap());
        assert!(svg.contains("<g class=\"legend bg\" data-model=\"m9\">"));
        assert!(svg.contains("<g class=\"legend\" data-model=\"m0\">"));
    }
}
