//! `sage worker`, `sage aggregator`, `sage sweep`, `sage status`: the distributed mode's
//! commands (wiring only; the logic is in `actors::cluster`).

use anyhow::bail;
use clap::{Args, ValueEnum};
use sage_actors::cluster::{Served, collector, submit, worker};
use sage_core::estimate::RunEstimate;
use sage_core::protocol::Role;
use sage_ports::telemetry::Health;
use sage_ports::telemetry::trace::{self, LogFormat};
use sage_ports::transport::nats::{Broker, NatsConfig, QueueSettings, RequestPolicy};
use sage_report::transcript::terminal_safe;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

/// How to reach NATS (every flag also from the environment).
#[derive(Debug, Args)]
pub struct NatsArgs {
    /// NATS server URL(s), comma-separated.
    #[arg(
        long = "nats",
        env = "SAGE_NATS_URL",
        default_value = "nats://127.0.0.1:4222"
    )]
    url: String,
    /// NATS user (with --nats-password).
    #[arg(long, env = "SAGE_NATS_USER")]
    nats_user: Option<String>,
    /// NATS password.
    #[arg(long, env = "SAGE_NATS_PASSWORD", hide_env_values = true)]
    nats_password: Option<String>,
    /// NATS token.
    #[arg(long, env = "SAGE_NATS_TOKEN", hide_env_values = true)]
    nats_token: Option<String>,
    /// A NATS .creds file (JWT and NKey seed).
    #[arg(long, env = "SAGE_NATS_CREDS")]
    nats_creds: Option<PathBuf>,
    /// An NKey seed.
    #[arg(long, env = "SAGE_NATS_NKEY", hide_env_values = true)]
    nats_nkey: Option<String>,
    /// CA certificate (PEM) to trust for TLS.
    #[arg(long, env = "SAGE_NATS_TLS_CA")]
    nats_tls_ca: Option<PathBuf>,
    /// Client certificate (PEM) for TLS (with --nats-tls-key).
    #[arg(long, env = "SAGE_NATS_TLS_CERT")]
    nats_tls_cert: Option<PathBuf>,
    /// Client key (PEM) for TLS.
    #[arg(long, env = "SAGE_NATS_TLS_KEY")]
    nats_tls_key: Option<PathBuf>,
    /// Refuse a connection without TLS.
    #[arg(long, env = "SAGE_NATS_TLS_REQUIRED")]
    nats_tls_required: bool,
    /// Seconds to keep trying the first connection.
    #[arg(long, env = "SAGE_NATS_CONNECT_SECS", value_parser = clap::value_parser!(u64).range(0..=86_400), default_value_t = 60)]
    nats_connect_secs: u64,
    /// Seconds a dialogue job may go without progress before it is delivered again.
    #[arg(long, env = "SAGE_ACK_WAIT_SECS", value_parser = clap::value_parser!(u64).range(1..=86_400), default_value_t = 30)]
    ack_wait_secs: u64,
    /// Most dialogue jobs out (delivered, not acked) across all workers.
    #[arg(long, env = "SAGE_MAX_ACK_PENDING", value_parser = clap::value_parser!(i64).range(1..=1_000_000), default_value_t = 10_000)]
    max_ack_pending: i64,
    /// Replicas of the JetStream streams and bucket (1 for one server).
    #[arg(long, env = "SAGE_JS_REPLICAS", value_parser = clap::value_parser!(u64).range(1..=5), default_value_t = 1)]
    js_replicas: u64,
    /// Hours records stay in the records stream after they are published (0: kept until
    /// deleted by hand); applied to the stream when a process starts.
    #[arg(long, env = "SAGE_RECORDS_MAX_AGE_HOURS", value_parser = clap::value_parser!(u64).range(0..=87_600), default_value_t = 168)]
    records_max_age_hours: u64,
}

