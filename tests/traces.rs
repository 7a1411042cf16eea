//! Traces as a GenAI-aware trace viewer reads them (issue 24): a real Arize Phoenix (installed
//! from PyPI into a virtual environment: `SAGE_PHOENIX_VENV`, which .ci/run sets up) ingests the
//! OTLP/HTTP spans of a short embedded run and of a sweep through a real nats-server with a
//! worker and an aggregator; read back through Phoenix's own REST API, each dialogue is one
//! trace rooted at its dialogue span, its turns are children, every model call of the record is
//! a `chat {model}` span under its turn with the GenAI attributes, and the token counts equal
//! the records'. Sampling by dialogue id keeps exactly the dialogues it names.

mod common;

use common::browser::{Browser, screenshot_dir};
use common::cluster::{Nats, Sage, free_port, http_get, wait_status};
use common::sage_ok;
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A Phoenix server on free ports with a store of its own, stopped when dropped.
struct Phoenix {
    child: Child,
    addr: String,
    grpc_port: u16,
    _dir: tempfile::TempDir,
}

impl Phoenix {
    fn start() -> Phoenix {
        let venv = std::env::var_os("SAGE_PHOENIX_VENV").map_or_else(
            || {
                PathBuf::from(std::env::var("HOME").expect("HOME"))
                    .join(".cache/sage-ci/phoenix-venv")
            },
            PathBuf::from,
        );
        let bin = venv.join("bin/phoenix");
        assert!(
            bin.exists(),
            "{} is missing: python3 -m venv {} && {}/bin/pip install arize-phoenix (.ci/run does this)",
            bin.display(),
            venv.display(),
            venv.display()
        );
        let dir = tempfile::tempdir().expect("dir");
        let (port, grpc_port) = (free_port(), free_port());
        let log = std::fs::File::create(dir.path().join("phoenix.log")).expect("log");
        let child = Command::new(&bin)
            .arg("serve")
            .env("PHOENIX_HOST", "127.0.0.1")
            .env("PHOENIX_PORT", port.to_string())
            .env("PHOENIX_GRPC_PORT", grpc_port.to_string())
            .env("PHOENIX_WORKING_DIR", dir.path())
            .env("PHOENIX_TELEMETRY_ENABLED", "false")
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("start phoenix");
        let phoenix = Phoenix {
            child,
            addr: format!("127.0.0.1:{port}"),
            grpc_port,
            _dir: dir,
        };
        let deadline = Instant::now() + Duration::from_secs(180);
        let mut phoenix = phoenix;
        while std::net::TcpStream::connect(&phoenix.addr).is_err()
            || http_get(&phoenix.addr, "/healthz").0 != 200
        {
            let log = || std::fs::read_to_string(phoenix._dir.path().join("phoenix.log"));
            if let Ok(Some(status)) = phoenix.child.try_wait() {
                panic!("Phoenix exited ({status}): {:?}", log());
            }
            assert!(
                Instant::now() < deadline,
                "Phoenix did not start in 180 s: {:?}",
                log()
            );
            std::thread::sleep(Duration::from_millis(500));
        }
        phoenix
    }

    fn endpoint(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Every span Phoenix holds, through its REST API (page by page).
    fn spans(&self) -> Vec<Value> {
        let mut out = Vec::new();
        let mut cursor: Option<String> = None;
        loop {
            let path = match &cursor {
                None => "/v1/projects/default/spans?limit=1000".to_string(),
                Some(c) => format!("/v1/projects/default/spans?limit=1000&cursor={c}"),
            };
            let (status, body) = http_get(&self.addr, &path);
            if status == 404 {
                return out; // no span yet: the project is made by the first one
            }
            assert_eq!(status, 200, "{body}");
            let page: Value = serde_json::from_str(&body).expect("JSON");
            out.extend(page["data"].as_array().expect("data").iter().cloned());
            match page["next_cursor"].as_str() {
                Some(c) => cursor = Some(c.to_string()),
                None => return out,
            }
        }
    }

    /// The spans once `n` have arrived (the batch exporter sends within 5 s).
    fn wait_spans(&self, n: usize) -> Vec<Value> {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let spans = self.spans();
            if spans.len() >= n || Instant::now() > deadline {
                return spans;
            }
            std::thread::sleep(Duration::from_millis(500));
        }
    }
}

