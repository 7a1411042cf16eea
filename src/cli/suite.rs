//! `sage run --suite NAME` for a suite on the one lifecycle ([`sage_actors::suite`]): flags ->
//! configuration -> plan or run -> scores. Wiring only; nothing here names a suite.

use anyhow::Context;
use sage_actors::cluster::hosted::Hosted;
use sage_actors::suite::{Play, Results, Stored, Written, read_for_report, run_stored};
use sage_core::plan::JobSet;
use sage_core::suite::Flags;
use sage_ports::store::suite::{Page, SuiteManifest};
use sage_ports::store::{RunDir, inputs};
use sage_report::transcript::terminal_safe;
use std::path::Path;

/// The options of `sage run` every suite takes.
pub struct SuiteArgs<'a> {
    /// A configuration file (the suite's default without one).
    pub config: Option<&'a Path>,
    /// The flags that override the configuration.
    pub flags: Flags,
    /// Run id.
    pub run_id: Option<&'a str>,
    /// Continue this run folder (its configuration; finished conversations kept).
    pub resume: Option<&'a Path>,
    /// No progress bar.
    pub quiet: bool,
    /// Serve /metrics here while the run lasts.
    pub metrics_addr: Option<std::net::SocketAddr>,
    /// `--plan`: print what the run would do instead.
    pub plan: super::PlanArgs,
    /// Span export.
    pub trace: &'a super::TraceArgs,
}

/// `sage run --suite NAME` for the suite `S`.
pub fn run<S: Play>(args: SuiteArgs<'_>) -> anyhow::Result<()> {
    super::check_run_id_flag(args.run_id)?;
    // Everything is checked before a results folder is created or claimed.
    let (config, run, run_id) = match args.resume {
        Some(dir) => {
            let run = RunDir::open(dir)?;
            let manifest: SuiteManifest<S::Config> = run
                .read_json("manifest.json")
                .with_context(|| format!("{}: not a {} run folder", dir.display(), S::NAME))?;
            if manifest.suite != S::NAME {
                anyhow::bail!(
                    "{}: a {} run; resume it with `sage run --suite {} --resume {}`",
                    dir.display(),
                    terminal_safe(&manifest.suite),
                    terminal_safe(&manifest.suite),
                    dir.display()
                );
            }
            let mut config = manifest.config.clone();
            // A resumed run keeps its configuration; only the conversations in flight change.
            S::apply(
                &mut config,
                &Flags {
                    concurrency: args.flags.concurrency,
                    ..Flags::default()
                },
            );
            let run_id = manifest.run_id.clone();
            (config, Some((run, manifest)), run_id)
        }
        None => {
            let mut config = inputs::read_suite_config::<S>(args.config)?;
            S::apply(&mut config, &args.flags);
            let run_id = args
                .run_id
                .map(str::to_string)
                .unwrap_or_else(|| sage_ports::store::new_run_id(Some(S::NAME), S::seed(&config)));
            (config, None, run_id)
        }
    };
    S::check(&config, "command line")?;
    let inputs = match &run {
        Some((run, manifest)) => inputs_as_they_were::<S>(run, manifest)
            .map_err(|e| anyhow::anyhow!("{e}; a run resumes with the same files"))?,
        None => S::inputs(&config).map_err(anyhow::Error::msg)?,
    };
    let world = S::world(&config, &inputs).map_err(anyhow::Error::msg)?;
    let jobs = S::jobs(&config, &run_id, &world);
    let (plan_text, plan_json) = S::plan(&config, &world, &jobs);
    if args.plan.plan {
        return args.plan.print(|| plan_text, || Ok(plan_json));
    }
    super::set_up_models(S::models(&config))?;
    let run = match run {
        Some((run, _)) => run.claim()?,
        None => RunDir::create(S::output_dir(&config), &run_id)?,
    };
    let total = jobs.len();
    if args.resume.is_none() {
        run.write_json(
            "manifest.json",
            &SuiteManifest::new::<S>(&run_id, &config, &S::input_texts(&inputs), total),
        )?;
    }
    let mut stored = Stored::<S>::read(&run, &jobs, &run_id)?;
    let todo: Vec<_> = jobs
        .into_iter()
        .filter(|j| !stored.jobs.is_done(S::job_id(j)))
        .collect();
    eprintln!(
        "run {run_id}: {} ({} to play) -> {}",
        plan_text.lines().next().unwrap_or(S::NAME),
        todo.len(),
        run.path().display()
    );
    let progress = (!args.quiet).then(|| {
        let p = super::progress_bar(total, "conversations");
        p.set_position(stored.jobs.done() as u64);
        p
    });
    super::system(async {
        let _trace = args.trace.start("sage-run")?;
        super::serve_run_metrics(args.metrics_addr).await?;
        run_stored::<S>(&config, world, todo, &run, &mut stored, progress.as_ref()).await?;
        Ok::<_, anyhow::Error>(())
    })?;
    if let Some(p) = &progress {
        p.finish_and_clear();
    }
    for warning in S::warnings(&stored.results.fold) {
        eprintln!("warning: {warning}");
    }
    let written = stored.results.write(&run)?;
    println!("{}", terminal_safe(&written.table));
    println!("results: {}", run.path().display());
    print_report(&written);
    Ok(())
}

