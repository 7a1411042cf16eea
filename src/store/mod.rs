//! Results on disk: `results/<run-id>/` with manifest.json, dialogues.jsonl (one line per
//! finished dialogue, appended and flushed as each finishes, so a killed run loses nothing it
//! finished), summary.json and leaderboard.md; resume; training-data export.

pub mod desk;
pub mod export;

use crate::plan::RunConfig;
use crate::protocol::DialogueRecord;
use crate::sop::Sop;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::collections::BTreeSet;
use std::fs::{self, File, OpenOptions};
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// A results problem, naming the file.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// Reading or writing failed.
    #[error("{path}: {source}")]
    Io {
        /// The file or folder.
        path: PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
    /// A file's content is not what SAGE-RS wrote.
    #[error("{path}: {message}")]
    Corrupt {
        /// The file.
        path: PathBuf,
        /// What is wrong (with the line number).
        message: String,
    },
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> StoreError + '_ {
    move |source| StoreError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// What a run was: its configuration, versions and seed (manifest.json).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Manifest {
    /// The run id (the folder's name).
    pub run_id: String,
    /// When it started (UTC, RFC 3339).
    pub created_at: String,
    /// SAGE-RS version.
    pub sage_version: String,
    /// The full configuration (API keys are never in it: only the names of their variables).
    pub config: RunConfig,
    /// Scenario ids with the SHA-256 of their YAML.
    pub scenarios: Vec<(String, String)>,
    /// Number of dialogue jobs.
    pub jobs: usize,
    /// Models that are built-in simulations (labelled as such in every output).
    pub simulated_models: Vec<String>,
}

impl Manifest {
    /// The manifest of a new run of `config` over `scenarios` (each with its YAML text).
    pub fn new(
        run_id: &str,
        config: &RunConfig,
        scenarios: &[(Arc<Sop>, String)],
        jobs: usize,
    ) -> Manifest {
        Manifest {
            run_id: run_id.to_string(),
            created_at: now_utc().0,
            sage_version: env!("CARGO_PKG_VERSION").into(),
            config: config.clone(),
            scenarios: Manifest::scenario_hashes(scenarios),
            jobs,
            simulated_models: simulated_models(&config.models),
        }
    }

    /// Scenario ids with the SHA-256 of their YAML text.
    pub fn scenario_hashes(scenarios: &[(Arc<Sop>, String)]) -> Vec<(String, String)> {
        scenarios
            .iter()
            .map(|(s, text)| {
                (
                    s.scenario().id.clone(),
                    hex::encode(Sha256::digest(text.as_bytes())),
                )
            })
            .collect()
    }
}

/// The names of the models that are built-in simulations.
pub fn simulated_models(models: &[crate::llm::ModelConfig]) -> Vec<String> {
    models
        .iter()
        .filter(|m| m.provider == crate::llm::Provider::Simulated)
        .map(|m| m.name.clone())
        .collect()
}

/// Summarizes a run folder from dialogues.jsonl alone (in dialogue-id order, so the order the
/// records were written in does not matter) and writes summary.json and leaderboard.md;
/// returns the terminal table.
pub fn report(run: &RunDir) -> Result<String, StoreError> {
    let manifest = run.read_manifest()?;
    let mut records = Vec::new();
    run.scan_dialogues(|mut r| {
        for t in &mut r.turns {
            t.calls.iter_mut().for_each(|c| {
                c.request.clear();
                c.response = None;
            });
        }
        records.push(r);
    })?;
    let bootstrap = crate::scoring::Bootstrap {
        seed: manifest.config.seed,
        ..Default::default()
    };
    let summary = crate::scoring::summarize(&records, &bootstrap);
    run.write_json("summary.json", &summary)?;
    run.write_text(
        "leaderboard.md",
        &crate::scoring::leaderboard_markdown(&summary),
    )?;
    Ok(crate::scoring::leaderboard_text(&summary))
}

/// A run's results folder.
#[derive(Debug, Clone)]
pub struct RunDir {
    dir: PathBuf,
}

