//! Parsing the service agent's answer (appendix B.3.2's JSON contract) and a judge's verdict:
//! tolerant of surrounding text and code fences, strict about content. Every input gets exactly
//! one outcome: a valid [`AgentTurn`] (or [`Judgment`]) or a typed [`FormatError`]; no input
//! panics.
//!
//! Both parsers share the same steps: `extract_object` finds the first balanced JSON object in
//! the text (respecting strings and escapes) that parses; then each required key is read with its
//! type, and each classification field is checked against its options.

use super::{AgentTurn, ChatScores, Judgment};
use crate::scenario::{Key, Value};
use crate::sop::Sop;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value as Json};
use std::collections::BTreeMap;

/// Why an agent answer is not a valid turn.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, thiserror::Error)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum FormatError {
    /// No JSON object in the text at all.
    #[error("no JSON object in the answer")]
    NoJsonObject,
    /// The output was cut off (the model hit its token limit) before the JSON was complete.
    #[error("the answer was cut off before the JSON object was complete (finish_reason length)")]
    Truncated,
    /// Text that looks like a JSON object but does not parse.
    #[error("invalid JSON: {message}")]
    InvalidJson {
        /// The parser's message.
        message: String,
    },
    /// A required key is missing.
    #[error("missing key `{key}`")]
    MissingKey {
        /// The key (dotted for nested keys, e.g. `finals.Action`).
        key: String,
    },
    /// A key has the wrong JSON type.
    #[error("`{key}` should be {expected}")]
    WrongType {
        /// The key.
        key: String,
        /// The expected JSON type.
        expected: String,
    },
    /// A field (or output) value that is not one of its options.
    #[error("`{value}` is not a value of {field}")]
    ValueNotAnOption {
        /// The field or output.
        field: String,
        /// The value given.
        value: String,
    },
    /// A stage id in `now_path` that the SOP does not have.
    #[error("unknown stage `{stage}` in now_path")]
    UnknownStage {
        /// The stage id given.
        stage: String,
    },
    /// An action that the scenario does not have.
    #[error("unknown action `{action}`")]
    UnknownAction {
        /// The action given.
        action: String,
    },
}

impl FormatError {
    /// Every kind's name ([`FormatError::kind`]).
    pub const KINDS: [&'static str; 8] = [
        "no_json",
        "truncated",
        "invalid_json",
        "missing_key",
        "wrong_type",
        "invalid_value",
        "unknown_stage",
        "unknown_action",
    ];

    /// A short stable name of the error's kind (a metrics label): `no_json`, `truncated`,
    /// `invalid_json`, `missing_key`, `wrong_type`, `invalid_value`, `unknown_stage`,
    /// `unknown_action`.
    pub fn kind(&self) -> &'static str {
        match self {
            FormatError::NoJsonObject => "no_json",
            FormatError::Truncated => "truncated",
            FormatError::InvalidJson { .. } => "invalid_json",
            FormatError::MissingKey { .. } => "missing_key",
            FormatError::WrongType { .. } => "wrong_type",
            FormatError::ValueNotAnOption { .. } => "invalid_value",
            FormatError::UnknownStage { .. } => "unknown_stage",
            FormatError::UnknownAction { .. } => "unknown_action",
        }
    }
}

