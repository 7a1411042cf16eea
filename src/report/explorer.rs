//! The dialogue explorer's data, folded one record at a time: a compact row per dialogue (for the
//! filters and the lazily rendered table) and its transcript, written as one JSON line into a
//! gzip stream cut into chunks of about [`CHUNK_BYTES`]; each finished chunk is kept as base64
//! and decompressed in the browser (`atob` -> `Blob` -> `DecompressionStream`) when one of its
//! dialogues is opened. Memory grows with the output (the compressed chunks and the rows).

use super::page::escape;
use super::stats::category;
use crate::protocol::{DialogueRecord, ServiceOutcome};
use crate::scenario::Value;
use crate::scoring::summary::route_key;
use base64::Engine;
use flate2::Compression;
use flate2::write::GzEncoder;
use indexmap::{IndexMap, IndexSet};
use serde::Serialize;
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::io::Write;

/// Uncompressed bytes of transcripts per chunk: a chunk decompresses in milliseconds.
pub const CHUNK_BYTES: usize = 1 << 20;

/// The URL fragment that opens a dialogue in the explorer: `#dialogue=` and the id encoded as
/// JavaScript's `encodeURIComponent` does.
pub fn dialogue_anchor(id: &str) -> String {
    format!("#dialogue={}", encode_uri_component(id))
}

/// Percent-encodes `text` as JavaScript's `encodeURIComponent` (UTF-8; letters, digits and
/// `-_.!~*'()` kept).
pub fn encode_uri_component(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for b in text.bytes() {
        if b.is_ascii_alphanumeric() || b"-_.!~*'()".contains(&b) {
            out.push(b as char);
        } else {
            let _ = write!(out, "%{b:02X}");
        }
    }
    out
}

/// The explorer's name of a route of a scenario (its `route` and `reached` filters' option
/// text): `SCENARIO: KEY`, KEY as [`route_key`] writes it.
pub fn reached_label(scenario: &str, key: &str) -> String {
    format!("{scenario}: {key}")
}

/// The URL fragment that opens the explorer with filters set: `#explore=` then `NAME:VALUE`
/// pairs joined by `;`, NAME a filter (`model`, `scenario`, `route`, `reached`, `adversarial`,
/// `persona`, `end`: VALUE the option's text; `min-score`, `max-score`: a number;
/// `format-error`, `infra-error`: `1`), `sort` (`worst`) or `dialogue` (an id to open), VALUE
/// encoded as `encodeURIComponent` does (so `;` and `:` in it are escaped).
pub fn explore_anchor(filters: &[(&str, &str)]) -> String {
    let parts: Vec<String> = filters
        .iter()
        .map(|(k, v)| format!("{k}:{}", encode_uri_component(v)))
        .collect();
    format!("#explore={}", parts.join(";"))
}

/// One turn of a transcript as the browser reads it (short keys: it is embedded many times).
#[derive(Serialize)]
struct Turn<'a> {
    /// Turn number.
    n: u32,
    /// The customer's message.
    u: &'a str,
    /// 0 valid, 1 format error, 2 infrastructure error.
    k: u8,
    /// The agent's chat (or the raw reply of a format error).
    c: &'a str,
    /// The error (format or infrastructure), if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    e: Option<String>,
    /// The agent's classification, aligned with the dialogue's field names.
    #[serde(skip_serializing_if = "Option::is_none")]
    a: Option<Vec<Option<String>>>,
    /// The agent's path.
    #[serde(skip_serializing_if = "Option::is_none")]
    p: Option<&'a [String]>,
    /// The agent's action.
    #[serde(skip_serializing_if = "Option::is_none")]
    x: Option<&'a str>,
    /// The agent's extra outputs, `NAME=value`.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    o: Vec<String>,
    /// The reference: path, action and outputs (or why there is none).
    #[serde(skip_serializing_if = "Option::is_none")]
    r: Option<Reference<'a>>,
    /// Per judge: its classification (aligned with the fields; left out when it is the
    /// consensus) and chat scores, or its error.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    j: Vec<Judge>,
    /// The judges' consensus, aligned with the fields: left out when it is the customer's
    /// truth (`g`), empty when the judges reached none.
    #[serde(skip_serializing_if = "Option::is_none")]
    q: Option<Vec<Option<String>>>,
    /// Scores, 0-100: Acc_cls, Sim_path, Acc_action, Chat, then Logic and Overall only when
    /// they are not 0.4/0.4/0.2 and 0.8/0.2 of the others (the browser computes them).
    #[serde(skip_serializing_if = "Option::is_none")]
    s: Option<Vec<f64>>,
}

