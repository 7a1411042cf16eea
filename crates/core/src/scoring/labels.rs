//! People's labels of judged turns (labels.jsonl, docs/judges.md) and the judge panel checked
//! against them (`sage judges calibrate`): each judge's and the panel's accuracy per field,
//! Krippendorff's alpha of people and judges together, Cohen's kappa of each judge against the
//! people, and each model's Logic corrected by prediction-powered inference. Pure: the records
//! are handed in one at a time ([`CalibrationFold::add`]); the formulas are
//! [`super::calibration`]'s.

use super::calibration::{
    Level, Ppi, Stratum, accuracy, cohen_kappa, krippendorff_alpha, ppi_stratified,
};
use super::rejudge::apply_panel;
use super::summary::{ErrorCorrelation, effective_judges};
use crate::protocol::rubric::DIMENSIONS;
use crate::protocol::{DialogueRecord, TurnRecord};
use crate::scenario::{Point, Value};
use crate::sop::{Sop, Values};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet, HashMap};

/// Most lines a labels file may hold.
pub const MAX_LABELS: usize = 200_000;
/// Most characters of an id, a labeller's name or a note.
const MAX_TEXT: usize = 1_000;
/// The normal quantile of the 95% intervals.
const Z95: f64 = 1.959_963_984_540_054;

/// One person's labels of one judged turn: a line of labels.jsonl.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Label {
    /// The run the turn belongs to (checked when given).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run_id: Option<String>,
    /// The dialogue's id.
    pub dialogue_id: String,
    /// The turn's number (1-based, as in the records).
    pub turn: u32,
    /// Who labelled it (people labelling the same turn are told apart by it).
    #[serde(default)]
    pub labeller: String,
    /// The classification fields the person set, by name (values as the judges give them).
    #[serde(default)]
    pub classification: BTreeMap<String, Value>,
    /// The chat-quality dimensions the person scored (3, 6 or 9), by key.
    #[serde(default)]
    pub chat: BTreeMap<String, u8>,
    /// A free note (kept, not read).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// A labels file that cannot be read.
#[derive(Debug, thiserror::Error)]
#[error("{file}:{line}: {problem}")]
pub struct LabelError {
    /// The file.
    pub file: String,
    /// The line (1-based; 0: the whole file).
    pub line: usize,
    /// What is wrong and what was expected.
    pub problem: String,
}

/// Reads labels.jsonl text (`file` labels errors): one [`Label`] per non-blank line, each
/// bounded and checked (a turn number from 1, the chat keys the rubric's and each 3, 6 or 9,
/// something labelled). Fields are checked against the scenario when matched to a record.
pub fn parse_labels(text: &str, file: &str) -> Result<Vec<Label>, LabelError> {
    let err = |line: usize, problem: String| LabelError {
        file: file.into(),
        line,
        problem,
    };
    let mut labels = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        if labels.len() == MAX_LABELS {
            return Err(err(
                i + 1,
                format!("more than {MAX_LABELS} labels; expected at most that many"),
            ));
        }
        let label: Label = serde_json::from_str(line).map_err(|e| {
            err(
                i + 1,
                format!("{e}; expected a JSON object with dialogue_id, turn, labeller, classification, chat (docs/judges.md)"),
            )
        })?;
        let texts = [
            label.run_id.as_deref().unwrap_or(""),
            &label.dialogue_id,
            &label.labeller,
            label.note.as_deref().unwrap_or(""),
        ];
        if texts.iter().any(|t| t.chars().count() > MAX_TEXT) {
            return Err(err(
                i + 1,
                format!("an id, labeller or note longer than {MAX_TEXT} characters"),
            ));
        }
        if label.turn == 0 {
            return Err(err(i + 1, "turn: 0; expected a turn number from 1".into()));
        }
        for (key, score) in &label.chat {
            if !DIMENSIONS.iter().any(|d| d.key == key) {
                return Err(err(
                    i + 1,
                    format!(
                        "chat: unknown dimension `{}`; expected one of {}",
                        key.escape_debug(),
                        DIMENSIONS.map(|d| d.key).join(", ")
                    ),
                ));
            }
            if ![3, 6, 9].contains(score) {
                return Err(err(
                    i + 1,
                    format!("chat.{key}: {score}; expected 3, 6 or 9"),
                ));
            }
        }
        if label.classification.len() > 256 {
            return Err(err(i + 1, "classification: more than 256 fields".into()));
        }
        if label.classification.is_empty() && label.chat.is_empty() {
            return Err(err(
                i + 1,
                "nothing labelled; expected some classification field or chat dimension".into(),
            ));
        }
        labels.push(label);
    }
    Ok(labels)
}

