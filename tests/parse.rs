//! Parsing the agent's answer, a judge's verdict and the user simulator's reply: a table of
//! concrete answers with their exact outcome, and property tests that no input panics.

mod common;

use common::load;
use proptest::prelude::*;
use sage::prompts::{UserOutputError, parse_user_output};
use sage::protocol::parse::{extract_chat, parse_judge_output};
use sage::protocol::{AgentTurn, ChatScores, FormatError, Judgment, parse_agent_output};
use sage::scenario::Value;
use sage::sop::Sop;
use serde_json::{Value as Json, json};
use std::collections::BTreeMap;

/// A valid Telecom answer: Change + Contracted + Penalty > 0 + Discontent → TransHuman.
fn telecom_answer() -> Json {
    json!({
        "classification_output": {
            "ConsumptionType": "Change",
            "ApplicationTendency": "Agree",
            "ConsumptionProfile": "Data",
            "EmotionTag": "Discontent"
        },
        "cot": "Change, contracted, penalty 200, user is upset: step7 gives TransHuman.",
        "now_path": ["step1", "step2", "step4", "step5", "step7"],
        "finals": {"Action": "TransHuman"},
        "chat": "I understand your frustration. Let me transfer you to a colleague right away."
    })
}

fn telecom_turn() -> AgentTurn {
    AgentTurn {
        classification: map(&[
            ("ConsumptionType", s("Change")),
            ("ApplicationTendency", s("Agree")),
            ("ConsumptionProfile", s("Data")),
            ("EmotionTag", s("Discontent")),
        ]),
        cot: "Change, contracted, penalty 200, user is upset: step7 gives TransHuman.".into(),
        path: strings(&["step1", "step2", "step4", "step5", "step7"]),
        action: "TransHuman".into(),
        outputs: BTreeMap::new(),
        chat: "I understand your frustration. Let me transfer you to a colleague right away."
            .into(),
    }
}

/// A valid Online Education answer ending in PLAN with PLAN_B; booleans written both ways.
fn oe_answer() -> Json {
    json!({
        "classification_output": {
            "DescriptionClear": true,
            "QuestionRelevance": "true",
            "EmotionTendency": "Calm",
            "ResolveDependency": "MediumDependency",
            "RepeatedRaised": false,
            "RegardingRefund": "false"
        },
        "cot": "clear, relevant, new, calm, medium dependency: PLAN_B",
        "now_path": ["step1", "step2", "step3", "step4", "step5", "step6", "step7"],
        "finals": {"Action": "PLAN", "PLAN": "PLAN_B"},
        "chat": "Let me walk you through default parameters with two short examples.",
        "confidence": 0.9
    })
}

fn oe_turn() -> AgentTurn {
    AgentTurn {
        classification: map(&[
            ("DescriptionClear", Value::Bool(true)),
            ("QuestionRelevance", Value::Bool(true)),
            ("EmotionTendency", s("Calm")),
            ("ResolveDependency", s("MediumDependency")),
            ("RepeatedRaised", Value::Bool(false)),
            ("RegardingRefund", Value::Bool(false)),
        ]),
        cot: "clear, relevant, new, calm, medium dependency: PLAN_B".into(),
        path: strings(&[
            "step1", "step2", "step3", "step4", "step5", "step6", "step7",
        ]),
        action: "PLAN".into(),
        outputs: [("PLAN".to_string(), "PLAN_B".to_string())].into(),
        chat: "Let me walk you through default parameters with two short examples.".into(),
    }
}

fn s(x: &str) -> Value {
    Value::Str(x.into())
}

fn strings(xs: &[&str]) -> Vec<String> {
    xs.iter().map(|x| x.to_string()).collect()
}

fn map(pairs: &[(&str, Value)]) -> BTreeMap<String, Value> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.clone()))
        .collect()
}

/// `answer` with the value at a JSON pointer replaced.
fn with(mut answer: Json, pointer: &str, value: Json) -> String {
    *answer.pointer_mut(pointer).expect("pointer exists") = value;
    answer.to_string()
}

/// `answer` without the key at a JSON pointer.
fn without(mut answer: Json, pointer: &str) -> String {
    let (parent, key) = pointer.rsplit_once('/').expect("a pointer");
    let parent = if parent.is_empty() {
        &mut answer
    } else {
        answer.pointer_mut(parent).expect("parent exists")
    };
    parent.as_object_mut().expect("an object").remove(key);
    answer.to_string()
}