/// Parses a raw agent answer against a scenario. `truncated` is true when the model reported
/// that it stopped at its token limit.
///
/// Checks, in this order: the JSON object; `classification_output` (an object holding every
/// field with one of its values; booleans may be `true`/`"true"`, integers numbers or numeric
/// strings); `cot` (string); `now_path` (array of known stage ids); `finals` (object) with
/// `Action` (a known action) and each declared output (required when the action carries it; when
/// given, one of its options or its default); `chat` (string). Unknown extra keys are ignored.
///
/// In the turn, field values are canonical (booleans as JSON booleans, integers as numbers), and
/// `outputs` holds every output the agent gave plus, for an output its action does not carry and
/// that it omitted, the output's default, so it compares directly with
/// [`Route::outputs`](crate::sop::Route).
pub fn parse_agent_output(sop: &Sop, raw: &str, truncated: bool) -> Result<AgentTurn, FormatError> {
    let obj = extract_object(raw, truncated)?;
    let classification = classification(sop, &obj, "classification_output")?;
    let cot = string(&obj, "cot", "cot")?;
    let path = now_path(sop, &obj)?;
    let finals = object(&obj, "finals", "finals")?;
    let action = string(finals, "Action", "finals.Action")?;
    let Some(carried) = sop.scenario().actions.iter().find(|a| a.name == action) else {
        return Err(FormatError::UnknownAction { action });
    };
    let mut outputs = BTreeMap::new();
    for (i, output) in sop.scenario().outputs.iter().enumerate() {
        let value = match finals.get(&output.name) {
            Some(Json::String(s)) => s.clone(),
            Some(other) => return Err(not_an_option(&output.name, other)),
            None if carried.outputs.contains(&i) => {
                return Err(missing(&format!("finals.{}", output.name)));
            }
            None => match &output.default {
                Some(default) => default.clone(),
                None => continue,
            },
        };
        if !output.options.contains(&value) && output.default.as_ref() != Some(&value) {
            return Err(FormatError::ValueNotAnOption {
                field: output.name.clone(),
                value,
            });
        }
        outputs.insert(output.name.clone(), value);
    }
    let chat = string(&obj, "chat", "chat")?;
    Ok(AgentTurn {
        classification,
        cot,
        path,
        action,
        outputs,
        chat,
    })
}

/// Parses a judge's verdict (appendix B.3.2's judge output): `classification` holds every field
/// with one of its values (as in [`parse_agent_output`]), and `chat_quality_dimensions` holds
/// the five dimensions, each exactly 3, 6 or 9 (a number or a numeric string). The reasoning
/// texts are not required; unknown extra keys are ignored. Raw control characters inside a
/// string (a line break in a reasoning text) are read as their escapes: llama.cpp's
/// schema-constrained decoding lets a model write them, and a verdict is parsed, not measured
/// (the agent's answer stays strict JSON, [`parse_agent_output`]).
pub fn parse_judge_output(sop: &Sop, raw: &str) -> Result<Judgment, FormatError> {
    // Strict first: the escaping guesses where strings are from the quotes, and prose before
    // the object with an odd number of quotes would make it guess wrong.
    let strict = parse_judge_strict(sop, raw);
    // The escaping scans the text: only for an answer that did not parse.
    if strict.is_err()
        && let std::borrow::Cow::Owned(escaped) = escape_raw_controls(raw)
    {
        return parse_judge_strict(sop, &escaped).or(strict);
    }
    strict
}

/// [`parse_judge_output`] on the text as it is.
fn parse_judge_strict(sop: &Sop, raw: &str) -> Result<Judgment, FormatError> {
    // Fast path for the common case, an answer that is exactly an object holding a valid
    // verdict: read in one pass, each classification field resolved as it is read, nothing
    // else kept. Anything else takes the general path below, which gives the precise error;
    // both accept the same answers with the same verdict.
    let trimmed = raw.trim();
    if trimmed.starts_with('{')
        && trimmed.ends_with('}')
        && let Some(judgment) = fast_judgment(sop, trimmed)
    {
        return Ok(judgment);
    }
    let obj = extract_object(raw, false)?;
    let classification = classification(sop, &obj, "classification")?;
    judgment(
        classification,
        object(&obj, "chat_quality_dimensions", "chat_quality_dimensions")?,
    )
}

/// The verdict of a text that is exactly one JSON object holding a valid one (as the general
/// path reads it: every classification field one of its options, the five scores 3, 6 or 9,
/// other keys any valid JSON), read without building the object; `None` for anything else.
fn fast_judgment(sop: &Sop, text: &str) -> Option<Judgment> {
    use serde::de::DeserializeSeed;
    let mut de = serde_json::Deserializer::from_str(text);
    let judgment = FastAnswer(sop).deserialize(&mut de).ok()?;
    de.end().ok()?;
    Some(judgment)
}

/// Reads an answer object into a verdict ([`fast_judgment`]). Any departure from a valid
/// verdict (a missing, duplicated or invalid key, a value the general path would write
/// differently) is an error, which sends the answer to the general path.
struct FastAnswer<'s>(&'s Sop);

/// A key of the answer object, read without being copied.
enum AnswerKey {
    Classification,
    Dimensions,
    Other,
}

impl<'de> Deserialize<'de> for AnswerKey {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Name;
        impl serde::de::Visitor<'_> for Name {
            type Value = AnswerKey;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a key")
            }
            fn visit_str<E>(self, key: &str) -> Result<AnswerKey, E> {
                Ok(match key {
                    "classification" => AnswerKey::Classification,
                    "chat_quality_dimensions" => AnswerKey::Dimensions,
                    _ => AnswerKey::Other,
                })
            }
        }
        deserializer.deserialize_str(Name)
    }
}

