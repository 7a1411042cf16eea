//! `sage export DIR --format tau2`: a tau2 retail run folder written as tau2-bench's results
//! JSON ([`sage_core::tau2::export`]), one simulation at a time (memory grows with one record,
//! never with the run).

use super::suite::SuiteManifest;
use super::{RunDir, StoreError};
use sage_core::suite::Suite;
use sage_core::tau2::export;
use sage_core::tau2::run::{Tau2Config, Tau2Record, Tau2Retail, World};
use std::io::Write;

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
