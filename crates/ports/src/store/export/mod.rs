//! Dialogues as training data, streamed: the records of dialogues.jsonl are read one at a time
//! and each example is written as it passes, so memory does not grow with the run (see
//! docs/cli.md, `sage export`).
//!
//! * Example formats (`openai`, `sharegpt`, `sharegpt-jsonl`): one example per agent turn whose
//!   Logic reaches `min_logic` (by default 100: fully correct answers only), the agent prompt
//!   and the dialogue before it as context, the
//!   agent's JSON answer as the target ([`example`]); optionally filtered, deduplicated, split
//!   by case and capped per scenario and route ([`select`]).
//! * Preference formats (`dpo`, `dpo-trl`): pairs of answers to the same context by two models,
//!   one with Logic 100 and one below `max_rejected_logic` ([`dpo`]).
//!
//! Pure decisions live in [`example`], [`select`] and [`dpo::choose`]; this module reads the
//! records and writes the files.

pub mod dpo;
pub mod example;
pub mod select;
mod write;

use super::{Manifest, RunDir, StoreError};
use example::{
    Answer, FULLY_CORRECT, Filter, Filtered, Left, Split, example_hash, reaches, record_case,
    split_part, walk,
};
use sage_core::plan::derive_seed;
use sage_core::prompts;
use sage_core::protocol::DialogueRecord;
use sage_core::scoring::summary::route_key;
use sage_core::sop::Sop;
use select::{Caps, Location, Seen};
use std::collections::{BTreeSet, HashMap};
use std::fs::File;
use std::io::{BufWriter, Write};
use std::num::NonZeroUsize;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Output format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// `{"messages": [{"content", "role"}, ...]}` per line (OpenAI chat fine-tuning).
    Openai,
    /// A JSON array of `{"conversations": [{"from", "value"}, ...]}`.
    Sharegpt,
    /// One `{"conversations": [...]}` per line.
    SharegptJsonl,
    /// Preference pairs, OpenAI's preference fine-tuning shape: `{"input": {"messages": [...]},
    /// "preferred_output": [...], "non_preferred_output": [...]}` per line.
    Dpo,
    /// Preference pairs, TRL's conversational shape: `{"prompt": [...], "chosen": [...],
    /// "rejected": [...]}` per line.
    DpoTrl,
}

impl Format {
    /// Whether it writes preference pairs rather than examples.
    pub fn pairs(self) -> bool {
        matches!(self, Format::Dpo | Format::DpoTrl)
    }
}

/// What to export and how.
#[derive(Debug, Clone, PartialEq)]
pub struct Options {
    /// The format.
    pub format: Format,
    /// Example formats: keep turns whose Logic (0-100) is at least this; by default
    /// [`FULLY_CORRECT`] (100): answers whose classification, path and action are all the
    /// reference's, so that no wrong answer becomes training data.
    pub min_logic: f64,
    /// Preference formats: a rejected answer's Logic is below this (0-100).
    pub max_rejected_logic: f64,
    /// Which dialogues.
    pub filter: Filter,
    /// Drop an example (or pair) identical to one already kept for the same output file.
    pub dedup: bool,
    /// Held-out parts (each a file); the rest of the cases is the training part.
    pub splits: Vec<Split>,
    /// At most this many examples (or pairs) per scenario.
    pub max_per_scenario: Option<NonZeroUsize>,
    /// At most this many examples (or pairs) per target route.
    pub max_per_route: Option<NonZeroUsize>,
    /// Preference formats: candidates held in memory before spilling to a temporary file.
    pub dpo_chunk: usize,
}

impl Default for Options {
    fn default() -> Options {
        Options {
            format: Format::Openai,
            min_logic: FULLY_CORRECT,
            max_rejected_logic: 50.0,
            filter: Filter::default(),
            dedup: false,
            splits: Vec::new(),
            max_per_scenario: None,
            max_per_route: None,
            dpo_chunk: dpo::CHUNK,
        }
    }
}