impl NatsArgs {
    async fn broker(&self, name: &str) -> anyhow::Result<Broker> {
        let config = NatsConfig {
            url: self.url.clone(),
            user: self.nats_user.clone(),
            password: self.nats_password.clone(),
            token: self.nats_token.clone(),
            creds_file: self.nats_creds.clone(),
            nkey_seed: self.nats_nkey.clone(),
            tls_ca: self.nats_tls_ca.clone(),
            tls_cert: self.nats_tls_cert.clone(),
            tls_key: self.nats_tls_key.clone(),
            tls_required: self.nats_tls_required,
            name: name.to_string(),
            connect_for: Duration::from_secs(self.nats_connect_secs),
        };
        let client = config.connect().await?;
        Ok(Broker::new(
            client,
            QueueSettings {
                ack_wait: Duration::from_secs(self.ack_wait_secs.max(1)),
                max_ack_pending: self.max_ack_pending,
                replicas: self.js_replicas.max(1) as usize,
                records_max_age: Duration::from_secs(
                    self.records_max_age_hours.saturating_mul(3600),
                ),
            },
        ))
    }
}

/// Log format.
#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum LogFormatArg {
    /// Human-readable lines.
    Text,
    /// JSON lines.
    Json,
}

/// Telemetry of a long-running process.
#[derive(Debug, Args)]
pub struct TelemetryArgs {
    /// Where /metrics, /healthz and /readyz are served (port 0: any free port, printed).
    #[arg(long, env = "SAGE_METRICS_ADDR", default_value = "0.0.0.0:9464")]
    metrics_addr: SocketAddr,
    #[command(flatten)]
    trace: super::TraceArgs,
    /// Log format (standard error; level from RUST_LOG, default info).
    #[arg(long, env = "SAGE_LOG_FORMAT", value_enum, default_value = "text")]
    log_format: LogFormatArg,
}

impl TelemetryArgs {
    /// Starts logging/tracing and the HTTP endpoints; returns the guard to keep and the health.
    async fn start(&self, service: &str) -> anyhow::Result<(trace::TraceGuard, Arc<Health>)> {
        let format = match self.log_format {
            LogFormatArg::Text => LogFormat::Text,
            LogFormatArg::Json => LogFormat::Json,
        };
        let guard = trace::init(format, "info", self.trace.export().as_ref(), service)?;
        let health = Health::new();
        super::serve_metrics(self.metrics_addr, health.clone()).await?;
        Ok((guard, health))
    }
}

/// Options of `sage worker`.
#[derive(Debug, Args)]
pub struct WorkerArgs {
    #[command(flatten)]
    nats: NatsArgs,
    #[command(flatten)]
    telemetry: TelemetryArgs,
    /// Roles to serve: dialogue, user, service, judge, rule (comma-separated).
    #[arg(
        long,
        env = "SAGE_ROLES",
        value_delimiter = ',',
        default_value = "dialogue,user,service,judge,rule"
    )]
    roles: Vec<String>,
    /// With the service role: serve only these models under test (repeatable or
    /// comma-separated); all when absent.
    #[arg(long = "model", env = "SAGE_MODELS", value_delimiter = ',')]
    models: Vec<String>,
    /// Ask every role over NATS, even the ones this worker serves (by default its own
    /// dialogues use its own role actors for those).
    #[arg(long, env = "SAGE_REMOTE_ROLES")]
    remote_roles: bool,
    /// Most dialogues this worker plays at once.
    #[arg(long, env = "SAGE_CONCURRENCY", value_parser = clap::value_parser!(u64).range(1..=100_000), default_value_t = 256)]
    concurrency: u64,
    /// Seconds one role request may wait for its reply (the model call included).
    #[arg(long, env = "SAGE_ROLE_TIMEOUT_SECS", value_parser = clap::value_parser!(u64).range(1..=86_400), default_value_t = 300)]
    role_timeout_secs: u64,
    /// Seconds a role request is retried while no process answers it.
    #[arg(long, env = "SAGE_ROLE_RETRY_SECS", value_parser = clap::value_parser!(u64).range(0..=86_400), default_value_t = 120)]
    role_retry_secs: u64,
    /// Seconds the dialogues in flight get to finish on SIGTERM before they are handed back.
    #[arg(long, env = "SAGE_GRACE_SECS", value_parser = clap::value_parser!(u64).range(0..=3_600), default_value_t = 30)]
    grace_secs: u64,
    /// Seconds a run may go unused (no job, no role request, nothing in flight) before this
    /// worker unloads it; a later request loads it again.
    #[arg(long, env = "SAGE_RUN_IDLE_SECS", value_parser = clap::value_parser!(u64).range(1..=2_592_000), default_value_t = 3600)]
    run_idle_secs: u64,
}

