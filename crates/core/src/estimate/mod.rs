//! What a run will do, counted before it does it (`sage run --plan`, docs/cli.md): the
//! dialogues per scenario and model under test and why there are that many, the model calls per
//! role, the tokens they are expected to take and what they cost at the configured prices. Pure:
//! the prompts are rendered from the scenarios as the roles render them, no model is called.
//!
//! * Dialogues: exact, from the run's own case plan ([`super::Plan`]).
//! * Calls: *at most* is a bound (every dialogue plays `max_turns` turns, every call answered at
//!   its first attempt); *expected* is an estimate ([`END_CHANCE`]).
//! * Tokens: estimates ([`LINE_CHARS`], [`CHARS_PER_TOKEN`]); cost: the tokens at each model's
//!   price.
//!
//! It sits above [`crate::plan`], [`crate::prompts`] and [`crate::scoring`] (it counts the plan,
//! renders the prompts and prints with the leaderboard's tables); the support desk's in [`desk`].

pub mod desk;

use crate::plan::RunConfig;
use crate::plan::model::{ModelConfig, Price, Provider};
use crate::prompts;
use crate::protocol::rubric::DIMENSIONS;
use crate::protocol::{DialogueJob, JudgeTurns, Line, Speaker};
use crate::scenario::Adversarial;
use crate::scoring::leaderboard::{TERMINAL_WIDTH, Table, model_label, wrap};
use crate::sop::Sop;
use serde::Serialize;
use std::fmt::Write;
use std::sync::Arc;

/// Characters a token is taken to be: the estimate of a request's input tokens the provider
/// limits are held with, the token counts the simulated models record, and the plan's.
pub const CHARS_PER_TOKEN: usize = 4;

/// Tokens of `chars` characters of text, at [`CHARS_PER_TOKEN`].
pub fn tokens(chars: usize) -> u64 {
    (chars / CHARS_PER_TOKEN) as u64
}

/// Characters of a line of dialogue (the customer's message, the agent's chat reply) in the
/// estimates: the plan's, and the prompt a simulated model is taken to read.
pub const LINE_CHARS: usize = 150;

/// The system prompt a simulated model is taken to read, in characters: the roles send it none
/// (it plays from the job), and its calls record the tokens of [`simulated_input_chars`].
pub const SIMULATED_PROMPT_CHARS: usize = 4_000;

/// The input, in characters, a simulated model's call at `turn` records: its prompt taken as
/// [`SIMULATED_PROMPT_CHARS`] and two lines of [`LINE_CHARS`] a turn.
pub fn simulated_input_chars(turn: u32) -> usize {
    SIMULATED_PROMPT_CHARS + 2 * LINE_CHARS * turn as usize
}

/// The chance, after each agent turn, that the customer ends the dialogue, in the expected
/// figures: 7% gives 9.8 turns per dialogue at `max_turns` 16, as the default simulated run plays
/// (10,688 turns in 1,092 dialogues, docs/benchmarks.md). Real customers and agents differ.
pub const END_CHANCE: f64 = 0.07;

/// A figure of the plan: the most it can be, and what it is expected to be.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct Bound {
    /// At most (for calls, a bound; tokens and cost at that many calls are estimates).
    pub at_most: f64,
    /// Expected (an estimate).
    pub expected: f64,
}

impl Bound {
    fn scaled(self, k: f64) -> Bound {
        Bound {
            at_most: self.at_most * k,
            expected: self.expected * k,
        }
    }
}

impl std::ops::AddAssign for Bound {
    fn add_assign(&mut self, other: Bound) {
        self.at_most += other.at_most;
        self.expected += other.expected;
    }
}

/// Model calls, their tokens and their cost.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct Spend {
    /// Calls.
    pub calls: Bound,
    /// Input (prompt) tokens.
    pub input_tokens: Bound,
    /// Output (completion) tokens.
    pub output_tokens: Bound,
    /// US dollars, at the models' prices.
    pub cost_usd: Bound,
}

impl Spend {
    fn scaled(self, k: f64) -> Spend {
        Spend {
            calls: self.calls.scaled(k),
            input_tokens: self.input_tokens.scaled(k),
            output_tokens: self.output_tokens.scaled(k),
            cost_usd: self.cost_usd.scaled(k),
        }
    }
}

