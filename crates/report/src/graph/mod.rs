//! The SOP's decision graph drawn as SVG.
//!
//! The layout is dagre's (the `dagre` crate, a port of dagre.js, the layered layout Mermaid
//! uses): ranks by network simplex, crossings reduced by barycentre sweeps, coordinates by
//! Brandes–Köpf, and a place of its own for each edge label, in the rank between the edge's two
//! ends, so that no label sits on a node or on another label. Boxes are sized to their text
//! ([`text_width`], long names wrapped by [`wrap`]); each edge follows the layout's points,
//! straight through each rank it crosses and in a smooth S between ranks, where nothing else is
//! drawn, its arrowhead at the target's border. A stage or action is coloured by the
//! mean Logic of the turns whose reference route passes through it, on [`LOGIC_SCALE`]
//! (ColorBrewer's RdBu in ten bins: diverging around 50, colour-blind safe), whose [`legend`]
//! is drawn above the graphs; each edge is as wide as the turns that took it.

use super::charts::{num, raw};
use super::stats::Mean;
use super::text::{text_width, wrap};
use dagre::graph::{Graph, GraphOptions};
use dagre::{EdgeLabel, LayoutOptions, NodeLabel, Point};
use maud::{Markup, html};
use petgraph::visit::EdgeRef;
use sage_core::scenario::Guard;
use sage_core::sop::{Node, Sop};
use std::collections::BTreeMap;

/// What the runs did on the graph: per stage id or action name, the Logic of the turns whose
/// reference route went through it; per `(from, to)` (`start`, stage ids, action names), the
/// turns whose reference route took that edge.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct GraphUse {
    /// Per stage id or action name.
    pub nodes: BTreeMap<String, Mean>,
    /// Per edge.
    pub edges: BTreeMap<(String, String), u64>,
    /// Per stage id or action name, per model under test: the same Logic of that model's
    /// turns (the per-model view of the graph).
    pub nodes_by_model: BTreeMap<String, BTreeMap<String, Mean>>,
}

impl GraphUse {
    /// Folds in a scored turn of `model` whose reference route went through `path` to
    /// `action`, with Logic `logic`.
    pub fn add(&mut self, model: &str, path: &[String], action: &str, logic: f64) {
        let mut from = "start";
        for node in path.iter().map(String::as_str).chain([action]) {
            self.nodes.entry(node.to_string()).or_default().add(logic);
            self.nodes_by_model
                .entry(node.to_string())
                .or_default()
                .entry(model.to_string())
                .or_default()
                .add(logic);
            *self
                .edges
                .entry((from.to_string(), node.to_string()))
                .or_default() += 1;
            from = node;
        }
    }
}

/// A JSON object of per-model numbers for a `data-*-by-model` attribute: `{"MODEL":VALUE,...}`
/// (models without a value left out; values in their shortest round-trip form). Escaped by
/// maud when it is put in an attribute.
pub fn by_model_json<'a, T: Into<serde_json::Value>>(
    values: impl IntoIterator<Item = (&'a String, Option<T>)>,
) -> String {
    let map: serde_json::Map<String, serde_json::Value> = values
        .into_iter()
        .filter_map(|(m, v)| Some((m.clone(), v?.into())))
        .collect();
    serde_json::Value::Object(map).to_string()
}

/// The name of a node: `start`, a stage id or an action name.
pub fn node_name(sop: &Sop, n: Node) -> &str {
    let sc = sop.scenario();
    match n {
        Node::Start => "start",
        Node::Stage(s) => &sc.stages[s].id,
        Node::Action(a) => &sc.actions[a].name,
    }
}

/// The policy sentences a stage or an action cites (`source`; none for the start).
fn node_source(sop: &Sop, n: Node) -> &[String] {
    let sc = sop.scenario();
    match n {
        Node::Start => &[],
        Node::Stage(s) => &sc.stages[s].source,
        Node::Action(a) => &sc.actions[a].source,
    }
}

/// The policy sentences the branch of stage `from` labelled `label` cites.
fn edge_source<'a>(sop: &'a Sop, from: Node, label: &str) -> &'a [String] {
    match from {
        Node::Stage(s) => sop.scenario().stages[s]
            .transitions
            .iter()
            .find(|t| t.label == label)
            .map_or(&[], |t| &t.source),
        _ => &[],
    }
}

/// A tooltip's lines quoting `source` (empty when it cites nothing).
fn cited(source: &[String]) -> String {
    source.iter().map(|s| format!("\ncites: “{s}”")).collect()
}

// ---------------------------------------------------------------------------------------------
// Colour

