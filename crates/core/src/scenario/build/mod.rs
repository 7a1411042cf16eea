//! From the raw YAML schema to a checked [`Scenario`]: every local rule of the format (names,
//! types, references, case coverage, rule overlap and coverage). Problems are collected, so one
//! run reports every mistake it can find.
//!
//! The SOP's stages (targets, branches, rules and their coverage) are built in [`stages`].

mod stages;

use super::domain::IntSet;
use super::raw::{self, CondValue, OrderedMap, RawKey, RawScenario};
use super::{
    Action, Adversarial, Cooperativeness, Intent, Key, KeyKind, Output, Persona, Problem, Scenario,
    ScenarioError, Scope, Stage,
};
use crate::scenario::domain::MAX_OPTIONS;

/// Parses a YAML file of the scenario formats. YAML 1.2 booleans only: `yes`, `no`, `on`, `off`,
/// `y`, `n` stay text (options, descriptions); a duplicate key is an error.
pub(crate) fn parse<T: serde::de::DeserializeOwned>(
    text: &str,
    file: &str,
) -> Result<T, ScenarioError> {
    let options = serde_saphyr::options! {
        strict_booleans: true,
        duplicate_keys: serde_saphyr::options::DuplicateKeyPolicy::Error,
        with_snippet: false,
    };
    serde_saphyr::from_str_with_options(text, options)
        .map_err(|e| ScenarioError::one(file, yaml_problem(&e)))
}

pub(super) fn from_yaml(text: &str, file: &str) -> Result<Scenario, ScenarioError> {
    let raw: RawScenario = parse(text, file)?;
    let mut b = Builder {
        problems: Vec::new(),
    };
    let scenario = b.scenario(raw);
    if b.problems.is_empty() {
        Ok(scenario)
    } else {
        Err(ScenarioError {
            file: file.to_string(),
            problems: b.problems,
        })
    }
}

/// Turns a parser error into a problem with its line and column.
pub(super) fn yaml_problem(e: &serde_saphyr::Error) -> Problem {
    let (line, column) = e
        .location()
        .map(|l| (l.line(), l.column()))
        .unwrap_or((0, 0));
    match e {
        serde_saphyr::Error::SerdeUnknownField {
            field, expected, ..
        } => Problem::UnknownKey {
            line,
            column,
            key: field.clone(),
            expected: expected.join(", "),
        },
        serde_saphyr::Error::DuplicateMappingKey { key, .. } => Problem::DuplicateKey {
            line,
            column,
            key: key.clone().unwrap_or_else(|| "?".into()),
        },
        _ => {
            let full = e.to_string();
            // The parser prefixes its own location; ours is in the problem already.
            let message = full
                .strip_prefix("error: ")
                .map(|rest| match rest.split_once(": ") {
                    Some((loc, msg)) if loc.starts_with("line ") => msg,
                    _ => rest,
                })
                .unwrap_or(&full);
            let suffix = format!(" at line {line}, column {column}");
            let message = message
                .strip_suffix(suffix.as_str())
                .unwrap_or(message)
                .to_string();
            // Our own map type reports duplicates as a custom message.
            if let Some(key) = message
                .strip_prefix("duplicate key `")
                .and_then(|rest| rest.split('`').next())
            {
                return Problem::DuplicateKey {
                    line,
                    column,
                    key: key.to_string(),
                };
            }
            Problem::Syntax {
                line,
                column,
                message,
            }
        }
    }
}

/// Names of fields, variables, actions, outputs and stages: letters, digits, `_ - + .`
/// (action names such as `Comfort+Compensation` are kept verbatim).
const NAME_CHARS: &str = "1 to 128 letters, digits, `_`, `-`, `+` or `.`";
/// The scenario id also names dialogue ids and metric labels: ASCII only, no `+` or `.`.
const SCENARIO_ID_CHARS: &str = "1 to 64 ASCII letters, digits, `_` or `-`";

fn valid_id(id: &str) -> bool {
    !id.is_empty()
        && id.chars().count() <= 128
        && id
            .chars()
            .all(|c| c.is_alphanumeric() || matches!(c, '_' | '-' | '+' | '.'))
}

fn valid_scenario_id(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= 64
        && id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-'))
}

