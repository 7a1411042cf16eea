//! `sage run`, `sage report`, `sage export`: wiring only.

use crate::actors::runner::run_embedded;
use crate::plan::{self, RunConfig};
use crate::scenario::bundled::BUNDLED;
use crate::sop::{self, Sop};
use crate::store::export::{self, Format};
use crate::store::{Manifest, RunDir};
use anyhow::{Context, bail};
use clap::{Args, ValueEnum};
use std::collections::HashMap;
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
    /// Cases per scenario (overrides the configuration).
    #[arg(long)]
    dialogues: Option<usize>,
    /// Runs of each case (medians across repeats are reported).
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
    /// Serve /metrics, /healthz and /readyz here while the run lasts (port 0: any free port,
    /// printed); none by default.
    #[arg(long, env = "SAGE_RUN_METRICS_ADDR")]
    metrics_addr: Option<std::net::SocketAddr>,
    /// Which suite: the SAGE benchmark (SOP scenarios) or the support desk (a store with tools;
    /// docs/support-desk.md).
    #[arg(long, value_enum, default_value = "sage")]
    suite: Suite,
}

/// The suites `sage run` runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Suite {
    /// SOP scenarios scored by the SAGE paper's formulas.
    Sage,
    /// A store's support desk with tools (SupportAgentBench methodology).
    SupportDesk,
}

/// Loads the scenarios a configuration names (`bundled`, or files), each with its YAML text.
pub fn load_scenarios(config: &RunConfig) -> anyhow::Result<Vec<(Arc<Sop>, String)>> {
    Ok(load_named_scenarios(config)?
        .into_iter()
        .map(|(sop, _, text)| (sop, text))
        .collect())
}

/// Loads the scenarios a configuration names, each with its name (file or bundled name) and
/// its YAML text.
pub fn load_named_scenarios(config: &RunConfig) -> anyhow::Result<Vec<(Arc<Sop>, String, String)>> {
    let mut out = Vec::new();
    for entry in &config.scenarios {
        if entry == "bundled" {
            for (name, text) in BUNDLED {
                out.push((
                    Arc::new(sop::from_yaml(text, name)?),
                    name.to_string(),
                    text.to_string(),
                ));
            }
        } else {
            let text =
                std::fs::read_to_string(entry).with_context(|| format!("scenario {entry}"))?;
            out.push((Arc::new(sop::from_yaml(&text, entry)?), entry.clone(), text));
        }
    }
    // One scenario twice would play (and count) every one of its dialogue ids twice.
    let given_as = |name: &str| {
        if BUNDLED.iter().any(|(b, _)| *b == name) && !config.scenarios.iter().any(|s| s == name) {
            format!("`bundled` ({name})")
        } else {
            format!("`{name}`")
        }
    };
    for (i, (sop, name, _)) in out.iter().enumerate() {
        let id = &sop.scenario().id;
        if let Some((_, first, _)) = out[..i].iter().find(|(s, _, _)| &s.scenario().id == id) {
            bail!(
                "scenarios: {} is scenario `{id}`, which {} already gives; expected each scenario once",
                given_as(name),
                given_as(first)
            );
        }
    }
    Ok(out)
}

/// Reads a run configuration file (docs/run-config.md).
pub fn read_config(path: &Path) -> anyhow::Result<RunConfig> {
    let text = std::fs::read_to_string(path).with_context(|| format!("{}", path.display()))?;
    Ok(RunConfig::from_yaml(&text, &path.display().to_string())?)
}

/// Checks a `--run-id` flag (it names a folder and, distributed, a message subject).
pub fn check_run_id_flag(run_id: Option<&str>) -> anyhow::Result<()> {
    if let Some(id) = run_id {
        crate::protocol::id::check_run_id(id).map_err(|e| anyhow::anyhow!("--run-id: {e}"))?;
    }
    Ok(())
}

