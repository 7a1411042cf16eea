//! The SOP graphs and routes section (`#sop-graphs`): the model selector with the colour
//! legend, then per scenario its graph, its routes and the mean Logic per route and model.

use super::*;
use maud::{Markup, html};

impl SageReport {
    pub(super) fn sop(&self, id: &str) -> Option<&Arc<Sop>> {
        self.sops.iter().find(|s| s.scenario().id == id)
    }

    pub(super) fn graphs_html(&self, summary: &Summary) -> Markup {
        // The leaderboard's order, best first, in the selector and the per-model tables.
        let models: Vec<&String> = sage_core::scoring::leaderboard::ranked(summary)
            .into_iter()
            .map(|m| &m.model)
            .collect();
        let scenarios: Vec<&String> = self
            .info
            .scenarios
            .iter()
            .map(|(id, _)| id)
            .chain(self.routes.keys())
            .collect::<indexmap::IndexSet<_>>()
            .into_iter()
            .collect();
        html! {
            p.note {
                "Each scenario's decision graph. A stage or action is coloured by the mean Logic of the turns whose reference route passes through it (the scale below: dark red 0, pale around 50, dark blue 100; dashed without colour: no turn went through it); an edge is as wide as the turns that took it (all models); dashed: never reached. Below each graph, every route with the dialogues that reached it (a scored turn whose reference is the route) and the mean Logic of those turns, then the mean Logic per route and model (the worst model of each route outlined). Each count and each model's cell links to those dialogues in the explorer, worst first."
            }
            div.graph-model {
                label {
                    "Colour the graphs and routes by "
                    select data-graph-model {
                        option value="" { "all models" }
                        @for m in &models { option value=(m) { (m) } }
                    }
                }
                (graph::legend())
                noscript { span.muted { "(the selector needs JavaScript; the per-model table below each graph reads without it)" } }
            }
            @for (i, id) in scenarios.iter().enumerate() {
                (self.scenario_routes(summary, &models, i, id))
            }
        }
    }

    /// One scenario: its graph, its routes table and the mean Logic per route and model.
    fn scenario_routes(
        &self,
        summary: &Summary,
        models: &[&String],
        index: usize,
        id: &str,
    ) -> Markup {
        let empty = BTreeMap::new();
        let used = self.routes.get(id).unwrap_or(&empty);
        let targeted = summary.coverage.get(id);
        let sop = self.sop(id);
        let no_use = GraphUse::default();
        let graph = sop.map(|s| graph::svg(s, self.graphs.get(id).unwrap_or(&no_use), index));
        let mut keys: Vec<String> = sop
            .map(|s| s.routes().iter().map(|r| route_key(&r.route)).collect())
            .unwrap_or_default();
        for k in used
            .keys()
            .chain(targeted.into_iter().flat_map(|t| t.keys()))
        {
            if !keys.contains(k) {
                keys.push(k.clone());
            }
        }
        let untested = keys
            .iter()
            .filter(|k| used.get(*k).is_none_or(|u| u.dialogues == 0))
            .count();
        html! {
            h3 id={ "sop-" (id) } { (id) }
            @match graph {
                // Drawn at its size (text stays legible); a graph wider than the page scrolls.
                Some(Some(svg)) => div.graph-scroll { (svg) },
                Some(None) => p.warn { "The graph could not be laid out; the routes below are complete." },
                None => p.warn { "The scenario's YAML is not available (or changed since the run): its graph is not drawn; the routes below are those the run reached." },
            }
            p {
                (keys.len()) " routes, " (keys.len() - untested) " reached, "
                span class=(if untested > 0 { "bad" } else { "good" }) { (untested) " never tested" } "."
            }
            table.data.routes data-scenario=(id) {
                tr {
                    th { "Route" } th.num { "Targeted" } th.num { "Dialogues" } th.num { "Turns" }
                    th.num { "Mean Logic" } th { "Weakest model" } th { "Worst case" }
                }
                @for k in &keys {
                    (route_row(
                        id,
                        k,
                        &used.get(k).cloned().unwrap_or_default(),
                        targeted.and_then(|t| t.get(k)).copied().unwrap_or(0),
                    ))
                }
            }
            @if !models.is_empty() && keys.iter().any(|k| used.contains_key(k)) {
                (route_models_table(id, &keys, used, models))
            }
        }
    }
}

/// The explorer fragment listing the dialogues of `scenario` that reached route `key` (those of
/// `model` only when given), worst first: `#explore=scenario:S;reached:S%3A%20KEY;sort:worst`
/// and `;model:M` last (see [`explorer::explore_anchor`]).
pub fn route_anchor(scenario: &str, key: &str, model: Option<&str>) -> String {
    let label = explorer::reached_label(scenario, key);
    let mut filters = vec![
        ("scenario", scenario),
        ("reached", label.as_str()),
        ("sort", "worst"),
    ];
    if let Some(m) = model {
        filters.push(("model", m));
    }
    explorer::explore_anchor(&filters)
}

/// A route key as code that wraps after each `>` (between stages), never inside a name.
fn route_code(key: &str) -> Markup {
    html! {
        code.route {
            @for (i, part) in key.split('>').enumerate() {
                @if i > 0 { ">" wbr; }
                (part)
            }
        }
    }
}