/// One field's (or chat dimension's) agreement: people and judges together, and each judge's
/// and the panel's accuracy against the people.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Agreement {
    /// `scenario.field`, or the chat dimension's key.
    pub name: String,
    /// Turns where a person labelled it.
    pub labelled: usize,
    /// Krippendorff's alpha of people and judges together (nominal for a field, ordinal for a
    /// chat dimension); none when there is no variation to measure.
    pub alpha: Option<f64>,
    /// Share of the people's labels each judge (by name) and the panel (`panel`, its
    /// consensus; fields only) gave too.
    pub accuracy: BTreeMap<String, f64>,
    /// The mean correlation of the judges' errors against the people's labels (fields
    /// only; none without the variation to measure it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_correlation: Option<f64>,
    /// How many independent votes the panel is worth on it, against the people's labels:
    /// Kish's judges / (1 + (judges - 1) r) ([`crate::scoring::summary::effective_judges`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub effective_judges: Option<f64>,
}

/// One judge (or the panel) against the people, over every field.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JudgeVsPeople {
    /// The judge's name, or `panel` (the majority consensus).
    pub judge: String,
    /// Share of the people's field labels it gave too.
    pub classification_accuracy: Option<f64>,
    /// Cohen's kappa of its field values against the people's (each field's values apart).
    pub kappa: Option<f64>,
    /// Share of the people's chat scores it gave too (judges only).
    pub chat_accuracy: Option<f64>,
    /// (Turn, field) pairs compared.
    pub pairs: usize,
}

/// A model's Logic (turn mean) as the judges give it and corrected by the people's labels.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CorrectedLogic {
    /// The model under test.
    pub model: String,
    /// The prediction-powered estimate, its 95% interval and the uncorrected mean beside it.
    pub ppi: Ppi,
}

/// What `sage judges calibrate` reports: calibration.json.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Calibration {
    /// Labels read.
    pub labels: usize,
    /// Judged turns labelled (matched to a record).
    pub turns: usize,
    /// The people who labelled.
    pub labellers: Vec<String>,
    /// Labels that match no judged turn of the run, and why (the first few).
    pub unmatched: Vec<String>,
    /// How many labels match no judged turn.
    pub unmatched_count: usize,
    /// The panel's judges, then `panel`.
    pub judges: Vec<JudgeVsPeople>,
    /// Alpha over every classification field (nominal).
    pub alpha_classification: Option<f64>,
    /// Alpha over every chat dimension (ordinal on 3/6/9).
    pub alpha_chat: Option<f64>,
    /// Per classification field.
    pub fields: Vec<Agreement>,
    /// Per chat dimension.
    pub chat: Vec<Agreement>,
    /// Per model under test.
    pub logic: Vec<CorrectedLogic>,
}

/// The people's value of a unit: the one most of them gave (the first of the most common).
fn people_value(unit: &Unit) -> Option<f64> {
    let people: Vec<f64> = (unit.iter())
        .filter(|(w, _)| w.starts_with("person:"))
        .map(|(_, v)| *v)
        .collect();
    let count = |v: f64| people.iter().filter(|p| p.to_bits() == v.to_bits()).count();
    people
        .iter()
        .copied()
        .reduce(|best, v| if count(v) > count(best) { v } else { best })
}

/// The coders' values of one unit (a turn's field or dimension): a code per coder.
type Unit = Vec<(String, f64)>;

/// Folds the records of a run, one at a time, against people's labels.
pub struct CalibrationFold {
    labels: Vec<Label>,
    /// Labels by (dialogue, turn).
    by_turn: HashMap<(String, u32), Vec<usize>>,
    matched: Vec<bool>,
    /// The run calibrated.
    run_id: String,
    /// Why a label that names a judged turn was left out.
    rejected: Vec<Option<String>>,
    judges: Vec<String>,
    /// Units by `scenario.field`, and the code of each (field, value).
    fields: BTreeMap<String, Vec<Unit>>,
    codes: HashMap<(String, Point), f64>,
    /// Units by chat dimension (values the scores).
    chat: BTreeMap<&'static str, Vec<Unit>>,
    /// (judge or `panel`, field) pairs against people: (judge's code, person's code).
    pairs: BTreeMap<String, Vec<(String, String)>>,
    chat_pairs: BTreeMap<String, Vec<(u8, u8)>>,
    /// Per model, per stratum (scenario, whether the judges split): the judged Logic of every
    /// scored turn, and (judged, people's) of the labelled ones.
    logic: BTreeMap<String, BTreeMap<(String, bool), Stratum>>,
    turns: usize,
}

