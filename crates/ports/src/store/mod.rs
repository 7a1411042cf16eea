//! Results on disk: `results/<run-id>/` with manifest.json, dialogues.jsonl (one line per
//! finished dialogue, appended and flushed as each finishes, so a killed run loses nothing it
//! finished), summary.json and leaderboard.md; resume; training-data export.

pub mod desk;
pub mod export;
pub mod inputs;
mod report;
pub mod suite;
pub mod tau2;

pub use report::{
    CALIBRATION_JSON, Duplicates, ForeignRecords, Leave, REPORT_HTML, Reported, RunJobs, SageFold,
    Screened, Unjudged, Unreached, report, report_html, run_info, show_command, unmeasured_error,
    write_labels_page,
};

use sage_core::plan::RunConfig;
use sage_core::protocol::DialogueRecord;
use sage_core::sop::Sop;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use std::fs::{self, File, OpenOptions};
use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// A results problem, naming the file.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// Reading or writing failed.
    #[error("{path}: {error}")]
    Io {
        /// The file or folder.
        path: PathBuf,
        /// The OS error (shown in the message, so not a `source`: a cause chain would print
        /// it twice).
        error: std::io::Error,
    },
    /// Another process writes the folder (it holds the folder's `.lock`).
    #[error(
        "{path}: in use by another process ({holder}); one process writes a results folder at a time"
    )]
    InUse {
        /// The folder.
        path: PathBuf,
        /// Who holds it, as its lock file says (process id, start time).
        holder: String,
    },
    /// A run to resume whose scenarios are no longer those it started with.
    #[error(
        "{path}: the scenarios changed since the run started (manifest.json records their SHA-256); resuming would mix two versions. Start a new run."
    )]
    ScenariosChanged {
        /// The run's folder.
        path: PathBuf,
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
    move |error| StoreError::Io {
        path: path.to_path_buf(),
        error,
    }
}

/// The longest line of a records file, its line break included (64 MiB, the most a NATS server
/// lets a message be): a longer line is refused when read, and a longer record when written.
pub const MAX_RECORD_BYTES: usize = 64 * 1024 * 1024;

/// Refuses a records file that is not a regular file (a link to a device would never end, a
/// named pipe would wait for a writer).
fn check_records_file(path: &Path) -> Result<(), StoreError> {
    if fs::metadata(path).map_err(io(path))?.file_type().is_file() {
        return Ok(());
    }
    Err(StoreError::Corrupt {
        path: path.to_path_buf(),
        message: "not a regular file (a records file is one)".into(),
    })
}

/// Opens a records file to read ([`check_records_file`] first).
fn open_records(path: &Path) -> Result<File, StoreError> {
    check_records_file(path)?;
    File::open(path).map_err(io(path))
}

/// The error for a record (`what`) longer than [`MAX_RECORD_BYTES`].
fn too_long(path: &Path, what: String) -> StoreError {
    StoreError::Corrupt {
        path: path.to_path_buf(),
        message: format!(
            "{what} is longer than {} MiB, the most a record can be",
            MAX_RECORD_BYTES >> 20
        ),
    }
}

/// Reads one line of a records file into `line` (its line break included), refusing one longer
/// than [`MAX_RECORD_BYTES`]; the bytes read (0 at the end). `which` names the line in errors.
fn read_record_line(
    reader: &mut impl BufRead,
    line: &mut Vec<u8>,
    path: &Path,
    which: impl FnOnce() -> String,
) -> Result<usize, StoreError> {
    let read = (reader.by_ref().take(MAX_RECORD_BYTES as u64 + 1))
        .read_until(b'\n', line)
        .map_err(io(path))?;
    if read > MAX_RECORD_BYTES {
        return Err(too_long(path, which()));
    }
    Ok(read)
}

/// Writes `text` to the file `path` atomically (a temporary file beside it, then renamed).
pub fn write_file(path: &Path, text: &str) -> Result<(), StoreError> {
    write_file_with(path, |out| out.write_all(text.as_bytes()).map_err(io(path)))
}

