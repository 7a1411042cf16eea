use super::*;
use base64::Engine as _;
use sage_core::protocol::Usage;
use sage_core::tau2::run::{NlCheck, Tau2Job, Tau2Message, Tau2Reward, Tau2ToolCall};
use serde_json::json;
use std::io::Read as _;

/// How a synthetic simulation ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// Reward 1.
    Pass,
    /// The database differs from the gold one.
    Db,
    /// An NL assertion is not met.
    Nl,
    /// Both the database check and an NL assertion fail.
    DbNl,
    /// The turn limit ended it.
    Steps,
    /// An infrastructure error: no reward.
    Infra,
}

fn message(role: &str, turn: u32, text: Option<&str>) -> Tau2Message {
    Tau2Message {
        role: role.into(),
        content: text.map(str::to_string),
        tool_calls: Vec::new(),
        tool_call_id: None,
        error: false,
        turn,
    }
}

/// One simulation of `task` by `agent`, trial `trial`, ending as `kind`: the greeting, the
/// user's request, a tool call answered with an error, the agent's reply, the user's stop.
fn record(agent: &str, task: &str, trial: u32, kind: Kind) -> Tau2Record {
    let mut call = message("assistant", 1, None);
    call.tool_calls.push(Tau2ToolCall {
        id: "c1".into(),
        name: "get_order_details".into(),
        arguments: json!({"order_id": "#W0000001"}),
    });
    let mut answer = message("tool", 1, Some("Error: Order not found"));
    answer.tool_call_id = Some("c1".into());
    answer.error = true;
    let messages = vec![
        message("assistant", 0, Some("Hi! How can I help you today?")),
        message("user", 0, Some("Cancel my order please")),
        call,
        answer,
        message("assistant", 1, Some("I could not find it.")),
        message("user", 1, Some("###STOP###")),
    ];
    let nl = |met: bool| {
        vec![NlCheck {
            assertion: "The agent says the order was not found".into(),
            met,
            justification: if met { "it did" } else { "it did not" }.into(),
        }]
    };
    let reward = |reward: f64, db_match: Option<bool>, nl_assertions: Vec<NlCheck>| {
        Some(Tau2Reward {
            reward,
            db_match,
            nl_assertions,
            breakdown: BTreeMap::new(),
        })
    };
    let (termination, reward) = match kind {
        Kind::Pass => (Termination::UserStop, reward(1.0, Some(true), nl(true))),
        Kind::Db => (Termination::UserStop, reward(0.0, Some(false), nl(true))),
        Kind::Nl => (Termination::UserStop, reward(0.0, Some(true), nl(false))),
        Kind::DbNl => (Termination::UserStop, reward(0.0, Some(false), nl(false))),
        Kind::Steps => (Termination::MaxSteps, reward(0.0, None, Vec::new())),
        Kind::Infra => (Termination::InfrastructureError, None),
    };
    Tau2Record {
        job: Tau2Job {
            run_id: "run".into(),
            dialogue_id: format!("{task}/{agent}/r{trial}"),
            task: task.into(),
            model: agent.into(),
            customer_model: "user-sim".into(),
            judge_models: vec!["judge".into()],
            trial,
            max_turns: 30,
            seed: 7,
        },
        messages,
        termination,
        infra_error: (kind == Kind::Infra).then(|| "agent: timeout".into()),
        reward,
        calls: Vec::new(),
        usage: Usage::default(),
        cost_usd: 0.25,
    }
}