fn missing(key: &str) -> FormatError {
    FormatError::MissingKey { key: key.into() }
}

fn not_an_option(field: &str, value: &str) -> FormatError {
    FormatError::ValueNotAnOption {
        field: field.into(),
        value: value.into(),
    }
}

/// The serde_json message for a text, as `InvalidJson` reports it.
fn invalid(text: &str) -> FormatError {
    let message = serde_json::from_str::<serde_json::Map<String, Json>>(text)
        .unwrap_err()
        .to_string();
    FormatError::InvalidJson { message }
}

/// (name, scenario, answer, cut off, expected outcome).
type AgentCase<'a> = (
    &'a str,
    &'a Sop,
    String,
    bool,
    Result<AgentTurn, FormatError>,
);

#[test]
fn agent_answers_table() {
    let telecom = load("telecom_package");
    let oe = load("online_education");
    let pretty = serde_json::to_string_pretty(&telecom_answer()).unwrap();
    let fenced = format!(
        "Sure! Here is my answer:\n```json\n{pretty}\n```\nLet me know if you need more {{help}}."
    );
    let cut = &pretty[..pretty.len() / 2];
    let trailing_comma = pretty.replacen("\"Agree\",", "\"Agree\",,", 1);
    let mut oe_guide = oe_turn();
    oe_guide.path = strings(&["step1", "step2"]);
    oe_guide.action = "GUIDE".into();
    oe_guide.outputs = [("PLAN".to_string(), "none".to_string())].into();
    let oe_guide_answer = {
        let mut a = oe_answer();
        a["now_path"] = json!(["step1", "step2"]);
        a["finals"] = json!({"Action": "GUIDE"});
        a.to_string()
    };
    let cases: Vec<AgentCase> = vec![
        (
            "plain JSON",
            &telecom,
            telecom_answer().to_string(),
            false,
            Ok(telecom_turn()),
        ),
        (
            "fenced, with prose around",
            &telecom,
            fenced,
            false,
            Ok(telecom_turn()),
        ),
        (
            "complete although cut-off flag",
            &telecom,
            pretty.clone(),
            true,
            Ok(telecom_turn()),
        ),
        (
            "OE with PLAN",
            &oe,
            oe_answer().to_string(),
            false,
            Ok(oe_turn()),
        ),
        (
            "OE action without PLAN: default",
            &oe,
            oe_guide_answer,
            false,
            Ok(oe_guide),
        ),
        (
            "no JSON",
            &telecom,
            "I'm sorry, I can only chat.".into(),
            false,
            Err(FormatError::NoJsonObject),
        ),
        (
            "empty",
            &telecom,
            String::new(),
            false,
            Err(FormatError::NoJsonObject),
        ),
        (
            "no JSON, cut off",
            &telecom,
            "Let me think".into(),
            true,
            Err(FormatError::Truncated),
        ),
        (
            "cut off answer",
            &telecom,
            cut.into(),
            true,
            Err(FormatError::Truncated),
        ),
        (
            "unclosed object",
            &telecom,
            cut.into(),
            false,
            Err(FormatError::Truncated),
        ),
        (
            "invalid JSON",
            &telecom,
            trailing_comma.clone(),
            false,
            Err(invalid(&trailing_comma)),
        ),
        (
            "invalid JSON, cut off",
            &telecom,
            trailing_comma,
            true,
            Err(FormatError::Truncated),
        ),
        (
            "missing finals.Action",
            &telecom,
            without(telecom_answer(), "/finals/Action"),
            false,
            Err(missing("finals.Action")),
        ),
        (
            "missing field",
            &telecom,
            without(telecom_answer(), "/classification_output/EmotionTag"),
            false,
            Err(missing("classification_output.EmotionTag")),
        ),
        (
            "missing classification_output",
            &telecom,
            without(telecom_answer(), "/classification_output"),
            false,
            Err(missing("classification_output")),
        ),
        (
            "missing cot",
            &telecom,
            without(telecom_answer(), "/cot"),
            false,
            Err(missing("cot")),
        ),
        (
            "missing chat",
            &telecom,
            without(telecom_answer(), "/chat"),
            false,
            Err(missing("chat")),
        ),
        (
            "now_path is a string",
            &telecom,
            with(telecom_answer(), "/now_path", json!("step1, step2")),
            false,
            Err(FormatError::WrongType {
                key: "now_path".into(),
                expected: "an array of strings".into(),
            }),
        ),
        (
            "now_path holds a number",
            &telecom,
            with(telecom_answer(), "/now_path", json!(["step1", 2])),
            false,
            Err(FormatError::WrongType {
                key: "now_path".into(),
                expected: "an array of strings".into(),
            }),
        ),
        (
            "finals is an array",
            &telecom,
            with(telecom_answer(), "/finals", json!(["TransHuman"])),
            false,
            Err(FormatError::WrongType {
                key: "finals".into(),
                expected: "an object".into(),
            }),
        ),
        (
            "Action is a number",
            &telecom,
            with(telecom_answer(), "/finals/Action", json!(3)),
            false,
            Err(FormatError::WrongType {
                key: "finals.Action".into(),
                expected: "a string".into(),
            }),
        ),
        (
            "chat is an object",
            &telecom,
            with(telecom_answer(), "/chat", json!({"text": "hi"})),
            false,
            Err(FormatError::WrongType {
                key: "chat".into(),
                expected: "a string".into(),
            }),
        ),
        (
            "unknown stage",
            &telecom,
            with(telecom_answer(), "/now_path/4", json!("stage9")),
            false,
            Err(FormatError::UnknownStage {
                stage: "stage9".into(),
            }),
        ),
        (
            "unknown action",
            &telecom,
            with(telecom_answer(), "/finals/Action", json!("Refund")),
            false,
            Err(FormatError::UnknownAction {
                action: "Refund".into(),
            }),
        ),
        (
            "field value outside the options",
            &telecom,
            with(
                telecom_answer(),
                "/classification_output/ConsumptionType",
                json!("Upgrade"),
            ),
            false,
            Err(not_an_option("ConsumptionType", "Upgrade")),
        ),
        (
            "enum field given null",
            &telecom,
            with(
                telecom_answer(),
                "/classification_output/EmotionTag",
                json!(null),
            ),
            false,
            Err(not_an_option("EmotionTag", "null")),
        ),
        (
            "boolean field given yes",
            &oe,
            with(
                oe_answer(),
                "/classification_output/DescriptionClear",
                json!("yes"),
            ),
            false,
            Err(not_an_option("DescriptionClear", "yes")),
        ),
        (
            "bad PLAN value",
            &oe,
            with(oe_answer(), "/finals/PLAN", json!("PLAN_Z")),
            false,
            Err(not_an_option("PLAN", "PLAN_Z")),
        ),
        (
            "PLAN missing for the PLAN action",
            &oe,
            without(oe_answer(), "/finals/PLAN"),
            false,
            Err(missing("finals.PLAN")),
        ),
    ];
    for (name, sop, raw, truncated, expected) in cases {
        assert_eq!(
            parse_agent_output(sop, &raw, truncated),
            expected,
            "{name}: {raw}"
        );
    }
}

