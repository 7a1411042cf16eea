//! `sage report A --compare B` and `sage show DIR DIALOGUE_ID`: wiring only (the comparison is
//! `report::compare`, the transcript `report::transcript`).

use anyhow::{Context, bail};
use sage_core::protocol::DialogueRecord;
use sage_core::scoring::Bootstrap;
use sage_ports::store::Reread;
use sage_ports::store::RunDir;
use sage_report::compare::{
    CompareFold, Comparison, FlipTranscripts, Links, RunInfo, relative_url,
};
use sage_report::transcript::terminal_safe;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// `sage report DIR [--html [--out FILE]]`: the summary and leaderboard rebuilt from the
/// records (SAGE or support-desk folder), and with `--html` the HTML report. With `--out`, the
/// page alone is written there and nothing into the folder (which may be read-only).
pub fn report(
    dir: &Path,
    html: bool,
    out: Option<&Path>,
    leave: sage_ports::store::Leave,
) -> anyhow::Result<()> {
    let run = RunDir::open(dir)?;
    // Claimed while its files are rewritten: a run in progress (or another report) holds the
    // folder, and its summary is not rewritten under it. A report written elsewhere only reads
    // it (whole lines: a record being appended is not read).
    let writes_folder = !(html && out.is_some());
    let run = if writes_folder { run.claim()? } else { run };
    if let Some(lifecycle) = super::run::Suite::lifecycle(&run) {
        if leave.off_case {
            bail!(
                "{}: --exclude-off-case: a {} run has no case audit; expected a SAGE-suite run",
                dir.display(),
                lifecycle.name
            );
        }
        return (lifecycle.report)(&run, out.filter(|_| html));
    }
    // Nothing is written for a run without a record: an empty table would read as a result.
    if !run.has_records("dialogues.jsonl")? {
        bail!(
            "{}: no dialogue stored in dialogues.jsonl (the run has not finished one yet, or its records are gone); nothing to report",
            dir.display(),
        );
    }
    let reported = if html {
        super::run::report_html(&run, out, leave)?
    } else {
        super::run::report(&run, leave)?
    };
    print_reported(&reported.warnings(), &reported.table);
    if let Some(html) = &reported.html {
        println!("report: {}", html.display());
    }
    if let Some(line) = reported.explorer_line() {
        println!("{line}");
    }
    Ok(())
}

/// A report's warnings (on stderr) and its table.
fn print_reported(warnings: &[String], table: &str) {
    for warning in warnings {
        eprintln!("warning: {warning}");
    }
    println!("{}", terminal_safe(table));
}

/// A SAGE results folder with its manifest, for comparing.
fn sage_run(dir: &Path) -> anyhow::Result<(RunDir, sage_ports::store::Manifest)> {
    let run = RunDir::open(dir)?;
    super::run::sage_only(&run, "--compare compares SAGE-suite runs")?;
    let manifest = run.read_manifest()?;
    Ok((run, manifest))
}

/// How `sage report A --compare B` prints the comparison.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum CompareFormat {
    /// Tables for people (the default).
    Text,
    /// One JSON document (docs/report.md, "Compare"), for scripts and CI.
    Json,
}

/// The options of `sage report A --compare B`.
#[derive(Debug, Clone)]
pub struct CompareArgs {
    /// Also write the page.
    pub html: bool,
    /// Where to write the page (or, with `--format json` and no `--html`, the JSON).
    pub out: Option<PathBuf>,
    /// Text or JSON.
    pub format: CompareFormat,
    /// Exit with code 3 when some group is a regression.
    pub fail_on_regression: bool,
    /// Compare across a scenario whose text differs between the runs.
    pub allow_scenario_change: bool,
    /// Draw verdicts between runs whose customer simulators differ.
    pub allow_simulator_change: bool,
}

/// The exit code of a comparison that found a regression, with `--fail-on-regression`.
pub const REGRESSION_EXIT: u8 = 3;

