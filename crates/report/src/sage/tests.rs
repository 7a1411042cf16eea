use super::judges::sensitivity_html;
use super::routes::route_models_table;
use super::*;
use sage_core::protocol::{CallRecord, DialogueRecord};
use serde_json::{Value as Json, json};

pub(super) fn route(path: &[&str], action: &str) -> Json {
    json!({"path": path, "action": action, "outputs": {}})
}

fn judge(a: &str) -> Json {
    json!({"Ok": {"classification": {"A": a}, "chat": {"linguistic_quality": 9,
        "anthropomorphism_emotion": 9, "content_utility": 9, "user_satisfaction": 9,
        "instruction_compliance": 9}}})
}

/// A scored turn referencing `reference` with Logic `logic`, judged `votes` on field A.
pub(super) fn turn(n: u32, logic: f64, reference: Json, votes: [&str; 3]) -> Json {
    json!({
        "turn": n, "user_message": "hi", "raw_output": null,
        "outcome": {"kind": "valid", "turn": {"classification": {"A": "x"}, "cot": "",
            "path": ["s1"], "action": "Done", "outputs": {}, "chat": "hello"}},
        "judges": {"judgments": votes.iter().map(|v| judge(v)).collect::<Vec<_>>(),
            "consensus": {"A": votes[0]}, "calls": []},
        "reference": {"Ok": reference},
        "scores": {"acc_cls": 1.0, "sim_path": 1.0, "acc_action": 1.0, "logic": logic,
            "chat": 100.0, "overall": 0.8 * logic + 20.0, "sim_path_prefix": 1.0},
        "infra_error": null, "calls": []
    })
}

pub(super) fn record(id: &str, model: &str, turns: Vec<Json>) -> DialogueRecord {
    let value = json!({
        "job": {"run_id": "r", "dialogue_id": id, "scenario": "sc",
            "target": route(&["s1"], "Done"), "fields": {"A": "x"}, "variables": {},
            "intent": "i", "persona": "p", "adversarial": "zero", "service_model": model,
            "user_model": "u", "judge_models": ["j1", "j2", "j3"], "max_turns": 4,
            "seed": 1, "repeat": 0},
        "turns": turns, "end": "resolved", "simulated": true,
        "usage": {"input_tokens": 0, "output_tokens": 0}, "cost_usd": 0.0
    });
    match serde_json::from_value(value) {
        Ok(r) => r,
        Err(e) => panic!("a record: {e}"),
    }
}

fn info() -> RunInfo {
    RunInfo {
        run_id: "r".into(),
        created_at: "2025-01-01T00:00:00Z".into(),
        sage_version: "0".into(),
        config: RunConfig::default(),
        scenarios: vec![("sc".into(), "ab".repeat(32))],
        simulated_models: vec!["m1".into()],
        jobs: 2,
    }
}

/// The report of two dialogues, and the records it read them from (placed by index).
fn folded() -> SageReport {
    folded_with_records().0
}

fn folded_with_records() -> (SageReport, Vec<DialogueRecord>) {
    let r1 = route(&["s1", "s2"], "Done");
    let r2 = route(&["s1"], "Stop");
    let mut report = SageReport::new(info(), Vec::new());
    let mut infra = turn(3, 0.0, r2.clone(), ["x", "x", "x"]);
    infra["outcome"] = json!({"kind": "infra_error", "error": "timeout"});
    infra["infra_error"] = json!("timeout");
    let mut format = turn(4, 0.0, r2.clone(), ["x", "x", "x"]);
    format["outcome"] = json!({"kind": "format_error", "error": {"type": "missing_key", "key": "cot"}, "chat": "?"});
    let records = vec![
        record(
            "sc/0001/m1/r0",
            "m1",
            vec![
                turn(1, 80.0, r1.clone(), ["x", "x", "y"]),
                turn(2, 60.0, r1.clone(), ["x", "x", "x"]),
                turn(3, 40.0, r2.clone(), ["y", "x", "x"]),
            ],
        ),
        record(
            "sc/0002/m2/r0",
            "m2",
            vec![turn(1, 100.0, r1, ["x", "y", "y"]), infra, format],
        ),
    ];
    for (i, r) in records.iter().enumerate() {
        report.add(r, i as u64);
    }
    (report, records)
}