impl Drop for Phoenix {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn records(folder: &Path) -> Vec<Value> {
    std::fs::read_to_string(folder.join("dialogues.jsonl"))
        .expect("records")
        .lines()
        .map(|l| serde_json::from_str(l).expect("a record"))
        .collect()
}

/// The calls of a record: every turn's and the closing ones.
fn calls(record: &Value) -> Vec<&Value> {
    let turns = record["turns"].as_array().expect("turns");
    turns
        .iter()
        .flat_map(|t| t["calls"].as_array().expect("calls"))
        .chain(record["closing_calls"].as_array().into_iter().flatten())
        .collect()
}

fn attr<'a>(span: &'a Value, key: &str) -> &'a Value {
    &span["attributes"][key]
}

/// How many spans the records make: a dialogue, its turns (one more when the customer closed
/// it), its calls.
fn expected_spans(records: &[Value]) -> usize {
    records
        .iter()
        .map(|r| {
            let closing = r["closing_calls"].as_array().is_some_and(|c| !c.is_empty());
            1 + r["turns"].as_array().unwrap().len() + usize::from(closing) + calls(r).len()
        })
        .sum()
}

/// Checks that each record is one trace in `spans`, as the module's doc says.
fn check_traces(spans: &[Value], records: &[Value]) {
    let by_id: BTreeMap<&str, &Value> = spans
        .iter()
        .map(|s| (s["context"]["span_id"].as_str().expect("span id"), s))
        .collect();
    let parent = |s: &Value| s["parent_id"].as_str().and_then(|p| by_id.get(p).copied());
    let mut traces = BTreeSet::new();
    for record in records {
        let id = record["job"]["dialogue_id"].as_str().expect("id");
        let roots: Vec<&Value> = spans
            .iter()
            .filter(|s| s["parent_id"].is_null() && attr(s, "sage.dialogue_id") == id)
            .collect();
        assert_eq!(roots.len(), 1, "{id}: one dialogue span");
        let root = roots[0];
        assert_eq!(root["span_kind"], "CHAIN");
        assert_eq!(attr(root, "sage.scenario"), &record["job"]["scenario"]);
        let trace = root["context"]["trace_id"].as_str().expect("trace");
        assert!(traces.insert(trace), "two dialogues share trace {trace}");
        let in_trace: Vec<&Value> = spans
            .iter()
            .filter(|s| s["context"]["trace_id"] == trace)
            .collect();
        // Turns: children of the dialogue span, one per turn of the record.
        let turns: Vec<&Value> = in_trace
            .iter()
            .copied()
            .filter(|s| s["name"].as_str().is_some_and(|n| n.starts_with("turn ")))
            .collect();
        for t in &turns {
            assert_eq!(parent(t).map(|p| &p["context"]), Some(&root["context"]));
        }
        let numbers: BTreeSet<i64> = turns
            .iter()
            .map(|t| attr(t, "sage.turn").as_i64().expect("turn"))
            .collect();
        for t in record["turns"].as_array().unwrap() {
            assert!(
                numbers.contains(&t["turn"].as_i64().unwrap()),
                "{id}: turn {t}"
            );
        }
        // Model calls: each under a turn, as many as the record's, with its tokens.
        let chats: Vec<&Value> = in_trace
            .iter()
            .copied()
            .filter(|s| s["span_kind"] == "LLM")
            .collect();
        let recorded = calls(record);
        assert_eq!(chats.len(), recorded.len(), "{id}: one span per call");
        for c in &chats {
            let p = parent(c).expect("a parent");
            assert!(p["name"].as_str().unwrap().starts_with("turn "), "{c}");
            assert_eq!(attr(c, "gen_ai.operation.name"), "chat");
            let model = attr(c, "gen_ai.request.model").as_str().expect("model");
            assert_eq!(c["name"], format!("chat {model}"));
            assert!(attr(c, "gen_ai.provider.name").is_string());
            assert_eq!(attr(c, "sage.dialogue_id"), id);
            // A trace rebuilt from its record (kept for an error) knows no role.
            if attr(root, "sage.kept").is_null() {
                let role = attr(c, "sage.role").as_str().unwrap_or_default();
                assert!(["user", "service", "judge"].contains(&role), "{c}");
            }
        }
        for (span_key, record_key) in [
            ("gen_ai.usage.input_tokens", "input_tokens"),
            ("gen_ai.usage.output_tokens", "output_tokens"),
        ] {
            let in_spans: i64 = chats
                .iter()
                .map(|c| attr(c, span_key).as_i64().unwrap_or(0))
                .sum();
            let in_record: i64 = recorded
                .iter()
                .map(|c| c["usage"][record_key].as_i64().unwrap())
                .sum();
            assert_eq!(in_spans, in_record, "{id}: {span_key}");
            assert_eq!(attr(root, span_key), &record["usage"][record_key], "{id}");
        }
    }
}