const PANEL: &str = "panel";

impl CalibrationFold {
    /// A fold against `labels` (of run `run_id`: labels naming another run are left out).
    pub fn new(labels: Vec<Label>, run_id: &str) -> CalibrationFold {
        let mut by_turn: HashMap<(String, u32), Vec<usize>> = HashMap::new();
        for (i, l) in labels.iter().enumerate() {
            by_turn
                .entry((l.dialogue_id.clone(), l.turn))
                .or_default()
                .push(i);
        }
        CalibrationFold {
            matched: vec![false; labels.len()],
            rejected: vec![None; labels.len()],
            labels,
            by_turn,
            run_id: run_id.to_string(),
            judges: Vec::new(),
            fields: BTreeMap::new(),
            codes: HashMap::new(),
            chat: BTreeMap::new(),
            pairs: BTreeMap::new(),
            chat_pairs: BTreeMap::new(),
            logic: BTreeMap::new(),
            turns: 0,
        }
    }

    /// Adds a record of the run; `sop`: its scenario (none: its turns are not compared).
    pub fn add(&mut self, record: &DialogueRecord, sop: Option<&Sop>) {
        if self.judges.is_empty() {
            self.judges = record.job.judge_models.clone();
        }
        let model = record.job.service_model.clone();
        let variables = crate::sop::values(&record.job.variables);
        for turn in &record.turns {
            let Some(judged) = turn.scores.as_ref().map(|s| s.logic) else {
                continue;
            };
            let key = (record.job.dialogue_id.clone(), turn.turn);
            let Some(sop) = sop else { continue };
            let ids: Vec<usize> = self.by_turn.get(&key).cloned().unwrap_or_default();
            let people: Vec<usize> = ids.into_iter().filter(|&i| self.check(i, sop)).collect();
            let stratum = self
                .logic
                .entry(model.clone())
                .or_default()
                .entry((record.job.scenario.clone(), split(turn)))
                .or_default();
            stratum.judged.push(judged);
            if people.is_empty() {
                continue;
            }
            // The people's Logic: the turn scored with each person's fields as the consensus
            // (fields a person left unset keep the panel's), averaged over the people.
            let ys: Vec<f64> = people
                .iter()
                .filter_map(|&i| people_logic(turn, &self.labels[i], sop, &variables))
                .collect();
            if !ys.is_empty() {
                let y = ys.iter().sum::<f64>() / ys.len() as f64;
                stratum.labelled.push((judged, y));
            }
            self.turns += 1;
            for &i in &people {
                self.matched[i] = true;
            }
            self.compare(&record.job.scenario, turn, &people, sop);
        }
    }

