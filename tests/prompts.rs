//! The prompts rendered from every bundled scenario: the agent prompt carries the whole SOP
//! graph (every stage, field, option, action, output and jump, derived here from the compiled
//! graph, not from hand-written strings); the user prompt carries only its own case; the judge
//! prompt carries the rubric and never the agent's reasoning.

mod common;

use common::{SCENARIOS, load};
use sage::llm::{ChatMessage, ChatRole};
use sage::prompts::{
    DIMENSIONS, agent_messages, agent_system_prompt, agent_system_prompt_split, judge_messages,
    judge_system_prompt, judge_system_prompt_split, system_information, user_messages,
    user_system_prompt,
};
use sage::protocol::{DialogueJob, Line, Speaker};
use sage::scenario::{Adversarial, Value};
use sage::sop::{Assignment, Node, Sop};

/// A job of `sop` for intent `intent` and persona `persona`, with the values of its first route.
fn job(sop: &Sop, intent: usize, persona: usize) -> DialogueJob {
    let sc = sop.scenario();
    let case = &sop.routes()[0];
    DialogueJob {
        run_id: "run".into(),
        dialogue_id: format!("{}/0000/sim/r0", sc.id),
        scenario: sc.id.clone(),
        target: case.route.clone(),
        fields: case.fields.clone(),
        variables: case.variables.clone(),
        intent: sc.intents[intent].id.clone(),
        persona: sc.personas[persona].id.clone(),
        adversarial: sc.intents[intent].adversarial,
        service_model: "agent".into(),
        user_model: "user".into(),
        user_model_index: 0,
        judge_models: vec!["j1".into(), "j2".into(), "j3".into()],
        judge_turns: sage::protocol::JudgeTurns::Every,
        max_turns: 10,
        seed: 7,
        repeat: 0,
    }
}

/// Telecom's change-with-penalty case: Change, Contracted, Penalty 200, Discontent.
fn telecom_job(sop: &Sop) -> DialogueJob {
    let sc = sop.scenario();
    let intent = sc
        .intents
        .iter()
        .position(|i| i.id == "change_with_penalty_discontent")
        .unwrap();
    let mut job = job(sop, intent, 3);
    job.fields = assignment(&[
        ("ConsumptionType", s("Change")),
        ("ApplicationTendency", s("Agree")),
        ("ConsumptionProfile", s("Data")),
        ("EmotionTag", s("Discontent")),
    ]);
    job.variables = assignment(&[
        ("PackageStatus", s("Contracted")),
        ("Penalty", Value::Int(200)),
    ]);
    job.adversarial = Adversarial::Strong;
    job
}

fn s(x: &str) -> Value {
    Value::Str(x.into())
}

fn assignment(pairs: &[(&str, Value)]) -> Assignment {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.clone()))
        .collect()
}

fn history() -> Vec<Line> {
    vec![
        Line {
            speaker: Speaker::User,
            text: "I want to change my plan".into(),
        },
        Line {
            speaker: Speaker::Agent,
            text: "Sure, which plan would you like?".into(),
        },
    ]
}

/// The block of the [SOP Flow] section that describes stage `i` (from its numbered heading to
/// the next one).
fn stage_block<'a>(prompt: &'a str, sop: &Sop, i: usize) -> &'a str {
    let stages = &sop.scenario().stages;
    let heading = |j: usize| format!("{}. {} ({})", j + 1, stages[j].title, stages[j].id);
    let start = prompt
        .find(&heading(i))
        .unwrap_or_else(|| panic!("no heading for {}", stages[i].id));
    let end = if i + 1 < stages.len() {
        prompt.find(&heading(i + 1)).expect("next heading")
    } else {
        prompt
            .find("[Action Descriptions]")
            .expect("actions section")
    };
    &prompt[start..end]
}