/// `sage run`.
pub fn run(args: RunArgs) -> anyhow::Result<()> {
    check_run_id_flag(args.run_id.as_deref())?;
    if args.suite == Suite::SupportDesk {
        if args.dialogues.is_some() {
            bail!("--dialogues applies to the SAGE suite, not to --suite support-desk");
        }
        return super::desk::run(super::desk::DeskArgs {
            config: args.config.as_deref(),
            repeats: args.repeats,
            seed: args.seed,
            concurrency: args.concurrency,
            max_turns: args.max_turns,
            out: args.out.as_deref(),
            run_id: args.run_id.as_deref(),
            resume: args.resume.as_deref(),
            quiet: args.quiet,
            metrics_addr: args.metrics_addr,
        });
    }
    // Everything is checked before a results folder is created or claimed.
    let (config, resume) = match &args.resume {
        Some(dir) => {
            let run = RunDir::open(dir)?;
            if run.is_desk() {
                bail!(
                    "{}: a support-desk run; resume it with `sage run --suite support-desk --resume {}`",
                    dir.display(),
                    dir.display()
                );
            }
            let manifest = run.read_manifest()?;
            let mut config = manifest.config.clone();
            if let Some(c) = args.concurrency {
                config.concurrency = c;
            }
            (config, Some((run, manifest)))
        }
        None => {
            let mut config = match &args.config {
                Some(path) => read_config(path)?,
                None => RunConfig::default(),
            };
            if let Some(n) = args.dialogues {
                config.dialogues_per_scenario = n;
            }
            if let Some(n) = args.repeats {
                config.repeats = n;
            }
            if let Some(n) = args.seed {
                config.seed = n;
            }
            if let Some(n) = args.concurrency {
                config.concurrency = n;
            }
            if let Some(n) = args.max_turns {
                config.max_turns = n;
            }
            if let Some(out) = &args.out {
                config.output_dir = out.clone();
            }
            (config, None)
        }
    };
    config.check("command line")?;
    let scenarios = load_scenarios(&config)?;
    let sops: Vec<Arc<Sop>> = scenarios.iter().map(|(s, _)| s.clone()).collect();
    config.check_jobs(&sops, "command line")?;
    let (run_dir, run_id) = match resume {
        Some((run, manifest)) => {
            // The jobs are derived again from the scenarios: they must be the ones the run
            // started with.
            if Manifest::scenario_hashes(&scenarios) != manifest.scenarios {
                bail!(
                    "{}: the scenarios changed since the run started (manifest.json records their SHA-256); resuming would mix two versions. Start a new run.",
                    run.path().display()
                );
            }
            // The manifest's id (checked when read), whatever the folder is called now.
            (run.claim()?, manifest.run_id)
        }
        None => {
            let run_id = args
                .run_id
                .clone()
                .unwrap_or_else(|| crate::store::new_run_id(None, config.seed));
            (RunDir::create(&config.output_dir, &run_id)?, run_id)
        }
    };
    let jobs = plan::Plan::new(&config, &run_id, &sops);
    if args.resume.is_none() {
        run_dir.write_manifest(&Manifest::new(&run_id, &config, &scenarios, jobs.len()))?;
    }
    let progress = (!args.quiet).then(|| {
        let p = indicatif::ProgressBar::new(jobs.len() as u64);
        p.set_style(
            indicatif::ProgressStyle::with_template(
                "{spinner} {bar:40} {pos}/{len} dialogues {elapsed_precise} eta {eta}",
            )
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
        );
        p
    });
    eprintln!(
        "run {run_id}: {} dialogues -> {}",
        jobs.len(),
        run_dir.path().display()
    );
    let embedded = super::system(async {
        super::serve_run_metrics(args.metrics_addr).await?;
        Ok::<_, anyhow::Error>(run_embedded(&config, &sops, &jobs, &run_dir, progress).await?)
    })?;
    let counts = embedded.counts;
    if counts.user_ended_early > 0 || counts.infra_errors > 0 {
        eprintln!(
            "{} dialogues ended by the user before the target action; {} ended by infrastructure errors",
            counts.user_ended_early, counts.infra_errors
        );
    }
    // The report was folded as the records were written: the file is not read again.
    let reported = embedded.report.write(&run_dir)?;
    if let Some(warning) = reported.duplicates.warning(&reported.file) {
        eprintln!("warning: {warning}");
    }
    println!("{}", reported.table);
    println!("results: {}", run_dir.path().display());
    // A model that never answered was not measured: the run did not do its job for it.
    if !reported.unreached.is_empty() {
        let models: Vec<String> = reported.unreached.iter().map(|u| u.to_string()).collect();
        bail!(
            "{}; its scores are empty (check the endpoint and run again)",
            models.join("; ")
        );
    }
    Ok(())
}

/// Export formats.
#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum ExportFormat {
    /// OpenAI chat fine-tuning JSONL.
    Openai,
    /// ShareGPT JSON.
    Sharegpt,
}

/// `sage export`.
pub fn export(
    dir: &Path,
    format: ExportFormat,
    min_logic: f64,
    out: Option<&Path>,
) -> anyhow::Result<()> {
    let run = RunDir::open(dir)?;
    let manifest = run.read_manifest()?;
    let sops: HashMap<String, Arc<Sop>> = load_scenarios(&manifest.config)?
        .into_iter()
        .map(|(s, _)| (s.scenario().id.clone(), s))
        .collect();
    let records = run.read_dialogues()?;
    let format = match format {
        ExportFormat::Openai => Format::Openai,
        ExportFormat::Sharegpt => Format::Sharegpt,
    };
    let (text, stats) = export::export(&records, &sops, format, min_logic);
    match out {
        Some(path) => std::fs::write(path, text).with_context(|| format!("{}", path.display()))?,
        None => print!("{text}"),
    }
    eprintln!(
        "{} examples; {} agent turns left out (below --min-logic {min_logic}, format or infrastructure errors)",
        stats.examples, stats.skipped
    );
    if stats.examples == 0 && records.is_empty() {
        bail!("{}: no dialogues to export", dir.display());
    }
    Ok(())
}
