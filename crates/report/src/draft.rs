//! The review page of a drafted scenario (`sage scenario draft` writes it beside the YAML as
//! OUT.html): what a person checks before running a draft. First the verdict and the commands
//! to go on, then the decision graph (each part's citations in its tooltip), every stage, branch
//! and action with the policy sentences it cites (parts that cite nothing marked), the policy
//! sentences nothing cites, and how the draft came to be (every round's step, problems and
//! cost).

use crate::graph::{self, GraphUse};
use crate::page::{Page, Section};
use maud::{Markup, html};
use sage_core::prompts::draft::{Citations, DraftLog};
use sage_core::scenario::Target;
use sage_core::sop::Sop;

/// Style of the page, beside the report's shared rules and the graph's: nothing has run on a
/// draft, so the graph is drawn plain (no "untested" dashes, no statistics line).
const CSS: &str = r#"
#draft p,#uncovered li{max-width:90ch}
#draft pre{background:var(--code-bg,#f4f4f4);padding:8px 10px;overflow-x:auto}
table.cites td.part{white-space:nowrap;vertical-align:top}
table.cites ol{margin:0;padding-left:0;list-style:none}
table.cites .n,#uncovered .n{color:var(--muted);font-variant-numeric:tabular-nums;margin-right:6px}
table.cites tr.uncited td.part{border-left:4px solid var(--bad)}
.none{color:var(--bad);font-weight:600}
#graph svg.sop-graph .stat{display:none}
#graph svg.sop-graph .edge.untested{stroke-dasharray:none;opacity:1}
#graph svg.sop-graph g.untested>rect{stroke-dasharray:none}
"#;

/// What the review page shows.
pub struct Review<'a> {
    /// The drafted scenario.
    pub sop: &'a Sop,
    /// Where its YAML was written.
    pub file: &'a str,
    /// The policy's sentences, in order (numbered from 1 on the page).
    pub sentences: &'a [String],
    /// What the draft cites and leaves out.
    pub citations: &'a Citations,
    /// How it came to be.
    pub log: &'a DraftLog,
    /// The commands to go on with (review, compare, run).
    pub commands: &'a [String],
}

/// The review page as an HTML document.
pub fn page(r: &Review) -> String {
    let sc = r.sop.scenario();
    let number = |text: &str| {
        let words = sage_core::scoring::fidelity::normalize(text);
        r.sentences
            .iter()
            .position(|s| sage_core::scoring::fidelity::normalize(s) == words)
            .map_or_else(|| "?".to_string(), |i| (i + 1).to_string())
    };
    let cites = |source: &[String]| {
        html! {
            @if source.is_empty() { span.none { "cites nothing" } }
            @else { ol { @for s in source { li { span.n { "#" (number(s)) } " " (s) } } } }
        }
    };
    let verdict = html! {
        p { strong { (sc.id) } ": " (r.sop.routes().len()) " routes, drafted by " code { (r.log.model) }
            " in " (r.log.rounds.len()) " rounds ($" (format!("{:.4}", r.log.cost_usd)) ") and validated; written to "
            code { (r.file) } "." }
        p { (r.citations.uncovered.len()) " of " (r.sentences.len()) " policy sentences cited by nothing; "
            (r.citations.uncited.len()) " parts citing nothing; "
            (r.citations.unknown.len()) " citations that are no sentence of the policy." }
        p { "A model wrote this scenario: read the graph and the citations before you run it." }
        pre { code { @for c in r.commands { (c) "\n" } } }
    };
    let graph = html! {
        @match graph::svg(r.sop, &GraphUse::default(), 0) {
            Some(svg) => (svg),
            None => p.warn { "The graph could not be laid out; see the routes with sage scenario paths." },
        }
    };
    let target = |t: &Target| match t {
        Target::Stage(i) => sc.stages[*i].id.clone(),
        Target::Action(i) => sc.actions[*i].name.clone(),
    };
    let row = |part: Markup, source: &[String]| {
        html! { tr class=(if source.is_empty() { "uncited" } else { "" }) { td.part { (part) } td { (cites(source)) } } }
    };
    let parts = html! {
        table.data.cites {
            thead { tr { th { "Part" } th { "Policy sentences it cites" } } }
            tbody {
                @for st in &sc.stages {
                    (row(html! { "stage " strong { (st.id) } br; (st.title) }, &st.source))
                    @for t in st.transitions.iter().filter(|t| !t.source.is_empty()) {
                        (row(html! { "branch " (st.id) ": " (t.label) " → " (target(&t.target)) }, &t.source))
                    }
                }
                @for a in &sc.actions {
                    (row(html! { "action " strong { (a.name) } br; (a.description) }, &a.source))
                }
            }
        }
    };
    let uncovered = html! {
        @if r.citations.uncovered.is_empty() { p { "Every policy sentence is cited." } }
        @else { ul { @for s in &r.citations.uncovered { li { span.n { "#" (number(s)) } " " (s) } } } }
        @if !r.citations.unknown.is_empty() {
            p { "Citations that are no sentence of the policy (made up or changed):" }
            ul { @for s in &r.citations.unknown { li { (s) } } }
        }
    };
    let rounds = html! {
        table.data {
            thead { tr { th { "Round" } th { "Step" } th { "What the validator said" } th { "Cost (USD)" } } }
            tbody {
                @for (i, round) in r.log.rounds.iter().enumerate() {
                    tr {
                        td data-value=(i + 1) { (i + 1) }
                        td { (round.step.name()) }
                        td {
                            @if let Some(e) = &round.call_error { span.none { "call failed: " (e) } }
                            @else if round.errors.is_empty() { "validated" }
                            @else { ul { @for e in &round.errors { li { (e) } } } }
                        }
                        td data-value=(round.cost_usd) { (format!("{:.4}", round.cost_usd)) }
                    }
                }
            }
        }
    };
    Page {
        title: format!("Review the drafted scenario {}", sc.id),
        sections: vec![
            Section::new("draft", "Draft", verdict),
            Section::new("graph", "Decision graph", graph),
            Section::new("citations", "Citations", parts),
            Section::new("uncovered", "Not covered", uncovered),
            Section::new("rounds", "Rounds", rounds),
        ],
        styles: vec![graph::css(), CSS.to_string()],
        scripts: Vec::new(),
    }
    .render()
}