impl std::ops::AddAssign for Spend {
    fn add_assign(&mut self, other: Spend) {
        self.calls += other.calls;
        self.input_tokens += other.input_tokens;
        self.output_tokens += other.output_tokens;
        self.cost_usd += other.cost_usd;
    }
}

/// The cases and dialogues of one scenario.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ScenarioEstimate {
    /// The scenario id.
    pub id: String,
    /// Routes of its SOP.
    pub routes: usize,
    /// Intent-balanced cases `dialogues_per_scenario` asked for.
    pub asked: usize,
    /// Cases `min_per_route` added for routes the asked ones cover less often.
    pub added: usize,
    /// Cases left out because `adversarial_levels` does not list their intent's level.
    pub left_out: usize,
    /// Cases played: asked + added - left out.
    pub cases: usize,
    /// Cases played at each adversarial level (zero, weak, strong): a case plays at its
    /// intent's level, so the levels share the cases rather than multiply them.
    pub levels: [usize; 3],
    /// Dialogues: cases x repeats x models under test.
    pub dialogues: usize,
}

/// One role's calls over the whole run.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RoleEstimate {
    /// `agent`, `customer` or `judges`.
    pub role: String,
    /// The models playing it.
    pub models: Vec<String>,
    /// Its calls, tokens and cost.
    pub spend: Spend,
}

/// The dialogues of one model under test.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ModelEstimate {
    /// Its name.
    pub model: String,
    /// Whether it is a built-in simulated model.
    pub simulated: bool,
    /// Its dialogues (every case, every repeat).
    pub dialogues: usize,
    /// Its own calls as the agent.
    pub agent: Spend,
    /// Every call of its dialogues: its own, the customer's and the judges' (what its cost budget
    /// counts).
    pub all: Spend,
}

/// Model calls per dialogue, per role.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct PerDialogue {
    /// Agent turns played.
    pub turns: Bound,
    /// Turns the judges score.
    pub judged_turns: Bound,
    /// The agent's calls (one a turn).
    pub agent: Bound,
    /// The customer's calls (one a turn, and one more that ends the dialogue before
    /// `max_turns`).
    pub customer: Bound,
    /// The judges' calls (each judge, each judged turn).
    pub judges: Bound,
}

/// What a SAGE run will do.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RunEstimate {
    /// Dialogues in the run: exactly those it plays.
    pub dialogues: usize,
    /// Cases played, over every scenario.
    pub cases: usize,
    /// Cases asked for, over every scenario (see [`ScenarioEstimate::asked`]).
    pub asked: usize,
    /// Cases added by `min_per_route`, over every scenario.
    pub added: usize,
    /// Cases left out by `adversarial_levels`, over every scenario.
    pub left_out: usize,
    /// Per scenario, in the run's order.
    pub scenarios: Vec<ScenarioEstimate>,
    /// The configuration's `dialogues_per_scenario`.
    pub dialogues_per_scenario: usize,
    /// The configuration's `min_per_route`.
    pub min_per_route: usize,
    /// The configuration's `adversarial_levels`.
    pub adversarial_levels: Vec<Adversarial>,
    /// Runs of each case.
    pub repeats: u32,
    /// The customer simulators each case is played with (`user_models`; 1 for `user_model`).
    pub customers: usize,
    /// Most turns a dialogue plays.
    pub max_turns: u32,
    /// The turns the judges score, in words.
    pub judge_turns: String,
    /// Judges in the panel.
    pub judges: usize,
    /// Attempts at a customer or judge answer that is empty or unparsable (each retry a call
    /// the bounds leave out).
    pub content_attempts: u32,
    /// Whether the customer guard may ask a customer line again (a call the bounds leave out).
    pub customer_guard: bool,
    /// An adaptive run's K (`--adaptive`): the figures are then its most, a decided model
    /// stopping early.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub adaptive_top: Option<usize>,
    /// Calls per dialogue.
    pub per_dialogue: PerDialogue,
    /// Per role, over the run: the agents, the customer, the judges.
    pub roles: Vec<RoleEstimate>,
    /// Per model under test, in the configuration's order.
    pub models: Vec<ModelEstimate>,
    /// Every call of the run.
    pub total: Spend,
}

/// The roles of a dialogue that call a model.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Role {
    Agent,
    Customer,
    Judge,
}

