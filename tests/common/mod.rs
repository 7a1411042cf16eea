//! Test and benchmark helpers shared by tests/ and benches/.
#![allow(dead_code)] // each test binary uses a different part

use std::fmt::Write;
use std::path::{Path, PathBuf};

/// The records of a results folder's dialogues.jsonl, as JSON.
pub fn records_json(dir: &Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(dir.join("dialogues.jsonl"))
        .expect("records")
        .lines()
        .map(|l| serde_json::from_str(l).expect("a record"))
        .collect()
}

/// The ids of the six bundled SAGE scenarios.
pub const SCENARIOS: [&str; 6] = [
    "airline_refund",
    "ecommerce_refund",
    "logistics_delivery",
    "online_education",
    "property_service",
    "telecom_package",
];

/// Runs `sage ARGS` to its end in the repository root.
pub fn sage(args: &[&str]) -> std::process::Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_sage"))
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("sage runs")
}

/// Runs `sage ARGS` to its end in the repository root; its standard output (panics, with its
/// output, on failure).
pub fn sage_ok(args: &[&str]) -> String {
    let out = sage(args);
    assert!(
        out.status.success(),
        "sage {args:?} failed:\n{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The sections of a support-desk report.html, in order (docs/report.md).
pub const DESK_SECTIONS: [&str; 7] = [
    "desk-metrics",
    "desk-run",
    "desk-unsafe",
    "desk-closures",
    "desk-escalation",
    "desk-judges",
    "desk-explorer",
];

/// Whether a benchmark group runs: the groups named on the command line
/// (`cargo bench --bench X -- a b`), or all when none is named.
pub fn bench_selected(name: &str) -> bool {
    let named: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with("--"))
        .collect();
    named.is_empty() || named.iter().any(|n| n == name)
}

/// Loads and compiles a bundled scenario by id.
pub fn load(id: &str) -> sage::sop::Sop {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    sage::sop::load(&root.join(format!("scenarios/{id}.yaml"))).unwrap_or_else(|e| panic!("{e}"))
}

/// A synthetic scenario with `n` enum fields of `k` options each (k >= 5) and one integer
/// variable: k^n combinations of field values (5^24 ≈ 6e16 with the defaults), a small number of
/// routes. A brute-force validator could never finish it; the symbolic one must take milliseconds.
///
/// Shape: a triage stage decides on six fields at once (rules with `otherwise`); then stage
/// `c{i}` branches on field `F{i}`: `o0`/`o1` go on to `c{i+1}`, `o2` accepts, `o3` rejects, and
/// every other option goes to a detour `d{i}` that decides on the next two fields; after the last
/// field, a stage branches on the integer variable.
pub fn wide_scenario(n: usize, k: usize) -> String {
    assert!(n >= 6 && k >= 5);
    let opts: Vec<String> = (0..k).map(|j| format!("o{j}")).collect();
    let mut y = String::from(
        "id: wide\nname: Wide\ndomain: synthetic\ndescription: many fields, few routes\nfields:\n",
    );
    for i in 0..n {
        let _ = writeln!(
            y,
            "  F{i}: {{description: field {i}, options: [{}]}}",
            opts.join(", ")
        );
    }
    y.push_str("variables:\n  V: {description: an amount, type: integer, min: 0, max: 1000, examples: [50, 200, 800]}\n");
    y.push_str("actions:\n  Accept: accept\n  Reject: reject\n  Escalate: escalate\n  Review: review\n  Done: done\n");
    y.push_str("sop:\n  start: triage\n  stages:\n    triage:\n      title: Triage on six fields\n      rules:\n");
    y.push_str("        - {when: {F0: o0, F1: o0, F2: [o0, o1]}, then: {action: Escalate}}\n");
    y.push_str("        - {when: {F0: o0, F1: o0, F2: [o2, o3]}, then: {action: Review}}\n");
    y.push_str(
        "        - {when: {F3: o4, F4: o4, F5: o4, F0: [o1, o2]}, then: {action: Reject}}\n",
    );
    y.push_str("        - {otherwise: c0}\n");
    let rest = opts[3..].join(", ");
    for i in 0..n {
        let next = if i + 1 == n {
            "last".to_string()
        } else {
            format!("c{}", i + 1)
        };
        let _ = writeln!(
            y,
            "    c{i}:\n      title: Field {i}\n      branch_on: F{i}\n      cases:"
        );
        let _ = writeln!(
            y,
            "        o0: {next}\n        o1: {next}\n        o2: {{action: Accept}}\n        o3: {{action: Reject}}"
        );
        for o in &opts[4..] {
            let _ = writeln!(y, "        {o}: d{i}");
        }
        let (a, b) = ((i + 1) % n, (i + 2) % n);
        let _ = writeln!(y, "    d{i}:\n      title: Detour {i}\n      rules:");
        let _ = writeln!(
            y,
            "        - {{when: {{F{a}: [o0, o1], F{b}: o0}}, then: {{action: Escalate}}}}"
        );
        let _ = writeln!(
            y,
            "        - {{when: {{F{a}: [{rest}]}}, then: {{action: Review}}}}"
        );
        let _ = writeln!(y, "        - {{otherwise: {{action: Done}}}}");
    }
    y.push_str("    last:\n      title: Amount\n      branch_on: V\n      cases:\n");
    y.push_str("        \"< 100\": {action: Done}\n        \"100..499\": {action: Review}\n        else: {action: Escalate}\n");
    y
}

/// Writes the bundled Telecom scenario corrected as `dir/NAME.yaml`: a discontent customer's
/// action (a transfer, `TransHuman`) becomes `action`, for `sage rescore --scenario`; its path.
pub fn telecom_discontent(dir: &Path, name: &str, action: &str) -> PathBuf {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let text =
        std::fs::read_to_string(root.join("scenarios/telecom_package.yaml")).expect("scenario");
    let edited = text.replace(
        "Discontent: {action: TransHuman}",
        &format!("Discontent: {{action: {action}}}"),
    );
    assert_ne!(text, edited, "the scenario's line moved");
    let file = dir.join(format!("{name}.yaml"));
    std::fs::write(&file, edited).expect("write");
    file
}

/// Writes a run configuration: the bundled scenarios, two simulated agents, the simulated
/// customer and judges, each call taking `latency` (a YAML latency or `null`).
pub fn write_config(dir: &Path, latency: &str, dialogues: usize, seed: u64) -> String {
    let path = dir.join("run.yaml");
    let text = format!(
        "models:
  - {{name: sim-strong, provider: simulated, sim: {{kind: agent, profile: strong, latency: {latency}}}}}
  - {{name: sim-weak, provider: simulated, sim: {{kind: agent, profile: weak, latency: {latency}}}}}
  - {{name: sim-user, provider: simulated, sim: {{kind: user, latency: {latency}}}}}
  - {{name: sim-judge-1, provider: simulated, sim: {{kind: judge, latency: {latency}}}}}
  - {{name: sim-judge-2, provider: simulated, sim: {{kind: judge, noise: 0.03, latency: {latency}}}}}
  - {{name: sim-judge-3, provider: simulated, sim: {{kind: judge, noise: 0.06, latency: {latency}}}}}
service_models: [sim-strong, sim-weak]
user_model: sim-user
judge_models: [sim-judge-1, sim-judge-2, sim-judge-3]
scenarios: [bundled]
dialogues_per_scenario: {dialogues}
min_per_route: 1
max_turns: 8
seed: {seed}
"
    );
    std::fs::write(&path, text).expect("config");
    path.display().to_string()
}

/// Writes a support-desk configuration: one simulated agent (some unsafe propensity), the
/// simulated customer and two judges, each call taking `latency`, every case once (162
/// conversations).
pub fn write_desk_config(dir: &Path, latency: &str) -> String {
    let path = dir.join("desk.yaml");
    let text = format!(
        "models:
  - {{name: agent, provider: simulated, sim: {{kind: desk_agent, skills: {{unsafe_propensity: 0.2, resolve: 0.9}}, latency: {latency}}}}}
  - {{name: customer, provider: simulated, sim: {{kind: desk_customer, latency: {latency}}}}}
  - {{name: judge-1, provider: simulated, sim: {{kind: desk_judge, latency: {latency}}}}}
  - {{name: judge-2, provider: simulated, sim: {{kind: desk_judge, noise: 0.05, latency: {latency}}}}}
agents: [agent]
customer_model: customer
judge_models: [judge-1, judge-2]
repeats: 1
seed: 5
"
    );
    std::fs::write(&path, text).expect("desk config");
    path.display().to_string()
}

/// CPU time (user + system) of this process so far, in microseconds.
pub fn process_cpu_us() -> u64 {
    // SAFETY: getrusage writes into the zeroed struct we own.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    if unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) } != 0 {
        return 0;
    }
    let tv = |t: libc::timeval| t.tv_sec as u64 * 1_000_000 + t.tv_usec as u64;
    tv(ru.ru_utime) + tv(ru.ru_stime)
}

