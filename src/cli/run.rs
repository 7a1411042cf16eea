//! `sage run`, `sage report`, `sage export`: wiring only.

use anyhow::{Context, bail};
use clap::{Args, ValueEnum};
use sage_actors::runner::run_embedded_until;
use sage_core::estimate::RunEstimate;
use sage_core::plan::{self, RunConfig};
use sage_core::scenario::Adversarial;
use sage_core::sop::Sop;
use sage_ports::store::export::{self, Format};
use sage_ports::store::{Manifest, RunDir, inputs};
use sage_report::transcript::terminal_safe;
use std::collections::HashMap;
use std::num::NonZeroUsize;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Options of `sage run`.
#[derive(Debug, Args)]
pub struct RunArgs {
    /// A run configuration (docs/run-config.md); without it, the bundled scenarios against
    /// the bundled simulated models.
    #[arg(long)]
    config: Option<PathBuf>,
    /// Continue a stopped run from its results folder (finished dialogues are kept).
    #[arg(long, conflicts_with = "config")]
    resume: Option<PathBuf>,
    /// Cases asked for per scenario, intent-balanced (overrides dialogues_per_scenario): before
    /// the cases min_per_route adds for routes they cover less often, and before repeats; the
    /// run plays every case repeats times with every model under test (`--plan` counts them).
    #[arg(long)]
    dialogues: Option<usize>,
    /// Runs of each case. With 2 or more, the leaderboard adds pass^k (the share of cases whose
    /// k repeats all reach the target action) and per-case scores (each case's median over its
    /// repeats), besides OA, Logic and Chat over every scored turn of every repeat.
    #[arg(long)]
    repeats: Option<u32>,
    /// Run seed.
    #[arg(long)]
    seed: Option<u64>,
    /// Most dialogues in flight.
    #[arg(long)]
    concurrency: Option<usize>,
    /// Most user turns per dialogue.
    #[arg(long)]
    max_turns: Option<u32>,
    /// Where results/<run-id>/ goes.
    #[arg(long)]
    out: Option<PathBuf>,
    /// The run id (default: date-time and seed).
    #[arg(long)]
    run_id: Option<String>,
    /// No progress bar.
    #[arg(long)]
    quiet: bool,
    #[command(flatten)]
    adaptive: AdaptiveArgs,
    /// Serve /metrics, /healthz and /readyz here while the run lasts (port 0: any free port,
    /// printed); none by default.
    #[arg(long, env = "SAGE_RUN_METRICS_ADDR")]
    metrics_addr: Option<std::net::SocketAddr>,
    /// Which suite: the SAGE benchmark (SOP scenarios) or the support desk (a store with tools;
    /// docs/support-desk.md).
    #[arg(long, value_enum, default_value = "sage")]
    suite: Suite,
    #[command(flatten)]
    budgets: BudgetArgs,
    #[command(flatten)]
    trace: super::TraceArgs,
    #[command(flatten)]
    plan: super::PlanArgs,
}

/// The adaptive-run flags of `sage run` and `sage sweep`.
#[derive(Debug, Clone, clap::Args)]
pub struct AdaptiveArgs {
    /// An adaptive run: a model stops getting cases once its OA's 95% confidence sequence
    /// puts it surely in or surely out of the top K (`--adaptive-top`); the cases are played
    /// in a random order (docs/run-config.md, "Adaptive runs").
    #[arg(long)]
    adaptive: bool,
    /// The K of an adaptive run's top K [default: 3].
    #[arg(long, value_name = "K", requires = "adaptive")]
    adaptive_top: Option<usize>,
}

impl AdaptiveArgs {
    /// Refuses the flags for a suite other than SAGE's (its leaderboard is not ranked by OA).
    pub fn sage_only(&self) -> anyhow::Result<()> {
        if self.adaptive {
            bail!("--adaptive applies to the SAGE suite alone");
        }
        Ok(())
    }

    /// Makes `config` adaptive when asked (its K checked with it by [`RunConfig::check`]).
    pub fn apply(&self, config: &mut RunConfig) {
        if self.adaptive {
            config.adaptive_top = Some(
                self.adaptive_top
                    .unwrap_or(sage_core::scoring::adaptive::DEFAULT_TOP),
            );
        }
    }
}