fn config(dir: &Path, model: &str, dialogues: usize) -> String {
    let file = dir.join("run.yaml");
    std::fs::write(
        &file,
        format!(
            "service_models: [{model}]\nscenarios: [scenarios/telecom_package.yaml]\n\
             dialogues_per_scenario: {dialogues}\nmin_per_route: 0\nmax_turns: 4\n"
        ),
    )
    .expect("config");
    file.display().to_string()
}

/// `sage run --config CONFIG` as `run_id` under `dir/embedded`, exporting to `phoenix` at
/// `rate` (over OTLP/HTTP, or gRPC when `grpc`): the run's records.
fn traced_run(
    dir: &Path,
    phoenix: &Phoenix,
    config: &str,
    (run_id, rate): (&str, &str),
    grpc: bool,
    extra: &[&str],
) -> Vec<Value> {
    let out = dir.join("embedded");
    let out_arg = out.display().to_string();
    let (endpoint, protocol) = if grpc {
        (format!("http://127.0.0.1:{}", phoenix.grpc_port), "grpc")
    } else {
        (phoenix.endpoint(), "http/protobuf")
    };
    let mut args = vec![
        "run",
        "--config",
        config,
        "--out",
        &out_arg,
        "--run-id",
        run_id,
        "--quiet",
        "--otlp-endpoint",
        &endpoint,
        "--otlp-protocol",
        protocol,
        "--trace-sample-rate",
        rate,
    ];
    args.extend_from_slice(extra);
    sage_ok(&args);
    records(&out.join(run_id))
}

#[test]
fn an_embedded_run_and_a_sweep_are_one_trace_per_dialogue_in_phoenix() {
    let phoenix = Phoenix::start();
    let dir = common::cluster::test_dir();
    let config = config(dir.path(), "sim-strong", 3);
    let embedded = traced_run(dir.path(), &phoenix, &config, ("traced", "1"), false, &[]);
    let n = expected_spans(&embedded);
    let spans = phoenix.wait_spans(n);
    assert_eq!(spans.len(), n, "every span of the run, once");
    check_traces(&spans, &embedded);
    // Without --trace-content no message leaves the process.
    assert!(
        spans
            .iter()
            .all(|s| attr(s, "gen_ai.input.messages").is_null()
                && attr(s, "llm.input_messages.0.message.content").is_null())
    );
    look_in_the_browser(&phoenix, &spans, &embedded[0]);

    // A sweep: the dialogues are played by a worker process, stored by an aggregator.
    let nats = Nats::start(dir.path());
    let url = nats.url();
    let results = dir.path().join("results");
    let common = ["--nats", url.as_str(), "--metrics-addr", "127.0.0.1:0"];
    let endpoint = phoenix.endpoint();
    let mut worker = vec![
        "worker",
        "--otlp-endpoint",
        &endpoint,
        "--trace-sample-rate",
        "1",
    ];
    worker.extend(common);
    let _worker = Sage::spawn(dir.path(), "worker", &worker);
    let _aggregator = Sage::aggregator(dir.path(), &results, &common);
    sage_ok(&[
        "sweep", "--nats", &url, "--config", &config, "--run-id", "swept", "--follow",
    ]);
    wait_status(&url, "swept", Duration::from_secs(30), |s| {
        s["state"] == "complete"
    });
    let swept = records(&results.join("swept"));
    let spans = phoenix.wait_spans(n + expected_spans(&swept));
    let swept_spans: Vec<Value> = spans
        .iter()
        .filter(|s| !embedded_trace(&spans, s, &embedded))
        .cloned()
        .collect();
    assert_eq!(swept_spans.len(), expected_spans(&swept));
    check_traces(&swept_spans, &swept);
}