/// The turn of each call `role` makes in a dialogue whose agent played `turns` turns of at most
/// `max_turns`, as the dialogue driver plays it: the agent once a turn, the customer once a
/// turn and once more to end the dialogue before `max_turns`, each judge on the turns
/// `judge_turns` picks (the last one played is the final one).
fn call_turns(role: Role, turns: u32, max_turns: u32, judge_turns: &JudgeTurns) -> Vec<u32> {
    match role {
        Role::Agent => (1..=turns).collect(),
        Role::Customer => (1..=(turns + 1).min(max_turns)).collect(),
        Role::Judge => (1..=turns)
            .filter(|&t| judge_turns.judges(t, t == turns))
            .collect(),
    }
}

/// How many calls of a role a dialogue makes at each turn (index `t - 1`): at most (in the
/// dialogue length with the most calls, the longest of those) and expected (the customer ending
/// it after each agent turn with [`END_CHANCE`]).
#[derive(Debug, Clone, PartialEq)]
struct Weights {
    at_most: Vec<f64>,
    expected: Vec<f64>,
}

impl Weights {
    fn of(role: Role, max_turns: u32, judge_turns: &JudgeTurns) -> Weights {
        let m = max_turns.max(1);
        let stay = 1.0 - END_CHANCE;
        // The chance the agent plays exactly `t` turns.
        let chance = |t: u32| {
            if t < m {
                stay.powi(t as i32 - 1) * END_CHANCE
            } else {
                stay.powi(m as i32 - 1)
            }
        };
        let mut expected = vec![0.0; m as usize];
        for turns in 1..=m {
            for t in call_turns(role, turns, m, judge_turns) {
                expected[t as usize - 1] += chance(turns);
            }
        }
        let longest = (1..=m)
            .max_by_key(|&turns| (call_turns(role, turns, m, judge_turns).len(), turns))
            .unwrap_or(m);
        let mut at_most = vec![0.0; m as usize];
        for t in call_turns(role, longest, m, judge_turns) {
            at_most[t as usize - 1] += 1.0;
        }
        Weights { at_most, expected }
    }

    /// Calls per dialogue.
    fn calls(&self) -> Bound {
        Bound {
            at_most: self.at_most.iter().sum(),
            expected: self.expected.iter().sum(),
        }
    }

    /// The calls, tokens and cost of a dialogue's calls whose input is `input` characters at
    /// turn `t` and output `output` tokens, at `price`.
    fn spend(&self, input: impl Fn(u32) -> usize, output: f64, price: &Price) -> Spend {
        let mut input_tokens = Bound::default();
        for (i, (most, expected)) in self.at_most.iter().zip(&self.expected).enumerate() {
            let t = tokens(input(i as u32 + 1)) as f64;
            input_tokens += Bound {
                at_most: most * t,
                expected: expected * t,
            };
        }
        let calls = self.calls();
        let output_tokens = calls.scaled(output);
        let cost = |i: f64, o: f64| price.uncached_cost(i, o);
        Spend {
            calls,
            input_tokens,
            output_tokens,
            cost_usd: Bound {
                at_most: cost(input_tokens.at_most, output_tokens.at_most),
                expected: cost(input_tokens.expected, output_tokens.expected),
            },
        }
    }
}

/// A role's input in characters at turn `t`: `base + per_turn * (t - 1)`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Input {
    base: usize,
    per_turn: usize,
}

impl Input {
    /// The input of a simulated model ([`simulated_input_chars`]).
    const SIMULATED: Input = Input {
        base: SIMULATED_PROMPT_CHARS + 2 * LINE_CHARS,
        per_turn: 2 * LINE_CHARS,
    };

    fn at(self, turn: u32) -> usize {
        self.base + self.per_turn * (turn.max(1) as usize - 1)
    }

    /// From the messages a role sends at turn `t`, `messages(history)` with `2 (t - 1)` lines of
    /// history: rendered at turns 1 and 2 (the messages grow by the same two lines a turn).
    fn rendered(messages: impl Fn(&[Line]) -> Vec<crate::protocol::chat::ChatMessage>) -> Input {
        let chars =
            |lines: &[Line]| -> usize { messages(lines).iter().map(|m| m.content.len()).sum() };
        let line = |speaker| Line {
            speaker,
            text: "x".repeat(LINE_CHARS),
        };
        let first = chars(&[]);
        let second = chars(&[line(Speaker::User), line(Speaker::Agent)]);
        Input {
            base: first,
            per_turn: second.saturating_sub(first),
        }
    }
}