/// The colour scale of mean Logic (0-100): ColorBrewer's RdBu (Cynthia Brewer, colorbrewer2.org)
/// in ten bins of ten points, dark red at 0-10 through pale red and pale blue around 50 to dark
/// blue at 90-100. Diverging, and safe for the common colour-vision deficiencies (red and blue
/// stay apart under deuteranopia and protanopia, and the lightness carries the order).
pub const LOGIC_SCALE: [&str; 10] = [
    "#67001f", "#b2182b", "#d6604d", "#f4a582", "#fddbc7", "#d1e5f0", "#92c5de", "#4393c3",
    "#2166ac", "#053061",
];

/// The width of a bin of [`LOGIC_SCALE`], in Logic points.
const BIN: f64 = 100.0 / LOGIC_SCALE.len() as f64;

/// The upper end of bin `i` of [`LOGIC_SCALE`] (10, 20, ... 100).
fn bin_end(i: usize) -> f64 {
    BIN * (i + 1) as f64
}

/// The bin of [`LOGIC_SCALE`] a mean Logic falls in: the first whose upper end is above it, so
/// `[10 i, 10 (i + 1))`, 100 in the last, values outside 0-100 in the first or last (graph.js
/// finds it the same way, from the legend's `data-to`).
fn logic_bin(logic: f64) -> usize {
    (0..LOGIC_SCALE.len())
        .find(|&i| logic < bin_end(i))
        .unwrap_or(LOGIC_SCALE.len() - 1)
}

/// The class that colours an element by a mean Logic (`logic-0` .. `logic-9`, see [`css`]).
pub fn logic_class(logic: f64) -> String {
    format!("logic-{}", logic_bin(logic))
}

/// Dark text (near black: on the middle bins the page's `--fg` would not reach 4.5:1).
const DARK_INK: &str = "#111111";
/// Light text.
const LIGHT_INK: &str = "#ffffff";

/// The relative luminance of a `#rrggbb` colour (WCAG 2).
fn luminance(hex: &str) -> f64 {
    let channel = |i: usize| {
        let v = hex
            .get(i..i + 2)
            .and_then(|h| u8::from_str_radix(h, 16).ok())
            .unwrap_or(0) as f64
            / 255.0;
        if v <= 0.04045 {
            v / 12.92
        } else {
            ((v + 0.055) / 1.055).powf(2.4)
        }
    };
    0.2126 * channel(1) + 0.7152 * channel(3) + 0.0722 * channel(5)
}

/// The WCAG contrast ratio of two `#rrggbb` colours.
fn contrast(a: &str, b: &str) -> f64 {
    let (la, lb) = (luminance(a), luminance(b));
    (la.max(lb) + 0.05) / (la.min(lb) + 0.05)
}

/// The text colour that reads best on `fill`: dark on light fills, white on dark ones.
fn ink(fill: &str) -> &'static str {
    if contrast(fill, DARK_INK) >= contrast(fill, LIGHT_INK) {
        DARK_INK
    } else {
        LIGHT_INK
    }
}

