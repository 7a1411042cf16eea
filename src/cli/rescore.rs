//! `sage rescore DIR [--scenario FILE...] --out NEW`: wiring only (the grading is
//! `sage_core::scoring::rescore`). Writes NEW's summary files and report.html.

use anyhow::{Context, bail};
use sage_core::scoring::rescore::{ChangedDialogue, RESCORE_JSON, RescoreFile};
use sage_core::sop::Sop;
use sage_ports::store::{Manifest, RunDir};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The options of `sage rescore`.
#[derive(Debug, clap::Args)]
pub struct RescoreArgs {
    /// The results folder to grade again (results/<run-id>).
    dir: PathBuf,
    /// A scenario file that replaces the run's scenario of the same id (a corrected SOP);
    /// repeatable. The others are graded against the run's scenarios as they load now.
    #[arg(long = "scenario", value_name = "FILE")]
    scenarios: Vec<PathBuf>,
    /// The new results folder (its name is the new run's id); must not hold a run.
    #[arg(long, value_name = "NEW_DIR")]
    out: PathBuf,
}

/// Grades the stored dialogues of `args.dir` again with no model call into `args.out`.
pub fn rescore(args: RescoreArgs) -> anyhow::Result<()> {
    let from = RunDir::open(&args.dir)?;
    super::run::sage_only(&from, "rescore grades SAGE-suite runs")?;
    let manifest = from.read_manifest()?;
    let mut scenarios: BTreeMap<String, (Arc<Sop>, String)> =
        sage_ports::store::inputs::load_scenarios(&manifest.config)
            .with_context(|| format!("{}: loading the run's scenarios", args.dir.display()))?
            .into_iter()
            .map(|(sop, text)| (sop.scenario().id.clone(), (sop, text)))
            .collect();
    for path in &args.scenarios {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("--scenario {}: cannot read it", path.display()))?;
        let sop = sage_core::sop::from_yaml(&text, &path.display().to_string())
            .with_context(|| format!("--scenario {}", path.display()))?;
        let id = sop.scenario().id.clone();
        if !scenarios.contains_key(&id) {
            bail!(
                "--scenario {}: scenario `{id}` is not one of the run's ({})",
                path.display(),
                scenarios.keys().cloned().collect::<Vec<_>>().join(", ")
            );
        }
        scenarios.insert(id, (Arc::new(sop), text));
    }
    let (base, run_id) = new_folder(&args.out)?;
    let to = RunDir::create(&base, &run_id)?;

    // The scenarios graded against, kept in the new folder: its manifest names them, so the
    // new run reports and compares on its own, whatever happens to the files given.
    let kept = to.path().join("scenarios");
    std::fs::create_dir_all(&kept).with_context(|| format!("creating {}", kept.display()))?;
    let mut files = Vec::new();
    for (id, (_, text)) in &scenarios {
        let file = kept.join(format!("{id}.yaml"));
        std::fs::write(&file, text).with_context(|| format!("writing {}", file.display()))?;
        files.push(std::fs::canonicalize(&file)?.display().to_string());
    }
    let sorted: Vec<(Arc<Sop>, String)> = scenarios.values().cloned().collect();
    let hashes = Manifest::scenario_hashes(&sorted);
    let scenarios_changed: Vec<(String, String, String)> = hashes
        .iter()
        .filter_map(|(id, new)| {
            let old = manifest.scenarios.iter().find(|(i, _)| i == id)?;
            (&old.1 != new).then(|| (id.clone(), old.1.clone(), new.clone()))
        })
        .collect();
    let mut new_manifest = manifest.clone();
    new_manifest.run_id = run_id.clone();
    new_manifest.config.scenarios = files;
    new_manifest.scenarios = hashes;
    to.write_manifest(&new_manifest)?;

    let mut writer = to.writer()?;
    let mut changed = Vec::new();
    let mut dialogues = 0;
    let mut failed: Option<anyhow::Error> = None;
    from.scan_dialogues(|mut record| {
        if failed.is_some() {
            return;
        }
        dialogues += 1;
        // The new folder is a run of its own (its records are read as its run's).
        record.job.run_id = run_id.clone();
        if let Some((sop, _)) = scenarios.get(&record.job.scenario) {
            let graded = sage_core::scoring::rescore::rescore(&mut record, sop);
            if graded.changed() {
                changed.push(ChangedDialogue {
                    dialogue_id: record.job.dialogue_id.clone(),
                    turns: graded.changed_turns.clone(),
                    target_changed: graded.target_changed,
                });
            }
        }
        if let Err(e) = writer.append(&record) {
            failed = Some(e.into());
        }
    })?;
    if let Some(e) = failed {
        return Err(e);
    }
    drop(writer);
    // By dialogue id, whatever the order the records were stored in.
    changed.sort_by(|a, b| a.dialogue_id.cmp(&b.dialogue_id));
    let file = RescoreFile {
        from: args.dir.display().to_string(),
        from_run_id: manifest.run_id.clone(),
        scenarios_changed,
        dialogues,
        changed,
    };
    to.write_json(RESCORE_JSON, &file)?;
    let to = to.release();
    let reported = super::run::report_html(&to, None, Default::default())?;
    for (id, old, new) in &file.scenarios_changed {
        println!(
            "scenario `{id}` changed: SHA-256 {} -> {}",
            &old[..old.len().min(16)],
            &new[..new.len().min(16)]
        );
    }
    println!(
        "{dialogues} dialogues graded again with no model call; {} graded differently (their reference routes changed){}",
        file.changed.len(),
        if file.changed.is_empty() { "" } else { ":" }
    );
    for c in file.changed.iter().take(20) {
        println!("  {} (turns {:?})", c.dialogue_id, c.turns);
    }
    if file.changed.len() > 20 {
        println!("  ... and {} more (rescore.json)", file.changed.len() - 20);
    }
    println!(
        "{}",
        sage_report::transcript::terminal_safe(&reported.table)
    );
    print_written(&to, &reported);
    Ok(())
}

