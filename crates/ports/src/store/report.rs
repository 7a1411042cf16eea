//! Reports of a results folder, folded one record at a time: the summary
//! ([`sage_core::scoring::SummaryFold`]), the dialogue ids found twice, the models under test that
//! never answered. `sage report` feeds the fold from dialogues.jsonl, the embedded run and the
//! aggregator as they write each record: one code path, so the three agree byte for byte.

use super::{Manifest, RunDir, StoreError};
use sage_core::plan::RunConfig;
use sage_core::protocol::{DialogueRecord, ServiceOutcome};
use sage_core::scoring::budget::{BudgetFold, BudgetSummary};
use sage_core::scoring::{Bootstrap, SummaryFold};
use sage_core::sop::Sop;
use sage_report::{RunInfo, SageReport};
use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The HTML report's file name in a results folder.
pub const REPORT_HTML: &str = "report.html";
/// What `sage judges calibrate` writes into a run's folder (the report shows it).
pub const CALIBRATION_JSON: &str = "calibration.json";

/// Dialogue ids a records file holds more than once (two processes wrote one folder): the
/// first record of each id counts, the others are left out of the summary.
///
/// A planned id, `<a>/<nnnn>/<b>` (`scenario/case/model/rN`), is remembered as one bit: a bit
/// set per `<a>/#/<b>` group (a scenario, model and repeat), indexed by the number, so a run of
/// a million dialogues takes about 125 KB. Any other id (a support-desk case, a number past
/// [`Duplicates::MAX_NUMBER`], groups past [`Duplicates::MAX_GROUPS`]) is remembered as a
/// 64-bit hash (8 bytes an id).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Duplicates {
    /// Records left out.
    pub count: usize,
    /// The first few ids concerned.
    pub examples: Vec<String>,
    /// Per group (the 64-bit hash of `<a>/#/<b>`), a bit per number seen.
    numbered: HashMap<u64, Vec<u64>>,
    /// The other ids seen, as 64-bit hashes.
    seen: HashSet<u64>,
}

impl Duplicates {
    /// Ids named in a warning.
    const EXAMPLES: usize = 5;
    /// The largest number a group's bit set holds (16 KB a group at most).
    pub const MAX_NUMBER: usize = (1 << 17) - 1;
    /// The most groups kept as bit sets (16 MB at most, whatever a records file holds).
    pub const MAX_GROUPS: usize = 1024;

    /// Whether `id` is seen for the first time (else it is counted as a duplicate).
    pub fn first(&mut self, id: &str) -> bool {
        let fresh = match numbered(id) {
            Some((group, n))
                if n <= Self::MAX_NUMBER
                    && (self.numbered.len() < Self::MAX_GROUPS
                        || self.numbered.contains_key(&group)) =>
            {
                let bits = self.numbered.entry(group).or_default();
                let (word, bit) = (n / 64, 1u64 << (n % 64));
                if bits.len() <= word {
                    bits.resize(word + 1, 0);
                }
                let fresh = bits[word] & bit == 0;
                bits[word] |= bit;
                fresh
            }
            _ => self.seen.insert(sage_core::plan::derive_seed(id)),
        };
        if fresh {
            return true;
        }
        self.count += 1;
        if self.examples.len() < Self::EXAMPLES && !self.examples.iter().any(|e| e == id) {
            self.examples.push(id.to_string());
        }
        false
    }

    /// A warning naming them, when there are any.
    pub fn warning(&self, file: &Path) -> Option<String> {
        (self.count > 0).then(|| {
            format!(
                "{}: {} records repeat a dialogue id already in the file (two processes wrote this folder?); the first record of each id is used, the others are left out: {}{}",
                file.display(),
                self.count,
                self.examples.join(", "),
                if self.examples.len() < self.count { ", ..." } else { "" }
            )
        })
    }
}

/// Records a report left out because they are not of the folder's run (another run's, another
/// configuration's, or forged): a run and the aggregator never store them, and `--resume`
/// refuses a folder with one.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ForeignRecords {
    /// Records left out.
    pub count: usize,
    /// What the first few were.
    pub examples: Vec<String>,
}