/// The legend of the graphs' and routes tables' colours: the ten bins of [`LOGIC_SCALE`]
/// (`rect.bin[data-from][data-to]`, coloured by their `logic-N` class), ticks at 0, 50 and 100
/// (`text[data-tick]`), the title "mean Logic", and the swatch of a stage no turn went through
/// (`rect.untested`, dashed, no fill).
pub fn legend() -> Markup {
    const W: f64 = 18.0;
    let x = text_width("mean Logic", FONT, false) + 8.0;
    let bar = W * LOGIC_SCALE.len() as f64;
    let swatch = x + bar + 22.0;
    let width = swatch + 20.0 + text_width("untested", FONT, false) + 2.0;
    html! {
        svg.logic-legend viewBox={ "0 0 " (px(width)) " 36" } width=(px(width)) height="36"
            role="img" aria-label="mean Logic: dark red 0, pale at 50, dark blue 100; dashed without colour: untested" {
            text x="0" y="14" { "mean Logic" }
            @for i in 0..LOGIC_SCALE.len() {
                rect class={ "bin logic-" (i) } data-from=(raw(BIN * i as f64))
                    data-to=(raw(bin_end(i))) x=(px(x + W * i as f64)) y="4"
                    width=(px(W)) height="13" {}
            }
            @for tick in [0.0, 50.0, 100.0] {
                @let at = x + bar * tick / 100.0;
                path.tick d={ "M" (px(at)) ",17v4" } {}
                text.tick x=(px(at)) y="31" text-anchor="middle" data-tick=(raw(tick)) { (raw(tick)) }
            }
            rect.untested x=(px(swatch)) y="4" width="16" height="13" rx="2" {}
            text x=(px(swatch + 20.0)) y="14" { "untested" }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Layout

/// Font size of a node's name and title, and of an edge label, in pixels.
const FONT: f64 = 11.0;
/// Font size of a node's statistics line.
const STAT_FONT: f64 = 10.0;
/// Font size of an edge label.
const LABEL_FONT: f64 = 10.0;
/// Widest line of text in a node before it wraps.
const NODE_TEXT_MAX: f64 = 180.0;
/// Widest line of an edge label before it wraps.
const LABEL_TEXT_MAX: f64 = 130.0;
/// Padding inside a node's box.
const PAD_X: f64 = 8.0;
const PAD_Y: f64 = 5.0;
/// Padding inside an edge label's box.
const LABEL_PAD: f64 = 3.0;
/// The length of an arrowhead.
const ARROW: f64 = 8.0;
/// Space around the drawing.
const MARGIN: f64 = 6.0;
/// Radius of the start marker.
const START_R: f64 = 9.0;
/// The narrowest box.
const MIN_NODE_WIDTH: f64 = 64.0;
/// A text's height above its baseline, and below, in ems (DejaVu Sans's ascender and
/// descender, the larger of the two fonts of the width tables).
const ASCENT: f64 = 0.93;
const DESCENT: f64 = 0.24;

/// A line of text in a node or label.
#[derive(Debug, Clone, PartialEq)]
struct Line {
    text: String,
    size: f64,
    bold: bool,
    /// `stat` for the node's statistics line (rewritten by the model view).
    stat: bool,
}

impl Line {
    /// The line's height: its text (ascent and descent) with a little leading.
    fn height(&self) -> f64 {
        ((ASCENT + DESCENT) * self.size + 1.5).ceil()
    }
}

/// The lines of `text` wrapped at `max`.
fn lines(text: &str, max: f64, size: f64, bold: bool) -> Vec<Line> {
    wrap(text, max, size, bold)
        .into_iter()
        .map(|text| Line {
            text,
            size,
            bold,
            stat: false,
        })
        .collect()
}

/// The size of a block of lines with padding `(x, y)`.
fn block_size(lines: &[Line], pad: (f64, f64)) -> (f64, f64) {
    let w = lines
        .iter()
        .map(|l| text_width(&l.text, l.size, l.bold))
        .fold(0.0, f64::max);
    let h: f64 = lines.iter().map(Line::height).sum();
    (w + 2.0 * pad.0, h + 2.0 * pad.1)
}

/// A box: centre and size.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Rect {
    x: f64,
    y: f64,
    w: f64,
    h: f64,
}

impl Rect {
    fn left(&self) -> f64 {
        self.x - self.w / 2.0
    }
    fn top(&self) -> f64 {
        self.y - self.h / 2.0
    }
}

/// An edge to lay out: its ends (node indexes) and the size of its label, if it has one.
#[derive(Debug, Clone, Copy, PartialEq)]
struct EdgeBox {
    from: usize,
    to: usize,
    label: Option<(f64, f64)>,
}

/// An edge as laid out: its points from the source's border to the target's, one per rank it
/// crosses between them (a bend, or its label's centre), and its label's box.
#[derive(Debug, Clone, PartialEq)]
struct LaidEdge {
    points: Vec<(f64, f64)>,
    label: Option<Rect>,
}

/// Where the layout put the graph's parts (indexed as the SOP's petgraph nodes and edges).
#[derive(Debug, Clone, PartialEq)]
struct Drawing {
    nodes: Vec<Rect>,
    edges: Vec<LaidEdge>,
}

/// Lays out a graph of boxes `nodes` (width, height) and `edges` with dagre, top to bottom.
/// `None` when the layout failed or left a node or edge unplaced (never seen; the caller then
/// draws no graph rather than a wrong one).
fn layout(nodes: &[(f64, f64)], edges: &[EdgeBox]) -> Option<Drawing> {
    let mut g: Graph<NodeLabel, EdgeLabel> = Graph::with_options(GraphOptions {
        directed: true,
        multigraph: true,
        compound: false,
    });
    for (i, &(width, height)) in nodes.iter().enumerate() {
        g.set_node(
            format!("n{i}"),
            Some(NodeLabel {
                width,
                height,
                ..NodeLabel::default()
            }),
        );
    }
    for (i, &EdgeBox { from, to, label }) in edges.iter().enumerate() {
        let (width, height) = label.unwrap_or((0.0, 0.0));
        g.set_edge(
            format!("n{from}"),
            format!("n{to}"),
            Some(EdgeLabel {
                width,
                height,
                labelpos: dagre::layout::types::LabelPos::Center,
                ..EdgeLabel::default()
            }),
            Some(&format!("e{i}")),
        );
    }
    let options = LayoutOptions {
        nodesep: 20.0,
        edgesep: 10.0,
        ranksep: 44.0,
        marginx: MARGIN,
        marginy: MARGIN,
        ..LayoutOptions::default()
    };
    // dagre is a young port with internal `unwrap`s: should one fire on a graph no test met,
    // the report goes on without this drawing instead of failing.
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        dagre::layout(&mut g, Some(options))
    }))
    .ok()?;
    let placed = nodes
        .iter()
        .enumerate()
        .map(|(i, &(w, h))| {
            let n = g.node(&format!("n{i}"))?;
            Some(Rect {
                x: n.x?,
                y: n.y?,
                w,
                h,
            })
        })
        .collect::<Option<Vec<Rect>>>()?;
    let routed = edges
        .iter()
        .enumerate()
        .map(|(i, &EdgeBox { from, to, label })| {
            let e = g.edge(
                &format!("n{from}"),
                &format!("n{to}"),
                Some(&format!("e{i}")),
            )?;
            let points: Vec<(f64, f64)> = e.points.iter().map(|p: &Point| (p.x, p.y)).collect();
            let label = match (label, e.x, e.y) {
                (Some((w, h)), Some(x), Some(y)) => Some(Rect { x, y, w, h }),
                (Some(_), _, _) => return None,
                (None, _, _) => None,
            };
            (points.len() >= 2).then_some(LaidEdge { points, label })
        })
        .collect::<Option<Vec<_>>>()?;
    Some(Drawing {
        nodes: placed,
        edges: routed,
    })
}