#[derive(Serialize)]
#[serde(untagged)]
enum Reference<'a> {
    Route {
        p: &'a [String],
        x: &'a str,
        #[serde(skip_serializing_if = "Vec::is_empty")]
        o: Vec<String>,
    },
    Error {
        e: &'a str,
    },
}

#[derive(Serialize)]
#[serde(untagged)]
enum Judge {
    Verdict {
        #[serde(skip_serializing_if = "Option::is_none")]
        c: Option<Vec<Option<String>>>,
        d: [u8; 5],
    },
    Error {
        e: String,
    },
}

/// A dialogue's transcript line.
#[derive(Serialize)]
struct Transcript<'a> {
    /// Its id.
    i: &'a str,
    /// The field names of its classifications.
    f: Vec<&'a str>,
    /// The customer's true values (the job's), aligned with the fields.
    g: Vec<Option<String>>,
    /// Its turns.
    t: Vec<Turn<'a>>,
}

fn aligned(names: &[&str], values: &BTreeMap<String, Value>) -> Vec<Option<String>> {
    names.iter().map(|n| values.get(*n).map(category)).collect()
}

fn outputs(map: &BTreeMap<String, String>) -> Vec<String> {
    map.iter().map(|(k, v)| format!("{k}={v}")).collect()
}

fn round(x: f64, scale: f64) -> f64 {
    (x * scale).round() / scale
}

/// The transcript of a record as one JSON line.
fn transcript(record: &DialogueRecord) -> Transcript<'_> {
    let names: Vec<&str> = record.job.fields.keys().map(String::as_str).collect();
    let truth: Vec<Option<String>> = names
        .iter()
        .map(|n| record.job.fields.get(*n).map(category))
        .collect();
    let turns = record
        .turns
        .iter()
        .map(|t| {
            let (k, c, e, agent) = match &t.outcome {
                ServiceOutcome::Valid { turn } => (0, turn.chat.as_str(), None, Some(turn)),
                ServiceOutcome::FormatError { error, chat } => {
                    (1, chat.as_str(), Some(error.to_string()), None)
                }
                ServiceOutcome::InfraError { error } => (2, "", Some(error.clone()), None),
            };
            let e = e.or_else(|| t.infra_error.clone());
            let r = t.reference.as_ref().map(|r| match r {
                Ok(route) => Reference::Route {
                    p: &route.path,
                    x: &route.action,
                    o: outputs(&route.outputs),
                },
                Err(e) => Reference::Error { e },
            });
            let (j, q) = match &t.judges {
                Some(panel) => {
                    let consensus = panel
                        .consensus
                        .as_ref()
                        .map_or_else(Vec::new, |c| aligned(&names, c));
                    let judges = panel
                        .judgments
                        .iter()
                        .map(|j| match j {
                            Ok(j) => Judge::Verdict {
                                c: Some(aligned(&names, &j.classification))
                                    .filter(|c| *c != consensus),
                                d: [
                                    j.chat.linguistic_quality,
                                    j.chat.anthropomorphism_emotion,
                                    j.chat.content_utility,
                                    j.chat.user_satisfaction,
                                    j.chat.instruction_compliance,
                                ],
                            },
                            Err(e) => Judge::Error { e: e.clone() },
                        })
                        .collect();
                    (judges, Some(consensus).filter(|c| *c != truth))
                }
                None => (Vec::new(), None),
            };
            Turn {
                n: t.turn,
                u: &t.user_message,
                k,
                c,
                e,
                a: agent.map(|a| aligned(&names, &a.classification)),
                p: agent.map(|a| a.path.as_slice()),
                x: agent.map(|a| a.action.as_str()),
                o: agent.map(|a| outputs(&a.outputs)).unwrap_or_default(),
                r,
                j,
                q,
                s: t.scores.filter(|_| k != 2).map(|s| {
                    let mut v = vec![
                        round(100.0 * s.acc_cls, 100.0),
                        round(100.0 * s.sim_path, 100.0),
                        round(100.0 * s.acc_action, 100.0),
                        round(s.chat, 100.0),
                    ];
                    let logic = 0.4 * v[0] + 0.4 * v[1] + 0.2 * v[2];
                    let overall = 0.8 * logic + 0.2 * v[3];
                    if (logic - s.logic).abs() > 0.01 || (overall - s.overall).abs() > 0.01 {
                        v.extend([round(s.logic, 100.0), round(s.overall, 100.0)]);
                    }
                    v
                }),
            }
        })
        .collect();
    Transcript {
        i: &record.job.dialogue_id,
        f: names,
        g: truth,
        t: turns,
    }
}