/// The names, comma-separated; `(none declared)` for none.
fn join(names: impl IntoIterator<Item = impl AsRef<str>>) -> String {
    let all: Vec<String> = names.into_iter().map(|s| s.as_ref().to_string()).collect();
    if all.is_empty() {
        "(none declared)".into()
    } else {
        all.join(", ")
    }
}

/// An integer predicate as a set, or `None` when it does not parse.
pub(crate) fn parse_predicate(text: &str) -> Option<IntSet> {
    let t = text.trim();
    let num = |s: &str| s.trim().parse::<i64>().ok();
    let all = |lo: i64, hi: i64| Some(IntSet::range(lo, hi));
    if let Some(n) = t.strip_prefix("==").and_then(num) {
        all(n, n)
    } else if let Some(n) = t.strip_prefix("!=").and_then(num) {
        Some(IntSet::range(i64::MIN, i64::MAX).subtract(&IntSet::range(n, n)))
    } else if let Some(n) = t.strip_prefix("<=").and_then(num) {
        all(i64::MIN, n)
    } else if let Some(n) = t.strip_prefix(">=").and_then(num) {
        all(n, i64::MAX)
    } else if let Some(n) = t.strip_prefix('<').and_then(num) {
        Some(
            n.checked_sub(1)
                .map_or_else(IntSet::empty, |m| IntSet::range(i64::MIN, m)),
        )
    } else if let Some(n) = t.strip_prefix('>').and_then(num) {
        Some(
            n.checked_add(1)
                .map_or_else(IntSet::empty, |m| IntSet::range(m, i64::MAX)),
        )
    } else if let Some((a, b)) = t.split_once("..") {
        let (a, b) = (num(a)?, num(b)?);
        (a <= b).then(|| IntSet::range(a, b))
    } else {
        num(t).map(|n| IntSet::range(n, n))
    }
}

struct Builder {
    problems: Vec<Problem>,
}

impl Builder {
    fn problem(&mut self, p: Problem) {
        self.problems.push(p);
    }

