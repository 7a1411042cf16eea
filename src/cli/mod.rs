//! The command line: parses arguments, wires the layers, prints. No logic of its own.

mod cluster;
mod fork;
mod judges;
mod models;
mod rejudge;
mod report;
mod rescore;
mod run;
mod scenario;
mod suite;

use clap::{Args, Parser, Subcommand};
use sage_ports::telemetry::trace::{self, LogFormat};
use sage_report::transcript::terminal_safe;
use std::process::ExitCode;

/// SAGE-RS: graph-guided evaluation of LLM customer-service agents against their SOPs.
#[derive(Debug, Parser)]
#[command(name = "sage", version, about)]
pub struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Validate, inspect and route scenarios (SOP decision graphs).
    #[command(subcommand)]
    Scenario(scenario::ScenarioCommand),
    /// Run dialogues and score them (embedded; with no arguments: the bundled scenarios against
    /// the bundled simulated models).
    Run(run::RunArgs),
    /// Rebuild summary.json and leaderboard.md of a results folder from dialogues.jsonl (for a
    /// support-desk run: desk-summary.json and desk-leaderboard.txt from desk.jsonl).
    Report {
        /// The results folder (results/<run-id>).
        dir: std::path::PathBuf,
        /// Compare the run with this baseline run's results folder (same scenarios, any
        /// models): per model first, then per scenario, adversarial level and route, the
        /// difference over the paired dialogues with a paired bootstrap interval and a
        /// Benjamini-Hochberg q-value (groups of fewer than 30 paired cases: exploratory), and
        /// the dialogues that flipped.
        #[arg(long, value_name = "BASELINE_DIR")]
        compare: Option<std::path::PathBuf>,
        /// Write the report as one offline HTML file (with --compare: the comparison, by
        /// default DIR/compare-<baseline run id>.html).
        #[arg(long)]
        html: bool,
        /// Where to write the HTML file (with --compare --format json and no --html: the JSON).
        #[arg(long, value_name = "FILE")]
        out: Option<std::path::PathBuf>,
        /// With --compare: `text` (the default) or `json`, one document on standard output
        /// (schema in docs/report.md) for scripts and CI.
        #[arg(long, value_enum, default_value_t = report::CompareFormat::Text, requires = "compare")]
        format: report::CompareFormat,
        /// With --compare: exit with code 3 when some group is a regression (after printing).
        #[arg(long, requires = "compare")]
        fail_on_regression: bool,
        /// With --compare: compare runs although a scenario they share has another text in each
        /// (their scores come from different SOPs, e.g. one was rescored against a corrected
        /// scenario); refused without it.
        #[arg(long, requires = "compare")]
        allow_scenario_change: bool,
        /// With --compare: draw verdicts although the runs' customer simulators differ (user
        /// model, its parameters, prompt or version); without it every group is exploratory.
        #[arg(long, requires = "compare")]
        allow_simulator_change: bool,
        /// Leave out of the summary, the leaderboard and the HTML report every dialogue in
        /// which the customer went off-case (a line asserting what its case does not hold:
        /// the agent's failures there may be the simulator's); summary.json's
        /// `off_case_excluded` and the leaderboard say how many. Run `sage report DIR` again
        /// without it to count them back.
        #[arg(long, conflicts_with = "compare")]
        exclude_off_case: bool,
    },
    /// Grade a run's stored dialogues again with no model call: references from its scenarios
    /// (or corrected ones, --scenario), the stored verdicts reused, the paper's scores
    /// recomputed, into a new results folder; lists the dialogues graded differently.
    Rescore(rescore::RescoreArgs),
    /// Judge a run's stored dialogues again with a new judge panel (JUDGES.yaml): only judge
    /// calls, on the judged turns, resumable and held to a budget, into a new results folder
    /// (then `sage report NEW --compare DIR` shows what the new judges change).
    Rejudge(rejudge::RejudgeArgs),
    /// Ask a run's stored dialogues again at some of their turns: each context as stored, the
    /// models named answering it K times each, every reply scored against the stored turn's
    /// reference (preference pairs the rule engine verified); with --continue each branch plays
    /// on, and --at deviation tells whether fixing one turn flips a failed dialogue.
    Fork(fork::ForkArgs),
    /// Check a run's judges against people: `calibrate` reads people's labels of judged turns.
    #[command(subcommand)]
    Judges(judges::JudgesCommand),
    /// Print one dialogue's transcript: per turn the customer, the agent's reply, its
    /// classification, path and action beside the reference (`!=` where they differ), the
    /// judges' votes and the turn's scores.
    Show {
        /// The results folder (results/<run-id>).
        dir: std::path::PathBuf,
        /// The dialogue id (e.g. telecom_package/0007/sim-strong/r0).
        dialogue_id: String,
    },
    /// Serve roles over NATS: pull dialogue jobs and play them, answer role requests
    /// (distributed mode; docs/deployment.md).
    Worker(cluster::WorkerArgs),
    /// Consume dialogue records from NATS into results folders (one per deployment).
    Aggregator(cluster::AggregatorArgs),
    /// Submit a run to NATS (models x scenarios x repeats); prints its id.
    Sweep(cluster::SweepArgs),
    /// Progress of runs submitted to NATS.
    Status(cluster::StatusArgs),
    /// Remove a complete run from the NATS runs bucket (its results folder is kept).
    Forget(cluster::ForgetArgs),
    /// Export a run's dialogues as training data (examples or preference pairs), streamed.
    Export(run::ExportArgs),
    /// Check the configured models before a run: a capability table per model and role.
    #[command(subcommand)]
    Models(models::ModelsCommand),
}

