//! `sage judges calibrate DIR --labels FILE` and `--suggest N`: wiring only (the figures are
//! `sage_core::scoring::labels` and `sage_core::scoring::calibration`, the choice of turns
//! `sage_report::label`).

use anyhow::{Context, bail};
use clap::Subcommand;
use sage_core::scoring::labels::{Calibration, CalibrationFold, parse_labels};
use sage_ports::store::RunDir;
use std::path::PathBuf;

/// Largest labels file read.
const MAX_LABELS_BYTES: u64 = 64 << 20;

/// Most turns `--suggest` names.
const MAX_SUGGEST: usize = 10_000;

/// `sage judges ...`.
#[derive(Debug, Subcommand)]
pub enum JudgesCommand {
    /// Check a run's judge panel against people's labels (labels.jsonl, from the report's
    /// labels.html or written by hand: docs/judges.md): each judge's and the panel's accuracy
    /// per field, Krippendorff's alpha, Cohen's kappa per judge, and each model's Logic
    /// corrected by prediction-powered inference. Writes DIR/calibration.json (the report shows
    /// it) and keeps the labels as DIR/labels.jsonl.
    Calibrate {
        /// The results folder (results/<run-id>).
        dir: PathBuf,
        /// The labels file (JSON lines); with --suggest, the labels people have given so far
        /// (optional).
        #[arg(long, value_name = "FILE", required_unless_present = "suggest")]
        labels: Option<PathBuf>,
        /// Print calibration.json instead of the tables.
        #[arg(long, conflicts_with = "suggest")]
        json: bool,
        /// Name the N judged turns people should label first (where a label narrows the
        /// corrected interval most: the judges' disagreements first, then the strata of model
        /// and scenario the labels cover least) and write DIR/labels.html with them, in that
        /// order; nothing is calibrated.
        #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..=MAX_SUGGEST as u64))]
        suggest: Option<u64>,
    },
}

/// Runs a `sage judges` command.
pub fn run(cmd: JudgesCommand) -> anyhow::Result<()> {
    match cmd {
        JudgesCommand::Calibrate {
            dir,
            labels,
            suggest: Some(n),
            ..
        } => suggest(&dir, labels.as_deref(), n as usize),
        JudgesCommand::Calibrate {
            dir,
            labels: Some(labels),
            json,
            suggest: None,
        } => calibrate(&dir, &labels, json),
        JudgesCommand::Calibrate { labels: None, .. } => {
            bail!("--labels: expected the labels file (or --suggest N)")
        }
    }
}

/// The SAGE run in `dir` (a support-desk run refused), its manifest and compiled scenarios.
fn sage_run(
    dir: &std::path::Path,
) -> anyhow::Result<(
    RunDir,
    sage_ports::store::Manifest,
    std::collections::HashMap<String, std::sync::Arc<sage_core::sop::Sop>>,
)> {
    let run = RunDir::open(dir)?;
    super::run::sage_only(&run, "calibrate checks the judge panel of a SAGE-suite run")?;
    let manifest = run.read_manifest()?;
    let sops = super::run_scenarios(&manifest, dir)?;
    Ok((run, manifest, sops))
}

/// `--suggest N`: the N judged turns to label next, printed and written as DIR/labels.html.
fn suggest(
    dir: &std::path::Path,
    labels: Option<&std::path::Path>,
    n: usize,
) -> anyhow::Result<()> {
    let (run, manifest, sops) = sage_run(dir)?;
    let labelled: std::collections::BTreeSet<(String, u32)> = match labels {
        Some(file) => {
            let text = super::read_text(file, MAX_LABELS_BYTES, "--labels")?;
            let labels = parse_labels(&text, &file.display().to_string())?;
            labels
                .into_iter()
                .map(|l| (l.dialogue_id, l.turn))
                .collect()
        }
        None => Default::default(),
    };
    let already = labelled.len();
    let mut fold = sage_report::label::LabelFold::new(
        &manifest.run_id,
        manifest.config.seed,
        sops.values().cloned().collect(),
    )
    .with_sample(n)
    .suggesting(labelled);
    let mut seen = std::collections::HashSet::new();
    run.scan_jsonl_at(
        "dialogues.jsonl",
        |at, record: sage_core::protocol::DialogueRecord| {
            // A dialogue stored twice is one dialogue.
            if seen.insert(record.job.dialogue_id.clone()) {
                fold.add(&record, at);
            }
            Ok::<(), sage_ports::store::StoreError>(())
        },
    )?;
    let sample = fold.sample();
    if sample.is_empty() {
        bail!(
            "{}: no judged turn left to label ({already} labelled already)",
            dir.display()
        );
    }
    let page = dir.join(sage_report::label::LABELS_HTML);
    sage_ports::store::write_labels_page(&run, &fold, &page)?;
    let splits = sample.iter().filter(|c| c.split).count();
    let mut out = format!(
        "{} judged turns to label first ({splits} where the judges split; {already} labelled already left out):\n",
        sample.len()
    );
    for c in &sample {
        out.push_str(&format!(
            "{} turn {}  ({}, {}{})\n",
            c.dialogue,
            c.turn,
            c.model,
            c.scenario,
            if c.split { ", judges split" } else { "" }
        ));
    }
    print!("{}", sage_report::transcript::terminal_safe(&out));
    println!("written: {} (these turns, in this order)", page.display());
    Ok(())
}