/// The general path's message-free refusal: the fast path gives up.
fn give_up<E: serde::de::Error>() -> E {
    E::custom("not on the fast path")
}

impl<'de> serde::de::DeserializeSeed<'de> for FastAnswer<'_> {
    type Value = Judgment;
    fn deserialize<D: serde::Deserializer<'de>>(
        self,
        deserializer: D,
    ) -> Result<Judgment, D::Error> {
        deserializer.deserialize_map(self)
    }
}

impl<'de> serde::de::Visitor<'de> for FastAnswer<'_> {
    type Value = Judgment;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a verdict object")
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Judgment, A::Error> {
        let (mut classification, mut chat) = (None, None);
        while let Some(key) = map.next_key::<AnswerKey>()? {
            match key {
                AnswerKey::Classification if classification.is_none() => {
                    classification = Some(map.next_value_seed(FastFields(self.0))?);
                }
                AnswerKey::Dimensions if chat.is_none() => {
                    chat = Some(map.next_value::<FastScores>()?.0);
                }
                // A repeated key: the general path keeps the last one; not worth a fast path.
                AnswerKey::Classification | AnswerKey::Dimensions => return Err(give_up()),
                AnswerKey::Other => {
                    map.next_value::<Checked>()?;
                }
            }
        }
        match (classification, chat) {
            (Some(classification), Some(chat)) => Ok(Judgment {
                classification,
                chat,
            }),
            _ => Err(give_up()),
        }
    }
}

/// Reads a classification object: every field of the scenario once, each resolved to its
/// canonical value ([`resolve`]); other keys any valid JSON.
struct FastFields<'s>(&'s Sop);

/// A field's value as the general path reads it from JSON: a boolean, an integer that fits
/// an `i64` or a string (anything else gives up: the general path writes other numbers its own
/// way or refuses the value).
struct FastValue(Value);

impl<'de> Deserialize<'de> for FastValue {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Scalar;
        impl serde::de::Visitor<'_> for Scalar {
            type Value = FastValue;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a boolean, an integer or a string")
            }
            fn visit_bool<E>(self, b: bool) -> Result<FastValue, E> {
                Ok(FastValue(Value::Bool(b)))
            }
            fn visit_i64<E>(self, n: i64) -> Result<FastValue, E> {
                Ok(FastValue(Value::Int(n)))
            }
            fn visit_u64<E: serde::de::Error>(self, n: u64) -> Result<FastValue, E> {
                i64::try_from(n)
                    .map(|n| FastValue(Value::Int(n)))
                    .map_err(|_| give_up())
            }
            fn visit_str<E>(self, s: &str) -> Result<FastValue, E> {
                Ok(FastValue(Value::Str(s.to_string())))
            }
        }
        deserializer.deserialize_any(Scalar)
    }
}

/// The five chat-quality scores of a `chat_quality_dimensions` object, each as
/// [`dimension_score`] reads it; other keys any valid JSON.
struct FastScores(ChatScores);

impl<'de> Deserialize<'de> for FastScores {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Scores;
        impl<'de> serde::de::Visitor<'de> for Scores {
            type Value = FastScores;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("the chat-quality scores")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut map: A,
            ) -> Result<FastScores, A::Error> {
                let mut scores = [None; 5];
                while let Some(key) = map.next_key_seed(NameIndex(&DIMENSIONS))? {
                    let Some(i) = key else {
                        map.next_value::<Checked>()?;
                        continue;
                    };
                    let score = map.next_value::<FastScore>()?.0;
                    if scores[i].replace(score).is_some() {
                        return Err(give_up());
                    }
                }
                let [Some(l), Some(a), Some(c), Some(u), Some(i)] = scores else {
                    return Err(give_up());
                };
                Ok(FastScores(chat_scores([l, a, c, u, i])))
            }
        }
        deserializer.deserialize_map(Scores)
    }
}

/// The five dimensions in [`ChatScores`]' order.
const DIMENSIONS: [&str; 5] = [
    "linguistic_quality",
    "anthropomorphism_emotion",
    "content_utility",
    "user_satisfaction",
    "instruction_compliance",
];