/// A number for an SVG attribute, to a tenth of a pixel.
fn px(v: f64) -> String {
    format!("{v:.1}")
}

/// The unit vector along `(x, y)`, none for a null one.
fn unit(x: f64, y: f64) -> Option<(f64, f64)> {
    let n = x.hypot(y);
    (n > 1e-9).then(|| (x / n, y / n))
}

/// The vertical extent of the rank centred at height `y`: from the top of its highest box or
/// label to the bottom of its lowest (dagre centres a rank's boxes on one line), or `y` itself
/// for a rank that holds only bends of longer edges.
fn band(boxes: &[Rect], y: f64) -> (f64, f64) {
    boxes
        .iter()
        .filter(|b| (b.y - y).abs() < 0.5)
        .fold((y, y), |(top, bottom), b| {
            (top.min(b.top()), bottom.max(b.top() + b.h))
        })
}

/// Where an edge meets a node's side: the x of each of `aims` (the x the edges come from or
/// go to, in that order, sorted), kept inside the side and up to 24 px apart where the side
/// is wide enough, each as near its aim as that allows.
fn ports(node: Rect, aims: &[f64]) -> Vec<f64> {
    let inset = (node.w / 2.0).min(10.0);
    let (lo, hi) = (node.left() + inset, node.left() + node.w - inset);
    let gap = if aims.len() > 1 {
        ((hi - lo) / (aims.len() - 1) as f64).min(24.0)
    } else {
        0.0
    };
    let mut xs: Vec<f64> = aims.iter().map(|a| a.clamp(lo, hi)).collect();
    for i in 1..xs.len() {
        xs[i] = xs[i].max(xs[i - 1] + gap);
    }
    let mut limit = hi;
    for x in xs.iter_mut().rev() {
        *x = x.min(limit);
        limit = *x - gap;
    }
    xs
}

/// An edge routed through the ranks: `dir` 1 down, -1 up; `inner` the layout's points between
/// the two ends (one per rank crossed: a bend or the label); `start`, `end` the x where it leaves
/// the source and meets the target ([`ports`]).
struct Route<'a> {
    from: Rect,
    to: Rect,
    dir: f64,
    inner: &'a [(f64, f64)],
    start: f64,
    end: f64,
}

