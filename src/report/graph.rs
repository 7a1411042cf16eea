//! The SOP's decision graph drawn as SVG: a layered layout computed here (back edges found by a
//! depth-first search, layers by longest path over the remaining edges, order within a layer by
//! barycentre sweeps), each stage and action coloured by the mean Logic of the turns whose
//! reference route passes through it, each edge as wide as the turns that took it.

use super::charts::num;
use super::page::escape;
use super::stats::Mean;
use crate::sop::{Node, Sop};
use petgraph::visit::EdgeRef;
use std::collections::BTreeMap;
use std::fmt::Write;

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
/// (models without a value left out; values in their shortest round-trip form). Escape it
/// before putting it in an attribute.
pub fn by_model_json<'a, T: Into<serde_json::Value>>(
    values: impl IntoIterator<Item = (&'a String, Option<T>)>,
) -> String {
    let map: serde_json::Map<String, serde_json::Value> = values
        .into_iter()
        .filter_map(|(m, v)| Some((m.clone(), v?.into())))
        .collect();
    serde_json::Value::Object(map).to_string()
}

/// Where a node is drawn.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Placed {
    /// Layer (0 = the start).
    pub layer: usize,
    /// Centre x.
    pub x: f64,
    /// Top y.
    pub y: f64,
    /// Width.
    pub w: f64,
    /// Height.
    pub h: f64,
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

fn truncate(s: &str, n: usize) -> String {
    if s.chars().count() <= n {
        s.to_string()
    } else {
        let mut t: String = s.chars().take(n - 1).collect();
        t.push('…');
        t
    }
}

/// The lines of text a node shows (without its statistics).
fn labels(sop: &Sop, n: Node) -> Vec<String> {
    let sc = sop.scenario();
    match n {
        Node::Start => vec![],
        Node::Stage(s) => vec![sc.stages[s].id.clone(), truncate(&sc.stages[s].title, 32)],
        Node::Action(a) => vec![sc.actions[a].name.clone()],
    }
}

const LAYER_GAP: f64 = 96.0;
const NODE_GAP: f64 = 26.0;
const MARGIN: f64 = 20.0;

