//! `sage run --suite support-desk`: wiring only.

use anyhow::Context;
use sage_actors::desk::run_stored;
use sage_core::estimate::desk::DeskEstimate;
use sage_ports::store::desk::{DeskManifest, Stored};
use sage_ports::store::{RunDir, inputs};
use sage_report::transcript::terminal_safe;
use std::path::Path;

/// The options of `sage run` that apply to the support desk.
pub struct DeskArgs<'a> {
    /// A desk configuration.
    pub config: Option<&'a Path>,
    /// Runs of each case.
    pub repeats: Option<u32>,
    /// Run seed.
    pub seed: Option<u64>,
    /// Conversations in flight.
    pub concurrency: Option<usize>,
    /// Most customer turns.
    pub max_turns: Option<u32>,
    /// Results folder.
    pub out: Option<&'a Path>,
    /// Run id.
    pub run_id: Option<&'a str>,
    /// Continue this run folder (its configuration and store; finished conversations kept).
    pub resume: Option<&'a Path>,
    /// No progress bar.
    pub quiet: bool,
    /// Serve /metrics here while the run lasts.
    pub metrics_addr: Option<std::net::SocketAddr>,
    /// `--plan`: print what the run would do instead.
    pub plan: super::PlanArgs,
}

/// `sage run --suite support-desk`.
pub fn run(args: DeskArgs<'_>) -> anyhow::Result<()> {
    super::check_run_id_flag(args.run_id)?;
    // Everything is checked before a results folder is created or claimed.
    let Start {
        mut config,
        run,
        run_id,
        texts: (store, cases),
    } = match args.resume {
        Some(dir) => resumed(dir)?,
        None => {
            let config = args.config()?;
            let texts = inputs::read_store(&config.store)?;
            let run_id = args
                .run_id
                .map(str::to_string)
                .unwrap_or_else(|| sage_ports::store::new_run_id(Some("desk"), config.seed));
            Start {
                config,
                run: None,
                run_id,
                texts,
            }
        }
    };
    if let Some(n) = args.concurrency {
        config.concurrency = n;
    }
    config.check("command line")?;
    let desk = inputs::parse_store(&config.store, (&store, &cases))?;
    let estimate = DeskEstimate::new(&config, &desk);
    if args.plan.plan {
        return args
            .plan
            .print(|| estimate.text(), || serde_json::to_value(&estimate));
    }
    super::set_up_models(&config.models)?;
    let run = match run {
        Some(run) => run.claim()?,
        None => RunDir::create(&config.output_dir, &run_id)?,
    };
    let jobs = sage_core::plan::desk::jobs(&config, &run_id, &desk);
    let total = jobs.len();
    if args.resume.is_none() {
        let manifest = DeskManifest::new(&run_id, &config, (&store, &cases), total);
        run.write_json("manifest.json", &manifest)?;
    }
    // Conversations already stored are kept (a resumed run plays only the rest), read once:
    // checked to be of these jobs and folded into the run's report.
    let mut stored = Stored::read(&run, &jobs, &run_id)?;
    let todo: Vec<_> = jobs
        .into_iter()
        .filter(|j| !stored.jobs.is_done(&j.dialogue_id))
        .collect();
    eprintln!(
        "run {run_id}: {} ({} to play) -> {}",
        estimate.line(),
        todo.len(),
        run.path().display()
    );
    let progress = (!args.quiet).then(|| {
        let p = super::progress_bar(total, "conversations");
        p.set_position(stored.jobs.done() as u64);
        p
    });
    super::system(async {
        super::serve_run_metrics(args.metrics_addr).await?;
        run_stored(&config, desk, todo, &run, &mut stored, progress.as_ref()).await?;
        Ok::<_, anyhow::Error>(())
    })?;
    if let Some(p) = &progress {
        p.finish_and_clear();
    }
    print_run(stored.report, stored.page, &run)
}

