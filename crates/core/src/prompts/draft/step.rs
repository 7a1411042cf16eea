//! Drafting in steps small enough for a modest model: the keys (fields, variables, actions),
//! then the stages (each decision and what it branches on), then the routes (every stage's way
//! on, and the customers), each step's answer checked before the next is asked for; or the
//! whole scenario in one step. The draft so far ([`Draft`]) keeps the parts in file order, and
//! each step's answer is held to its part of the scenario's JSON Schema
//! ([`crate::protocol::scenario_schema`]).

use super::policy_block;
use crate::protocol::chat::{ChatMessage, ChatRole};
use crate::protocol::scenario_schema::{TOP_LEVEL, part_schema, scenario_schema};
use crate::protocol::schema::{JsonSchema, Ordered};
use crate::scenario::Scenario;
use serde::{Deserialize, Serialize};

/// The scenario every prompt shows parts of, as an example of the format.
const EXAMPLE: &str = include_str!("../../../../../scenarios/telecom_package.yaml");

/// The intents and personas of the example kept in a prompt (a small model's context is short).
const EXAMPLE_CUSTOMERS: usize = 2;

/// What one drafting step asks the model to write.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Step {
    /// The whole scenario at once (`--one-shot`).
    Whole,
    /// `id`, `name`, `domain`, `description`, `fields`, `variables`, `actions`.
    Keys,
    /// `sop`: the start and every stage with what it branches on, no way on yet.
    Stages,
    /// `sop` whole (the stages with their cases) and `user` (intents and personas).
    Routes,
}

impl Step {
    /// The steps of a stepwise draft, in order.
    pub const STEPS: [Step; 3] = [Step::Keys, Step::Stages, Step::Routes];

    /// Its name in the log (`keys`).
    pub fn name(self) -> &'static str {
        match self {
            Step::Whole => "whole",
            Step::Keys => "keys",
            Step::Stages => "stages",
            Step::Routes => "routes",
        }
    }

    /// The scenario's top-level properties this step writes.
    pub fn properties(self) -> &'static [&'static str] {
        match self {
            Step::Whole => &TOP_LEVEL,
            Step::Keys => &TOP_LEVEL[..7],
            Step::Stages => &["sop"],
            Step::Routes => &["sop", "user"],
        }
    }

    /// The JSON Schema of this step's answer.
    pub fn schema(self) -> JsonSchema {
        match self {
            Step::Whole => scenario_schema(),
            Step::Keys => part_schema("sage_scenario_keys", self.properties(), false),
            Step::Stages => part_schema("sage_scenario_stages", self.properties(), true),
            Step::Routes => part_schema("sage_scenario_routes", self.properties(), false),
        }
    }

    /// What the model is asked to write in this step.
    fn task(self) -> &'static str {
        match self {
            Step::Whole => {
                "Write the whole scenario: `id`, `name`, `domain`, `description`, `fields` (what \
                 the agent classifies from the conversation, each with `description` and \
                 `options`), `variables` (facts from the company's systems), `actions` (what the \
                 agent finally does), `sop` (a start stage and stages that branch on a field or \
                 variable with `branch_on` and `cases`, or go on with `next`, until an action) \
                 and `user` (customer intents with `implies`, and personas). Every case of a \
                 branch must be covered exactly once, every stage reachable, no loops."
            }
            Step::Keys => {
                "Step 1 of 3, the keys. Write `id` (letters, digits and `_`), `name`, `domain`, \
                 `description`; `fields`: what the agent classifies from the conversation (the \
                 customer's purpose, wishes, mood), each `Name: {description, options: [A, B]}`; \
                 `variables`: facts from the company's systems, each with `options`, or \
                 `type: integer` with `min` and `max`, or `type: boolean`; `actions`: every \
                 final thing the agent does, each `Name: {description, source}`. Nothing else \
                 yet."
            }
            Step::Stages => {
                "Step 2 of 3, the stages. Write `sop` with `start` (the first stage's id) and \
                 `stages`: every decision the policy makes, each `id: {title, branch_on, \
                 source}`, where `branch_on` is the field or variable the decision depends on (a \
                 stage that only gathers information has no `branch_on`). No `cases` or `next` \
                 yet: the ways on come in the next step."
            }
            Step::Routes => {
                "Step 3 of 3, the routes. Write the whole `sop` again: the same stages, each with \
                 its way on: `cases` mapping every option of its `branch_on` (for an integer, \
                 conditions such as \"== 0\" and \"!= 0\") to the next stage's id or to \
                 `{action: Name, source}`; a stage without `branch_on` has `next`. Every option \
                 covered exactly once, every stage reachable from `start`, no loops, every route \
                 ending in an action. Then `user`: `intents` (what customers come for: `{id, \
                 description, adversarial: zero, weak or strong, implies: {Field: Option}}`, at \
                 least one) and `personas` (`{id, traits, communication_style, cooperativeness: \
                 high, medium or low}`, at least one)."
            }
        }
    }

    /// The system prompt of this step: the task, the citation rule and the example's part.
    pub fn system(self) -> String {
        let example = Draft::from_yaml(EXAMPLE).map(|d| d.example(self).yaml());
        format!(
            "You turn a customer-service policy into a SAGE-RS scenario (YAML; JSON is YAML too). \
             {} Cite the policy: each stage, each case target written as a map and each action \
             written as a map has a `source` list holding the policy sentences it comes from, \
             copied exactly. Answer with the YAML only. This part of an example scenario shows \
             the format:\n\n```yaml\n{}```\n",
            self.task(),
            example.unwrap_or_default()
        )
    }

    /// The request of a round: the policy, the draft so far (after the first step), and, when
    /// the last answer was rejected, that answer with the validator's messages.
    pub fn messages(
        self,
        sentences: &[String],
        so_far: &Draft,
        rejected: Option<(&str, &[String])>,
    ) -> Vec<ChatMessage> {
        let mut user = policy_block(sentences);
        if !so_far.0.is_empty() {
            user.push_str("\nThe scenario so far:\n```yaml\n");
            user.push_str(&so_far.yaml());
            user.push_str("```\n");
        }
        match rejected {
            None => user.push_str(&format!("\n{}\n", self.task())),
            Some((answer, errors)) => {
                user.push_str("\nYour last answer:\n```yaml\n");
                user.push_str(answer);
                user.push_str("\n```\n\nThe scenario validator rejected it:\n");
                for e in errors {
                    user.push_str("- ");
                    user.push_str(e);
                    user.push('\n');
                }
                user.push_str(&format!(
                    "\n{}\nFix every problem above and answer with the corrected YAML only.\n",
                    self.task()
                ));
            }
        }
        vec![
            ChatMessage::new(ChatRole::System, self.system()),
            ChatMessage::new(ChatRole::User, user),
        ]
    }
}