/// What a person sees of the first dialogue in Phoenix's own page (headless Chromium): the
/// dialogue span, its turns and its model calls in the trace tree.
fn look_in_the_browser(phoenix: &Phoenix, spans: &[Value], record: &Value) {
    let id = record["job"]["dialogue_id"].as_str().expect("id");
    let trace = spans
        .iter()
        .find(|s| s["parent_id"].is_null() && attr(s, "sage.dialogue_id") == id)
        .and_then(|s| s["context"]["trace_id"].as_str())
        .expect("the dialogue's trace");
    let (_, projects) = http_get(&phoenix.addr, "/v1/projects");
    let projects: Value = serde_json::from_str(&projects).expect("projects");
    let project = projects["data"][0]["id"].as_str().expect("a project id");
    let browser = Browser::launch();
    let url = format!("{}/projects/{project}/traces/{trace}", phoenix.endpoint());
    let tab = browser.open(&url, true).expect("open Phoenix");
    tab.wait_for(
        "document.body.innerText.includes('chat sim-judge-1')",
        Duration::from_secs(30),
    )
    .expect("the trace tree");
    let text = tab.eval("document.body.innerText").expect("text");
    let text = text.as_str().expect("text");
    let scenario = record["job"]["scenario"].as_str().unwrap();
    for shown in [
        format!("dialogue {scenario}"),
        "turn 1".to_string(),
        "chat sim-user".to_string(),
        "chat sim-strong".to_string(),
    ] {
        assert!(
            text.contains(&shown),
            "Phoenix's page does not show {shown}"
        );
    }
    tab.screenshot(&screenshot_dir().join("phoenix-dialogue.png"), None)
        .expect("screenshot");
}

/// Whether span `s` is in the trace of one of the `embedded` run's dialogues.
fn embedded_trace(spans: &[Value], s: &Value, embedded: &[Value]) -> bool {
    let ids: BTreeSet<&str> = embedded
        .iter()
        .map(|r| r["job"]["run_id"].as_str().unwrap())
        .collect();
    spans.iter().any(|root| {
        root["parent_id"].is_null()
            && root["context"]["trace_id"] == s["context"]["trace_id"]
            && attr(root, "sage.run_id")
                .as_str()
                .is_some_and(|r| ids.contains(r))
    })
}

/// At half the dialogues, those whose ids the rate names are traced live; of the others, those
/// with a format or an infrastructure error are traced all the same, rebuilt from their records
/// (`sage.kept: error`); no other dialogue sends a span.
#[test]
fn sampling_keeps_the_dialogues_their_ids_name_and_every_errored_one() {
    let phoenix = Phoenix::start();
    let dir = common::cluster::test_dir();
    let config = config(dir.path(), "sim-weak", 16);
    let all = traced_run(
        dir.path(),
        &phoenix,
        &config,
        ("sampled", "0.5"),
        false,
        &[],
    );
    let id = |r: &Value| r["job"]["dialogue_id"].as_str().unwrap().to_string();
    let errored = |r: &Value| {
        let record: sage::protocol::DialogueRecord =
            serde_json::from_value(r.clone()).expect("a record");
        sage::telemetry::genai::errored(&record)
    };
    let live = |r: &Value| sage::telemetry::trace::sampled(&id(r), 0.5);
    let kept: Vec<Value> = all
        .iter()
        .filter(|r| live(r) || errored(r))
        .cloned()
        .collect();
    let rebuilt: BTreeSet<String> = all
        .iter()
        .filter(|r| !live(r) && errored(r))
        .map(id)
        .collect();
    assert!(
        kept.len() < all.len(),
        "some dialogue is left out: {} of {}",
        kept.len(),
        all.len()
    );
    assert!(
        !rebuilt.is_empty(),
        "some errored dialogue is not sampled (the case tested)"
    );
    let n = expected_spans(&kept);
    let spans = phoenix.wait_spans(n);
    // Nothing more arrives after the expected spans.
    std::thread::sleep(Duration::from_secs(6));
    let spans = if spans.len() == n {
        phoenix.spans()
    } else {
        spans
    };
    assert_eq!(
        spans.len(),
        n,
        "the sampled and the errored dialogues' spans, and no other"
    );
    check_traces(&spans, &kept);
    let kept_for_error: BTreeSet<String> = spans
        .iter()
        .filter(|s| attr(s, "sage.kept") == "error")
        .map(|s| attr(s, "sage.dialogue_id").as_str().unwrap().to_string())
        .collect();
    assert_eq!(kept_for_error, rebuilt);
}

