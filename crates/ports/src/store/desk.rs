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

    /// The first support-desk record of conversation `id`, if any (desk.jsonl read up to it).
    pub fn find_desk(&self, id: &str) -> Result<Option<DeskRecord>, StoreError> {
        enum Stop {
            Found(Box<DeskRecord>),
            Failed(StoreError),
        }
        impl From<StoreError> for Stop {
            fn from(e: StoreError) -> Stop {
                Stop::Failed(e)
            }
        }
        let scanned = self.scan_jsonl_at(DESK_RECORDS, |_, r: DeskRecord| {
            if r.job.dialogue_id == id {
                Err(Stop::Found(Box::new(r)))
            } else {
                Ok(())
            }
        });
        match scanned {
            Ok(()) => Ok(None),
            Err(Stop::Found(r)) => Ok(Some(*r)),
            Err(Stop::Failed(e)) => Err(e),
        }
    }

    /// Calls `f` with every complete support-desk record.
    pub fn scan_desk(&self, f: impl FnMut(DeskRecord)) -> Result<(), StoreError> {
        self.scan_jsonl(DESK_RECORDS, f)
    }
}

/// What [`desk_report`] found.
#[derive(Debug, Clone, PartialEq)]
pub struct DeskReport {
    /// The per-metric table, and the records left out as repeated.
    pub reported: super::Reported,
    /// Conversations stopped by an infrastructure error (left out of the metrics).
    pub infra_errors: usize,
    /// Agent turns cut off at the model's token limit.
    pub truncated_turns: u64,
}

/// A support-desk run's report, folded one record at a time. It keeps one compact entry per
/// conversation (its job, verdict facts and cost, without the transcript or the model calls):
/// the desk's metrics are medians over repeats of per-repeat ratios, taken once every
/// conversation is in, in model, case and repeat order (so the order the records came in does
/// not matter).
#[derive(Debug, Clone, Default)]
pub struct DeskFold {
    records: Vec<DeskRecord>,
    duplicates: super::Duplicates,
    /// The run's jobs, when the records are checked against them (`sage report`).
    checked: Option<super::RunJobs>,
    foreign: super::ForeignRecords,
}

impl DeskFold {
    /// A fold that leaves out the records not of the run (`jobs`), with a warning.
    pub fn checking(jobs: super::RunJobs) -> DeskFold {
        DeskFold {
            checked: Some(jobs),
            ..Default::default()
        }
    }

    /// Folds a record in; false (and nothing folded) when its dialogue id was folded already,
    /// or it is not of the run checked.
    pub fn add(&mut self, record: &DeskRecord) -> bool {
        if let Some(Err(why)) = self.checked.as_ref().map(|jobs| jobs.check(record)) {
            self.foreign.note(why);
            return false;
        }
        if !self.duplicates.first(&record.job.dialogue_id) {
            return false;
        }
        self.records.push(sage_report::desk::compact(record));
        true
    }

    /// Writes desk-summary.json and desk-leaderboard.txt of the records folded so far.
    pub fn write(&self, run: &RunDir) -> Result<DeskReport, StoreError> {
        self.report(run, true)
    }

    /// The report of the conversations folded so far; with `files`, desk-summary.json and
    /// desk-leaderboard.txt written into the folder too.
    fn report(&self, run: &RunDir, files: bool) -> Result<DeskReport, StoreError> {
        let records = &self.records;
        let rows = sage_report::desk::model_rows(records);
        let text = sage_core::scoring::desk::table(&rows);
        if files {
            run.write_json("desk-summary.json", &rows)?;
            run.write_text("desk-leaderboard.txt", &text)?;
        }
        Ok(DeskReport {
            reported: super::Reported {
                table: text,
                duplicates: self.duplicates.clone(),
                foreign: self.foreign.clone(),
                file: run.path().join(DESK_RECORDS),
                unreached: Vec::new(),
                unjudged: None,
                html: None,
                explorer: None,
                budget: None,
                adaptive: None,
            },
            infra_errors: records.iter().filter(|r| r.infra_error.is_some()).count(),
            truncated_turns: records.iter().map(|r| u64::from(r.truncated_turns)).sum(),
        })
    }
}

/// Summarizes a support-desk run from desk.jsonl alone, reading it once (in model, case and
/// repeat order, so the order the records were written in does not matter; a dialogue id met
/// twice counts once, a record not of the run's `jobs` is left out) and, with `files`, writes
/// desk-summary.json and desk-leaderboard.txt.
pub fn desk_report(
    run: &RunDir,
    files: bool,
    jobs: super::RunJobs,
) -> Result<DeskReport, StoreError> {
    let mut fold = DeskFold::checking(jobs);
    run.scan_desk(|r: DeskRecord| {
        fold.add(&r);
    })?;
    fold.report(run, files)
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

    /// Folds a record in, whose line starts at byte `at` of desk.jsonl.
    pub fn add(&mut self, record: &DeskRecord, at: u64) {
        self.fold.add(record, at);
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
        DeskPage::add(self, record, at);
    }

    /// Writes report.html into the run's folder ([`DeskPage::write_to`]).
    fn write(&mut self, run: &RunDir) -> Result<Option<(PathBuf, Embedded)>, StoreError> {
        self.write_to(run, None).map(Some)
    }
}

/// Writes the HTML report of the support-desk run in `run` (desk.jsonl read once, folded by
/// [`DeskPage`], the conversations its explorer embeds read again by their offset) to `out`,
/// by default report.html in the folder, atomically; its path and what the explorer embeds.
/// `sage report DIR --html` and the aggregator (when a run completes) write it here; `sage run
/// --suite support-desk` folds the same page as it writes the records. With `jobs`, the
/// records not of the run are left out (as by [`desk_report`]).
pub fn write_desk_html(
    run: &RunDir,
    out: Option<&Path>,
    jobs: Option<&super::RunJobs>,
) -> Result<(PathBuf, Embedded), StoreError> {
    let mut page = DeskPage::new(run);
    run.scan_jsonl_at(DESK_RECORDS, |at, r: DeskRecord| {
        if jobs.is_some_and(|jobs| jobs.check(&r).is_err()) {
            return Ok(());
        }
        page.add(&r, at);
        Ok::<(), StoreError>(())
    })?;
    page.write_to(run, out)
}