impl ForeignRecords {
    /// Notes a record left out, and why.
    pub fn note(&mut self, why: sage_core::plan::Foreign) {
        self.count += 1;
        if self.examples.len() < Duplicates::EXAMPLES {
            self.examples.push(why.to_string());
        }
    }

    /// A warning naming them, when there are any.
    pub fn warning(&self, file: &Path) -> Option<String> {
        (self.count > 0).then(|| {
            format!(
                "{}: {} not of the run in manifest.json (another run's or another configuration's records in this folder?), left out: {}{}",
                file.display(),
                if self.count == 1 {
                    "1 record is".to_string()
                } else {
                    format!("{} records are", self.count)
                },
                self.examples.join("; "),
                if self.examples.len() < self.count { "; ..." } else { "" }
            )
        })
    }
}

/// What a report checks its records against: the run's id, and its planned jobs when they
/// could be planned again (the run's scenarios as they were).
#[derive(Debug, Clone)]
pub struct RunJobs {
    /// The run's id (a record naming another is left out).
    pub run_id: String,
    /// The run's jobs; `None` when its scenarios no longer load as they were.
    pub planned: Option<sage_core::plan::JobSet>,
}

impl RunJobs {
    /// Whether `record` is of the run (of its jobs, when they are known).
    pub fn check(&self, record: &impl super::HasJob) -> Result<(), sage_core::plan::Foreign> {
        let (run, dialogue) = record.ids();
        if run != self.run_id {
            return Err(sage_core::plan::Foreign::OtherRun {
                dialogue: dialogue.to_string(),
                run: run.to_string(),
            });
        }
        match &self.planned {
            Some(jobs) => record.check(jobs),
            None => Ok(()),
        }
    }
}

/// The records a report leaves out as it reads a records file: those not of the run, and
/// those repeating a dialogue id already read.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Screened {
    /// Records of another run or not of its jobs.
    pub foreign: ForeignRecords,
    /// Records repeating a dialogue id.
    pub duplicates: Duplicates,
}

impl Screened {
    /// Whether `record` is folded: of the run (`jobs`) and the first of its id; otherwise
    /// noted.
    pub fn admit(&mut self, jobs: &RunJobs, record: &impl super::HasJob) -> bool {
        if let Err(why) = jobs.check(record) {
            self.foreign.note(why);
            return false;
        }
        self.duplicates.first(record.ids().1)
    }

    /// The warnings to print about the records file `file`.
    pub fn warnings(&self, file: &Path) -> Vec<String> {
        (self.foreign.warning(file).into_iter())
            .chain(self.duplicates.warning(file))
            .collect()
    }
}

/// A planned id's group (the 64-bit hash of the id with its number written `#`) and number:
/// the id's second `/`-separated part, when it is a number as the planner writes it (four
/// digits at least, no other leading zero: `0001`, `12345`), so that one number is one id.
fn numbered(id: &str) -> Option<(u64, usize)> {
    let (head, rest) = id.split_once('/')?;
    let (number, tail) = rest.split_once('/')?;
    let n: usize = number.parse().ok()?;
    let canonical = number.bytes().all(|b| b.is_ascii_digit())
        && (number.len() == 4 || (number.len() > 4 && !number.starts_with('0')));
    canonical.then(|| (sage_core::plan::derive_seed((head, tail)), n))
}

/// What a report found besides its table.
#[derive(Debug, Clone, PartialEq)]
pub struct Reported {
    /// The terminal table.
    pub table: String,
    /// Records left out because their dialogue id was already in the file.
    pub duplicates: Duplicates,
    /// Records left out because they are not of the run (a report that checks them).
    pub foreign: ForeignRecords,
    /// The records file.
    pub file: PathBuf,
    /// Models under test that never answered: their dialogues all ended before the agent gave
    /// an answer (it could not be reached, or the customer's side failed first).
    pub unreached: Vec<Unreached>,
    /// Turns were sent to the judges and none came back with a verdict: nothing was judged.
    pub unjudged: Option<Unjudged>,
    /// The HTML report written, if one was.
    pub html: Option<PathBuf>,
    /// What its explorer embeds (with the HTML report).
    pub explorer: Option<sage_report::explorer::Embedded>,
    /// The run's cost budgets and what was spent (summary.json's `budget`), when it has one.
    pub budget: Option<BudgetSummary>,
    /// An adaptive run's decisions (summary.json's `adaptive`).
    pub adaptive: Option<sage_core::scoring::adaptive::AdaptiveSummary>,
}