/// Peak resident memory of this process so far, in MiB.
pub fn peak_rss_mib() -> f64 {
    // SAFETY: as above.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    if unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) } != 0 {
        return 0.0;
    }
    ru.ru_maxrss as f64 / 1024.0
}
pub mod browser;
pub mod cluster;
pub mod mock;
pub mod provider;

/// What one run of the `sage` binary cost.
#[derive(Debug, Clone)]
pub struct Measured {
    /// Wall-clock seconds.
    pub secs: f64,
    /// CPU seconds (user + system).
    pub cpu_secs: f64,
    /// Peak resident memory, MiB.
    pub peak_rss_mib: f64,
    /// Its standard error.
    pub stderr: String,
}

/// Runs `sage ARGS` in the repository root to its end (standard output discarded), and reads
/// its CPU time and peak RSS from `wait4`; panics when it fails. The peak is at least the
/// calling process's own at the time (exec keeps the parent's high-water mark): a caller that
/// read a large file whole before calling sees its own size here.
#[allow(clippy::zombie_processes)] // reaped by wait4, which also gives its peak RSS
pub fn measured_sage(args: &[&str]) -> Measured {
    let err = tempfile::NamedTempFile::new().expect("stderr file");
    let started = std::time::Instant::now();
    let child = std::process::Command::new(env!("CARGO_BIN_EXE_sage"))
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .stdout(std::process::Stdio::null())
        .stderr(err.reopen().expect("stderr"))
        .spawn()
        .expect("sage starts");
    let mut status = 0;
    // SAFETY: wait4 writes into the zeroed struct we own.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::wait4(child.id() as i32, &mut status, 0, &mut usage) };
    let secs = started.elapsed().as_secs_f64();
    let stderr = std::fs::read_to_string(err.path()).unwrap_or_default();
    assert!(
        libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
        "sage {args:?} failed: {stderr}"
    );
    let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    Measured {
        secs,
        cpu_secs: tv(usage.ru_utime) + tv(usage.ru_stime),
        // ru_maxrss is in KiB on Linux.
        peak_rss_mib: usage.ru_maxrss as f64 / 1024.0,
        stderr,
    }
}

