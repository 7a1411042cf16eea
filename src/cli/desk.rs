//! `sage report` of a support-desk folder: wiring only (`sage run --suite support-desk` is the
//! one lifecycle's, [`super::suite`]).

use sage_ports::store::desk::DeskManifest;
use sage_ports::store::{RunDir, inputs};
use std::path::Path;

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