/// The whole page of `report`, its transcripts read from `records`.
fn page(report: &mut SageReport, records: &[DialogueRecord]) -> String {
    let summary = sage_core::scoring::summarize(records, &Default::default());
    let mut out = Vec::new();
    let mut spool = std::io::Cursor::new(Vec::new());
    report
        .write_page(
            &summary,
            &mut out,
            &mut records.to_vec(),
            &mut spool,
            "sage show results/r",
        )
        .expect("a page");
    String::from_utf8(out).expect("utf-8")
}

#[test]
fn routes_count_dialogues_and_mean_logic_of_their_turns() {
    let report = folded();
    let routes = &report.routes()["sc"];
    let r1 = &routes["s1>s2 -> Done"];
    assert_eq!(r1.dialogues, 2);
    assert_eq!(r1.logic.n(), 3);
    assert_eq!(r1.logic.get(), Some(80.0));
    assert_eq!(r1.by_model["m1"].get(), Some(70.0));
    assert_eq!(r1.by_model["m2"].get(), Some(100.0));
    // The infrastructure-error turn is not counted; the format error scored 0 is.
    let r2 = &routes["s1 -> Stop"];
    assert_eq!((r2.dialogues, r2.logic.n()), (2, 2));
    assert_eq!(r2.logic.get(), Some(20.0));
    let graph = &report.graphs["sc"];
    assert_eq!(graph.nodes["s1"].n(), 5);
    assert_eq!(graph.nodes["s1"].get(), Some(56.0));
    assert_eq!(graph.edges[&("start".into(), "s1".into())], 5);
    assert_eq!(graph.edges[&("s1".into(), "s2".into())], 3);
    assert_eq!(graph.edges[&("s1".into(), "Stop".into())], 2);
    assert_eq!(report.format_errors()["m2"][3], 1, "missing_key");
    assert_eq!(report.infra_turns["m2"], 1);
    assert_eq!(report.infra_examples.len(), 1);
}

#[test]
fn routes_per_model_count_dialogues_and_mark_the_worst_model() {
    let report = folded();
    let routes = &report.routes()["sc"];
    let r2 = &routes["s1 -> Stop"];
    assert_eq!(r2.dialogues_by_model["m1"], 1);
    assert_eq!(r2.dialogues_by_model["m2"], 1);
    assert_eq!(r2.by_model["m2"].get(), Some(0.0));
    assert_eq!(
        report.graphs["sc"].nodes_by_model["s1"]["m1"].get(),
        Some(60.0)
    );
    assert_eq!(
        report.graphs["sc"].nodes_by_model["s1"]["m2"].get(),
        Some(50.0)
    );
    let (m1, m2, m3) = ("m1".to_string(), "m2".to_string(), "m3".to_string());
    let keys = ["s1>s2 -> Done".to_string(), "s1 -> Stop".to_string()];
    let table = route_models_table("sc", &keys, routes, &[&m1, &m2, &m3]).into_string();
    assert!(table.starts_with("<details class=\"route-models\" open>"));
    // s1 -> Stop: m1 40, m2 0 (the worst, outlined), m3 no turn there.
    assert!(table.contains("<tr data-route-key=\"s1 -&gt; Stop\"><td><code class=\"route\">s1 -&gt;<wbr> Stop</code></td><td class=\"num logic-4\" data-model=\"m1\" data-value=\"40\" data-reached=\"1\"><a href=\"#explore=scenario:sc;reached:sc%3A%20s1%20-%3E%20Stop;sort:worst;model:m1\">40</a></td><td class=\"num logic-0 worst\" data-model=\"m2\" data-value=\"0\" data-reached=\"1\""), "{table}");
    assert!(table.contains(
        "<td class=\"num\" data-model=\"m3\" data-value=\"\" data-reached=\"0\">—</td></tr>"
    ));
    assert_eq!(table.matches(" worst\"").count(), 2);
    // A single model with a value is no one's worst.
    assert!(
        !route_models_table("sc", &keys, routes, &[&m1])
            .into_string()
            .contains("worst\"")
    );
}