/// Where the output goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Output {
    /// Standard output (one part only).
    Stdout,
    /// A file; with a split, each held-out part goes next to it ([`part_path`]).
    File(PathBuf),
}

/// The file of the held-out part `name` of a split written to `base`: the part's name before
/// the extension (`train.jsonl` -> `train.validation.jsonl`; `data` -> `data.validation`).
pub fn part_path(base: &Path, name: &str) -> PathBuf {
    let stem = base.file_stem().unwrap_or_default().to_string_lossy();
    let file = match base.extension() {
        Some(ext) => format!("{stem}.{name}.{}", ext.to_string_lossy()),
        None => format!("{stem}.{name}"),
    };
    base.with_file_name(file)
}

/// An export problem.
#[derive(Debug, thiserror::Error)]
pub enum ExportError {
    /// Reading the run failed.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// Writing the output failed.
    #[error("{to}: {error}")]
    Write {
        /// The file, or standard output.
        to: String,
        /// The OS error.
        error: std::io::Error,
    },
    /// A flag's value cannot be used with this run.
    #[error("{flag}: {message}")]
    Flag {
        /// The flag.
        flag: &'static str,
        /// What was found and what is expected.
        message: String,
    },
    /// The preference candidates' temporary files failed.
    #[error("temporary file for preference candidates: {0}")]
    Spill(#[from] std::io::Error),
}

fn flag(flag: &'static str, message: impl Into<String>) -> ExportError {
    ExportError::Flag {
        flag,
        message: message.into(),
    }
}

/// The agent turns a filter left out.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FilterCounts {
    /// By `--scenario`.
    pub scenario: usize,
    /// By `--model`.
    pub model: usize,
    /// By `--adversarial`.
    pub adversarial: usize,
    /// By `--route`.
    pub route: usize,
}

/// One output file and what went into it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Part {
    /// `all` without a split; `train` or the held-out part's name with one.
    pub name: String,
    /// Its file (`None`: standard output).
    pub path: Option<PathBuf>,
    /// Examples (or pairs) written.
    pub written: usize,
}

/// What a preference export found.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DpoStats {
    /// Agent turns that can be chosen (a valid answer with Logic 100).
    pub chosen: usize,
    /// Agent turns that can be rejected (an answer below the threshold, format errors
    /// included).
    pub rejected: usize,
    /// Agent turns with an answer that is neither.
    pub neither: usize,
    /// Distinct contexts (case, turn, everything the agent saw) where a scored answer was given.
    pub contexts: usize,
    /// Contexts with a pair (before `--dedup`, the caps and the records read again).
    pub paired: usize,
    /// Contexts without a pair: every answer one model's ([`dpo::Unpaired::OneModel`]).
    pub one_model: usize,
    /// Contexts without a pair: no answer with Logic 100.
    pub no_chosen: usize,
    /// Contexts without a pair: no answer below `--max-rejected-logic`.
    pub no_rejected: usize,
    /// Contexts without a pair: the chosen and the rejected answers all one model's.
    pub same_model: usize,
    /// Pairs whose records, read again, did not have the same context (a hash collision, or a
    /// file changed during the export): left out.
    pub mismatched: usize,
    /// Temporary files the candidates were spilled to.
    pub spilled: usize,
}

/// The agent turns left out for each reason of [`Left`] (and the scenario not loaded).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LeftCounts {
    /// Turns the judges were not asked about (`judge_turns`): no scores.
    pub not_judged: usize,
    /// Example formats: answers that did not parse.
    pub format_errors: usize,
    /// Turns an infrastructure error left unscored.
    pub infra_errors: usize,
    /// Answers whose text was not recorded.
    pub no_text: usize,
    /// Example formats: valid answers whose Logic is below `--min-logic`.
    pub below_min_logic: usize,
    /// Turns of dialogues whose scenario the run no longer loads.
    pub scenario_not_loaded: usize,
}