/// A key of an object whose keys of interest are `names`: the index of the one it is, if any
/// (read without being copied).
struct NameIndex<'a>(&'a [&'a str]);

impl<'de> serde::de::DeserializeSeed<'de> for NameIndex<'_> {
    type Value = Option<usize>;
    fn deserialize<D: serde::Deserializer<'de>>(
        self,
        deserializer: D,
    ) -> Result<Option<usize>, D::Error> {
        deserializer.deserialize_str(self)
    }
}

impl serde::de::Visitor<'_> for NameIndex<'_> {
    type Value = Option<usize>;
    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a key")
    }
    fn visit_str<E>(self, key: &str) -> Result<Option<usize>, E> {
        Ok(self.0.iter().position(|name| *name == key))
    }
}

/// One score as [`dimension_score`] reads it: 3, 6 or 9, as a number or a numeric string.
struct FastScore(u8);

impl<'de> Deserialize<'de> for FastScore {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Score;
        impl serde::de::Visitor<'_> for Score {
            type Value = FastScore;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("3, 6 or 9")
            }
            fn visit_i64<E: serde::de::Error>(self, n: i64) -> Result<FastScore, E> {
                self.visit_f64(n as f64)
            }
            fn visit_u64<E: serde::de::Error>(self, n: u64) -> Result<FastScore, E> {
                self.visit_f64(n as f64)
            }
            fn visit_f64<E: serde::de::Error>(self, x: f64) -> Result<FastScore, E> {
                score_of(x).map(FastScore).ok_or_else(give_up)
            }
            fn visit_str<E: serde::de::Error>(self, s: &str) -> Result<FastScore, E> {
                let x = s.trim().parse::<f64>().map_err(|_| give_up())?;
                self.visit_f64(x)
            }
        }
        deserializer.deserialize_any(Score)
    }
}

impl<'de> serde::de::DeserializeSeed<'de> for FastFields<'_> {
    type Value = BTreeMap<String, Value>;
    fn deserialize<D: serde::Deserializer<'de>>(
        self,
        deserializer: D,
    ) -> Result<Self::Value, D::Error> {
        deserializer.deserialize_map(self)
    }
}

impl<'de> serde::de::Visitor<'de> for FastFields<'_> {
    type Value = BTreeMap<String, Value>;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a classification object")
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        // A scenario has a handful of fields: a list beats a map.
        let fields: Vec<&Key> = self.0.scenario().fields().collect();
        let names: Vec<&str> = fields.iter().map(|f| f.name.as_str()).collect();
        let mut values: Vec<Option<Value>> = vec![None; fields.len()];
        while let Some(index) = map.next_key_seed(NameIndex(&names))? {
            let Some(i) = index else {
                map.next_value::<Checked>()?;
                continue;
            };
            let value = resolve(fields[i], map.next_value::<FastValue>()?.0);
            if values[i].replace(value.ok_or_else(give_up)?).is_some() {
                return Err(give_up());
            }
        }
        fields
            .iter()
            .zip(values)
            .map(|(field, value)| Ok((field.name.clone(), value.ok_or_else(give_up)?)))
            .collect()
    }
}

/// Any JSON value, read to its end and checked as a [`Json`] value is (strings decoded, numbers
/// in range), without being kept.
struct Checked;

impl<'de> Deserialize<'de> for Checked {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Checked, D::Error> {
        deserializer.deserialize_any(Checked)
    }
}

impl<'de> serde::de::Visitor<'de> for Checked {
    type Value = Checked;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_bool<E>(self, _: bool) -> Result<Checked, E> {
        Ok(Checked)
    }
    fn visit_i64<E>(self, _: i64) -> Result<Checked, E> {
        Ok(Checked)
    }
    fn visit_u64<E>(self, _: u64) -> Result<Checked, E> {
        Ok(Checked)
    }
    fn visit_f64<E>(self, _: f64) -> Result<Checked, E> {
        Ok(Checked)
    }
    fn visit_str<E>(self, _: &str) -> Result<Checked, E> {
        Ok(Checked)
    }
    fn visit_unit<E>(self) -> Result<Checked, E> {
        Ok(Checked)
    }
    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Checked, A::Error> {
        while seq.next_element::<Checked>()?.is_some() {}
        Ok(Checked)
    }
    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Checked, A::Error> {
        while map.next_entry::<Checked, Checked>()?.is_some() {}
        Ok(Checked)
    }
}

