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
    /// Writes the page to `out`, by default report.html in the run's folder, atomically: its
    /// path and what its explorer embeds (none for a suite without a page).
    fn write(
        &mut self,
        run: &super::RunDir,
        out: Option<&std::path::Path>,
    ) -> Result<Option<(std::path::PathBuf, Embedded)>, super::StoreError>;
}

impl<R> Page<R> for () {
    fn add(&mut self, _: &R, _: u64) {}
    fn write(
        &mut self,
        _: &super::RunDir,
        _: Option<&std::path::Path>,
    ) -> Result<Option<(std::path::PathBuf, Embedded)>, super::StoreError> {
        Ok(None)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sage_core::desk::SupportDesk;
    use sage_core::plan::desk::DeskConfig;

    /// A manifest keeps the hash of each input text, tells the same texts from changed ones,
    /// and a support-desk manifest of an earlier version (`store_sha256`) is read as it was.
    #[test]
    fn a_manifest_tells_its_inputs_and_reads_the_earlier_store_hashes() {
        let config = DeskConfig::default();
        let manifest = SuiteManifest::new::<SupportDesk>("r1", &config, &["store", "cases"], 3);
        // `echo -n store | sha256sum`
        assert_eq!(
            manifest.inputs_sha256[0],
            "824d80d71985f082a26997a8db88b5d1dd45b777d73585d03d236303e21bde97"
        );
        assert_eq!(manifest.inputs_sha256.len(), 2);
        assert!(manifest.same_inputs(&["store", "cases"]));
        assert!(!manifest.same_inputs(&["store", "cases "]));
        assert!(!manifest.same_inputs(&["store"]));
        let mut json = serde_json::to_value(&manifest).expect("JSON");
        let hashes = json["inputs_sha256"].take();
        let object = json.as_object_mut().expect("an object");
        object.remove("inputs_sha256");
        object.insert("store_sha256".into(), hashes);
        let earlier: SuiteManifest<DeskConfig> = serde_json::from_value(json).expect("read");
        assert_eq!(earlier, manifest);
    }
}