/// A score flag: a number from 0 to 100.
fn score(text: &str) -> Result<f64, String> {
    match text.parse::<f64>() {
        Ok(x) if x.is_finite() && (0.0..=100.0).contains(&x) => Ok(x),
        _ => Err(format!("`{text}`: expected a score from 0 to 100")),
    }
}

/// The text of a file given on the command line (`what`: the flag or argument, for messages),
/// at most `max_bytes` read: a larger file is refused before it is read whole.
pub fn read_text(path: &std::path::Path, max_bytes: u64, what: &str) -> anyhow::Result<String> {
    use anyhow::Context;
    use std::io::Read;
    let name = path.display();
    let mut text = String::new();
    std::fs::File::open(path)
        .with_context(|| format!("{what} {name}: cannot open it"))?
        .take(max_bytes + 1)
        .read_to_string(&mut text)
        .with_context(|| format!("{what} {name}: cannot read it as UTF-8 text"))?;
    if text.len() as u64 > max_bytes {
        anyhow::bail!("{what} {name}: larger than {max_bytes} bytes; expected at most that");
    }
    Ok(text)
}

/// Runs `f` to its end in an actix `System` on a multi-threaded tokio runtime (actors need a
/// System; NATS and HTTP tasks need the runtime).
fn system<F: std::future::Future>(f: F) -> F::Output {
    actix::System::with_tokio_rt(|| {
        tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build()
            .expect("a tokio runtime")
    })
    .block_on(f)
}

/// Serves /metrics, /healthz and /readyz on `addr` and prints where (port 0: a free port).
async fn serve_metrics(
    addr: std::net::SocketAddr,
    health: std::sync::Arc<sage_ports::telemetry::Health>,
) -> anyhow::Result<()> {
    use anyhow::Context;
    let bound = sage_ports::telemetry::server::serve(addr, health)
        .await
        .with_context(|| format!("serving metrics on {addr}"))?;
    eprintln!("metrics: http://{bound}/metrics");
    tracing::info!(%bound, "serving /metrics, /healthz, /readyz");
    Ok(())
}

/// Serves the metrics of an embedded run on `addr`, when given, for as long as it lasts.
async fn serve_run_metrics(addr: Option<std::net::SocketAddr>) -> anyhow::Result<()> {
    if let Some(addr) = addr {
        let health = sage_ports::telemetry::Health::new();
        health.set_ready(true);
        serve_metrics(addr, health).await?;
    }
    Ok(())
}

