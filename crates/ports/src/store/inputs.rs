//! The files a run is made from, read and checked where they enter: run and desk
//! configurations, the scenarios a configuration names (bundled or files), a support-desk store
//! (a folder, or the bundled Northline), and, for a stored run, its scenarios or store as they
//! were when it ran (manifest.json's SHA-256). The command line only names them.

use super::Manifest;
use sage_core::plan::config::ConfigError;
use sage_core::plan::desk::DeskConfig;
use sage_core::plan::{JobSet, RunConfig};
use sage_core::scenario::ScenarioError;
use sage_core::scenario::bundled::{BUNDLED, NORTHLINE};
use sage_core::scenario::desk::Desk;
use sage_core::sop::{self, Sop};
use std::path::Path;
use std::sync::Arc;

/// An input file that cannot be read or is not what it should be.
#[derive(Debug, thiserror::Error)]
pub enum InputError {
    /// A configuration or store file cannot be read.
    #[error("{path}: {source}")]
    Read {
        /// The file.
        path: String,
        /// Why.
        source: std::io::Error,
    },
    /// A scenario file a configuration names cannot be read.
    #[error("scenario {path}: {source}")]
    ReadScenario {
        /// The file, as the configuration names it.
        path: String,
        /// Why.
        source: std::io::Error,
    },
    /// A configuration that does not parse or check.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// A scenario or store that does not parse or check.
    #[error(transparent)]
    Scenario(#[from] ScenarioError),
    /// One scenario given twice (it would play, and count, every dialogue twice).
    #[error(
        "scenarios: {given} is scenario `{id}`, which {first} already gives; expected each scenario once"
    )]
    ScenarioTwice {
        /// How the second one was given.
        given: String,
        /// The scenario's id.
        id: String,
        /// How the first one was given.
        first: String,
    },
    /// A folder named as a store holds no store.yaml or cases.yaml.
    #[error(
        "{store}: not a support-desk store: a store folder holds store.yaml and cases.yaml (docs/support-desk.md), and {missing} missing{hint}"
    )]
    NotAStore {
        /// The folder.
        store: String,
        /// The files it lacks.
        missing: String,
        /// What to do instead, when it is a folder.
        hint: &'static str,
    },
    /// The store of a stored run is not the one it ran with.
    #[error(
        "store `{store}` changed since run {run} started (its SHA-256 differs from {manifest})"
    )]
    StoreChanged {
        /// The store.
        store: String,
        /// The run.
        run: String,
        /// The run's manifest.json.
        manifest: String,
    },
    /// The scenarios of a stored run are not all as they were.
    #[error("its scenarios are not all as they were")]
    ScenariosChanged,
}

/// The text of `path`.
fn read(path: &Path) -> Result<String, InputError> {
    std::fs::read_to_string(path).map_err(|source| InputError::Read {
        path: path.display().to_string(),
        source,
    })
}

/// Reads a run configuration file (docs/run-config.md).
pub fn read_config(path: &Path) -> Result<RunConfig, InputError> {
    Ok(RunConfig::from_yaml(
        &read(path)?,
        &path.display().to_string(),
    )?)
}

/// Reads a desk configuration file, or gives the default one.
pub fn read_desk_config(path: Option<&Path>) -> Result<DeskConfig, InputError> {
    match path {
        Some(path) => Ok(DeskConfig::from_yaml(
            &read(path)?,
            &path.display().to_string(),
        )?),
        None => Ok(DeskConfig::default()),
    }
}

/// Reads a configuration of the suite `S` from its file (bounded, checked), or its default.
pub fn read_suite_config<S: sage_core::suite::Suite>(
    path: Option<&Path>,
) -> Result<S::Config, InputError> {
    match path {
        Some(path) => Ok(S::config(&read(path)?, &path.display().to_string())?),
        None => Ok(S::Config::default()),
    }
}

/// Loads the scenarios a configuration names (`bundled`, or files), each with its YAML text.
pub fn load_scenarios(config: &RunConfig) -> Result<Vec<(Arc<Sop>, String)>, InputError> {
    Ok(load_named_scenarios(config)?
        .into_iter()
        .map(|(sop, _, text)| (sop, text))
        .collect())
}