/// The scenario drafted so far: its top-level properties in file order.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Draft(pub Vec<(String, Ordered)>);

impl Draft {
    /// A draft read from YAML (or JSON) text; the message when it is no map.
    pub fn from_yaml(text: &str) -> Result<Draft, String> {
        match crate::scenario::parse_yaml::<Ordered>(text, "the answer") {
            Ok(Ordered::Obj(pairs)) => Ok(Draft(pairs)),
            Ok(_) => Err("the answer is no YAML map; expected `name: value` lines".into()),
            Err(e) => Err(e
                .problems
                .first()
                .map_or_else(|| e.to_string(), |p| format!("the answer's YAML: {p}"))),
        }
    }

    /// The draft as YAML, parts in file order.
    pub fn yaml(&self) -> String {
        let ordered: Vec<&(String, Ordered)> = TOP_LEVEL
            .iter()
            .filter_map(|k| self.0.iter().find(|(name, _)| name == k))
            .collect();
        let map = Ordered::Obj(ordered.into_iter().cloned().collect());
        serde_saphyr::to_string(&map).unwrap_or_default()
    }

    fn get(&self, key: &str) -> Option<&Ordered> {
        self.0.iter().find(|(k, _)| k == key).map(|(_, v)| v)
    }

    /// This draft with `step`'s parts taken from `answer` (the others are ignored), or the
    /// parts the answer lacks.
    pub fn with(&self, step: Step, answer: &Draft) -> Result<Draft, Vec<String>> {
        let mut out = self.clone();
        let mut missing = Vec::new();
        for key in step.properties() {
            match answer.get(key) {
                Some(v) => {
                    out.0.retain(|(k, _)| k != key);
                    out.0.push((key.to_string(), v.clone()));
                }
                None if matches!(step, Step::Whole) => {}
                None => missing.push(format!(
                    "the answer has no `{key}`; expected {}",
                    step.properties()
                        .iter()
                        .map(|p| format!("`{p}`"))
                        .collect::<Vec<_>>()
                        .join(", ")
                )),
            }
        }
        if missing.is_empty() {
            Ok(out)
        } else {
            Err(missing)
        }
    }