/// The cost budget flags of `sage run` and `sage sweep`.
#[derive(Debug, Clone, clap::Args)]
pub struct BudgetArgs {
    /// The most the run's dialogues may cost, US dollars: once they have, no new dialogue
    /// starts (docs/run-config.md, "Cost budgets"). With --resume it replaces the run's budget
    /// (resume with a higher one to play the dialogues it kept from starting).
    #[arg(long, value_name = "USD")]
    max_cost_usd: Option<f64>,
    /// The most the dialogues of one model under test may cost (agent, customer and judge
    /// calls), NAME=USD; repeatable. With --resume it replaces that model's budget.
    #[arg(long, value_name = "NAME=USD", value_parser = model_budget)]
    max_cost_usd_per_model: Vec<(String, f64)>,
}

/// A `--max-cost-usd-per-model` value: NAME=USD (the amount checked with the configuration).
fn model_budget(text: &str) -> Result<(String, f64), String> {
    let expected = || format!("`{text}`: expected NAME=USD, e.g. gpt-4o=2.5");
    let (name, usd) = text.split_once('=').ok_or_else(expected)?;
    let usd = usd.trim().parse::<f64>().map_err(|_| expected())?;
    Ok((name.trim().to_string(), usd))
}

impl RunArgs {
    fn sets_budget(&self) -> bool {
        self.budgets.sets_budget()
    }

    fn apply_budgets(&self, config: &mut RunConfig) -> anyhow::Result<()> {
        self.budgets.apply(config)
    }
}

impl BudgetArgs {
    /// Whether a cost budget is given on the command line.
    pub fn sets_budget(&self) -> bool {
        self.max_cost_usd.is_some() || !self.max_cost_usd_per_model.is_empty()
    }

    /// Sets the budgets given on the command line in `config` (checked with it by
    /// [`RunConfig::check`]).
    pub fn apply(&self, config: &mut RunConfig) -> anyhow::Result<()> {
        if let Some(usd) = self.max_cost_usd {
            config.max_cost_usd = Some(usd);
        }
        for (name, usd) in &self.max_cost_usd_per_model {
            let under_test = config.service_models.contains(name);
            let Some(model) = config
                .models
                .iter_mut()
                .find(|m| &m.name == name)
                .filter(|_| under_test)
            else {
                bail!(
                    "--max-cost-usd-per-model: `{name}` is not a model under test; expected one of: {}",
                    config.service_models.join(", ")
                );
            };
            model.max_cost_usd = Some(*usd);
        }
        Ok(())
    }
}

/// The suites `sage run` runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Suite {
    /// SOP scenarios scored by the SAGE paper's formulas.
    Sage,
    /// A store's support desk with tools (SupportAgentBench methodology).
    SupportDesk,
    /// tau2-bench's retail domain: 114 tasks, 16 tools, graded by the database check
    /// (docs/tau2-retail.md).
    #[value(name = "tau2-retail")]
    Tau2Retail,
}