/// Writes the file `path` with `write` atomically: into a temporary file beside it (buffered),
/// renamed over `path` once `write` returned and the data is flushed; the temporary file is
/// removed when anything fails.
pub fn write_file_with<E: From<StoreError>>(
    path: &Path,
    write: impl FnOnce(&mut std::io::BufWriter<File>) -> Result<(), E>,
) -> Result<(), E> {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let tmp = path.with_file_name(format!(".{name}.tmp"));
    let file = File::create(&tmp).map_err(io(&tmp))?;
    let mut out = std::io::BufWriter::with_capacity(256 * 1024, file);
    let written = write(&mut out).and_then(|()| {
        let file = out.into_inner().map_err(|e| io(&tmp)(e.into_error()))?;
        file.sync_data().map_err(io(&tmp))?;
        fs::rename(&tmp, path).map_err(io(path))?;
        Ok(())
    });
    if written.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    written
}

/// What a run was: its configuration, versions and seed (manifest.json).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Manifest {
    /// The run id (the folder's name).
    #[serde(deserialize_with = "sage_core::protocol::id::run_id")]
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
    /// Who played the customer, as this version simulates it (absent in manifests written
    /// before it was recorded).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub simulator: Option<sage_core::protocol::simulator::Simulator>,
}

/// SHA-256 of the customer simulator's prompt template
/// ([`sage_core::simulator::template_probe`]), computed once.
pub fn simulator_prompt_sha256() -> &'static str {
    static HASH: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    HASH.get_or_init(|| {
        hex::encode(Sha256::digest(
            sage_core::simulator::template_probe().as_bytes(),
        ))
    })
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
            simulator: sage_core::simulator::describe(config, simulator_prompt_sha256()),
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

/// The claim of one process on a results folder: an exclusive lock on its `.lock` file, held
/// while the process writes and released when it ends (also when it is killed). Let go
/// normally (dropped), the claim removes the file, so a finished folder holds none; a killed
/// process leaves it, unlocked, and the next claim takes it over.
///
/// Removing the file while another process may be about to lock it is safe: the file is
/// removed while still locked, and a claim checks, once it holds its lock, that the file it
/// locked is still the folder's `.lock` (else it locked a removed file, and tries again).
#[derive(Debug)]
pub struct FolderLock {
    file: File,
    path: PathBuf,
}

impl FolderLock {
    /// The name of the lock file in a results folder.
    pub const FILE: &'static str = ".lock";

    /// Claims `dir`, or says who holds it.
    pub fn acquire(dir: &Path) -> Result<FolderLock, StoreError> {
        let path = dir.join(Self::FILE);
        loop {
            let mut file = OpenOptions::new()
                .create(true)
                .truncate(false)
                .read(true)
                .write(true)
                .open(&path)
                .map_err(io(&path))?;
            match file.try_lock() {
                Ok(()) => {}
                Err(fs::TryLockError::WouldBlock) => {
                    let holder = fs::read_to_string(&path).unwrap_or_default();
                    let holder = holder.trim();
                    return Err(StoreError::InUse {
                        path: dir.to_path_buf(),
                        holder: if holder.is_empty() {
                            "a process starting".into()
                        } else {
                            holder.chars().take(200).collect()
                        },
                    });
                }
                Err(fs::TryLockError::Error(e)) => return Err(io(&path)(e)),
            }
            // The holder before may have let go (and removed the file) between the open and
            // the lock: a lock on the removed file claims nothing.
            if !is_file_at(&file, &path).map_err(io(&path))? {
                continue;
            }
            // Who holds it, for the message another process prints.
            let line = format!("pid {} since {}\n", std::process::id(), now_utc().0);
            file.set_len(0).map_err(io(&path))?;
            file.write_all(line.as_bytes()).map_err(io(&path))?;
            return Ok(FolderLock { file, path });
        }
    }
}

impl Drop for FolderLock {
    /// Removes the lock file, still locked, then lets go of the lock (closing the file).
    fn drop(&mut self) {
        if cfg!(unix) && is_file_at(&self.file, &self.path).unwrap_or(false) {
            let _ = fs::remove_file(&self.path);
        }
    }
}