/// The classes of a numeric cell coloured by mean Logic `logic` (none: plain).
fn logic_cell(logic: Option<f64>, extra: &str) -> String {
    let mut class = String::from("num");
    if let Some(l) = logic {
        class.push(' ');
        class.push_str(&graph::logic_class(l));
    }
    class.push_str(extra);
    class
}

/// One row of a scenario's routes table: the route, the dialogues that targeted it, the
/// dialogues that reached it (linked to them in the explorer), their turns, the mean Logic of
/// those turns and the weakest model (linked to its dialogues there); per model the same
/// numbers in `data-*-by-model` JSON attributes for the graph's model view.
fn route_row(scenario: &str, key: &str, u: &RouteUse, targeted: usize) -> Markup {
    let logic = u.logic.get();
    let weakest = u
        .by_model
        .iter()
        .filter_map(|(m, x)| x.get().map(|v| (m, v)))
        .min_by(|a, b| a.1.total_cmp(&b.1));
    let all = route_anchor(scenario, key, None);
    let logic_by_model = graph::by_model_json(u.by_model.iter().map(|(m, x)| (m, x.get())));
    let turns_by_model = graph::by_model_json(u.by_model.iter().map(|(m, x)| (m, Some(x.n()))));
    let dialogues_by_model = graph::by_model_json(
        u.dialogues_by_model
            .iter()
            .map(|(m, n)| (m, Some(*n as u64))),
    );
    html! {
        tr data-route=(key) data-dialogues=(u.dialogues) data-logic=(logic.map(raw).unwrap_or_default())
            class=[(u.dialogues == 0).then_some("untested")] data-turns=(u.logic.n())
            data-logic-by-model=(logic_by_model) data-dialogues-by-model=(dialogues_by_model)
            data-turns-by-model=(turns_by_model) {
            td {
                (route_code(key))
                @if u.dialogues == 0 { " " span.tag.bad { "untested" } }
            }
            td.num { (targeted) }
            td.num data-col="dialogues" {
                @if u.dialogues == 0 {
                    "0"
                } @else {
                    a.explore href=(all) data-explore=(all) title="these dialogues in the explorer, worst first" { (u.dialogues) }
                }
            }
            td.num data-col="turns" { (u.logic.n()) }
            td class=(logic_cell(logic, "")) data-col="logic" { (logic.map(num).unwrap_or_else(|| "—".into())) }
            td {
                @if let Some((m, v)) = weakest {
                    a href=(route_anchor(scenario, key, Some(m))) title="its dialogues on this route, worst first" { (m) }
                    " (" (num(v)) ")"
                }
            }
            td data-col="case" {
                @if let Some((_, case)) = &u.worst_case {
                    a.case href=(explorer::case_anchor(case))
                        title="the case of the route's worst dialogue, every model's turns side by side" {
                        "every model"
                    }
                }
            }
        }
    }
}

/// The mean Logic per route (rows) and model (columns) of a scenario, open: which branch model
/// X gets wrong, without JavaScript. Each value links to that model's dialogues on the route;
/// the worst model of a route (when two or more have a value) is outlined (`td.worst`).
pub(super) fn route_models_table(
    scenario: &str,
    keys: &[String],
    used: &BTreeMap<String, RouteUse>,
    models: &[&String],
) -> Markup {
    html! {
        details.route-models open {
            summary { "Mean Logic per route and model, models in the leaderboard's order (outlined: the route's worst model; a value links to its dialogues there, worst first)" }
            // Wide with many models: it scrolls in its own box, the routes column stays.
            div.table-box {
                table.data.route-models data-scenario=(scenario) {
                    tr {
                        th { "Route" }
                        @for m in models {
                            th.num.rotated data-model=(m) title=(m) { span { (m) } }
                        }
                    }
                    @for k in keys {
                        @if let Some(u) = used.get(k) {
                            (route_models_row(scenario, k, u, models))
                        }
                    }
                }
            }
        }
    }
}

/// A route's row of [`route_models_table`].
fn route_models_row(scenario: &str, key: &str, u: &RouteUse, models: &[&String]) -> Markup {
    let values: Vec<Option<f64>> = models
        .iter()
        .map(|m| u.by_model.get(*m).and_then(Mean::get))
        .collect();
    let present: Vec<f64> = values.iter().flatten().copied().collect();
    let worst = (present.len() >= 2).then(|| present.iter().copied().fold(f64::MAX, f64::min));
    html! {
        tr data-route-key=(key) {
            td { (route_code(key)) }
            @for (m, v) in models.iter().zip(values) {
                @match v {
                    Some(v) => td class=(logic_cell(Some(v), if worst == Some(v) { " worst" } else { "" }))
                        data-model=(m) data-value=(raw(v))
                        data-reached=(u.dialogues_by_model.get(*m).copied().unwrap_or(0)) {
                        a href=(route_anchor(scenario, key, Some(m))) { (num(v)) }
                    },
                    None => td.num data-model=(m) data-value="" data-reached="0" { "—" },
                }
            }
        }
    }
}
