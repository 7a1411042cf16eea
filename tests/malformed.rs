//! The malformed-scenario corpus: every `tests/malformed/*.yaml` file (except `valid_*.yaml`)
//! is a small scenario, cut down from `scenarios/telecom_package.yaml`, that breaks exactly one
//! rule of `docs/scenario-format.md`. Loading it must fail with the problem that rule describes,
//! and the message must name the file.
//!
//! The corpus table below generates one test per file (named after the file), so a failing rule
//! shows up by name. Cases marked `#[ignore = "..."]` assert what the docs describe but the
//! validator does not (yet) do; `cargo test --test malformed -- --ignored` runs them.

use sage::scenario::Problem;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// A check on the problems a corpus file is expected to report.
type Matcher = fn(&[Problem]) -> bool;

/// One corpus file and what loading it must report.
struct Case {
    /// The file name without `.yaml`.
    name: &'static str,
    /// Which problems are expected (the whole list, as a slice pattern).
    matcher: Matcher,
    /// A known gap of the validator (the case is `#[ignore]`d).
    known_gap: bool,
}

/// Declares the corpus: `file_stem => slice pattern [if guard]`, optionally preceded by
/// `#[ignore = "reason"]`. Generates the `CORPUS` table and one `#[test]` per file.
macro_rules! corpus {
    ($( $(#[ignore = $why:literal])? $name:ident => $pat:pat $(if $guard:expr)? ),* $(,)?) => {
        const CORPUS: &[Case] = &[$(
            Case {
                name: stringify!($name),
                matcher: |problems| matches!(problems, $pat $(if $guard)?),
                known_gap: corpus!(@gap $($why)?),
            }
        ),*];

        mod corpus_file {
            $(
                #[test]
                $(#[ignore = $why])?
                fn $name() {
                    super::check(stringify!($name));
                }
            )*
        }
    };
    (@gap) => { false };
    (@gap $why:literal) => { true };
}

corpus! {
    // 1. YAML syntax errors: the line and column of the parser's error.
    // The unclosed `[` of line 9 swallows `actions`; the parser stops at the `:` of line 10.
    yaml_syntax_error => [Problem::Syntax { line: 10, column: 8, .. }],
    yaml_bad_indentation => [Problem::Syntax { line: 9, column: 14, .. }],

    // 2. Unknown keys, everywhere.
    unknown_key_top_level => [Problem::UnknownKey { line: 6, column: 1, key, .. }]
        if key == "version",
    unknown_key_field => [Problem::UnknownKey { line: 9, column: 5, key, expected }]
        if key == "option" && expected.contains("options"),
    unknown_key_stage => [Problem::UnknownKey { line: 18, column: 7, key, expected }]
        if key == "branch" && expected.contains("branch_on"),
    unknown_key_rule => [Problem::UnknownKey { line: 21, column: 11, key, expected }]
        if key == "if" && expected.contains("when"),
    unknown_key_intent => [Problem::UnknownKey { line: 28, column: 7, key, expected }]
        if key == "level" && expected.contains("adversarial"),
    unknown_key_target => [Problem::UnknownKey { line: 20, column: 19, key, expected }]
        if key == "actoin" && expected.contains("action"),
    unknown_key_action => [Problem::UnknownKey { line: 13, column: 5, key, expected }]
        if key == "output" && expected.contains("outputs"),

    // 3. References to undeclared stages, keys, actions and outputs.
    unknown_reference_stage_next => [Problem::UnknownReference { at, kind: "stage", name, .. }]
        if at == "sop.stages.step1.next" && name == "step3",
    unknown_reference_stage_case => [Problem::UnknownReference { at, kind: "stage", name, .. }]
        if at == "sop.stages.step2.cases.Cancel" && name == "step5",
    unknown_reference_stage_rule => [Problem::UnknownReference { at, kind: "stage", name, .. }]
        if at == "sop.stages.step2.rules[2].then" && name == "step7",
    unknown_reference_stage_start =>
        [Problem::UnknownReference { at, kind: "stage", name, expected }]
        if at == "sop.start" && name == "step1" && expected == "step2",
    unknown_reference_branch_on =>
        [Problem::UnknownReference { at, kind: "field or variable", name, .. }]
        if at == "sop.stages.step2.branch_on" && name == "ConsumptionKind",
    unknown_reference_rule_when =>
        [Problem::UnknownReference { at, kind: "field or variable", name, .. }]
        if at == "sop.stages.step2.rules[2].when" && name == "PackageStatus",
    unknown_reference_intent_implies =>
        [Problem::UnknownReference { at, kind: "field or variable", name, .. }]
        if at.starts_with("user.intents[1]") && name == "EmotionTag",
    unknown_reference_action => [Problem::UnknownReference { at, kind: "action", name, .. }]
        if at == "sop.stages.step2.cases.Cancel" && name == "TransHuman",
    unknown_reference_set_output => [Problem::UnknownReference { at, kind: "output", name, .. }]
        if at == "sop.stages.step2.cases.Change.set" && name == "PLAN",
    unknown_reference_action_output =>
        [Problem::UnknownReference { at, kind: "output", name, .. }]
        if at == "actions.ChangeOrder.outputs" && name == "PLAN",

    // 4. Enum and boolean branches: one case per value, no other value.
    missing_cases_enum => [Problem::MissingCases { at, key, missing, expected }]
        if at == "sop.stages.step2.cases" && key == "ConsumptionType" && missing == "Cancel"
            && expected == "Enquiry, Change, Cancel",
    unknown_case_value => [Problem::UnknownValue { at, key, value, .. }]
        if at == "sop.stages.step2.cases" && key == "ConsumptionType" && value == "Upgrade",
    missing_cases_boolean => [Problem::MissingCases { key, missing, .. }]
        if key == "RegardingRefund" && missing == "false",

    // 5. The same case twice.
    duplicate_case_key => [Problem::DuplicateKey { line: 23, column: 9, key }] if key == "Change",
    overlapping_cases_same_integer =>
        [Problem::OverlappingCases { at, key, first, second, example: 5 }]
        if at == "sop.stages.step5.cases" && key == "Penalty" && first == "== 5" && second == "5",

    // 6. Integer predicates: disjoint, covering min..max unless `else`, well-formed.
    overlapping_cases_predicates =>
        [Problem::OverlappingCases { key, first, second, example: 5, .. }]
        if key == "Penalty" && first == "< 10" && second == ">= 5",
    case_gap => [Problem::CaseGap { at, key, gap, range }]
        if at == "sop.stages.step5.cases" && key == "Penalty" && gap == "10..50"
            && range == "0..100",
    bad_predicate => [Problem::BadPredicate { at, key, text, .. }]
        if at == "sop.stages.step5.cases" && key == "Penalty" && text == "=> 3",

    // 7. Rules: disjoint, covering unless `otherwise`, `otherwise` last and alone.
    overlapping_rules => [Problem::OverlappingRules { at, first: 1, second: 2, example }]
        if at == "sop.stages.step2.rules"
            && example == "ConsumptionType=Change, EmotionTag=Discontent",
    uncovered_rules => [Problem::UncoveredRules { at, example, keys }]
        if at == "sop.stages.step2.rules" && example.contains("ConsumptionType=Cancel")
            && keys == "ConsumptionType, EmotionTag",
    otherwise_not_last => [Problem::BadRule { at, found, .. }]
        if at == "sop.stages.step2.rules[2]" && found.contains("`otherwise` before the last rule"),
    rule_when_and_otherwise => [Problem::BadRule { at, .. }] if at == "sop.stages.step2.rules[2]",

    // 8. A loop that an assignment follows (valid_structural_cycle.yaml is the legal kind).
    loop_followed => [Problem::Loop { cycle, witness }]
        if cycle == "step2 -> step4 -> step2" && witness.contains("ConsumptionType=Change"),

    // 9. Unreachable stages, structurally and semantically.
    unreachable_structural => [Problem::Unreachable { stage, start, why }]
        if stage == "step3" && start == "step2" && *why == "no transition leads to it",
    unreachable_semantic => [Problem::Unreachable { stage, start, why }]
        if stage == "step5" && start == "step2" && *why == "no assignment of values leads to it",

    // 10. Stages from which no action can be reached.
    dead_end => [Problem::DeadEnd { stage: a }, Problem::DeadEnd { stage: b }]
        if a == "step3" && b == "step6",

    // 11. Duplicate ids.
    duplicate_field_variable => [Problem::DuplicateId { at, id, first }]
        if at == "variables.PackageStatus" && id == "PackageStatus"
            && first == "fields.PackageStatus",
    duplicate_intent_id => [Problem::DuplicateId { at, id, .. }]
        if at.starts_with("user.intents[2]") && id == "enquiry_reject",
    duplicate_stage_id => [Problem::DuplicateKey { line: 23, column: 5, key }] if key == "step2",
    duplicate_option => [Problem::DuplicateId { at, id, .. }]
        if at == "fields.ConsumptionType.options" && id == "Change",

    // 12. Empty options.
    empty_options => [Problem::EmptyOptions { at }] if at == "fields.ConsumptionType",

    // 13. An action's output not set on some route.
    output_not_set => [Problem::OutputNotSet { action, output, path, case }]
        if action == "ChangeOrder" && output == "PLAN" && path == "[step2]" && case == "Cancel at step2",

    // 14. Bad declarations, stages, targets.
    bad_type_float => [Problem::BadDeclaration { at, found, .. }]
        if at == "variables.Penalty" && found.contains("float"),
    min_greater_than_max => [Problem::BadDeclaration { at, found, .. }]
        if at == "variables.Penalty" && found == "min 10000 > max 0",
    example_outside_range => [Problem::BadDeclaration { at, found, .. }]
        if at == "variables.Penalty" && found.contains("20000"),
    stage_next_and_rules => [Problem::BadStage { at, found }]
        if at == "sop.stages.step2" && found.contains("`next`") && found.contains("`rules`"),
    stage_without_decision => [Problem::BadStage { at, .. }] if at == "sop.stages.step1",
    target_stage_and_action => [Problem::BadTarget { at, found }]
        if at == "sop.stages.step2.cases.Change" && found.contains("both"),
    intent_adversarial_extreme => [Problem::BadDeclaration { at, found, .. }]
        if at == "user.intents[1] (cancel_furious).adversarial" && found.contains("extreme"),
    intent_implies_empty => [Problem::EmptyIntent { at, key }]
        if at.starts_with("user.intents[1]") && key == "Penalty",
    invalid_scenario_id => [Problem::InvalidId { at, id, .. }] if at == "id" && id == "telecom package",
    invalid_scenario_id_plus => [Problem::InvalidId { at, id, expected }]
        if at == "id" && id == "telecom+package" && !expected.contains('+'),
    invalid_scenario_id_long => [Problem::InvalidId { at, id, expected }]
        if at == "id" && id.len() == 65 && expected.contains("1 to 64"),
}

fn corpus_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/malformed")
}

/// Loads one corpus file and checks the problems it reports against the table.
fn check(name: &str) {
    let case = CORPUS
        .iter()
        .find(|c| c.name == name)
        .expect("the test is generated from the table");
    let file = format!("{name}.yaml");
    let path = corpus_dir().join(&file);
    let err = match sage::sop::load(&path) {
        Ok(_) => panic!("{file} loaded, but it is malformed"),
        Err(e) => e,
    };
    assert!(
        (case.matcher)(&err.problems),
        "{file}: not the expected problems; got:\n{err}\n{:#?}",
        err.problems
    );
    let text = err.to_string();
    assert!(
        err.file.ends_with(&file),
        "{file}: error labelled {}",
        err.file
    );
    assert!(
        text.matches(&file).count() >= err.problems.len(),
        "every problem must name the file {file}:\n{text}"
    );
}

#[test]
fn corpus_and_table_agree() {
    let mut on_disk = Vec::new();
    for entry in std::fs::read_dir(corpus_dir()).expect("tests/malformed exists") {
        let path = entry.expect("readable directory").path();
        if path.extension().is_some_and(|e| e == "yaml") {
            let stem = path.file_stem().unwrap().to_str().unwrap().to_string();
            on_disk.push(stem);
        }
    }
    on_disk.sort();
    for stem in &on_disk {
        let path = corpus_dir().join(format!("{stem}.yaml"));
        if stem.starts_with("valid_") {
            assert!(
                CORPUS.iter().all(|c| c.name != stem),
                "{stem}.yaml is valid_* but listed as malformed"
            );
            if let Err(e) = sage::sop::load(&path) {
                panic!("{stem}.yaml must load:\n{e}");
            }
            continue;
        }
        let case = CORPUS
            .iter()
            .find(|c| c.name == stem)
            .unwrap_or_else(|| panic!("tests/malformed/{stem}.yaml is not in the corpus table"));
        // A known gap may be that the file loads (e.g. invalid_scenario_id_plus).
        if !case.known_gap {
            assert!(
                sage::sop::load(&path).is_err(),
                "tests/malformed/{stem}.yaml loaded, but it is malformed"
            );
        }
    }
    for case in CORPUS {
        assert!(
            on_disk.iter().any(|s| s == case.name),
            "the corpus table lists {}, but tests/malformed/{}.yaml does not exist",
            case.name,
            case.name
        );
    }
}

#[test]
fn valid_structural_cycle_loads() {
    let path = corpus_dir().join("valid_structural_cycle.yaml");
    let sop = sage::sop::load(&path).unwrap_or_else(|e| panic!("must load:\n{e}"));
    let paths: Vec<Vec<&str>> = sop
        .routes()
        .iter()
        .map(|r| r.route.path.iter().map(String::as_str).collect())
        .collect();
    // Both halves of the cycle step4 -> step6 -> step8 -> step4 are used, never the whole.
    assert!(
        paths.contains(&vec!["step2", "step8", "step4"]),
        "{paths:?}"
    );
    assert!(
        paths.contains(&vec!["step2", "step4", "step6", "step8"]),
        "{paths:?}"
    );
}

#[test]
fn syntax_message_is_one_line_naming_the_file() {
    let err = sage::sop::load(&corpus_dir().join("yaml_syntax_error.yaml")).unwrap_err();
    let text = err.to_string();
    assert_eq!(text.lines().count(), 1, "{text}");
    assert!(!text.contains("<input>"), "{text}");
    assert_eq!(text.matches("line 10").count(), 1, "{text}");
}

/// Runs `sage scenario validate FILES...` from the crate root.
fn validate(files: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_sage"))
        .args(["scenario", "validate"])
        .args(files)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("the sage binary runs")
}

#[test]
fn cli_validate_reports_malformed_files() {
    for (file, problem) in [
        (
            "tests/malformed/missing_cases_enum.yaml",
            "sop.stages.step2.cases: cases do not cover ConsumptionType = Cancel",
        ),
        (
            "tests/malformed/loop_followed.yaml",
            "loops: step2 -> step4 -> step2",
        ),
        (
            "tests/malformed/unreachable_structural.yaml",
            "sop.stages.step3: unreachable from start `step2` (no transition leads to it)",
        ),
    ] {
        let out = validate(&[file]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{file}: {stderr}");
        assert!(
            stderr.contains(&format!("{file}: ")) && stderr.contains(problem),
            "{file}: stderr does not name the file and the problem:\n{stderr}"
        );
        assert!(out.stdout.is_empty(), "{file}: nothing on stdout");
    }
}

#[test]
fn cli_validate_accepts_telecom() {
    let out = validate(&["scenarios/telecom_package.yaml"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(stdout, "ok: scenarios/telecom_package.yaml\n");
}

#[test]
fn cli_validate_mixed_files_fails_but_reports_each() {
    let bad = "tests/malformed/case_gap.yaml";
    let out = validate(&["scenarios/telecom_package.yaml", bad]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stdout.contains("ok: scenarios/telecom_package.yaml"),
        "{stdout}"
    );
    assert!(
        stderr.contains(&format!(
            "{bad}: sop.stages.step5.cases: cases on Penalty leave 10..50 uncovered"
        )),
        "{stderr}"
    );
}

#[test]
fn unknown_output_message_says_what_is_expected() {
    for name in [
        "unknown_reference_set_output",
        "unknown_reference_action_output",
    ] {
        let path = corpus_dir().join(format!("{name}.yaml"));
        let text = sage::sop::load(&path).unwrap_err().to_string();
        assert!(
            text.trim_end()
                .ends_with("expected one of: (none declared)"),
            "{text}"
        );
    }
}