impl RunDir {
    /// Creates `base/run_id/` (an existing non-empty folder is refused: use resume).
    pub fn create(base: &Path, run_id: &str) -> Result<RunDir, StoreError> {
        let dir = base.join(run_id);
        if dir.join("dialogues.jsonl").exists() {
            return Err(StoreError::Corrupt {
                path: dir,
                message: "already holds a run; resume it with --resume or choose another run id"
                    .into(),
            });
        }
        fs::create_dir_all(&dir).map_err(io(&dir))?;
        Ok(RunDir { dir })
    }

    /// Opens an existing run folder.
    pub fn open(dir: &Path) -> Result<RunDir, StoreError> {
        let manifest = dir.join("manifest.json");
        if !manifest.exists() {
            return Err(StoreError::Corrupt {
                path: dir.to_path_buf(),
                message: "no manifest.json: not a SAGE-RS results folder".into(),
            });
        }
        Ok(RunDir {
            dir: dir.to_path_buf(),
        })
    }

    /// The folder.
    pub fn path(&self) -> &Path {
        &self.dir
    }

    fn file(&self, name: &str) -> PathBuf {
        self.dir.join(name)
    }

    /// Writes manifest.json.
    pub fn write_manifest(&self, manifest: &Manifest) -> Result<(), StoreError> {
        self.write_json("manifest.json", manifest)
    }

    /// Reads manifest.json.
    pub fn read_manifest(&self) -> Result<Manifest, StoreError> {
        self.read_json("manifest.json")
    }

    /// Reads a JSON file of the run.
    pub fn read_json<T: serde::de::DeserializeOwned>(&self, name: &str) -> Result<T, StoreError> {
        let path = self.file(name);
        let text = fs::read_to_string(&path).map_err(io(&path))?;
        serde_json::from_str(&text).map_err(|e| StoreError::Corrupt {
            path,
            message: e.to_string(),
        })
    }

    /// Writes any JSON file of the run (atomically: a temporary file renamed).
    pub fn write_json(&self, name: &str, value: &impl Serialize) -> Result<(), StoreError> {
        let text = serde_json::to_string_pretty(value).map_err(|e| StoreError::Corrupt {
            path: self.file(name),
            message: e.to_string(),
        })?;
        self.write_text(name, &(text + "\n"))
    }

    /// Writes a text file of the run (atomically).
    pub fn write_text(&self, name: &str, text: &str) -> Result<(), StoreError> {
        let path = self.file(name);
        let tmp = self.file(&format!(".{name}.tmp"));
        fs::write(&tmp, text).map_err(io(&tmp))?;
        fs::rename(&tmp, &path).map_err(io(&path))
    }

    /// Opens dialogues.jsonl for appending. A last line cut off by a killed process is removed
    /// first, so the next record starts on a line of its own.
    pub fn writer(&self) -> Result<DialogueWriter, StoreError> {
        self.jsonl_writer("dialogues.jsonl")
    }

    /// An appending writer of the JSON-lines file `name` in the folder (a cut-off last line is
    /// dropped first).
    pub fn jsonl_writer(&self, name: &str) -> Result<DialogueWriter, StoreError> {
        let path = self.file(name);
        if path.exists() {
            let text = fs::read(&path).map_err(io(&path))?;
            if let Some(last_newline) = text.iter().rposition(|b| *b == b'\n') {
                if last_newline + 1 != text.len() {
                    let f = OpenOptions::new()
                        .write(true)
                        .open(&path)
                        .map_err(io(&path))?;
                    f.set_len((last_newline + 1) as u64).map_err(io(&path))?;
                }
            } else if !text.is_empty() {
                File::create(&path).map_err(io(&path))?;
            }
        }
        let file = OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
            .map_err(io(&path))?;
        Ok(DialogueWriter {
            file,
            path,
            line: Vec::with_capacity(64 * 1024),
        })
    }

    /// Every complete record in dialogues.jsonl, in file order. A cut-off last line (a killed
    /// run) is skipped; any other bad line is an error naming its number.
    pub fn read_dialogues(&self) -> Result<Vec<DialogueRecord>, StoreError> {
        let mut out = Vec::new();
        self.scan_dialogues(|r| out.push(r))?;
        Ok(out)
    }