/// A verdict from its classification and its chat-quality object.
fn judgment(
    classification: BTreeMap<String, Value>,
    dims: &Map<String, Json>,
) -> Result<Judgment, FormatError> {
    let mut scores = [0; 5];
    for (score, name) in scores.iter_mut().zip(DIMENSIONS) {
        *score = dimension_score(dims, name)?;
    }
    Ok(Judgment {
        classification,
        chat: chat_scores(scores),
    })
}

/// The scores of the five [`DIMENSIONS`], in their order.
fn chat_scores([l, a, c, u, i]: [u8; 5]) -> ChatScores {
    ChatScores {
        linguistic_quality: l,
        anthropomorphism_emotion: a,
        content_utility: c,
        user_satisfaction: u,
        instruction_compliance: i,
    }
}

/// The `chat` text of an answer whose JSON object can be read, even when the answer is otherwise
/// invalid: what to show the user after a format error. `None` when there is no readable object
/// or its `chat` is not a string.
pub fn extract_chat(raw: &str) -> Option<String> {
    let obj = extract_object(raw, false).ok()?;
    match obj.get("chat") {
        Some(Json::String(s)) => Some(s.clone()),
        _ => None,
    }
}

/// The first balanced `{...}` span of the text that parses as a JSON object. Spans that do not
/// parse are skipped whole (their inner objects are not tried). When no span parses: `Truncated`
/// if the text ends inside an unclosed object or `truncated` is set, else `InvalidJson` (a span
/// was found) or `NoJsonObject` (none was).
/// The first JSON object in a model's text (in a code fence, after prose, ...); `truncated` when the
/// model stopped at its token limit.
pub fn extract_object(raw: &str, truncated: bool) -> Result<Map<String, Json>, FormatError> {
    let mut first_error = None;
    let mut from = 0;
    while let Some(offset) = raw[from..].find('{') {
        let start = from + offset;
        let Some(end) = balanced_end(raw.as_bytes(), start) else {
            return Err(FormatError::Truncated);
        };
        match serde_json::from_str::<Map<String, Json>>(&raw[start..end]) {
            Ok(obj) => return Ok(obj),
            Err(e) => {
                first_error.get_or_insert_with(|| e.to_string());
                from = end;
            }
        }
    }
    match first_error {
        _ if truncated => Err(FormatError::Truncated),
        Some(message) => Err(FormatError::InvalidJson { message }),
        None => Err(FormatError::NoJsonObject),
    }
}

/// The text with every raw control character (U+0000 to U+001F) inside a JSON string replaced
/// by its escape (`\n`, `\r`, `\t`, else `\u00XX`), which strict JSON requires; borrowed when
/// there is none. Outside strings such characters are whitespace (or invalid) and are left.
fn escape_raw_controls(text: &str) -> std::borrow::Cow<'_, str> {
    let mut out: Option<String> = None;
    let mut in_string = false;
    let mut escaped = false;
    for (i, c) in text.char_indices() {
        let replacement = if !in_string {
            in_string = c == '"';
            None
        } else if escaped {
            escaped = false;
            None
        } else {
            match c {
                '\\' => {
                    escaped = true;
                    None
                }
                '"' => {
                    in_string = false;
                    None
                }
                '\n' => Some("\\n".to_string()),
                '\r' => Some("\\r".to_string()),
                '\t' => Some("\\t".to_string()),
                c if c < ' ' => Some(format!("\\u{:04x}", c as u32)),
                _ => None,
            }
        };
        match (replacement, &mut out) {
            (Some(r), Some(o)) => o.push_str(&r),
            (Some(r), None) => out = Some(format!("{}{r}", &text[..i])),
            (None, Some(o)) => o.push(c),
            (None, None) => {}
        }
    }
    out.map_or(std::borrow::Cow::Borrowed(text), std::borrow::Cow::Owned)
}

/// The end (exclusive) of the object opening at `start`, counting braces outside JSON strings;
/// `None` when the text ends first. Works on bytes: the characters it looks at are ASCII, which
/// never occur inside a multi-byte UTF-8 character.
fn balanced_end(text: &[u8], start: usize) -> Option<usize> {
    let mut depth = 0usize;
    let mut in_string = false;
    let mut escaped = false;
    for (i, &b) in text.iter().enumerate().skip(start) {
        if in_string {
            match b {
                _ if escaped => escaped = false,
                b'\\' => escaped = true,
                b'"' => in_string = false,
                _ => {}
            }
            continue;
        }
        match b {
            b'"' => in_string = true,
            b'{' => depth += 1,
            b'}' => {
                depth -= 1;
                if depth == 0 {
                    return Some(i + 1);
                }
            }
            _ => {}
        }
    }
    None
}