fn calibrate(dir: &std::path::Path, file: &std::path::Path, json: bool) -> anyhow::Result<()> {
    let (run, manifest, sops) = sage_run(dir)?;
    let name = file.display().to_string();
    let text = super::read_text(file, MAX_LABELS_BYTES, "--labels")?;
    let labels = parse_labels(&text, &name)?;
    let mut fold = CalibrationFold::new(labels, &manifest.run_id);
    run.scan_dialogues(|record| {
        let sop = sops.get(&record.job.scenario).map(|s| s.as_ref());
        fold.add(&record, sop);
    })?;
    let calibration = fold.finish();
    if calibration.turns == 0 {
        bail!(
            "--labels {name}: no label matches a judged turn of run `{}` ({} labels; e.g. {})",
            manifest.run_id,
            calibration.labels,
            calibration.unmatched.first().map_or("none", String::as_str)
        );
    }
    run.write_json(sage_ports::store::CALIBRATION_JSON, &calibration)?;
    let kept = dir.join("labels.jsonl");
    let same = std::fs::canonicalize(file).ok() == std::fs::canonicalize(&kept).ok();
    if !same {
        std::fs::write(&kept, &text).with_context(|| format!("writing {}", kept.display()))?;
    }
    if json {
        println!("{}", serde_json::to_string_pretty(&calibration)?);
    } else {
        print!(
            "{}",
            sage_report::transcript::terminal_safe(&text_report(&calibration))
        );
        println!("written: {}", dir.join("calibration.json").display());
    }
    Ok(())
}

/// `0.912`, or `-` when there is no figure.
fn figure(x: Option<f64>) -> String {
    x.map_or("-".into(), |x| format!("{x:.3}"))
}

/// The calibration as terminal tables.
fn text_report(c: &Calibration) -> String {
    let mut out = format!(
        "{} labels by {} on {} judged turns\nKrippendorff's alpha, people and judges: classification {} (nominal), chat {} (ordinal)\n\n",
        c.labels,
        if c.labellers.is_empty() {
            "-".to_string()
        } else {
            c.labellers.join(", ")
        },
        c.turns,
        figure(c.alpha_classification),
        figure(c.alpha_chat),
    );
    out.push_str(&format!(
        "{:<24} {:>9} {:>7} {:>9} {:>7}\n",
        "judge vs people", "accuracy", "kappa", "chat acc", "pairs"
    ));
    for j in &c.judges {
        out.push_str(&format!(
            "{:<24} {:>9} {:>7} {:>9} {:>7}\n",
            j.judge,
            figure(j.classification_accuracy),
            figure(j.kappa),
            figure(j.chat_accuracy),
            j.pairs
        ));
    }
    out.push_str(&format!(
        "\n{:<40} {:>8} {:>7} {:>9}  accuracy per judge\n",
        "field", "labelled", "alpha", "eff. jdg"
    ));
    let panel = c.judges.len().saturating_sub(1);
    for a in c.fields.iter().chain(&c.chat) {
        let acc: Vec<String> = a
            .accuracy
            .iter()
            .map(|(j, x)| format!("{j} {x:.2}"))
            .collect();
        let effective = match a.effective_judges {
            Some(n) if panel >= 3 && n < sage_core::scoring::summary::FEW_EFFECTIVE_JUDGES => {
                format!("{n:.1} (!)")
            }
            Some(n) => format!("{n:.1}"),
            None => "-".into(),
        };
        out.push_str(&format!(
            "{:<40} {:>8} {:>7} {:>9}  {}\n",
            a.name,
            a.labelled,
            figure(a.alpha),
            effective,
            acc.join(", ")
        ));
    }
    out.push_str(&format!(
        "eff. jdg: how many independent votes the panel of {panel} is worth on the field against the people's labels (Kish, from the correlation of the judges' errors); (!) fewer than {}.\n",
        sage_core::scoring::summary::FEW_EFFECTIVE_JUDGES
    ));
    out.push_str(&format!(
        "\n{:<24} {:>22} {:>26} {:>9}\n",
        "Logic (turn mean)", "judges (95% CI)", "corrected by people (PPI)", "labelled"
    ));
    for l in &c.logic {
        let p = &l.ppi;
        out.push_str(&format!(
            "{:<24} {:>22} {:>26} {:>9}\n",
            l.model,
            format!("{:.3} ± {:.3}", p.naive, p.naive_half_width),
            format!("{:.3} ± {:.3}", p.estimate, p.half_width),
            p.labelled
        ));
    }
    if c.unmatched_count > 0 {
        out.push_str(&format!(
            "\n{} labels left out (no judged turn of this run, or a value the scenario does not have):\n",
            c.unmatched_count
        ));
        for u in &c.unmatched {
            out.push_str(&format!("  {u}\n"));
        }
    }
    out
}