impl Route<'_> {
    /// The SVG path: straight down (or up) through each rank it crosses, at the x the layout
    /// gave it there, and an S-shaped cubic Bézier between ranks, where no box or label is;
    /// it leaves the source's bottom (top) and reaches the target's top (bottom) vertically,
    /// [`ARROW`] short of it for the arrowhead. Also returns the path's points (its bounds).
    fn path(&self, boxes: &[Rect]) -> (String, Vec<(f64, f64)>) {
        let dir = self.dir;
        let side = |b: Rect, leaving: bool| {
            if (dir > 0.0) == leaving {
                b.top() + b.h
            } else {
                b.top()
            }
        };
        let (enter, exit) = (
            |(top, bottom): (f64, f64)| if dir > 0.0 { top } else { bottom },
            |(top, bottom): (f64, f64)| if dir > 0.0 { bottom } else { top },
        );
        // Vertical runs (x, from y, to y): the source's rank, each rank crossed, the target's.
        let mut runs = vec![(
            self.start,
            side(self.from, true),
            exit(band(boxes, self.from.y)),
        )];
        for &(x, y) in self.inner {
            let b = band(boxes, y);
            runs.push((x, enter(b), exit(b)));
        }
        let tip = side(self.to, false) - dir * ARROW;
        let into = enter(band(boxes, self.to.y));
        runs.push((
            self.end,
            if (tip - into) * dir < 0.0 { tip } else { into },
            tip,
        ));
        let mut d = format!("M{},{}", px(runs[0].0), px(runs[0].1));
        let mut points = Vec::with_capacity(2 * runs.len() + 1);
        for (i, &(x, y_in, y_out)) in runs.iter().enumerate() {
            if i > 0 {
                let (px0, py0) = (runs[i - 1].0, runs[i - 1].2);
                let mid = (py0 + y_in) / 2.0;
                d.push_str(&format!(
                    "C{},{} {},{} {},{}",
                    px(px0),
                    px(mid),
                    px(x),
                    px(mid),
                    px(x),
                    px(y_in)
                ));
            }
            if (y_out - y_in) * dir > 0.0 {
                d.push_str(&format!("L{},{}", px(x), px(y_out)));
            }
            points.extend([(x, y_in), (x, y_out)]);
        }
        points.push((self.end, side(self.to, false)));
        (d, points)
    }
}

/// An edge meeting a node's side: the x it comes from or goes to, the edge, and whether it
/// leaves the node there.
struct Meeting {
    aim: f64,
    edge: usize,
    leaving: bool,
}

/// Every edge's path (see [`Route::path`]), in edge order; edges that stay within a rank are
/// drawn by [`curve_through`].
fn edge_paths(drawing: &Drawing, edges: &[EdgeBox]) -> Vec<(String, Vec<(f64, f64)>)> {
    let boxes: Vec<Rect> = drawing
        .nodes
        .iter()
        .copied()
        .chain(drawing.edges.iter().filter_map(|e| e.label))
        .collect();
    // Per edge: down (1), up (-1) or neither (0), and the x it aims at when it leaves and when
    // it arrives (its first and last bend).
    let shapes: Vec<(f64, f64, f64)> = drawing
        .edges
        .iter()
        .zip(edges)
        .map(|(laid, e)| {
            let (from, to) = (drawing.nodes[e.from], drawing.nodes[e.to]);
            let inner = &laid.points[1..laid.points.len() - 1];
            let first = inner.first().copied().unwrap_or((to.x, to.y));
            let last = inner.last().copied().unwrap_or((from.x, from.y));
            let dir = if first.1 > from.top() + from.h && last.1 < to.top() {
                1.0
            } else if first.1 < from.top() && last.1 > to.top() + to.h {
                -1.0
            } else {
                0.0
            };
            (dir, first.0, last.0)
        })
        .collect();
    // The edges meeting each side of each node (bottom: true), ordered by the x they aim at.
    let mut sides: BTreeMap<(usize, bool), Vec<Meeting>> = BTreeMap::new();
    for (edge, (&(dir, out, into), e)) in shapes.iter().zip(edges).enumerate() {
        if dir != 0.0 {
            let leaving = Meeting {
                aim: out,
                edge,
                leaving: true,
            };
            let arriving = Meeting {
                aim: into,
                edge,
                leaving: false,
            };
            sides.entry((e.from, dir > 0.0)).or_default().push(leaving);
            sides.entry((e.to, dir < 0.0)).or_default().push(arriving);
        }
    }
    let mut start = vec![0.0; edges.len()];
    let mut end = vec![0.0; edges.len()];
    for ((node, _), mut meeting) in sides {
        meeting.sort_by(|a, b| a.aim.total_cmp(&b.aim).then(a.edge.cmp(&b.edge)));
        let aims: Vec<f64> = meeting.iter().map(|m| m.aim).collect();
        for (x, m) in ports(drawing.nodes[node], &aims).into_iter().zip(&meeting) {
            if m.leaving {
                start[m.edge] = x;
            } else {
                end[m.edge] = x;
            }
        }
    }
    drawing
        .edges
        .iter()
        .zip(edges)
        .enumerate()
        .map(|(i, (laid, e))| {
            let (from, to) = (drawing.nodes[e.from], drawing.nodes[e.to]);
            if shapes[i].0 == 0.0 {
                return curve_through(&laid.points);
            }
            Route {
                from,
                to,
                dir: shapes[i].0,
                inner: &laid.points[1..laid.points.len() - 1],
                start: start[i],
                end: end[i],
            }
            .path(&boxes)
        })
        .collect()
}