impl LeftCounts {
    fn add(&mut self, why: Left) {
        *match why {
            Left::NotJudged => &mut self.not_judged,
            Left::FormatError => &mut self.format_errors,
            Left::InfraError => &mut self.infra_errors,
            Left::NoText => &mut self.no_text,
            Left::BelowMinLogic => &mut self.below_min_logic,
        } += 1;
    }

    /// Turns left out for these reasons, in all.
    pub fn total(&self) -> usize {
        self.not_judged
            + self.format_errors
            + self.infra_errors
            + self.no_text
            + self.below_min_logic
            + self.scenario_not_loaded
    }
}

/// What an export kept and left out. In the example formats every agent turn is counted once:
/// `turns` = filtered + `left` + `duplicates` + the caps' counts + written.
/// In the preference formats the turns are filtered, `left` or counted in [`DpoStats`], and
/// `duplicates` and the caps count pairs.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ExportStats {
    /// Records read.
    pub dialogues: usize,
    /// Their agent turns.
    pub turns: usize,
    /// Turns of the dialogues each filter left out.
    pub filtered: FilterCounts,
    /// Turns without an answer to export, by reason.
    pub left: LeftCounts,
    /// Left out by `--dedup`.
    pub duplicates: usize,
    /// Left out by `--max-per-scenario`.
    pub over_scenario_cap: usize,
    /// Left out by `--max-per-route`.
    pub over_route_cap: usize,
    /// The output files, the training part first.
    pub parts: Vec<Part>,
    /// Preference formats only.
    pub dpo: Option<DpoStats>,
}

impl ExportStats {
    /// Examples (or pairs) written in all.
    pub fn written(&self) -> usize {
        self.parts.iter().map(|p| p.written).sum()
    }

    fn filtered(&mut self, why: Filtered, turns: usize) {
        let f = &mut self.filtered;
        *match why {
            Filtered::Scenario => &mut f.scenario,
            Filtered::Model => &mut f.model,
            Filtered::Adversarial => &mut f.adversarial,
            Filtered::Route => &mut f.route,
        } += turns;
    }
}

impl Options {
    /// Checks the options against the run: every filter value names something the run has, the
    /// split's parts are distinct and leave cases for training, a split writes files.
    pub fn check(
        &self,
        manifest: &Manifest,
        sops: &HashMap<String, Arc<Sop>>,
        output: &Output,
    ) -> Result<(), ExportError> {
        let scenarios: Vec<&str> = manifest
            .scenarios
            .iter()
            .map(|(id, _)| id.as_str())
            .collect();
        for s in &self.filter.scenarios {
            if !scenarios.contains(&s.as_str()) {
                return Err(flag(
                    "--scenario",
                    format!(
                        "`{s}` is not a scenario of this run; expected one of {}",
                        scenarios.join(", ")
                    ),
                ));
            }
        }
        let models = &manifest.config.service_models;
        for m in &self.filter.models {
            if !models.contains(m) {
                return Err(flag(
                    "--model",
                    format!(
                        "`{m}` is not a model under test in this run; expected one of {}",
                        models.join(", ")
                    ),
                ));
            }
        }
        let routes: BTreeSet<String> = sops
            .iter()
            .filter(|(id, _)| {
                self.filter.scenarios.is_empty() || self.filter.scenarios.contains(id)
            })
            .flat_map(|(_, sop)| sop.routes().iter().map(|r| route_key(&r.route)))
            .collect();
        for r in &self.filter.routes {
            if !routes.contains(r) {
                let example = routes.iter().next().map(String::as_str).unwrap_or("");
                return Err(flag(
                    "--route",
                    format!(
                        "`{r}` is not a route of {}; expected a route as summary.json's `coverage` writes it, e.g. `{example}`",
                        if self.filter.scenarios.is_empty() {
                            "the run's scenarios".to_string()
                        } else {
                            format!("scenario {}", self.filter.scenarios.join(", "))
                        }
                    ),
                ));
            }
        }
        for (i, s) in self.splits.iter().enumerate() {
            if !(s.fraction > 0.0 && s.fraction < 1.0) {
                return Err(flag(
                    "--split",
                    format!(
                        "`{}={}`: expected a fraction strictly between 0 and 1",
                        s.name, s.fraction
                    ),
                ));
            }
            let valid = !s.name.is_empty()
                && s.name.len() <= 64
                && s.name
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
            if !valid || s.name == "train" || self.splits[..i].iter().any(|o| o.name == s.name) {
                return Err(flag(
                    "--split",
                    format!(
                        "`{}`: expected a part name of 1 to 64 letters, digits, `-` or `_`, other than `train` (the rest of the cases), each given once",
                        s.name
                    ),
                ));
            }
        }
        let total: f64 = self.splits.iter().map(|s| s.fraction).sum();
        if total >= 1.0 {
            return Err(flag(
                "--split",
                format!(
                    "the fractions add up to {total}; expected less than 1, so that cases are left for training"
                ),
            ));
        }
        if !self.splits.is_empty() && *output == Output::Stdout {
            return Err(flag(
                "--split",
                "writes one file per part; expected --out FILE (the training part; the others next to it)",
            ));
        }
        Ok(())
    }
}