#[test]
fn a_structured_agent_is_tagged_in_the_leaderboard() {
    let mut summary = sage_core::scoring::summarize(
        &[record(
            "sc/0001/m1/r0",
            "m1",
            vec![turn(1, 80.0, route(&["s1"], "Done"), ["x", "x", "x"])],
        )],
        &Default::default(),
    );
    assert!(
        !leaderboard_html(&summary)
            .into_string()
            .contains("tag structured")
    );
    summary.models[0].structured_output =
        Some(sage_core::plan::model::StructuredOutput::JsonSchema);
    let html = leaderboard_html(&summary).into_string();
    assert!(
        html.contains("<span class=\"model-name\">m1</span> <span class=\"tag sim\">simulated</span> <span class=\"tag structured\" title=\"asked with a JSON Schema of its answer (structured_output: json_schema)\">structured</span></span></span></td>"),
        "{html}"
    );
}

#[test]
fn pass_k_columns_show_summary_values() {
    let mut summary = sage_core::scoring::summarize(&[], &Default::default());
    assert!(
        !leaderboard_html(&summary).into_string().contains("pass^"),
        "no repeats, no column"
    );
    let mut model = sage_core::scoring::summarize(
        &[record(
            "sc/0001/m1/r0",
            "m1",
            vec![turn(1, 80.0, route(&["s1"], "Done"), ["x", "x", "x"])],
        )],
        &Default::default(),
    )
    .models
    .remove(0);
    model.pass_k = vec![
        sage_core::scoring::summary::PassK {
            k: 1,
            pass: 83.51648351648352,
            cases: 2,
        },
        sage_core::scoring::summary::PassK {
            k: 2,
            pass: 50.0,
            cases: 2,
        },
    ];
    summary.models.push(model);
    assert_eq!(pass_ks(&summary), [1, 2]);
    let html = leaderboard_html(&summary).into_string();
    assert!(html.contains("<th class=\"num\" data-sort=\"pass^2\""));
    assert!(html.contains("<td class=\"num\" data-metric=\"pass^1\" data-value=\"83.51648351648352\" title=\"2 cases ran at least 1 times\">83.52</td><td class=\"num\" data-metric=\"pass^2\" data-value=\"50\""), "{html}");
}

#[test]
fn explore_fragments_encode_each_value() {
    assert_eq!(
        route_anchor("air line", "s1>s2 -> Done [A=1; B]", Some("m:1")),
        "#explore=scenario:air%20line;reached:air%20line%3A%20s1%3Es2%20-%3E%20Done%20%5BA%3D1%3B%20B%5D;sort:worst;model:m%3A1"
    );
}

#[test]
fn judges_kappa_and_splits() {
    let report = folded();
    let a = &report.judges()["sc"]["A"];
    // Judges 1 and 2 over six turns: (x,x) x4, (x,y) x1, (y,x) x1: p_o = 4/6, both
    // marginals 5/6 x and 1/6 y: p_e = 26/36, kappa = (24/36 - 26/36) / (10/36) = -0.2.
    assert_eq!(a.pairs[0].n(), 6);
    let k = a.pairs[0].kappa().unwrap();
    assert!((k + 0.2).abs() < 1e-12, "{k}");
    // Consensus (judge 1's vote here) against the truth x: five x, one y.
    assert_eq!(a.truth.n(), 6);
    assert!((a.truth.agreement().unwrap() - 5.0 / 6.0).abs() < 1e-12);
    let (splits, turns) = report.splits();
    assert_eq!(turns, 3);
    assert_eq!(splits.len(), 3);
    assert_eq!(splits[0].dialogue, "sc/0001/m1/r0");
    assert_eq!(
        splits[0].votes,
        vec![Some("x".into()), Some("x".into()), Some("y".into())]
    );
}

