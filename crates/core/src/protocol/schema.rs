//! JSON Schemas of the answers SAGE-RS parses, derived from a scenario, for structured output
//! (docs/models.md, "Structured output"): the service agent's answer
//! ([`agent_answer_schema`], what [`crate::prompts::agent_system_prompt`] asks for and
//! [`crate::protocol::parse_agent_output`] checks) and a judge's verdict
//! ([`judge_answer_schema`], what [`crate::prompts::judge_system_prompt`] asks for and
//! [`crate::protocol::parse::parse_judge_output`] checks). The customer answers in plain text and
//! has no schema.
//!
//! Every object lists all its properties as required and sets `additionalProperties: false`
//! (what OpenAI's strict mode demands; llama.cpp and vLLM accept it too). Properties keep the
//! order the prompt asks for them in ([`Ordered`]): a constrained decoder writes them in that
//! order, reasoning before the chat reply as the prompt has it.
//!
//! Pure: no I/O. The schemas are checked with a maintained JSON Schema validator (the jsonschema
//! crate) in the tests.

use crate::scenario::{Key, KeyKind};
use crate::sop::Sop;
use serde::ser::{SerializeMap, SerializeSeq, Serializer};
use serde::{Deserialize, Serialize};
use serde_json::Value as Json;

/// A JSON value whose object keys keep their insertion order (`serde_json::Map` sorts them).
#[derive(Debug, Clone, PartialEq)]
pub enum Ordered {
    /// `null`.
    Null,
    /// `true` or `false`.
    Bool(bool),
    /// An integer.
    Int(i64),
    /// A string.
    Str(String),
    /// An array.
    Arr(Vec<Ordered>),
    /// An object, its keys in order.
    Obj(Vec<(String, Ordered)>),
}

impl Ordered {
    /// The value under `key` of an object.
    pub fn get(&self, key: &str) -> Option<&Ordered> {
        match self {
            Ordered::Obj(pairs) => pairs.iter().find(|(k, _)| k == key).map(|(_, v)| v),
            _ => None,
        }
    }

    /// As a `serde_json` value (object keys sorted).
    pub fn to_json(&self) -> Json {
        match self {
            Ordered::Null => Json::Null,
            Ordered::Bool(b) => Json::Bool(*b),
            Ordered::Int(i) => Json::from(*i),
            Ordered::Str(s) => Json::String(s.clone()),
            Ordered::Arr(items) => Json::Array(items.iter().map(Ordered::to_json).collect()),
            Ordered::Obj(pairs) => Json::Object(
                pairs
                    .iter()
                    .map(|(k, v)| (k.clone(), v.to_json()))
                    .collect(),
            ),
        }
    }
}

impl Serialize for Ordered {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Ordered::Null => s.serialize_unit(),
            Ordered::Bool(b) => s.serialize_bool(*b),
            Ordered::Int(i) => s.serialize_i64(*i),
            Ordered::Str(text) => s.serialize_str(text),
            Ordered::Arr(items) => {
                let mut seq = s.serialize_seq(Some(items.len()))?;
                for item in items {
                    seq.serialize_element(item)?;
                }
                seq.end()
            }
            Ordered::Obj(pairs) => {
                let mut map = s.serialize_map(Some(pairs.len()))?;
                for (k, v) in pairs {
                    map.serialize_entry(k, v)?;
                }
                map.end()
            }
        }
    }
}

/// Reads any JSON or YAML value, keeping the order of object keys (a number that is no whole
/// number is kept as its text).
impl<'de> Deserialize<'de> for Ordered {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use serde::de::{MapAccess, SeqAccess, Visitor};
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Ordered;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a JSON or YAML value")
            }
            fn visit_unit<E>(self) -> Result<Ordered, E> {
                Ok(Ordered::Null)
            }
            fn visit_none<E>(self) -> Result<Ordered, E> {
                Ok(Ordered::Null)
            }
            fn visit_bool<E>(self, v: bool) -> Result<Ordered, E> {
                Ok(Ordered::Bool(v))
            }
            fn visit_i64<E>(self, v: i64) -> Result<Ordered, E> {
                Ok(Ordered::Int(v))
            }
            fn visit_u64<E>(self, v: u64) -> Result<Ordered, E> {
                Ok(i64::try_from(v).map_or_else(|_| Ordered::Str(v.to_string()), Ordered::Int))
            }
            fn visit_f64<E>(self, v: f64) -> Result<Ordered, E> {
                Ok(Ordered::Str(v.to_string()))
            }
            fn visit_str<E>(self, v: &str) -> Result<Ordered, E> {
                Ok(Ordered::Str(v.to_string()))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Ordered, A::Error> {
                let mut items = Vec::new();
                while let Some(item) = seq.next_element()? {
                    items.push(item);
                }
                Ok(Ordered::Arr(items))
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Ordered, A::Error> {
                let mut pairs = Vec::new();
                while let Some((k, v)) = map.next_entry::<Ordered, Ordered>()? {
                    let key = match k {
                        Ordered::Str(s) => s,
                        Ordered::Int(i) => i.to_string(),
                        Ordered::Bool(b) => b.to_string(),
                        _ => return Err(serde::de::Error::custom("a map key that is no scalar")),
                    };
                    pairs.push((key, v));
                }
                Ok(Ordered::Obj(pairs))
            }
        }
        d.deserialize_any(V)
    }
}