fn parse_role(name: &str) -> anyhow::Result<Role> {
    Ok(match name.trim() {
        "dialogue" => Role::Dialogue,
        "user" => Role::User,
        "service" => Role::Service,
        "judge" => Role::Judge,
        "rule" => Role::Rule,
        other => bail!(
            "--roles: unknown role `{other}` (expected dialogue, user, service, judge or rule)"
        ),
    })
}

/// A watch that turns true on SIGTERM or Ctrl-C.
fn shutdown_signal() -> tokio::sync::watch::Receiver<bool> {
    super::stop_signal(|| tracing::info!("shutting down"), false)
}

/// `sage worker`.
pub fn worker(args: WorkerArgs) -> anyhow::Result<()> {
    // A served model's name becomes a subject: checked before anything connects.
    for name in &args.models {
        sage_core::protocol::id::check_name(name).map_err(|e| anyhow::anyhow!("--model: {e}"))?;
    }
    let roles = args
        .roles
        .iter()
        .map(|r| parse_role(r))
        .collect::<anyhow::Result<_>>()?;
    let options = worker::WorkerOptions {
        served: Served {
            roles,
            models: args.models.clone(),
            remote_roles: args.remote_roles,
        },
        concurrency: args.concurrency.max(1) as usize,
        policy: RequestPolicy {
            timeout: Duration::from_secs(args.role_timeout_secs.max(1)),
            retry_for: Duration::from_secs(args.role_retry_secs),
        },
        grace: Duration::from_secs(args.grace_secs),
        run_idle: Duration::from_secs(args.run_idle_secs.max(1)),
        ..Default::default()
    };
    super::system(async move {
        let (_guard, health) = args.telemetry.start("sage-worker").await?;
        let stop = shutdown_signal();
        let broker = args.nats.broker("sage-worker").await?;
        let report = worker::run_worker(broker, options, health, stop).await?;
        tracing::info!(
            stored = report.stored,
            released = report.released,
            redelivered = report.redelivered,
            "worker stopped"
        );
        Ok(())
    })
}

/// Options of `sage aggregator`.
#[derive(Debug, Args)]
pub struct AggregatorArgs {
    #[command(flatten)]
    nats: NatsArgs,
    #[command(flatten)]
    telemetry: TelemetryArgs,
    /// Where results/<run-id>/ folders go.
    #[arg(long, env = "SAGE_OUT", default_value = "results")]
    out: PathBuf,
}

/// `sage aggregator`.
pub fn aggregator(args: AggregatorArgs) -> anyhow::Result<()> {
    super::system(async move {
        let (_guard, health) = args.telemetry.start("sage-aggregator").await?;
        let stop = shutdown_signal();
        let broker = args.nats.broker("sage-aggregator").await?;
        let stored = collector::run_aggregator(broker, args.out, health, stop).await?;
        tracing::info!(stored, "aggregator stopped");
        Ok(())
    })
}

/// Options of `sage sweep`.
#[derive(Debug, Args)]
pub struct SweepArgs {
    #[command(flatten)]
    nats: NatsArgs,
    /// The run configuration (docs/run-config.md): models x scenarios x repeats.
    #[arg(long)]
    config: Option<PathBuf>,
    /// The run id (default: date-time and seed).
    #[arg(long)]
    run_id: Option<String>,
    /// Follow the run's progress until it completes, then print its leaderboard.
    #[arg(long)]
    follow: bool,
    /// Which suite: the SAGE benchmark (a run configuration) or the support desk (a desk
    /// configuration, docs/support-desk.md).
    #[arg(long, value_enum, default_value = "sage")]
    suite: super::run::Suite,
    /// Resume this run, which its cost budgets stopped, with the budgets given by
    /// --max-cost-usd / --max-cost-usd-per-model: the aggregator queues its dialogues not
    /// stored (docs/run-config.md, "Cost budgets").
    #[arg(long, value_name = "RUN_ID", conflicts_with_all = ["config", "run_id"])]
    resume: Option<String>,
    /// Cancel this run: no dialogue of it starts any more, those in flight finish and are
    /// stored, its state turns `cancelled` (`--resume RUN_ID` plays the rest).
    #[arg(long, value_name = "RUN_ID", conflicts_with_all = ["config", "run_id", "resume", "pause", "unpause"])]
    cancel: Option<String>,
    /// Pause this run: its jobs wait in the queue and no dialogue of it starts until
    /// `--unpause`.
    #[arg(long, value_name = "RUN_ID", conflicts_with_all = ["config", "run_id", "resume", "unpause"])]
    pause: Option<String>,
    /// Let a paused run play on.
    #[arg(long, value_name = "RUN_ID", conflicts_with_all = ["config", "run_id", "resume"])]
    unpause: Option<String>,
    #[command(flatten)]
    budgets: super::run::BudgetArgs,
    #[command(flatten)]
    adaptive: super::run::AdaptiveArgs,
    #[command(flatten)]
    plan: super::PlanArgs,
}

