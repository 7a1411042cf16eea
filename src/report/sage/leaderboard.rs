//! The leaderboard section (`#leaderboard`).

use super::*;

/// The leaderboard's columns: (summary.json key under `all`, heading, is a percentage of
/// turns).
pub const LEADERBOARD: [(&str, &str); 9] = [
    ("overall", "OA"),
    ("logic", "Logic"),
    ("chat", "Chat"),
    ("acc_cls", "Acc_cls"),
    ("sim_path", "Sim_path"),
    ("acc_action", "Acc_action"),
    ("execution_gap", "Exec. gap"),
    ("format_error_rate", "Format err. %"),
    ("chat_length", "Chat length"),
];

fn metric(g: &GroupStats, key: &str) -> Option<Metric> {
    match key {
        "overall" => g.overall,
        "logic" => g.logic,
        "chat" => g.chat,
        "acc_cls" => g.acc_cls,
        "sim_path" => g.sim_path,
        "acc_action" => g.acc_action,
        "execution_gap" => g.execution_gap,
        "format_error_rate" => g.format_error_rate,
        "chat_length" => g.chat_length,
        _ => None,
    }
}

/// The k of the pass^k columns: every k some model reports (`models[].pass_k`), ascending;
/// none without repeats.
pub fn pass_ks(summary: &Summary) -> Vec<u32> {
    summary
        .models
        .iter()
        .flat_map(|m| m.pass_k.iter().map(|p| p.k))
        .collect::<BTreeSet<u32>>()
        .into_iter()
        .collect()
}

/// The Table-1 leaderboard: one row per model (in the summary's order), each metric of
/// `models[].all` with its interval; `data-value` holds the unrounded mean. With repeats,
/// columns pass^1 .. pass^k (`data-metric="pass^K"`, `data-value` = `models[].pass_k[].pass`).
pub fn leaderboard_html(summary: &Summary) -> String {
    let ks = pass_ks(summary);
    let mut out = String::from(
        "<p class=\"note\">Every scored turn of each model; ± half the 95% bootstrap interval (the interval on hover). Click a heading to sort.",
    );
    if let Some(k) = ks.last() {
        let _ = write!(
            out,
            " pass^k (k = 1 to {k}): the share of cases, %, whose dialogues reach the target action in all of k repeats drawn from the case's repeats (tau2-bench's estimator; pass^1 is the plain pass rate)."
        );
    }
    out.push_str("</p><table id=\"leaderboard-table\" class=\"data\"><thead><tr><th data-sort=\"model\">Model</th><th class=\"num\" data-sort=\"dialogues\">Dialogues</th>");
    for (key, title) in LEADERBOARD {
        let _ = write!(out, "<th class=\"num\" data-sort=\"{key}\">{title}</th>");
    }
    for k in &ks {
        let _ = write!(
            out,
            "<th class=\"num\" data-sort=\"pass^{k}\" title=\"cases passing all of {k} repeats, %\">pass^{k}</th>"
        );
    }
    out.push_str("</tr></thead><tbody>");
    for m in &summary.models {
        let mut sim = if m.simulated {
            " <span class=\"tag sim\">simulated</span>".to_string()
        } else {
            String::new()
        };
        if let Some(form) = m.structured_output {
            let _ = write!(
                sim,
                " <span class=\"tag structured\" title=\"asked with a JSON Schema of its answer (structured_output: {})\">structured</span>",
                form.as_str()
            );
        }
        let _ = write!(
            out,
            "<tr data-model=\"{}\"><td data-metric=\"model\" data-value=\"{}\">{}{sim}</td><td class=\"num\" data-metric=\"dialogues\" data-value=\"{}\">{}</td>",
            escape(&m.model),
            escape(&m.model),
            escape(&m.model),
            m.dialogues,
            m.dialogues
        );
        for (key, _) in LEADERBOARD {
            match metric(&m.all, key) {
                Some(x) => {
                    let _ = write!(
                        out,
                        "<td class=\"num\" data-metric=\"{key}\" data-value=\"{}\" title=\"95% interval {} to {}, {} turns\">{} <span class=\"ci\">±{}</span></td>",
                        raw(x.mean),
                        num(x.ci_low),
                        num(x.ci_high),
                        x.n,
                        num(x.mean),
                        num(x.half_width())
                    );
                }
                None => {
                    let _ = write!(
                        out,
                        "<td class=\"num\" data-metric=\"{key}\" data-value=\"\">—</td>"
                    );
                }
            }
        }
        for k in &ks {
            match m.pass_k.iter().find(|p| p.k == *k) {
                Some(p) => {
                    let _ = write!(
                        out,
                        "<td class=\"num\" data-metric=\"pass^{k}\" data-value=\"{}\" title=\"{} cases ran at least {k} times\">{}</td>",
                        raw(p.pass),
                        p.cases,
                        num(p.pass)
                    );
                }
                None => {
                    let _ = write!(
                        out,
                        "<td class=\"num\" data-metric=\"pass^{k}\" data-value=\"\">—</td>"
                    );
                }
            }
        }
        out.push_str("</tr>");
    }
    out.push_str("</tbody></table>");
    out
}

pub(super) const LEADERBOARD_CSS: &str = r#"
#leaderboard-table th[data-sort]{cursor:pointer;user-select:none}
#leaderboard-table th[aria-sort=ascending]::after{content:" ▲"}
#leaderboard-table th[aria-sort=descending]::after{content:" ▼"}
.tag.sim{color:var(--warn)}
.tag.bad{color:var(--bad)}
table.routes tr.untested td{color:var(--bad)}
table.route-models td{font-size:12px;color:#1d2330}
"#;

/// Sorts `table.data` tables with `th[data-sort]` headings by the clicked column's
/// `data-value` (numbers numerically, missing values last).
pub const SORT_SCRIPT: &str = include_str!("../js/sort.js");