/// The same trace over OTLP/gRPC (`--otlp-protocol grpc`, Phoenix's gRPC port).
#[test]
fn a_run_exported_over_grpc_is_one_trace_per_dialogue() {
    let phoenix = Phoenix::start();
    let dir = common::cluster::test_dir();
    let config = config(dir.path(), "sim-strong", 2);
    let records = traced_run(dir.path(), &phoenix, &config, ("grpc", "1"), true, &[]);
    let n = expected_spans(&records);
    let spans = phoenix.wait_spans(n);
    assert_eq!(spans.len(), n, "every span of the run, once, over gRPC");
    check_traces(&spans, &records);
}

/// A real model backend (an OpenAI-compatible mock that refuses the first call with HTTP 429):
/// the agent's call span says `openai`, carries the refusal as a `gen_ai.rate_limited` event,
/// its two attempts and its prompt-cache reads, and, with `--trace-content`, the messages sent
/// and the answer.
#[test]
fn a_model_calls_span_shows_its_429_and_with_trace_content_its_messages() {
    use wiremock::matchers::{method, path};
    use wiremock::{Mock, MockServer, ResponseTemplate};
    let phoenix = Phoenix::start();
    let dir = common::cluster::test_dir();
    let runtime = common::mock::runtime();
    let server = runtime.block_on(async {
        let server = MockServer::start().await;
        let chat = || Mock::given(method("POST")).and(path("/v1/chat/completions"));
        chat()
            .respond_with(ResponseTemplate::new(429).insert_header("retry-after", "0"))
            .up_to_n_times(1)
            .with_priority(1)
            .mount(&server)
            .await;
        // 100 prompt tokens, 60 of them read from the provider's prompt cache.
        let answer = ResponseTemplate::new(200).set_body_json(serde_json::json!({
            "id": "x", "object": "chat.completion", "model": "mock-model",
            "choices": [{"index": 0, "finish_reason": "stop",
                "message": {"role": "assistant", "content": common::mock::AGENT_ANSWER}}],
            "usage": {"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120,
                "prompt_tokens_details": {"cached_tokens": 60}}
        }));
        chat()
            .respond_with(answer)
            .with_priority(2)
            .mount(&server)
            .await;
        server
    });
    let config = dir.path().join("run.yaml");
    std::fs::write(
        &config,
        format!(
            "models:\n  - {{name: agent, provider: openai, base_url: '{}/v1', model: mock-model, \
             retries: {{max_attempts: 3, base_delay_ms: 10, max_delay_ms: 50}}}}\n  \
             - {{name: user, provider: simulated, sim: {{kind: user}}}}\n  \
             - {{name: judge, provider: simulated, sim: {{kind: judge}}}}\n\
             service_models: [agent]\nuser_model: user\njudge_models: [judge]\nscenarios: [scenarios/telecom_package.yaml]\n\
             dialogues_per_scenario: 1\nmin_per_route: 0\nmax_turns: 1\n",
            server.uri()
        ),
    )
    .expect("config");
    let config = config.display().to_string();
    let records = traced_run(
        dir.path(),
        &phoenix,
        &config,
        ("real", "1"),
        false,
        &["--trace-content"],
    );
    let spans = phoenix.wait_spans(expected_spans(&records));
    check_traces(&spans, &records);
    let agent: Vec<&Value> = spans
        .iter()
        .filter(|s| attr(s, "gen_ai.request.model") == "mock-model")
        .collect();
    assert_eq!(agent.len(), 1, "one agent call");
    let call = agent[0];
    assert_eq!(call["name"], "chat mock-model");
    assert_eq!(attr(call, "gen_ai.provider.name"), "openai");
    assert_eq!(attr(call, "sage.attempts"), 2);
    assert_eq!(attr(call, "sage.refused"), 1);
    assert_eq!(attr(call, "gen_ai.usage.input_tokens"), 100);
    assert_eq!(attr(call, "gen_ai.usage.cache_read.input_tokens"), 60);
    let events: Vec<&str> = call["events"]
        .as_array()
        .expect("events")
        .iter()
        .map(|e| e["name"].as_str().unwrap_or_default())
        .collect();
    assert_eq!(events, ["gen_ai.rate_limited"], "{call}");
    let sent = attr(call, "gen_ai.input.messages")
        .as_str()
        .expect("the messages sent");
    assert!(
        sent.contains("\"role\":\"system\"") && sent.contains("ChangeOrder"),
        "{sent}"
    );
    let answer = attr(call, "gen_ai.output.messages")
        .as_str()
        .expect("the answer");
    assert!(
        answer.contains("I will change your package right away."),
        "{answer}"
    );
    drop(server);
}