/// The layered layout: every node's place, and which edges point back (drawn around).
pub fn layout(sop: &Sop) -> (Vec<Placed>, Vec<bool>) {
    let g = sop.graph();
    let count = g.node_count();
    // Successors in a stable order (edge index order, which is file order).
    let mut succ: Vec<Vec<(usize, usize)>> = vec![Vec::new(); count];
    for e in g.edge_references() {
        succ[e.source().index()].push((e.target().index(), e.id().index()));
    }
    for s in &mut succ {
        s.sort_by_key(|&(_, e)| e);
    }
    // Depth-first search from the start (then any node left): back edges and discovery order.
    let mut back = vec![false; g.edge_count()];
    let mut state = vec![0u8; count]; // 0 new, 1 on stack, 2 done
    let mut discovered = vec![usize::MAX; count];
    let mut finish = Vec::with_capacity(count);
    let mut next = 0;
    let roots = std::iter::once(sop.start_node().index()).chain(0..count);
    for root in roots {
        if state[root] != 0 {
            continue;
        }
        let mut stack = vec![(root, 0usize)];
        state[root] = 1;
        discovered[root] = next;
        next += 1;
        while let Some((v, i)) = stack.pop() {
            if let Some(&(w, e)) = succ[v].get(i) {
                stack.push((v, i + 1));
                match state[w] {
                    0 => {
                        state[w] = 1;
                        discovered[w] = next;
                        next += 1;
                        stack.push((w, 0));
                    }
                    1 => back[e] = true,
                    _ => {}
                }
            } else {
                state[v] = 2;
                finish.push(v);
            }
        }
    }
    // Longest-path layers over the forward edges, in topological order.
    let mut layer = vec![0usize; count];
    for &v in finish.iter().rev() {
        for &(w, e) in &succ[v] {
            if !back[e] {
                layer[w] = layer[w].max(layer[v] + 1);
            }
        }
    }
    let layers = layer.iter().max().map_or(1, |m| m + 1);
    let mut rows: Vec<Vec<usize>> = vec![Vec::new(); layers];
    let mut by_discovery: Vec<usize> = (0..count).collect();
    by_discovery.sort_by_key(|&v| discovered[v]);
    for v in by_discovery {
        rows[layer[v]].push(v);
    }
    // Barycentre sweeps: down by predecessors, up by successors.
    let mut pred: Vec<Vec<usize>> = vec![Vec::new(); count];
    for (v, s) in succ.iter().enumerate() {
        for &(w, e) in s {
            if !back[e] {
                pred[w].push(v);
            }
        }
    }
    let mut pos = vec![0f64; count];
    let index = |rows: &Vec<Vec<usize>>, pos: &mut Vec<f64>| {
        for row in rows {
            for (i, &v) in row.iter().enumerate() {
                pos[v] = i as f64;
            }
        }
    };
    index(&rows, &mut pos);
    for _ in 0..4 {
        for l in 1..layers {
            sort_row(&mut rows[l], &pred, &pos);
            index(&rows, &mut pos);
        }
        for l in (0..layers.saturating_sub(1)).rev() {
            let next: Vec<Vec<usize>> = succ
                .iter()
                .map(|s| {
                    s.iter()
                        .filter(|(_, e)| !back[*e])
                        .map(|(w, _)| *w)
                        .collect()
                })
                .collect();
            sort_row(&mut rows[l], &next, &pos);
            index(&rows, &mut pos);
        }
    }
    // Coordinates: each layer centred on the widest.
    let size = |v: usize| {
        let node = g[petgraph::graph::NodeIndex::new(v)];
        match node {
            Node::Start => (24.0, 24.0),
            _ => {
                let lines = labels(sop, node);
                let chars = lines
                    .iter()
                    .map(|l| l.chars().count())
                    .max()
                    .unwrap_or(0)
                    .max(18);
                let h = if matches!(node, Node::Stage(_)) {
                    48.0
                } else {
                    34.0
                };
                (chars as f64 * 6.4 + 16.0, h)
            }
        }
    };
    let widths: Vec<f64> = rows
        .iter()
        .map(|row| {
            row.iter().map(|&v| size(v).0).sum::<f64>()
                + NODE_GAP * row.len().saturating_sub(1) as f64
        })
        .collect();
    let widest = widths.iter().cloned().fold(0.0, f64::max);
    let mut placed = vec![
        Placed {
            layer: 0,
            x: 0.0,
            y: 0.0,
            w: 0.0,
            h: 0.0,
        };
        count
    ];
    for (l, row) in rows.iter().enumerate() {
        let mut x = MARGIN + (widest - widths[l]) / 2.0;
        for &v in row {
            let (w, h) = size(v);
            placed[v] = Placed {
                layer: l,
                x: x + w / 2.0,
                y: MARGIN + LAYER_GAP * l as f64,
                w,
                h,
            };
            x += w + NODE_GAP;
        }
    }
    (placed, back)
}

/// Sorts a row by the mean position of each node's neighbours in `adjacent` (nodes without
/// neighbours keep their place).
fn sort_row(row: &mut [usize], adjacent: &[Vec<usize>], pos: &[f64]) {
    let mut keyed: Vec<(f64, usize)> = row
        .iter()
        .enumerate()
        .map(|(i, &v)| {
            let ns = &adjacent[v];
            let key = if ns.is_empty() {
                i as f64
            } else {
                ns.iter().map(|&n| pos[n]).sum::<f64>() / ns.len() as f64
            };
            (key, v)
        })
        .collect();
    keyed.sort_by(|a, b| a.0.total_cmp(&b.0));
    for (slot, (_, v)) in row.iter_mut().zip(keyed) {
        *slot = v;
    }
}