/// A task's two trials.
type Plan = (&'static str, [Kind; 2]);

/// Four agents, four tasks ("1", "2", "3", "10"), two trials each:
/// * alpha and zeta pass everything: pass^1 = pass^2 = 1;
/// * beta: task 1 P P, 2 P steps, 3 P P, 10 nl db+nl: per task 1, 1/2, 1, 0, so
///   pass^1 = 2.5/4 = 0.625 and pass^2 = (1 + 0 + 1 + 0)/4 = 0.5;
/// * gamma: task 1 P infra, 2 P P, 3 P P, 10 db P: per task 1 (of 1), 1, 1, 1/2, so
///   pass^1 = 3.5/4 = 0.875 and no pass^2 (task 1 has one graded trial).
fn records() -> Vec<Tau2Record> {
    use Kind::*;
    let plan: [(&str, [Plan; 4]); 4] = [
        (
            "zeta",
            [
                ("1", [Pass, Pass]),
                ("2", [Pass, Pass]),
                ("3", [Pass, Pass]),
                ("10", [Pass, Pass]),
            ],
        ),
        (
            "beta",
            [
                ("1", [Pass, Pass]),
                ("2", [Pass, Steps]),
                ("3", [Pass, Pass]),
                ("10", [Nl, DbNl]),
            ],
        ),
        (
            "gamma",
            [
                ("1", [Pass, Infra]),
                ("2", [Pass, Pass]),
                ("3", [Pass, Pass]),
                ("10", [Db, Pass]),
            ],
        ),
        (
            "alpha",
            [
                ("1", [Pass, Pass]),
                ("2", [Pass, Pass]),
                ("3", [Pass, Pass]),
                ("10", [Pass, Pass]),
            ],
        ),
    ];
    let mut out = Vec::new();
    for (agent, tasks) in plan {
        for (task, kinds) in tasks {
            for (trial, kind) in kinds.into_iter().enumerate() {
                out.push(record(agent, task, trial as u32, kind));
            }
        }
    }
    out
}

fn info() -> Tau2RunInfo {
    Tau2RunInfo {
        run_id: "run-<1>".into(),
        created_at: "2025-01-01T00:00:00Z".into(),
        seed: Some(42),
        repeats: Some(2),
        max_turns: Some(30),
        agents: vec!["alpha".into(), "beta".into(), "gamma".into(), "zeta".into()],
        customer_model: "user-sim".into(),
        judge_models: vec!["judge".into()],
        simulated_models: vec!["user-sim".into()],
        tasks: Some(4),
        ..Tau2RunInfo::default()
    }
}

fn folded(records: &[Tau2Record]) -> Tau2ReportFold {
    let mut fold = Tau2ReportFold::new(info());
    for (i, r) in records.iter().enumerate() {
        fold.add(r, i as u64);
    }
    fold
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() < 1e-12
}

/// The JSON lines of every transcript chunk of a page.
fn transcripts(html: &str) -> Vec<serde_json::Value> {
    let mut out = Vec::new();
    let mut rest = html;
    while let Some(at) = rest.find("data-chunk=\"") {
        let start = at + rest[at..].find('>').expect("tag end") + 1;
        let end = start + rest[start..].find("</script>").expect("end");
        let gz = base64::engine::general_purpose::STANDARD
            .decode(&rest[start..end])
            .expect("base64");
        let mut text = String::new();
        flate2::read::GzDecoder::new(&gz[..])
            .read_to_string(&mut text)
            .expect("gzip");
        out.extend(text.lines().map(|l| serde_json::from_str(l).expect("JSON")));
        rest = &rest[end..];
    }
    out
}

/// The part of `html` from the element with id `id` to the end of its section.
fn section<'a>(html: &'a str, id: &str) -> &'a str {
    let start = html
        .find(&format!("<section id=\"{id}\""))
        .unwrap_or_else(|| panic!("section {id}"));
    let end = start + html[start..].find("</section>").expect("section end");
    &html[start..end]
}