/// Whether the open `file` is the file at `path` now (the same device and inode). Elsewhere
/// than on Unix the lock file is never removed, so it always is.
fn is_file_at(file: &File, path: &Path) -> std::io::Result<bool> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        let open = file.metadata()?;
        match fs::metadata(path) {
            Ok(now) => Ok(now.dev() == open.dev() && now.ino() == open.ino()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
            Err(e) => Err(e),
        }
    }
    #[cfg(not(unix))]
    {
        let _ = (file, path);
        Ok(true)
    }
}

/// A run's results folder.
#[derive(Debug, Clone)]
pub struct RunDir {
    dir: PathBuf,
    /// This process's claim on the folder, when it writes it.
    lock: Option<Arc<FolderLock>>,
}

/// The record files a results folder may hold (SAGE dialogues, support-desk conversations).
const RECORD_FILES: [&str; 2] = ["dialogues.jsonl", desk::DESK_RECORDS];

impl RunDir {
    /// Creates `base/run_id/` and claims it (a folder that already holds records is refused:
    /// resume it). `run_id` must be one plain folder name, so the folder is always a direct
    /// child of `base` (run ids are checked where they enter, [`sage_core::protocol::id`]).
    pub fn create(base: &Path, run_id: &str) -> Result<RunDir, StoreError> {
        let dir = base.join(run_id);
        let plain = matches!(
            Path::new(run_id).components().collect::<Vec<_>>().as_slice(),
            [std::path::Component::Normal(name)] if *name == std::ffi::OsStr::new(run_id)
        );
        if !plain || run_id.len() > 255 {
            return Err(StoreError::Corrupt {
                path: base.to_path_buf(),
                message: format!(
                    "`{}` cannot name a run's folder: expected one plain folder name",
                    run_id
                        .escape_debug()
                        .to_string()
                        .chars()
                        .take(80)
                        .collect::<String>()
                ),
            });
        }
        fs::create_dir_all(&dir).map_err(io(&dir))?;
        let run = RunDir {
            lock: Some(Arc::new(FolderLock::acquire(&dir)?)),
            dir,
        };
        if RECORD_FILES.iter().any(|f| run.dir.join(f).exists()) {
            return Err(StoreError::Corrupt {
                path: run.dir,
                message: "already holds a run; resume it with --resume or choose another run id"
                    .into(),
            });
        }
        Ok(run)
    }

    /// Opens an existing run folder to read it.
    pub fn open(dir: &Path) -> Result<RunDir, StoreError> {
        let manifest = dir.join("manifest.json");
        if !manifest.exists() {
            let message = if dir.is_dir() {
                "no manifest.json: not a SAGE-RS results folder"
            } else {
                "no such folder; expected a results folder (results/<run-id>)"
            };
            return Err(StoreError::Corrupt {
                path: dir.to_path_buf(),
                message: message.into(),
            });
        }
        Ok(RunDir {
            dir: dir.to_path_buf(),
            lock: None,
        })
    }

    /// Claims the folder for writing (resume, the aggregator): fails when another process
    /// writes it.
    pub fn claim(mut self) -> Result<RunDir, StoreError> {
        if self.lock.is_none() {
            self.lock = Some(Arc::new(FolderLock::acquire(&self.dir)?));
        }
        Ok(self)
    }

