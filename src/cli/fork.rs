//! `sage fork DIR --out NEW`: wiring only (what to fork and how is `sage_core::fork`, the
//! playing `sage_actors::fork`). Writes NEW's branches, fork.json, the summary files and
//! report.html.

use anyhow::{Context, bail};
use sage_core::fork::{At, FORK_JSON, ForkConfig, ForkFile, Forked};
use sage_ports::store::RunDir;
use std::path::PathBuf;

/// The options of `sage fork` (docs/training-data.md).
#[derive(Debug, clap::Args)]
pub struct ForkArgs {
    /// The results folder whose dialogues are forked (results/<run-id>).
    dir: PathBuf,
    /// The new results folder (its name is the new run's id). One that a fork of the same run
    /// made the same way left unfinished is resumed.
    #[arg(long, value_name = "NEW_DIR")]
    out: PathBuf,
    /// Where each stored dialogue is asked again: `judged` (every judged turn), `deviation`
    /// (the first turn where the agent left the reference path or action), or a turn number.
    #[arg(long, default_value = "judged", value_parser = at)]
    at: At,
    /// The models that answer, comma-separated (models of the run's configuration) [default:
    /// the run's models under test].
    #[arg(long, value_delimiter = ',', value_name = "A,B,...")]
    models: Vec<String>,
    /// Answers per model and fork point, each drawn apart (a simulated agent by its draw, a real
    /// one by its seed and a sampling temperature).
    #[arg(long, default_value_t = 1, value_name = "K")]
    samples: u32,
    /// Each branch plays on to its end (the run's customer answers as in a run). With `--at
    /// deviation`, each failed dialogue also gets its fix: the reply that follows the reference
    /// at the turn where it first left it, played on by its own model.
    #[arg(long = "continue")]
    continue_on: bool,
    /// Ask the run's judges about each reply, for its Chat (the reference stays the parent
    /// turn's); without it no judge is called and the replies have a Logic, no Chat.
    #[arg(long)]
    judge: bool,
    /// Draws the samples [default: the run's seed].
    #[arg(long)]
    seed: Option<u64>,
    /// The most the fork's calls may cost, US dollars: no parent starts once they have (run
    /// the same command with a higher one to fork the rest).
    #[arg(long, value_name = "USD")]
    max_cost_usd: Option<f64>,
    /// Most parents in flight [default: the run's concurrency].
    #[arg(long)]
    concurrency: Option<usize>,
    /// No progress bar.
    #[arg(long)]
    quiet: bool,
}

/// An `--at` value.
fn at(text: &str) -> Result<At, String> {
    text.parse()
}