/// Every classification field of the scenario, read from the object under `key` and resolved
/// against its options (canonical values: booleans as booleans, integers as numbers).
fn classification(
    sop: &Sop,
    obj: &Map<String, Json>,
    key: &str,
) -> Result<BTreeMap<String, Value>, FormatError> {
    classification_of(sop, object(obj, key, key)?, key)
}

/// Every classification field of the scenario from the object `given` (found under `key`).
fn classification_of(
    sop: &Sop,
    given: &Map<String, Json>,
    key: &str,
) -> Result<BTreeMap<String, Value>, FormatError> {
    sop.scenario()
        .fields()
        .map(|field| {
            let json = (given.get(&field.name))
                .ok_or_else(|| missing(&format!("{key}.{}", field.name)))?;
            field_value(field, json).map(|v| (field.name.clone(), v))
        })
        .collect()
}

/// A field's value, canonical, or `ValueNotAnOption`.
fn field_value(field: &Key, json: &Json) -> Result<Value, FormatError> {
    let value = match json {
        Json::Bool(b) => Some(Value::Bool(*b)),
        Json::Number(n) => Some(
            n.as_i64()
                .map_or_else(|| Value::Str(n.to_string()), Value::Int),
        ),
        Json::String(s) => Some(Value::Str(s.clone())),
        _ => None,
    };
    value
        .and_then(|v| resolve(field, v))
        .ok_or_else(|| not_an_option(&field.name, json))
}

/// The canonical value of one of a field's options given as `value`; `None` when it is none.
fn resolve(field: &Key, value: Value) -> Option<Value> {
    field.point(&value).map(|p| field.value_at(p))
}

/// `now_path`: an array of stage ids the SOP has.
fn now_path(sop: &Sop, obj: &Map<String, Json>) -> Result<Vec<String>, FormatError> {
    let wrong = || FormatError::WrongType {
        key: "now_path".into(),
        expected: "an array of strings".into(),
    };
    let items = match obj.get("now_path") {
        None => return Err(missing("now_path")),
        Some(Json::Array(items)) => items,
        Some(_) => return Err(wrong()),
    };
    items
        .iter()
        .map(|item| {
            let stage = item.as_str().ok_or_else(wrong)?;
            match sop.scenario().stage_index(stage) {
                Some(_) => Ok(stage.to_string()),
                None => Err(FormatError::UnknownStage {
                    stage: stage.to_string(),
                }),
            }
        })
        .collect()
}

/// One chat-quality dimension: 3, 6 or 9, as a number or a numeric string.
fn dimension_score(dims: &Map<String, Json>, name: &str) -> Result<u8, FormatError> {
    // The key's dotted name only for an error (an answer's five scores are read every turn).
    let dotted = || format!("chat_quality_dimensions.{name}");
    let json = dims.get(name).ok_or_else(|| missing(&dotted()))?;
    let number = match json {
        Json::Number(n) => n.as_f64(),
        Json::String(s) => s.trim().parse::<f64>().ok(),
        _ => None,
    };
    number
        .and_then(score_of)
        .ok_or_else(|| not_an_option(&dotted(), json))
}

/// A score of 3, 6 or 9 as its byte; `None` for any other number.
fn score_of(x: f64) -> Option<u8> {
    [3.0, 6.0, 9.0].contains(&x).then_some(x as u8)
}

/// The object under `key`; `dotted` names it in errors.
fn object<'a>(
    obj: &'a Map<String, Json>,
    key: &str,
    dotted: &str,
) -> Result<&'a Map<String, Json>, FormatError> {
    match obj.get(key) {
        None => Err(missing(dotted)),
        Some(Json::Object(inner)) => Ok(inner),
        Some(_) => Err(wrong_type(dotted, "an object")),
    }
}

/// The string under `key`; `dotted` names it in errors.
fn string(obj: &Map<String, Json>, key: &str, dotted: &str) -> Result<String, FormatError> {
    match obj.get(key) {
        None => Err(missing(dotted)),
        Some(Json::String(s)) => Ok(s.clone()),
        Some(_) => Err(wrong_type(dotted, "a string")),
    }
}