/// A named JSON Schema (the name is what OpenAI's `json_schema.name` carries).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct JsonSchema {
    /// `[A-Za-z0-9_-]`, at most 64 characters.
    pub name: &'static str,
    /// The schema.
    pub schema: Ordered,
}

/// The name of the agent's answer schema.
pub const AGENT_SCHEMA_NAME: &str = "sage_agent_answer";
/// The name of the judges' verdict schema.
pub const JUDGE_SCHEMA_NAME: &str = "sage_judge_verdict";

/// The most characters a free-text string of an answer (the agent's `cot` and `chat`, the
/// judges' reasonings) may hold under a grammar-constrained decoder ([`bounded_strings`]): the
/// paper asks for brief reasoning and a chat of at most 40 words, and a bound keeps a small model
/// from writing on until `max_tokens` cuts the JSON off (seen with SmolLM2 on llama.cpp).
pub const FREE_TEXT_MAX_CHARS: i64 = 300;

/// `schema` with `maxLength: max_chars` on every string property that has no `enum`: for the
/// servers whose schema-constrained JSON (`json_object` + `schema`: llama.cpp, vLLM) compiles the
/// schema into a grammar and honours `maxLength`. OpenAI's strict `json_schema` is sent without
/// it. The answer's length is then bounded by the schema, so a `max_tokens` can be chosen that
/// never cuts it off.
pub fn bounded_strings(schema: &Ordered, max_chars: i64) -> Ordered {
    match schema {
        Ordered::Obj(entries) => {
            let free_text = entries
                .iter()
                .any(|(k, v)| k == "type" && matches!(v, Ordered::Str(t) if t == "string"))
                && !entries.iter().any(|(k, _)| k == "enum");
            let mut out: Vec<(String, Ordered)> = entries
                .iter()
                .map(|(k, v)| (k.clone(), bounded_strings(v, max_chars)))
                .collect();
            if free_text {
                out.push(("maxLength".into(), Ordered::Int(max_chars)));
            }
            Ordered::Obj(out)
        }
        Ordered::Arr(items) => Ordered::Arr(
            items
                .iter()
                .map(|v| bounded_strings(v, max_chars))
                .collect(),
        ),
        other => other.clone(),
    }
}

pub(crate) fn s(text: &str) -> Ordered {
    Ordered::Str(text.to_string())
}

pub(crate) fn string_schema() -> Ordered {
    Ordered::Obj(vec![("type".into(), s("string"))])
}

fn enum_schema(kind: &str, values: Vec<Ordered>) -> Ordered {
    Ordered::Obj(vec![
        ("type".into(), s(kind)),
        ("enum".into(), Ordered::Arr(values)),
    ])
}

pub(crate) fn string_enum<'a>(values: impl IntoIterator<Item = &'a str>) -> Ordered {
    enum_schema("string", values.into_iter().map(s).collect())
}

/// An object schema with every property required and no other property allowed.
fn object(properties: Vec<(String, Ordered)>) -> Ordered {
    let required = properties.iter().map(|(k, _)| s(k)).collect();
    Ordered::Obj(vec![
        ("type".into(), s("object")),
        ("properties".into(), Ordered::Obj(properties)),
        ("required".into(), Ordered::Arr(required)),
        ("additionalProperties".into(), Ordered::Bool(false)),
    ])
}