/// The peak resident memory of a live process so far (`VmHWM` in /proc), MiB.
pub fn process_peak_rss_mib(pid: u32) -> f64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.split_whitespace().next()?.parse::<f64>().ok())
        .unwrap_or(0.0)
        / 1024.0
}

/// An empty folder `name` under cargo's temporary folder for integration tests (for runs
/// made once per test binary and kept in a static: a static is never dropped, so a TempDir there
/// would be left behind in /tmp).
pub fn fresh_dir(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("dir");
    dir
}

/// Names of models under test as a sweep of real ones would call them (a `/` of a provider's
/// id written `--`: a model's name is a results path part): the first 27, then more.
pub const SWEEP_MODELS: [&str; 60] = [
    "gpt-4o-2024-08-06",
    "gpt-4o-mini-2024-07-18",
    "claude-3-5-sonnet-20241022",
    "claude-3-5-haiku-20241022",
    "meta-llama--Llama-3.3-70B-Instruct-Turbo",
    "meta-llama--Meta-Llama-3.1-8B-Instruct",
    "Qwen--Qwen2.5-72B-Instruct",
    "Qwen--Qwen2.5-7B-Instruct",
    "deepseek-ai--DeepSeek-V3",
    "deepseek-ai--DeepSeek-R1-Distill-Llama-70B",
    "gemini-1.5-pro-002",
    "gemini-2.0-flash-001",
    "mistralai--Mistral-Large-Instruct-2411",
    "mistralai--Mistral-Small-24B-Instruct-2501",
    "o1-mini-2024-09-12",
    "o3-mini-2025-01-31",
    "gpt-4.1-2025-04-14",
    "gpt-4.1-nano-2025-04-14",
    "claude-3-7-sonnet-20250219",
    "google--gemma-2-27b-it",
    "google--gemma-3-12b-it",
    "microsoft--phi-4",
    "01-ai--Yi-1.5-34B-Chat",
    "CohereForAI--c4ai-command-r-plus-08-2024",
    "nvidia--Llama-3.1-Nemotron-70B-Instruct-HF",
    "ibm-granite--granite-3.1-8b-instruct",
    "internlm--internlm2_5-20b-chat",
    "Qwen--Qwen3-32B",
    "THUDM--glm-4-9b-chat",
    "baichuan-inc--Baichuan2-13B-Chat",
    "moonshotai--Kimi-K2-Instruct",
    "MiniMaxAI--MiniMax-Text-01",
    "mistralai--Mixtral-8x22B-Instruct-v0.1",
    "meta-llama--Llama-4-Maverick-17B-128E-Instruct",
    "grok-2-1212",
    "ai21labs--AI21-Jamba-1.5-Large",
    "allenai--OLMo-2-1124-13B-Instruct",
    "tiiuae--falcon-180B-chat",
    "Qwen--QwQ-32B",
    "deepseek-ai--DeepSeek-R1",
    "gpt-4.5-preview-2025-02-27",
    "claude-3-opus-20240229",
    "gemini-2.5-pro-preview-03-25",
    "mistralai--Ministral-8B-Instruct-2410",
    "meta-llama--Llama-3.2-3B-Instruct",
    "google--gemma-3-27b-it",
    "microsoft--Phi-3.5-mini-instruct",
    "nvidia--Llama-3.3-Nemotron-Super-49B-v1",
    "Qwen--Qwen2.5-Coder-32B-Instruct",
    "HuggingFaceTB--SmolLM2-1.7B-Instruct",
    "01-ai--Yi-Lightning",
    "CohereForAI--aya-expanse-32b",
    "upstage--solar-pro-preview-instruct",
    "Snowflake--snowflake-arctic-instruct",
    "databricks--dbrx-instruct",
    "amazon-nova-pro-v1",
    "reka-core-20240501",
    "ibm-granite--granite-3.3-8b-instruct",
    "LGAI-EXAONE--EXAONE-3.5-32B-Instruct",
    "stepfun-ai--Step-2-16k",
];