/// What one scenario's dialogues send and receive, per role: the inputs rendered from its first
/// job, and the outputs of a complete answer.
struct Sizes {
    agent: Input,
    customer: Input,
    judge: Input,
    /// Characters of a complete agent answer (classification, reasoning, path, action, chat).
    agent_answer: usize,
    /// Characters of a complete judge answer (classification, the five scores, reasoning).
    judge_answer: usize,
}

impl Sizes {
    fn of(sop: &Sop, job: &DialogueJob) -> Sizes {
        let line = "x".repeat(LINE_CHARS);
        let info = prompts::system_information(sop, job);
        let agent_system: Arc<str> = prompts::agent_system_prompt(sop, &info).into();
        let user_system: Arc<str> = prompts::user_system_prompt(sop, job).into();
        let judge_system: Arc<str> = prompts::judge_system_prompt(sop, job).into();
        let mut finals = serde_json::Map::new();
        finals.insert("Action".into(), job.target.action.clone().into());
        for (key, value) in &job.target.outputs {
            finals.insert(key.clone(), value.clone().into());
        }
        let agent_answer = serde_json::json!({
            "classification_output": job.fields,
            "cot": line,
            "now_path": job.target.path,
            "finals": finals,
            "chat": line,
        });
        let scores: serde_json::Map<String, serde_json::Value> = DIMENSIONS
            .iter()
            .map(|d| (d.key.to_string(), 9.into()))
            .collect();
        let judge_answer = serde_json::json!({
            "classification": job.fields,
            "chat_quality_dimensions": scores,
            "classification_reasoning": line,
            "chat_quality_reasoning": line,
        });
        Sizes {
            agent: Input::rendered(|h| prompts::agent_messages(agent_system.clone(), h, &line)),
            customer: Input::rendered(|h| prompts::user_messages(user_system.clone(), h)),
            judge: Input::rendered(|h| {
                prompts::judge_messages(judge_system.clone(), h, &line, &line)
            }),
            agent_answer: agent_answer.to_string().len(),
            judge_answer: judge_answer.to_string().len(),
        }
    }
}

/// Output tokens of an answer of `chars` characters, at most `model`'s `max_tokens`.
fn answer_tokens(chars: usize, model: &ModelConfig) -> f64 {
    let t = tokens(chars);
    model.max_tokens.map_or(t, |most| t.min(u64::from(most))) as f64
}

fn simulated(model: &ModelConfig) -> bool {
    model.provider == Provider::Simulated
}