/// A classification field's values: its options as strings, `true`/`false` as booleans, an
/// integer with its bounds.
fn key_schema(key: &Key) -> Ordered {
    match &key.kind {
        KeyKind::Enum(options) => string_enum(options.iter().map(String::as_str)),
        KeyKind::Boolean => Ordered::Obj(vec![("type".into(), s("boolean"))]),
        KeyKind::Integer { min, max, .. } => {
            let mut pairs = vec![("type".into(), s("integer"))];
            pairs.extend(min.map(|m| ("minimum".to_string(), Ordered::Int(m))));
            pairs.extend(max.map(|m| ("maximum".to_string(), Ordered::Int(m))));
            Ordered::Obj(pairs)
        }
    }
}

/// Every classification field of the scenario, in file order.
fn classification_schema(sop: &Sop) -> Ordered {
    object(
        sop.scenario()
            .fields()
            .map(|k| (k.name.clone(), key_schema(k)))
            .collect(),
    )
}

/// The service agent's answer for a scenario: `classification_output` (every field with its
/// values), `cot`, `now_path` (an array of the scenario's stage ids), `finals` (`Action`, one of
/// the scenario's actions, and every declared output with its options and default) and `chat`,
/// in the order of the prompt's template.
pub fn agent_answer_schema(sop: &Sop) -> JsonSchema {
    let sc = sop.scenario();
    let mut finals = vec![(
        "Action".to_string(),
        string_enum(sc.actions.iter().map(|a| a.name.as_str())),
    )];
    for output in &sc.outputs {
        let values = output.options.iter().chain(&output.default);
        finals.push((output.name.clone(), string_enum(values.map(String::as_str))));
    }
    let stages = string_enum(sc.stages.iter().map(|st| st.id.as_str()));
    JsonSchema {
        name: AGENT_SCHEMA_NAME,
        schema: object(vec![
            ("classification_output".into(), classification_schema(sop)),
            ("cot".into(), string_schema()),
            (
                "now_path".into(),
                Ordered::Obj(vec![("type".into(), s("array")), ("items".into(), stages)]),
            ),
            ("finals".into(), object(finals)),
            ("chat".into(), string_schema()),
        ]),
    }
}

/// A judge's verdict for a scenario: `classification` (every field with its values),
/// `chat_quality_dimensions` (the five dimensions, each the integer 3, 6 or 9), then the two
/// reasoning texts, in the order of the prompt's template.
pub fn judge_answer_schema(sop: &Sop) -> JsonSchema {
    let dimensions = super::rubric::DIMENSIONS
        .iter()
        .map(|d| {
            let scores = [3, 6, 9].into_iter().map(Ordered::Int).collect();
            (d.key.to_string(), enum_schema("integer", scores))
        })
        .collect();
    JsonSchema {
        name: JUDGE_SCHEMA_NAME,
        schema: object(vec![
            ("classification".into(), classification_schema(sop)),
            ("chat_quality_dimensions".into(), object(dimensions)),
            ("classification_reasoning".into(), string_schema()),
            ("chat_quality_reasoning".into(), string_schema()),
        ]),
    }
}

/// How a model is asked for an answer of a given JSON Schema (`structured_output:` of a model).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StructuredOutput {
    /// The strongest form the server is known to take: `json_schema` for OpenAI itself (provider
    /// `openai` with an `api.openai.com` base URL), `json_object_schema` for other
    /// OpenAI-compatible servers; after an HTTP 400 or 422 the next weaker form, remembered for
    /// the model.
    Auto,
    /// OpenAI structured outputs: `{"type": "json_schema", "json_schema": {"name", "strict":
    /// true, "schema"}}`.
    JsonSchema,
    /// llama.cpp / vLLM: `{"type": "json_object", "schema": {...}}`.
    JsonObjectSchema,
    /// JSON mode without a schema: `{"type": "json_object"}`.
    JsonObject,
    /// No `response_format`.
    None,
}

impl StructuredOutput {
    /// Every form, strongest first (`auto` last).
    pub const ALL: [StructuredOutput; 5] = [
        StructuredOutput::JsonSchema,
        StructuredOutput::JsonObjectSchema,
        StructuredOutput::JsonObject,
        StructuredOutput::None,
        StructuredOutput::Auto,
    ];