    /// Lets go of this handle's claim on the folder (the claim ends, and its `.lock` file is
    /// removed, once no writer made from it holds it either).
    pub fn release(mut self) -> RunDir {
        self.lock = None;
        self
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

    /// Claims this stored SAGE run (of `manifest`) to resume it with `scenarios`, checked to be
    /// those it started with (its jobs are derived from them again). With `budgets`, the cost
    /// budgets of that configuration become the run's from now on: manifest.json records them,
    /// so that the summary (and `sage report`) tells the budget in force.
    pub fn resume_sage(
        self,
        manifest: &Manifest,
        scenarios: &[(Arc<Sop>, String)],
        budgets: Option<&RunConfig>,
    ) -> Result<RunDir, StoreError> {
        if Manifest::scenario_hashes(scenarios) != manifest.scenarios {
            return Err(StoreError::ScenariosChanged {
                path: self.dir.clone(),
            });
        }
        let run = self.claim()?;
        if let Some(config) = budgets {
            let mut manifest = manifest.clone();
            manifest.config.max_cost_usd = config.max_cost_usd;
            for model in &mut manifest.config.models {
                if let Some(given) = config.models.iter().find(|m| m.name == model.name) {
                    model.max_cost_usd = given.max_cost_usd;
                }
            }
            run.write_manifest(&manifest)?;
        }
        Ok(run)
    }

    /// Reads manifest.json.
    pub fn read_manifest(&self) -> Result<Manifest, StoreError> {
        let mut value: serde_json::Value = self.read_json("manifest.json")?;
        // A run started before `judge_turns` existed judged every turn (its records' jobs read
        // as `every` too, so that it resumes as the same run).
        if let Some(config) = value.get_mut("config").and_then(|c| c.as_object_mut()) {
            config
                .entry("judge_turns")
                .or_insert_with(|| serde_json::Value::from("every"));
        }
        serde_json::from_value(value).map_err(|e| StoreError::Corrupt {
            path: self.file("manifest.json"),
            message: e.to_string(),
        })
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
    /// dropped first). The writer holds the folder's claim (taken now if this `RunDir` has none),
    /// so two processes never append to one folder.
    pub fn jsonl_writer(&self, name: &str) -> Result<DialogueWriter, StoreError> {
        let lock = match &self.lock {
            Some(lock) => lock.clone(),
            None => Arc::new(FolderLock::acquire(&self.dir)?),
        };
        let path = self.file(name);
        if path.exists() {
            // Checked as a reader would: not a link to a device or a named pipe.
            check_records_file(&path)?;
        }
        let file = OpenOptions::new()
            .create(true)
            .read(true)
            .append(true)
            .open(&path)
            .map_err(io(&path))?;
        // A line cut off (a killed run, a full disk) is taken back: the file ends with its
        // last whole line.
        let offset = whole_lines_end(&file).map_err(io(&path))?;
        if offset != file.metadata().map_err(io(&path))?.len() {
            file.set_len(offset).map_err(io(&path))?;
        }
        Ok(DialogueWriter {
            _lock: lock,
            file,
            path,
            line: Vec::with_capacity(64 * 1024),
            offset,
            cut: false,
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

    /// Calls `f` with every complete record and the byte offset where its line starts.
    pub fn scan_dialogues_at(
        &self,
        mut f: impl FnMut(u64, DialogueRecord),
    ) -> Result<(), StoreError> {
        self.scan_jsonl_at("dialogues.jsonl", |at, r| {
            f(at, r);
            Ok::<(), StoreError>(())
        })
    }

    /// A reader of the records of the JSON-lines file `name` by their offset.
    pub fn reread<T: serde::de::DeserializeOwned>(
        &self,
        name: &str,
    ) -> Result<Reread<T>, StoreError> {
        let path = self.file(name);
        let file = open_records(&path)?;
        Ok(Reread {
            file: BufReader::with_capacity(1 << 16, file),
            path,
            line: Vec::new(),
            _record: std::marker::PhantomData,
        })
    }

    /// The first record of dialogues.jsonl with dialogue id `id`, if any: the file is read up
    /// to it, each line read for its id alone, and the record parsed whole once found.
    pub fn find_dialogue(&self, id: &str) -> Result<Option<DialogueRecord>, StoreError> {
        #[derive(Deserialize)]
        struct Job {
            dialogue_id: String,
        }
        #[derive(Deserialize)]
        struct IdOnly {
            job: Job,
        }
        enum Stop {
            Found(u64),
            Failed(StoreError),
        }
        impl From<StoreError> for Stop {
            fn from(e: StoreError) -> Stop {
                Stop::Failed(e)
            }
        }
        let scanned = self.scan_jsonl_at("dialogues.jsonl", |offset, r: IdOnly| {
            if r.job.dialogue_id == id {
                Err(Stop::Found(offset))
            } else {
                Ok(())
            }
        });
        match scanned {
            Ok(()) => Ok(None),
            Err(Stop::Failed(e)) => Err(e),
            Err(Stop::Found(offset)) => self
                .reread::<DialogueRecord>("dialogues.jsonl")?
                .at(offset)
                .map(Some),
        }
    }

    /// Whether the JSON-lines file `name` holds a complete record (it is read up to the first
    /// one; a file that does not exist holds none).
    pub fn has_records(&self, name: &str) -> Result<bool, StoreError> {
        struct Found;
        enum Stop {
            Found(Found),
            Failed(StoreError),
        }
        impl From<StoreError> for Stop {
            fn from(e: StoreError) -> Stop {
                Stop::Failed(e)
            }
        }
        match self.scan_jsonl_at(name, |_, _: serde::de::IgnoredAny| Err(Stop::Found(Found))) {
            Ok(()) => Ok(false),
            Err(Stop::Found(_)) => Ok(true),
            Err(Stop::Failed(e)) => Err(e),
        }
    }

    /// Calls `f` with every complete record of the JSON-lines file `name` (none when it does
    /// not exist). A cut-off last line (a killed run: no line break, its JSON ending early) is
    /// skipped; any other bad line, a last one included, is an error naming its number.
    pub fn scan_jsonl<T: serde::de::DeserializeOwned>(
        &self,
        name: &str,
        mut f: impl FnMut(T),
    ) -> Result<(), StoreError> {
        self.scan_jsonl_at(name, |_, r| {
            f(r);
            Ok::<(), StoreError>(())
        })
    }

    /// As [`RunDir::scan_jsonl`], with the byte offset where each record's line starts (to read
    /// it again later by seeking there); stops at the first error `f` returns.
    pub fn scan_jsonl_at<T: serde::de::DeserializeOwned, E: From<StoreError>>(
        &self,
        name: &str,
        mut f: impl FnMut(u64, T) -> Result<(), E>,
    ) -> Result<(), E> {
        let path = self.file(name);
        if !path.exists() {
            return Ok(());
        }
        let file = open_records(&path)?;
        let mut reader = BufReader::with_capacity(256 * 1024, file);
        let (mut line, mut offset, mut number) = (Vec::new(), 0u64, 0usize);
        loop {
            line.clear();
            let read = read_record_line(&mut reader, &mut line, &path, || {
                format!("line {}", number + 1)
            })?;
            if read == 0 {
                return Ok(());
            }
            let start = offset;
            offset += read as u64;
            number += 1;
            if line.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            match serde_json::from_slice::<T>(&line) {
                Ok(r) => f(start, r)?,
                // Cut off by a killed run: the last line, with no line break, its JSON ending
                // early. Any other bad line, the last one included, is an error.
                Err(e)
                    if e.is_eof()
                        && !line.ends_with(b"\n")
                        && reader.fill_buf().map_err(io(&path))?.is_empty() => {}
                Err(e) => {
                    return Err(StoreError::Corrupt {
                        path,
                        message: format!("line {number}: {e}"),
                    }
                    .into());
                }
            }
        }
    }

    /// Reads the records of the JSON-lines file `name` once, to resume a run: each record's
    /// job is checked against `jobs` (the run's jobs as planned from its manifest) and marked
    /// stored there, then handed to `keep` with the offset of its line (to fold it into the
    /// run's report). A record of
    /// another run or another configuration is an error naming its line, since resuming would
    /// mix two runs; a dialogue id already stored is skipped (the report's fold counts it).
    pub fn resume_records<R>(
        &self,
        name: &str,
        jobs: &mut sage_core::plan::JobSet,
        run_id: &str,
        mut keep: impl FnMut(u64, R),
    ) -> Result<(), StoreError>
    where
        R: serde::de::DeserializeOwned + HasJob,
    {
        let mut foreign = None;
        let mut line = 0;
        self.scan_jsonl_at(name, |at, record: R| {
            line += 1;
            if foreign.is_some() {
                return Ok::<(), StoreError>(());
            }
            let (run, dialogue) = record.ids();
            let checked = if run != run_id {
                Err(sage_core::plan::Foreign::OtherRun {
                    dialogue: dialogue.to_string(),
                    run: run.to_string(),
                })
            } else {
                record.check(jobs)
            };
            match checked {
                Ok(()) => {
                    let dialogue = dialogue.to_string();
                    jobs.mark_done(&dialogue);
                    keep(at, record);
                }
                Err(e) => foreign = Some((line, e)),
            }
            Ok(())
        })?;
        match foreign {
            Some((line, e)) => Err(StoreError::Corrupt {
                path: self.file(name),
                message: format!(
                    "record {line}: {e}; these records are not of the run in manifest.json, and resuming would mix two runs"
                ),
            }),
            None => Ok(()),
        }
    }
}

/// A record of either suite, as a resumed run checks it against its jobs.
pub trait HasJob {
    /// `(run id, dialogue id)` of its job.
    fn ids(&self) -> (&str, &str);
    /// Whether its job is one of `jobs`.
    fn check(&self, jobs: &sage_core::plan::JobSet) -> Result<(), sage_core::plan::Foreign>;
}

impl HasJob for DialogueRecord {
    fn ids(&self) -> (&str, &str) {
        (&self.job.run_id, &self.job.dialogue_id)
    }
    fn check(&self, jobs: &sage_core::plan::JobSet) -> Result<(), sage_core::plan::Foreign> {
        jobs.check(&self.job.dialogue_id, &self.job)
    }
}

impl HasJob for sage_core::protocol::desk::DeskRecord {
    fn ids(&self) -> (&str, &str) {
        (&self.job.run_id, &self.job.dialogue_id)
    }
    fn check(&self, jobs: &sage_core::plan::JobSet) -> Result<(), sage_core::plan::Foreign> {
        jobs.check(&self.job.dialogue_id, &self.job)
    }
}

/// Appends finished dialogues, one line each, flushed at once.
pub struct DialogueWriter {
    /// The folder's claim, held as long as the writer lives.
    _lock: Arc<FolderLock>,
    file: File,
    path: PathBuf,
    /// The line being written, reused (records are tens of kilobytes).
    line: Vec<u8>,
    /// The file's length: where the next line starts.
    offset: u64,
    /// A failed write may have left part of a line after `offset`, not yet taken back.
    cut: bool,
}

/// The end of a file's last whole line (just after its last line break; 0 without one), read
/// from its end backwards (the file can be gigabytes).
fn whole_lines_end(file: &File) -> std::io::Result<u64> {
    use std::os::unix::fs::FileExt;
    let mut end = file.metadata()?.len();
    let mut chunk = vec![0u8; 64 * 1024];
    while end > 0 {
        let start = end.saturating_sub(chunk.len() as u64);
        let part = &mut chunk[..(end - start) as usize];
        file.read_exact_at(part, start)?;
        if let Some(i) = part.iter().rposition(|b| *b == b'\n') {
            return Ok(start + i as u64 + 1);
        }
        end = start;
    }
    Ok(0)
}

impl DialogueWriter {
    /// Appends one record as a line and hands it to the operating system before returning;
    /// the byte offset where its line starts (to read it back: [`RunDir::reread`]).
    pub fn append(&mut self, record: &impl Serialize) -> Result<u64, StoreError> {
        self.line.clear();
        serde_json::to_writer(&mut self.line, record).map_err(|e| StoreError::Corrupt {
            path: self.path.clone(),
            message: e.to_string(),
        })?;
        self.line.push(b'\n');
        self.write_line()
    }

    /// Appends a record already serialized as one line of JSON (as a worker sent it), without
    /// decoding and encoding it again. Text holding a line break is refused (it would be two
    /// lines). The byte offset where its line starts.
    pub fn append_json(&mut self, json: &[u8]) -> Result<u64, StoreError> {
        if json.contains(&b'\n') {
            return Err(StoreError::Corrupt {
                path: self.path.clone(),
                message: "a record to append spans several lines".into(),
            });
        }
        self.line.clear();
        self.line.extend_from_slice(json);
        self.line.push(b'\n');
        self.write_line()
    }

    /// Writes the line held, flushed; where it starts. A write that fails (a full disk) takes
    /// back what it wrote of the line, so the file always ends with a whole line: the record
    /// can be appended again later (the aggregator does not ack it; it comes again).
    fn write_line(&mut self) -> Result<u64, StoreError> {
        let at = self.offset;
        if self.line.len() > MAX_RECORD_BYTES {
            let what = format!("a record of {} bytes to append", self.line.len());
            return Err(too_long(&self.path, what));
        }
        if self.cut {
            self.file.set_len(at).map_err(io(&self.path))?;
            self.cut = false;
        }
        let written = (self.file.write_all(&self.line)).and_then(|()| self.file.flush());
        if let Err(error) = written {
            self.cut = self.file.set_len(at).is_err();
            return Err(io(&self.path)(error));
        }
        self.offset += self.line.len() as u64;
        Ok(at)
    }
}

/// Reads records of a JSON-lines file back by the byte offset where their line starts (the
/// HTML report's explorer reads the records it embeds so).
pub struct Reread<T> {
    file: BufReader<File>,
    path: PathBuf,
    line: Vec<u8>,
    _record: std::marker::PhantomData<fn() -> T>,
}

impl<T: serde::de::DeserializeOwned> Reread<T> {
    /// The record whose line starts at `offset`.
    pub fn at(&mut self, offset: u64) -> Result<T, StoreError> {
        use std::io::{Seek, SeekFrom};
        self.file
            .seek(SeekFrom::Start(offset))
            .map_err(io(&self.path))?;
        self.line.clear();
        read_record_line(&mut self.file, &mut self.line, &self.path, || {
            format!("the record at byte {offset}")
        })?;
        serde_json::from_slice(&self.line).map_err(|e| StoreError::Corrupt {
            path: self.path.clone(),
            message: format!("the record at byte {offset} (read again): {e}"),
        })
    }
}

impl<T: serde::de::DeserializeOwned> sage_report::explorer::Records<T> for Reread<T> {
    fn read(&mut self, at: u64) -> std::io::Result<T> {
        self.at(at).map_err(std::io::Error::other)
    }
}

/// Environment variable that lowers the number of dialogues the HTML report's explorer embeds
/// (tests: the choice above the limit is checked on small runs). Not for everyday use.
pub const EXPLORER_LIMIT_VAR: &str = "SAGE_EXPLORER_MAX_DIALOGUES";

/// How much the HTML report's explorer embeds: [`sage_report::explorer::Limits`], the number
/// of dialogues lowered by [`EXPLORER_LIMIT_VAR`] when it is set.
pub fn explorer_limits() -> sage_report::explorer::Limits {
    let mut limits = sage_report::explorer::Limits::default();
    if let Some(n) = std::env::var(EXPLORER_LIMIT_VAR)
        .ok()
        .and_then(|v| v.trim().parse::<usize>().ok())
    {
        limits.dialogues = n;
    }
    limits
}

/// A new run id: the UTC date and time, the suite (`desk` for the support desk, nothing for
/// SAGE), the seed, and eight hex digits drawn from the process id and the clock (plus a
/// counter within a process), so two runs started in the same second get different ids
/// (`20261125-093613-s42-3fa9c1d0`).
pub fn new_run_id(suite: Option<&str>, seed: u64) -> String {
    // Random per process (its id and start time), plus a counter within it: never the same
    // twice in a process, and two processes collide with odds of one in four billion.
    static BASE: std::sync::OnceLock<u32> = std::sync::OnceLock::new();
    static COUNTER: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let base = *BASE.get_or_init(|| {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0);
        sage_core::plan::derive_seed((std::process::id(), nanos)) as u32
    });
    let n = COUNTER.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let unique = base.wrapping_add(n);
    let suite = suite.map(|s| format!("-{s}")).unwrap_or_default();
    format!("{}{suite}-s{seed}-{unique:08x}", now_utc().1)
}

/// The current UTC time as RFC 3339 (`2026-11-21T23:15:00Z`) and as a compact id part
/// (`20261121-231500`).
pub fn now_utc() -> (String, String) {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0);
    utc_at(secs)
}

/// [`now_utc`] of the instant `secs` seconds after 1970-01-01T00:00:00Z (whole seconds; an
/// instant out of the `time` crate's range reads as the epoch).
fn utc_at(secs: i64) -> (String, String) {
    let at =
        time::OffsetDateTime::from_unix_timestamp(secs).unwrap_or(time::OffsetDateTime::UNIX_EPOCH);
    let rfc3339 = at
        .format(&time::format_description::well_known::Rfc3339)
        .unwrap_or_else(|_| "1970-01-01T00:00:00Z".to_string());
    let compact = format!(
        "{:04}{:02}{:02}-{:02}{:02}{:02}",
        at.year(),
        u8::from(at.month()),
        at.day(),
        at.hour(),
        at.minute(),
        at.second()
    );
    (rfc3339, compact)
}

#[cfg(test)]
mod tests;
