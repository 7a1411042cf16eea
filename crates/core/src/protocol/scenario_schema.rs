//! The JSON Schema of the scenario file format (docs/scenario-format.md): what an editor can check
//! a scenario against (`sage scenario schema`), and what a drafting model's structured output is
//! held to (`sage scenario draft`), whole ([`scenario_schema`]) or one step at a time
//! ([`part_schema`]: the keys, the stages, the routes).
//!
//! The schema checks the shape (names, types, which properties a part may have); the validator
//! checks the rest (references, coverage, reachability), as for a hand-written file. Maps keyed
//! by name (fields, actions, stages, cases) are objects whose `additionalProperties` is the
//! entry's schema, which llama.cpp and vLLM compile into a grammar (OpenAI's strict mode does
//! not take them; `structured_output: auto` then falls back to a weaker form).

use super::schema::{JsonSchema, Ordered, s, string_enum, string_schema};

/// The name of the whole scenario's schema.
pub const SCENARIO_SCHEMA_NAME: &str = "sage_scenario";

/// The top-level properties of a scenario, in file order.
pub const TOP_LEVEL: [&str; 10] = [
    "id",
    "name",
    "domain",
    "description",
    "fields",
    "variables",
    "actions",
    "outputs",
    "sop",
    "user",
];

/// An object with `properties` (in order), the `required` ones, and no other property.
fn object(properties: Vec<(&str, Ordered)>, required: &[&str]) -> Ordered {
    Ordered::Obj(vec![
        ("type".into(), s("object")),
        (
            "properties".into(),
            Ordered::Obj(
                properties
                    .into_iter()
                    .map(|(k, v)| (k.to_string(), v))
                    .collect(),
            ),
        ),
        (
            "required".into(),
            Ordered::Arr(required.iter().map(|r| s(r)).collect()),
        ),
        ("additionalProperties".into(), Ordered::Bool(false)),
    ])
}

/// An object of entries keyed by name, each of schema `entry`.
fn map_of(entry: Ordered) -> Ordered {
    Ordered::Obj(vec![
        ("type".into(), s("object")),
        ("additionalProperties".into(), entry),
    ])
}

fn array_of(item: Ordered) -> Ordered {
    Ordered::Obj(vec![("type".into(), s("array")), ("items".into(), item)])
}

fn any_of(options: Vec<Ordered>) -> Ordered {
    Ordered::Obj(vec![("anyOf".into(), Ordered::Arr(options))])
}

fn typed(kind: &str) -> Ordered {
    Ordered::Obj(vec![("type".into(), s(kind))])
}

/// A scalar as the format writes values: text, a whole number or a boolean.
fn scalar() -> Ordered {
    Ordered::Obj(vec![(
        "type".into(),
        Ordered::Arr(vec![s("string"), s("integer"), s("boolean")]),
    )])
}

/// `source`: the policy sentences a part comes from.
fn source() -> Ordered {
    array_of(string_schema())
}

/// A field or variable: `options`, or `type: boolean`, or `type: integer` with bounds.
fn key() -> Ordered {
    object(
        vec![
            ("description", string_schema()),
            ("type", string_enum(["enum", "boolean", "integer"])),
            ("options", array_of(scalar())),
            ("min", typed("integer")),
            ("max", typed("integer")),
            ("examples", array_of(typed("integer"))),
        ],
        &["description"],
    )
}

/// An action: its description, or `{description, outputs, source}`.
fn action() -> Ordered {
    any_of(vec![
        string_schema(),
        object(
            vec![
                ("description", string_schema()),
                ("outputs", array_of(string_schema())),
                ("source", source()),
            ],
            &["description"],
        ),
    ])
}

/// Where a branch goes: a stage id, or `{stage | action, set, source}`.
fn target() -> Ordered {
    any_of(vec![
        string_schema(),
        object(
            vec![
                ("stage", string_schema()),
                ("action", string_schema()),
                ("set", map_of(scalar())),
                ("source", source()),
            ],
            &[],
        ),
    ])
}

/// A condition's values: one value or a list.
fn cond_value() -> Ordered {
    any_of(vec![scalar(), array_of(scalar())])
}

/// A stage as the stages step writes it: no way on yet.
fn stage_outline() -> Ordered {
    object(
        vec![
            ("title", string_schema()),
            ("description", string_schema()),
            ("branch_on", string_schema()),
            ("source", source()),
        ],
        &["title", "source"],
    )
}

