//! `sage run --suite support-desk`: wiring only.

use anyhow::Context;
use sage_actors::desk::run_embedded;
use sage_core::plan::desk::DeskConfig;
use sage_core::scenario::desk::Desk;
use sage_ports::store::RunDir;
use sage_ports::store::desk::{DESK_RECORDS, DeskManifest};
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
}

/// The texts of a store folder's store.yaml and cases.yaml, or of the bundled Northline store.
pub fn read_store(store: &str) -> anyhow::Result<(String, String)> {
    if store == "bundled" {
        let (s, c) = sage_core::scenario::bundled::NORTHLINE;
        return Ok((s.to_string(), c.to_string()));
    }
    let dir = Path::new(store);
    let missing: Vec<&str> = ["store.yaml", "cases.yaml"]
        .into_iter()
        .filter(|f| !dir.join(f).is_file())
        .collect();
    if !missing.is_empty() {
        anyhow::bail!(
            "{store}: not a support-desk store: a store folder holds store.yaml and cases.yaml (docs/support-desk.md), and {} missing{}",
            missing.join(" and "),
            if dir.is_dir() {
                "; to validate scenario files, name the files (e.g. scenarios/*.yaml)"
            } else {
                ""
            }
        );
    }
    let read = |name: &str| {
        let path = dir.join(name);
        std::fs::read_to_string(&path).with_context(|| format!("{}", path.display()))
    };
    Ok((read("store.yaml")?, read("cases.yaml")?))
}

/// Loads a store from its texts; `store` (a folder or `bundled`) names the files in errors.
pub fn parse_store(store: &str, texts: (&str, &str)) -> anyhow::Result<Desk> {
    let dir = if store == "bundled" {
        Path::new("northline")
    } else {
        Path::new(store)
    };
    let files = (
        dir.join("store.yaml").display().to_string(),
        dir.join("cases.yaml").display().to_string(),
    );
    Ok(Desk::from_yaml(texts.0, texts.1, (&files.0, &files.1))?)
}

/// Loads a store folder (store.yaml + cases.yaml), or the bundled Northline store.
pub fn load_desk(store: &str) -> anyhow::Result<Desk> {
    let (s, c) = read_store(store)?;
    parse_store(store, (&s, &c))
}

/// Reads a desk configuration file, or the default one.
pub fn read_config(path: Option<&Path>) -> anyhow::Result<DeskConfig> {
    match path {
        Some(path) => {
            let text =
                std::fs::read_to_string(path).with_context(|| format!("{}", path.display()))?;
            Ok(DeskConfig::from_yaml(&text, &path.display().to_string())?)
        }
        None => Ok(DeskConfig::default()),
    }
}

/// `sage run --suite support-desk`.
pub fn run(args: DeskArgs<'_>) -> anyhow::Result<()> {
    super::check_run_id_flag(args.run_id)?;
    let (config, run, run_id, (store, cases)) = match args.resume {
        Some(dir) => {
            let run = RunDir::open(dir)?;
            let manifest: DeskManifest = run.read_json("manifest.json").with_context(|| {
                format!(
                    "{}: not a support-desk run folder (resume a SAGE run without --suite)",
                    dir.display()
                )
            })?;
            let texts = store_as_it_was(&manifest, dir)
                .map_err(|e| anyhow::anyhow!("{e:#}; a run resumes with the same store"))?;
            (manifest.config, Some(run), manifest.run_id, texts)
        }
        None => {
            let mut config = read_config(args.config)?;
            if let Some(n) = args.repeats {
                config.repeats = n;
            }
            if let Some(n) = args.seed {
                config.seed = n;
            }
            if let Some(n) = args.max_turns {
                config.max_turns = n;
            }
            if let Some(out) = args.out {
                config.output_dir = out.to_path_buf();
            }
            let texts = read_store(&config.store)?;
            let run_id = args
                .run_id
                .map(str::to_string)
                .unwrap_or_else(|| sage_ports::store::new_run_id(Some("desk"), config.seed));
            (config, None, run_id, texts)
        }
    };
    let mut config = config;
    if let Some(n) = args.concurrency {
        config.concurrency = n;
    }
    config.check("command line")?;
    let desk = parse_store(&config.store, (&store, &cases))?;
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
    let mut report = sage_ports::store::desk::DeskFold::default();
    let mut page = sage_ports::store::desk::DeskPage::new(&run);
    let mut stored = sage_core::plan::JobSet::of(&jobs, |j| &j.dialogue_id);
    run.resume_records(DESK_RECORDS, &mut stored, &run_id, |at, r| {
        report.add(&r);
        page.add(&r, at);
    })?;
    let done = stored.done();
    let todo: Vec<_> = jobs
        .into_iter()
        .filter(|j| !stored.is_done(&j.dialogue_id))
        .collect();
    eprintln!(
        "run {run_id}: {} cases x {} models x {} runs = {total} conversations ({} to play) -> {}",
        desk.cases.len(),
        config.agents.len(),
        config.repeats,
        todo.len(),
        run.path().display()
    );
    let progress = (!args.quiet).then(|| {
        let p = indicatif::ProgressBar::new(total as u64);
        p.set_position(done as u64);
        p
    });
    let mut writer = run.jsonl_writer(DESK_RECORDS)?;
    let mut failed = None;
    super::system(async {
        super::serve_run_metrics(args.metrics_addr).await?;
        run_embedded(&config, desk, todo, |record| {
            match writer.append(&record) {
                Ok(at) => page.add(&record, at),
                Err(e) => {
                    failed.get_or_insert(e);
                }
            }
            report.add(&record);
            if let Some(p) = &progress {
                p.inc(1);
            }
        })
        .await?;
        Ok::<_, anyhow::Error>(())
    })?;
    if let Some(e) = failed {
        return Err(e.into());
    }
    if let Some(p) = &progress {
        p.finish_and_clear();
    }
    // Folded as the records were written: the file is not read again.
    let report = report.write(&run)?;
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
    let (path, embedded) = page.write(&run, None)?;
    println!("report: {}", path.display());
    if embedded.partial() {
        println!("{}", embedded.line("conversation"));
    }
    Ok(())
}

/// The store texts of the run of `manifest` (in folder `dir`), checked to be the ones it was
/// run with.
fn store_as_it_was(manifest: &DeskManifest, dir: &Path) -> anyhow::Result<(String, String)> {
    let texts = read_store(&manifest.config.store)?;
    if DeskManifest::store_hashes((&texts.0, &texts.1)) != manifest.store_sha256 {
        anyhow::bail!(
            "store `{}` changed since run {} started (its SHA-256 differs from {})",
            manifest.config.store,
            manifest.run_id,
            dir.join("manifest.json").display()
        );
    }
    Ok(texts)
}

/// What `sage report` checks a support-desk folder's records against: the run's id, and its
/// jobs planned again from its manifest and its store as it was. When they cannot be (the
/// store changed or is gone), the records are checked for the run id only, with a warning.
pub fn run_jobs(run: &RunDir) -> anyhow::Result<sage_ports::store::RunJobs> {
    let manifest: DeskManifest = run.read_json("manifest.json")?;
    let planned = store_as_it_was(&manifest, run.path())
        .and_then(|texts| parse_store(&manifest.config.store, (&texts.0, &texts.1)))
        .map(|desk| {
            let jobs = sage_core::plan::desk::jobs(&manifest.config, &manifest.run_id, &desk);
            sage_core::plan::JobSet::of(&jobs, |j| &j.dialogue_id)
        });
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
