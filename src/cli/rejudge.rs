//! `sage rejudge DIR --config JUDGES.yaml --out NEW`: wiring only (the judging is
//! `sage_actors::rejudge`, the panel's configuration `sage_core::plan::rejudge`). Writes NEW's
//! summary files and report.html.

use anyhow::{Context, bail};
use sage_core::plan::rejudge::RejudgeConfig;
use sage_core::scoring::rejudge::RejudgeFile;
use sage_ports::store::RunDir;
use std::path::PathBuf;

/// The options of `sage rejudge`.
#[derive(Debug, clap::Args)]
pub struct RejudgeArgs {
    /// The results folder whose dialogues are judged again (results/<run-id>).
    dir: PathBuf,
    /// The new judge panel (docs/judges.md): its models, `judge_models`, and optionally
    /// `judge_turns`, `concurrency` and `max_cost_usd`.
    #[arg(long, value_name = "JUDGES.yaml")]
    config: PathBuf,
    /// The new results folder (its name is the new run's id). One that a rejudge of the same
    /// run by the same panel left unfinished is resumed.
    #[arg(long, value_name = "NEW_DIR")]
    out: PathBuf,
}

/// Judges the stored dialogues of `args.dir` again with the panel of `args.config`.
pub fn rejudge(args: RejudgeArgs) -> anyhow::Result<()> {
    let from = RunDir::open(&args.dir)?;
    super::run::sage_only(
        &from,
        "rejudge judges SAGE-suite runs (the other suites are scored from their records)",
    )?;
    let manifest = from.read_manifest()?;
    let file = args.config.display().to_string();
    let text = std::fs::read_to_string(&args.config)
        .with_context(|| format!("--config {file}: cannot read it"))?;
    let panel = RejudgeConfig::from_yaml(&text, &file)?;
    let config = panel.apply(&manifest.config, &file)?;
    let judges: Vec<_> = panel.judges(&config).into_iter().cloned().collect();
    super::set_up_models(&judges)?;
    let sops = super::run_scenarios(&manifest, &args.dir)?;

    let (base, run_id) = super::rescore::new_folder(&args.out)?;
    let record = RejudgeFile {
        from: args.dir.display().to_string(),
        from_run_id: manifest.run_id.clone(),
        judge_models: config.judge_models.clone(),
        judge_turns: config.judge_turns.label(),
        done: None,
    };
    let to = if args.out.join("manifest.json").exists() {
        // A resume: the same run judged by the same panel, or nothing.
        let to = RunDir::open(&args.out)?;
        let before: RejudgeFile = to.read_json("rejudge.json").with_context(|| {
            format!(
                "--out {}: holds a run that is not a rejudge; expected a new folder",
                args.out.display()
            )
        })?;
        if before.from_run_id != record.from_run_id
            || before.judge_models != record.judge_models
            || before.judge_turns != record.judge_turns
        {
            bail!(
                "--out {}: holds the rejudge of run `{}` by [{}] on turns `{}`; this one is of run `{}` by [{}] on turns `{}` (choose another folder)",
                args.out.display(),
                before.from_run_id,
                before.judge_models.join(", "),
                before.judge_turns,
                record.from_run_id,
                record.judge_models.join(", "),
                record.judge_turns
            );
        }
        to.claim()?
    } else {
        super::rescore::create_derived(
            (&base, &run_id),
            &manifest,
            &config,
            ("rejudge.json", &record),
        )?
    };

    let progress = super::progress_bar(manifest.jobs, "dialogues judged again");
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("starting the runtime")?;
    let job = sage_actors::rejudge::Rejudge {
        config: &config,
        old_judges: &manifest.config.judge_models,
        max_cost_usd: panel.max_cost_usd,
        run_id: &run_id,
    };
    let done = runtime.block_on(sage_actors::rejudge::rejudge(
        &job,
        sops,
        &from,
        &to,
        Some(progress),
    ))?;
    to.write_json(
        "rejudge.json",
        &RejudgeFile {
            done: Some(done.clone()),
            ..record
        },
    )?;
    let to = to.release();
    let reported = super::run::report_html(&to, None, Default::default())?;
    println!(
        "{} dialogues judged again by [{}] ({} judge calls, ${:.4} in all){}",
        done.judged,
        config.judge_models.join(", "),
        done.judge_calls,
        done.cost_usd,
        if done.kept > 0 {
            format!("; {} kept from before", done.kept)
        } else {
            String::new()
        }
    );
    if done.left_for_budget > 0 {
        println!(
            "{} dialogues left unjudged: the budget (max_cost_usd) is spent; run the same command with a higher one to judge them",
            done.left_for_budget
        );
    }
    println!(
        "{}",
        sage_report::transcript::terminal_safe(&reported.table)
    );
    println!(
        "what the new judges change: sage report {} --compare {}",
        to.path().display(),
        args.dir.display()
    );
    super::rescore::print_written(&to, &reported);
    Ok(())
}