/// Where the HTML report is, and what its explorer leaves out.
fn print_report(written: &Written) {
    if let Some((path, embedded)) = &written.report {
        println!("report: {}", path.display());
        if embedded.partial() {
            println!("{}", embedded.line("conversation"));
        }
    }
}

/// [`submission`] of one suite.
pub type Submission =
    fn((Option<&Path>, Option<&str>), super::PlanArgs) -> anyhow::Result<Option<(Hosted, String)>>;

/// What `sage sweep --suite NAME` submits for the suite `S` (`asked`: the configuration file
/// and the run id given): the run's spec and the plan's line; `None` when `--plan` printed the
/// plan instead. Everything is checked before anything is submitted.
pub fn submission<S: Play>(
    (config, run_id): (Option<&Path>, Option<&str>),
    plan: super::PlanArgs,
) -> anyhow::Result<Option<(Hosted, String)>> {
    super::check_run_id_flag(run_id)?;
    let config = inputs::read_suite_config::<S>(config)?;
    S::check(&config, "sweep")?;
    let inputs = S::inputs(&config).map_err(anyhow::Error::msg)?;
    let world = S::world(&config, &inputs).map_err(anyhow::Error::msg)?;
    let run_id = run_id
        .map(str::to_string)
        .unwrap_or_else(|| sage_ports::store::new_run_id(Some(S::NAME), S::seed(&config)));
    let jobs = S::jobs(&config, &run_id, &world);
    let (text, json) = S::plan(&config, &world, &jobs);
    if plan.plan {
        plan.print(|| text, || Ok(json))?;
        return Ok(None);
    }
    let line = text.lines().next().unwrap_or_default().to_string();
    Ok(Some((
        Hosted::new::<S>(&run_id, &config, inputs, jobs.len()),
        line,
    )))
}

/// `sage report DIR [--html --out FILE]` of a run of `S`: its scores and page rebuilt from its
/// records (read once, folded as read), the table printed. Each record is checked to be of
/// the run's jobs, planned again from its manifest and the files it was built from; when they
/// cannot be (the files changed or are gone), for the run id only, with a warning. The scores
/// and the page are written into the folder (the caller has claimed it); with `out`, the page
/// alone is written there and nothing into the folder.
pub fn report<S: Play>(run: &RunDir, out: Option<&Path>) -> anyhow::Result<()> {
    let manifest: SuiteManifest<S::Config> = run.read_json("manifest.json")?;
    let jobs = super::run_jobs_or_warn(&manifest.run_id, planned::<S>(run, &manifest));
    let mut results = Results::<S>::new(run);
    let (folded, screened) = read_for_report::<S>(run, &jobs, |r, at| results.add(r, at))?;
    if folded == 0 {
        anyhow::bail!(
            "{}: no conversation stored in {} (the run has not finished one yet, or its records are gone); nothing to report",
            run.path().display(),
            S::RECORDS
        );
    }
    let file = run.path().join(S::RECORDS);
    for warning in (screened.warnings(&file).into_iter()).chain(S::warnings(&results.fold)) {
        eprintln!("warning: {}", terminal_safe(&warning));
    }
    let written = match out {
        Some(out) => Written {
            table: S::summary(&results.fold).1,
            report: results.page.write(run, Some(out))?,
        },
        None => results.write(run)?,
    };
    println!("{}", terminal_safe(&written.table));
    print_report(&written);
    Ok(())
}

/// The inputs of the stored run of `manifest` (in `run`), read again and checked to be the
/// texts it was built from (why not, naming its manifest.json).
fn inputs_as_they_were<S: Play>(
    run: &RunDir,
    manifest: &SuiteManifest<S::Config>,
) -> Result<S::Inputs, String> {
    let inputs = S::inputs(&manifest.config)?;
    if !manifest.same_inputs(&S::input_texts(&inputs)) {
        return Err(format!(
            "the files run {} was built from changed since it started (their SHA-256 differs from {})",
            manifest.run_id,
            run.path().join("manifest.json").display()
        ));
    }
    Ok(inputs)
}

/// The jobs of the stored run of `manifest` (in `run`), planned again from the files it was
/// built from as they were (why not, when they changed or cannot be read).
fn planned<S: Play>(run: &RunDir, manifest: &SuiteManifest<S::Config>) -> Result<JobSet, String> {
    let inputs = inputs_as_they_were::<S>(run, manifest)?;
    let world = S::world(&manifest.config, &inputs)?;
    let jobs = S::jobs(&manifest.config, &manifest.run_id, &world);
    Ok(JobSet::of(&jobs, |j| S::job_id(j)))
}

