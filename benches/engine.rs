//! Benchmarks of the dialogue engine (method and numbers in docs/benchmarks.md):
//!
//! * `harness`: CPU microseconds per turn with zero-latency simulated models (the five model
//!   calls of a turn, parsing, rule engine, scoring, record writing, and the run's summary
//!   folded as each record is written). Goal <= 50 us.
//! * `concurrency`: 10,000 dialogues in flight with simulated models answering in 1 s. Goal:
//!   turn throughput >= 95% of the ideal (dialogues in flight / the 3 s of sequential calls in a
//!   turn: user, agent, then the three judges at once), peak RSS <= 1 GiB.
//! * `http`: 1,000 dialogues in flight against mock OpenAI-compatible servers answering in 1 s.
//!   Goal >= 90% of the ideal.
//!
//! `cargo bench --bench engine -- harness` runs one; with no argument, all three.

#[path = "../tests/common/mod.rs"]
mod common;

// The same allocator as the `sage` binary.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

use sage::actors::runner::run_embedded;
use sage::llm::sim::Latency;
use sage::llm::{ModelConfig, Provider};
use sage::plan::{self, RunConfig};
use sage::sop::Sop;
use sage::store::RunDir;
use std::sync::Arc;
use std::time::Instant;

fn bundled() -> Vec<Arc<Sop>> {
    common::SCENARIOS
        .iter()
        .map(|id| Arc::new(common::load(id)))
        .collect()
}

/// What a benchmark run measured.
struct Measured {
    turns: usize,
    wall: f64,
    cpu_us: u64,
    /// Dialogues finished per second while the pipeline is full: between the first
    /// `concurrency` finished and the last `concurrency` started (steady state).
    steady_dialogues_per_s: f64,
}

