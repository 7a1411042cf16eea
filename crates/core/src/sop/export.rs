//! DOT and Mermaid renderings of the decision graph.

use super::{Node, Sop};
use crate::scenario::Guard;
use petgraph::visit::EdgeRef;
use std::fmt::Write;

fn node_name(n: Node) -> String {
    match n {
        Node::Start => "start".into(),
        Node::Stage(s) => format!("stage_{s}"),
        Node::Action(a) => format!("action_{a}"),
    }
}

fn edge_label(sop: &Sop, edge: &super::Edge) -> String {
    let sc = sop.scenario();
    let mut label = match &edge.guard {
        Guard::Always => String::new(),
        _ => edge.label.clone(),
    };
    for (o, v) in &edge.set {
        if !label.is_empty() {
            label.push_str("; ");
        }
        let _ = write!(label, "{} := {}", sc.outputs[*o].name, v);
    }
    label
}

fn dot_escape(s: &str) -> String {
    s.replace('\\', "\\\\").replace('"', "\\\"")
}

/// Graphviz DOT: a circle for the start, boxes for pass-through stages, diamonds for decisions,
/// rounded green boxes for actions; edges labelled by their case.
pub(super) fn dot(sop: &Sop) -> String {
    let sc = sop.scenario();
    let g = sop.graph();
    let mut out = String::new();
    let _ = writeln!(out, "digraph \"{}\" {{", dot_escape(&sc.id));
    let _ = writeln!(out, "  rankdir=TB;");
    let _ = writeln!(out, "  node [fontname=\"Helvetica\", fontsize=11];");
    let _ = writeln!(out, "  edge [fontname=\"Helvetica\", fontsize=10];");
    for n in g.node_indices() {
        let node = g[n];
        let name = node_name(node);
        let attrs = match node {
            Node::Start => "shape=circle, label=\"start\"".to_string(),
            Node::Stage(s) => {
                let st = &sc.stages[s];
                let shape = if sop.transitions(s).count() > 1 {
                    "diamond"
                } else {
                    "box"
                };
                format!(
                    "shape={shape}, label=\"{}\\n{}\"",
                    dot_escape(&st.id),
                    dot_escape(&st.title)
                )
            }
            Node::Action(a) => format!(
                "shape=box, style=\"rounded,filled\", fillcolor=\"#dff0d8\", label=\"{}\"",
                dot_escape(&sc.actions[a].name)
            ),
        };
        let _ = writeln!(out, "  {name} [{attrs}];");
    }
    for s in 0..sc.stages.len() {
        for (edge, to) in sop.transitions(s) {
            let label = edge_label(sop, edge);
            let attrs = if label.is_empty() {
                String::new()
            } else {
                format!(" [label=\"{}\"]", dot_escape(&label))
            };
            let _ = writeln!(
                out,
                "  {} -> {}{};",
                node_name(Node::Stage(s)),
                node_name(to),
                attrs
            );
        }
    }
    for e in g.edges(sop.start_node()) {
        let _ = writeln!(out, "  start -> {};", node_name(g[e.target()]));
    }
    out.push_str("}\n");
    out
}

fn mermaid_escape(s: &str) -> String {
    s.replace('"', "#quot;").replace('|', " or ")
}

/// A Mermaid flowchart with the same shapes and labels as the DOT rendering.
pub(super) fn mermaid(sop: &Sop) -> String {
    let sc = sop.scenario();
    let g = sop.graph();
    let mut out = String::from("flowchart TD\n");
    for n in g.node_indices() {
        let node = g[n];
        let name = node_name(node);
        let shape = match node {
            Node::Start => "((start))".to_string(),
            Node::Stage(s) => {
                let st = &sc.stages[s];
                let text = mermaid_escape(&format!("{}: {}", st.id, st.title));
                if sop.transitions(s).count() > 1 {
                    format!("{{\"{text}\"}}")
                } else {
                    format!("[\"{text}\"]")
                }
            }
            Node::Action(a) => format!("([\"{}\"])", mermaid_escape(&sc.actions[a].name)),
        };
        let _ = writeln!(out, "  {name}{shape}");
    }
    for e in g.edges(sop.start_node()) {
        let _ = writeln!(out, "  start --> {}", node_name(g[e.target()]));
    }
    for s in 0..sc.stages.len() {
        for (edge, to) in sop.transitions(s) {
            let label = edge_label(sop, edge);
            let arrow = if label.is_empty() {
                "-->".to_string()
            } else {
                format!("-->|\"{}\"|", mermaid_escape(&label))
            };
            let _ = writeln!(
                out,
                "  {} {} {}",
                node_name(Node::Stage(s)),
                arrow,
                node_name(to)
            );
        }
    }
    out
}