/// Checks that each tau2 record of run `run` is one trace in `spans`: its conversation span the
/// root, each of its model calls a `chat MODEL` span below it (directly, or under the role span
/// of the worker that answered it), with the record's input tokens.
fn check_simulation_traces(spans: &[Value], records: &[Value], run: &str) {
    let by_id: BTreeMap<&str, &Value> = spans
        .iter()
        .map(|s| (s["context"]["span_id"].as_str().expect("span id"), s))
        .collect();
    let mut traces = BTreeSet::new();
    for record in records {
        let id = record["job"]["dialogue_id"].as_str().expect("id");
        let roots: Vec<&Value> = spans
            .iter()
            .filter(|s| {
                s["parent_id"].is_null()
                    && attr(s, "sage.dialogue_id") == id
                    && attr(s, "sage.run_id") == run
            })
            .collect();
        assert_eq!(roots.len(), 1, "{run} {id}: one conversation span");
        let root = roots[0];
        assert_eq!(root["name"], format!("tau2-retail {id}"));
        assert_eq!(root["span_kind"], "CHAIN");
        assert_eq!(attr(root, "sage.suite"), "tau2-retail");
        assert_eq!(attr(root, "sage.model"), "careful");
        let trace = root["context"]["trace_id"].as_str().expect("trace");
        assert!(traces.insert(trace), "two simulations share trace {trace}");
        let chats: Vec<&Value> = spans
            .iter()
            .filter(|s| s["context"]["trace_id"] == trace && s["span_kind"] == "LLM")
            .collect();
        let calls = record["calls"].as_array().expect("calls");
        assert_eq!(chats.len(), calls.len(), "{run} {id}: one span per call");
        for c in &chats {
            let model = attr(c, "gen_ai.request.model").as_str().expect("model");
            assert_eq!(c["name"], format!("chat {model}"));
            // Up the parents to the root, within the trace.
            let mut at = *c;
            while let Some(parent) = at["parent_id"].as_str() {
                at = by_id
                    .get(parent)
                    .unwrap_or_else(|| panic!("{c}: parent {parent} missing"));
            }
            assert_eq!(at["context"], root["context"], "{c}");
        }
        let tokens = |values: &mut dyn Iterator<Item = &Value>| -> i64 {
            values.map(|v| v.as_i64().unwrap_or(0)).sum()
        };
        assert_eq!(
            tokens(&mut chats.iter().map(|c| attr(c, "gen_ai.usage.input_tokens"))),
            tokens(&mut calls.iter().map(|c| &c["usage"]["input_tokens"])),
            "{run} {id}: input tokens"
        );
    }
}