/// `sage sweep`.
pub fn sweep(args: SweepArgs) -> anyhow::Result<()> {
    use super::run::Suite;
    /// What is submitted, loaded and checked before connecting.
    enum Submission {
        Sage(
            Box<sage_core::plan::RunConfig>,
            Vec<(std::sync::Arc<sage_core::sop::Sop>, String, String)>,
        ),
        Suite(sage_actors::cluster::hosted::Hosted),
    }
    if args.suite != Suite::Sage && args.budgets.sets_budget() {
        bail!(
            "--max-cost-usd and --max-cost-usd-per-model apply to the SAGE suite, not to --suite {}",
            args.suite.name()
        );
    }
    if args.suite != Suite::Sage {
        args.adaptive.sage_only()?;
    }
    if let Some(run_id) = args.resume.clone() {
        return resume(args, run_id);
    }
    use sage_actors::cluster::Control;
    let asked = [
        (&args.cancel, Some(Control::Cancelled), "cancel"),
        (&args.pause, Some(Control::Paused), "pause"),
        (&args.unpause, None, "unpause"),
    ];
    if let Some((run_id, control, flag)) = asked
        .into_iter()
        .find_map(|(run, control, flag)| Some((run.clone()?, control, flag)))
    {
        return control_run(&args.nats, &run_id, control, flag);
    }
    let (submission, default_id, line) = match args.suite {
        Suite::Sage => {
            let mut config = match &args.config {
                Some(path) => sage_ports::store::inputs::read_config(path)?,
                None => sage_core::plan::RunConfig::default(),
            };
            args.budgets.apply(&mut config)?;
            args.adaptive.apply(&mut config);
            config.check("sweep")?;
            let scenarios = sage_ports::store::inputs::load_named_scenarios(&config)?;
            let sops: Vec<_> = scenarios.iter().map(|(s, _, _)| s.clone()).collect();
            config.check_jobs(&sops, "sweep")?;
            let estimate = RunEstimate::new(&config, &sops);
            if args.plan.plan {
                return args
                    .plan
                    .print(|| estimate.text(), || serde_json::to_value(&estimate));
            }
            let id = sage_ports::store::new_run_id(None, config.seed);
            (
                Submission::Sage(Box::new(config), scenarios),
                id,
                estimate.line(),
            )
        }
        other => {
            let Some(lifecycle) = other.hosted() else {
                bail!("--suite {}: not served by sage sweep", other.name());
            };
            let asked = (args.config.as_deref(), args.run_id.as_deref());
            let Some((spec, line)) = (lifecycle.submission)(asked, args.plan)? else {
                return Ok(());
            };
            let id = spec.0.run_id().to_string();
            (Submission::Suite(spec), id, line)
        }
    };
    let run_id = args.run_id.clone().unwrap_or(default_id);
    sage_core::protocol::id::check_run_id(&run_id).map_err(|e| anyhow::anyhow!("--run-id: {e}"))?;
    super::system(async move {
        let _guard = trace::init(LogFormat::Text, "warn", None, "sage-sweep")?;
        let broker = args.nats.broker("sage-sweep").await?;
        let status = match &submission {
            Submission::Sage(config, scenarios) => {
                submit::submit(&broker, config, scenarios, &run_id).await?
            }
            Submission::Suite(spec) => submit::submit_suite(&broker, spec.clone()).await?,
        };
        println!("{run_id}");
        eprintln!("run {run_id}: {line}: {} jobs queued", status.jobs);
        if args.follow {
            follow(&broker, &run_id, 0).await?;
        }
        Ok(())
    })
}