/// The SVG path of an edge that does not run from rank to rank (a self-loop, which a compiled
/// SOP never has, but dagre lays out): a Catmull–Rom curve through the layout's `points`, its
/// end pulled back by [`ARROW`] along the last stretch for the arrowhead. Also returns the
/// path's points and control points (its bounds).
fn curve_through(points: &[(f64, f64)]) -> (String, Vec<(f64, f64)>) {
    let mut pts = points.to_vec();
    let n = pts.len();
    let ((x0, y0), (x1, y1)) = (pts[n - 2], pts[n - 1]);
    if let Some((ux, uy)) = unit(x1 - x0, y1 - y0) {
        pts[n - 1] = (x1 - ux * ARROW, y1 - uy * ARROW);
    }
    let tangent = |i: usize| {
        let (a, b) = (pts[i.saturating_sub(1)], pts[(i + 1).min(n - 1)]);
        ((b.0 - a.0) / 2.0, (b.1 - a.1) / 2.0)
    };
    let mut d = format!("M{},{}", px(pts[0].0), px(pts[0].1));
    let mut hull = vec![pts[0]];
    for i in 0..n - 1 {
        let (a, b, ta, tb) = (pts[i], pts[i + 1], tangent(i), tangent(i + 1));
        let c1 = (a.0 + ta.0 / 3.0, a.1 + ta.1 / 3.0);
        let c2 = (b.0 - tb.0 / 3.0, b.1 - tb.1 / 3.0);
        d.push_str(&format!(
            "C{},{} {},{} {},{}",
            px(c1.0),
            px(c1.1),
            px(c2.0),
            px(c2.1),
            px(b.0),
            px(b.1)
        ));
        hull.extend([c1, c2, b]);
    }
    hull.push(points[n - 1]);
    (d, hull)
}

/// What a node shows above its statistics line: its name (bold) and a stage's title.
fn node_lines(sop: &Sop, node: Node) -> Vec<Line> {
    let sc = sop.scenario();
    match node {
        Node::Start => Vec::new(),
        Node::Stage(s) => {
            let mut l = lines(&sc.stages[s].id, NODE_TEXT_MAX, FONT, true);
            l.extend(lines(&sc.stages[s].title, NODE_TEXT_MAX, FONT, false));
            l
        }
        Node::Action(a) => lines(&sc.actions[a].name, NODE_TEXT_MAX, FONT, true),
    }
}

/// The statistics line of a node with Logic `mean` (`Logic X · N turns`, or `untested`).
fn stat(mean: &Mean) -> String {
    match mean.get() {
        Some(l) => format!("Logic {} · {} turns", num(l), mean.n()),
        None => "untested".to_string(),
    }
}