#[test]
fn the_first_object_that_parses_wins() {
    let telecom = load("telecom_package");
    let raw = format!(
        "Thinking {{step by step}}...\n{}\nand a second one {{\"chat\": 1}}",
        telecom_answer()
    );
    assert_eq!(
        parse_agent_output(&telecom, &raw, false),
        Ok(telecom_turn())
    );
    // Braces and quotes inside strings do not confuse the extraction.
    let tricky = with(
        telecom_answer(),
        "/cot",
        json!("a } and a \" and a \\ and a {"),
    );
    let turn = parse_agent_output(&telecom, &tricky, false).unwrap();
    assert_eq!(turn.cot, "a } and a \" and a \\ and a {");
}

#[test]
fn integer_fields_accept_numbers_and_numeric_strings() {
    let yaml = "id: t\nname: T\ndomain: d\ndescription: d\n\
        fields:\n  Count: {description: c, type: integer, min: 0, max: 10}\n\
        actions:\n  Low: low\n  High: high\n\
        sop:\n  start: s1\n  stages:\n    s1:\n      title: t\n      branch_on: Count\n      \
        cases:\n        \"< 5\": {action: Low}\n        \">= 5\": {action: High}\n";
    let sop = sage::sop::from_yaml(yaml, "t.yaml").unwrap();
    let answer = |count: Json| {
        json!({
            "classification_output": {"Count": count},
            "cot": "", "now_path": ["s1"], "finals": {"Action": "Low"}, "chat": "ok"
        })
        .to_string()
    };
    for (given, expected) in [
        (json!(3), Ok(Value::Int(3))),
        (json!(" 7 "), Ok(Value::Int(7))),
        (json!(11), Err(not_an_option("Count", "11"))),
        (json!(2.5), Err(not_an_option("Count", "2.5"))),
        (json!("three"), Err(not_an_option("Count", "three"))),
    ] {
        let got = parse_agent_output(&sop, &answer(given), false)
            .map(|turn| turn.classification["Count"].clone());
        assert_eq!(got, expected);
    }
}