/// A model under test that never answered in a run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unreached {
    /// The model.
    pub model: String,
    /// Its dialogues.
    pub dialogues: usize,
    /// The first infrastructure error of its dialogues, if any was recorded.
    pub first_error: Option<String>,
}

impl std::fmt::Display for Unreached {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "model `{}` never answered: its {} dialogues ended before the agent gave an answer",
            self.model, self.dialogues
        )?;
        match &self.first_error {
            Some(e) => write!(f, " (first error: {e})"),
            None => Ok(()),
        }
    }
}

/// The error of a run that could not measure what it was for (`problems`:
/// [`Reported::unmeasured`]); `None` when there is none.
pub fn unmeasured_error(problems: &[String]) -> Option<String> {
    (!problems.is_empty()).then(|| {
        format!(
            "{}; the scores are empty where these were needed (check the endpoints and run again)",
            problems.join("; ")
        )
    })
}

/// A run whose judges never gave a verdict.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unjudged {
    /// Turns sent to the judges.
    pub turns: usize,
    /// The first error of a judge, if any was recorded.
    pub first_error: Option<String>,
}

impl std::fmt::Display for Unjudged {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "no judge ever answered: {} turns were sent to the judges and none came back with a verdict",
            self.turns
        )?;
        match &self.first_error {
            Some(e) => write!(f, " (first error: {e})"),
            None => Ok(()),
        }
    }
}

impl Reported {
    /// The warnings to print.
    pub fn warnings(&self) -> Vec<String> {
        let mut out: Vec<String> = self.foreign.warning(&self.file).into_iter().collect();
        out.extend(self.duplicates.warning(&self.file));
        out.extend(self.unmeasured());
        out
    }

    /// What the run could not measure: each model under test that never answered, and judges
    /// that never gave a verdict. A run with any is a failed run (`sage run` and
    /// `sage sweep --follow` exit 1), its scores empty where these were needed.
    pub fn unmeasured(&self) -> Vec<String> {
        (self.unreached.iter().map(ToString::to_string))
            .chain(self.unjudged.iter().map(ToString::to_string))
            .collect()
    }

    /// The line that says what the HTML report's explorer embeds, when it leaves dialogues
    /// out (`sage run` and `sage report --html` print it).
    pub fn explorer_line(&self) -> Option<String> {
        self.explorer
            .filter(|e| e.partial())
            .map(|e| e.line("dialogue"))
    }
}

/// Per model under test: its dialogues, its answers, the first infrastructure error.
#[derive(Debug, Clone, Default)]
struct Reach {
    dialogues: usize,
    answers: usize,
    first_error: Option<String>,
}

/// The turns sent to the judges, the ones with at least one verdict, and a judge's first error.
#[derive(Debug, Clone, Default)]
struct JudgeReach {
    turns: usize,
    verdicts: usize,
    first_error: Option<String>,
}