/// What the commands do with a suite on the one lifecycle: each is the generic command
/// ([`super::suite`]) for that suite.
#[derive(Clone, Copy)]
pub struct Lifecycle {
    /// `sage run --suite NAME`.
    pub run: fn(super::suite::SuiteArgs<'_>) -> anyhow::Result<()>,
    /// `sage sweep --suite NAME`: the spec to submit (`None`: `--plan` printed instead).
    pub submission: super::suite::Submission,
    /// `sage report DIR [--html --out FILE]` (the folder claimed; with a file, the page alone
    /// written there).
    pub report: fn(&RunDir, Option<&Path>) -> anyhow::Result<()>,
    /// `sage show DIR ID`.
    pub show: fn(&RunDir, &str) -> anyhow::Result<()>,
    /// `sage report CURRENT --compare BASELINE`: whether some agent is worse.
    pub compare: fn((&RunDir, &RunDir), super::suite::CompareOptions<'_>) -> anyhow::Result<bool>,
    /// Its name (`--suite NAME`, a manifest's `suite`).
    pub name: &'static str,
}

impl Lifecycle {
    /// The commands of the suite `S`.
    fn of<S: sage_actors::suite::Play>() -> Lifecycle {
        Lifecycle {
            run: super::suite::run::<S>,
            submission: super::suite::submission::<S>,
            report: super::suite::report::<S>,
            show: super::suite::show::<S>,
            compare: super::suite::compare::<S>,
            name: <S as sage_core::suite::Suite>::NAME,
        }
    }
}

impl Suite {
    /// Its name on the command line (`--suite NAME`).
    pub fn name(self) -> String {
        use clap::ValueEnum;
        self.to_possible_value()
            .map(|v| v.get_name().to_string())
            .unwrap_or_default()
    }

    /// The commands of a suite on the one lifecycle; `None` for the SAGE suite, served on its
    /// own path. The one list a suite on the trait joins.
    pub fn hosted(self) -> Option<Lifecycle> {
        match self {
            Suite::SupportDesk => Some(Lifecycle::of::<sage_core::desk::SupportDesk>()),
            Suite::Tau2Retail => Some(Lifecycle::of::<sage_core::tau2::run::Tau2Retail>()),
            Suite::Sage => None,
        }
    }

    /// The commands for a folder of a suite on the one lifecycle (its manifest's `suite`).
    pub fn lifecycle(run: &RunDir) -> Option<Lifecycle> {
        let name = super::suite::suite_of(run)?;
        Suite::value_variants()
            .iter()
            .filter_map(|s| s.hosted())
            .find(|l| l.name == name)
    }
}

/// Refuses the folder of a run of another suite than SAGE for a command of SAGE-suite runs;
/// `what` says what the command does instead.
pub fn sage_only(run: &RunDir, what: &str) -> anyhow::Result<()> {
    match super::suite::suite_of(run) {
        Some(suite) if suite != Suite::Sage.name() => bail!(
            "{}: a {} run; {what}",
            run.path().display(),
            terminal_safe(&suite)
        ),
        _ => Ok(()),
    }
}

/// The scenarios of the run stored in `run` as they were (a warning for each one left out when
/// `graphs`: its graph is not drawn), and what `sage report` checks its records against: the
/// run's jobs planned again, or for a rescored folder (rescore.json) its run id only (its
/// records are the stored run's dialogues, while a corrected scenario with other routes plans
/// other cases).
fn stored(
    run: &RunDir,
    graphs: bool,
) -> anyhow::Result<(Vec<Arc<Sop>>, sage_ports::store::RunJobs)> {
    let manifest = run.read_manifest()?;
    let (sops, left_out) = inputs::stored_scenarios(&manifest);
    if graphs {
        for why in left_out {
            eprintln!("warning: {why}");
        }
    }
    // A rescored or forked folder's records are not a plan's jobs.
    if run
        .path()
        .join(sage_core::scoring::rescore::RESCORE_JSON)
        .exists()
        || run.path().join(sage_core::fork::FORK_JSON).exists()
    {
        let jobs = sage_ports::store::RunJobs {
            run_id: manifest.run_id.clone(),
            planned: None,
        };
        return Ok((sops, jobs));
    }
    let planned = inputs::stored_jobs(&manifest, &sops);
    let jobs = super::run_jobs_or_warn(&manifest.run_id, planned);
    Ok((sops, jobs))
}

/// `sage report DIR --html [--out FILE]`: the summary files and the HTML report, one pass
/// (with `--out`, the page alone, written there).
pub fn report_html(
    run: &RunDir,
    out: Option<&Path>,
    leave: sage_ports::store::Leave,
) -> anyhow::Result<sage_ports::store::Reported> {
    let (sops, jobs) = stored(run, true)?;
    Ok(sage_ports::store::report_html(run, sops, jobs, out, leave)?)
}

/// `sage report DIR` of a SAGE run: the summary files.
pub fn report(
    run: &RunDir,
    leave: sage_ports::store::Leave,
) -> anyhow::Result<sage_ports::store::Reported> {
    let (_, jobs) = stored(run, false)?;
    Ok(sage_ports::store::report(run, jobs, leave)?)
}

/// `sage run`.
pub fn run(args: RunArgs) -> anyhow::Result<()> {
    super::check_run_id_flag(args.run_id.as_deref())?;
    match args.suite {
        Suite::Sage => {}
        other => {
            if let Some(lifecycle) = other.hosted() {
                return (lifecycle.run)(args.suite_args()?);
            }
        }
    }
    // Everything is checked before a results folder is created or claimed.
    let (config, resume) = args.config()?;
    config.check("command line")?;
    let scenarios = inputs::load_scenarios(&config)?;
    let sops: Vec<Arc<Sop>> = scenarios.iter().map(|(s, _)| s.clone()).collect();
    config.check_jobs(&sops, "command line")?;
    let estimate = RunEstimate::new(&config, &sops);
    if args.plan.plan {
        // Nothing is set up, created or written: no API key is needed to plan.
        return args
            .plan
            .print(|| estimate.text(), || serde_json::to_value(&estimate));
    }
    super::set_up_models(&config.models)?;
    let (run_dir, run_id) = match resume {
        Some((run, manifest)) => {
            // A budget given on resuming is the run's from now on: the manifest records it,
            // so that the summary (and `sage report`) tells the budget in force.
            let budgets = args.sets_budget().then_some(&config);
            let run = run.resume_sage(&manifest, &scenarios, budgets)?;
            // The manifest's id (checked when read), whatever the folder is called now.
            (run, manifest.run_id)
        }
        None => {
            let run_id = args
                .run_id
                .clone()
                .unwrap_or_else(|| sage_ports::store::new_run_id(None, config.seed));
            (RunDir::create(&config.output_dir, &run_id)?, run_id)
        }
    };
    let jobs = plan::Plan::new(&config, &run_id, &sops);
    if args.resume.is_none() {
        run_dir.write_manifest(&Manifest::new(&run_id, &config, &scenarios, jobs.len()))?;
    }
    eprintln!(
        "run {run_id}: {} -> {}",
        estimate.line(),
        run_dir.path().display()
    );
    let progress = (!args.quiet).then(|| super::progress_bar(jobs.len(), "dialogues"));
    let embedded = super::system(async {
        // Dropped at the end of this block, inside the runtime: the last spans are flushed.
        let _trace = args.trace.start("sage-run")?;
        super::serve_run_metrics(args.metrics_addr).await?;
        let stop = stop_on_ctrl_c();
        Ok::<_, anyhow::Error>(
            run_embedded_until(&config, &sops, &jobs, &run_dir, progress, stop).await?,
        )
    })?;
    let stopped = embedded.stopped;
    print_run(embedded, &run_dir)?;
    if stopped {
        eprintln!(
            "stopped (Ctrl-C): the dialogues in flight finished and are stored; continue with: sage run --resume {}",
            terminal_safe(&run_dir.path().display().to_string())
        );
        std::process::exit(130);
    }
    Ok(())
}

impl RunArgs {
    /// The options every suite on the one lifecycle takes; those of the SAGE suite alone
    /// refused.
    fn suite_args(&self) -> anyhow::Result<super::suite::SuiteArgs<'_>> {
        let suite = self.suite.name();
        if self.dialogues.is_some() {
            bail!("--dialogues applies to the SAGE suite, not to --suite {suite}");
        }
        if self.sets_budget() {
            bail!(
                "--max-cost-usd and --max-cost-usd-per-model apply to the SAGE suite, not to --suite {suite}"
            );
        }
        if self.adaptive.adaptive {
            bail!("--adaptive applies to the SAGE suite, not to --suite {suite}");
        }
        Ok(super::suite::SuiteArgs {
            config: self.config.as_deref(),
            flags: sage_core::suite::Flags {
                repeats: self.repeats,
                seed: self.seed,
                max_turns: self.max_turns,
                concurrency: self.concurrency,
                output_dir: self.out.clone(),
            },
            run_id: self.run_id.as_deref(),
            resume: self.resume.as_deref(),
            quiet: self.quiet,
            metrics_addr: self.metrics_addr,
            plan: self.plan,
            trace: &self.trace,
        })
    }

    /// The run's configuration with the flags applied: a new run's (its file, or the default),
    /// or, with `--resume`, the stored run's (only the concurrency and the budgets may change),
    /// with its folder and manifest.
    fn config(&self) -> anyhow::Result<(RunConfig, Option<(RunDir, Manifest)>)> {
        if let Some(dir) = &self.resume {
            let run = RunDir::open(dir)?;
            if let Some(suite) = super::suite::suite_of(&run)
                && suite != Suite::Sage.name()
            {
                bail!(
                    "{}: a {} run; resume it with `sage run --suite {} --resume {}`",
                    dir.display(),
                    terminal_safe(&suite),
                    terminal_safe(&suite),
                    dir.display()
                );
            }
            let manifest = run.read_manifest()?;
            let mut config = manifest.config.clone();
            if let Some(c) = self.concurrency {
                config.concurrency = c;
            }
            self.apply_budgets(&mut config)?;
            return Ok((config, Some((run, manifest))));
        }
        let mut config = match &self.config {
            Some(path) => inputs::read_config(path)?,
            None => RunConfig::default(),
        };
        if let Some(n) = self.dialogues {
            config.dialogues_per_scenario = n;
        }
        if let Some(n) = self.repeats {
            config.repeats = n;
        }
        if let Some(n) = self.seed {
            config.seed = n;
        }
        if let Some(n) = self.concurrency {
            config.concurrency = n;
        }
        if let Some(n) = self.max_turns {
            config.max_turns = n;
        }
        if let Some(out) = &self.out {
            config.output_dir = out.clone();
        }
        self.adaptive.apply(&mut config);
        self.apply_budgets(&mut config)?;
        Ok((config, None))
    }
}

/// A stop signal that turns true on the first Ctrl-C (SIGINT) or SIGTERM: the run starts no
/// dialogue after it and lets those in flight finish. A second one ends the process at once
/// (exit 130; `--resume` drops a line the kill left half-written).
fn stop_on_ctrl_c() -> tokio::sync::watch::Receiver<bool> {
    super::stop_signal(
        || {
            eprintln!(
                "stopping: no new dialogue starts, those in flight finish (Ctrl-C again to quit now)"
            )
        },
        true,
    )
}

/// Prints what an embedded SAGE run did: its warnings, the leaderboard, the budget line and
/// where the results and the report are; an error when a model never answered or the judges
/// never gave a verdict (the run did not measure what it was for).
fn print_run(embedded: sage_actors::runner::Embedded, run_dir: &RunDir) -> anyhow::Result<()> {
    let counts = embedded.counts;
    if counts.user_ended_early > 0 {
        eprintln!(
            "{} dialogues ended by the user before the target action",
            counts.user_ended_early
        );
    }
    if counts.infra_errors > 0 {
        eprintln!(
            "{} dialogues had an infrastructure error (a turn left unscored: the customer, the agent or the judges could not be reached; `infra_error` in dialogues.jsonl)",
            counts.infra_errors
        );
    }
    // The report was folded as the records were written: the file is not read again.
    let mut report = embedded.report;
    let reported = report.write(run_dir)?;
    if let Some(warning) = reported.duplicates.warning(&reported.file) {
        eprintln!("warning: {warning}");
    }
    println!("{}", terminal_safe(&reported.table));
    if let Some(budget) = &reported.budget {
        println!("{}", budget.line(run_dir.path()));
    }
    if let Some(adaptive) = &reported.adaptive {
        print!("{}", terminal_safe(&adaptive.text()));
    }
    println!("results: {}", run_dir.path().display());
    if let Some(html) = &reported.html {
        println!("report: {}", html.display());
    }
    if let Some(line) = reported.explorer_line() {
        println!("{line}");
    }
    if let Some(error) = sage_ports::store::unmeasured_error(&reported.unmeasured()) {
        bail!("{error}");
    }
    Ok(())
}

/// Options of `sage export` (docs/cli.md).
#[derive(Debug, Args)]
pub struct ExportArgs {
    /// The results folder.
    dir: PathBuf,
    /// Output format: examples (openai, sharegpt, sharegpt-jsonl) or preference pairs (dpo:
    /// OpenAI's preference shape, dpo-trl: TRL's).
    #[arg(long, value_enum)]
    format: ExportFormat,
    /// Example formats: keep only agent turns whose Logic (0-100) is at least this [default:
    /// 100: fully correct answers only, whose classification, SOP path and action are all the
    /// reference's]. Below 100, partly wrong answers become training data.
    #[arg(long, value_parser = super::score)]
    min_logic: Option<f64>,
    /// Preference formats: a rejected answer's logic score is below this (0-100) [default: 50].
    #[arg(long, value_parser = super::score)]
    max_rejected_logic: Option<f64>,
    /// Write here instead of standard output (with --split: the training part; the others next
    /// to it, FILE's stem and the part's name: train.jsonl, train.validation.jsonl).
    #[arg(long)]
    out: Option<PathBuf>,
    /// Drop an example (pair) identical to one already written to the same file: same context,
    /// same answer(s), same target route.
    #[arg(long)]
    dedup: bool,
    /// Hold out a fraction of the cases (a case: every model and repeat of one customer) as a
    /// part of its own, NAME=FRACTION (e.g. validation=0.1); repeatable.
    #[arg(long, value_name = "NAME=FRACTION", value_parser = split)]
    split: Vec<export::example::Split>,
    /// At most N examples (pairs) per scenario, the lowest in a stable hash order.
    #[arg(long, value_name = "N", value_parser = cap)]
    max_per_scenario: Option<NonZeroUsize>,
    /// At most N examples (pairs) per target route, the lowest in a stable hash order.
    #[arg(long, value_name = "N", value_parser = cap)]
    max_per_route: Option<NonZeroUsize>,
    /// Only these scenarios (ids); repeatable.
    #[arg(long = "scenario", value_name = "ID")]
    scenarios: Vec<String>,
    /// Only dialogues whose target route is this (as summary.json's `coverage` writes it,
    /// `step1>step2 -> Action`); repeatable.
    #[arg(long = "route", value_name = "KEY")]
    routes: Vec<String>,
    /// Only these adversarial levels; repeatable.
    #[arg(long = "adversarial", value_enum, value_name = "LEVEL")]
    adversarial: Vec<Level>,
    /// Only these models under test; repeatable.
    #[arg(long = "model", value_name = "NAME")]
    models: Vec<String>,
}

/// Export formats.
#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum ExportFormat {
    /// OpenAI chat fine-tuning JSONL.
    Openai,
    /// ShareGPT JSON (one array).
    Sharegpt,
    /// ShareGPT, one conversation per line.
    SharegptJsonl,
    /// Preference pairs, OpenAI's preference fine-tuning JSONL.
    Dpo,
    /// Preference pairs, TRL's conversational JSONL (prompt, chosen, rejected).
    DpoTrl,
    /// A tau2 retail run as tau2-bench's results JSON (`tau2 evaluate-trajs` loads it;
    /// docs/tau2-retail.md).
    Tau2,
}