/// Forks the stored dialogues of `args.dir` into `args.out`.
pub fn fork(args: ForkArgs) -> anyhow::Result<()> {
    let from = RunDir::open(&args.dir)?;
    super::run::sage_only(&from, "fork asks SAGE-suite dialogues again")?;
    if let Some(usd) = args.max_cost_usd
        && !(usd.is_finite() && usd >= 0.0)
    {
        bail!("--max-cost-usd {usd}: expected US dollars, 0 or more");
    }
    let manifest = from.read_manifest()?;
    let mut config = manifest.config.clone();
    let fork = ForkConfig {
        at: args.at,
        models: if args.models.is_empty() {
            config.service_models.clone()
        } else {
            args.models.clone()
        },
        samples: args.samples,
        continue_on: args.continue_on,
        judge: args.judge,
        seed: args.seed.unwrap_or(config.seed),
    };
    fork.check().map_err(|e| anyhow::anyhow!("{e}"))?;
    // The fork's models answer as the run's agents did: checked as its models under test.
    config.service_models = fork.models.clone();
    if let Some(n) = args.concurrency {
        config.concurrency = n;
    }
    config
        .check("--models")
        .with_context(|| format!("{}: forking its run", args.dir.display()))?;
    let called: Vec<_> = config
        .models
        .iter()
        .filter(|m| {
            fork.models.contains(&m.name)
                || (fork.continue_on && m.name == config.user_model)
                || (fork.judge && config.judge_models.contains(&m.name))
        })
        .cloned()
        .collect();
    super::set_up_models(&called)?;
    let sops = super::run_scenarios(&manifest, &args.dir)?;

    let (base, run_id) = super::rescore::new_folder(&args.out)?;
    let file = ForkFile {
        // Resolved: the fork's report links to the parents' wherever it is opened from.
        from: std::fs::canonicalize(&args.dir)
            .unwrap_or_else(|_| args.dir.clone())
            .display()
            .to_string(),
        from_run_id: manifest.run_id.clone(),
        config: fork.clone(),
        done: None,
    };
    let to = if args.out.join("manifest.json").exists() {
        // A resume: the same run forked the same way, or nothing.
        let to = RunDir::open(&args.out)?;
        let before: ForkFile = to.read_json(FORK_JSON).with_context(|| {
            format!(
                "--out {}: holds a run that is not a fork; expected a new folder",
                args.out.display()
            )
        })?;
        if before.from_run_id != file.from_run_id || before.config != file.config {
            bail!(
                "--out {}: holds a fork of run `{}` ({}); this one is of run `{}` ({}) (choose another folder)",
                args.out.display(),
                before.from_run_id,
                describe(&before.config),
                file.from_run_id,
                describe(&file.config)
            );
        }
        to.claim()?
    } else {
        super::rescore::create_derived((&base, &run_id), &manifest, &config, (FORK_JSON, &file))?
    };

    let progress = (!args.quiet).then(|| super::progress_bar(manifest.jobs, "dialogues forked"));
    let job = sage_actors::fork::Fork {
        config: &config,
        fork: &fork,
        run_id: &run_id,
        max_cost_usd: args.max_cost_usd,
    };
    let done = super::system(sage_actors::fork::fork(&job, sops, &from, &to, progress))?;
    to.write_json(
        FORK_JSON,
        &ForkFile {
            done: Some(done.clone()),
            ..file
        },
    )?;
    let to = to.release();
    let reported = super::run::report_html(&to, None, Default::default())?;
    print_done(&done, &fork);
    println!(
        "preference pairs: sage export {} --format dpo-trl --out pairs.jsonl",
        to.path().display()
    );
    super::rescore::print_written(&to, &reported);
    Ok(())
}

/// A fork's configuration in a few words.
fn describe(c: &ForkConfig) -> String {
    // A sweep's 27 names would make the line unreadable: the first three and a count.
    let models = if c.models.len() <= 3 {
        c.models.join(",")
    } else {
        format!(
            "{},... ({} models)",
            c.models[..3].join(","),
            c.models.len()
        )
    };
    format!(
        "--at {} --models {} --samples {}{}{} --seed {}",
        c.at,
        models,
        c.samples,
        if c.continue_on { " --continue" } else { "" },
        if c.judge { " --judge" } else { "" },
        c.seed
    )
}

/// What the fork holds, in a few lines.
fn print_done(done: &Forked, fork: &ForkConfig) {
    let calls: Vec<String> = done
        .calls
        .iter()
        .map(|(role, n)| format!("{role} {n}"))
        .collect();
    let cost: f64 = done.cost_usd.values().sum();
    println!(
        "{} branches of {} dialogues at {} points ({}): {} replies with Logic 100; calls: {}; ${cost:.4} in all",
        done.branches,
        done.parents,
        done.points,
        describe(fork),
        done.logic_100,
        if calls.is_empty() {
            "none".to_string()
        } else {
            calls.join(", ")
        }
    );
    if done.failed_replies > 0 {
        println!(
            "{} replies could not be had (an infrastructure error at the fork turn: see the report)",
            done.failed_replies
        );
    }
    if let (Some(failed), Some(flipped)) = (done.failed_parents, done.flipped) {
        println!(
            "{flipped} of the {failed} failed dialogues given their fix reached the target action: one turn fixed them"
        );
    }
    if done.left_for_budget > 0 {
        println!(
            "{} dialogues left unforked: the budget (--max-cost-usd) is spent; run the same command with a higher one to fork them",
            done.left_for_budget
        );
    }
}