#[test]
fn chat_is_readable_from_an_invalid_answer() {
    let bad = with(telecom_answer(), "/finals/Action", json!("Refund"));
    assert_eq!(
        extract_chat(&bad).as_deref(),
        Some("I understand your frustration. Let me transfer you to a colleague right away.")
    );
    assert_eq!(extract_chat("no json here"), None);
    assert_eq!(extract_chat("{\"chat\": 3}"), None);
}

fn judge_answer() -> Json {
    json!({
        "classification": {
            "ConsumptionType": "Change",
            "ApplicationTendency": "Agree",
            "ConsumptionProfile": "Data",
            "EmotionTag": "Discontent"
        },
        "chat_quality_dimensions": {
            "linguistic_quality": 9,
            "anthropomorphism_emotion": "6",
            "content_utility": 6.0,
            "user_satisfaction": 3,
            "instruction_compliance": 9
        },
        "classification_reasoning": "the user wants to change and is angry",
        "chat_quality_reasoning": "fluent and polite"
    })
}

#[test]
fn judge_answers_table() {
    let telecom = load("telecom_package");
    let oe = load("online_education");
    let expected = Judgment {
        classification: telecom_turn().classification,
        chat: ChatScores {
            linguistic_quality: 9,
            anthropomorphism_emotion: 6,
            content_utility: 6,
            user_satisfaction: 3,
            instruction_compliance: 9,
        },
    };
    let fenced = format!("```json\n{}\n```", judge_answer());
    let oe_judge = json!({
        "classification": {
            "DescriptionClear": "true", "QuestionRelevance": false, "EmotionTendency": "Calm",
            "ResolveDependency": "LowDependency", "RepeatedRaised": "false",
            "RegardingRefund": true
        },
        "chat_quality_dimensions": {
            "linguistic_quality": 3, "anthropomorphism_emotion": 3, "content_utility": 3,
            "user_satisfaction": 3, "instruction_compliance": 3
        }
    });
    let dims = "/chat_quality_dimensions";
    let cases: Vec<(&str, &Sop, String, Result<Judgment, FormatError>)> = vec![
        (
            "valid",
            &telecom,
            judge_answer().to_string(),
            Ok(expected.clone()),
        ),
        ("fenced", &telecom, fenced, Ok(expected)),
        (
            "no JSON",
            &telecom,
            "Scores: 9, 6, 6".into(),
            Err(FormatError::NoJsonObject),
        ),
        (
            "score 5",
            &telecom,
            with(judge_answer(), &format!("{dims}/content_utility"), json!(5)),
            Err(not_an_option(
                "chat_quality_dimensions.content_utility",
                "5",
            )),
        ),
        (
            "score as words",
            &telecom,
            with(
                judge_answer(),
                &format!("{dims}/user_satisfaction"),
                json!("high"),
            ),
            Err(not_an_option(
                "chat_quality_dimensions.user_satisfaction",
                "high",
            )),
        ),
        (
            "missing dimension",
            &telecom,
            without(judge_answer(), &format!("{dims}/linguistic_quality")),
            Err(missing("chat_quality_dimensions.linguistic_quality")),
        ),
        (
            "missing dimensions",
            &telecom,
            without(judge_answer(), dims),
            Err(missing("chat_quality_dimensions")),
        ),
        (
            "missing field",
            &telecom,
            without(judge_answer(), "/classification/EmotionTag"),
            Err(missing("classification.EmotionTag")),
        ),
        (
            "field outside the options",
            &telecom,
            with(judge_answer(), "/classification/EmotionTag", json!("Angry")),
            Err(not_an_option("EmotionTag", "Angry")),
        ),
    ];
    for (name, sop, raw, expected) in cases {
        assert_eq!(parse_judge_output(sop, &raw), expected, "{name}: {raw}");
    }
    let judgment = parse_judge_output(&oe, &oe_judge.to_string()).unwrap();
    assert_eq!(
        judgment.classification["DescriptionClear"],
        Value::Bool(true)
    );
    assert_eq!(
        judgment.classification["RepeatedRaised"],
        Value::Bool(false)
    );
}