/// Loads the scenarios a configuration names, each with its name (file or bundled name) and
/// its YAML text; one scenario given twice is an error.
pub fn load_named_scenarios(
    config: &RunConfig,
) -> Result<Vec<(Arc<Sop>, String, String)>, InputError> {
    let mut out = Vec::new();
    for entry in &config.scenarios {
        if entry == "bundled" {
            for (name, text) in BUNDLED {
                out.push((
                    Arc::new(sop::from_yaml(text, name)?),
                    name.to_string(),
                    text.to_string(),
                ));
            }
        } else {
            let text =
                std::fs::read_to_string(entry).map_err(|source| InputError::ReadScenario {
                    path: entry.clone(),
                    source,
                })?;
            out.push((Arc::new(sop::from_yaml(&text, entry)?), entry.clone(), text));
        }
    }
    let given_as = |name: &str| {
        if BUNDLED.iter().any(|(b, _)| *b == name) && !config.scenarios.iter().any(|s| s == name) {
            format!("`bundled` ({name})")
        } else {
            format!("`{name}`")
        }
    };
    for (i, (sop, name, _)) in out.iter().enumerate() {
        let id = &sop.scenario().id;
        if let Some((_, first, _)) = out[..i].iter().find(|(s, _, _)| &s.scenario().id == id) {
            return Err(InputError::ScenarioTwice {
                given: given_as(name),
                id: id.clone(),
                first: given_as(first),
            });
        }
    }
    Ok(out)
}

/// The compiled scenarios of a stored run: those its configuration names that still load and
/// whose text is the one the run used (manifest.json's SHA-256), and, for its HTML report, a
/// warning for each one left out (or one for all, when they do not load): its graph is not drawn.
pub fn stored_scenarios(manifest: &Manifest) -> (Vec<Arc<Sop>>, Vec<String>) {
    let loaded = match load_scenarios(&manifest.config) {
        Ok(loaded) => loaded,
        Err(e) => {
            let why =
                format!("the run's scenarios do not load ({e}); the report has no SOP graphs");
            return (Vec::new(), vec![why]);
        }
    };
    let hashes = Manifest::scenario_hashes(&loaded);
    let mut changed = Vec::new();
    let sops = loaded
        .into_iter()
        .zip(hashes)
        .filter_map(|((sop, _), (id, hash))| {
            if manifest
                .scenarios
                .iter()
                .any(|(i, h)| *i == id && *h == hash)
            {
                Some(sop)
            } else {
                changed.push(format!(
                    "scenario `{id}` changed since the run; its graph is left out of the report"
                ));
                None
            }
        })
        .collect();
    (sops, changed)
}

/// The jobs of a stored SAGE run, planned again from its manifest with `sops` (its scenarios as
/// they were, from [`stored_scenarios`]); an error when they cannot be (a scenario changed or
/// is gone).
pub fn stored_jobs(manifest: &Manifest, sops: &[Arc<Sop>]) -> Result<JobSet, InputError> {
    (sops.len() == manifest.scenarios.len())
        .then(|| sage_core::plan::Plan::new(&manifest.config, &manifest.run_id, sops))
        .filter(|plan| plan.len() == manifest.jobs)
        .map(|plan| JobSet::of(plan.jobs(), |j| &j.dialogue_id))
        .ok_or(InputError::ScenariosChanged)
}

/// The texts of a store folder's store.yaml and cases.yaml, or of the bundled Northline store.
pub fn read_store(store: &str) -> Result<(String, String), InputError> {
    if store == "bundled" {
        let (s, c) = NORTHLINE;
        return Ok((s.to_string(), c.to_string()));
    }
    let dir = Path::new(store);
    let missing: Vec<&str> = ["store.yaml", "cases.yaml"]
        .into_iter()
        .filter(|f| !dir.join(f).is_file())
        .collect();
    if !missing.is_empty() {
        return Err(InputError::NotAStore {
            store: store.to_string(),
            missing: missing.join(" and "),
            hint: if dir.is_dir() {
                "; to validate scenario files, name the files (e.g. scenarios/*.yaml)"
            } else {
                ""
            },
        });
    }
    Ok((
        read(&dir.join("store.yaml"))?,
        read(&dir.join("cases.yaml"))?,
    ))
}

/// Loads a store from its texts; `store` (a folder or `bundled`) names the files in errors.
pub fn parse_store(store: &str, texts: (&str, &str)) -> Result<Desk, InputError> {
    let dir = if store == "bundled" {
        Path::new("northline")
    } else {
        Path::new(store)
    };
    let files = (
        dir.join("store.yaml").display().to_string(),
        dir.join("cases.yaml").display().to_string(),
    );
    Ok(Desk::from_yaml(texts.0, texts.1, (&files.0, &files.1))?)
}

/// Loads a store folder (store.yaml + cases.yaml), or the bundled Northline store.
pub fn load_desk(store: &str) -> Result<Desk, InputError> {
    let (s, c) = read_store(store)?;
    parse_store(store, (&s, &c))
}