/// Compares run `current` against the baseline `baseline`: prints the comparison (text or
/// JSON) and, with `html`, writes it as a page (to `out`, by default
/// `current/compare-<baseline id>.html`) with the first flips' transcripts side by side. The
/// pairing warning also goes to standard error.
pub fn compare(current: &Path, baseline: &Path, args: CompareArgs) -> anyhow::Result<ExitCode> {
    if args.out.is_some() && !args.html && args.format != CompareFormat::Json {
        bail!("--out needs --html (or --format json)");
    }
    let (a, b) = (RunDir::open(current)?, RunDir::open(baseline)?);
    if let Some(lifecycle) =
        super::run::Suite::lifecycle(&a).or_else(|| super::run::Suite::lifecycle(&b))
    {
        if args.html {
            bail!(
                "--html: the comparison page is for SAGE-suite runs; a {} comparison is text or --format json",
                lifecycle.name
            );
        }
        let options = super::suite::CompareOptions {
            json: args.format == CompareFormat::Json,
            out: args.out.as_deref(),
            fail_on_regression: args.fail_on_regression,
        };
        let worse = (lifecycle.compare)((&a, &b), options)?;
        return Ok(if worse {
            ExitCode::from(REGRESSION_EXIT)
        } else {
            ExitCode::SUCCESS
        });
    }
    let (a, a_manifest) = sage_run(current)?;
    let (b, b_manifest) = sage_run(baseline)?;
    let relation = relation((&a, &a_manifest), (&b, &b_manifest))?;
    // A rescore against a corrected scenario is compared for what the correction changed.
    let rescore = matches!(relation, Some(Related::Rescore(_)));
    if !args.allow_scenario_change && !rescore {
        for (id, hash) in &a_manifest.scenarios {
            if let Some((_, other)) = b_manifest
                .scenarios
                .iter()
                .find(|(i, h)| i == id && h != hash)
            {
                bail!(
                    "scenario `{id}` has another text in each run (SHA-256 {} in `{}`, {} in `{}`): their scores come from different SOPs, so a difference is not the models'. Compare them anyway with --allow-scenario-change",
                    &hash[..hash.len().min(12)],
                    a_manifest.run_id,
                    &other[..other.len().min(12)],
                    b_manifest.run_id
                );
            }
        }
    }
    let info = |m: &sage_ports::store::Manifest| RunInfo {
        id: m.run_id.clone(),
        seed: m.config.seed,
        scenarios: m.scenarios.clone(),
        simulator: m.simulator.clone(),
    };
    let bootstrap = Bootstrap {
        seed: a_manifest.config.seed,
        ..Bootstrap::default()
    };
    let mut fold = CompareFold::new(info(&a_manifest), info(&b_manifest), bootstrap)?;
    if args.allow_simulator_change {
        fold = fold.allow_simulator_change();
    }
    fold = match relation {
        Some(Related::Rescore(changed)) => fold.rescore(changed),
        Some(Related::Rejudge) => fold.rejudge(),
        None => fold,
    };
    b.scan_jsonl_at("dialogues.jsonl", |at, r| {
        fold.add_baseline_at(&r, at);
        Ok::<(), sage_ports::store::StoreError>(())
    })?;
    a.scan_jsonl_at("dialogues.jsonl", |at, r| {
        fold.add_current_at(&r, at);
        Ok::<(), sage_ports::store::StoreError>(())
    })?;
    let mut comparison = fold.finish()?;
    let (judged_a, judged_b) = (
        &a_manifest.config.judge_turns,
        &b_manifest.config.judge_turns,
    );
    if judged_a != judged_b {
        comparison.notes.push(format!(
            "the runs judged different turns (`{}`: {}; `{}`: {}): their Logic, Chat and Overall are means over different turns",
            a_manifest.run_id,
            judged_a.describe(),
            b_manifest.run_id,
            judged_b.describe()
        ));
    }
    if let Some(warning) = comparison.pairing_warning() {
        eprintln!("warning: {warning}");
    }
    let json = args.format == CompareFormat::Json;
    // With --format json, standard output holds the document alone.
    let say = |line: String| {
        if json {
            eprintln!("{line}");
        } else {
            println!("{line}");
        }
    };
    match (args.format, &args.out) {
        (CompareFormat::Text, _) => print!("{}", terminal_safe(&comparison.text())),
        (CompareFormat::Json, Some(out)) if !args.html => {
            std::fs::write(out, comparison.json()?)
                .with_context(|| format!("writing {}", out.display()))?;
            say(format!("wrote {}", out.display()));
        }
        (CompareFormat::Json, _) => print!("{}", comparison.json()?),
    }
    if args.html {
        let out = args
            .out
            .clone()
            .unwrap_or_else(|| a.path().join(format!("compare-{}.html", b_manifest.run_id)));
        let canonical = |p: &Path| {
            p.canonicalize()
                .with_context(|| format!("{}: cannot resolve the folder", p.display()))
        };
        let name = out
            .file_name()
            .with_context(|| format!("{}: not a file name", out.display()))?;
        let parent = match out.parent() {
            Some(p) if !p.as_os_str().is_empty() => p,
            _ => Path::new("."),
        };
        let folder = canonical(parent)?;
        let links = Links {
            current: relative_url(&folder, &canonical(a.path())?.join("report.html")),
            baseline: relative_url(&folder, &canonical(b.path())?.join("report.html")),
        };
        let transcripts = flip_transcripts(&comparison, &a, &b)?;
        let path = folder.join(name);
        std::fs::write(&path, comparison.page(&links, &transcripts).render())
            .with_context(|| format!("writing {}", path.display()))?;
        say(format!("\nwrote {}", path.display()));
    }
    Ok(if args.fail_on_regression && comparison.has_regression() {
        ExitCode::from(REGRESSION_EXIT)
    } else {
        ExitCode::SUCCESS
    })
}