#[test]
fn user_outputs_table() {
    let refusal = |t: &str| Err(UserOutputError::Refusal { text: t.into() });
    let cases: Vec<(&str, Result<Option<String>, UserOutputError>)> = vec![
        ("[END]", Ok(None)),
        ("  \"[END]\"\n", Ok(None)),
        ("Thanks, that is all. [END]", Ok(None)),
        ("Customer: [END]", Ok(None)),
        ("[end]", Ok(None)),
        (
            "I want to cancel my package.",
            Ok(Some("I want to cancel my package.".into())),
        ),
        (
            "Customer: \"Why is there a penalty?\"",
            Ok(Some("Why is there a penalty?".into())),
        ),
        ("\"User: hi there\"", Ok(Some("hi there".into()))),
        (
            "“Is the fee refundable?”",
            Ok(Some("Is the fee refundable?".into())),
        ),
        ("", Err(UserOutputError::Empty)),
        ("   \n\t", Err(UserOutputError::Empty)),
        ("\"\"", Err(UserOutputError::Empty)),
        ("Customer:", Err(UserOutputError::Empty)),
        (
            "I'm sorry, but I can't continue this role-play.",
            refusal("I'm sorry, but I can't continue this role-play."),
        ),
        (
            "I’m sorry, but I cannot help with that.",
            refusal("I’m sorry, but I cannot help with that."),
        ),
        (
            "As an AI language model, I ...",
            refusal("As an AI language model, I ..."),
        ),
        (
            "?!...",
            Err(UserOutputError::NoContent {
                text: "?!...".into(),
            }),
        ),
    ];
    for (raw, expected) in cases {
        assert_eq!(parse_user_output(raw), expected, "{raw:?}");
    }
}

/// Every outcome the agent parser can give, as a label (for the properties below).
fn outcome(sop: &Sop, raw: &str, truncated: bool) -> Result<AgentTurn, FormatError> {
    let first = parse_agent_output(sop, raw, truncated);
    assert_eq!(
        first,
        parse_agent_output(sop, raw, truncated),
        "deterministic"
    );
    first
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn arbitrary_text_never_panics(raw in any::<String>(), truncated in any::<bool>()) {
        let sop = load("telecom_package");
        let _ = outcome(&sop, &raw, truncated);
        let _ = parse_judge_output(&sop, &raw);
        let _ = parse_user_output(&raw);
        let _ = extract_chat(&raw);
    }

    #[test]
    fn json_like_text_never_panics(raw in "[{}\\[\\]\":,\\\\a-z0-9 ]{0,64}", truncated in any::<bool>()) {
        let sop = load("online_education");
        let _ = outcome(&sop, &raw, truncated);
        let _ = parse_judge_output(&sop, &raw);
    }

    #[test]
    fn a_cut_answer_is_truncated(cut in any::<prop::sample::Index>(), truncated in any::<bool>()) {
        let sop = load("telecom_package");
        let full = serde_json::to_string_pretty(&telecom_answer()).unwrap();
        let boundaries: Vec<usize> = full.char_indices().map(|(i, _)| i).collect();
        let end = boundaries[cut.index(boundaries.len())];
        let expected = if end > 0 || truncated {
            FormatError::Truncated
        } else {
            FormatError::NoJsonObject
        };
        prop_assert_eq!(outcome(&sop, &full[..end], truncated), Err(expected));
    }

    #[test]
    fn mutated_answers_never_panic(
        at in any::<prop::sample::Index>(),
        inserted in any::<char>(),
        delete in any::<bool>(),
        truncated in any::<bool>(),
    ) {
        let sop = load("online_education");
        let full = oe_answer().to_string();
        let mut chars: Vec<char> = full.chars().collect();
        let i = at.index(chars.len());
        if delete {
            chars.remove(i);
        } else {
            chars.insert(i, inserted);
        }
        let mutated: String = chars.into_iter().collect();
        match outcome(&sop, &mutated, truncated) {
            Ok(turn) => prop_assert!(sop.scenario().actions.iter().any(|a| a.name == turn.action)),
            Err(e) => prop_assert!(!e.to_string().is_empty()),
        }
    }
}