/// `sage sweep --resume RUN_ID`: the run's budgets replaced by those given, and the
/// aggregator asked to queue its dialogues not stored.
/// `sage sweep --cancel|--pause|--unpause RUN_ID`.
fn control_run(
    nats: &NatsArgs,
    run_id: &str,
    control: Option<sage_actors::cluster::Control>,
    flag: &str,
) -> anyhow::Result<()> {
    sage_core::protocol::id::check_run_id(run_id).map_err(|e| anyhow::anyhow!("--{flag}: {e}"))?;
    super::system(async move {
        let _guard = trace::init(LogFormat::Text, "warn", None, "sage-sweep")?;
        let broker = nats.broker("sage-sweep").await?;
        let status = submit::control(&broker, run_id, control).await?;
        let what = match control {
            Some(sage_actors::cluster::Control::Cancelled) => {
                "cancel asked: no dialogue starts any more, those in flight finish and are stored; `sage sweep --resume RUN_ID` plays the rest"
            }
            Some(sage_actors::cluster::Control::Paused) => {
                "pause asked: its jobs wait in the queue until `sage sweep --unpause RUN_ID`"
            }
            None => "unpause asked: it plays on",
        };
        eprintln!(
            "run {run_id} ({}/{} dialogues stored): {what}",
            status.stored, status.jobs
        );
        Ok(())
    })
}

fn resume(args: SweepArgs, run_id: String) -> anyhow::Result<()> {
    use sage_actors::cluster::RunSpec;
    sage_core::protocol::id::check_run_id(&run_id).map_err(|e| anyhow::anyhow!("--resume: {e}"))?;
    super::system(async move {
        let _guard = trace::init(LogFormat::Text, "warn", None, "sage-sweep")?;
        let broker = args.nats.broker("sage-sweep").await?;
        // A cancelled run resumes as it was; one its budgets stopped needs higher ones; an
        // adaptive run whose every model is decided has nothing to play.
        let status = submit::status(&broker, &run_id).await?;
        if let Some(s) = &status
            && s.state == sage_actors::cluster::RunState::Complete
            && s.adaptive.as_ref().is_some_and(|a| a.stops_the_rest())
        {
            bail!(
                "run {run_id} is complete: an adaptive run whose models are all decided ({} of its {} dialogues played), there is nothing to resume",
                s.stored,
                s.jobs
            );
        }
        let cancelled =
            (status.as_ref()).is_some_and(|s| s.state == sage_actors::cluster::RunState::Cancelled);
        let mut spec = RunSpec::get(&broker.runs().await?, &run_id).await?;
        match &mut spec {
            RunSpec::Sage { .. } if !cancelled && !args.budgets.sets_budget() => bail!(
                "--resume: expected the budgets to resume with: --max-cost-usd USD and/or --max-cost-usd-per-model NAME=USD (a cancelled run needs none)"
            ),
            RunSpec::Sage { manifest, .. } => {
                args.budgets.apply(&mut manifest.config)?;
                manifest.config.check("command line")?;
                // Budgets that what was spent already reaches would queue nothing: said, not
                // resumed.
                if let Some(budget) = status.and_then(|s| s.budget)
                    && let Some(after) = budget.spent_under(&manifest.config)
                {
                    let line = after.line_resumed_by(&format!("sage sweep --resume {run_id}"));
                    bail!(
                        "run {run_id}: the budgets given are already spent, so no dialogue would start (nothing queued): {line}"
                    );
                }
            }
            // Another suite's run has no budget: a cancelled one resumes as it was.
            other if args.budgets.sets_budget() || !cancelled => bail!(
                "run {run_id}: a {} run has no cost budget to resume with (only a cancelled one resumes, without budgets)",
                other.suite()
            ),
            _ => {}
        }
        let resumed = submit::resume(&broker, &spec).await?;
        println!("{run_id}");
        eprintln!("run {run_id}: resumed; the aggregator queues the dialogues not stored");
        if args.follow {
            follow(&broker, &run_id, resumed).await?;
        }
        Ok(())
    })
}