    /// Reports `id` when it is among the ids declared before it.
    fn unique<'a>(
        &mut self,
        mut earlier: impl Iterator<Item = &'a str>,
        id: &str,
        at: &str,
        first: &str,
    ) {
        if earlier.any(|x| x == id) {
            self.problem(Problem::DuplicateId {
                at: at.to_string(),
                id: id.to_string(),
                first: first.to_string(),
            });
        }
    }

    /// One of a fixed set of keywords; an unknown one is reported (and the first is used).
    fn keyword<T: Copy>(&mut self, at: &str, found: &str, allowed: &[(&str, T)]) -> T {
        match allowed.iter().find(|(name, _)| *name == found) {
            Some((_, v)) => *v,
            None => {
                let names: Vec<&str> = allowed.iter().map(|(n, _)| *n).collect();
                self.problem(Problem::BadDeclaration {
                    at: at.to_string(),
                    found: format!("`{found}`"),
                    expected: format!("one of: {}", names.join(", ")),
                });
                allowed[0].1
            }
        }
    }

    fn scenario(&mut self, raw: RawScenario) -> Scenario {
        if !valid_scenario_id(&raw.id) {
            self.problem(Problem::InvalidId {
                at: "id".into(),
                id: raw.id.clone(),
                expected: SCENARIO_ID_CHARS,
            });
        }
        let mut keys = Vec::new();
        for (scope, map, section) in [
            (Scope::Field, &raw.fields, "fields"),
            (Scope::Variable, &raw.variables, "variables"),
        ] {
            for (name, rk) in &map.0 {
                let at = format!("{section}.{name}");
                if let Some(first) = keys.iter().find(|k: &&Key| k.name == *name) {
                    let first_section = if first.scope == Scope::Field {
                        "fields"
                    } else {
                        "variables"
                    };
                    self.problem(Problem::DuplicateId {
                        at: at.clone(),
                        id: name.clone(),
                        first: format!("{first_section}.{name}"),
                    });
                    continue;
                }
                if !valid_id(name) {
                    self.problem(Problem::InvalidId {
                        at: at.clone(),
                        id: name.clone(),
                        expected: NAME_CHARS,
                    });
                }
                let kind = self.key_kind(&at, rk);
                keys.push(Key {
                    name: name.clone(),
                    description: rk.description.clone(),
                    scope,
                    kind,
                });
            }
        }
        if raw.fields.0.is_empty() {
            self.problem(Problem::BadDeclaration {
                at: "fields".into(),
                found: "no fields".into(),
                expected: "at least one classification field".into(),
            });
        }

        let outputs = self.outputs(&raw.outputs);
        let actions = self.actions(&raw.actions, &outputs);
        let ctx = Ctx {
            keys: &keys,
            actions: &actions,
            outputs: &outputs,
            stage_ids: raw.sop.stages.0.iter().map(|(id, _)| id.clone()).collect(),
        };
        let stages: Vec<Stage> = raw
            .sop
            .stages
            .0
            .iter()
            .map(|(id, rs)| self.stage(&ctx, id, rs))
            .collect();
        if stages.is_empty() {
            self.problem(Problem::BadDeclaration {
                at: "sop.stages".into(),
                found: "no stages".into(),
                expected: "at least one stage".into(),
            });
        }
        let start = match ctx.stage_ids.iter().position(|s| *s == raw.sop.start) {
            Some(i) => i,
            None => {
                if !stages.is_empty() {
                    self.problem(Problem::UnknownReference {
                        at: "sop.start".into(),
                        kind: "stage",
                        name: raw.sop.start.clone(),
                        expected: join(&ctx.stage_ids),
                    });
                }
                0
            }
        };
        let intents = self.intents(&ctx, &raw.user.intents);
        let personas = self.personas(&raw.user.personas);
        Scenario {
            id: raw.id,
            name: raw.name,
            domain: raw.domain,
            description: raw.description,
            keys,
            actions,
            outputs,
            start,
            stages,
            intents,
            personas,
        }
    }

    fn key_kind(&mut self, at: &str, rk: &RawKey) -> KeyKind {
        let ty = rk
            .ty
            .as_deref()
            .unwrap_or(if rk.options.is_some() { "enum" } else { "" });
        let bad = |found: String, expected: &str| Problem::BadDeclaration {
            at: at.to_string(),
            found,
            expected: expected.to_string(),
        };
        let integer_only = rk.min.is_some() || rk.max.is_some() || rk.examples.is_some();
        match ty {
            "enum" => {
                if integer_only {
                    self.problem(bad(
                        "`min`, `max` or `examples` on an enum".into(),
                        "them only on `type: integer`",
                    ));
                }
                let options: Vec<String> =
                    rk.options.iter().flatten().map(|s| s.0.clone()).collect();
                if rk.options.is_none() {
                    self.problem(bad(
                        "an enum without `options`".into(),
                        "`options: [A, B, ...]`",
                    ));
                } else if options.is_empty() {
                    self.problem(Problem::EmptyOptions { at: at.to_string() });
                } else if options.len() > MAX_OPTIONS {
                    self.problem(bad(
                        format!("{} options", options.len()),
                        "at most 64 options",
                    ));
                }
                let mut unique: Vec<String> = Vec::with_capacity(options.len());
                for o in options {
                    if unique.contains(&o) {
                        self.problem(Problem::DuplicateId {
                            at: format!("{at}.options"),
                            id: o,
                            first: format!("an earlier option of {at}"),
                        });
                    } else {
                        unique.push(o);
                    }
                }
                KeyKind::Enum(unique)
            }
            "boolean" => {
                if rk.options.is_some() || integer_only {
                    self.problem(bad(
                        "`options`, `min`, `max` or `examples` on a boolean".into(),
                        "only `description` and `type: boolean`",
                    ));
                }
                KeyKind::Boolean
            }
            "integer" => {
                if rk.options.is_some() {
                    self.problem(bad(
                        "`options` on an integer".into(),
                        "`min`, `max` and `examples` only",
                    ));
                }
                if let (Some(lo), Some(hi)) = (rk.min, rk.max)
                    && lo > hi
                {
                    self.problem(bad(format!("min {lo} > max {hi}"), "min <= max"));
                }
                let examples = rk.examples.clone().unwrap_or_default();
                for e in &examples {
                    if rk.min.is_some_and(|lo| *e < lo) || rk.max.is_some_and(|hi| *e > hi) {
                        self.problem(bad(
                            format!("example {e} outside min..max"),
                            "examples within min..max",
                        ));
                    }
                }
                KeyKind::Integer {
                    min: rk.min,
                    max: rk.max,
                    examples,
                }
            }
            "" => {
                self.problem(bad(
                    "neither `options` nor `type`".into(),
                    "`options: [...]`, `type: boolean` or `type: integer`",
                ));
                KeyKind::Enum(Vec::new())
            }
            other => {
                self.problem(bad(
                    format!("type `{other}`"),
                    "type `enum`, `boolean` or `integer`",
                ));
                KeyKind::Enum(Vec::new())
            }
        }
    }

    fn outputs(&mut self, raw: &OrderedMap<raw::RawOutput>) -> Vec<Output> {
        raw.0
            .iter()
            .map(|(name, ro)| {
                let at = format!("outputs.{name}");
                if !valid_id(name) {
                    self.problem(Problem::InvalidId {
                        at: at.clone(),
                        id: name.clone(),
                        expected: NAME_CHARS,
                    });
                }
                if ro.options.is_empty() {
                    self.problem(Problem::EmptyOptions { at });
                }
                Output {
                    name: name.clone(),
                    description: ro.description.clone(),
                    options: ro.options.iter().map(|s| s.0.clone()).collect(),
                    default: ro.default.as_ref().map(|s| s.0.clone()),
                }
            })
            .collect()
    }

    fn actions(&mut self, raw: &OrderedMap<raw::ActionForm>, outputs: &[Output]) -> Vec<Action> {
        if raw.0.is_empty() {
            self.problem(Problem::BadDeclaration {
                at: "actions".into(),
                found: "no actions".into(),
                expected: "at least one action".into(),
            });
        }
        raw.0
            .iter()
            .map(|(name, form)| {
                let at = format!("actions.{name}");
                if !valid_id(name) {
                    self.problem(Problem::InvalidId {
                        at: at.clone(),
                        id: name.clone(),
                        expected: NAME_CHARS,
                    });
                }
                let mut carried = Vec::new();
                for o in &form.0.outputs {
                    match outputs.iter().position(|d| d.name == *o) {
                        Some(i) => carried.push(i),
                        None => self.problem(Problem::UnknownReference {
                            at: format!("{at}.outputs"),
                            kind: "output",
                            name: o.clone(),
                            expected: join(outputs.iter().map(|d| &d.name)),
                        }),
                    }
                }
                Action {
                    name: name.clone(),
                    description: form.0.description.clone(),
                    outputs: carried,
                    source: form.0.source.clone(),
                }
            })
            .collect()
    }

    fn intents(&mut self, ctx: &Ctx, raw: &[raw::RawIntent]) -> Vec<Intent> {
        let mut out: Vec<Intent> = Vec::new();
        for (i, ri) in raw.iter().enumerate() {
            let at = format!("user.intents[{}] ({})", i + 1, ri.id);
            self.unique(
                out.iter().map(|x| x.id.as_str()),
                &ri.id,
                &at,
                "an earlier intent",
            );
            let adversarial = self.keyword(
                &format!("{at}.adversarial"),
                &ri.adversarial,
                &[
                    ("zero", Adversarial::Zero),
                    ("weak", Adversarial::Weak),
                    ("strong", Adversarial::Strong),
                ],
            );
            let mut implies = Vec::new();
            for (name, CondValue(values)) in &ri.implies.0 {
                let Some(key) = self.key_ref(ctx, &format!("{at}.implies"), name) else {
                    continue;
                };
                if let Some(d) = self.condition(ctx, &format!("{at}.implies.{name}"), key, values) {
                    if d.is_empty() {
                        self.problem(Problem::EmptyIntent {
                            at: at.clone(),
                            key: name.clone(),
                        });
                    }
                    implies.push((key, d));
                }
            }
            out.push(Intent {
                id: ri.id.clone(),
                description: ri.description.clone(),
                adversarial,
                implies,
                facts: ri.facts.clone(),
                context: ri
                    .context
                    .0
                    .iter()
                    .map(|(k, v)| (k.clone(), v.0.clone()))
                    .collect(),
            });
        }
        out
    }

    fn personas(&mut self, raw: &[raw::RawPersona]) -> Vec<Persona> {
        let mut out: Vec<Persona> = Vec::new();
        for (i, rp) in raw.iter().enumerate() {
            let at = format!("user.personas[{}] ({})", i + 1, rp.id);
            self.unique(
                out.iter().map(|x| x.id.as_str()),
                &rp.id,
                &at,
                "an earlier persona",
            );
            let cooperativeness = self.keyword(
                &format!("{at}.cooperativeness"),
                &rp.cooperativeness,
                &[
                    ("high", Cooperativeness::High),
                    ("medium", Cooperativeness::Medium),
                    ("low", Cooperativeness::Low),
                ],
            );
            out.push(Persona {
                id: rp.id.clone(),
                traits: rp.traits.clone(),
                communication_style: rp.communication_style.clone(),
                cooperativeness,
            });
        }
        out
    }
}