impl RunEstimate {
    /// What `config` will do over `sops` (checked, in the run's order).
    pub fn new(config: &RunConfig, sops: &[Arc<Sop>]) -> RunEstimate {
        let plan = crate::plan::Plan::new(config, "plan", sops);
        let repeats = config.repeats.max(1) as usize;
        let n_models = config.service_models.len();
        let n_customers = config.customers().len();
        let scenarios: Vec<ScenarioEstimate> = sops
            .iter()
            .map(|sop| {
                let cases = crate::plan::case_plan(config, sop);
                let added = (0..cases.len()).filter(|&i| cases.supplemented(i)).count();
                let mut levels = [0; 3];
                let mut played = 0;
                for i in crate::plan::played(config, &cases) {
                    played += 1;
                    levels[match cases.adversarial(i) {
                        Adversarial::Zero => 0,
                        Adversarial::Weak => 1,
                        Adversarial::Strong => 2,
                    }] += 1;
                }
                ScenarioEstimate {
                    id: sop.scenario().id.clone(),
                    routes: sop.routes().len(),
                    asked: cases.len() - added,
                    added,
                    left_out: cases.len() - played,
                    cases: played,
                    levels,
                    dialogues: played * repeats * n_models * n_customers,
                }
            })
            .collect();
        let find = |name: &str| {
            config
                .models
                .iter()
                .find(|m| m.name == name)
                .cloned()
                .unwrap_or_else(|| ModelConfig::new(name, Provider::Openai))
        };
        let (m, jt) = (config.max_turns, &config.judge_turns);
        let weights = [Role::Agent, Role::Customer, Role::Judge].map(|r| Weights::of(r, m, jt));
        let [agent_w, customer_w, judge_w] = &weights;
        let users: Vec<ModelConfig> = config.customers().iter().map(|u| find(u)).collect();
        let judges: Vec<ModelConfig> = config.judge_models.iter().map(|j| find(j)).collect();
        // Simulated judges are sent messages only when some judge of the panel is a real model.
        let judges_simulated = judges.iter().all(simulated);
        let mut models: Vec<ModelEstimate> = config
            .service_models
            .iter()
            .map(|name| ModelEstimate {
                model: name.clone(),
                simulated: simulated(&find(name)),
                dialogues: plan.len() / n_models.max(1),
                agent: Spend::default(),
                all: Spend::default(),
            })
            .collect();
        let (mut customer_spend, mut judge_spend) = (Spend::default(), Spend::default());
        for (scenario, (sop, job)) in scenarios.iter().zip(sops.iter().zip(plan.first_jobs())) {
            let Some(job) = job else { continue };
            let sizes = Sizes::of(sop, &job);
            // Each case is played with every customer simulator.
            let per_customer = (scenario.cases * repeats) as f64;
            let per_model = per_customer * n_customers as f64;
            let input = |simulated: bool, rendered: Input| {
                let input = if simulated {
                    Input::SIMULATED
                } else {
                    rendered
                };
                move |t: u32| input.at(t)
            };
            let mut customer = Spend::default();
            for user in &users {
                customer += customer_w
                    .spend(
                        input(simulated(user), sizes.customer),
                        answer_tokens(LINE_CHARS, user),
                        &user.price,
                    )
                    .scaled(per_customer);
            }
            let mut panel = Spend::default();
            for judge in &judges {
                panel += judge_w
                    .spend(
                        input(judges_simulated, sizes.judge),
                        answer_tokens(sizes.judge_answer, judge),
                        &judge.price,
                    )
                    .scaled(per_model);
            }
            for estimate in &mut models {
                let model = find(&estimate.model);
                let agent = agent_w
                    .spend(
                        input(simulated(&model), sizes.agent),
                        answer_tokens(sizes.agent_answer, &model),
                        &model.price,
                    )
                    .scaled(per_model);
                estimate.agent += agent;
                estimate.all += agent;
                estimate.all += customer;
                estimate.all += panel;
                customer_spend += customer;
                judge_spend += panel;
            }
        }
        let mut agent_spend = Spend::default();
        let mut total = Spend::default();
        for estimate in &models {
            agent_spend += estimate.agent;
            total += estimate.all;
        }
        let sum = |f: fn(&ScenarioEstimate) -> usize| scenarios.iter().map(f).sum::<usize>();
        RunEstimate {
            dialogues: plan.len(),
            cases: sum(|s| s.cases),
            asked: sum(|s| s.asked),
            added: sum(|s| s.added),
            left_out: sum(|s| s.left_out),
            dialogues_per_scenario: config.dialogues_per_scenario,
            min_per_route: config.min_per_route,
            adversarial_levels: config.adversarial_levels.clone(),
            repeats: config.repeats,
            customers: n_customers,
            max_turns: config.max_turns,
            judge_turns: config.judge_turns.describe(),
            judges: judges.len(),
            content_attempts: config.content_attempts,
            customer_guard: config.customer_guard,
            adaptive_top: config.adaptive_top,
            per_dialogue: PerDialogue {
                turns: agent_w.calls(),
                judged_turns: judge_w.calls(),
                agent: agent_w.calls(),
                customer: customer_w.calls(),
                judges: judge_w.calls().scaled(judges.len() as f64),
            },
            roles: vec![
                RoleEstimate {
                    role: "agent".into(),
                    models: config.service_models.clone(),
                    spend: agent_spend,
                },
                RoleEstimate {
                    role: "customer".into(),
                    models: config.customers().to_vec(),
                    spend: customer_spend,
                },
                RoleEstimate {
                    role: "judges".into(),
                    models: config.judge_models.clone(),
                    spend: judge_spend,
                },
            ],
            models,
            scenarios,
            total,
        }
    }