#[test]
fn agent_prompt_carries_the_whole_graph_of_every_scenario() {
    for id in SCENARIOS {
        let sop = load(id);
        let sc = sop.scenario();
        let variables = sop.routes()[0].variables.clone();
        let prompt = agent_system_prompt(&sop, &variables);
        assert!(prompt.contains(&sc.domain), "{id}: domain");
        for stage in &sc.stages {
            assert!(
                prompt.contains(&format!("({})", stage.id)),
                "{id}: {}",
                stage.id
            );
        }
        for field in sc.fields() {
            let line = prompt
                .lines()
                .find(|l| l.trim_start().starts_with(&format!("- {}:", field.name)))
                .unwrap_or_else(|| panic!("{id}: no line for field {}", field.name));
            for option in field.options() {
                assert!(
                    line.contains(&option),
                    "{id}: {} lacks {option}",
                    field.name
                );
            }
            assert!(
                prompt.contains(&format!("\"{}\":", field.name)),
                "{id}: {} not in the JSON template",
                field.name
            );
        }
        for key in sc.variables() {
            let current = variables[&key.name].to_string();
            assert!(
                current_values(&prompt).contains(&format!("- {}: {current}\n", key.name)),
                "{id}: {} value",
                key.name
            );
        }
        for action in &sc.actions {
            assert!(
                prompt.contains(&format!("- {}: {}", action.name, action.description)),
                "{id}: action {}",
                action.name
            );
            assert!(
                prompt.contains(&format!("\"{}\"", action.name)),
                "{id}: finals"
            );
        }
        for output in &sc.outputs {
            assert!(
                prompt.contains(&format!("\"{}\":", output.name)),
                "{id}: output"
            );
            for option in &output.options {
                assert!(prompt.contains(option.as_str()), "{id}: {option}");
            }
        }
        let start = &sc.stages[sc.start].id;
        assert!(prompt.contains(&format!("must start from \"{start}\"")));
        for i in 0..sc.stages.len() {
            let block = stage_block(&prompt, &sop, i);
            for (edge, to) in sop.transitions(i) {
                let target = match to {
                    Node::Stage(t) => format!("→{}", sc.stages[t].id),
                    Node::Action(a) => format!("→ACTION={}→END", sc.actions[a].name),
                    Node::Start => unreachable!(),
                };
                let line = block
                    .lines()
                    .find(|l| l.contains(&edge.label) && l.ends_with(&target))
                    .or_else(|| block.lines().find(|l| l.ends_with(&target)))
                    .unwrap_or_else(|| panic!("{id}: {} misses {target}", sc.stages[i].id));
                for (o, value) in &edge.set {
                    let set = format!("set {}={value}", sc.outputs[*o].name);
                    assert!(
                        block.contains(&format!("{set}{target}")),
                        "{id}: {set} in {line}"
                    );
                }
            }
            let edges = sop.transitions(i).count();
            let jumps = block.lines().filter(|l| l.contains('→')).count();
            assert_eq!(
                jumps, edges,
                "{id}: one jump line per edge of {}",
                sc.stages[i].id
            );
        }
    }
}

#[test]
fn telecom_agent_prompt_reads_like_the_paper() {
    let sop = load("telecom_package");
    let job = telecom_job(&sop);
    let prompt = agent_system_prompt(&sop, &system_information(&sop, &job));
    for expected in [
        "handling telecom package subscriptions",
        "2. User consumption intent judgment (step2)",
        "based on the value of the field [ConsumptionType]",
        "- Enquiry→step3",
        "- Change→step4",
        "based on the value of the system variable [PackageStatus]",
        "- NoContract→ACTION=ChangeOrder→END",
        "- Penalty == 0→ACTION=ChangeOrder→END",
        "- Penalty != 0→step7",
        "- Discontent→ACTION=TransHuman→END",
        "- always→step2",
        "- ConsumptionType: the user's purpose in this dialogue (Enquiry/Change/Cancel)",
        "- PackageStatus: whether the user's current package is under contract \
         (Contracted/NoContract)\n",
        "[Current System Information]\n- PackageStatus: Contracted\n- Penalty: 200\n",
        "\"ConsumptionType\": \"Enquiry\"/\"Change\"/\"Cancel\"",
        "\"Action\": \"ChangeOrder\"/\"GoodBye\"/\"TransHuman\"",
        "\"now_path\": [\"step1\", ...]",
        "limited to 40 words",
        "one and only one pair of curly braces",
    ] {
        assert!(
            prompt.contains(expected),
            "missing {expected:?} in\n{prompt}"
        );
    }
}