/// A sweep's run configuration: the first `models` of [`SWEEP_MODELS`] as simulated agents,
/// each a little weaker than the one before (classification, action, format errors), the
/// simulated customer and `judges` judges (1 or 3), on `scenarios` (paths).
#[derive(Debug, Clone)]
pub struct Sweep<'a> {
    /// Models under test.
    pub models: usize,
    /// Scenario files.
    pub scenarios: &'a [&'a str],
    /// Cases per scenario.
    pub cases: usize,
    /// Cases per route at least.
    pub min_per_route: usize,
    /// Most turns.
    pub max_turns: u32,
    /// Judges (1 or 3).
    pub judges: usize,
    /// The run seed.
    pub seed: u64,
}

impl Sweep<'_> {
    /// Writes the configuration into `dir` (`sweep-MODELS-SEED.yaml`): its path.
    pub fn write(&self, dir: &Path) -> PathBuf {
        let n = self.models;
        let mut text = String::from("models:\n");
        let names = &SWEEP_MODELS[..n];
        for (i, name) in names.iter().enumerate() {
            let f = i as f64 / (n.max(2) - 1) as f64;
            text.push_str(&format!(
                "  - {{name: {name}, provider: simulated, sim: {{kind: agent, profile: balanced, skills: {{classification_accuracy: {:.3}, action_derivation: {:.3}, format_error_rate: {:.3}}}}}}}\n",
                0.97 - 0.35 * f,
                0.95 - 0.40 * f,
                0.01 + 0.08 * f
            ));
        }
        text.push_str("  - {name: sim-user, provider: simulated, sim: {kind: user}}\n");
        let judges: Vec<String> = (1..=self.judges)
            .map(|j| format!("sim-judge-{j}"))
            .collect();
        for (j, name) in judges.iter().enumerate() {
            text.push_str(&format!(
                "  - {{name: {name}, provider: simulated, sim: {{kind: judge, noise: {:.2}}}}}\n",
                0.03 * j as f64
            ));
        }
        let scenarios: Vec<String> = self.scenarios.iter().map(|s| format!("'{s}'")).collect();
        text.push_str(&format!(
            "service_models: [{}]
user_model: sim-user
judge_models: [{}]
scenarios: [{}]
dialogues_per_scenario: {}
min_per_route: {}
max_turns: {}
seed: {}
",
            names.join(", "),
            judges.join(", "),
            scenarios.join(", "),
            self.cases,
            self.min_per_route,
            self.max_turns,
            self.seed
        ));
        let path = dir.join(format!("sweep-{n}-{}.yaml", self.seed));
        std::fs::write(&path, text).expect("config");
        path
    }
}

/// The path of a bundled scenario (`scenarios/ID.yaml`).
pub fn scenario_path(id: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join(format!("scenarios/{id}.yaml"))
        .display()
        .to_string()
}

/// Runs `sage run --config CONFIG --out OUT --run-id ID --quiet` (it must succeed): the run's
/// folder.
pub fn run_config(config: &Path, out: &Path, run_id: &str) -> PathBuf {
    sage_ok(&[
        "run",
        "--config",
        config.to_str().expect("utf-8"),
        "--run-id",
        run_id,
        "--out",
        out.to_str().expect("utf-8"),
        "--quiet",
    ]);
    out.join(run_id)
}

/// The model names of a summary.json ranked as the leaderboard must: by OA, best first, ties
/// by name, models without an OA last.
pub fn ranked(summary: &serde_json::Value) -> Vec<String> {
    let mut list: Vec<(String, f64)> = summary["models"]
        .as_array()
        .expect("models")
        .iter()
        .map(|m| {
            (
                m["model"].as_str().expect("name").to_string(),
                m["all"]["overall"]["mean"]
                    .as_f64()
                    .unwrap_or(f64::NEG_INFINITY),
            )
        })
        .collect();
    list.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    list.into_iter().map(|(m, _)| m).collect()
}