#[test]
fn the_leaderboard_ranks_agents_by_pass1_with_hand_computed_values() {
    let fold = folded(&records());
    let rows = fold.leaderboard();
    let names: Vec<&str> = rows.iter().map(|r| r.agent.as_str()).collect();
    // alpha and zeta tie at 1 (by name), then gamma 0.875, then beta 0.625.
    assert_eq!(names, ["alpha", "zeta", "gamma", "beta"]);
    let by = |name: &str| rows.iter().find(|r| r.agent == name).expect("row");
    assert_eq!(by("alpha").pass_hat_k, vec![1.0, 1.0]);
    let beta = by("beta");
    assert_eq!(beta.pass_hat_k.len(), 2);
    assert!(close(beta.pass_hat_k[0], 0.625));
    assert!(close(beta.pass_hat_k[1], 0.5));
    assert_eq!((beta.tasks, beta.simulations, beta.passed), (4, 8, 5));
    assert_eq!(
        (beta.db_misses, beta.nl_misses, beta.infra_errors),
        (1, 2, 0)
    );
    let gamma = by("gamma");
    assert_eq!(gamma.pass_hat_k.len(), 1, "task 1 has one graded trial");
    assert!(close(gamma.pass_hat_k[0], 0.875));
    assert_eq!((gamma.simulations, gamma.infra_errors), (7, 1));
    // The infrastructure error's cost counts (as summary.json's).
    assert!(close(gamma.cost_usd, 2.0));
    // Every interval holds its pass^1; with every task passed it is a point.
    for r in &rows {
        let (lo, hi) = r.interval.expect("an interval");
        let p = r.pass1().expect("pass^1");
        assert!(lo <= p && p <= hi, "{}: {lo} {p} {hi}", r.agent);
    }
    assert_eq!(by("alpha").interval, Some((1.0, 1.0)));
    assert!(beta.interval.expect("beta").0 < 0.625);

    let html = folded(&records()).render(&mut records()).expect("a page");
    let board = section(&html, "tau2-leaderboard");
    let at = |name: &str| {
        board
            .find(&format!("<tr data-agent=\"{name}\">"))
            .unwrap_or_else(|| panic!("{name}"))
    };
    assert!(at("alpha") < at("zeta") && at("zeta") < at("gamma") && at("gamma") < at("beta"));
    assert!(board.contains("data-metric=\"pass^1\" data-value=\"0.625\""));
    assert!(board.contains("<b>0.625</b>"));
    assert!(board.contains("data-metric=\"pass^2\" data-value=\"0.5\">0.500</td>"));
    // gamma has no pass^2: a dash that says why.
    assert!(board.contains("title=\"a task has fewer than 2 graded trials"));
    assert!(board.contains("not told apart by this run"));
    // alpha's point interval overlaps zeta's.
    assert!(
        board.contains("This run does not tell alpha apart from zeta"),
        "{board}"
    );
}

#[test]
fn the_interval_holds_pass1_is_deterministic_and_narrows_with_more_tasks() {
    // Half the tasks always pass, half never: pass^1 = 0.5.
    let tasks = |n: usize| -> Vec<(u32, u32)> {
        (0..n)
            .map(|i| if i % 2 == 0 { (2, 2) } else { (2, 0) })
            .collect()
    };
    let few = pass1_interval(&tasks(10), BOOTSTRAP_RESAMPLES, BOOTSTRAP_SEED).expect("few");
    let many = pass1_interval(&tasks(100), BOOTSTRAP_RESAMPLES, BOOTSTRAP_SEED).expect("many");
    for (lo, hi) in [few, many] {
        assert!(lo < 0.5 && 0.5 < hi, "{lo} {hi}");
    }
    assert!(
        many.1 - many.0 < few.1 - few.0,
        "{many:?} not narrower than {few:?}"
    );
    // About 2 * 1.96 * sqrt(0.25 / 100) = 0.196 wide at 100 tasks.
    assert!((0.15..0.25).contains(&(many.1 - many.0)), "{many:?}");
    assert_eq!(
        pass1_interval(&tasks(10), BOOTSTRAP_RESAMPLES, BOOTSTRAP_SEED),
        Some(few)
    );
    // One task: its share, exactly; no graded task: none.
    assert_eq!(pass1_interval(&[(4, 1)], 100, 1), Some((0.25, 0.25)));
    assert_eq!(pass1_interval(&[(0, 0)], 100, 1), None);
    assert_eq!(pass1_interval(&[], 100, 1), None);
}

