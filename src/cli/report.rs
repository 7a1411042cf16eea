//! `sage report A --compare B` and `sage show DIR DIALOGUE_ID`: wiring only (the comparison is
//! `report::compare`, the transcript `report::transcript`).

use crate::report::compare::{CompareFold, Links, RunInfo, relative_url};
use crate::scoring::Bootstrap;
use crate::store::RunDir;
use anyhow::{Context, bail};
use std::path::{Path, PathBuf};

/// `sage report DIR [--html [--out FILE]]`: the summary and leaderboard rebuilt from the
/// records (SAGE or support-desk folder), and with `--html` the HTML report.
pub fn report(dir: &Path, html: bool, out: Option<&Path>) -> anyhow::Result<()> {
    let run = RunDir::open(dir)?;
    if html && !run.is_desk() {
        let reported = super::run::report_html(dir, out)?;
        print_reported(&reported.warnings(), &reported.table);
        if let Some(html) = &reported.html {
            println!("report: {}", html.display());
        }
        if let Some(line) = reported.explorer_line() {
            println!("{line}");
        }
        return Ok(());
    }
    let reported = crate::store::desk::report_any(&run)?;
    print_reported(&reported.warnings(), &reported.table);
    if html {
        super::desk::write_desk_html(&run, out)?;
    }
    Ok(())
}

/// A report's warnings (on stderr) and its table.
fn print_reported(warnings: &[String], table: &str) {
    for warning in warnings {
        eprintln!("warning: {warning}");
    }
    println!("{table}");
}

/// A SAGE results folder with its manifest, for comparing.
fn sage_run(dir: &Path) -> anyhow::Result<(RunDir, crate::store::Manifest)> {
    let run = RunDir::open(dir)?;
    if run.is_desk() {
        bail!(
            "{}: a support-desk run; --compare compares SAGE-suite runs",
            dir.display()
        );
    }
    let manifest = run.read_manifest()?;
    Ok((run, manifest))
}

/// Compares run `current` against the baseline `baseline`: prints the comparison and, with
/// `html`, writes it as a page (to `out`, by default `current/compare-<baseline id>.html`).
pub fn compare(
    current: &Path,
    baseline: &Path,
    html: bool,
    out: Option<PathBuf>,
) -> anyhow::Result<()> {
    let (a, a_manifest) = sage_run(current)?;
    let (b, b_manifest) = sage_run(baseline)?;
    let info = |m: &crate::store::Manifest| RunInfo {
        id: m.run_id.clone(),
        scenarios: m.scenarios.clone(),
    };
    let bootstrap = Bootstrap {
        seed: a_manifest.config.seed,
        ..Bootstrap::default()
    };
    let mut fold = CompareFold::new(info(&a_manifest), info(&b_manifest), bootstrap)?;
    b.scan_dialogues(|r| fold.add_baseline(&r))?;
    a.scan_dialogues(|r| fold.add_current(&r))?;
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
    print!("{}", comparison.text());
    if html {
        let out =
            out.unwrap_or_else(|| a.path().join(format!("compare-{}.html", b_manifest.run_id)));
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
        let path = folder.join(name);
        std::fs::write(&path, comparison.page(&links).render())
            .with_context(|| format!("writing {}", path.display()))?;
        println!("\nwrote {}", path.display());
    }
    Ok(())
}

/// Prints the transcript of dialogue `id` of the results folder `dir`.
pub fn show(dir: &Path, id: &str) -> anyhow::Result<()> {
    crate::protocol::id::check_dialogue_id(id)?;
    let run = RunDir::open(dir)?;
    if run.is_desk() {
        let found = run.find_desk(id)?;
        return match found {
            Some(record) => {
                print!(
                    "{}",
                    crate::report::transcript::desk_transcript_text(&record)
                );
                Ok(())
            }
            None => bail!(
                "{}: no conversation `{}` in {}",
                dir.display(),
                id.escape_debug(),
                crate::store::desk::DESK_RECORDS
            ),
        };
    }
    match run.find_dialogue(id)? {
        Some(record) => {
            print!("{}", crate::report::transcript::transcript_text(&record));
            Ok(())
        }
        None => bail!(
            "{}: no dialogue `{}` in dialogues.jsonl",
            dir.display(),
            id.escape_debug()
        ),
    }
}