#[test]
fn sections_follow_the_dom_contract() {
    let (mut report, records) = folded_with_records();
    let summary = sage_core::scoring::summarize(&[], &Default::default());
    let sections = report.sections(&summary);
    let ids: Vec<&str> = sections.iter().map(|s| s.id.as_str()).collect();
    assert_eq!(
        ids,
        ["leaderboard", "run", "charts", "sop-graphs", "judges"]
    );
    let routes = &sections[3].html.0;
    assert!(routes.contains(
        "<tr data-route=\"s1&gt;s2 -&gt; Done\" data-dialogues=\"2\" data-logic=\"80\" data-turns=\"3\" data-logic-by-model=\"{&quot;m1&quot;:70.0,&quot;m2&quot;:100.0}\" data-dialogues-by-model=\"{&quot;m1&quot;:1,&quot;m2&quot;:1}\" data-turns-by-model=\"{&quot;m1&quot;:2,&quot;m2&quot;:1}\">"
    ), "{routes}");
    // The dialogues that reached the route link to the explorer, filtered to them, worst
    // first; the weakest model to its own.
    assert!(routes.contains(
        "<td class=\"num\" data-col=\"dialogues\"><a class=\"explore\" href=\"#explore=scenario:sc;reached:sc%3A%20s1%3Es2%20-%3E%20Done;sort:worst\" data-explore=\"#explore=scenario:sc;reached:sc%3A%20s1%3Es2%20-%3E%20Done;sort:worst\""
    ), "{routes}");
    assert!(routes.contains(
        "<a href=\"#explore=scenario:sc;reached:sc%3A%20s1%3Es2%20-%3E%20Done;sort:worst;model:m1\" title=\"its dialogues on this route, worst first\">m1</a> (70)"
    ), "{routes}");
    assert!(
        routes.contains("<select data-graph-model><option value=\"\">all models</option></select>")
    );
    assert!(sections[0].html.0.contains("id=\"leaderboard-table\""));
    let html = page(&mut report, &records);
    let explorer = &html[html.find("<section id=\"explorer\"").expect("the explorer")..];
    assert!(explorer.contains("<div class=\"explorer\" id=\"explorer\" data-key=\"dialogue\">"));
    for f in [
        "model",
        "scenario",
        "route",
        "adversarial",
        "persona",
        "end",
    ] {
        assert!(
            explorer.contains(&format!("<select data-filter=\"{f}\">")),
            "{f}"
        );
    }
    assert!(html.contains("<a href=\"#explorer\">Dialogue explorer</a>"));
    assert!(!html.contains("http://") && !html.contains("https://"));
}

#[test]
fn transcripts_are_gzip_chunks_of_json_lines() {
    use base64::Engine;
    use std::io::Read;
    let (mut report, records) = folded_with_records();
    let html = page(&mut report, &records);
    let start = html.find("data-chunk=\"0\">").unwrap() + "data-chunk=\"0\">".len();
    let end = start + html[start..].find('<').unwrap();
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(&html[start..end])
        .unwrap();
    let mut text = String::new();
    flate2::read::GzDecoder::new(&bytes[..])
        .read_to_string(&mut text)
        .unwrap();
    let lines: Vec<Json> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 2);
    // Both reached their target action (`Done`, their last valid answer's): in priority order,
    // group m1 first (its only dialogue), then m2.
    assert_eq!(lines[0]["i"], "sc/0001/m1/r0");
    assert_eq!(lines[1]["i"], "sc/0002/m2/r0");
    assert_eq!(lines[1]["t"][1]["k"], 2);
    assert_eq!(lines[1]["t"][2]["k"], 1);
    // Judge 1 agreed with the consensus (left out), judges 2 and 3 did not; each judge's
    // weighted Chat on 0-100.
    assert!(lines[1]["t"][0]["j"][0].get("c").is_none());
    assert_eq!(lines[1]["t"][0]["j"][1]["c"], json!(["y"]));
    assert_eq!(lines[1]["t"][0]["j"][0]["w"], json!(100.0));
    // Every score on 0-100: Acc_cls, Sim_path, Acc_action, Logic, Chat, Overall.
    assert_eq!(
        lines[0]["t"][0]["s"],
        json!([100.0, 100.0, 100.0, 80.0, 100.0, 84.0])
    );
    // The row: id, chunk 0, line 1, case, then model 1, scenario 0, route 0, level 0,
    // persona 0, end 0, mean overall of the scored turns (100 + 20) / 2, flags format and
    // infra, 3 turns, and the routes it reached with the mean Logic of its turns there:
    // route 0 (s1>s2 -> Done) at 100, route 1 (s1 -> Stop) at 0 (the format error; the
    // infrastructure error is not scored); last, each turn against its reference: the agent's
    // path `s1` left `s1>s2` (x), the infrastructure error (i), the format error (f).
    // The tables are sorted: reached route 0 is `s1 -> Stop`, 1 `s1>s2 -> Done`.
    let row =
        "[\"sc/0002/m2/r0\",0,1,\"sc/0002/r0\",1,0,0,0,0,0,60.0,3,3,[[0,0.0],[1,100.0]],\"xif\"]";
    assert!(html.contains(row), "{row}");
    let row =
        "[\"sc/0001/m1/r0\",0,0,\"sc/0001/r0\",0,0,0,0,0,0,68.0,0,3,[[0,40.0],[1,70.0]],\"xxx\"]";
    assert!(html.contains(row), "{row}");
    assert!(html.contains("\"reached\":[\"sc: s1 -> Stop\",\"sc: s1>s2 -> Done\"]"));
    assert!(html.contains("<option value=\"0\">sc: s1 -&gt; Stop</option>"));
}

