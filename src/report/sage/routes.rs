//! The SOP graphs and routes section (`#sop-graphs`).

use super::*;

impl SageReport {
    pub(super) fn sop(&self, id: &str) -> Option<&Arc<Sop>> {
        self.sops.iter().find(|s| s.scenario().id == id)
    }

    pub(super) fn graphs_html(&self, summary: &Summary) -> String {
        let models: Vec<&String> = summary.models.iter().map(|m| &m.model).collect();
        let mut out = String::from(
            "<p class=\"note\">Each scenario's decision graph. A stage or action is coloured by the mean Logic of the turns whose reference route passes through it (red 0, yellow 50, green 100); an edge is as wide as the turns that took it (all models); dashed: never reached. Below each graph, every route with the dialogues that reached it (a scored turn whose reference is the route) and the mean Logic of those turns, then the mean Logic per route and model (the worst model of each route outlined). Each count and each model's cell links to those dialogues in the explorer, worst first.</p>",
        );
        let _ = write!(
            out,
            "<p class=\"graph-model\"><label>Colour the graphs and routes by <select data-graph-model><option value=\"\">all models</option>{}</select></label> <noscript><span class=\"muted\">(needs JavaScript; the per-model table below each graph reads without it)</span></noscript></p>",
            models
                .iter()
                .map(|m| format!("<option value=\"{}\">{}</option>", escape(m), escape(m)))
                .collect::<String>()
        );
        let scenarios: Vec<&String> = self
            .info
            .scenarios
            .iter()
            .map(|(id, _)| id)
            .chain(self.routes.keys())
            .collect::<indexmap::IndexSet<_>>()
            .into_iter()
            .collect();
        let empty = BTreeMap::new();
        for (i, id) in scenarios.iter().enumerate() {
            let _ = write!(out, "<h3 id=\"sop-{}\">{}</h3>", escape(id), escape(id));
            let used = self.routes.get(*id).unwrap_or(&empty);
            let targeted = summary.coverage.get(*id);
            let mut keys: Vec<String> = Vec::new();
            match self.sop(id) {
                Some(sop) => {
                    out.push_str(&graph::svg(sop, self.graphs.get(*id).unwrap_or(&GraphUse::default()), i));
                    keys.extend(sop.routes().iter().map(|r| route_key(&r.route)));
                }
                None => out.push_str("<p class=\"warn\">The scenario's YAML is not available (or changed since the run): its graph is not drawn; the routes below are those the run reached.</p>"),
            }
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
            let _ = write!(
                out,
                "<p>{} routes, {} reached, <span class=\"{}\">{untested} never tested</span>.</p>",
                keys.len(),
                keys.len() - untested,
                if untested > 0 { "bad" } else { "good" }
            );
            let _ = write!(
                out,
                "<table class=\"data routes\" data-scenario=\"{}\"><tr><th>Route</th><th class=\"num\">Targeted</th><th class=\"num\">Dialogues</th><th class=\"num\">Turns</th><th class=\"num\">Mean Logic</th><th>Weakest model</th></tr>",
                escape(id)
            );
            for k in &keys {
                let u = used.get(k).cloned().unwrap_or_default();
                out.push_str(&route_row(
                    id,
                    k,
                    &u,
                    targeted.and_then(|t| t.get(k)).copied().unwrap_or(0),
                ));
            }
            out.push_str("</table>");
            if !models.is_empty() && keys.iter().any(|k| used.contains_key(k)) {
                out.push_str(&route_models_table(id, &keys, used, &models));
            }
        }
        out
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

/// One row of a scenario's routes table: the route, the dialogues that targeted it, the
/// dialogues that reached it (linked to them in the explorer), their turns, the mean Logic of
/// those turns and the weakest model (linked to its dialogues there); per model the same
/// numbers in `data-*-by-model` JSON attributes for the graph's model view.
fn route_row(scenario: &str, key: &str, u: &RouteUse, targeted: usize) -> String {
    let logic = u.logic.get();
    let weakest = u
        .by_model
        .iter()
        .filter_map(|(m, x)| x.get().map(|v| (m, v)))
        .min_by(|a, b| a.1.total_cmp(&b.1));
    let class = if u.dialogues == 0 {
        " class=\"untested\""
    } else {
        ""
    };
    let all = route_anchor(scenario, key, None);
    let dialogues = if u.dialogues == 0 {
        "0".to_string()
    } else {
        format!(
            "<a class=\"explore\" href=\"{}\" data-explore=\"{}\" title=\"these dialogues in the explorer, worst first\">{}</a>",
            escape(&all),
            escape(&all),
            u.dialogues
        )
    };
    let logic_by_model = graph::by_model_json(u.by_model.iter().map(|(m, x)| (m, x.get())));
    let turns_by_model = graph::by_model_json(u.by_model.iter().map(|(m, x)| (m, Some(x.n()))));
    let dialogues_by_model = graph::by_model_json(
        u.dialogues_by_model
            .iter()
            .map(|(m, n)| (m, Some(*n as u64))),
    );
    format!(
        "<tr data-route=\"{}\" data-dialogues=\"{}\" data-logic=\"{}\"{class} data-turns=\"{}\" data-logic-by-model=\"{}\" data-dialogues-by-model=\"{}\" data-turns-by-model=\"{}\"><td><code>{}</code>{}</td><td class=\"num\">{targeted}</td><td class=\"num\" data-col=\"dialogues\">{dialogues}</td><td class=\"num\" data-col=\"turns\">{}</td><td class=\"num\" data-col=\"logic\"{}>{}</td><td>{}</td></tr>",
        escape(key),
        u.dialogues,
        logic.map(raw).unwrap_or_default(),
        u.logic.n(),
        escape(&logic_by_model),
        escape(&dialogues_by_model),
        escape(&turns_by_model),
        escape(key),
        if u.dialogues == 0 {
            " <span class=\"tag bad\">untested</span>"
        } else {
            ""
        },
        u.logic.n(),
        logic
            .map(|l| format!(" style=\"background:{}\"", graph::score_fill(l)))
            .unwrap_or_default(),
        logic.map(num).unwrap_or_else(|| "—".into()),
        weakest
            .map(|(m, v)| format!(
                "<a href=\"{}\" title=\"its dialogues on this route, worst first\">{}</a> ({})",
                escape(&route_anchor(scenario, key, Some(m))),
                escape(m),
                num(v)
            ))
            .unwrap_or_default()
    )
}

/// The mean Logic per route (rows) and model (columns) of a scenario, open: which branch model
/// X gets wrong, without JavaScript. Each value links to that model's dialogues on the route;
/// the worst model of a route (when two or more have a value) is outlined (`td.worst`).
pub(super) fn route_models_table(
    scenario: &str,
    keys: &[String],
    used: &BTreeMap<String, RouteUse>,
    models: &[&String],
) -> String {
    let mut out = format!(
        "<details open class=\"route-models\"><summary>Mean Logic per route and model (outlined: the route's worst model; a value links to its dialogues there, worst first)</summary><div class=\"scroll-x\"><table class=\"data route-models\" data-scenario=\"{}\"><tr><th>Route</th>",
        escape(scenario)
    );
    for m in models {
        let _ = write!(
            out,
            "<th class=\"num\" data-model=\"{}\">{}</th>",
            escape(m),
            escape(m)
        );
    }
    out.push_str("</tr>");
    for k in keys {
        let Some(u) = used.get(k) else { continue };
        let values: Vec<Option<f64>> = models
            .iter()
            .map(|m| u.by_model.get(*m).and_then(Mean::get))
            .collect();
        let present: Vec<f64> = values.iter().flatten().copied().collect();
        let worst = (present.len() >= 2).then(|| present.iter().copied().fold(f64::MAX, f64::min));
        let _ = write!(
            out,
            "<tr data-route-key=\"{}\"><td><code>{}</code></td>",
            escape(k),
            escape(k)
        );
        for (m, v) in models.iter().zip(values) {
            match v {
                Some(v) => {
                    let class = if worst == Some(v) { " worst" } else { "" };
                    let _ = write!(
                        out,
                        "<td class=\"num{class}\" data-model=\"{}\" data-value=\"{}\" data-reached=\"{}\" style=\"background:{}\"><a href=\"{}\">{}</a></td>",
                        escape(m),
                        raw(v),
                        u.dialogues_by_model.get(*m).copied().unwrap_or(0),
                        graph::score_fill(v),
                        escape(&route_anchor(scenario, k, Some(m))),
                        num(v)
                    );
                }
                None => {
                    let _ = write!(
                        out,
                        "<td class=\"num\" data-model=\"{}\" data-value=\"\" data-reached=\"0\">—</td>",
                        escape(m)
                    );
                }
            }
        }
        out.push_str("</tr>");
    }
    out.push_str("</table></div></details>");
    out
}