/// Adversarial levels.
#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum Level {
    /// Cooperative.
    Zero,
    /// Ambiguity, constraints, rational criticism.
    Weak,
    /// Aggression, changing demands, concealment.
    Strong,
}

/// A `--split` value: NAME=FRACTION, the fraction strictly between 0 and 1.
fn split(text: &str) -> Result<export::example::Split, String> {
    let Some((name, fraction)) = text.split_once('=') else {
        return Err(format!(
            "`{text}`: expected NAME=FRACTION, e.g. validation=0.1"
        ));
    };
    match fraction.trim().parse::<f64>() {
        Ok(f) if f > 0.0 && f < 1.0 => Ok(export::example::Split {
            name: name.trim().to_string(),
            fraction: f,
        }),
        _ => Err(format!(
            "`{text}`: expected a fraction strictly between 0 and 1 after `=`, e.g. validation=0.1"
        )),
    }
}

/// A cap: a whole number of examples, at least 1.
fn cap(text: &str) -> Result<NonZeroUsize, String> {
    text.parse::<NonZeroUsize>()
        .map_err(|_| format!("`{text}`: expected a number of examples, at least 1"))
}

/// `sage export`.
pub fn export(args: ExportArgs) -> anyhow::Result<()> {
    if matches!(args.format, ExportFormat::Tau2) {
        return export_tau2(&args);
    }
    let format = match args.format {
        ExportFormat::Tau2 => unreachable!("handled above"),
        ExportFormat::Openai => Format::Openai,
        ExportFormat::Sharegpt => Format::Sharegpt,
        ExportFormat::SharegptJsonl => Format::SharegptJsonl,
        ExportFormat::Dpo => Format::Dpo,
        ExportFormat::DpoTrl => Format::DpoTrl,
    };
    if format.pairs() && args.min_logic.is_some() {
        bail!(
            "--min-logic: applies to the example formats; a preference pair's chosen answer has logic 100 and its rejected one is below --max-rejected-logic"
        );
    }
    if !format.pairs() && args.max_rejected_logic.is_some() {
        bail!("--max-rejected-logic: applies to --format dpo and dpo-trl only");
    }
    let defaults = export::Options::default();
    let options = export::Options {
        format,
        min_logic: args.min_logic.unwrap_or(defaults.min_logic),
        max_rejected_logic: args
            .max_rejected_logic
            .unwrap_or(defaults.max_rejected_logic),
        filter: export::example::Filter {
            scenarios: args.scenarios,
            routes: args.routes,
            adversarial: args
                .adversarial
                .iter()
                .map(|l| match l {
                    Level::Zero => Adversarial::Zero,
                    Level::Weak => Adversarial::Weak,
                    Level::Strong => Adversarial::Strong,
                })
                .collect(),
            models: args.models,
        },
        dedup: args.dedup,
        splits: args.split,
        max_per_scenario: args.max_per_scenario,
        max_per_route: args.max_per_route,
        ..defaults
    };
    let run = RunDir::open(&args.dir)?;
    let manifest = run.read_manifest()?;
    let sops: HashMap<String, Arc<Sop>> = inputs::load_scenarios(&manifest.config)?
        .into_iter()
        .map(|(s, _)| (s.scenario().id.clone(), s))
        .collect();
    let output = match args.out {
        Some(path) => export::Output::File(path),
        None => export::Output::Stdout,
    };
    let stats = export::export(&run, &sops, &options, &output)?;
    let judged = manifest.config.judge_turns.describe();
    for line in export_report(&stats, &options, &judged) {
        eprintln!("{line}");
    }
    if stats.dialogues == 0 {
        bail!("{}: no dialogues to export", args.dir.display());
    }
    Ok(())
}