/// The last lines of a command that wrote a results folder and its report, as `sage run`
/// prints them: `results: DIR`, `report: DIR/report.html`, and the explorer's line.
pub(super) fn print_written(run: &RunDir, reported: &sage_ports::store::Reported) {
    println!("results: {}", run.path().display());
    if let Some(html) = &reported.html {
        println!("report: {}", html.display());
    }
    if let Some(line) = reported.explorer_line() {
        println!("{line}");
    }
}

/// Creates the folder `run_id` in `base` of a run derived from the run of `manifest` (a fork,
/// a rejudge): its manifest (the same, with `run_id` and `config`) and `name` (fork.json,
/// rejudge.json) holding `what`, which says what it was derived from and how.
pub(super) fn create_derived(
    (base, run_id): (&Path, &str),
    manifest: &sage_ports::store::Manifest,
    config: &sage_core::plan::RunConfig,
    (name, what): (&str, &impl serde::Serialize),
) -> anyhow::Result<RunDir> {
    let to = RunDir::create(base, run_id)?;
    let mut new_manifest = manifest.clone();
    new_manifest.run_id = run_id.to_string();
    new_manifest.config = config.clone();
    to.write_manifest(&new_manifest)?;
    to.write_json(name, what)?;
    Ok(to)
}

/// The parent folder and the run id (the folder's name) of `--out`.
pub(super) fn new_folder(out: &Path) -> anyhow::Result<(PathBuf, String)> {
    let name = out.file_name().and_then(|n| n.to_str()).with_context(|| {
        format!(
            "--out {}: expected a folder path ending in the new run's id",
            out.display()
        )
    })?;
    sage_core::protocol::id::check_run_id(name)
        .map_err(|e| anyhow::anyhow!("--out {}: {e}", out.display()))?;
    let parent = out
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    Ok((parent.to_path_buf(), name.to_string()))
}