impl DeskArgs<'_> {
    /// A new run's configuration: its file (or the default) with the flags applied.
    fn config(&self) -> anyhow::Result<sage_core::plan::desk::DeskConfig> {
        let mut config = inputs::read_desk_config(self.config)?;
        if let Some(n) = self.repeats {
            config.repeats = n;
        }
        if let Some(n) = self.seed {
            config.seed = n;
        }
        if let Some(n) = self.max_turns {
            config.max_turns = n;
        }
        if let Some(out) = self.out {
            config.output_dir = out.to_path_buf();
        }
        Ok(config)
    }
}

/// What a support-desk run starts from.
struct Start {
    /// Its configuration.
    config: sage_core::plan::desk::DeskConfig,
    /// Its folder, when it is resumed (a new run's is created once everything is checked).
    run: Option<RunDir>,
    /// Its id.
    run_id: String,
    /// The texts of its store.yaml and cases.yaml.
    texts: (String, String),
}

/// A stored support-desk run to resume, its store texts checked to be the ones it ran with.
fn resumed(dir: &Path) -> anyhow::Result<Start> {
    let run = RunDir::open(dir)?;
    let manifest: DeskManifest = run.read_json("manifest.json").with_context(|| {
        format!(
            "{}: not a support-desk run folder (resume a SAGE run without --suite)",
            dir.display()
        )
    })?;
    let texts = inputs::store_as_it_was(&manifest, dir)
        .map_err(|e| anyhow::anyhow!("{e}; a run resumes with the same store"))?;
    Ok(Start {
        config: manifest.config,
        run: Some(run),
        run_id: manifest.run_id,
        texts,
    })
}

/// Prints what an embedded support-desk run did: its warnings, the metric table and where the
/// results and the report (written here) are.
fn print_run(
    report: sage_ports::store::desk::DeskFold,
    mut page: sage_ports::store::desk::DeskPage,
    run: &RunDir,
) -> anyhow::Result<()> {
    // Folded as the records were written: the file is not read again.
    let report = report.write(run)?;
    if report.infra_errors > 0 {
        eprintln!(
            "{} conversations stopped early by an infrastructure error (a model call failed after its retries, or a role could not be reached; see `infra_error` in desk.jsonl); they are left out of the metrics",
            report.infra_errors
        );
    }
    if report.truncated_turns > 0 {
        eprintln!(
            "{} agent turns were cut off at the model's token limit (finish_reason `length`; `truncated_turns` in desk.jsonl): their tool calls or answers may be cut short; raise the model's `max_tokens`",
            report.truncated_turns
        );
    }
    for warning in report.reported.warnings() {
        eprintln!("warning: {warning}");
    }
    println!("{}", terminal_safe(&report.reported.table));
    println!("results: {}", run.path().display());
    // Folded as the records were written too: desk.jsonl is not read again.
    let (path, embedded) = page.write(run, None)?;
    println!("report: {}", path.display());
    if embedded.partial() {
        println!("{}", embedded.line("conversation"));
    }
    Ok(())
}

/// What `sage report` checks a support-desk folder's records against: the run's id, and its
/// jobs planned again from its manifest and its store as it was. When they cannot be (the
/// store changed or is gone), the records are checked for the run id only, with a warning.
pub fn run_jobs(run: &RunDir) -> anyhow::Result<sage_ports::store::RunJobs> {
    let manifest: DeskManifest = run.read_json("manifest.json")?;
    let planned = inputs::stored_desk_jobs(&manifest, run.path());
    Ok(super::run_jobs_or_warn(&manifest.run_id, planned))
}

/// Writes the HTML report of the support-desk run in `run` (the store's
/// [`sage_ports::store::desk::write_desk_html`]) to `out`, by default report.html in the folder, and
/// prints its path; with `jobs`, the records not of the run are left out.
pub fn write_desk_html(
    run: &RunDir,
    out: Option<&Path>,
    jobs: Option<&sage_ports::store::RunJobs>,
) -> anyhow::Result<std::path::PathBuf> {
    let (path, embedded) = sage_ports::store::desk::write_desk_html(run, out, jobs)?;
    println!("report: {}", path.display());
    if embedded.partial() {
        println!("{}", embedded.line("conversation"));
    }
    Ok(path)
}