/// Runs the command line with the process arguments; the exit code of the binary.
pub fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Scenario(cmd) => scenario::run(cmd),
        Command::Run(args) => run::run(args).map(|()| ExitCode::SUCCESS),
        Command::Rescore(args) => rescore::rescore(args).map(|()| ExitCode::SUCCESS),
        Command::Rejudge(args) => rejudge::rejudge(args).map(|()| ExitCode::SUCCESS),
        Command::Fork(args) => fork::fork(args).map(|()| ExitCode::SUCCESS),
        Command::Judges(cmd) => judges::run(cmd).map(|()| ExitCode::SUCCESS),
        Command::Worker(args) => cluster::worker(args).map(|()| ExitCode::SUCCESS),
        Command::Aggregator(args) => cluster::aggregator(args).map(|()| ExitCode::SUCCESS),
        Command::Sweep(args) => cluster::sweep(args).map(|()| ExitCode::SUCCESS),
        Command::Status(args) => cluster::status(args).map(|()| ExitCode::SUCCESS),
        Command::Forget(args) => cluster::forget(args).map(|()| ExitCode::SUCCESS),
        Command::Report {
            dir,
            compare: Some(baseline),
            html,
            out,
            format,
            fail_on_regression,
            allow_scenario_change,
            allow_simulator_change,
            ..
        } => report::compare(
            &dir,
            &baseline,
            report::CompareArgs {
                html,
                out,
                format,
                fail_on_regression,
                allow_scenario_change,
                allow_simulator_change,
            },
        ),
        Command::Show { dir, dialogue_id } => {
            report::show(&dir, &dialogue_id).map(|()| ExitCode::SUCCESS)
        }
        Command::Report {
            dir,
            html,
            out,
            exclude_off_case,
            ..
        } => {
            if out.is_some() && !html {
                eprintln!("error: --out needs --html (or --compare with --format json)");
                return ExitCode::from(2);
            }
            let leave = sage_ports::store::Leave {
                off_case: exclude_off_case,
            };
            report::report(&dir, html, out.as_deref(), leave).map(|()| ExitCode::SUCCESS)
        }
        Command::Export(args) => run::export(args).map(|()| ExitCode::SUCCESS),
        Command::Models(cmd) => models::run(cmd),
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            // Errors echo what was given (flags, files, answers): nothing in it may drive the
            // terminal.
            eprintln!("error: {}", terminal_safe(&format!("{e:#}")));
            ExitCode::FAILURE
        }
    }
}

/// Checks a `--run-id` flag (it names a folder and, distributed, a message subject).
pub fn check_run_id_flag(run_id: Option<&str>) -> anyhow::Result<()> {
    if let Some(id) = run_id {
        sage_core::protocol::id::check_run_id(id).map_err(|e| anyhow::anyhow!("--run-id: {e}"))?;
    }
    Ok(())
}

/// A progress bar over `len` items named `what`.
pub fn progress_bar(len: usize, what: &str) -> indicatif::ProgressBar {
    let p = indicatif::ProgressBar::new(len as u64);
    let template =
        format!("{{spinner}} {{bar:40}} {{pos}}/{{len}} {what} {{elapsed_precise}} eta {{eta}}");
    p.set_style(
        indicatif::ProgressStyle::with_template(&template)
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
    );
    p
}

/// A watch that turns true on the first SIGTERM or Ctrl-C (after `on_stop` ran); with
/// `second_quits`, a second one ends the process at once (exit 130).
pub fn stop_signal(
    on_stop: impl FnOnce() + Send + 'static,
    second_quits: bool,
) -> tokio::sync::watch::Receiver<bool> {
    let (tx, rx) = tokio::sync::watch::channel(false);
    tokio::spawn(async move {
        let signal = || async {
            match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
                Ok(mut term) => tokio::select! {
                    _ = term.recv() => {},
                    _ = tokio::signal::ctrl_c() => {},
                },
                Err(_) => drop(tokio::signal::ctrl_c().await),
            }
        };
        signal().await;
        on_stop();
        let _ = tx.send(true);
        if second_quits {
            signal().await;
            std::process::exit(130);
        }
    });
    rx
}

/// The compiled scenarios of the run whose manifest is `manifest` (folder `dir`), by id.
pub fn run_scenarios(
    manifest: &sage_ports::store::Manifest,
    dir: &std::path::Path,
) -> anyhow::Result<std::collections::HashMap<String, std::sync::Arc<sage_core::sop::Sop>>> {
    use anyhow::Context;
    Ok(sage_ports::store::inputs::load_scenarios(&manifest.config)
        .with_context(|| format!("{}: loading the run's scenarios", dir.display()))?
        .into_iter()
        .map(|(sop, _)| (sop.scenario().id.clone(), sop))
        .collect())
}

/// Sets every model up once before a folder is created or claimed, as the run will set it up:
/// a missing API key fails here, not in a run already started (both suites).
pub fn set_up_models(models: &[sage_core::plan::model::ModelConfig]) -> anyhow::Result<()> {
    for model in models {
        sage_ports::llm::Endpoint::new(model.clone(), None)?;
    }
    Ok(())
}

