//! `sage export DIR --format tau2`: a tau2 retail run folder written as tau2-bench's results
//! JSON ([`sage_core::tau2::export`]), one simulation at a time (memory grows with one record,
//! never with the run).

use super::suite::SuiteManifest;
use super::{RunDir, StoreError};
use sage_core::suite::Suite;
use sage_core::tau2::export;
use sage_core::tau2::run::{Tau2Config, Tau2Record, Tau2Retail, World};
use sage_report::explorer::Embedded;
use sage_report::tau2::{Tau2ReportFold, Tau2RunInfo};
use std::io::Write;
use std::path::PathBuf;

/// Writes the run in `run` to `out` as tau2's results JSON; returns how many simulations.
pub fn export_results(run: &RunDir, out: &mut dyn Write) -> Result<usize, StoreError> {
    let manifest: SuiteManifest<Tau2Config> = run.read_json("manifest.json")?;
    let io = |e: std::io::Error| StoreError::Io {
        path: run.path().to_path_buf(),
        error: e,
    };
    let header = serde_json::json!({
        "timestamp": manifest.created_at,
        "info": export::info(&manifest.config),
        "tasks": export::tasks(&manifest.config.tasks),
    });
    // The header without its closing brace, then the simulations as they are read.
    let header = serde_json::to_string(&header).map_err(|e| StoreError::Corrupt {
        path: run.path().join("manifest.json"),
        message: e.to_string(),
    })?;
    out.write_all(&header.as_bytes()[..header.len() - 1])
        .map_err(io)?;
    out.write_all(b",\"simulations\":[").map_err(io)?;
    let world = World::bundled();
    let mut written = 0;
    let mut failed = None;
    run.scan_jsonl(Tau2Retail::RECORDS, |record: Tau2Record| {
        if failed.is_some() {
            return;
        }
        let basis = world
            .task(&record.job.task)
            .map(|t| t.reward_basis().to_vec())
            .unwrap_or_default();
        let simulation = export::simulation(&record, &basis);
        let sep: &[u8] = if written == 0 { b"" } else { b"," };
        let done = out
            .write_all(sep)
            .and_then(|()| serde_json::to_writer(&mut *out, &simulation).map_err(Into::into));
        match done {
            Ok(()) => written += 1,
            Err(e) => failed = Some(e),
        }
    })?;
    if let Some(e) = failed {
        return Err(io(e));
    }
    out.write_all(b"]}\n").map_err(io)?;
    Ok(written)
}

/// What the report's run facts show of a tau2 retail run's manifest.
pub fn run_info(manifest: &SuiteManifest<Tau2Config>) -> Tau2RunInfo {
    let config = &manifest.config;
    Tau2RunInfo {
        run_id: manifest.run_id.clone(),
        created_at: manifest.created_at.clone(),
        sage_version: manifest.sage_version.clone(),
        seed: Some(config.seed),
        repeats: Some(config.repeats),
        max_turns: Some(config.max_turns),
        agents: config.agents.clone(),
        customer_model: config.customer_model.clone(),
        judge_models: config.judge_models.clone(),
        simulated_models: manifest.simulated_models.clone(),
        tasks: Some(manifest.jobs / (config.agents.len() * config.repeats as usize).max(1)),
    }
}

/// A tau2 retail run's HTML report being folded, one record at a time, as the run writes its
/// records or as tau2.jsonl is read.
pub struct Tau2Page {
    fold: Tau2ReportFold,
}

impl Tau2Page {
    /// An empty report of the run in `run`, its header from the folder's manifest (a folder
    /// without a readable manifest gets a header with its folder name only).
    pub fn new(run: &RunDir) -> Tau2Page {
        let info = match run.read_json::<SuiteManifest<Tau2Config>>("manifest.json") {
            Ok(manifest) => run_info(&manifest),
            Err(_) => Tau2RunInfo {
                run_id: run.folder_name(),
                ..Tau2RunInfo::default()
            },
        };
        Tau2Page {
            fold: Tau2ReportFold::new(info).with_limits(super::explorer_limits()),
        }
    }
}

impl super::suite::Page<Tau2Record> for Tau2Page {
    fn add(&mut self, record: &Tau2Record, at: u64) {
        self.fold.add(record, at);
    }

    /// Writes the page atomically (the simulations the explorer embeds read back from
    /// tau2.jsonl).
    fn write(
        &mut self,
        run: &RunDir,
        out: Option<&std::path::Path>,
    ) -> Result<Option<(PathBuf, Embedded)>, StoreError> {
        let run_id = self.fold.run_id();
        let ids = (Tau2Retail::RECORDS, run_id.as_str());
        run.write_explorer_page(out, ids, |w, records, spool, show| {
            self.fold.write_page(w, records, spool, show)
        })
        .map(Some)
    }
}