/// How two runs are related, when one was made from the other.
enum Related {
    /// The current run is the baseline graded again: its rescore.json's changed dialogues.
    Rescore(Vec<sage_core::scoring::rescore::ChangedDialogue>),
    /// One run is the other judged again by another panel.
    Rejudge,
}

/// Whether `current` is a rescore of `baseline` (its rescore.json names the baseline's run id
/// or, in a file of before the id was recorded, its folder), or either is a rejudge of the
/// other (its rejudge.json names the other's run id).
fn relation(
    (current, a_manifest): (&RunDir, &sage_ports::store::Manifest),
    (baseline, b_manifest): (&RunDir, &sage_ports::store::Manifest),
) -> anyhow::Result<Option<Related>> {
    use sage_core::scoring::rejudge::RejudgeFile;
    use sage_core::scoring::rescore::{RESCORE_JSON, RescoreFile};
    let same_folder = |from: &str| {
        let from = Path::new(from).canonicalize().ok();
        from.is_some() && from == baseline.path().canonicalize().ok()
    };
    if current.path().join(RESCORE_JSON).exists() {
        let file: RescoreFile = current.read_json(RESCORE_JSON)?;
        let names = if file.from_run_id.is_empty() {
            same_folder(&file.from)
        } else {
            file.from_run_id == b_manifest.run_id
        };
        if names {
            return Ok(Some(Related::Rescore(file.changed)));
        }
    }
    for (run, other) in [
        (current, &b_manifest.run_id),
        (baseline, &a_manifest.run_id),
    ] {
        if run.path().join("rejudge.json").exists() {
            let file: RejudgeFile = run.read_json("rejudge.json")?;
            if file.from_run_id == *other {
                return Ok(Some(Related::Rejudge));
            }
        }
    }
    Ok(None)
}

/// Both runs' records of the flips the page shows, read again where the fold saw them, and
/// rendered side by side (one pair of records held at a time).
fn flip_transcripts(
    comparison: &Comparison,
    current: &RunDir,
    baseline: &RunDir,
) -> anyhow::Result<FlipTranscripts> {
    let mut out = FlipTranscripts::new();
    let (mut now, mut before): (Reread<DialogueRecord>, Reread<DialogueRecord>) = (
        current.reread("dialogues.jsonl")?,
        baseline.reread("dialogues.jsonl")?,
    );
    for flip in comparison.flips_shown() {
        let (Some(current_at), Some(baseline_at)) = (flip.current_at, flip.baseline_at) else {
            continue;
        };
        out.add(
            &before.at(baseline_at)?,
            &now.at(current_at)?,
            (&comparison.baseline, &comparison.current),
        );
    }
    Ok(out)
}

/// Prints the transcript of dialogue `id` of the results folder `dir`, control and
/// bidirectional-formatting characters shown as escapes ([`terminal_safe`]).
pub fn show(dir: &Path, id: &str) -> anyhow::Result<()> {
    sage_core::protocol::id::check_dialogue_id(id)?;
    let run = RunDir::open(dir)?;
    if let Some(lifecycle) = super::run::Suite::lifecycle(&run) {
        return (lifecycle.show)(&run, id);
    }
    match run.find_dialogue(id)? {
        Some(record) => {
            let text = sage_report::transcript::transcript_text(&record);
            print!("{}", terminal_safe(&text));
            Ok(())
        }
        None => bail!(
            "{}: no dialogue `{}` in dialogues.jsonl",
            dir.display(),
            id.escape_debug()
        ),
    }
}