/// The SVG of a scenario's graph, coloured by `used` (`index` makes its marker id unique), or
/// `None` when the layout could not place it.
pub fn svg(sop: &Sop, used: &GraphUse, index: usize) -> Option<Markup> {
    let g = sop.graph();
    let id = &sop.scenario().id;
    // What each node shows, and its size: wide enough for the statistics line of every model
    // (the model view rewrites it).
    let empty = BTreeMap::new();
    let (texts, sizes): (Vec<Vec<Line>>, Vec<(f64, f64)>) = g
        .node_indices()
        .map(|n| {
            let node = g[n];
            if node == Node::Start {
                return (Vec::new(), (2.0 * START_R, 2.0 * START_R));
            }
            let name = node_name(sop, node);
            let mean = used.nodes.get(name).copied().unwrap_or_default();
            let own = stat(&mean);
            let widest = used
                .nodes_by_model
                .get(name)
                .unwrap_or(&empty)
                .values()
                .map(stat)
                .chain([own.clone(), "untested".to_string()])
                .max_by(|a, b| {
                    text_width(a, STAT_FONT, false).total_cmp(&text_width(b, STAT_FONT, false))
                })
                .unwrap_or_default();
            let mut lines = node_lines(sop, node);
            lines.push(Line {
                text: widest,
                size: STAT_FONT,
                bold: false,
                stat: true,
            });
            let (w, h) = block_size(&lines, (PAD_X, PAD_Y));
            if let Some(last) = lines.last_mut() {
                last.text = own;
            }
            (lines, (w.max(MIN_NODE_WIDTH), h))
        })
        .unzip();
    let labels: Vec<Vec<Line>> = g
        .edge_references()
        .map(|e| match e.weight().guard {
            Guard::Always => Vec::new(),
            _ => lines(&e.weight().label, LABEL_TEXT_MAX, LABEL_FONT, false),
        })
        .collect();
    let edges: Vec<EdgeBox> = g
        .edge_references()
        .map(|e| {
            let label = &labels[e.id().index()];
            EdgeBox {
                from: e.source().index(),
                to: e.target().index(),
                label: (!label.is_empty()).then(|| block_size(label, (LABEL_PAD, LABEL_PAD))),
            }
        })
        .collect();
    let drawing = layout(&sizes, &edges)?;
    let most = used.edges.values().copied().max().unwrap_or(0).max(1) as f64;
    let paths = edge_paths(&drawing, &edges);
    // The bounds of everything drawn: boxes, labels, curves (inside their control points).
    let (mut left, mut top) = (f64::INFINITY, f64::INFINITY);
    let (mut right, mut bottom) = (f64::NEG_INFINITY, f64::NEG_INFINITY);
    let mut grow = |x0: f64, y0: f64, x1: f64, y1: f64| {
        left = left.min(x0);
        top = top.min(y0);
        right = right.max(x1);
        bottom = bottom.max(y1);
    };
    for b in drawing
        .nodes
        .iter()
        .chain(drawing.edges.iter().filter_map(|e| e.label.as_ref()))
    {
        grow(b.left(), b.top(), b.left() + b.w, b.top() + b.h);
    }
    for (_, hull) in &paths {
        for &(x, y) in hull {
            grow(x - 3.0, y - 3.0, x + 3.0, y + 3.0);
        }
    }
    let (x0, y0) = (left - MARGIN, top - MARGIN);
    let (width, height) = (right - left + 2.0 * MARGIN, bottom - top + 2.0 * MARGIN);
    let marker = format!("arrow-{index}");
    Some(html! {
        svg.sop-graph data-scenario=(id) viewBox={ (px(x0)) " " (px(y0)) " " (px(width)) " " (px(height)) }
            width=(px(width)) height=(px(height)) role="img" aria-label={ "Decision graph of " (id) } {
            defs {
                marker id=(marker) viewBox="0 0 10 10" refX="0" refY="5" markerUnits="userSpaceOnUse"
                    markerWidth=(ARROW) markerHeight=(ARROW) orient="auto" {
                    path.arrowhead d="M0,0L10,5L0,10z" {}
                }
            }
            @for e in g.edge_references() {
                @let from = node_name(sop, g[e.source()]);
                @let to = node_name(sop, g[e.target()]);
                @let turns = used.edges.get(&(from.to_string(), to.to_string())).copied().unwrap_or(0);
                @let stroke = 1.0 + 4.0 * ((1.0 + turns as f64).ln() / (1.0 + most).ln());
                path class=(if turns == 0 { "edge untested" } else { "edge" }) data-from=(from) data-to=(to)
                    data-turns=(turns) data-edge=(e.id().index()) d=(paths[e.id().index()].0)
                    stroke-width=(px(stroke)) marker-end={ "url(#" (marker) ")" } {
                    title { (from) " → " (to) @if !labels[e.id().index()].is_empty() { ": " (e.weight().label) } " (" (turns) " turns)"
                        (cited(edge_source(sop, g[e.source()], &e.weight().label))) }
                }
            }
            @for e in g.edge_references() {
                @if let (Some(b), false) = (drawing.edges[e.id().index()].label, labels[e.id().index()].is_empty()) {
                    g.elabel data-edge=(e.id().index()) {
                        rect x=(px(b.left())) y=(px(b.top())) width=(px(b.w)) height=(px(b.h)) rx="3" {}
                        (text_block(&labels[e.id().index()], b, LABEL_PAD))
                    }
                }
            }
            @for n in g.node_indices() {
                @let b = drawing.nodes[n.index()];
                @match g[n] {
                    Node::Start => {
                        g.start { circle cx=(px(b.x)) cy=(px(b.y)) r=(START_R) {} title { "start" } }
                    }
                    node => (node_group(sop, node, used, b, &texts[n.index()]))
                }
            }
        }
    })
}

/// A block of lines centred in box `b`, from its top plus `pad`.
fn text_block(lines: &[Line], b: Rect, pad: f64) -> Markup {
    let mut y = b.top() + pad;
    html! {
        @for line in lines {
            @let baseline = {
                let top = y;
                y += line.height();
                top + (line.height() - (ASCENT + DESCENT) * line.size) / 2.0 + ASCENT * line.size
            };
            text class=[line.stat.then_some("stat")] x=(px(b.x)) y=(px(baseline)) text-anchor="middle"
                font-weight=[line.bold.then_some("bold")] { (line.text) }
        }
    }
}

