//! What a run folder of any suite ([`sage_core::suite::Suite`]) holds besides its records: the
//! manifest (the configuration as it ran, the suite's name, the job count), so a run resumes
//! with what it started with.

use sage_core::suite::Suite;
use serde::{Deserialize, Serialize};

/// manifest.json of a suite's run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SuiteManifest<C> {
    /// The run id (the folder's name).
    #[serde(deserialize_with = "sage_core::protocol::id::run_id")]
    pub run_id: String,
    /// The suite ([`Suite::NAME`]).
    pub suite: String,
    /// When it started (UTC, RFC 3339).
    pub created_at: String,
    /// SAGE-RS version.
    pub sage_version: String,
    /// The full configuration (API keys are never in it: only the names of their variables).
    pub config: C,
    /// SHA-256 of each input text the run's world was built from (the support desk's
    /// store.yaml and cases.yaml), in order: a run resumes, and its jobs are planned again,
    /// only from the same texts. Empty for a world bundled with the binary.
    #[serde(default, skip_serializing_if = "Vec::is_empty", alias = "store_sha256")]
    pub inputs_sha256: Vec<String>,
    /// Conversations in the run.
    pub jobs: usize,
    /// Models that are built-in simulations.
    pub simulated_models: Vec<String>,
}

impl<C: Clone> SuiteManifest<C> {
    /// The manifest of a new run of `S` with `config`, its world built from the texts
    /// `inputs`, and `jobs` jobs.
    pub fn new<S: Suite<Config = C>>(
        run_id: &str,
        config: &C,
        inputs: &[&str],
        jobs: usize,
    ) -> Self {
        SuiteManifest {
            run_id: run_id.to_string(),
            suite: S::NAME.into(),
            created_at: super::now_utc().0,
            sage_version: env!("CARGO_PKG_VERSION").into(),
            config: config.clone(),
            inputs_sha256: hashes(inputs),
            jobs,
            simulated_models: super::simulated_models(S::models(config)),
        }
    }

    /// Whether `inputs` are the texts the run's world was built from.
    pub fn same_inputs(&self, inputs: &[&str]) -> bool {
        hashes(inputs) == self.inputs_sha256
    }
}

/// The SHA-256 of each text, in hex.
fn hashes(texts: &[&str]) -> Vec<String> {
    use sha2::{Digest, Sha256};
    texts
        .iter()
        .map(|t| hex::encode(Sha256::digest(t.as_bytes())))
        .collect()
}

/// What a page's explorer embeds.
pub use sage_report::explorer::Embedded;

/// A run's HTML report, folded a record at a time as the records are written or read (each with
/// where its line starts in the records file, so the page reads back the ones it embeds) and
/// written into the run's folder. `()` is the page of a suite without one.
pub trait Page<R>: Send + 'static {
    /// Folds a record in, whose line starts at byte `at` of the records file.
    fn add(&mut self, record: &R, at: u64);
    /// Writes report.html into the run's folder: its path and what its explorer embeds (none
    /// for a suite without a page).
    fn write(
        &mut self,
        run: &super::RunDir,
    ) -> Result<Option<(std::path::PathBuf, Embedded)>, super::StoreError>;
}

impl<R> Page<R> for () {
    fn add(&mut self, _: &R, _: u64) {}
    fn write(
        &mut self,
        _: &super::RunDir,
    ) -> Result<Option<(std::path::PathBuf, Embedded)>, super::StoreError> {
        Ok(None)
    }
}