    /// The validator's messages on this draft after `step` (`file` labels them): for the keys,
    /// the scenario with a one-stage stand-in SOP; for the stages, the outline with every stage
    /// going straight to an action, and each `branch_on` a declared field or variable; for the
    /// routes and the whole, the scenario itself, compiled.
    pub fn check(&self, step: Step, file: &str) -> Vec<String> {
        let problems = |r: Result<(), crate::scenario::ScenarioError>| match r {
            Ok(()) => Vec::new(),
            Err(e) => e.problems.iter().map(|p| format!("{file}: {p}")).collect(),
        };
        match step {
            Step::Whole | Step::Routes => {
                problems(crate::sop::from_yaml(&self.yaml(), file).map(|_| ()))
            }
            Step::Keys | Step::Stages => {
                let Some(action) = self.first_action() else {
                    return vec![format!(
                        "{file}: actions: none declared; expected at least one action"
                    )];
                };
                let mut stand_in = self.clone();
                let outline = match step {
                    Step::Keys => None,
                    _ => stand_in.get("sop").cloned(),
                };
                stand_in.0.retain(|(k, _)| k != "sop");
                stand_in
                    .0
                    .push(("sop".into(), stand_in_sop(outline.as_ref(), &action)));
                let mut out = problems(Scenario::from_yaml(&stand_in.yaml(), file).map(|_| ()));
                if let Some(outline) = &outline {
                    out.extend(self.unknown_branches(outline, file));
                }
                out
            }
        }
    }

    fn first_action(&self) -> Option<String> {
        match self.get("actions") {
            Some(Ordered::Obj(actions)) => actions.first().map(|(name, _)| name.clone()),
            _ => None,
        }
    }

    /// The names of the declared fields and variables.
    fn keys(&self) -> Vec<String> {
        ["fields", "variables"]
            .iter()
            .filter_map(|k| match self.get(k) {
                Some(Ordered::Obj(keys)) => Some(keys.iter().map(|(n, _)| n.clone())),
                _ => None,
            })
            .flatten()
            .collect()
    }

    /// A message for every stage of `outline` that branches on no declared key.
    fn unknown_branches(&self, outline: &Ordered, file: &str) -> Vec<String> {
        let keys = self.keys();
        let Some(Ordered::Obj(stages)) = outline.get("stages") else {
            return Vec::new();
        };
        stages
            .iter()
            .filter_map(|(id, stage)| match stage.get("branch_on") {
                Some(Ordered::Str(on)) if !keys.contains(on) => Some(format!(
                    "{file}: sop.stages.{id}.branch_on: `{on}` is no field or variable; expected \
                     one of: {}",
                    keys.join(", ")
                )),
                _ => None,
            })
            .collect()
    }

    /// The example's part for `step`: its properties, the stages outlined for the stages step,
    /// and only the first intents and personas.
    fn example(&self, step: Step) -> Draft {
        let mut out = Draft(
            self.0
                .iter()
                .filter(|(k, _)| step.properties().contains(&k.as_str()))
                .cloned()
                .collect(),
        );
        for (key, value) in &mut out.0 {
            match (key.as_str(), step) {
                ("sop", Step::Stages) => *value = outline(value),
                ("user", _) => *value = first_customers(value),
                _ => {}
            }
        }
        out
    }
}

/// A stand-in SOP: the outline's stages (or one stage) each going straight to `action`.
fn stand_in_sop(outline: Option<&Ordered>, action: &str) -> Ordered {
    let to_action = Ordered::Obj(vec![("action".into(), Ordered::Str(action.into()))]);
    let stage = |title: Ordered| {
        Ordered::Obj(vec![
            ("title".into(), title),
            ("next".into(), to_action.clone()),
        ])
    };
    let stand_in = || {
        Ordered::Obj(vec![
            ("start".into(), Ordered::Str("draft_stand_in".into())),
            (
                "stages".into(),
                Ordered::Obj(vec![(
                    "draft_stand_in".into(),
                    stage(Ordered::Str("stand-in".into())),
                )]),
            ),
        ])
    };
    let Some(Ordered::Obj(sop)) = outline else {
        return stand_in();
    };
    let sop = sop
        .iter()
        .map(|(k, v)| match (k.as_str(), v) {
            ("stages", Ordered::Obj(stages)) => {
                let stages = stages
                    .iter()
                    .map(|(id, st)| {
                        let title = st.get("title").cloned().unwrap_or(Ordered::Null);
                        (id.clone(), stage(title))
                    })
                    .collect();
                (k.clone(), Ordered::Obj(stages))
            }
            _ => (k.clone(), v.clone()),
        })
        .collect();
    Ordered::Obj(sop)
}

/// `sop` with each stage's way on (`next`, `cases`, `rules`) left out.
fn outline(sop: &Ordered) -> Ordered {
    let strip = |stage: &Ordered| match stage {
        Ordered::Obj(pairs) => Ordered::Obj(
            pairs
                .iter()
                .filter(|(k, _)| !matches!(k.as_str(), "next" | "cases" | "rules"))
                .cloned()
                .collect(),
        ),
        other => other.clone(),
    };
    map_entry(sop, "stages", |stages| match stages {
        Ordered::Obj(s) => Ordered::Obj(s.iter().map(|(id, st)| (id.clone(), strip(st))).collect()),
        other => other.clone(),
    })
}