/// `sage export DIR --format tau2 [--out FILE]`: the run's simulations in tau2's results JSON.
fn export_tau2(args: &ExportArgs) -> anyhow::Result<()> {
    let sage_only = args.min_logic.is_some()
        || args.max_rejected_logic.is_some()
        || args.dedup
        || !args.split.is_empty()
        || args.max_per_scenario.is_some()
        || args.max_per_route.is_some()
        || !args.scenarios.is_empty()
        || !args.routes.is_empty()
        || !args.adversarial.is_empty()
        || !args.models.is_empty();
    if sage_only {
        bail!(
            "--format tau2 writes every simulation of the run; the selection options (--min-logic, --dedup, --split, --scenario, --model, ...) apply to the SAGE suite's formats"
        );
    }
    let run = RunDir::open(&args.dir)?;
    let written = match &args.out {
        Some(path) => {
            let file = std::fs::File::create(path)
                .with_context(|| format!("{}: cannot create", path.display()))?;
            let mut out = std::io::BufWriter::new(file);
            let n = sage_ports::store::tau2::export_results(&run, &mut out)?;
            std::io::Write::flush(&mut out)
                .with_context(|| format!("{}: cannot write", path.display()))?;
            n
        }
        None => {
            let stdout = std::io::stdout();
            let mut out = std::io::BufWriter::new(stdout.lock());
            let n = sage_ports::store::tau2::export_results(&run, &mut out)?;
            std::io::Write::flush(&mut out)?;
            n
        }
    };
    eprintln!("{written} simulations written in tau2's results format");
    Ok(())
}