/// Tells a fork's section what the fork was (its fork.json), where the forked run's report is
/// (a link relative to `page`, the fork's report), and hands it the parents of its flipped
/// dialogues, read from the forked run's folder when it is still where fork.json says.
fn fork_parents(
    run: &RunDir,
    page: &Path,
    section: &mut sage_report::sage::fork::ForkSection,
) -> Result<(), StoreError> {
    let file: sage_core::fork::ForkFile = run.read_json(sage_core::fork::FORK_JSON)?;
    // fork.json names the forked folder resolved; when the folders moved together, it is the
    // fork's sibling of the same name.
    let from = Path::new(&file.from);
    let sibling = from
        .file_name()
        .map(|name| run.path().join("..").join(name));
    let from = [Some(from.to_path_buf()), sibling]
        .into_iter()
        .flatten()
        .find(|p| p.join("manifest.json").is_file())
        .unwrap_or_else(|| from.to_path_buf());
    let parent_run = RunDir::open(&from).ok().filter(|dir| {
        dir.read_manifest()
            .is_ok_and(|m| m.run_id == file.from_run_id)
    });
    let report_href = parent_run.as_ref().and_then(|dir| {
        let report = dir.path().join(REPORT_HTML);
        let here = page.parent()?;
        relative_href(here, &report)
    });
    let wanted: std::collections::HashSet<String> =
        section.wanted_parents().map(str::to_string).collect();
    section.set_source(sage_report::sage::fork::ForkSource { file, report_href });
    if let (Some(dir), false) = (parent_run, wanted.is_empty()) {
        let mut found = Vec::new();
        dir.scan_dialogues(|r| {
            if wanted.contains(&r.job.dialogue_id) {
                found.push(r);
            }
        })?;
        for record in found {
            section.add_parent(record);
        }
    }
    Ok(())
}

/// The link from a page in folder `here` to the file `to` (both resolved), each path segment
/// percent-encoded; `None` when either cannot be resolved.
fn relative_href(here: &Path, to: &Path) -> Option<String> {
    let here = here.canonicalize().ok()?;
    let to = to.parent()?.canonicalize().ok()?.join(to.file_name()?);
    let (a, b): (Vec<_>, Vec<_>) = (here.components().collect(), to.components().collect());
    let common = a.iter().zip(&b).take_while(|(x, y)| x == y).count();
    let up = std::iter::repeat_n("..".to_string(), a.len() - common);
    let down = b[common..]
        .iter()
        .map(|c| sage_report::encode_uri_component(&c.as_os_str().to_string_lossy()));
    Some(up.chain(down).collect::<Vec<_>>().join("/"))
}

/// A SAGE run's report, folded one record at a time (the summary, the repeated ids, the models
/// that never answered, and the HTML report when asked for); [`SageFold::write`] writes
/// summary.json, leaderboard.md and report.html.
#[derive(Debug)]
pub struct SageFold {
    summary: SummaryFold,
    duplicates: Duplicates,
    /// The run's jobs, when the records are checked against them (`sage report`: a run and
    /// the aggregator check them before they store them).
    checked: Option<RunJobs>,
    foreign: ForeignRecords,
    reached: BTreeMap<String, Reach>,
    judged: JudgeReach,
    html: Option<Box<SageReport>>,
    /// The labelling page written beside report.html (labels.html), with the HTML report.
    labels: Option<Box<sage_report::label::LabelFold>>,
    /// What the dialogues cost against the run's budgets.
    budget: BudgetFold,
    /// An adaptive run's decisions, folded in the records' order (the order the run stored
    /// them in, so the run's own).
    adaptive: Option<sage_core::scoring::adaptive::Adaptive>,
    /// Dialogues in the run's plan.
    jobs: usize,
    /// With `sage report --exclude-off-case`: the dialogues left out of the summary and the
    /// HTML report because their customer went off-case.
    off_case_excluded: Option<usize>,
}

/// What the HTML report says about a run from its manifest.
pub fn run_info(manifest: &Manifest) -> RunInfo {
    RunInfo {
        run_id: manifest.run_id.clone(),
        created_at: manifest.created_at.clone(),
        sage_version: manifest.sage_version.clone(),
        config: manifest.config.clone(),
        scenarios: manifest.scenarios.clone(),
        simulated_models: manifest.simulated_models.clone(),
        jobs: manifest.jobs,
    }
}

impl SageFold {
    /// An empty report of a run of `config` planned as `jobs` dialogues (its seed draws the
    /// intervals; its repeats say whether per-case medians are kept; its budgets and `jobs` make
    /// the summary's `budget` section).
    pub fn new(config: &RunConfig, jobs: usize) -> SageFold {
        let bootstrap = Bootstrap {
            seed: config.seed,
            ..Default::default()
        };
        SageFold {
            summary: SummaryFold::new(bootstrap, config.repeats)
                .with_simulators(config.customers().len()),
            duplicates: Duplicates::default(),
            checked: None,
            foreign: ForeignRecords::default(),
            reached: BTreeMap::new(),
            judged: JudgeReach::default(),
            html: None,
            labels: None,
            budget: BudgetFold::new(config),
            adaptive: sage_core::scoring::adaptive::Adaptive::for_run(config, jobs),
            jobs,
            off_case_excluded: None,
        }
    }