/// A stage's or action's group: its box coloured by Logic, its text, its per-model numbers.
fn node_group(sop: &Sop, node: Node, used: &GraphUse, b: Rect, lines: &[Line]) -> Markup {
    let name = node_name(sop, node);
    let mean = used.nodes.get(name).copied().unwrap_or_default();
    let logic = mean.get();
    let (kind, stage, action) = match node {
        Node::Stage(_) => ("node", Some(name), None),
        _ => ("action", None, Some(name)),
    };
    let class = match logic {
        Some(l) => format!("{kind} {}", logic_class(l)),
        None => format!("{kind} untested"),
    };
    let models = used.nodes_by_model.get(name).into_iter().flatten();
    let logic_by_model = by_model_json(models.clone().map(|(m, x)| (m, x.get())));
    let turns_by_model = by_model_json(models.map(|(m, x)| (m, Some(x.n()))));
    html! {
        g class=(class) data-stage=[stage] data-action=[action] data-turns=(mean.n())
            data-logic=[logic.map(raw)] data-logic-by-model=(logic_by_model)
            data-turns-by-model=(turns_by_model) {
            rect x=(px(b.left())) y=(px(b.top())) width=(px(b.w)) height=(px(b.h))
                rx=(if stage.is_some() { "3" } else { "12" }) {}
            (text_block(lines, b, PAD_Y))
            title { (name) ": " (stat(&mean)) (cited(node_source(sop, node))) }
        }
    }
}

/// The graphs' model view: `select[data-graph-model]` and `#graph-model=NAME` recolour the
/// graphs and the routes tables by one model (from the `data-*-by-model` attributes).
pub const SCRIPT: &str = include_str!("../js/graph.js");

/// Style of the graphs, the legend and the routes tables, with the colour of each bin of
/// [`LOGIC_SCALE`] (`.logic-N`: a box's fill and its text, a cell's background and text).
pub fn css() -> String {
    let mut out = String::from(CSS);
    for (i, fill) in LOGIC_SCALE.iter().enumerate() {
        let ink = ink(fill);
        out.push_str(&format!(
            "svg.sop-graph g.logic-{i}>rect,svg.logic-legend rect.logic-{i}{{fill:{fill}}}\
             svg.sop-graph g.logic-{i}>text{{fill:{ink}}}\
             table.data td.logic-{i}{{background:{fill};color:{ink}}}\n"
        ));
    }
    out
}

/// The rules that do not depend on the scale. `--sticky-top` (read by the shared sticky table
/// headers) puts the headers of this section below the page's sticky bar and the model bar.
const CSS: &str = r#"
#sop-graphs{--sticky-top:76px}
#sop-graphs div.graph-model{position:sticky;top:32px;z-index:4;background:var(--bg);height:44px;display:flex;flex-wrap:wrap;align-items:center;gap:4px 24px;margin:6px 0;border-bottom:1px solid var(--line)}
#sop-graphs div.graph-model select{font-size:14px}
svg.logic-legend{font-size:11px;display:block}
svg.logic-legend text{fill:var(--fg)}
svg.logic-legend .tick{stroke:var(--fg)}
svg.logic-legend rect.untested{fill:none;stroke:var(--fg);stroke-dasharray:3 2}
table.route-models td.worst{outline:2px solid var(--fg);outline-offset:-3px;font-weight:700}
table.route-models .selected{box-shadow:inset 0 0 0 2px var(--accent)}
table.route-models td a,table.routes td a{color:inherit}
table.route-models td:first-child{color:var(--fg);min-width:18em;max-width:30em}
table.routes tr.model-untested td{color:var(--muted)}
details.route-models>summary{cursor:pointer;color:var(--muted);margin:4px 0}
div.graph-scroll{overflow-x:auto;max-width:100%}
svg.sop-graph{font-size:11px;display:block;margin:8px 0}
svg.sop-graph .edge{fill:none;stroke:var(--muted)}
svg.sop-graph .edge.untested{stroke-dasharray:4 3;opacity:.6}
svg.sop-graph .arrowhead{fill:var(--muted)}
svg.sop-graph g.elabel rect{fill:var(--bg);stroke:var(--line)}
svg.sop-graph g.elabel text{font-size:10px;fill:var(--fg)}
svg.sop-graph g.node>rect,svg.sop-graph g.action>rect{stroke:var(--fg);stroke-width:1}
svg.sop-graph g.untested>rect{stroke-dasharray:4 3;fill:var(--panel)}
svg.sop-graph g.untested>text{fill:var(--fg)}
svg.sop-graph .stat{font-size:10px}
svg.sop-graph .start circle{fill:var(--fg)}
"#;

#[cfg(test)]
mod tests;