    /// Whether label `i`'s fields are the scenario's with one of their values; if not, the
    /// problem is kept.
    fn check(&mut self, i: usize, sop: &Sop) -> bool {
        if let Some(theirs) = &self.labels[i].run_id
            && *theirs != self.run_id
        {
            self.rejected[i] = Some(format!(
                "labels run `{}`, not this run `{}`",
                theirs.escape_debug(),
                self.run_id
            ));
            return false;
        }
        let scenario = sop.scenario();
        for (name, value) in &self.labels[i].classification {
            let key = scenario.fields().find(|k| k.name == *name);
            let problem = match key {
                None => format!(
                    "field `{}` is not one of scenario {}'s ({})",
                    name.escape_debug(),
                    scenario.id,
                    scenario
                        .fields()
                        .map(|k| k.name.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
                Some(k) if k.point(value).is_none() => format!(
                    "field `{name}`: {}; expected {}",
                    serde_json::to_string(value).unwrap_or_default(),
                    k.expected()
                ),
                Some(_) => continue,
            };
            self.rejected[i] = Some(problem);
            return false;
        }
        true
    }

    /// Adds a labelled turn's units and pairs.
    fn compare(&mut self, scenario_id: &str, turn: &TurnRecord, people: &[usize], sop: &Sop) {
        let Some(panel) = &turn.judges else { return };
        let scenario = sop.scenario();
        for key in scenario.fields() {
            let code = |codes: &mut HashMap<(String, Point), f64>, v: &Value| {
                let p = key.point(v)?;
                let next = codes.len() as f64;
                Some(
                    *codes
                        .entry((format!("{scenario_id}.{}", key.name), p))
                        .or_insert(next),
                )
            };
            let human: Vec<(String, f64)> = people
                .iter()
                .filter_map(|&i| {
                    let l = &self.labels[i];
                    let c = code(&mut self.codes, l.classification.get(&key.name)?)?;
                    Some((format!("person:{}", l.labeller), c))
                })
                .collect();
            if human.is_empty() {
                continue;
            }
            let mut unit = human.clone();
            for (name, judgment) in self.judges.iter().zip(&panel.judgments) {
                let Some(c) = judgment
                    .as_ref()
                    .ok()
                    .and_then(|j| j.classification.get(&key.name))
                    .and_then(|v| code(&mut self.codes, v))
                else {
                    continue;
                };
                unit.push((format!("judge:{name}"), c));
                for (_, h) in &human {
                    self.pairs
                        .entry(name.clone())
                        .or_default()
                        .push((format!("{}={c}", key.name), format!("{}={h}", key.name)));
                }
            }
            if let Some(c) = panel
                .consensus
                .as_ref()
                .and_then(|m| m.get(&key.name))
                .and_then(|v| code(&mut self.codes, v))
            {
                for (_, h) in &human {
                    self.pairs
                        .entry(PANEL.into())
                        .or_default()
                        .push((format!("{}={c}", key.name), format!("{}={h}", key.name)));
                }
            }
            self.fields
                .entry(format!("{scenario_id}.{}", key.name))
                .or_default()
                .push(unit);
        }
        for dim in DIMENSIONS {
            let human: Vec<(String, u8)> = people
                .iter()
                .filter_map(|&i| {
                    let l = &self.labels[i];
                    Some((format!("person:{}", l.labeller), *l.chat.get(dim.key)?))
                })
                .collect();
            if human.is_empty() {
                continue;
            }
            let mut unit: Unit = human.iter().map(|(w, s)| (w.clone(), *s as f64)).collect();
            for (name, judgment) in self.judges.iter().zip(&panel.judgments) {
                let Some(score) = judgment.as_ref().ok().and_then(|j| j.chat.get(dim.key)) else {
                    continue;
                };
                unit.push((format!("judge:{name}"), score as f64));
                for (_, h) in &human {
                    self.chat_pairs
                        .entry(name.clone())
                        .or_default()
                        .push((score, *h));
                }
            }
            self.chat.entry(dim.key).or_default().push(unit);
        }
    }

    /// The calibration of the records folded so far.
    pub fn finish(self) -> Calibration {
        let values = |units: &[Unit]| -> Vec<Vec<f64>> {
            units
                .iter()
                .map(|u| u.iter().map(|(_, v)| *v).collect())
                .collect()
        };
        let agreement = |name: String,
                         units: &[Unit],
                         level: Level,
                         accuracy_of: &dyn Fn(&str, &[Unit]) -> Option<f64>,
                         coders: &[String]| Agreement {
            labelled: units.len(),
            alpha: krippendorff_alpha(&values(units), level),
            accuracy: coders
                .iter()
                .filter_map(|c| Some((c.clone(), accuracy_of(c, units)?)))
                .collect(),
            name,
            error_correlation: None,
            effective_judges: None,
        };
        // A coder's accuracy within a unit set: its value against each person's.
        let unit_accuracy = |coder: &str, units: &[Unit]| -> Option<f64> {
            let pairs: Vec<(u64, u64)> = units
                .iter()
                .flat_map(|u| {
                    let mine = u
                        .iter()
                        .find(|(w, _)| w == &format!("judge:{coder}"))
                        .map(|(_, v)| v.to_bits());
                    u.iter()
                        .filter(|(w, _)| w.starts_with("person:"))
                        .filter_map(move |(_, v)| Some((mine?, v.to_bits())))
                })
                .collect();
            accuracy(&pairs)
        };
        let fields: Vec<Agreement> = self
            .fields
            .iter()
            .map(|(name, units)| {
                let mut a = agreement(
                    name.clone(),
                    units,
                    Level::Nominal,
                    &unit_accuracy,
                    &self.judges,
                );
                // The panel: its consensus, from the pairs of this field.
                let field = name.split_once('.').map_or(name.as_str(), |(_, f)| f);
                let prefix = format!("{field}=");
                let panel: Vec<(String, String)> = self
                    .pairs
                    .get(PANEL)
                    .map(|p| {
                        p.iter()
                            .filter(|(j, _)| j.starts_with(&prefix))
                            .cloned()
                            .collect()
                    })
                    .unwrap_or_default();
                if let Some(acc) = accuracy(&panel) {
                    a.accuracy.insert(PANEL.into(), acc);
                }
                // How many votes the panel is worth against the people.
                let mut errors = ErrorCorrelation::default();
                for unit in units {
                    let Some(person) = people_value(unit) else {
                        continue;
                    };
                    let seats: Vec<Option<bool>> = (self.judges.iter())
                        .map(|judge| {
                            let seat = format!("judge:{judge}");
                            let mine = unit.iter().find(|(w, _)| *w == seat)?;
                            Some(mine.1.to_bits() != person.to_bits())
                        })
                        .collect();
                    errors.add(&seats);
                }
                a.error_correlation = errors.mean();
                a.effective_judges = a
                    .error_correlation
                    .map(|rho| effective_judges(self.judges.len(), rho));
                a
            })
            .collect();
        let chat: Vec<Agreement> = self
            .chat
            .iter()
            .map(|(name, units)| {
                agreement(
                    name.to_string(),
                    units,
                    Level::Ordinal,
                    &unit_accuracy,
                    &self.judges,
                )
            })
            .collect();
        let all_fields: Vec<Unit> = self.fields.values().flatten().cloned().collect();
        let all_chat: Vec<Unit> = self.chat.values().flatten().cloned().collect();
        let judges = self
            .judges
            .iter()
            .map(String::as_str)
            .chain([PANEL])
            .map(|judge| {
                let pairs = self.pairs.get(judge).map_or(&[][..], Vec::as_slice);
                JudgeVsPeople {
                    judge: judge.to_string(),
                    classification_accuracy: accuracy(pairs),
                    kappa: cohen_kappa(pairs),
                    chat_accuracy: self.chat_pairs.get(judge).and_then(|p| accuracy(p)),
                    pairs: pairs.len(),
                }
            })
            .collect();
        let logic = self
            .logic
            .iter()
            .filter_map(|(model, strata)| {
                let strata: Vec<Stratum> = strata.values().cloned().collect();
                Some(CorrectedLogic {
                    model: model.clone(),
                    ppi: ppi_stratified(&strata, Z95)?,
                })
            })
            .collect();
        let labellers: BTreeSet<String> = self.labels.iter().map(|l| l.labeller.clone()).collect();
        let left_out: Vec<String> = self
            .labels
            .iter()
            .zip(&self.matched)
            .zip(&self.rejected)
            .filter(|((_, matched), _)| !**matched)
            .map(|((label, _), why)| {
                format!(
                    "{} turn {}: {}",
                    label.dialogue_id.escape_debug(),
                    label.turn,
                    why.as_deref().unwrap_or("no judged turn of this run")
                )
            })
            .collect();
        Calibration {
            labels: self.labels.len(),
            turns: self.turns,
            labellers: labellers.into_iter().collect(),
            unmatched_count: left_out.len(),
            unmatched: left_out.into_iter().take(20).collect(),
            judges,
            alpha_classification: krippendorff_alpha(&values(&all_fields), Level::Nominal),
            alpha_chat: krippendorff_alpha(&values(&all_chat), Level::Ordinal),
            fields,
            chat,
            logic,
        }
    }
}

/// Whether the judges of a turn split: some field where the answers differ (the turns the
/// labelling page offers first, a stratum of their own in the corrected Logic).
pub fn split(turn: &TurnRecord) -> bool {
    let Some(panel) = &turn.judges else {
        return false;
    };
    let answered: Vec<_> = panel
        .judgments
        .iter()
        .filter_map(|j| j.as_ref().ok())
        .collect();
    panel.consensus.is_none()
        || answered
            .windows(2)
            .any(|w| w[0].classification != w[1].classification)
}

/// The turn's Logic with a person's fields as the consensus (the panel's for the fields the
/// person left unset): the reference the rule engine derives from them, and the agent's
/// answer scored against it. None when the turn has no consensus.
fn people_logic(turn: &TurnRecord, label: &Label, sop: &Sop, variables: &Values) -> Option<f64> {
    let panel = turn.judges.as_ref()?;
    let mut fields = panel.consensus.clone()?;
    for (k, v) in &label.classification {
        fields.insert(k.clone(), v.clone());
    }
    let mut people = panel.clone();
    people.consensus = Some(fields);
    people.calls = Vec::new();
    let mut scored = TurnRecord {
        judges: None,
        reference: None,
        scores: None,
        calls: Vec::new(),
        ..turn.clone()
    };
    apply_panel(&mut scored, people, sop, variables);
    scored.scores.map(|s| s.logic)
}