#[test]
fn online_education_prompt_sets_plan_and_shows_context() {
    let sop = load("online_education");
    let sc = sop.scenario();
    let intent = sc
        .intents
        .iter()
        .position(|i| i.id == "seek_answer")
        .unwrap();
    let job = job(&sop, intent, 0);
    let prompt = agent_system_prompt(&sop, &system_information(&sop, &job));
    for expected in [
        "QuestionRelevance=true, ResolveDependency=HighDependency→set PLAN=PLAN_A→step7",
        "the combination of the field [QuestionRelevance] and the field [ResolveDependency]",
        "- false→ACTION=PLAN→END",
        "based on the value of the system variable [isRiskUser]",
        "\"DescriptionClear\": true/false",
        "\"PLAN\": \"PLAN_A\"/\"PLAN_B\"/\"PLAN_C\"/\"PLAN_D\"/\"PLAN_E\"/\"PLAN_F\"/\"none\"",
        "with Action, and PLAN when the Action is PLAN",
        "[Other System Information]\n- CourseList: Python for Beginners, Web Development, Data Analysis",
    ] {
        assert!(
            prompt.contains(expected),
            "missing {expected:?} in\n{prompt}"
        );
    }
}

/// The last section of a system prompt, the job's values ([Current System Information]).
fn current_values(prompt: &str) -> &str {
    let (_, values) = prompt
        .split_once("\n[Current System Information]\n")
        .expect("a [Current System Information] section");
    assert!(!values.contains("\n\n["), "the job's values come last");
    values
}

/// Laid out for a provider's prefix cache: the agent's and the judges' system prompts of two
/// dialogues of a scenario differ only in their last section (the job's values), which is a
/// small part of them; and every turn of a dialogue sends the previous turn's messages again,
/// unchanged, as its start (the system prompt, then the history it grew), for the agent and
/// the customer alike.
#[test]
fn prompts_keep_the_stable_part_first() {
    for id in SCENARIOS {
        let sop = load(id);
        let (a, b) = (job(&sop, 0, 0), job(&sop, 1, 1));
        for (role, pa, pb, split) in [
            (
                "agent",
                agent_system_prompt(&sop, &system_information(&sop, &a)),
                agent_system_prompt(&sop, &system_information(&sop, &b)),
                agent_system_prompt_split(&sop, &system_information(&sop, &a)),
            ),
            (
                "judge",
                judge_system_prompt(&sop, &a),
                judge_system_prompt(&sop, &b),
                judge_system_prompt_split(&sop, &a),
            ),
        ] {
            let shared = pa.len() - current_values(&pa).len();
            assert_eq!(pa[..shared], pb[..shared], "{id} {role}: the stable start");
            // The boundary the roles carry in the request (the cache breakpoint) is that start,
            // before the section's heading.
            let heading = "[Current System Information]\n".len();
            assert_eq!(
                (split.text.as_str(), split.shared),
                (pa.as_str(), shared - heading)
            );
            assert!(
                shared * 10 >= pa.len() * 8,
                "{id} {role}: the stable start is {shared} of {} bytes",
                pa.len()
            );
        }
        let system: std::sync::Arc<str> =
            agent_system_prompt(&sop, &system_information(&sop, &a)).into();
        // Three exchanges: the customer's line t, then the agent's answer.
        let lines: Vec<Line> = (1..=3)
            .flat_map(|t| {
                [
                    Line {
                        speaker: Speaker::User,
                        text: format!("customer line {t}"),
                    },
                    Line {
                        speaker: Speaker::Agent,
                        text: format!("agent answer {t}"),
                    },
                ]
            })
            .collect();
        let customer: std::sync::Arc<str> = user_system_prompt(&sop, &a).into();
        for turn in 1..=2 {
            // Turn t: the history before the customer's line t, then that line.
            let at = |t: usize| {
                agent_messages(
                    system.clone(),
                    &lines[..2 * (t - 1)],
                    &lines[2 * (t - 1)].text,
                )
            };
            let (earlier, later) = (at(turn), at(turn + 1));
            assert!(later.len() > earlier.len());
            assert_eq!(
                earlier[..],
                later[..earlier.len()],
                "{id}: agent turn {turn}"
            );
            let asks = |t: usize| user_messages(customer.clone(), &lines[..2 * (t - 1)]);
            let (earlier, later) = (asks(turn), asks(turn + 1));
            assert!(later.len() > earlier.len());
            assert_eq!(
                earlier[..],
                later[..earlier.len()],
                "{id}: customer turn {turn}"
            );
        }
    }
}