#[test]
fn the_matrix_lists_only_failed_tasks_worst_first() {
    let fold = folded(&records());
    let order: Vec<String> = fold.leaderboard().into_iter().map(|r| r.agent).collect();
    let m = fold.matrix(&order);
    // Task 10: beta 2 + gamma 1 failed; task 2: beta 1; task 1: gamma's infrastructure error.
    // Task 3 every agent passed twice: not listed.
    let tasks: Vec<(&str, u32, u32)> = m
        .rows
        .iter()
        .map(|r| (r.task.as_str(), r.failed, r.infra_errors))
        .collect();
    assert_eq!(tasks, [("10", 3, 0), ("2", 1, 0), ("1", 0, 1)]);
    assert_eq!((m.passed_by_all, m.tasks), (1, 4));
    let ten: Vec<(u32, u32)> = m.rows[0]
        .cells
        .iter()
        .map(|c| c.map(|c| (c.passed, c.trials)).expect("played"))
        .collect();
    // alpha, zeta, gamma, beta.
    assert_eq!(ten, [(2, 2), (2, 2), (1, 2), (0, 2)]);

    let html = folded(&records()).render(&mut records()).expect("a page");
    let matrix = section(&html, "tau2-tasks");
    assert!(!matrix.contains("data-task=\"3\""));
    let row = |task: &str| {
        matrix
            .find(&format!("<tr data-task=\"{task}\">"))
            .expect(task)
    };
    assert!(row("10") < row("2") && row("2") < row("1"));
    assert!(matrix.contains("<b>1</b> of the 4 tasks were passed by every agent"));
    // gamma's cell of task 10: 1/2, amber, linked to its simulations of the task.
    assert!(matrix.contains(
        "<td class=\"num cell p-some\" data-agent=\"gamma\" data-passed=\"1\" data-trials=\"2\" data-infra=\"0\"><a href=\"#explore=agent:gamma;task:10\""
    ), "{matrix}");
    assert!(matrix.contains(">1/2</a>"));
    assert!(matrix.contains("class=\"num cell p-none\" data-agent=\"beta\""));
    // gamma's infrastructure error on task 1: 1/1 and a warning mark.
    assert!(matrix.contains(">1/1 <span class=\"infra\">⚠1</span></a>"));
    assert!(matrix.contains("<div class=\"table-box\">"));
}

#[test]
fn the_reasons_count_each_way_a_simulation_failed() {
    let rows = folded(&records()).leaderboard();
    let by = |name: &str| rows.iter().find(|r| r.agent == name).expect("row");
    let beta = by("beta");
    // Steps on task 2; nl, then db and nl on task 10.
    assert_eq!(
        (
            beta.failed,
            beta.db_misses,
            beta.nl_misses,
            beta.max_steps,
            beta.infra_errors,
            beta.other_failures
        ),
        (3, 1, 2, 1, 0, 0)
    );
    let gamma = by("gamma");
    assert_eq!(
        (
            gamma.failed,
            gamma.db_misses,
            gamma.nl_misses,
            gamma.max_steps,
            gamma.infra_errors
        ),
        (1, 1, 0, 0, 1)
    );
    let html = folded(&records()).render(&mut records()).expect("a page");
    let reasons = section(&html, "tau2-reasons");
    // beta: 3 failed; 2 of them missed an NL assertion (67%).
    assert!(reasons.contains("<td class=\"num\" data-reason=\"failed\" data-value=\"3\">3</td>"));
    assert!(reasons.contains(
        "data-reason=\"nl_miss\" data-value=\"2\" data-share=\"0.6666666666666666\"><a href=\"#explore=agent:beta;outcome:nl_miss\">2</a> <span class=\"ci\">67%</span>"
    ), "{reasons}");
    // gamma: one database miss and one infrastructure error of 2.
    assert!(reasons.contains(
        "data-reason=\"infra_error\" data-value=\"1\" data-share=\"0.5\"><a href=\"#explore=agent:gamma;outcome:infra_error\">1</a>"
    ));
}

#[test]
fn a_repeated_simulation_is_folded_once() {
    let mut fold = Tau2ReportFold::new(Tau2RunInfo::default());
    let first = record("a", "5", 0, Kind::Pass);
    assert!(fold.add(&first, 0));
    // The same simulation again (a redelivered record), even graded otherwise: left out.
    assert!(!fold.add(&record("a", "5", 0, Kind::Db), 100));
    assert!(fold.add(&record("a", "5", 1, Kind::Db), 200));
    // A trial past the bitmask's range is remembered too.
    assert!(fold.add(&record("a", "5", 300, Kind::Pass), 300));
    assert!(!fold.add(&record("a", "5", 300, Kind::Pass), 400));
    assert_eq!((fold.simulations(), fold.duplicates()), (3, 2));
    let row = &fold.leaderboard()[0];
    assert_eq!((row.simulations, row.passed, row.db_misses), (3, 2, 1));
}