    /// The same fold that leaves out of the summary and the HTML report every dialogue with
    /// an off-case customer line (`sage report --exclude-off-case`), counting them in the
    /// summary's `off_case_excluded`; their cost still counts against the budgets.
    pub fn excluding_off_case(mut self) -> SageFold {
        self.off_case_excluded = Some(0);
        self
    }

    /// The same fold that also builds the HTML report of the run of `manifest` (`sops`: its
    /// compiled scenarios, for the graphs), written by [`SageFold::write`] as report.html.
    pub fn with_html(mut self, manifest: &Manifest, sops: Vec<Arc<Sop>>) -> SageFold {
        self.labels = Some(Box::new(sage_report::label::LabelFold::new(
            &manifest.run_id,
            manifest.config.seed,
            sops.clone(),
        )));
        self.html = Some(Box::new(
            SageReport::new(run_info(manifest), sops).with_limits(super::explorer_limits()),
        ));
        self
    }

    /// The same fold that leaves out the records not of the run (`jobs`), with a warning.
    pub fn checking(mut self, jobs: RunJobs) -> SageFold {
        self.checked = Some(jobs);
        self
    }

    /// A fold of the run in `run`, planned as `jobs` dialogues: with the HTML report when the
    /// folder has its manifest.
    pub fn for_run(config: &RunConfig, jobs: usize, run: &RunDir, sops: &[Arc<Sop>]) -> SageFold {
        let fold = SageFold::new(config, jobs);
        match run.read_manifest() {
            Ok(manifest) => fold.with_html(&manifest, sops.to_vec()),
            Err(_) => fold,
        }
    }

    /// Folds a record in, whose line starts at byte `at` of the folder's dialogues.jsonl (the
    /// HTML report reads the records its explorer embeds back from there); false (and nothing
    /// folded) when its dialogue id was folded already, or it is not of the run checked.
    pub fn add(&mut self, record: &DialogueRecord, at: u64) -> bool {
        if let Some(Err(why)) = self.checked.as_ref().map(|jobs| jobs.check(record)) {
            self.foreign.note(why);
            return false;
        }
        if !self.duplicates.first(&record.job.dialogue_id) {
            return false;
        }
        let reach = self
            .reached
            .entry(record.job.service_model.clone())
            .or_default();
        reach.dialogues += 1;
        for t in &record.turns {
            if !matches!(t.outcome, ServiceOutcome::InfraError { .. }) {
                reach.answers += 1;
            }
            if reach.first_error.is_none() {
                reach.first_error = t.infra_error.clone();
            }
            let asked = t.judges.is_some()
                || (t.calls.iter()).any(|c| record.job.judge_models.contains(&c.model));
            if asked {
                let judged = &mut self.judged;
                judged.turns += 1;
                let verdicts = t.judges.as_ref().map(|j| &j.judgments[..]).unwrap_or(&[]);
                judged.verdicts += usize::from(verdicts.iter().any(Result::is_ok));
                if judged.first_error.is_none() {
                    judged.first_error = (verdicts.iter().find_map(|v| v.as_ref().err()))
                        .or(t.infra_error.as_ref())
                        .cloned();
                }
            }
        }
        self.budget.add(record);
        if let Some(a) = &mut self.adaptive {
            a.add(record);
        }
        if let Some(excluded) = &mut self.off_case_excluded
            && record.turns.iter().any(|t| t.off_case.is_some())
        {
            *excluded += 1;
            return true;
        }
        self.summary.add(record);
        if let Some(html) = &mut self.html {
            html.add(record, at);
        }
        if let Some(labels) = &mut self.labels {
            labels.add(record, at);
        }
        true
    }

    /// Dialogues folded (repeats of an id not counted).
    pub fn dialogues(&self) -> usize {
        self.summary.dialogues()
    }