/// A fill colour for a mean Logic (red at 0, yellow at 50, green at 100).
pub fn score_fill(logic: f64) -> String {
    format!("hsl({:.0},70%,82%)", (logic.clamp(0.0, 100.0) * 1.2))
}

/// The SVG of a scenario's graph, coloured by `used` (`index` makes its marker id unique).
pub fn svg(sop: &Sop, used: &GraphUse, index: usize) -> String {
    let g = sop.graph();
    let (placed, back) = layout(sop);
    let width = placed.iter().map(|p| p.x + p.w / 2.0).fold(0.0, f64::max) + MARGIN + 60.0;
    let height = placed.iter().map(|p| p.y + p.h).fold(0.0, f64::max) + MARGIN;
    let id = escape(&sop.scenario().id);
    let most = used.edges.values().copied().max().unwrap_or(0).max(1) as f64;
    let mut out = String::new();
    let _ = write!(
        out,
        "<svg class=\"sop-graph\" data-scenario=\"{id}\" viewBox=\"0 0 {width:.0} {height:.0}\" width=\"{width:.0}\" height=\"{height:.0}\" role=\"img\"><defs><marker id=\"arrow-{index}\" viewBox=\"0 0 10 10\" refX=\"9\" refY=\"5\" markerUnits=\"userSpaceOnUse\" markerWidth=\"9\" markerHeight=\"9\" orient=\"auto-start-reverse\"><path d=\"M0,0L10,5L0,10z\" class=\"arrowhead\"/></marker></defs>"
    );
    for e in g.edge_references() {
        let (a, b) = (e.source(), e.target());
        let (pa, pb) = (placed[a.index()], placed[b.index()]);
        let from = node_name(sop, g[a]);
        let to = node_name(sop, g[b]);
        let turns = used
            .edges
            .get(&(from.to_string(), to.to_string()))
            .copied()
            .unwrap_or(0);
        let (x1, y1) = (pa.x, pa.y + pa.h);
        let (x2, y2) = (pb.x, pb.y);
        let d = if back[e.id().index()] {
            let side = pa.x.max(pb.x) + pa.w.max(pb.w) / 2.0 + 40.0;
            format!(
                "M{:.1},{:.1} C{side:.1},{:.1} {side:.1},{:.1} {:.1},{:.1}",
                pa.x + pa.w / 2.0,
                pa.y + pa.h / 2.0,
                pa.y + pa.h / 2.0,
                pb.y + pb.h / 2.0,
                pb.x + pb.w / 2.0,
                pb.y + pb.h / 2.0
            )
        } else {
            let dy = (y2 - y1) / 2.0;
            format!(
                "M{x1:.1},{y1:.1} C{x1:.1},{:.1} {x2:.1},{:.1} {x2:.1},{y2:.1}",
                y1 + dy,
                y2 - dy
            )
        };
        let width = 1.0 + 4.0 * ((1.0 + turns as f64).ln() / (1.0 + most).ln());
        let class = if turns == 0 { "edge untested" } else { "edge" };
        let edge = &g[e.id()];
        let label = match edge.guard {
            crate::scenario::Guard::Always => "",
            _ => edge.label.as_str(),
        };
        let _ = write!(
            out,
            "<path class=\"{class}\" data-from=\"{}\" data-to=\"{}\" data-turns=\"{turns}\" d=\"{d}\" stroke-width=\"{width:.1}\" marker-end=\"url(#arrow-{index})\"><title>{} → {}: {} ({turns} turns)</title></path>",
            escape(from),
            escape(to),
            escape(from),
            escape(to),
            escape(label)
        );
        if !label.is_empty() && !back[e.id().index()] {
            // On the curve, nearer its target (where edges spread apart).
            let _ = write!(
                out,
                "<text class=\"elabel\" x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{}</text>",
                x1 + (x2 - x1) * 0.784,
                y1 + (y2 - y1) * 0.7 + 3.0,
                escape(&truncate(label, 26))
            );
        }
    }
    for n in g.node_indices() {
        let p = placed[n.index()];
        let node = g[n];
        let (left, top) = (p.x - p.w / 2.0, p.y);
        if node == Node::Start {
            let _ = write!(
                out,
                "<g class=\"start\"><circle cx=\"{:.1}\" cy=\"{:.1}\" r=\"10\"/><title>start</title></g>",
                p.x,
                p.y + 12.0
            );
            continue;
        }
        let name = node_name(sop, node);
        let mean = used.nodes.get(name).copied().unwrap_or_default();
        let (fill, stat, tested) = match mean.get() {
            Some(l) => (
                score_fill(l),
                format!("Logic {} · {} turns", num(l), mean.n()),
                true,
            ),
            None => ("none".to_string(), "untested".to_string(), false),
        };
        let (class, attr) = match node {
            Node::Stage(_) => ("node", "data-stage"),
            _ => ("action", "data-action"),
        };
        let untested = if tested { "" } else { " untested" };
        let logic = mean
            .get()
            .map(|l| format!(" data-logic=\"{l}\""))
            .unwrap_or_default();
        let per_model = used.nodes_by_model.get(name);
        let models = per_model.into_iter().flatten();
        let logic_by_model = escape(&by_model_json(models.clone().map(|(m, x)| (m, x.get()))));
        let turns_by_model = escape(&by_model_json(models.map(|(m, x)| (m, Some(x.n())))));
        let _ = write!(
            out,
            "<g class=\"{class}{untested}\" {attr}=\"{}\" data-turns=\"{}\"{logic} data-logic-by-model=\"{}\" data-turns-by-model=\"{}\"><rect x=\"{left:.1}\" y=\"{top:.1}\" width=\"{:.1}\" height=\"{:.1}\" rx=\"{}\" style=\"fill:{fill}\"/>",
            escape(name),
            mean.n(),
            logic_by_model,
            turns_by_model,
            p.w,
            p.h,
            if class == "action" { 12 } else { 3 }
        );
        let mut y = top + 14.0;
        for (i, line) in labels(sop, node).iter().enumerate() {
            let weight = if i == 0 { " font-weight=\"bold\"" } else { "" };
            let _ = write!(
                out,
                "<text x=\"{:.1}\" y=\"{y:.1}\" text-anchor=\"middle\"{weight}>{}</text>",
                p.x,
                escape(line)
            );
            y += 13.0;
        }
        let _ = write!(
            out,
            "<text class=\"stat\" x=\"{:.1}\" y=\"{y:.1}\" text-anchor=\"middle\">{}</text><title>{}: {stat}</title></g>",
            p.x,
            escape(&stat),
            escape(name)
        );
    }
    out.push_str("</svg>");
    out
}