#[test]
fn the_page_has_every_section_in_order_and_the_transcripts() {
    let html = folded(&records()).render(&mut records()).expect("a page");
    let mut last = 0;
    for id in [
        "tau2-leaderboard",
        "tau2-run",
        "tau2-tasks",
        "tau2-reasons",
        "tau2-explorer",
    ] {
        let at = html
            .find(&format!("<section id=\"{id}\" data-section=\"{id}\">"))
            .unwrap_or_else(|| panic!("{id}"));
        assert!(at > last, "{id} out of order");
        last = at;
    }
    assert!(html.contains("<title>tau2 retail run run-&lt;1&gt;</title>"));
    let run = section(&html, "tau2-run");
    assert!(run.contains("<tr data-key=\"seed\"><th>Seed</th><td>42</td></tr>"));
    assert!(run.contains("user-sim</span> <span class=\"tag sim\">simulated</span>"));
    assert!(run.contains("32 of 32 planned"));
    assert!(run.contains("id=\"tau2-simulated-warning\""));
    // Every simulation embedded, its transcript whole.
    let list = transcripts(&html);
    assert_eq!(list.len(), 32);
    let sim = list
        .iter()
        .find(|s| s["id"] == "10/beta/r1")
        .expect("beta's second trial of task 10");
    assert_eq!(sim["outcome"], json!(["db_miss", "nl_miss"]));
    assert_eq!(sim["termination"], "user_stop");
    assert_eq!(sim["reward"], 0.0);
    assert_eq!(sim["db_match"], false);
    assert_eq!(
        sim["nl_assertions"][0],
        json!({"assertion": "The agent says the order was not found", "met": false, "justification": "it did not"})
    );
    assert_eq!(
        sim["messages"][2],
        json!({"role": "assistant", "turn": 1, "calls": [{"id": "c1", "name": "get_order_details", "arguments": {"order_id": "#W0000001"}}]})
    );
    assert_eq!(
        sim["messages"][3],
        json!({"role": "tool", "turn": 1, "text": "Error: Order not found", "answers": "c1", "tool": "get_order_details", "error": true})
    );
    let infra = list
        .iter()
        .find(|s| s["id"] == "1/gamma/r1")
        .expect("the infrastructure error");
    assert_eq!(infra["outcome"], json!(["infra_error"]));
    assert_eq!(infra["infra_error"], "agent: timeout");
    assert_eq!(infra["reward"], serde_json::Value::Null);
    // The rows: id, chunk, position, case (the task and trial across agents), then agent,
    // task, trial, outcomes, tool calls, turns; the tables hold the names.
    assert!(html.contains(",\"10/r1\","), "the case of a row");
    assert!(html.contains("\"tasks\":[\"1\",\"2\",\"3\",\"10\"]"));
    assert!(html.contains(
        "\"outcomes\":[\"pass\",\"db_miss\",\"nl_miss\",\"max_steps\",\"fail\",\"infra_error\"]"
    ));
    assert!(html.contains("<select data-filter=\"agent\">"));
    assert!(html.contains("<option value=\"gamma\">gamma</option>"));
}

#[test]
fn an_empty_run_renders() {
    let html = Tau2ReportFold::new(Tau2RunInfo::default())
        .render(&mut Vec::new())
        .expect("a page");
    assert!(html.contains("data-total=\"0\""));
    assert!(section(&html, "tau2-leaderboard").contains("No simulation yet."));
    assert!(section(&html, "tau2-tasks").contains("No simulation yet."));
}