/// The output files, one per part, each with its writer.
struct Parts {
    writers: Vec<write::Writer<BufWriter<Box<dyn Write>>>>,
    parts: Vec<Part>,
}

impl Parts {
    fn open(format: Format, splits: &[Split], output: &Output) -> Result<Parts, ExportError> {
        let mut names = vec![if splits.is_empty() { "all" } else { "train" }.to_string()];
        names.extend(splits.iter().map(|s| s.name.clone()));
        let (mut writers, mut parts) = (Vec::new(), Vec::new());
        for (i, name) in names.into_iter().enumerate() {
            let path = match output {
                Output::Stdout => None,
                Output::File(base) if i == 0 => Some(base.clone()),
                Output::File(base) => Some(part_path(base, &name)),
            };
            let sink: Box<dyn Write> = match &path {
                None => Box::new(std::io::stdout().lock()),
                Some(p) => Box::new(File::create(p).map_err(|error| ExportError::Write {
                    to: p.display().to_string(),
                    error,
                })?),
            };
            let part = Part {
                name,
                path,
                written: 0,
            };
            let writer = write::Writer::new(format, BufWriter::with_capacity(1 << 16, sink))
                .map_err(|e| Parts::error(&part, e))?;
            writers.push(writer);
            parts.push(part);
        }
        Ok(Parts { writers, parts })
    }

    fn error(part: &Part, error: std::io::Error) -> ExportError {
        ExportError::Write {
            to: part
                .path
                .as_ref()
                .map_or("standard output".to_string(), |p| p.display().to_string()),
            error,
        }
    }

    fn example(
        &mut self,
        part: usize,
        context: &[example::Message<'_>],
        answer: &str,
    ) -> Result<(), ExportError> {
        self.writers[part]
            .example(context, answer)
            .map_err(|e| Parts::error(&self.parts[part], e))
    }

    fn pair(
        &mut self,
        part: usize,
        prompt: &[example::Message<'_>],
        chosen: &str,
        rejected: &str,
        audit: &write::Audit<'_>,
    ) -> Result<(), ExportError> {
        self.writers[part]
            .pair(prompt, chosen, rejected, audit)
            .map_err(|e| Parts::error(&self.parts[part], e))
    }

    fn finish(self) -> Result<Vec<Part>, ExportError> {
        let mut out = Vec::new();
        for (writer, mut part) in self.writers.into_iter().zip(self.parts) {
            part.written = writer.written();
            writer.finish().map_err(|e| Parts::error(&part, e))?;
            out.push(part);
        }
        Ok(out)
    }
}

/// A record that passed the filters, ready to be walked.
struct Ready {
    system: String,
    part: usize,
    route: String,
}

/// What the export needs besides the records.
struct Job<'a> {
    options: &'a Options,
    sops: &'a HashMap<String, Arc<Sop>>,
    seed: u64,
}

impl Job<'_> {
    /// The record's system prompt, part and route; `None` (counted) when a filter leaves it
    /// out or its scenario is not loaded.
    fn ready(&self, record: &DialogueRecord, stats: &mut ExportStats) -> Option<Ready> {
        let route = route_key(&record.job.target);
        if let Some(why) = self.options.filter.check(&record.job, &route) {
            stats.filtered(why, record.turns.len());
            return None;
        }
        let Some(sop) = self.sops.get(&record.job.scenario) else {
            stats.left.scenario_not_loaded += record.turns.len();
            return None;
        };
        let system =
            prompts::agent_system_prompt(sop, &prompts::system_information(sop, &record.job));
        Some(Ready {
            system,
            part: split_part(self.seed, record_case(record), &self.options.splits),
            route,
        })
    }
}