/// Runs a configuration embedded, sampling progress every 20 ms.
fn run(config: &RunConfig, sops: &[Arc<Sop>]) -> Measured {
    let dir = tempfile::tempdir().unwrap();
    let run = RunDir::create(dir.path(), "bench").unwrap();
    let jobs = plan::jobs(config, "bench", sops);
    let total = jobs.len() as u64;
    let progress = indicatif::ProgressBar::hidden();
    let sampler = {
        let p = progress.clone();
        std::thread::spawn(move || {
            let t = Instant::now();
            let mut samples = Vec::new();
            while p.position() < total {
                samples.push((t.elapsed().as_secs_f64(), p.position()));
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
            samples
        })
    };
    let cpu = common::process_cpu_us();
    let t = Instant::now();
    let counts = actix::System::with_tokio_rt(|| {
        tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build()
            .unwrap()
    })
    .block_on(run_embedded(
        config,
        sops,
        &jobs,
        &run,
        Some(progress.clone()),
    ))
    .unwrap()
    .counts;
    let wall = t.elapsed().as_secs_f64();
    let cpu_us = common::process_cpu_us() - cpu;
    progress.set_position(total);
    let samples = sampler.join().unwrap();
    let at = |share: f64| {
        samples
            .iter()
            .find(|(_, n)| *n as f64 >= share * total as f64)
            .copied()
            .unwrap_or((wall, total))
    };
    // Full pipeline: after the first `concurrency` dialogues finished (the first wave), until
    // the last job starts (`concurrency` dialogues before the end).
    let wave = config.concurrency as f64 / total as f64;
    let ((t0, n0), (t1, n1)) = (at(wave), at(1.0 - wave));
    Measured {
        turns: counts.turns,
        wall,
        cpu_us,
        steady_dialogues_per_s: (n1 - n0) as f64 / (t1 - t0).max(1e-9),
    }
}

fn harness() {
    let sops = bundled();
    let config = RunConfig {
        service_models: vec!["sim-balanced".into()],
        dialogues_per_scenario: 200,
        // Every turn judged: the per-turn costs and the ideal turn time count five calls.
        judge_turns: sage::protocol::JudgeTurns::Every,
        ..RunConfig::default()
    };
    // CPU time on a shared machine is noisy: five runs, the best and the median.
    let mut per_turn: Vec<f64> = (0..5)
        .map(|_| {
            let m = run(&config, &sops);
            m.cpu_us as f64 / m.turns as f64
        })
        .collect();
    per_turn.sort_by(f64::total_cmp);
    println!(
        "harness: CPU per turn over 5 runs of {} dialogues: best {:.1} us, median {:.1} us (goal <= 50)",
        plan::jobs(&config, "bench", &sops).len(),
        per_turn[0],
        per_turn[2]
    );
}

/// Dialogues of exactly three turns (the simulated users never leave before turn 4), six
/// times as many as stay in flight, so that the middle of the run is a steady state with
/// `in_flight` dialogues in flight (the first waves of dialogues, started together, blur).
fn fixed_length(in_flight: usize) -> RunConfig {
    RunConfig {
        service_models: vec!["sim-balanced".into()],
        dialogues_per_scenario: 6 * in_flight / 6,
        min_per_route: 0,
        max_turns: 3,
        concurrency: in_flight,
        // Every turn judged: the per-turn costs and the ideal turn time count five calls.
        judge_turns: sage::protocol::JudgeTurns::Every,
        ..RunConfig::default()
    }
}

/// Reports a steady-state measurement against its ideal (`ideal_turn_s`: the sum of the
/// sequential call latencies of one turn).
fn report(name: &str, in_flight: usize, ideal_turn_s: f64, m: &Measured) {
    let ideal = in_flight as f64 / ideal_turn_s;
    let steady = m.steady_dialogues_per_s * 3.0;
    println!(
        "{name}: {in_flight} dialogues in flight: steady {steady:.0} turns/s = {:.1}% of the ideal {ideal:.0}; {} turns in {:.2} s; peak RSS {:.0} MiB; {:.1} us CPU per turn",
        100.0 * steady / ideal,
        m.turns,
        m.wall,
        common::peak_rss_mib(),
        m.cpu_us as f64 / m.turns as f64
    );
}

fn concurrency() {
    let sops = bundled();
    // Latency uniform in 0.8..1.2 s (mean 1 s): a turn's ideal is user 1 s + agent 1 s + the
    // slowest of three judges, E[max of 3] = 0.8 + 0.4 * 3/4 = 1.1 s.
    let mut config = fixed_length(10_000);
    for m in &mut config.models {
        if let Some(sim) = &mut m.sim {
            *sim.latency_mut() = Some(Latency::UniformMs(800, 1200));
        }
        m.max_concurrency = 1 << 20;
    }
    let m = run(&config, &sops);
    report("concurrency", 10_000, 3.1, &m);
}

fn http() {
    use wiremock::matchers::method;
    use wiremock::{Mock, MockServer, ResponseTemplate};
    let sops = vec![Arc::new(common::load("telecom_package"))];
    let completion = |content: &str| {
        ResponseTemplate::new(200)
            .set_body_json(serde_json::json!({
                "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}],
                "usage": {"prompt_tokens": 1000, "completion_tokens": 50}
            }))
            .set_delay(std::time::Duration::from_secs(1))
    };
    let agent = r#"{"classification_output": {"ConsumptionType": "Change", "ApplicationTendency": "Agree", "ConsumptionProfile": "Data", "EmotionTag": "Calm"}, "cot": "c", "now_path": ["step1", "step2", "step4"], "finals": {"Action": "ChangeOrder"}, "chat": "I will change your package."}"#;
    let judge = r#"{"classification": {"ConsumptionType": "Change", "ApplicationTendency": "Agree", "ConsumptionProfile": "Data", "EmotionTag": "Calm"}, "chat_quality_dimensions": {"linguistic_quality": 9, "anthropomorphism_emotion": 6, "content_utility": 9, "user_satisfaction": 9, "instruction_compliance": 9}}"#;
    let rt = tokio::runtime::Runtime::new().unwrap();
    let servers = rt.block_on(async {
        let mut out = Vec::new();
        for content in [agent, "I would like to change my plan.", judge] {
            let s = MockServer::builder()
                .disable_request_recording()
                .start()
                .await;
            Mock::given(method("POST"))
                .respond_with(completion(content))
                .mount(&s)
                .await;
            out.push(s);
        }
        out
    });
    let model = |name: &str, server: &MockServer| ModelConfig {
        base_url: Some(format!("{}/v1", server.uri())),
        max_concurrency: 1 << 20,
        timeout_secs: 30.0,
        ..ModelConfig::new(name, Provider::Openai)
    };
    let config = RunConfig {
        models: vec![
            model("agent", &servers[0]),
            model("user", &servers[1]),
            model("judge-1", &servers[2]),
            model("judge-2", &servers[2]),
            model("judge-3", &servers[2]),
        ],
        service_models: vec!["agent".into()],
        user_model: "user".into(),
        judge_models: vec!["judge-1".into(), "judge-2".into(), "judge-3".into()],
        dialogues_per_scenario: 6000,
        min_per_route: 0,
        max_turns: 3,
        concurrency: 1000,
        // Every turn judged: the per-turn costs and the ideal turn time count five calls.
        judge_turns: sage::protocol::JudgeTurns::Every,
        ..RunConfig::default()
    };
    // Every call answers in 1 s: a turn's ideal is 3 s (user, agent, the judges at once).
    let m = run(&config, &sops);
    report("http (CPU includes the mock servers)", 1000, 3.0, &m);
    drop(servers);
}

fn main() {
    if common::bench_selected("harness") {
        harness();
    }
    if common::bench_selected("concurrency") {
        concurrency();
    }
    if common::bench_selected("http") {
        http();
    }
}
