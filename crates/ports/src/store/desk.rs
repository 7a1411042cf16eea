//! A support-desk run's results: `results/<run-id>/` with manifest.json (a [`DeskManifest`]),
//! desk.jsonl (one line per finished conversation, appended as each finishes),
//! desk-summary.json and desk-leaderboard.txt.

use super::{RunDir, StoreError};
use sage_core::plan::desk::DeskConfig;
use sage_core::protocol::desk::DeskRecord;
use sage_report::desk::{DeskReportFold, DeskRunInfo};
use sage_report::explorer::Embedded;
use std::path::{Path, PathBuf};

/// The records file of a support-desk run.
pub const DESK_RECORDS: &str = "desk.jsonl";

/// What a support-desk run was (manifest.json): the configuration and the SHA-256 of its
/// store's store.yaml and cases.yaml texts (`inputs_sha256`).
pub type DeskManifest = super::suite::SuiteManifest<DeskConfig>;

impl RunDir {
    /// Whether the folder holds a support-desk run (its manifest says so; a folder without a
    /// readable manifest: whether it has desk.jsonl).
    pub fn is_desk(&self) -> bool {
        match self.read_json::<serde_json::Value>("manifest.json") {
            Ok(manifest) => manifest["suite"] == "support-desk",
            Err(_) => self.path().join(DESK_RECORDS).exists(),
        }
    }
}

/// What the report's run header shows of a desk manifest.
pub fn run_info(manifest: &DeskManifest) -> DeskRunInfo {
    let config = &manifest.config;
    DeskRunInfo {
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
        store: config.store.clone(),
        store_sha256: match manifest.inputs_sha256.as_slice() {
            [store, cases] => (store.clone(), cases.clone()),
            _ => Default::default(),
        },
        jobs: Some(manifest.jobs),
    }
}

/// A support-desk run's HTML report being folded, one record at a time, as the run writes its
/// records or as desk.jsonl is read.
pub struct DeskPage {
    fold: DeskReportFold,
}

impl DeskPage {
    /// An empty report of the run in `run`, its header from the folder's manifest (a folder
    /// without a readable manifest gets a header with its folder name only).
    pub fn new(run: &RunDir) -> DeskPage {
        let info = match run.read_json::<DeskManifest>("manifest.json") {
            Ok(manifest) => run_info(&manifest),
            Err(_) => DeskRunInfo {
                run_id: run.folder_name(),
                ..DeskRunInfo::default()
            },
        };
        DeskPage {
            fold: DeskReportFold::new(info).with_limits(super::explorer_limits()),
        }
    }

    /// Writes the page to `out`, by default report.html in the folder, atomically (the
    /// conversations the explorer embeds read back from desk.jsonl); its path and what the
    /// explorer embeds.
    pub fn write_to(
        &mut self,
        run: &RunDir,
        out: Option<&Path>,
    ) -> Result<(PathBuf, Embedded), StoreError> {
        let run_id = self.fold.run_id();
        run.write_explorer_page(out, (DESK_RECORDS, &run_id), |w, records, spool, show| {
            self.fold.write_page(w, records, spool, show)
        })
    }
}

impl super::suite::Page<DeskRecord> for DeskPage {
    fn add(&mut self, record: &DeskRecord, at: u64) {
        self.fold.add(record, at);
    }

    fn write(
        &mut self,
        run: &RunDir,
        out: Option<&Path>,
    ) -> Result<Option<(PathBuf, Embedded)>, StoreError> {
        self.write_to(run, out).map(Some)
    }
}