/// Exports the dialogues of `run` (whose scenarios, by id, are `sops`) as `options` say to
/// `output`, reading dialogues.jsonl once (and, with caps or pairs, only the records kept
/// again). The examples come in file order; the preference pairs in the order of a hash of
/// their context. Which examples and pairs are kept, and in which part, does not depend on the
/// order of the records in the file.
pub fn export(
    run: &RunDir,
    sops: &HashMap<String, Arc<Sop>>,
    options: &Options,
    output: &Output,
) -> Result<ExportStats, ExportError> {
    let manifest = run.read_manifest()?;
    options.check(&manifest, sops, output)?;
    if let Output::File(base) = output {
        // Writing over the records being read would destroy them.
        let ours = ["dialogues.jsonl", "manifest.json"].map(|f| run.file(f).canonicalize().ok());
        let mut targets = vec![base.clone()];
        targets.extend(options.splits.iter().map(|s| part_path(base, &s.name)));
        for t in targets {
            if t.canonicalize().is_ok_and(|t| ours.contains(&Some(t))) {
                return Err(flag(
                    "--out",
                    format!(
                        "{} is a file of the run being exported; expected another file",
                        t.display()
                    ),
                ));
            }
        }
    }
    let job = Job {
        options,
        sops,
        seed: manifest.config.seed,
    };
    let mut parts = Parts::open(options.format, &options.splits, output)?;
    let mut stats = ExportStats::default();
    if options.format.pairs() {
        pairs(run, &job, &mut parts, &mut stats)?;
    } else {
        examples(run, &job, &mut parts, &mut stats)?;
    }
    stats.parts = parts.finish()?;
    Ok(stats)
}

/// The example formats: written as they pass, or with caps, located in one pass and read again.
fn examples(
    run: &RunDir,
    job: &Job<'_>,
    parts: &mut Parts,
    stats: &mut ExportStats,
) -> Result<(), ExportError> {
    let options = job.options;
    let mut caps = Caps::new(options.max_per_scenario, options.max_per_route);
    let mut seen = options.dedup.then(Seen::default);
    let hashing = seen.is_some() || caps.is_some();
    run.scan_jsonl_at("dialogues.jsonl", |offset, record: DialogueRecord| {
        stats.dialogues += 1;
        stats.turns += example::own_turns(&record);
        let Some(ready) = job.ready(&record, stats) else {
            return Ok(());
        };
        walk(&record, &ready.system, hashing, |t| {
            let answer = match t.target(options.min_logic) {
                Ok(answer) => answer,
                Err(why) => {
                    stats.left.add(why);
                    return Ok(());
                }
            };
            let hash = || example_hash(ready.part, &ready.route, t.context_hash, answer);
            if let Some(seen) = &mut seen
                && !seen.first(hash())
            {
                stats.duplicates += 1;
                return Ok(());
            }
            match &mut caps {
                Some(caps) => {
                    let at = Location {
                        offset,
                        turn: t.index as u32,
                    };
                    caps.offer(
                        &record.job.scenario,
                        &ready.route,
                        example::rank(job.seed, hash()),
                        at,
                    );
                    Ok(())
                }
                None => parts.example(ready.part, t.context, answer),
            }
        })
    })?;
    let Some(caps) = caps else {
        return Ok(());
    };
    let kept = caps.finish();
    stats.over_route_cap = kept.over_route;
    stats.over_scenario_cap = kept.over_scenario;
    if kept.at.is_empty() {
        return Ok(());
    }
    // The examples kept, in file order: each record read again once.
    let mut reread = run.reread::<DialogueRecord>("dialogues.jsonl")?;
    let mut ignored = ExportStats::default();
    for group in kept.at.chunk_by(|a, b| a.offset == b.offset) {
        let record = reread.at(group[0].offset)?;
        let Some(ready) = job.ready(&record, &mut ignored) else {
            continue;
        };
        let mut wanted = group.iter().map(|l| l.turn as usize).peekable();
        walk(&record, &ready.system, false, |t| {
            if wanted.peek() == Some(&t.index) {
                wanted.next();
                if let Ok(answer) = t.target(options.min_logic) {
                    parts.example(ready.part, t.context, answer)?;
                }
            }
            Ok::<(), ExportError>(())
        })?;
    }
    Ok(())
}