/// A whole stage: `next`, or `branch_on` with `cases`, or `rules`.
fn stage() -> Ordered {
    let rule = object(
        vec![
            ("when", map_of(cond_value())),
            ("then", target()),
            ("otherwise", target()),
        ],
        &[],
    );
    object(
        vec![
            ("title", string_schema()),
            ("description", string_schema()),
            ("source", source()),
            ("next", target()),
            ("branch_on", string_schema()),
            ("cases", map_of(target())),
            ("rules", array_of(rule)),
        ],
        &["title"],
    )
}

fn sop(stage: Ordered) -> Ordered {
    object(
        vec![("start", string_schema()), ("stages", map_of(stage))],
        &["start", "stages"],
    )
}

fn user() -> Ordered {
    let intent = object(
        vec![
            ("id", string_schema()),
            ("description", string_schema()),
            ("adversarial", string_enum(["zero", "weak", "strong"])),
            ("implies", map_of(cond_value())),
            ("facts", array_of(string_schema())),
            ("context", map_of(scalar())),
        ],
        &["id", "description", "adversarial", "implies"],
    );
    let persona = object(
        vec![
            ("id", string_schema()),
            ("traits", array_of(string_schema())),
            ("communication_style", string_schema()),
            ("cooperativeness", string_enum(["high", "medium", "low"])),
        ],
        &["id", "communication_style", "cooperativeness"],
    );
    object(
        vec![
            ("intents", array_of(intent)),
            ("personas", array_of(persona)),
        ],
        &["intents", "personas"],
    )
}

/// The schema of each top-level property (`sop` whole).
fn top_level(name: &str) -> Ordered {
    match name {
        "fields" | "variables" => map_of(key()),
        "actions" => map_of(action()),
        "outputs" => map_of(object(
            vec![
                ("description", string_schema()),
                ("options", array_of(scalar())),
                ("default", scalar()),
            ],
            &["description", "options"],
        )),
        "sop" => sop(stage()),
        "user" => user(),
        _ => string_schema(),
    }
}

/// The JSON Schema of a whole scenario file.
pub fn scenario_schema() -> JsonSchema {
    JsonSchema {
        name: SCENARIO_SCHEMA_NAME,
        schema: object(
            TOP_LEVEL.iter().map(|k| (*k, top_level(k))).collect(),
            &[
                "id",
                "name",
                "domain",
                "description",
                "fields",
                "actions",
                "sop",
            ],
        ),
    }
}

/// The schema of one drafting step's answer: `properties` of the scenario, all required, with
/// `sop` as an outline of its stages (no way on) when `outline`.
pub fn part_schema(name: &'static str, properties: &[&str], outline: bool) -> JsonSchema {
    let part = |k: &str| match k {
        "sop" if outline => sop(stage_outline()),
        _ => top_level(k),
    };
    JsonSchema {
        name,
        schema: object(
            properties.iter().map(|k| (*k, part(k))).collect(),
            properties,
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn validator(schema: &JsonSchema) -> jsonschema::Validator {
        jsonschema::validator_for(&schema.schema.to_json()).expect("a valid JSON Schema")
    }

    fn json_of_yaml(text: &str) -> serde_json::Value {
        serde_saphyr::from_str(text).expect("yaml")
    }

    #[test]
    fn every_bundled_scenario_matches_the_schema() {
        let v = validator(&scenario_schema());
        for (name, text) in crate::scenario::bundled::BUNDLED {
            let doc = json_of_yaml(text);
            let errors: Vec<String> = v.iter_errors(&doc).map(|e| e.to_string()).collect();
            assert!(errors.is_empty(), "{name}: {errors:?}");
        }
    }

    #[test]
    fn the_schema_refuses_what_the_format_refuses() {
        let v = validator(&scenario_schema());
        let good = json_of_yaml(crate::scenario::bundled::BUNDLED[5].1);
        let mut unknown = good.clone();
        unknown["sop"]["stages"]["step1"]["color"] = "red".into();
        assert!(!v.is_valid(&unknown), "an unknown stage property");
        let mut missing = good.clone();
        missing.as_object_mut().expect("object").remove("sop");
        assert!(!v.is_valid(&missing), "no sop");
        let mut level = good;
        level["user"]["intents"][0]["adversarial"] = "extreme".into();
        assert!(!v.is_valid(&level), "an unknown adversarial level");
    }

    #[test]
    fn a_stage_outline_has_no_way_on() {
        let v = validator(&part_schema("t", &["sop"], true));
        let outline = json_of_yaml(
            "sop: {start: a, stages: {a: {title: A, branch_on: X, source: [\"One two three.\"]}}}",
        );
        assert!(v.is_valid(&outline));
        let with_cases =
            json_of_yaml("sop: {start: a, stages: {a: {title: A, source: [], cases: {X: b}}}}");
        assert!(!v.is_valid(&with_cases));
    }
}