/// Bit of a row's flags: a turn with a format error.
pub const FLAG_FORMAT_ERROR: u8 = 1;
/// Bit of a row's flags: a turn with an infrastructure error.
pub const FLAG_INFRA_ERROR: u8 = 2;

/// The explorer's fold.
pub struct ExplorerFold {
    models: IndexSet<String>,
    scenarios: IndexSet<String>,
    routes: IndexSet<String>,
    /// Routes reached by a scored turn's reference (`SCENARIO: KEY`).
    reached: IndexSet<String>,
    personas: IndexSet<String>,
    ends: IndexSet<String>,
    /// The rows, each a JSON array, comma-separated.
    rows: String,
    dialogues: usize,
    chunks: Vec<String>,
    encoder: Option<GzEncoder<Vec<u8>>>,
    in_chunk: usize,
    used: usize,
    chunk_bytes: usize,
    level: Compression,
    line: Vec<u8>,
}

impl std::fmt::Debug for ExplorerFold {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ExplorerFold")
            .field("dialogues", &self.dialogues)
            .field("chunks", &self.chunks.len())
            .finish()
    }
}

impl Default for ExplorerFold {
    fn default() -> Self {
        ExplorerFold::new(CHUNK_BYTES)
    }
}

impl ExplorerFold {
    /// An empty fold cutting chunks at about `chunk_bytes` uncompressed bytes.
    pub fn new(chunk_bytes: usize) -> ExplorerFold {
        ExplorerFold {
            models: IndexSet::new(),
            scenarios: IndexSet::new(),
            routes: IndexSet::new(),
            reached: IndexSet::new(),
            personas: IndexSet::new(),
            ends: IndexSet::new(),
            rows: String::new(),
            dialogues: 0,
            chunks: Vec::new(),
            encoder: None,
            in_chunk: 0,
            used: 0,
            chunk_bytes: chunk_bytes.max(1),
            level: Compression::new(6),
            line: Vec::new(),
        }
    }

    /// Dialogues folded.
    pub fn dialogues(&self) -> usize {
        self.dialogues
    }

    /// Folds a record in.
    pub fn add(&mut self, record: &DialogueRecord) {
        let job = &record.job;
        let intern = |set: &mut IndexSet<String>, s: &str| match set.get_index_of(s) {
            Some(i) => i,
            None => set.insert_full(s.to_string()).0,
        };
        let m = intern(&mut self.models, &job.service_model);
        let s = intern(&mut self.scenarios, &job.scenario);
        let r = intern(
            &mut self.routes,
            &reached_label(&job.scenario, &route_key(&job.target)),
        );
        let p = intern(&mut self.personas, &job.persona);
        let e = intern(&mut self.ends, record.end.name());
        let level = match job.adversarial {
            crate::scenario::Adversarial::Zero => 0,
            crate::scenario::Adversarial::Weak => 1,
            crate::scenario::Adversarial::Strong => 2,
        };
        let mut flags = 0u8;
        let mut score = super::stats::Mean::default();
        // Per reached route (index into `reached`), the Logic of its turns, in first-reached
        // order.
        let mut on_route: IndexMap<usize, super::stats::Mean> = IndexMap::new();
        for t in &record.turns {
            if let (Some(s), Some(Ok(route)), false) = (
                t.scores,
                &t.reference,
                matches!(t.outcome, ServiceOutcome::InfraError { .. }),
            ) {
                let label = reached_label(&job.scenario, &route_key(route));
                on_route
                    .entry(intern(&mut self.reached, &label))
                    .or_default()
                    .add(s.logic);
            }
            match t.outcome {
                ServiceOutcome::FormatError { .. } => flags |= FLAG_FORMAT_ERROR,
                ServiceOutcome::InfraError { .. } => flags |= FLAG_INFRA_ERROR,
                ServiceOutcome::Valid { .. } => {}
            }
            if t.infra_error.is_some() {
                flags |= FLAG_INFRA_ERROR;
            }
            if let Some(s) = t.scores
                && !matches!(t.outcome, ServiceOutcome::InfraError { .. })
            {
                score.add(s.overall);
            }
        }
        // The transcript goes to the open chunk.
        self.line.clear();
        if serde_json::to_writer(&mut self.line, &transcript(record)).is_err() {
            self.line.clear();
            self.line.extend_from_slice(b"{}");
        }
        self.line.push(b'\n');
        let encoder = self
            .encoder
            .get_or_insert_with(|| GzEncoder::new(Vec::new(), self.level));
        // Writing into a Vec cannot fail.
        let _ = encoder.write_all(&self.line);
        let chunk = self.chunks.len();
        let position = self.in_chunk;
        self.in_chunk += 1;
        self.chunk_bytes_used_add(self.line.len());
        if !self.rows.is_empty() {
            self.rows.push(',');
        }
        let id = serde_json::to_string(&job.dialogue_id).unwrap_or_else(|_| "\"\"".into());
        let score = score
            .get()
            .map_or("null".to_string(), |x| format!("{}", round(x, 100.0)));
        let reached: Vec<String> = on_route
            .iter()
            .filter_map(|(i, x)| Some(format!("[{i},{}]", round(x.get()?, 100.0))))
            .collect();
        let _ = write!(
            self.rows,
            "[{id},{m},{s},{r},{level},{p},{e},{score},{flags},{},{chunk},{position},[{}]]",
            record.turns.len(),
            reached.join(",")
        );
        self.dialogues += 1;
    }