    /// Its configuration name (`json_object_schema`).
    pub fn as_str(self) -> &'static str {
        match self {
            StructuredOutput::Auto => "auto",
            StructuredOutput::JsonSchema => "json_schema",
            StructuredOutput::JsonObjectSchema => "json_object_schema",
            StructuredOutput::JsonObject => "json_object",
            StructuredOutput::None => "none",
        }
    }

    /// True for the forms that send a schema (`auto` included).
    pub fn sends_schema(self) -> bool {
        matches!(
            self,
            StructuredOutput::Auto
                | StructuredOutput::JsonSchema
                | StructuredOutput::JsonObjectSchema
        )
    }

    /// The next weaker form, to fall back to when a server rejects this one (`None` for
    /// `none`; `auto` is resolved before it is sent and has none).
    pub fn weaker(self) -> Option<StructuredOutput> {
        match self {
            StructuredOutput::JsonSchema => Some(StructuredOutput::JsonObjectSchema),
            StructuredOutput::JsonObjectSchema => Some(StructuredOutput::JsonObject),
            StructuredOutput::JsonObject => Some(StructuredOutput::None),
            StructuredOutput::None | StructuredOutput::Auto => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn telecom() -> Sop {
        let text = crate::scenario::bundled::BUNDLED[5].1;
        crate::sop::from_yaml(text, "telecom_package.yaml").expect("sop")
    }

    #[test]
    fn the_telecom_agent_schema_exactly() {
        let schema = agent_answer_schema(&telecom());
        assert_eq!(schema.name, "sage_agent_answer");
        let text = serde_json::to_string(&schema.schema).expect("json");
        let fields = r#"{"type":"object","properties":{"ConsumptionType":{"type":"string","enum":["Enquiry","Change","Cancel"]},"ApplicationTendency":{"type":"string","enum":["Agree","Reject","Hesitate"]},"ConsumptionProfile":{"type":"string","enum":["Data","Voice"]},"EmotionTag":{"type":"string","enum":["Calm","Discontent"]}},"required":["ConsumptionType","ApplicationTendency","ConsumptionProfile","EmotionTag"],"additionalProperties":false}"#;
        let expected = format!(
            r#"{{"type":"object","properties":{{"classification_output":{fields},"cot":{{"type":"string"}},"now_path":{{"type":"array","items":{{"type":"string","enum":["step1","step2","step3","step4","step5","step6","step7"]}}}},"finals":{{"type":"object","properties":{{"Action":{{"type":"string","enum":["ChangeOrder","GoodBye","TransHuman"]}}}},"required":["Action"],"additionalProperties":false}},"chat":{{"type":"string"}}}},"required":["classification_output","cot","now_path","finals","chat"],"additionalProperties":false}}"#
        );
        assert_eq!(text, expected);
    }

    #[test]
    fn the_telecom_judge_schema_exactly() {
        let schema = judge_answer_schema(&telecom());
        assert_eq!(schema.name, "sage_judge_verdict");
        let text = serde_json::to_string(&schema.schema).expect("json");
        let fields = r#"{"type":"object","properties":{"ConsumptionType":{"type":"string","enum":["Enquiry","Change","Cancel"]},"ApplicationTendency":{"type":"string","enum":["Agree","Reject","Hesitate"]},"ConsumptionProfile":{"type":"string","enum":["Data","Voice"]},"EmotionTag":{"type":"string","enum":["Calm","Discontent"]}},"required":["ConsumptionType","ApplicationTendency","ConsumptionProfile","EmotionTag"],"additionalProperties":false}"#;
        let dim = r#"{"type":"integer","enum":[3,6,9]}"#;
        let expected = format!(
            r#"{{"type":"object","properties":{{"classification":{fields},"chat_quality_dimensions":{{"type":"object","properties":{{"linguistic_quality":{dim},"anthropomorphism_emotion":{dim},"content_utility":{dim},"user_satisfaction":{dim},"instruction_compliance":{dim}}},"required":["linguistic_quality","anthropomorphism_emotion","content_utility","user_satisfaction","instruction_compliance"],"additionalProperties":false}},"classification_reasoning":{{"type":"string"}},"chat_quality_reasoning":{{"type":"string"}}}},"required":["classification","chat_quality_dimensions","classification_reasoning","chat_quality_reasoning"],"additionalProperties":false}}"#
        );
        assert_eq!(text, expected);
    }

    #[test]
    fn free_text_strings_get_a_max_length_and_enums_do_not() {
        let sop = telecom();
        let bounded = bounded_strings(&agent_answer_schema(&sop).schema, 300).to_json();
        let props = &bounded["properties"];
        assert_eq!(props["cot"], json!({"type": "string", "maxLength": 300}));
        assert_eq!(props["chat"], json!({"type": "string", "maxLength": 300}));
        assert!(props["now_path"]["items"].get("maxLength").is_none());
        assert!(
            props["finals"]["properties"]["Action"]
                .get("maxLength")
                .is_none()
        );
        let judge = bounded_strings(&judge_answer_schema(&sop).schema, 300).to_json();
        assert_eq!(
            judge["properties"]["classification_reasoning"]["maxLength"],
            300
        );
        assert!(
            judge["properties"]["classification"]["properties"]["EmotionTag"]
                .get("maxLength")
                .is_none()
        );
        // Everything else is the schema as it was.
        let mut stripped = bounded.clone();
        for key in ["cot", "chat"] {
            stripped["properties"][key]
                .as_object_mut()
                .unwrap()
                .remove("maxLength");
        }
        assert_eq!(stripped, agent_answer_schema(&sop).schema.to_json());
    }

    #[test]
    fn outputs_carry_their_options_and_default() {
        let text = crate::scenario::bundled::BUNDLED
            .iter()
            .find(|(name, _)| name.starts_with("online_education"))
            .expect("bundled")
            .1;
        let sop = crate::sop::from_yaml(text, "online_education.yaml").expect("sop");
        let schema = agent_answer_schema(&sop).schema;
        let plan = schema
            .get("properties")
            .and_then(|p| p.get("finals"))
            .and_then(|f| f.get("properties"))
            .and_then(|p| p.get("PLAN"))
            .expect("PLAN");
        assert_eq!(
            plan.to_json(),
            json!({"type": "string", "enum": ["PLAN_A", "PLAN_B", "PLAN_C", "PLAN_D", "PLAN_E", "PLAN_F", "none"]})
        );
    }

    /// `value` against `schema` with a maintained validator (the jsonschema crate): the errors.
    fn validate(schema: &Ordered, value: &Json) -> Result<(), Vec<String>> {
        let validator = jsonschema::validator_for(&schema.to_json()).expect("a valid schema");
        let errors: Vec<String> = validator
            .iter_errors(value)
            .map(|e| format!("{}: {e}", e.instance_path()))
            .collect();
        if errors.is_empty() {
            Ok(())
        } else {
            Err(errors)
        }
    }

    #[test]
    fn answers_are_checked_against_the_schema_by_a_maintained_validator() {
        let sop = telecom();
        let schema = judge_answer_schema(&sop).schema;
        let classification = json!({"ConsumptionType": "Change", "ApplicationTendency": "Agree", "ConsumptionProfile": "Data", "EmotionTag": "Calm"});
        let dims = json!({"linguistic_quality": 9, "anthropomorphism_emotion": 6, "content_utility": 3, "user_satisfaction": 9, "instruction_compliance": 9});
        let good = json!({"classification": classification, "chat_quality_dimensions": dims, "classification_reasoning": "r", "chat_quality_reasoning": "r"});
        assert_eq!(validate(&schema, &good), Ok(()));
        // The answer also parses as a judgment.
        assert!(crate::protocol::parse::parse_judge_output(&sop, &good.to_string()).is_ok());
        let mut bad = good.clone();
        bad["chat_quality_dimensions"]["content_utility"] = json!(5);
        let wrong = validate(&schema, &bad).expect_err("5 is no score");
        assert!(
            wrong[0].starts_with("/chat_quality_dimensions/content_utility:"),
            "{wrong:?}"
        );
        let mut extra = good.clone();
        extra["note"] = json!("x");
        let wrong = validate(&schema, &extra).expect_err("no other property");
        assert!(wrong[0].contains("note"), "{wrong:?}");
        let mut missing = good.clone();
        missing["classification"]
            .as_object_mut()
            .expect("object")
            .remove("EmotionTag");
        let wrong = validate(&schema, &missing).expect_err("every field");
        assert!(wrong[0].contains("EmotionTag"), "{wrong:?}");
        // The form llama.cpp is sent bounds free text, and the bound holds.
        let bounded = bounded_strings(&schema, 300);
        let mut long = good;
        long["chat_quality_reasoning"] = json!("x".repeat(301));
        assert!(validate(&schema, &long).is_ok());
        let wrong = validate(&bounded, &long).expect_err("longer than maxLength");
        assert!(
            wrong[0].starts_with("/chat_quality_reasoning:"),
            "{wrong:?}"
        );
    }
}