/// `user` with only its first intents and personas.
fn first_customers(user: &Ordered) -> Ordered {
    let first = |list: &Ordered| match list {
        Ordered::Arr(items) => {
            Ordered::Arr(items.iter().take(EXAMPLE_CUSTOMERS).cloned().collect())
        }
        other => other.clone(),
    };
    map_entry(&map_entry(user, "intents", first), "personas", first)
}

/// `map` with the value under `key` replaced by `f` of it.
fn map_entry(map: &Ordered, key: &str, f: impl Fn(&Ordered) -> Ordered) -> Ordered {
    match map {
        Ordered::Obj(pairs) => Ordered::Obj(
            pairs
                .iter()
                .map(|(k, v)| (k.clone(), if k == key { f(v) } else { v.clone() }))
                .collect(),
        ),
        other => other.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SHOP: &str = "id: shop\nname: Shop\ndomain: shop\ndescription: refunds\nfields:\n  Intent: {description: what, options: [Refund, Other]}\nvariables: {}\nactions:\n  RefundOrder: {description: refund, source: [\"Refund orders.\"]}\n  Handoff: hand over\n";

    #[test]
    fn the_keys_are_checked_with_a_stand_in_sop() {
        let keys = Draft::default()
            .with(Step::Keys, &Draft::from_yaml(SHOP).expect("yaml"))
            .expect("every key");
        assert_eq!(keys.check(Step::Keys, "d.yaml"), Vec::<String>::new());
        let bad = SHOP.replace("options: [Refund, Other]", "options: []");
        let bad = Draft::default()
            .with(Step::Keys, &Draft::from_yaml(&bad).expect("yaml"))
            .expect("every key");
        let errors = bad.check(Step::Keys, "d.yaml");
        assert_eq!(errors.len(), 1, "{errors:?}");
        assert!(errors[0].starts_with("d.yaml: fields.Intent"), "{errors:?}");
    }

    #[test]
    fn an_answer_without_its_parts_is_refused_naming_them() {
        let answer = Draft::from_yaml("id: shop\nname: Shop\n").expect("yaml");
        let missing = Draft::default().with(Step::Keys, &answer).unwrap_err();
        assert_eq!(missing.len(), 5, "{missing:?}");
        assert!(missing[0].starts_with("the answer has no `domain`; expected `id`, `name`"));
        assert!(Draft::from_yaml("- a\n- b\n").is_err());
    }

    #[test]
    fn a_stage_outline_must_branch_on_declared_keys() {
        let keys = Draft::from_yaml(SHOP).expect("yaml");
        let stages = Draft::from_yaml(
            "sop:\n  start: ask\n  stages:\n    ask: {title: Ask, branch_on: Intent, source: []}\n    mood: {title: Mood, branch_on: Emotion, source: []}\n",
        )
        .expect("yaml");
        let draft = keys.with(Step::Stages, &stages).expect("sop");
        assert_eq!(
            draft.check(Step::Stages, "d.yaml"),
            vec![
                "d.yaml: sop.stages.mood.branch_on: `Emotion` is no field or variable; expected one of: Intent"
            ]
        );
        let wrong_start = Draft::from_yaml(
            "sop:\n  start: nowhere\n  stages:\n    ask: {title: Ask, branch_on: Intent, source: []}\n",
        )
        .expect("yaml");
        let errors = keys
            .with(Step::Stages, &wrong_start)
            .expect("sop")
            .check(Step::Stages, "d.yaml");
        assert!(errors.iter().any(|e| e.contains("nowhere")), "{errors:?}");
    }

    #[test]
    fn every_step_prompt_shows_only_its_part_of_the_example() {
        let keys = Step::Keys.system();
        assert!(keys.contains("ConsumptionType") && !keys.contains("branch_on: "));
        let stages = Step::Stages.system();
        assert!(stages.contains("branch_on: ConsumptionType"), "{stages}");
        assert!(
            !stages.contains("cases:") && !stages.contains("fields:"),
            "{stages}"
        );
        let routes = Step::Routes.system();
        assert!(routes.contains("cases:") && routes.contains("personas:"));
        assert!(routes.contains("enquiry_voice_agree") && !routes.contains("enquiry_hesitate"));
        // The draft written back keeps the file order whatever order the steps came in.
        let d = Draft(vec![
            ("sop".into(), Ordered::Null),
            ("id".into(), Ordered::Str("x".into())),
        ]);
        assert!(d.yaml().starts_with("id: x\n"), "{}", d.yaml());
    }
}