/// What `sage report` checks records against: run `run_id`'s jobs as `planned` again, or, when
/// they could not be (a warning on standard error says why), the run id only.
pub fn run_jobs_or_warn(
    run_id: &str,
    planned: Result<sage_core::plan::JobSet, impl std::fmt::Display>,
) -> sage_ports::store::RunJobs {
    let planned = planned
        .inspect_err(|e| {
            eprintln!(
                "warning: the run's jobs cannot be planned again ({e}): its records are checked for the run id only"
            )
        })
        .ok();
    sage_ports::store::RunJobs {
        run_id: run_id.to_string(),
        planned,
    }
}

/// Span export (docs/metrics.md, "Tracing"): where, how, how many dialogues, and whether the
/// messages go with the model calls.
#[derive(Debug, Args)]
pub struct TraceArgs {
    /// OTLP endpoint for traces, e.g. http://otel-collector:4318 (`http/protobuf`: spans are
    /// posted to its /v1/traces) or http://otel-collector:4317 (`grpc`); none: no export.
    #[arg(long, env = "OTEL_EXPORTER_OTLP_ENDPOINT")]
    otlp_endpoint: Option<String>,
    /// The OTLP transport: `http/protobuf` (to the endpoint's /v1/traces, port 4318 by
    /// convention) or `grpc` (port 4317).
    #[arg(long, env = "OTEL_EXPORTER_OTLP_PROTOCOL", default_value = "http/protobuf",
          value_parser = trace::OtlpProtocol::parse)]
    otlp_protocol: trace::OtlpProtocol,
    /// The share of dialogues traced, 0 to 1, chosen by dialogue id (the same in every process
    /// and every rerun).
    #[arg(long, env = "SAGE_TRACE_SAMPLE_RATE", default_value_t = 0.1, value_parser = sample_rate)]
    trace_sample_rate: f64,
    /// Put the messages sent and received on the model-call spans (they may hold customer data).
    #[arg(long, env = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT")]
    trace_content: bool,
}

fn sample_rate(text: &str) -> Result<f64, String> {
    match text.parse::<f64>() {
        Ok(r) if (0.0..=1.0).contains(&r) => Ok(r),
        _ => Err(format!("`{text}`: expected a share from 0 to 1, e.g. 0.1")),
    }
}

impl TraceArgs {
    /// The export to set up, none without an endpoint.
    pub fn export(&self) -> Option<trace::TraceExport> {
        self.otlp_endpoint
            .as_ref()
            .map(|endpoint| trace::TraceExport {
                endpoint: endpoint.clone(),
                protocol: self.otlp_protocol,
                sample_rate: self.trace_sample_rate,
                capture_content: self.trace_content,
            })
    }

    /// Starts span export for `sage run` (within the runtime; keep the guard until the run
    /// ends), when an endpoint is given.
    pub fn start(&self, service: &str) -> anyhow::Result<Option<trace::TraceGuard>> {
        let Some(export) = self.export() else {
            return Ok(None);
        };
        Ok(Some(trace::init(
            LogFormat::Text,
            "warn",
            Some(&export),
            service,
        )?))
    }
}

/// `--plan` and `--json` of `sage run` and `sage sweep`.
#[derive(Debug, Clone, Copy, clap::Args)]
pub struct PlanArgs {
    /// Print what the run would do and exit 0, without running, connecting or writing
    /// anything: the dialogues per scenario and model under test and why (cases asked, cases
    /// min_per_route adds, adversarial levels, repeats), the model calls per role (at most and
    /// expected), the expected tokens and the cost at the configured prices (docs/cli.md).
    #[arg(long, conflicts_with = "resume")]
    pub plan: bool,
    /// With --plan: the plan as one JSON document on standard output.
    #[arg(long, requires = "plan")]
    pub json: bool,
}

impl PlanArgs {
    /// Prints a plan on standard output: its `text`, or with `--json` its `json`.
    pub fn print(
        self,
        text: impl FnOnce() -> String,
        json: impl FnOnce() -> serde_json::Result<serde_json::Value>,
    ) -> anyhow::Result<()> {
        if self.json {
            println!("{}", serde_json::to_string_pretty(&json()?)?);
        } else {
            print!("{}", terminal_safe(&text()));
        }
        Ok(())
    }
}