#[test]
fn above_the_limit_the_page_embeds_the_choice_and_says_so() {
    let (_, records) = folded_with_records();
    let mut report = SageReport::new(info(), Vec::new()).with_limits(explorer::Limits {
        dialogues: 1,
        bytes: 1 << 20,
    });
    for (i, r) in records.iter().enumerate() {
        report.add(r, i as u64);
    }
    let html = page(&mut report, &records);
    // Both reached their target action (`Done`, their last valid answer's): the sample takes
    // group m1's (the first group) alone.
    let rows = &html[html.find("\"rows\":").expect("the rows")..];
    assert!(
        rows.starts_with("\"rows\":[[\"sc/0001/m1/r0\",0,0,"),
        "{rows}"
    );
    assert!(!rows.contains("\"sc/0002/m2/r0\""), "{rows}");
    assert!(html.contains("data-total=\"2\" data-listed=\"1\" data-embedded=\"1\" data-failing=\"0\" data-failing-embedded=\"0\""), "{html}");
    assert!(html.contains("This page embeds 1 of the run's 2 dialogues with their transcript"));
    assert!(html.contains("<code class=\"show\">sage show results/r ID</code>"));
}

#[test]
fn anchors_encode_like_encode_uri_component() {
    assert_eq!(
        dialogue_anchor("telecom/0007/sim strong/r0"),
        "#dialogue=telecom%2F0007%2Fsim%20strong%2Fr0"
    );
    assert_eq!(
        crate::encode_uri_component("a-_.!~*'()é"),
        "a-_.!~*'()%C3%A9"
    );
}

/// What the calls met of the provider limits: summed per model from the call records, shown in
/// the models table, and a model refused on more than 1% of its attempts named above the fold.
#[test]
fn provider_refusals_and_waits_are_shown_per_model() {
    let (_, mut records) = folded_with_records();
    let call = |model: &str, attempts: u32, refused: u32, wait: u64| -> CallRecord {
        serde_json::from_value(json!({
            "model": model, "simulated": false, "request": [], "response": "ok",
            "finish_reason": "stop", "error": null, "attempts": attempts,
            "usage": {"input_tokens": 10, "output_tokens": 5}, "cost_usd": 0.0,
            "cached": false, "latency_ms": wait + 100, "refused": refused, "limit_wait_ms": wait
        }))
        .expect("a call record")
    };
    records[0].turns[0].calls = vec![call("m1", 3, 2, 1_500), call("m1", 1, 0, 0)];
    records[1].turns[0].calls = vec![call("m2", 1, 0, 250)];
    let mut report = SageReport::new(info(), Vec::new());
    for (i, r) in records.iter().enumerate() {
        report.add(r, i as u64);
    }
    let met = report.limits_met();
    assert_eq!(
        (met["m1"].attempts, met["m1"].refused, met["m1"].wait_ms),
        (4, 2, 1_500)
    );
    assert_eq!(
        (met["m2"].attempts, met["m2"].refused, met["m2"].wait_ms),
        (1, 0, 250)
    );
    let html = page(&mut report, &records);
    let text = html.replace(['\n', ' '], "");
    assert!(
        text.contains("Providerlimitsrefusedmorethan1%oftheattemptsofm1(2of4)"),
        "no warning above the fold"
    );
    assert!(text.contains("2of4(50.0%)"), "m1's refusals in its row");
    assert!(text.contains("1.5s"), "m1's wait");
    // Unrefused calls: no warning.
    records[0].turns[0].calls = vec![call("m1", 1, 0, 0)];
    let mut calm = SageReport::new(info(), Vec::new());
    for (i, r) in records.iter().enumerate() {
        calm.add(r, i as u64);
    }
    assert!(!page(&mut calm, &records).contains("Provider limits refused"));
}