    /// The `budget` section of the records folded so far (`None` without a budget).
    pub fn budget(&self) -> Option<BudgetSummary> {
        self.budget.summary(self.jobs)
    }

    /// The `adaptive` section of the records folded so far (`None`: not an adaptive run).
    pub fn adaptive(&self) -> Option<sage_core::scoring::adaptive::AdaptiveSummary> {
        self.adaptive.as_ref().map(|a| a.summary())
    }

    /// The summary of the records folded so far.
    pub fn summary(&self) -> sage_core::scoring::Summary {
        sage_core::scoring::Summary {
            budget: self.budget(),
            adaptive: self.adaptive(),
            off_case_excluded: self.off_case_excluded,
            ..self.summary.summary()
        }
    }

    /// Writes summary.json and leaderboard.md of the records folded so far, and report.html
    /// (with labels.html beside it, `report::label`) into the folder when the fold builds it.
    pub fn write(&mut self, run: &RunDir) -> Result<Reported, StoreError> {
        self.write_to(run, None)
    }

    /// As [`SageFold::write`]; with `html`, the HTML report goes there and nothing is written
    /// into the folder (it may be read-only: `sage report DIR --html --out FILE`).
    pub fn write_to(&mut self, run: &RunDir, html: Option<&Path>) -> Result<Reported, StoreError> {
        let mut summary = self.summary();
        if let Ok(manifest) = run.read_manifest() {
            summary.scenario_sha256 = manifest.scenarios.into_iter().collect();
            summary.simulator = manifest.simulator;
        }
        if html.is_none() {
            run.write_json("summary.json", &summary)?;
            run.write_text(
                "leaderboard.md",
                &sage_core::scoring::leaderboard_markdown(&summary),
            )?;
        }
        let mut explorer = None;
        let html = match &mut self.html {
            Some(report) => {
                let target = html.map_or_else(|| run.path().join(REPORT_HTML), Path::to_path_buf);
                let mut records = run.reread::<DialogueRecord>("dialogues.jsonl");
                let mut spool = spool_beside(&target)?;
                let show = show_command(&report.info().run_id);
                // The judges against people, when `sage judges calibrate` was run on it.
                report.set_calibration(run.read_json(CALIBRATION_JSON).ok());
                // A fork's report: what was forked, and the parents of its flipped dialogues.
                if run.path().join(sage_core::fork::FORK_JSON).exists() {
                    fork_parents(run, &target, report.fork_mut())?;
                }
                let mut none = NoRecords;
                let written = run.write_report_html(html, |out| {
                    let records = match &mut records {
                        Ok(r) => r as &mut dyn sage_report::explorer::Records<DialogueRecord>,
                        // No records file: nothing to read back (no dialogue was folded).
                        Err(_) => &mut none,
                    };
                    explorer = Some(
                        report
                            .write_page(&summary, out, records, &mut spool, &show)
                            .map_err(super::io(&target))?,
                    );
                    Ok::<(), StoreError>(())
                })?;
                // labels.html beside it, its sampled turns read back the same way.
                if let Some(labels) = &self.labels {
                    let page = written.with_file_name(sage_report::label::LABELS_HTML);
                    write_labels_page(run, labels, &page)?;
                }
                Some(written)
            }
            None => None,
        };
        Ok(Reported {
            table: sage_core::scoring::leaderboard_text(&summary),
            duplicates: self.duplicates.clone(),
            foreign: self.foreign.clone(),
            file: run.path().join("dialogues.jsonl"),
            unreached: self
                .reached
                .iter()
                .filter(|(_, r)| r.answers == 0)
                .map(|(model, r)| Unreached {
                    model: model.clone(),
                    dialogues: r.dialogues,
                    first_error: r.first_error.clone(),
                })
                .collect(),
            unjudged: (self.judged.turns > 0 && self.judged.verdicts == 0).then(|| Unjudged {
                turns: self.judged.turns,
                first_error: self.judged.first_error.clone(),
            }),
            html,
            explorer,
            budget: summary.budget,
            adaptive: summary.adaptive,
        })
    }
}