/// The stats of an export as lines for standard error: what was written, which turns were kept
/// and every reason a turn was left out, each counted apart (`judged`: the run's judged turns,
/// in words).
fn export_report(
    stats: &export::ExportStats,
    options: &export::Options,
    judged: &str,
) -> Vec<String> {
    let what = if options.format.pairs() {
        "preference pairs"
    } else {
        "examples"
    };
    let mut first = format!("{} {what}", stats.written());
    match stats.parts.as_slice() {
        [one] => {
            if let Some(path) = &one.path {
                first.push_str(&format!(" in {}", path.display()));
            }
        }
        parts => {
            let parts: Vec<String> = parts
                .iter()
                .map(|p| {
                    let to = p
                        .path
                        .as_ref()
                        .map_or("standard output".into(), |p| p.display().to_string());
                    format!("{} {} in {to}", p.written, p.name)
                })
                .collect();
            first.push_str(&format!(": {}", parts.join(", ")));
        }
    }
    let mut out = vec![first];
    if !options.format.pairs() {
        out.push(if options.min_logic >= export::example::FULLY_CORRECT {
            "kept: turns with Logic 100 (fully correct: classification, SOP path and action all match the reference); --min-logic N keeps answers down to Logic N".to_string()
        } else {
            format!(
                "kept: turns with Logic {} or more (--min-logic {}): answers below 100 are partly wrong",
                options.min_logic, options.min_logic
            )
        });
    }
    let l = &stats.left;
    let mut left = vec![format!(
        "{} not judged (judge_turns: {judged})",
        l.not_judged
    )];
    if !options.format.pairs() {
        left.push(format!("{} format errors", l.format_errors));
    }
    left.push(format!("{} infrastructure errors", l.infra_errors));
    if !options.format.pairs() {
        left.push(format!(
            "{} below --min-logic {}",
            l.below_min_logic, options.min_logic
        ));
    }
    if l.no_text > 0 {
        left.push(format!("{} without their answer's text", l.no_text));
    }
    if l.scenario_not_loaded > 0 {
        left.push(format!(
            "{} of scenarios the run no longer loads",
            l.scenario_not_loaded
        ));
    }
    let f = &options.filter;
    for (given, n, name) in [
        (
            !f.scenarios.is_empty(),
            stats.filtered.scenario,
            "--scenario",
        ),
        (!f.models.is_empty(), stats.filtered.model, "--model"),
        (
            !f.adversarial.is_empty(),
            stats.filtered.adversarial,
            "--adversarial",
        ),
        (!f.routes.is_empty(), stats.filtered.route, "--route"),
    ] {
        if given {
            left.push(format!("{n} by {name}"));
        }
    }
    let unit = if options.format.pairs() {
        "pairs"
    } else {
        "turns"
    };
    if let Some(d) = &stats.dpo {
        let below = options.max_rejected_logic;
        out.push(format!(
            "{} agent turns can be chosen (logic 100), {} rejected (below --max-rejected-logic {below}), {} neither",
            d.chosen, d.rejected, d.neither,
        ));
        let mismatched = if d.mismatched > 0 {
            format!(
                " ({} of them left out: their records no longer match)",
                d.mismatched
            )
        } else {
            String::new()
        };
        out.push(format!(
            "yield: {} of {} contexts had a pair{mismatched} (a context: a case at a turn, the dialogue before it the same, with scored answers); without one: {} answered by one model only (the models' dialogues of the case went apart before that turn, or ended), {} with no answer of logic 100, {} with none below --max-rejected-logic {below}, {} whose chosen and rejected answers are all one model's",
            d.paired, d.contexts, d.one_model, d.no_chosen, d.no_rejected, d.same_model,
        ));
    }
    if options.dedup {
        left.push(format!("{} duplicate {unit} (--dedup)", stats.duplicates));
    }
    if let Some(n) = options.max_per_scenario {
        left.push(format!(
            "{} {unit} over --max-per-scenario {n}",
            stats.over_scenario_cap
        ));
    }
    if let Some(n) = options.max_per_route {
        left.push(format!(
            "{} {unit} over --max-per-route {n}",
            stats.over_route_cap
        ));
    }
    out.push(format!(
        "{} dialogues, {} agent turns; left out: {}",
        stats.dialogues,
        stats.turns,
        left.join(", ")
    ));
    out
}