    fn chunk_bytes_used_add(&mut self, n: usize) {
        self.used += n;
        if self.used >= self.chunk_bytes {
            self.finish_chunk();
        }
    }

    /// Closes the open chunk (if any) into a base64 string.
    fn finish_chunk(&mut self) {
        if let Some(encoder) = self.encoder.take() {
            // Finishing into a Vec cannot fail; an empty chunk would only be a gzip header.
            let bytes = encoder.finish().unwrap_or_default();
            self.chunks
                .push(base64::engine::general_purpose::STANDARD.encode(bytes));
        }
        self.in_chunk = 0;
        self.used = 0;
    }

    /// The explorer's HTML: the filters (options listed, so they read without JavaScript), the
    /// table the script fills, the dialogue view, the index and the compressed transcripts.
    /// Closes the open chunk (records added later start a new one).
    pub fn html(&mut self) -> String {
        self.finish_chunk();
        let mut out = String::with_capacity(
            self.rows.len() + self.chunks.iter().map(|c| c.len() + 64).sum::<usize>() + 8192,
        );
        let _ = write!(
            out,
            "<div id=\"explorer\"><p class=\"note\">Every dialogue of the run ({} in all). Pick filters, click a row to open its transcript; <code>#dialogue=ID</code> links open one directly. The transcripts are embedded compressed and need JavaScript.</p><noscript><p class=\"bad\">JavaScript is off: the explorer cannot list or open dialogues.</p></noscript><div class=\"filters\">",
            self.dialogues
        );
        let select = |out: &mut String,
                      key: &str,
                      label: &str,
                      options: &mut dyn Iterator<Item = (String, String)>| {
            let _ = write!(
                out,
                "<label>{label} <select data-filter=\"{key}\"><option value=\"\">all</option>"
            );
            for (value, text) in options {
                let _ = write!(
                    out,
                    "<option value=\"{}\">{}</option>",
                    escape(&value),
                    escape(&text)
                );
            }
            out.push_str("</select></label>");
        };
        let indexed = |set: &IndexSet<String>| -> Vec<(String, String)> {
            let mut v: Vec<(String, String)> = set
                .iter()
                .enumerate()
                .map(|(i, s)| (i.to_string(), s.clone()))
                .collect();
            v.sort_by(|a, b| a.1.cmp(&b.1));
            v
        };
        select(
            &mut out,
            "model",
            "Model",
            &mut indexed(&self.models).into_iter(),
        );
        select(
            &mut out,
            "scenario",
            "Scenario",
            &mut indexed(&self.scenarios).into_iter(),
        );
        select(
            &mut out,
            "route",
            "Target route",
            &mut indexed(&self.routes).into_iter(),
        );
        select(
            &mut out,
            "reached",
            "Reached route",
            &mut indexed(&self.reached).into_iter(),
        );
        select(
            &mut out,
            "adversarial",
            "Adversarial",
            &mut ["zero", "weak", "strong"]
                .iter()
                .enumerate()
                .map(|(i, l)| (i.to_string(), l.to_string())),
        );
        select(
            &mut out,
            "persona",
            "Persona",
            &mut indexed(&self.personas).into_iter(),
        );
        select(&mut out, "end", "End", &mut indexed(&self.ends).into_iter());
        out.push_str("<label>Score from <input type=\"number\" min=\"0\" max=\"100\" step=\"any\" data-filter=\"min-score\" size=\"5\"></label><label>to <input type=\"number\" min=\"0\" max=\"100\" step=\"any\" data-filter=\"max-score\" size=\"5\"></label><label><input type=\"checkbox\" data-filter=\"format-error\"> format-error turns</label><label><input type=\"checkbox\" data-filter=\"infra-error\"> infrastructure-error turns</label><label>Order <select data-sort-rows><option value=\"\">as run</option><option value=\"worst\">worst first</option></select></label>");
        let _ = write!(
            out,
            "</div><p><span id=\"explorer-count\">{}</span> dialogues match.</p><div class=\"explorer-scroll\"><table class=\"data\" id=\"explorer-table\"><thead><tr><th>Dialogue</th><th>Model</th><th>Scenario</th><th>Target route</th><th>Adversarial</th><th>Persona</th><th>End</th><th class=\"num\">Turns</th><th class=\"num\">Overall</th><th class=\"num\" title=\"the mean Logic of the dialogue's turns on the reached route filtered to\">Logic on route</th></tr></thead><tbody></tbody></table></div><div id=\"dialogue-view\" data-dialogue=\"\" hidden></div></div>",
            self.dialogues
        );
        let table = |set: &IndexSet<String>| {
            serde_json::to_string(&set.iter().collect::<Vec<_>>()).unwrap_or_else(|_| "[]".into())
        };
        let index = format!(
            "{{\"models\":{},\"scenarios\":{},\"routes\":{},\"reached\":{},\"personas\":{},\"ends\":{},\"rows\":[{}]}}",
            table(&self.models),
            table(&self.scenarios),
            table(&self.routes),
            table(&self.reached),
            table(&self.personas),
            table(&self.ends),
            self.rows
        );
        // `<` only occurs inside JSON strings, where `\u003c` is the same character.
        let _ = write!(
            out,
            "<script type=\"application/json\" id=\"explorer-data\">{}</script>",
            index.replace('<', "\\u003c")
        );
        for (i, chunk) in self.chunks.iter().enumerate() {
            let _ = write!(
                out,
                "<script type=\"application/gzip-base64\" data-chunk=\"{i}\">{chunk}</script>"
            );
        }
        out
    }
}