impl RunDir {
    /// Writes an HTML report with `write` to `out` when given, else to report.html in the
    /// folder, atomically either way (a temporary file beside it, renamed once complete); its
    /// path. The SAGE and the support-desk reports are both written here, by the CLI and the
    /// aggregator, as they are rendered: the page is never held whole.
    pub fn write_report_html<E: From<StoreError>>(
        &self,
        out: Option<&Path>,
        write: impl FnOnce(&mut std::io::BufWriter<std::fs::File>) -> Result<(), E>,
    ) -> Result<PathBuf, E> {
        let path = match out {
            Some(path) => path.to_path_buf(),
            None => self.path().join(REPORT_HTML),
        };
        super::write_file_with(&path, write)?;
        Ok(path)
    }
}

impl RunDir {
    /// Writes a report page with a conversation explorer to `out` (by default report.html in
    /// the folder), atomically: `page` renders it, given the run's records in the JSON-lines
    /// file `records` (read back by their offset; none when the file is not there), a scratch
    /// file to compress the transcripts into, and the `sage show` command of run `run_id`. Its
    /// path and what the explorer embeds.
    pub(crate) fn write_explorer_page<R: serde::de::DeserializeOwned + Clone>(
        &self,
        out: Option<&Path>,
        (records, run_id): (&str, &str),
        page: impl FnOnce(
            &mut dyn std::io::Write,
            &mut dyn sage_report::explorer::Records<R>,
            &mut std::fs::File,
            &str,
        ) -> std::io::Result<sage_report::explorer::Embedded>,
    ) -> Result<(PathBuf, sage_report::explorer::Embedded), StoreError> {
        let target = out.map_or_else(|| self.path().join(REPORT_HTML), Path::to_path_buf);
        let mut spool = spool_beside(&target)?;
        let show = show_command(run_id);
        let mut embedded = sage_report::explorer::Embedded::default();
        let path = self.write_report_html(out, |w| {
            let written = if self.path().join(records).exists() {
                page(w, &mut self.reread::<R>(records)?, &mut spool, &show)
            } else {
                page(w, &mut Vec::<R>::new(), &mut spool, &show)
            };
            embedded = written.map_err(super::io(&target))?;
            Ok::<(), StoreError>(())
        })?;
        Ok((path, embedded))
    }

    /// The folder's name: a run's header when its manifest cannot be read.
    pub fn folder_name(&self) -> String {
        (self.path().file_name())
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default()
    }
}

/// A scratch file in the folder of the HTML report `page` is to be written to (the folder that
/// must have room for it), which the transcripts are compressed into first.
pub(crate) fn spool_beside(page: &Path) -> Result<std::fs::File, StoreError> {
    let beside = match page.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    tempfile::tempfile_in(beside).map_err(super::io(beside))
}

/// The `sage show` command (without the dialogue id) that prints a dialogue of run `run_id`
/// in its default results folder; the explorer prints it for the dialogues it leaves out.
pub fn show_command(run_id: &str) -> String {
    format!("sage show results/{run_id}")
}

/// Writes the labelling page of `fold` to `page`, its sampled turns read back from the run's
/// dialogues.jsonl by their place; the number of turns on it.
pub fn write_labels_page(
    run: &RunDir,
    fold: &sage_report::label::LabelFold,
    page: &Path,
) -> Result<usize, StoreError> {
    let mut records = run.reread::<DialogueRecord>("dialogues.jsonl");
    let mut none = NoRecords;
    let mut turns = 0;
    super::write_file_with(page, |out| {
        let records = match &mut records {
            Ok(r) => r as &mut dyn sage_report::explorer::Records<DialogueRecord>,
            // No records file: nothing to read back (no dialogue was folded).
            Err(_) => &mut none,
        };
        turns = fold.write_page(out, records).map_err(super::io(page))?;
        Ok::<(), StoreError>(())
    })?;
    Ok(turns)
}

/// No records to read back.
struct NoRecords;

impl sage_report::explorer::Records<DialogueRecord> for NoRecords {
    fn read(&mut self, at: u64) -> std::io::Result<DialogueRecord> {
        Err(std::io::Error::other(format!(
            "no dialogues.jsonl to read the record at byte {at} from"
        )))
    }
}