/// The tau2 records of a results folder.
fn tau2_records(folder: &Path) -> Vec<Value> {
    std::fs::read_to_string(folder.join("tau2.jsonl"))
        .expect("records")
        .lines()
        .map(|l| serde_json::from_str(l).expect("a record"))
        .collect()
}

/// How many model calls the records hold.
fn tau2_calls(records: &[Value]) -> usize {
    records
        .iter()
        .map(|r| r["calls"].as_array().expect("calls").len())
        .sum()
}

/// The spans of kind LLM among `spans`.
fn llm_spans(spans: &[Value]) -> usize {
    spans.iter().filter(|s| s["span_kind"] == "LLM").count()
}

/// A run of a suite on the one lifecycle (tau2 retail) exported to Phoenix, embedded and then
/// swept through two workers (the agents on one, the user simulator and the judge on the other,
/// every call through the broker): each simulation is one trace rooted at its conversation span
/// (`tau2-retail ID`), every model call of its record a `chat {model}` span below it, with the
/// record's tokens.
#[test]
fn a_tau2_run_is_one_trace_per_simulation() {
    let phoenix = Phoenix::start();
    let dir = common::cluster::test_dir();
    let config = dir.path().join("tau2.yaml");
    std::fs::write(
        &config,
        "models:\n  - {name: careful, provider: simulated, sim: {kind: tau2_agent, wrong_argument: 0.0, skip: 0.0}}\n  - {name: user, provider: simulated, sim: {kind: tau2_customer}}\n  - {name: judge, provider: simulated, sim: {kind: tau2_judge}}\nagents: [careful]\ncustomer_model: user\njudge_models: [judge]\ntasks: [\"0\", \"1\", \"2\"]\nrepeats: 1\n",
    )
    .expect("config");
    let config = config.to_str().expect("path");
    let out = dir.path().join("out");
    let endpoint = phoenix.endpoint();
    sage_ok(&[
        "run",
        "--suite",
        "tau2-retail",
        "--config",
        config,
        "--out",
        out.to_str().expect("path"),
        "--run-id",
        "tau2",
        "--quiet",
        "--otlp-endpoint",
        &endpoint,
        "--trace-sample-rate",
        "1",
    ]);
    let embedded = tau2_records(&out.join("tau2"));
    assert_eq!(embedded.len(), 3);
    let expected: usize = embedded.len() + tau2_calls(&embedded);
    let spans = phoenix.wait_spans(expected);
    assert_eq!(
        spans.len(),
        expected,
        "one span per simulation and per call"
    );
    check_simulation_traces(&spans, &embedded, "tau2");

    // Swept: the driver plays the simulations and calls the agent; the other worker answers
    // the user simulator's and the judge's calls, each under a role span of its own.
    let nats = Nats::start(dir.path());
    let url = nats.url();
    let results = dir.path().join("results");
    let common = ["--nats", url.as_str(), "--metrics-addr", "127.0.0.1:0"];
    let tracing = [
        "--otlp-endpoint",
        endpoint.as_str(),
        "--trace-sample-rate",
        "1",
    ];
    let traced = [&common[..], &tracing[..]].concat();
    let _workers = Sage::split_workers(dir.path(), &traced, &[]);
    let _aggregator = Sage::aggregator(dir.path(), &results, &common);
    sage_ok(&[
        "sweep",
        "--suite",
        "tau2-retail",
        "--nats",
        &url,
        "--config",
        config,
        "--run-id",
        "tau2-swept",
    ]);
    wait_status(&url, "tau2-swept", Duration::from_secs(60), |s| {
        s["state"] == "complete"
    });
    let swept = tau2_records(&results.join("tau2-swept"));
    let want = tau2_calls(&embedded) + tau2_calls(&swept);
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut spans = phoenix.spans();
    while llm_spans(&spans) < want && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(500));
        spans = phoenix.spans();
    }
    check_simulation_traces(&spans, &swept, "tau2-swept");
}