fn roles(messages: &[ChatMessage]) -> Vec<ChatRole> {
    messages.iter().map(|m| m.role).collect()
}

#[test]
fn agent_messages_alternate_and_end_with_the_user_message() {
    let sop = load("telecom_package");
    let job = telecom_job(&sop);
    let messages = agent_messages(
        agent_system_prompt(&sop, &job.variables).into(),
        &history(),
        "It costs too much!",
    );
    use ChatRole::*;
    assert_eq!(roles(&messages), [System, User, Assistant, User]);
    assert_eq!(&*messages[1].content, "I want to change my plan");
    assert_eq!(&*messages[2].content, "Sure, which plan would you like?");
    assert_eq!(&*messages[3].content, "It costs too much!");
    let first = agent_messages(
        agent_system_prompt(&sop, &job.variables).into(),
        &[],
        "Hello",
    );
    assert_eq!(roles(&first), [System, User]);
}

#[test]
fn user_prompt_holds_only_its_own_case() {
    for id in SCENARIOS {
        let sop = load(id);
        let sc = sop.scenario();
        for (i, intent) in sc.intents.iter().enumerate() {
            let persona = &sc.personas[i % sc.personas.len()];
            let job = job(&sop, i, i % sc.personas.len());
            let prompt = user_system_prompt(&sop, &job);
            assert!(prompt.contains(&intent.description), "{id}/{}", intent.id);
            for fact in &intent.facts {
                assert!(prompt.contains(fact.as_str()), "{id}/{}: {fact}", intent.id);
            }
            let own = |f: &String| intent.facts.iter().any(|mine| mine.contains(f.as_str()));
            for other in sc.intents.iter().filter(|o| o.id != intent.id) {
                for fact in other.facts.iter().filter(|f| !own(f)) {
                    assert!(
                        !prompt.contains(fact.as_str()),
                        "{id}/{}: {fact}",
                        intent.id
                    );
                }
            }
            for t in &persona.traits {
                assert!(prompt.contains(t.as_str()), "{id}: trait {t}");
            }
            assert!(prompt.contains(&persona.communication_style));
            let words: Vec<&str> = prompt
                .split(|c: char| !(c.is_alphanumeric() || c == '_'))
                .collect();
            for stage in &sc.stages {
                assert!(!words.contains(&stage.id.as_str()), "{id}: {}", stage.id);
            }
            assert!(!prompt.contains("now_path") && !prompt.contains("ACTION="));
            assert!(prompt.contains("[END]"));
        }
    }
}

#[test]
fn telecom_user_prompt_states_the_customers_situation() {
    let sop = load("telecom_package");
    let prompt = user_system_prompt(&sop, &telecom_job(&sop));
    for expected in [
        "Adversarial level: strong",
        "early-termination penalty the user owes (0 when none): 200",
        "whether the user's current package is under contract: Contracted",
        "the user's emotion in the dialogue: Discontent",
        "nobody explained the penalty when I signed",
        "Your cooperativeness: low",
        "reply with exactly [END] and nothing else",
    ] {
        assert!(
            prompt.contains(expected),
            "missing {expected:?} in\n{prompt}"
        );
    }
}