/// Names, in the scenario's declaration order, that the stage builder resolves against.
struct Ctx<'a> {
    keys: &'a [Key],
    actions: &'a [Action],
    outputs: &'a [Output],
    stage_ids: Vec<String>,
}

#[cfg(test)]
mod tests {
    use super::parse_predicate;
    use crate::scenario::IntSet;

    #[test]
    fn predicates() {
        assert_eq!(parse_predicate("== 0"), Some(IntSet::range(0, 0)));
        assert_eq!(parse_predicate(" >= 3 "), Some(IntSet::range(3, i64::MAX)));
        assert_eq!(parse_predicate("> 3"), Some(IntSet::range(4, i64::MAX)));
        assert_eq!(parse_predicate("< 3"), Some(IntSet::range(i64::MIN, 2)));
        assert_eq!(parse_predicate("<= 3"), Some(IntSet::range(i64::MIN, 3)));
        assert_eq!(parse_predicate("10..20"), Some(IntSet::range(10, 20)));
        assert_eq!(parse_predicate("7"), Some(IntSet::range(7, 7)));
        assert_eq!(
            parse_predicate("!= 0").map(|s| s.ranges().to_vec()),
            Some(vec![(i64::MIN, -1), (1, i64::MAX)])
        );
        assert_eq!(parse_predicate("20..10"), None);
        assert_eq!(parse_predicate("=> 3"), None);
        assert_eq!(
            parse_predicate("< -9223372036854775808"),
            Some(IntSet::empty())
        );
    }