/// The explorer's style.
pub const CSS: &str = r#"
#explorer .filters{display:flex;flex-wrap:wrap;gap:6px 14px;align-items:center;margin:6px 0}
#explorer .filters select{max-width:260px}
#explorer .filters input[type=number]{width:70px}
.explorer-scroll{max-height:520px;overflow:auto;border:1px solid var(--line)}
.explorer-scroll table.data{margin:0;width:100%}
.explorer-scroll table.data th{top:0}
#explorer-table tbody tr{cursor:pointer}
#explorer-table tbody tr:hover,#explorer-table tbody tr.open{background:var(--panel)}
#dialogue-view{margin-top:14px;border-top:2px solid var(--accent);padding-top:8px}
#dialogue-view .turn{border:1px solid var(--line);border-radius:6px;padding:8px 10px;margin:10px 0;scroll-margin-top:44px}
#dialogue-view .turn.on-route{box-shadow:inset 4px 0 0 var(--accent)}
#dialogue-view .turn.differs h4{color:var(--bad)}
#dialogue-view .turn.broke{border:2px solid var(--bad)}
#dialogue-view .turn.broke h4 .tag{margin-left:8px}
#explorer{scroll-margin-top:40px}
#dialogue-view .turn h4{margin:0 0 6px;font-size:14px}
#dialogue-view .msg{white-space:pre-wrap;padding:6px 8px;border-radius:6px;margin:4px 0}
#dialogue-view .msg.customer{background:var(--panel)}
#dialogue-view .msg.agent{border:1px solid var(--line)}
#dialogue-view .diff{background:rgba(198,40,40,.16);color:var(--bad);font-weight:600}
#dialogue-view .err{color:var(--bad)}
#dialogue-view table.data td{min-width:60px}
"#;

/// The explorer's script: filters, lazily rendered rows, transcripts decompressed on demand,
/// `#dialogue=ID` links.
pub const SCRIPT: &str = include_str!("js/explorer.js");