    /// The run in one line, as `sage run` prints it at its start: `1,368 dialogues (6
    /// scenarios, 152 cases: 30 asked + 122 added by min_per_route 2; x 3 repeats; x 3 models)`.
    pub fn line(&self) -> String {
        let left_out = if self.left_out > 0 {
            format!(
                " - {} of levels adversarial_levels leaves out",
                thousands(self.left_out as f64)
            )
        } else {
            String::new()
        };
        let adaptive = match self.adaptive_top {
            Some(k) => format!(
                "; adaptive, top {k}: at most this many, a model decided against the top {k} stops early"
            ),
            None => String::new(),
        };
        let customers = match self.customers {
            0 | 1 => String::new(),
            n => format!("; x {n} customer simulators"),
        };
        format!(
            "{} ({}, {}: {} asked + {} added by min_per_route {}{left_out}; x {}; x {}{customers}{adaptive})",
            plural(self.dialogues, "dialogue"),
            plural(self.scenarios.len(), "scenario"),
            plural(self.cases, "case"),
            thousands(self.asked as f64),
            thousands(self.added as f64),
            self.min_per_route,
            plural(self.repeats as usize, "repeat"),
            plural(self.models.len(), "model"),
        )
    }

    /// The plan as `sage run --plan` prints it, every line at most [`TERMINAL_WIDTH`]
    /// characters: the line, the cases per scenario and why, the calls per dialogue, each
    /// role's calls, tokens and cost over the run, each model under test's, and what the
    /// figures rest on.
    pub fn text(&self) -> String {
        let w = TERMINAL_WIDTH;
        let n = |x: f64| thousands(x);
        let mut out = wrap("", &self.line(), w, "  ");
        let mut scenarios = Table::with(&[
            "Scenario",
            "Routes",
            "Asked",
            "Added",
            "Left out",
            "Cases",
            "Zero",
            "Weak",
            "Strong",
            "Dialogues",
        ]);
        for s in &self.scenarios {
            let counts = [
                s.routes,
                s.asked,
                s.added,
                s.left_out,
                s.cases,
                s.levels[0],
                s.levels[1],
                s.levels[2],
                s.dialogues,
            ];
            scenarios.rows.push(
                std::iter::once(s.id.clone())
                    .chain(counts.iter().map(|&c| n(c as f64)))
                    .collect(),
            );
        }
        let level = |i: usize| n(self.scenarios.iter().map(|s| s.levels[i]).sum::<usize>() as f64);
        let routes: usize = self.scenarios.iter().map(|s| s.routes).sum();
        scenarios.rows.push(vec![
            "Total".into(),
            n(routes as f64),
            n(self.asked as f64),
            n(self.added as f64),
            n(self.left_out as f64),
            n(self.cases as f64),
            level(0),
            level(1),
            level(2),
            n(self.dialogues as f64),
        ]);
        let _ = write!(out, "\n{}", scenarios.text_within(w));
        let levels: Vec<String> = self
            .adversarial_levels
            .iter()
            .map(ToString::to_string)
            .collect();
        out.push_str(&wrap(
            "",
            &format!(
                "Asked: the intent-balanced cases of dialogues_per_scenario {} (--dialogues). Added: the cases \
                 min_per_route {} adds so that every route has at least that many. Zero, Weak, Strong: each case \
                 plays at its intent's adversarial level, so the levels share the cases, they do not multiply \
                 them; Left out: cases of a level adversarial_levels ({}) does not list. Dialogues: cases x {} x {} under test.",
                self.dialogues_per_scenario,
                self.min_per_route,
                levels.join(", "),
                plural(self.repeats as usize, "repeat"),
                plural(self.models.len(), "model"),
            ),
            w,
            "",
        ));
        let d = &self.per_dialogue;
        let mut per = Table::with(&["Per dialogue", "At most", "Expected"]);
        let row = |name: &str, b: Bound| {
            vec![name.to_string(), n(b.at_most), format!("{:.1}", b.expected)]
        };
        per.rows.push(row("agent turns", d.turns));
        per.rows.push(row("judged turns", d.judged_turns));
        per.rows.push(row("agent calls", d.agent));
        per.rows.push(row("customer calls", d.customer));
        per.rows.push(row(
            &format!("judge calls ({} judges)", self.judges),
            d.judges,
        ));
        let _ = write!(out, "\n{}", per.text_within(w));
        out.push_str(&wrap(
            "",
            &format!(
                "max_turns {}; judged turns: {}.",
                self.max_turns, self.judge_turns
            ),
            w,
            "",
        ));
        let headings = [
            "Calls max",
            "Calls exp.",
            "Tokens in exp.",
            "Tokens out exp.",
            "Cost max ($)",
            "Cost exp. ($)",
        ];
        let cells = |s: &Spend| {
            vec![
                n(s.calls.at_most),
                n(s.calls.expected),
                n(s.input_tokens.expected),
                n(s.output_tokens.expected),
                usd(s.cost_usd.at_most),
                usd(s.cost_usd.expected),
            ]
        };
        let mut roles = Table::new(
            std::iter::once("Role (whole run)".to_string())
                .chain(headings.iter().map(|h| h.to_string()))
                .collect(),
        );
        for r in &self.roles {
            let mut row = vec![format!("{} ({})", r.role, plural(r.models.len(), "model"))];
            row.extend(cells(&r.spend));
            roles.rows.push(row);
        }
        let mut total = vec!["Total".to_string()];
        total.extend(cells(&self.total));
        roles.rows.push(total);
        let _ = write!(out, "\n{}", roles.text_within(w));
        let mut models = Table::with(&[
            "Model under test",
            "Dialogues",
            "Calls exp.",
            "Tokens exp.",
            "Cost max ($)",
            "Cost exp. ($)",
        ]);
        let model_cells = |dialogues: usize, s: &Spend| {
            vec![
                n(dialogues as f64),
                n(s.calls.expected),
                n(s.input_tokens.expected + s.output_tokens.expected),
                usd(s.cost_usd.at_most),
                usd(s.cost_usd.expected),
            ]
        };
        for m in &self.models {
            let mut row = vec![model_label(&m.model, m.simulated, false)];
            row.extend(model_cells(m.dialogues, &m.all));
            models.rows.push(row);
        }
        let mut total_row = vec!["Total".to_string()];
        total_row.extend(model_cells(self.dialogues, &self.total));
        models.rows.push(total_row);
        let _ = write!(out, "\n{}", models.text_within(w));
        let mut retries = format!(
            "retries aside: an empty or unparsable customer or judge answer is asked again, up to content_attempts \
             {} times",
            self.content_attempts
        );
        if self.customer_guard {
            retries.push_str(", and customer_guard asks a flagged customer line once more");
        }
        out.push_str(&wrap(
            "",
            &format!(
                "A model's row is every call of its dialogues: its own, the customer's and the judges' (Tokens: in and \
                 out). max: every dialogue plays max_turns turns and every call is answered at its first attempt (a \
                 bound on the calls, {retries}). exp.: an estimate, the customer taken to end a dialogue after each \
                 agent turn with a {:.0}% chance (9.8 turns per dialogue at max_turns 16, as the default simulated \
                 run plays: docs/benchmarks.md); real customers and agents differ. Tokens: the prompts rendered for \
                 each scenario's first case, dialogue lines of {LINE_CHARS} characters, answers of a complete \
                 answer's size (at most max_tokens), {CHARS_PER_TOKEN} characters a token; a simulated model counts \
                 {} characters of prompt and {} more a turn, as it records them. Cost: the tokens at each model's \
                 price (prompt-cache discounts not counted); a simulated model without a price costs $0.",
                END_CHANCE * 100.0,
                thousands(SIMULATED_PROMPT_CHARS as f64),
                2 * LINE_CHARS,
            ),
            w,
            "",
        ));
        out
    }
}

/// `n` and `word`, plural unless `n` is 1: `1 repeat`, `1,368 dialogues`.
fn plural(n: usize, word: &str) -> String {
    let s = if n == 1 { "" } else { "s" };
    format!("{} {word}{s}", thousands(n as f64))
}

/// `x` rounded to a whole number, its thousands separated by commas: `1,368`.
pub fn thousands(x: f64) -> String {
    let digits = format!("{:.0}", x.abs());
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    if x.round() < 0.0 {
        out.insert(0, '-');
    }
    out
}

/// US dollars: two decimals, thousands separated (`1,234.50`); four below a cent (`0.0012`).
fn usd(x: f64) -> String {
    if x > 0.0 && x < 0.01 {
        return format!("{x:.4}");
    }
    let cents = (x * 100.0).round();
    format!(
        "{}.{:02}",
        thousands((cents / 100.0).trunc()),
        (cents % 100.0).abs() as u64
    )
}

#[cfg(test)]
mod tests;