/// The graphs' model view: `select[data-graph-model]` and `#graph-model=NAME` recolour the
/// graphs and the routes tables by one model (from the `data-*-by-model` attributes).
pub const SCRIPT: &str = include_str!("js/graph.js");

/// Style of the graphs.
pub const CSS: &str = r#"
#sop-graphs p.graph-model{position:sticky;top:32px;z-index:4;background:var(--bg);padding:4px 0;margin:6px 0}
#sop-graphs p.graph-model select{font-size:14px}
.scroll-x{overflow-x:auto;max-width:100%}
table.route-models td.worst{outline:2px solid var(--bad);outline-offset:-2px;font-weight:700}
table.route-models .selected{box-shadow:inset 0 0 0 2px var(--accent)}
table.route-models td a,table.routes td a{color:inherit}
table.routes tr.model-untested td{color:var(--muted)}
details.route-models>summary{cursor:pointer;color:var(--muted);margin:4px 0}
svg.sop-graph{max-width:100%;height:auto;font-size:11px;display:block;margin:8px 0}
svg.sop-graph text{fill:#1d2330}
svg.sop-graph .edge{fill:none;stroke:var(--muted)}
svg.sop-graph .edge.untested{stroke-dasharray:4 3;opacity:.6}
svg.sop-graph .arrowhead{fill:var(--muted)}
svg.sop-graph .elabel{font-size:9px;fill:var(--fg);paint-order:stroke;stroke:var(--bg);stroke-width:3px}
svg.sop-graph g.node rect,svg.sop-graph g.action rect{stroke:var(--fg);stroke-width:1}
svg.sop-graph g.untested rect{stroke-dasharray:4 3;fill:var(--panel)!important}
svg.sop-graph g.untested text{fill:var(--fg)}
svg.sop-graph .stat{font-size:10px}
svg.sop-graph .start circle{fill:var(--fg)}
"#;

#[cfg(test)]
mod tests {
    use super::*;

    const LOOPY: &str = r#"
id: loopy
name: Loopy
domain: test
description: a loop that no assignment follows
fields:
  A:
    description: a
    options: [x, y]
actions:
  Done: done
sop:
  start: s1
  stages:
    s1:
      title: First
      branch_on: A
      cases:
        x: s2
        y: {action: Done}
    s2:
      title: Second
      branch_on: A
      cases:
        x: {action: Done}
        y: s1
user:
  intents:
    - id: i
      description: i
      adversarial: zero
      implies: {A: x}
      facts: [f]
  personas:
    - id: p
      traits: [t]
      communication_style: s
      cooperativeness: high
"#;

    #[test]
    fn layers_follow_the_longest_path_and_back_edges_are_found() {
        let sop = match crate::sop::from_yaml(LOOPY, "loopy.yaml") {
            Ok(s) => s,
            Err(e) => panic!("{e}"),
        };
        let (placed, back) = layout(&sop);
        let g = sop.graph();
        let layer_of = |name: &str| {
            g.node_indices()
                .find(|&n| node_name(&sop, g[n]) == name)
                .map(|n| placed[n.index()].layer)
        };
        assert_eq!(layer_of("start"), Some(0));
        assert_eq!(layer_of("s1"), Some(1));
        assert_eq!(layer_of("s2"), Some(2));
        assert_eq!(layer_of("Done"), Some(3));
        assert_eq!(
            back.iter().filter(|b| **b).count(),
            1,
            "s2 -> s1 points back"
        );
        let svg_text = svg(&sop, &GraphUse::default(), 0);
        assert_eq!(svg_text.matches("<g class=\"node untested\"").count(), 2);
        // Two models' turns through s1 to Done: the node's colour per model in its attributes.
        let mut used = GraphUse::default();
        let path = vec!["s1".to_string()];
        used.add("m1", &path, "Done", 80.0);
        used.add("m1", &path, "Done", 40.0);
        used.add("m<2>", &path, "Done", 100.0);
        assert_eq!(used.nodes["s1"].get(), Some(220.0 / 3.0));
        assert_eq!(used.nodes_by_model["s1"]["m1"].get(), Some(60.0));
        assert_eq!(used.nodes_by_model["Done"]["m<2>"].n(), 1);
        assert_eq!(used.edges[&("start".into(), "s1".into())], 3);
        assert_eq!(used.edges[&("s1".into(), "Done".into())], 3);
        let drawn = svg(&sop, &used, 0);
        assert!(drawn.contains("<g class=\"node\" data-stage=\"s1\" data-turns=\"3\" data-logic=\"73.33333333333333\" data-logic-by-model=\"{&quot;m1&quot;:60.0,&quot;m&lt;2&gt;&quot;:100.0}\" data-turns-by-model=\"{&quot;m1&quot;:2,&quot;m&lt;2&gt;&quot;:1}\">"), "{drawn}");
        let svg = svg_text;
        assert!(svg.contains("data-stage=\"s1\""));
        assert!(svg.contains("data-action=\"Done\""));
    }
}