fn missing(key: &str) -> FormatError {
    FormatError::MissingKey {
        key: key.to_string(),
    }
}

fn wrong_type(key: &str, expected: &str) -> FormatError {
    FormatError::WrongType {
        key: key.to_string(),
        expected: expected.to_string(),
    }
}

/// `ValueNotAnOption` for a JSON value: strings as their text, anything else as JSON.
fn not_an_option(field: &str, json: &Json) -> FormatError {
    FormatError::ValueNotAnOption {
        field: field.to_string(),
        value: match json {
            Json::String(s) => s.clone(),
            other => other.to_string(),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_judges_fast_path_agrees_with_the_general_one() {
        // Found by fuzzing (judge_answer): an answer that is exactly the object took the fast
        // path, which skipped the reasoning texts unchecked, so a lone surrogate escape or an
        // out-of-range number there was accepted, while the same object after other text was
        // invalid JSON.
        let text = crate::scenario::bundled::BUNDLED[5].1;
        let sop = crate::sop::from_yaml(text, "telecom_package.yaml").expect("sop");
        let classification = r#""classification": {"ApplicationTendency": "Agree", "ConsumptionProfile": "Voice", "ConsumptionType": "Enquiry", "EmotionTag": "Calm"}"#;
        let dims = r#""chat_quality_dimensions": {"linguistic_quality": 9, "anthropomorphism_emotion": 9, "content_utility": 6, "user_satisfaction": 9, "instruction_compliance": 3}"#;
        for reasoning in [
            r#""classification_reasoning": "From\ud800 the words""#,
            r#""chat_quality_reasoning": 1e400"#,
            r#""classification_reasoning": "fine", "extra": [1, {"a": "\udc00"}]"#,
            r#""classification_reasoning": "fine", "chat_quality_reasoning": null"#,
        ] {
            let answer = format!("{{{classification}, {dims}, {reasoning}}}");
            let fast = parse_judge_output(&sop, &answer);
            let general = parse_judge_output(&sop, &format!("Verdict: {answer}"));
            assert_eq!(fast, general, "{answer}");
        }
        let valid = format!(r#"{{{classification}, {dims}, "classification_reasoning": "ok"}}"#);
        assert!(parse_judge_output(&sop, &valid).is_ok());
    }

    /// JSON texts a judge might give for a classification field (after its valid option) or a
    /// score: spellings the general path accepts, and values it refuses.
    const FIELD_VALUES: [&str; 8] = [
        "\"Cal\\u006d\"",
        "\"Nope\"",
        "true",
        "1",
        "1.0",
        "null",
        "[\"Calm\"]",
        "18446744073709551615",
    ];
    const SCORES: [&str; 12] = [
        "3", "6", "9", "\" 6 \"", "\"9.0\"", "3.0", "6e0", "4", "\"x\"", "null", "true", "-3",
    ];

    /// The entries of one key: usually once with a valid value (`valid`, else a score from the
    /// first three), sometimes with another value, missing or twice.
    fn entries(key: &str, valid: Option<&str>, values: &[&str], pick: (u8, usize)) -> Vec<String> {
        let value = |i: usize| match (i, valid) {
            (0, Some(v)) => format!("\"{key}\": \"{v}\""),
            (0, None) => format!("\"{key}\": {}", values[pick.1 % 3]),
            (i, _) => format!("\"{key}\": {}", values[i % values.len()]),
        };
        match pick.0 % 16 {
            0 => Vec::new(),
            1 => vec![value(0), value(pick.1)],
            2 | 3 => vec![value(pick.1)],
            _ => vec![value(0)],
        }
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig { cases: 2000, ..Default::default() })]

        /// The fast path (an answer that is exactly an object) and the general path (the same
        /// object after prose) give the same verdict or the same error, whatever the keys and
        /// values.
        #[test]
        fn the_judges_fast_and_general_paths_agree(
            fields in proptest::collection::vec((0u8..16, 0usize..24), 4),
            scores in proptest::collection::vec((0u8..16, 0usize..24), 5),
            extra in 0u8..4,
            shuffle in proptest::collection::vec(0usize..16, 0..6),
        ) {
            let text = crate::scenario::bundled::BUNDLED[5].1;
            let sop = crate::sop::from_yaml(text, "telecom_package.yaml").expect("sop");
            let names = [
                ("ApplicationTendency", "Agree"),
                ("ConsumptionProfile", "Voice"),
                ("ConsumptionType", "Enquiry"),
                ("EmotionTag", "Calm"),
            ];
            let mut classification: Vec<String> = names.iter().zip(&fields)
                .flat_map(|((name, valid), pick)| entries(name, Some(valid), &FIELD_VALUES, *pick))
                .collect();
            let mut dims: Vec<String> = DIMENSIONS.iter().zip(&scores)
                .flat_map(|(name, pick)| entries(name, None, &SCORES, *pick)).collect();
            for (i, j) in shuffle.iter().enumerate() {
                for list in [&mut classification, &mut dims] {
                    if !list.is_empty() {
                        let n = list.len();
                        list.swap(i % n, j % n);
                    }
                }
            }
            if extra & 1 == 1 {
                classification.push("\"Other\": {\"a\": [1, null]}".into());
                dims.push("\"overall\": 7".into());
            }
            let mut answer = vec![
                format!("\"classification\": {{{}}}", classification.join(", ")),
                format!("\"chat_quality_dimensions\": {{{}}}", dims.join(", ")),
            ];
            if extra & 2 == 2 {
                answer.push("\"classification_reasoning\": \"because\"".into());
                answer.swap(0, 1);
            }
            let answer = format!("{{{}}}", answer.join(", "));
            let fast = parse_judge_output(&sop, &answer);
            let general = parse_judge_output(&sop, &format!("Verdict: {answer}"));
            proptest::prop_assert_eq!(fast, general, "{}", answer);
        }
    }

    #[test]
    fn a_judges_raw_line_break_in_a_string_is_read_as_its_escape() {
        // Seen with llama.cpp's schema-constrained decoding (SmolLM2 as the judge,
        // tests/local_model.rs): a line break written raw inside a reasoning text, which strict
        // JSON refuses ("control character found while parsing a string").
        let text = crate::scenario::bundled::BUNDLED[5].1;
        let sop = crate::sop::from_yaml(text, "telecom_package.yaml").expect("sop");
        let head = "{\n  \"classification\": {\"ApplicationTendency\": \"Agree\", \"ConsumptionProfile\": \"Data\", \"ConsumptionType\": \"Enquiry\", \"EmotionTag\": \"Calm\"},\n  \"chat_quality_dimensions\": {\"linguistic_quality\": 3, \"anthropomorphism_emotion\": 6, \"content_utility\": 9, \"user_satisfaction\": 9, \"instruction_compliance\": 3},\n";
        let raw = format!(
            "{head}  \"classification_reasoning\": \"one\ntwo\tthree\u{1}\\\"\", \"chat_quality_reasoning\": \"\"}}"
        );
        let escaped = format!(
            "{head}  \"classification_reasoning\": \"one\\ntwo\\tthree\\u0001\\\"\", \"chat_quality_reasoning\": \"\"}}"
        );
        assert_eq!(escape_raw_controls(&raw), escaped);
        let judgment = parse_judge_output(&sop, &raw).expect("parsed");
        assert_eq!(Ok(judgment.clone()), parse_judge_output(&sop, &escaped));
        assert_eq!(
            judgment.classification["ConsumptionType"],
            Value::Str("Enquiry".into())
        );
        assert_eq!(judgment.chat.content_utility, 9);
        // The same text after prose takes the general path: read the same way.
        assert_eq!(
            Ok(judgment.clone()),
            parse_judge_output(&sop, &format!("Verdict: {raw}"))
        );
        // Prose with an odd number of quotes before a pretty-printed, valid verdict: read
        // strictly first, so the escaping's guess of where strings are cannot break it.
        assert_eq!(
            Ok(judgment),
            parse_judge_output(&sop, &format!("I'd rate the \"agent: {escaped}"))
        );
        // Line breaks between keys are whitespace and stay; nothing to escape is borrowed.
        assert!(matches!(
            escape_raw_controls(&escaped),
            std::borrow::Cow::Borrowed(_)
        ));
        // The agent's answer stays strict JSON: a raw control character is a format error.
        let agent = "{\"classification_output\": {}, \"cot\": \"a\nb\"}";
        assert!(matches!(
            parse_agent_output(&sop, agent, false),
            Err(FormatError::InvalidJson { .. })
        ));
    }
}