#[test]
fn user_messages_see_the_agent_as_the_user() {
    let sop = load("telecom_package");
    let job = telecom_job(&sop);
    use ChatRole::*;
    let opening = user_messages(user_system_prompt(&sop, &job).into(), &[]);
    assert_eq!(roles(&opening), [System, User]);
    let messages = user_messages(user_system_prompt(&sop, &job).into(), &history());
    assert_eq!(roles(&messages), [System, User, Assistant, User]);
    assert_eq!(&*messages[2].content, "I want to change my plan");
    assert_eq!(&*messages[3].content, "Sure, which plan would you like?");
    let unanswered = user_messages(user_system_prompt(&sop, &job).into(), &history()[..1]);
    assert_eq!(roles(&unanswered), [System, User, Assistant, User]);
}

#[test]
fn judge_prompt_has_the_rubric_and_every_field() {
    for id in SCENARIOS {
        let sop = load(id);
        let sc = sop.scenario();
        let job = job(&sop, 0, 0);
        let prompt = judge_system_prompt(&sop, &job);
        for (d, weight) in DIMENSIONS.iter().zip([20, 25, 25, 15, 15]) {
            assert!(
                prompt.contains(&format!("{} (Weight: {weight}%)", d.name)),
                "{id}"
            );
            assert!(
                prompt.contains(&format!("\"{}\": 3 or 6 or 9", d.key)),
                "{id}"
            );
        }
        for points in ["- 9 points:", "- 6 points:", "- 3 points:"] {
            assert_eq!(prompt.matches(points).count(), 5, "{id}: {points}");
        }
        for field in sc.fields() {
            let line = prompt
                .lines()
                .find(|l| l.starts_with(&format!("- {}:", field.name)))
                .unwrap_or_else(|| panic!("{id}: {}", field.name));
            for option in field.options() {
                assert!(
                    line.contains(&option),
                    "{id}: {} lacks {option}",
                    field.name
                );
            }
        }
        for key in sc.variables() {
            let current = job.variables[&key.name].to_string();
            assert!(prompt.contains(&format!("- {}: ", key.name)), "{id}");
            assert!(
                current_values(&prompt).contains(&format!("- {}: {current}\n", key.name)),
                "{id}"
            );
        }
        for stage in &sc.stages {
            assert!(!prompt.contains(&format!("({})", stage.id)), "{id}: no SOP");
        }
    }
}

#[test]
fn judge_messages_show_the_chat_only() {
    let sop = load("telecom_package");
    let job = telecom_job(&sop);
    let cot = "The user wants Change so step2 goes to step4";
    let chat = "I understand your frustration; let me transfer you to a colleague.";
    let messages = judge_messages(
        judge_system_prompt(&sop, &job).into(),
        &history(),
        "This is outrageous!",
        chat,
    );
    assert_eq!(roles(&messages), [ChatRole::System, ChatRole::User]);
    let user = &messages[1].content;
    assert!(user.contains("User: I want to change my plan"));
    assert!(user.contains("Agent: Sure, which plan would you like?"));
    assert!(user.contains("This is outrageous!"));
    assert!(user.contains(chat));
    for m in &messages {
        assert!(!m.content.contains(cot) && !m.content.contains("now_path"));
    }
}

/// Renders the Telecom prompts for docs/prompts.md:
/// `cargo test --test prompts -- --ignored --nocapture render_telecom`.
#[test]
#[ignore]
fn render_telecom() {
    let sop = load("telecom_package");
    let job = telecom_job(&sop);
    println!(
        "{}",
        agent_system_prompt(&sop, &system_information(&sop, &job))
    );
    println!("=====\n{}", user_system_prompt(&sop, &job));
    println!("=====\n{}", judge_system_prompt(&sop, &job));
}