/// The preference formats: candidates in one pass, then the pair of each context, its two
/// records read again.
fn pairs(
    run: &RunDir,
    job: &Job<'_>,
    parts: &mut Parts,
    stats: &mut ExportStats,
) -> Result<(), ExportError> {
    let options = job.options;
    let mut candidates = dpo::Candidates::new(options.dpo_chunk);
    let mut models: Vec<String> = Vec::new();
    let mut dpo_stats = DpoStats::default();
    let reject_below = options.max_rejected_logic;
    run.scan_jsonl_at("dialogues.jsonl", |offset, record: DialogueRecord| {
        stats.dialogues += 1;
        stats.turns += example::own_turns(&record);
        let Some(ready) = job.ready(&record, stats) else {
            return Ok(());
        };
        // Who answered: the model, and for a fork's branch its sample (two samples of one
        // model are two answers to pair).
        let source = match &record.fork {
            Some(fork) => format!("{}#s{}", record.job.service_model, fork.sample),
            None => record.job.service_model.clone(),
        };
        let model = match models.iter().position(|m| *m == source) {
            Some(i) => i,
            None => {
                models.push(source);
                models.len() - 1
            }
        };
        let small = |what: &str, n: usize| {
            u16::try_from(n).map_err(|_| {
                ExportError::Store(StoreError::Corrupt {
                    path: run.file("dialogues.jsonl"),
                    message: format!(
                        "the record at byte {offset}: {what} {n}; expected at most 65535"
                    ),
                })
            })
        };
        let (model, repeat) = (
            small("model number", model)?,
            small("repeat", record.job.repeat as usize)?,
        );
        let case = record_case(&record);
        walk(&record, &ready.system, true, |t| {
            let (valid, logic) = match t.scored() {
                Ok(s) => (s.valid, s.logic),
                Err(why) => {
                    stats.left.add(why);
                    return Ok(());
                }
            };
            let logic = if valid && reaches(logic, FULLY_CORRECT) {
                dpo_stats.chosen += 1;
                dpo::CHOSEN
            } else if logic < reject_below {
                dpo_stats.rejected += 1;
                (logic * 100.0)
                    .floor()
                    .clamp(0.0, f64::from(dpo::CHOSEN - 1)) as u16
            } else {
                // Neither side, but an answer there: it counts the context and why it has
                // no pair.
                dpo_stats.neither += 1;
                dpo::NEITHER
            };
            candidates.push(dpo::Candidate {
                key: derive_seed((case, t.turn, t.context_hash)),
                offset,
                model,
                repeat,
                turn: small("turn", t.index)?,
                logic,
            })?;
            Ok::<(), ExportError>(())
        })
    })?;
    dpo_stats.spilled = candidates.spilled();
    if candidates.is_empty() {
        stats.dpo = Some(dpo_stats);
        return Ok(());
    }
    let mut reread = run.reread::<DialogueRecord>("dialogues.jsonl")?;
    let mut seen = options.dedup.then(Seen::default);
    let mut per_scenario: HashMap<String, usize> = HashMap::new();
    let mut per_route: HashMap<(String, String), usize> = HashMap::new();
    let cap = |c: Option<NonZeroUsize>| c.map_or(usize::MAX, NonZeroUsize::get);
    let (scenario_cap, route_cap) = (cap(options.max_per_scenario), cap(options.max_per_route));
    let mut ignored = ExportStats::default();
    candidates.groups(|group| {
        dpo_stats.contexts += 1;
        let (chosen, rejected) = match dpo::choose(group, &models) {
            Ok(pair) => pair,
            Err(why) => {
                *match why {
                    dpo::Unpaired::OneModel => &mut dpo_stats.one_model,
                    dpo::Unpaired::NoChosen => &mut dpo_stats.no_chosen,
                    dpo::Unpaired::NoRejected => &mut dpo_stats.no_rejected,
                    dpo::Unpaired::SameModel => &mut dpo_stats.same_model,
                } += 1;
                return Ok(());
            }
        };
        dpo_stats.paired += 1;
        let (c_record, r_record) = (reread.at(chosen.offset)?, reread.at(rejected.offset)?);
        let (Some(c_ready), Some(r_ready)) = (
            job.ready(&c_record, &mut ignored),
            job.ready(&r_record, &mut ignored),
        ) else {
            dpo_stats.mismatched += 1;
            return Ok(());
        };
        let c_turn = example::turn_at(&c_record, &c_ready.system, usize::from(chosen.turn));
        let r_turn = example::turn_at(&r_record, &r_ready.system, usize::from(rejected.turn));
        let (Some((prompt, Answer::Valid(chosen_text))), Some((r_prompt, r_answer))) =
            (c_turn, r_turn)
        else {
            dpo_stats.mismatched += 1;
            return Ok(());
        };
        let rejected_text = match r_answer {
            Answer::Valid(t) | Answer::FormatError(Some(t)) => t,
            _ => "",
        };
        if prompt != r_prompt
            || rejected_text.is_empty()
            || record_case(&c_record) != record_case(&r_record)
        {
            dpo_stats.mismatched += 1;
            return Ok(());
        }
        let part = c_ready.part;
        if let Some(seen) = &mut seen {
            let hash = derive_seed((
                part as u64,
                c_ready.route.as_str(),
                example::context_hash(&prompt),
                chosen_text,
                rejected_text,
            ));
            if !seen.first(hash) {
                stats.duplicates += 1;
                return Ok(());
            }
        }
        let scenario = &c_record.job.scenario;
        let route = (scenario.clone(), c_ready.route.clone());
        if per_route.get(&route).copied().unwrap_or(0) >= route_cap {
            stats.over_route_cap += 1;
            return Ok(());
        }
        if per_scenario.get(scenario).copied().unwrap_or(0) >= scenario_cap {
            stats.over_scenario_cap += 1;
            return Ok(());
        }
        if options.max_per_route.is_some() {
            *per_route.entry(route).or_default() += 1;
        }
        if options.max_per_scenario.is_some() {
            *per_scenario.entry(scenario.clone()).or_default() += 1;
        }
        let index = |c: &dpo::Candidate| usize::from(c.turn);
        let audit = write::Audit {
            chosen_logic: example::answer_logic(&c_record, index(&chosen)).unwrap_or_default(),
            rejected_logic: example::answer_logic(&r_record, index(&rejected)).unwrap_or_default(),
            chosen_dialogue: &c_record.job.dialogue_id,
            rejected_dialogue: &r_record.job.dialogue_id,
            turn: c_record.turns[index(&chosen)].turn,
            parent: c_record.fork.as_ref().map(|f| f.parent.as_str()),
        };
        parts.pair(part, &prompt, chosen_text, rejected_text, &audit)
    })?;
    stats.dpo = Some(dpo_stats);
    Ok(())
}