#[test]
fn record_text_is_never_markup() {
    let bad_agent = "<b>agent</b>";
    let mut r = record(bad_agent, "7", 0, Kind::Nl);
    r.messages[1].content = Some("</script><script>alert(1)</script>".into());
    r.reward.as_mut().expect("graded").nl_assertions[0].justification =
        "<img src=x onerror=alert(2)>".into();
    let mut records = vec![r];
    let mut fold = Tau2ReportFold::new(Tau2RunInfo::default());
    fold.add(&records[0], 0);
    let html = fold.render(&mut records).expect("a page");
    assert!(!html.contains("<script>alert"));
    assert!(
        !html.contains("alert(1)"),
        "the transcript is compressed data"
    );
    assert!(!html.contains("<b>agent</b>"));
    assert!(!html.contains("<img"));
    assert!(html.contains("&lt;b&gt;agent&lt;/b&gt;"));
    // The rows' JSON cannot close its script element.
    assert!(html.contains("\\u003cb>agent\\u003c/b>"));
    // The text is in the data, whole, for the script to write as text.
    let list = transcripts(&html);
    assert_eq!(
        list[0]["messages"][1]["text"],
        "</script><script>alert(1)</script>"
    );
    // The script writes data with text nodes only, and cannot close its own element.
    assert!(!TAU2_JS.contains("innerHTML"));
    assert!(!TAU2_JS.contains("insertAdjacentHTML"));
    assert!(!TAU2_JS.to_ascii_lowercase().contains("</script"));
    assert!(!TAU2_JS.contains("<!--"));
}

/// Whether `agent` passes trial `trial` of task `task` in the large run: agent i fails about
/// i/40 of its simulations, so the ranking is by index.
fn big_pass(i: usize, task: usize, trial: u32) -> bool {
    (task * 7 + trial as usize * 3 + i * 11) % 40 >= i
}

#[test]
fn a_page_of_27_agents_114_tasks_and_2_trials_renders() {
    let agents: Vec<String> = (0..27)
        .map(|i| {
            if i == 5 {
                "openrouter/a-very-long-provider-name/some-model-with-a-long-name-instruct-v1"
                    .into()
            } else {
                format!("agent-{i:02}")
            }
        })
        .collect();
    let mut records = Vec::new();
    for (i, agent) in agents.iter().enumerate() {
        for task in 0..114 {
            for trial in 0..2 {
                let kind = if big_pass(i, task, trial) {
                    Kind::Pass
                } else if task % 3 == 0 {
                    Kind::Nl
                } else {
                    Kind::Db
                };
                records.push(record(agent, &task.to_string(), trial, kind));
            }
        }
    }
    let mut fold = Tau2ReportFold::new(Tau2RunInfo {
        agents: agents.clone(),
        repeats: Some(2),
        tasks: Some(114),
        ..Tau2RunInfo::default()
    })
    .with_limits(Limits {
        dialogues: 500,
        bytes: 1_000_000,
    });
    for (i, r) in records.iter().enumerate() {
        assert!(fold.add(r, i as u64));
    }
    let order: Vec<String> = fold.leaderboard().into_iter().map(|r| r.agent).collect();
    assert_eq!(order.len(), 27);
    // agent-00 never fails: first.
    assert_eq!(order[0], "agent-00");
    let mut out = Vec::new();
    let mut spool = std::io::Cursor::new(Vec::new());
    let embedded = fold
        .write_page(&mut out, &mut records, &mut spool, "sage show DIR")
        .expect("a page");
    assert_eq!(embedded.counts.total, 27 * 114 * 2);
    assert!(embedded.counts.chosen <= 500);
    let html = String::from_utf8(out).expect("UTF-8");
    let matrix = section(&html, "tau2-tasks");
    // The head: 27 rotated agent columns, whole names, in the leaderboard's order.
    let head = &matrix[..matrix.find("</thead>").expect("head")];
    let columns: Vec<&str> = head
        .split("<th class=\"num rotated\" data-agent=\"")
        .skip(1)
        .map(|s| &s[..s.find('"').expect("quote")])
        .collect();
    assert_eq!(columns, order);
    assert!(head.contains(
        "<span>openrouter/a-very-long-provider-name/some-model-with-a-long-name-instruct-v1</span>"
    ));
    // Every listed row has a cell per agent; the rows are worst first.
    let m = fold.matrix(&order);
    assert!(m.rows.iter().all(|r| r.cells.len() == 27));
    assert!(m.rows.windows(2).all(|w| w[0].failed >= w[1].failed));
    assert_eq!(m.rows.len() + m.passed_by_all, 114);
    assert_eq!(
        matrix.matches("<tr data-task=").count(),
        m.rows.len(),
        "one row per listed task"
    );
    // The leaderboard names the long agent whole.
    assert!(section(&html, "tau2-leaderboard").contains(
        "<span class=\"agent-name\">openrouter/a-very-long-provider-name/some-model-with-a-long-name-instruct-v1</span>"
    ));
}