    /// Calls `f` with every complete record, without holding them all.
    pub fn scan_dialogues(&self, f: impl FnMut(DialogueRecord)) -> Result<(), StoreError> {
        self.scan_jsonl("dialogues.jsonl", f)
    }

    /// Calls `f` with every complete record of the JSON-lines file `name` (none when it does
    /// not exist). A cut-off last line (a killed run) is skipped; any other bad line is an
    /// error naming its number.
    pub fn scan_jsonl<T: serde::de::DeserializeOwned>(
        &self,
        name: &str,
        mut f: impl FnMut(T),
    ) -> Result<(), StoreError> {
        let path = self.file(name);
        if !path.exists() {
            return Ok(());
        }
        let file = File::open(&path).map_err(io(&path))?;
        let mut lines = BufReader::new(file).lines().enumerate().peekable();
        while let Some((i, line)) = lines.next() {
            let line = line.map_err(io(&path))?;
            if line.trim().is_empty() {
                continue;
            }
            match serde_json::from_str::<T>(&line) {
                Ok(r) => f(r),
                Err(_) if lines.peek().is_none() => {} // cut off by a killed run
                Err(e) => {
                    return Err(StoreError::Corrupt {
                        path,
                        message: format!("line {}: {e}", i + 1),
                    });
                }
            }
        }
        Ok(())
    }

    /// The dialogue ids already finished.
    pub fn finished_ids(&self) -> Result<BTreeSet<String>, StoreError> {
        self.stored_ids("dialogues.jsonl")
    }

    /// The job ids (`job.dialogue_id`) of every complete record of the JSON-lines file `name`.
    pub fn stored_ids(&self, name: &str) -> Result<BTreeSet<String>, StoreError> {
        #[derive(Deserialize)]
        struct Head {
            job: JobId,
        }
        #[derive(Deserialize)]
        struct JobId {
            dialogue_id: String,
        }
        let mut ids = BTreeSet::new();
        self.scan_jsonl(name, |h: Head| {
            ids.insert(h.job.dialogue_id);
        })?;
        Ok(ids)
    }
}

/// Appends finished dialogues, one line each, flushed at once.
pub struct DialogueWriter {
    file: File,
    path: PathBuf,
    /// The line being written, reused (records are tens of kilobytes).
    line: Vec<u8>,
}

impl DialogueWriter {
    /// Appends one record as a line and hands it to the operating system before returning.
    pub fn append(&mut self, record: &impl Serialize) -> Result<(), StoreError> {
        self.line.clear();
        serde_json::to_writer(&mut self.line, record).map_err(|e| StoreError::Corrupt {
            path: self.path.clone(),
            message: e.to_string(),
        })?;
        self.line.push(b'\n');
        self.file.write_all(&self.line).map_err(io(&self.path))?;
        self.file.flush().map_err(io(&self.path))
    }

    /// Appends a record already serialized as one line of JSON (as a worker sent it), without
    /// decoding and encoding it again. Text holding a line break is refused (it would be two
    /// lines).
    pub fn append_json(&mut self, json: &[u8]) -> Result<(), StoreError> {
        if json.contains(&b'\n') {
            return Err(StoreError::Corrupt {
                path: self.path.clone(),
                message: "a record to append spans several lines".into(),
            });
        }
        self.line.clear();
        self.line.extend_from_slice(json);
        self.line.push(b'\n');
        self.file.write_all(&self.line).map_err(io(&self.path))?;
        self.file.flush().map_err(io(&self.path))
    }
}

/// The current UTC time as RFC 3339 (`2026-11-21T23:15:00Z`) and as a compact id part
/// (`20261121-231500`).
pub fn now_utc() -> (String, String) {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0);
    let (days, rem) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    // Civil date from days since 1970-01-01 (H. Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    let (hh, mm, ss) = (rem / 3600, rem % 3600 / 60, rem % 60);
    (
        format!("{y:04}-{m:02}-{d:02}T{hh:02}:{mm:02}:{ss:02}Z"),
        format!("{y:04}{m:02}{d:02}-{hh:02}{mm:02}{ss:02}"),
    )
}