/// Prints a run's progress until it completes (after resume `resumed`, when not 0), then its
/// leaderboard, its budget line (a run with a budget) and where its results and its HTML
/// report are on the aggregator.
async fn follow(broker: &Broker, run_id: &str, resumed: u32) -> anyhow::Result<()> {
    let mut last = None;
    loop {
        if let Some(s) = submit::status(broker, run_id).await?
            && s.resumes >= resumed
        {
            let line = (s.stored, s.jobs, s.turns);
            if last != Some(line) {
                eprintln!(
                    "{run_id}: {}/{} dialogues, {} turns",
                    s.stored, s.jobs, s.turns
                );
                last = Some(line);
            }
            if s.state == sage_actors::cluster::RunState::Cancelled {
                eprintln!("{run_id}: cancelled; `sage sweep --resume {run_id}` plays the rest");
                return Ok(());
            }
            if s.state == sage_actors::cluster::RunState::Complete {
                if let Some(table) = s.leaderboard {
                    println!("{}", terminal_safe(&table));
                }
                if let Some(results) = s.results {
                    println!("results (on the aggregator): {results}");
                }
                if let Some(report) = s.report {
                    println!("report (on the aggregator): {report}");
                }
                if let Some(budget) = s.budget {
                    let command = format!("sage sweep --resume {run_id}");
                    println!("{}", budget.line_resumed_by(&command));
                }
                if let Some(adaptive) = &s.adaptive {
                    print!("{}", terminal_safe(&adaptive.text()));
                }
                // As `sage run`: a run that could not measure what it was for failed.
                if let Some(error) = sage_ports::store::unmeasured_error(&s.unmeasured) {
                    bail!("{error}");
                }
                return Ok(());
            }
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

/// Options of `sage status`.
#[derive(Debug, Args)]
pub struct StatusArgs {
    #[command(flatten)]
    nats: NatsArgs,
    /// One run (all runs when absent).
    run: Option<String>,
    /// JSON instead of a table.
    #[arg(long)]
    json: bool,
}

/// `sage status`.
pub fn status(args: StatusArgs) -> anyhow::Result<()> {
    if let Some(id) = &args.run {
        sage_core::protocol::id::check_run_id(id)?;
    }
    super::system(async move {
        let _guard = trace::init(LogFormat::Text, "warn", None, "sage-status")?;
        let broker = args.nats.broker("sage-status").await?;
        let runs = match &args.run {
            Some(id) => match submit::status(&broker, id).await? {
                Some(s) => vec![s],
                None => bail!("run {id}: not found in the runs bucket"),
            },
            None => {
                let all = submit::all_status(&broker).await?;
                for unreadable in &all.unreadable {
                    eprintln!("warning: skipped an unreadable run status: {unreadable}");
                }
                all.runs
            }
        };
        if args.json {
            println!("{}", serde_json::to_string_pretty(&runs)?);
        } else {
            print!("{}", terminal_safe(&submit::status_table(&runs)));
            if let [one] = runs.as_slice() {
                match &one.leaderboard {
                    Some(table) => println!("\n{table}"),
                    None => print!("\n{}", terminal_safe(&submit::live_table(one))),
                }
            }
        }
        Ok(())
    })
}

/// Options of `sage forget`.
#[derive(Debug, Args)]
pub struct ForgetArgs {
    #[command(flatten)]
    nats: NatsArgs,
    /// The run to forget.
    run: String,
    /// Forget it even when it is not complete.
    #[arg(long)]
    force: bool,
}

/// `sage forget`.
pub fn forget(args: ForgetArgs) -> anyhow::Result<()> {
    sage_core::protocol::id::check_run_id(&args.run)?;
    super::system(async move {
        let _guard = trace::init(LogFormat::Text, "warn", None, "sage-forget")?;
        let broker = args.nats.broker("sage-forget").await?;
        let status = submit::forget(&broker, &args.run, args.force).await?;
        eprintln!(
            "run {}: forgotten ({}/{} dialogues stored{})",
            args.run,
            status.stored,
            status.jobs,
            status
                .results
                .map(|r| format!("; results kept on the aggregator in {r}"))
                .unwrap_or_default()
        );
        Ok(())
    })
}