#[test]
fn a_panel_that_votes_like_one_judge_is_flagged() {
    // Three judges that always give the same value, wrong on every other turn: their errors
    // go together (correlation 1), the panel is worth one vote on A.
    let r = route(&["s1"], "Done");
    let turns: Vec<Json> = (1..=6)
        .map(|n| {
            let v = if n % 2 == 0 { "y" } else { "x" };
            turn(n, 80.0, r.clone(), [v, v, v])
        })
        .collect();
    let records = vec![record("sc/0001/m1/r0", "m1", turns)];
    let mut report = SageReport::new(info(), Vec::new());
    report.add(&records[0], 0);
    let html = page(&mut report, &records);
    assert!(
        html.contains(r#"data-few-effective-judges="1""#),
        "the warning"
    );
    assert!(html.contains("the panel of 3 votes like fewer than 1.5 judges"));
    let cell = html
        .split(r#"data-metric="effective-judges""#)
        .nth(1)
        .expect("the cell");
    assert!(
        cell.contains("1.0 of 3"),
        "{}",
        &cell[..200.min(cell.len())]
    );
}

#[test]
fn each_models_result_under_each_customer_simulator_is_shown_moved_in_red() {
    use sage_core::scoring::sensitivity::{SimulatorScore, SimulatorSensitivity};
    use sage_core::scoring::stats::{Difference, Metric};
    let oa = |mean: f64| Metric {
        mean,
        ci_low: mean - 1.0,
        ci_high: mean + 1.0,
        n: 100,
    };
    let model = |name: &str, first: f64, second: f64, moved: bool| SimulatorSensitivity {
        model: name.into(),
        noise_floor: Some(2.0),
        simulators: vec![
            SimulatorScore {
                user_model: "kind".into(),
                dialogues: 50,
                oa: Some(oa(first)),
                difference: None,
                moved: false,
            },
            SimulatorScore {
                user_model: "harsh".into(),
                dialogues: 50,
                oa: Some(oa(second)),
                difference: Some(Difference {
                    delta: second - first,
                    ci_low: second - first - 1.0,
                    ci_high: second - first + 1.0,
                }),
                moved,
            },
        ],
    };
    let mut summary = sage_core::scoring::summarize(&[], &Default::default());
    assert!(
        !sensitivity_html(&summary).into_string().contains("table"),
        "nothing with one simulator"
    );
    summary.simulator_sensitivity =
        vec![model("a", 80.0, 70.0, true), model("b", 60.0, 59.5, false)];
    let html = sensitivity_html(&summary).into_string();
    assert!(
        html.contains("data-simulators=\"2\" data-moved=\"1\""),
        "{html}"
    );
    assert!(html.contains("<th class=\"num\">OA, kind</th><th class=\"num\">OA, harsh</th><th class=\"num\">Δ harsh</th>"), "{html}");
    assert!(
        html.contains("<tr data-model=\"a\" data-moved=\"true\"><td>a</td><td class=\"num\" data-value=\"80\">80.00</td><td class=\"num\" data-value=\"70\">70.00</td><td class=\"num bad\" data-value=\"-10\" title=\"95% interval -11.00 to -9.00\">-10.00 [-11.00, -9.00] moved</td><td class=\"num\">2.00</td></tr>"),
        "{html}"
    );
    assert!(
        html.contains("<td class=\"num\" data-value=\"-0.5\""),
        "not moved, not red: {html}"
    );
}