/// What `sage report` leaves out of a run's summary.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Leave {
    /// The dialogues with an off-case customer line (`--exclude-off-case`).
    pub off_case: bool,
}

impl Leave {
    fn apply(self, fold: SageFold) -> SageFold {
        if self.off_case {
            fold.excluding_off_case()
        } else {
            fold
        }
    }
}

/// Summarizes a run folder from dialogues.jsonl alone, reading it once (the order the records
/// were written in does not matter; a dialogue id met twice counts once, a record not of the
/// run's `jobs` is left out), and writes summary.json and leaderboard.md.
pub fn report(run: &RunDir, jobs: RunJobs, leave: Leave) -> Result<Reported, StoreError> {
    let manifest = run.read_manifest()?;
    let mut fold = leave.apply(SageFold::new(&manifest.config, manifest.jobs).checking(jobs));
    run.scan_dialogues_at(|at, r| {
        fold.add(&r, at);
    })?;
    fold.write(run)
}

/// As [`report`], and also writes the HTML report, in the same single pass over
/// dialogues.jsonl (the records the explorer embeds read back by their offset): to `out`
/// alone when given (nothing written into the folder), else report.html with the summary
/// files in the folder. `sops` are the run's compiled scenarios (those missing are reported
/// without their graph).
pub fn report_html(
    run: &RunDir,
    sops: Vec<Arc<Sop>>,
    jobs: RunJobs,
    out: Option<&Path>,
    leave: Leave,
) -> Result<Reported, StoreError> {
    let manifest = run.read_manifest()?;
    let mut fold = leave.apply(
        SageFold::new(&manifest.config, manifest.jobs)
            .with_html(&manifest, sops)
            .checking(jobs),
    );
    run.scan_dialogues_at(|at, r| {
        fold.add(&r, at);
    })?;
    fold.write_to(run, out)
}

#[cfg(test)]
mod tests {
    use super::Duplicates;

    #[test]
    fn each_id_counts_once_whether_planned_or_not() {
        let mut d = Duplicates::default();
        let ids = [
            "telecom/0001/m/r0",
            "telecom/0002/m/r0",
            "telecom/0001/m/r1",
            "telecom/0001/other/r0",
            "retail/0001/m/r0",
            "telecom/12345/m/r0",
            // Not as the planner writes numbers: each its own id.
            "telecom/1/m/r0",
            "telecom/00001/m/r0",
            "telecom/0001",
            "desk-case-7/m/r0",
            "telecom/999999999999999999999999/m/r0",
            "telecom/0131072/m/r0",
            "telecom/131072/m/r0",
        ];
        for id in ids {
            assert!(d.first(id), "{id} is new");
        }
        for id in ids {
            assert!(!d.first(id), "{id} is seen");
        }
        assert_eq!(d.count, ids.len());
        assert_eq!(d.examples.len(), Duplicates::EXAMPLES);
        // Planned ids take a bit each, the others a hash: a number past the bit sets' limit too.
        assert_eq!(d.numbered.len(), 4);
        assert_eq!(d.seen.len(), 7);
    }

    #[test]
    fn a_million_planned_ids_take_bits_and_past_the_group_limit_hashes() {
        let mut d = Duplicates::default();
        for case in 0..50_000 {
            for group in ["a/", "b/"] {
                assert!(d.first(&format!("{group}{case:04}/m/r0")));
            }
        }
        assert!(!d.first("a/0042/m/r0"));
        let words: usize = d.numbered.values().map(Vec::len).sum();
        assert!(words <= 2 * 50_000 / 64 + 2, "{words} words");
        assert!(d.seen.is_empty());
        for g in 0..Duplicates::MAX_GROUPS + 10 {
            assert!(d.first(&format!("s{g}/0001/m/r0")));
        }
        assert_eq!(d.numbered.len(), Duplicates::MAX_GROUPS);
        assert_eq!(d.seen.len(), 12);
        assert!(!d.first(&format!("s{}/0001/m/r0", Duplicates::MAX_GROUPS + 5)));
    }
}