/// How `sage report A --compare B` prints a comparison of two runs of a suite on the trait.
pub struct CompareOptions<'a> {
    /// One JSON document instead of text.
    pub json: bool,
    /// Where to write the JSON.
    pub out: Option<&'a Path>,
    /// Exit with code 3 when some agent is worse.
    pub fail_on_regression: bool,
}

/// `sage report CURRENT --compare BASELINE` of two runs of `S`: per agent, the pass rate over
/// the cases both ran, paired by case ([`sage_report::compare::cases`]); no verdict when the
/// runs' user simulators or judges differ. Whether some agent is worse.
pub fn compare<S: Play>(
    (current, baseline): (&RunDir, &RunDir),
    options: CompareOptions<'_>,
) -> anyhow::Result<bool> {
    let read = |run: &RunDir| -> anyhow::Result<_> {
        let suite = suite_of(run).unwrap_or_else(|| "sage".into());
        if suite != S::NAME {
            anyhow::bail!(
                "{}: a {} run; --compare compares two runs of one suite",
                run.path().display(),
                terminal_safe(&suite)
            );
        }
        let manifest: SuiteManifest<S::Config> = run.read_json("manifest.json")?;
        let jobs = super::run_jobs_or_warn(&manifest.run_id, planned::<S>(run, &manifest));
        // The scores alone: no page is written.
        let mut fold = S::Fold::default();
        let (_, screened) = read_for_report::<S>(run, &jobs, |r, _| S::fold(&mut fold, r))?;
        for warning in screened.warnings(&run.path().join(S::RECORDS)) {
            eprintln!("warning: {}", terminal_safe(&warning));
        }
        let Some(cases) = S::cases(&fold) else {
            anyhow::bail!("--compare: no comparison of {} runs yet", S::NAME);
        };
        Ok((manifest, cases))
    };
    let (a, a_cases) = read(current)?;
    let (b, b_cases) = read(baseline)?;
    let differs = |what: &str, x: &[String], y: &[String]| {
        (x != y).then(|| {
            format!(
                "the {what} differ (`{}`: {}; `{}`: {})",
                a.run_id,
                x.join(", "),
                b.run_id,
                y.join(", ")
            )
        })
    };
    let not_comparable = differs(
        "user simulators",
        S::customers(&a.config),
        S::customers(&b.config),
    )
    .or_else(|| differs("judges", S::judges(&a.config), S::judges(&b.config)));
    let comparison = sage_report::compare::cases::compare(
        (&a_cases, &b_cases),
        (&a.run_id, &b.run_id),
        not_comparable,
        S::seed(&a.config),
    );
    if options.json {
        let json = serde_json::to_string_pretty(&comparison)? + "\n";
        match options.out {
            Some(out) => {
                std::fs::write(out, json).with_context(|| format!("writing {}", out.display()))?;
                eprintln!("wrote {}", out.display());
            }
            None => print!("{json}"),
        }
    } else {
        print!("{}", terminal_safe(&comparison.text()));
    }
    Ok(options.fail_on_regression && comparison.has_regression())
}

/// The suite a run folder's manifest names (`suite`), if any.
pub fn suite_of(run: &RunDir) -> Option<String> {
    let manifest: serde_json::Value = run.read_json("manifest.json").ok()?;
    manifest["suite"].as_str().map(str::to_string)
}

/// `sage show DIR ID` of a run of `S`: the record of job `ID` as text.
pub fn show<S: Play>(run: &RunDir, id: &str) -> anyhow::Result<()> {
    /// How the scan ends: at the record asked for, or at an error of the file.
    enum Scan<R> {
        Found(Box<R>),
        Failed(sage_ports::store::StoreError),
    }
    impl<R> From<sage_ports::store::StoreError> for Scan<R> {
        fn from(e: sage_ports::store::StoreError) -> Self {
            Scan::Failed(e)
        }
    }
    // Read up to the first record of the id, not further.
    let scanned = run.scan_jsonl_at(S::RECORDS, |_, record: S::Record| {
        if S::job_id(S::record_job(&record)) == id {
            Err(Scan::Found(Box::new(record)))
        } else {
            Ok(())
        }
    });
    let found = match scanned {
        Ok(()) => None,
        Err(Scan::Found(record)) => Some(*record),
        Err(Scan::Failed(e)) => return Err(e.into()),
    };
    match found {
        Some(record) => {
            print!("{}", terminal_safe(&S::transcript(&record)));
            Ok(())
        }
        None => anyhow::bail!(
            "{}: no conversation `{}` in {}",
            run.path().display(),
            id.escape_debug(),
            S::RECORDS
        ),
    }
}