    #[test]
    fn stages_branches_and_actions_keep_the_policy_sentences_they_cite() {
        let telecom = include_str!("../../../../../scenarios/telecom_package.yaml");
        let cited = telecom
            .replace(
                "      title: Contract penalty situation\n",
                "      title: Contract penalty situation\n      source: [\"A contracted customer pays the penalty.\"]\n",
            )
            .replace(
                "Discontent: {action: TransHuman}",
                "Discontent: {action: TransHuman, source: [\"Angry customers go to a person.\"]}",
            )
            .replace(
                "  TransHuman: ",
                "  TransHuman:\n    source: [\"Angry customers go to a person.\"]\n    description: ",
            );
        assert_ne!(cited, telecom);
        let sop = crate::sop::from_yaml(&cited, "cited.yaml").expect("a scenario");
        let sc = sop.scenario();
        let stage = &sc.stages[sc.stage_index("step5").expect("step5")];
        assert_eq!(
            stage.source,
            vec!["A contracted customer pays the penalty."]
        );
        let step7 = &sc.stages[sc.stage_index("step7").expect("step7")];
        let angry = vec!["Angry customers go to a person.".to_string()];
        assert_eq!(step7.transitions[1].source, angry);
        assert!(step7.transitions[0].source.is_empty());
        let action = sc
            .actions
            .iter()
            .find(|a| a.name == "TransHuman")
            .expect("action");
        assert_eq!(action.source, angry);
        // The plain forms cite nothing; the routes are those of the uncited scenario.
        let plain = crate::sop::from_yaml(telecom, "telecom.yaml").expect("a scenario");
        assert!(crate::sop::diff::diff(&plain, &sop).is_empty());
    }
}
