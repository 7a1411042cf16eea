//! The tau2 retail suite's part of the HTML report: which agent is best (the leaderboard, with
//! a 95% interval on pass^1), what the score depends on (the run), where each agent fails (a
//! task × agent matrix of the failed tasks), how its failed simulations failed (the reasons),
//! and the simulation explorer.
//!
//! [`Tau2ReportFold`] takes the records one at a time and keeps, per (agent, task), the graded
//! trials, the passes and the infrastructure errors, and per agent its failure reasons and cost:
//! memory grows with agents × tasks, never with the records. The explorer ([`Tau2Explorer`], the
//! suite of the shared [`explorer`]) keeps a bounded choice of rows and reads the simulations it
//! embeds back from tau2.jsonl by their offset when the page is written. Every value from a
//! record is rendered with `maud` (escaped) or written with `serde_json` (the explorer's data,
//! read by the script as text only): no text of a record is formatted into HTML by hand.
//!
//! The scores are tau2's: a simulation passes when its reward is 1 (the database check and the
//! NL assertions pass); a simulation with no reward is an infrastructure error, left out of
//! every score; pass^k is [`sage_core::tau2::run::pass_hat_k`] over the tasks, so the page gives
//! the numbers of summary.json and leaderboard.md.

mod suite;
#[cfg(test)]
mod tests;

pub use suite::{OUTCOMES, Tau2Explorer, Tau2Row, outcomes};

use crate::explorer::{self, Embedded, Explorer, Limits, Records, explore_anchor};
use crate::page::Section;
use maud::{Markup, html};
use sage_core::scoring::stats::{Money, quantile};
use sage_core::tau2::run::{Tau2Record, Termination, pass_hat_k};
use std::collections::BTreeMap;
use std::io::{Read, Seek, Write};

/// Resamples of the bootstrap of pass^1's interval.
pub const BOOTSTRAP_RESAMPLES: usize = 2000;

/// Seed of the bootstrap of pass^1's interval (fixed: the page is the same every time it is
/// written; every agent gets the same draws of task positions).
pub const BOOTSTRAP_SEED: u64 = 0x7461_7532_2d72_6574;

/// Coverage of pass^1's interval.
pub const CONFIDENCE: f64 = 0.95;

/// What the run was, from its manifest (the store reads it; every field may be empty when the
/// folder has none).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Tau2RunInfo {
    /// The run id.
    pub run_id: String,
    /// When it started (UTC, RFC 3339).
    pub created_at: String,
    /// SAGE-RS version that ran it.
    pub sage_version: String,
    /// Run seed.
    pub seed: Option<u64>,
    /// Trials of each task with each agent.
    pub repeats: Option<u32>,
    /// Most agent turns per simulation.
    pub max_turns: Option<u32>,
    /// The agents under test, in the configuration's order.
    pub agents: Vec<String>,
    /// The user simulator.
    pub customer_model: String,
    /// The judges of the NL assertions.
    pub judge_models: Vec<String>,
    /// Models that are built-in simulations.
    pub simulated_models: Vec<String>,
    /// Tasks the run plays.
    pub tasks: Option<usize>,
}

/// One (agent, task) cell: its graded trials, passes and infrastructure errors.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TaskCell {
    /// Trials graded (infrastructure errors left out).
    pub trials: u32,
    /// Trials with reward 1.
    pub passed: u32,
    /// Trials stopped by an infrastructure error (not graded).
    pub infra_errors: u32,
}

impl TaskCell {
    /// Graded trials that did not pass.
    pub fn failed(&self) -> u32 {
        self.trials.saturating_sub(self.passed)
    }
}

/// One agent's row of the leaderboard and of the failure reasons.
#[derive(Debug, Clone, PartialEq)]
pub struct Tau2AgentRow {
    /// The agent.
    pub agent: String,
    /// Tasks with at least one graded trial.
    pub tasks: usize,
    /// Simulations graded.
    pub simulations: u32,
    /// Simulations with reward 1.
    pub passed: u32,
    /// pass^1, pass^2, ... up to the fewest graded trials of a task (as summary.json).
    pub pass_hat_k: Vec<f64>,
    /// The 95% percentile bootstrap interval of pass^1 over the tasks ([`pass1_interval`]).
    pub interval: Option<(f64, f64)>,
    /// Graded simulations with reward 0.
    pub failed: u32,
    /// Simulations whose database differed from the gold one.
    pub db_misses: u32,
    /// Simulations with an NL assertion judged not met.
    pub nl_misses: u32,
    /// Simulations ended by the turn limit.
    pub max_steps: u32,
    /// Failed simulations with none of the reasons above.
    pub other_failures: u32,
    /// Simulations stopped by an infrastructure error (not graded).
    pub infra_errors: u32,
    /// The agent's cost, US dollars.
    pub cost_usd: f64,
}

impl Tau2AgentRow {
    /// pass^1, when a simulation was graded.
    pub fn pass1(&self) -> Option<f64> {
        self.pass_hat_k.first().copied()
    }
}

/// A task some agent failed (or met an infrastructure error on): its cell per agent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tau2TaskRow {
    /// The task's id.
    pub task: String,
    /// Failed graded trials over all agents.
    pub failed: u32,
    /// Infrastructure errors over all agents.
    pub infra_errors: u32,
    /// Per agent, in the order asked for: its cell (`None`: the agent never played the task).
    pub cells: Vec<Option<TaskCell>>,
}

/// The task × agent matrix: the tasks not passed by every agent in every trial, worst first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tau2Matrix {
    /// The columns, in the leaderboard's order.
    pub agents: Vec<String>,
    /// The listed tasks, most failed trials first (then most infrastructure errors, then id).
    pub rows: Vec<Tau2TaskRow>,
    /// Tasks every agent that played them passed in every trial (not listed).
    pub passed_by_all: usize,
    /// Tasks played.
    pub tasks: usize,
}

/// The percentile bootstrap interval of pass^1 at [`CONFIDENCE`]: the tasks resampled with
/// replacement (each task's trials kept together: a task weighs its share of passed trials),
/// `resamples` times, the generator seeded by `seed`; the 2.5% and 97.5% quantiles of the
/// resampled means. `tasks`: per task (trials graded, trials passed); tasks without a graded
/// trial are left out. `None` without one.
///
/// Written here rather than taken from `sage_core::scoring::stats`: its bootstrap folds
/// clusters one at a time with Poisson(1) weights (a resample's size varies, and can be empty
/// with a few tasks), while the fold here already holds every task's counts and resamples the
/// tasks exactly, n draws with replacement from n tasks (the quantile is the core's).
pub fn pass1_interval(tasks: &[(u32, u32)], resamples: usize, seed: u64) -> Option<(f64, f64)> {
    let values: Vec<f64> = tasks
        .iter()
        .filter(|(n, _)| *n > 0)
        .map(|&(n, c)| f64::from(c.min(n)) / f64::from(n))
        .collect();
    if values.is_empty() {
        return None;
    }
    let n = values.len();
    if resamples == 0 {
        let mean = values.iter().sum::<f64>() / n as f64;
        return Some((mean, mean));
    }
    let draws = crate::resample::means(&values, resamples, seed);
    let tail = (1.0 - CONFIDENCE) / 2.0;
    Some((quantile(&draws, tail)?, quantile(&draws, 1.0 - tail)?))
}

/// The order tasks are listed in: numeric ids by their number, then the others by text.
fn task_order(a: &str, b: &str) -> std::cmp::Ordering {
    let key = |s: &str| s.parse::<u64>().map_or((1, 0), |n| (0, n));
    key(a).cmp(&key(b)).then_with(|| a.cmp(b))
}

/// What the fold keeps of one (agent, task).
#[derive(Debug, Clone, Default)]
struct Cell {
    counts: TaskCell,
    /// Trials folded (bit `t` for trial `t` below 128).
    seen: u128,
    /// Trials folded from 128 on (only a damaged file has any).
    seen_beyond: Vec<u32>,
}

impl Cell {
    /// Marks `trial` folded: false when it was already.
    fn mark(&mut self, trial: u32) -> bool {
        if trial < 128 {
            let bit = 1u128 << trial;
            let new = self.seen & bit == 0;
            self.seen |= bit;
            new
        } else if self.seen_beyond.contains(&trial) {
            false
        } else {
            self.seen_beyond.push(trial);
            true
        }
    }
}

/// What the fold keeps of one agent.
#[derive(Debug, Clone, Default)]
struct Agent {
    tasks: BTreeMap<String, Cell>,
    simulations: u32,
    passed: u32,
    db_misses: u32,
    nl_misses: u32,
    max_steps: u32,
    other_failures: u32,
    infra_errors: u32,
    cost: Money,
}

/// The tau2 retail report, folded one record at a time.
pub struct Tau2ReportFold {
    info: Tau2RunInfo,
    agents: BTreeMap<String, Agent>,
    folded: usize,
    duplicates: usize,
    explorer: Explorer<Tau2Explorer>,
}

impl Tau2ReportFold {
    /// An empty report of the run `info` describes.
    pub fn new(info: Tau2RunInfo) -> Self {
        Tau2ReportFold {
            info,
            agents: BTreeMap::new(),
            folded: 0,
            duplicates: 0,
            explorer: Explorer::new(Tau2Explorer::default(), Limits::default()),
        }
    }

    /// The same report whose explorer embeds at most `limits`.
    pub fn with_limits(mut self, limits: Limits) -> Self {
        self.explorer = Explorer::new(Tau2Explorer::default(), limits);
        self
    }

    /// Folds a record in, whose line starts at byte `at` of tau2.jsonl (the explorer reads the
    /// simulations it embeds back from there when the page is written): false (nothing folded)
    /// when its simulation was folded already. A simulation is its agent, task and trial (its
    /// dialogue id is `<task>/<agent>/r<trial>`), so the fold remembers a bit per trial of each
    /// (agent, task), not the ids.
    pub fn add(&mut self, record: &Tau2Record, at: u64) -> bool {
        let job = &record.job;
        if !self.agents.contains_key(&job.model) {
            self.agents.insert(job.model.clone(), Agent::default());
        }
        let Some(agent) = self.agents.get_mut(&job.model) else {
            return false;
        };
        if !agent.tasks.contains_key(&job.task) {
            agent.tasks.insert(job.task.clone(), Cell::default());
        }
        let Some(cell) = agent.tasks.get_mut(&job.task) else {
            return false;
        };
        if !cell.mark(job.trial) {
            self.duplicates += 1;
            return false;
        }
        agent.cost.add(record.cost_usd);
        match &record.reward {
            None => {
                cell.counts.infra_errors += 1;
                agent.infra_errors += 1;
            }
            Some(reward) => {
                let passed = reward.reward >= 1.0;
                cell.counts.trials += 1;
                cell.counts.passed += u32::from(passed);
                agent.simulations += 1;
                agent.passed += u32::from(passed);
                let db = reward.db_match == Some(false);
                let nl = reward.nl_assertions.iter().any(|c| !c.met);
                let steps = record.termination == Termination::MaxSteps;
                agent.db_misses += u32::from(db);
                agent.nl_misses += u32::from(nl);
                if !passed {
                    agent.max_steps += u32::from(steps);
                    agent.other_failures += u32::from(!(db || nl || steps));
                }
            }
        }
        self.folded += 1;
        self.explorer.add(record, at);
        true
    }

    /// The run's id.
    pub fn run_id(&self) -> String {
        self.info.run_id.clone()
    }

    /// Simulations folded (duplicates left out).
    pub fn simulations(&self) -> usize {
        self.folded
    }

    /// Records left out because their simulation was folded already.
    pub fn duplicates(&self) -> usize {
        self.duplicates
    }

    /// Every agent's row, best pass^1 first (ties by name; agents with no graded simulation
    /// last): the configured agents and those met in the records.
    pub fn leaderboard(&self) -> Vec<Tau2AgentRow> {
        let empty = Agent::default();
        let mut names: Vec<&str> = self.info.agents.iter().map(String::as_str).collect();
        names.extend(self.agents.keys().map(String::as_str));
        names.sort_unstable();
        names.dedup();
        let mut rows: Vec<Tau2AgentRow> = names
            .into_iter()
            .map(|name| {
                let a = self.agents.get(name).unwrap_or(&empty);
                let tasks: Vec<(u32, u32)> = a
                    .tasks
                    .values()
                    .filter(|c| c.counts.trials > 0)
                    .map(|c| (c.counts.trials, c.counts.passed))
                    .collect();
                let k_max = tasks.iter().map(|t| t.0).min().unwrap_or(0);
                Tau2AgentRow {
                    agent: name.to_string(),
                    tasks: tasks.len(),
                    simulations: a.simulations,
                    passed: a.passed,
                    pass_hat_k: (1..=k_max).map(|k| pass_hat_k(&tasks, k)).collect(),
                    interval: pass1_interval(&tasks, BOOTSTRAP_RESAMPLES, BOOTSTRAP_SEED),
                    failed: a.simulations - a.passed,
                    db_misses: a.db_misses,
                    nl_misses: a.nl_misses,
                    max_steps: a.max_steps,
                    other_failures: a.other_failures,
                    infra_errors: a.infra_errors,
                    cost_usd: a.cost.usd(),
                }
            })
            .collect();
        rows.sort_by(|a, b| match (a.pass1(), b.pass1()) {
            (Some(x), Some(y)) => y.total_cmp(&x).then_with(|| a.agent.cmp(&b.agent)),
            (Some(_), None) => std::cmp::Ordering::Less,
            (None, Some(_)) => std::cmp::Ordering::Greater,
            (None, None) => a.agent.cmp(&b.agent),
        });
        rows
    }

    /// The task × agent matrix with `agents` as its columns: the tasks some agent failed in a
    /// graded trial or met an infrastructure error on, worst first.
    pub fn matrix(&self, agents: &[String]) -> Tau2Matrix {
        let mut tasks: BTreeMap<&str, ()> = BTreeMap::new();
        for a in self.agents.values() {
            for t in a.tasks.keys() {
                tasks.insert(t, ());
            }
        }
        let total = tasks.len();
        let mut rows: Vec<Tau2TaskRow> = tasks
            .into_keys()
            .filter_map(|task| {
                let cells: Vec<Option<TaskCell>> = agents
                    .iter()
                    .map(|a| {
                        self.agents
                            .get(a)
                            .and_then(|x| x.tasks.get(task))
                            .map(|c| c.counts)
                    })
                    .collect();
                let failed = cells.iter().flatten().map(TaskCell::failed).sum();
                let infra_errors = cells.iter().flatten().map(|c| c.infra_errors).sum();
                (failed > 0 || infra_errors > 0).then(|| Tau2TaskRow {
                    task: task.to_string(),
                    failed,
                    infra_errors,
                    cells,
                })
            })
            .collect();
        rows.sort_by(|a, b| {
            b.failed
                .cmp(&a.failed)
                .then(b.infra_errors.cmp(&a.infra_errors))
                .then_with(|| task_order(&a.task, &b.task))
        });
        Tau2Matrix {
            agents: agents.to_vec(),
            passed_by_all: total - rows.len(),
            rows,
            tasks: total,
        }
    }

    /// The sections before the explorer, in page order: `tau2-leaderboard`, `tau2-run`,
    /// `tau2-tasks`, `tau2-reasons`.
    pub fn sections(&self) -> Vec<Section> {
        let rows = self.leaderboard();
        let order: Vec<String> = rows.iter().map(|r| r.agent.clone()).collect();
        vec![
            Section::new(
                "tau2-leaderboard",
                "tau2 retail leaderboard",
                self.leaderboard_html(&rows),
            ),
            Section::new("tau2-run", "What the score depends on", self.run_html()),
            Section::new(
                "tau2-tasks",
                "Failed tasks per agent",
                self.tasks_html(&self.matrix(&order)),
            ),
            Section::new(
                "tau2-reasons",
                "Why simulations failed",
                reasons_html(&rows),
            ),
        ]
    }

    /// Writes the whole page of a tau2 retail run to `out`, each section as it is rendered, the
    /// simulation explorer (`tau2-explorer`) last: its simulations are read back from `records`
    /// by the places given to [`Tau2ReportFold::add`] and compressed into `spool` (a scratch
    /// file) first; `show` is the command printed for the simulations the page leaves out
    /// (without the id). What the explorer embeds.
    pub fn write_page<W: Write, X: Read + Write + Seek>(
        &mut self,
        out: W,
        records: &mut dyn Records<Tau2Record>,
        spool: &mut X,
        show: &str,
    ) -> std::io::Result<Embedded> {
        let title = if self.info.run_id.is_empty() {
            "tau2 retail run".to_string()
        } else {
            format!("tau2 retail run {}", self.info.run_id)
        };
        let parts = explorer::PageParts {
            title,
            styles: vec![explorer::CSS.to_string(), TAU2_CSS.to_string()],
            scripts: vec![explorer::SCRIPT, TAU2_JS],
            sections: self.sections(),
            explorer: ("tau2-explorer", "Simulation explorer"),
        };
        self.explorer.write_page(parts, out, records, spool, show)
    }

    /// The whole page as a string, the simulations read back from `records` (tests).
    pub fn render(&mut self, records: &mut dyn Records<Tau2Record>) -> std::io::Result<String> {
        explorer::render_page(|out, spool| self.write_page(out, records, spool, "sage show DIR"))
    }

    fn simulated(&self, model: &str) -> bool {
        self.info.simulated_models.iter().any(|m| m == model)
    }

    fn model_label(&self, model: &str) -> Markup {
        html! {
            span.agent-name { (model) }
            @if self.simulated(model) { " " span.tag.sim { "simulated" } }
        }
    }

    fn leaderboard_html(&self, rows: &[Tau2AgentRow]) -> Markup {
        let k_max = rows.iter().map(|r| r.pass_hat_k.len()).max().unwrap_or(0);
        let ks: Vec<usize> = (2..=k_max.max(self.info.repeats.unwrap_or(0) as usize)).collect();
        let three = |x: f64| format!("{x:.3}");
        let leader = rows.first().filter(|r| r.interval.is_some());
        let overlap = |a: (f64, f64), b: (f64, f64)| a.0 <= b.1 && b.0 <= a.1;
        let tied: Vec<&Tau2AgentRow> = match leader.and_then(|l| l.interval) {
            Some(top) => rows
                .iter()
                .skip(1)
                .filter(|r| r.interval.is_some_and(|i| overlap(i, top)))
                .collect(),
            None => Vec::new(),
        };
        let count = |key: &str, n: u32| html! { td.num data-metric=(key) data-value=(n) { (n) } };
        html! {
            @if rows.is_empty() {
                p.note { "No simulation yet." }
            }
            div.table-box {
                table.data #tau2-leaderboard-table {
                    thead { tr {
                        th { "Agent" }
                        th.num title="rank by pass^1" { "#" }
                        th.num title="tasks with a graded trial" { "Tasks" }
                        th.num title="simulations graded (infrastructure errors left out)" { "Simulations" }
                        th.num title="pass^1 with its 95% bootstrap interval over tasks" { "pass^1 (95% interval)" }
                        @for k in &ks { th.num title={ "the chance that " (k) " trials of a task all pass" } { "pass^" (k) } }
                        th.num title="simulations whose final database differed from the gold one" { "DB misses" }
                        th.num title="simulations with an NL assertion judged not met" { "NL misses" }
                        th.num title="simulations stopped by an infrastructure error (not graded)" { "Infra errors" }
                        th.num title="the agent's US dollars" { "Cost (USD)" }
                    } }
                    tbody {
                        @for (rank, r) in rows.iter().enumerate() {
                            tr data-agent=(r.agent) {
                                td data-metric="agent" { (self.model_label(&r.agent)) }
                                td.num data-metric="rank" data-value=(rank + 1) { (rank + 1) }
                                td.num data-metric="tasks" data-value=(r.tasks) { (r.tasks) }
                                td.num data-metric="simulations" data-value=(r.simulations) { (r.simulations) }
                                @match (r.pass1(), r.interval) {
                                    (Some(p), Some((lo, hi))) => {
                                        td.num data-metric="pass^1" data-value=(p) data-low=(lo) data-high=(hi)
                                            title={ (r.passed) " of " (r.simulations) " simulations passed" } {
                                            b { (three(p)) } " " span.ci { (three(lo)) "–" (three(hi)) }
                                        }
                                    }
                                    (Some(p), None) => { td.num data-metric="pass^1" data-value=(p) { b { (three(p)) } } }
                                    _ => { td.num data-metric="pass^1" data-value="" { "—" } }
                                }
                                @for k in &ks {
                                    @match r.pass_hat_k.get(k - 1) {
                                        Some(p) => { td.num data-metric={ "pass^" (k) } data-value=(p) { (three(*p)) } }
                                        None => {
                                            td.num data-metric={ "pass^" (k) } data-value=""
                                                title={ "a task has fewer than " (k) " graded trials (infrastructure errors)" } { "—" }
                                        }
                                    }
                                }
                                (count("db_misses", r.db_misses))
                                (count("nl_misses", r.nl_misses))
                                td.num.bad[r.infra_errors > 0] data-metric="infra_errors" data-value=(r.infra_errors) { (r.infra_errors) }
                                td.num data-metric="cost_usd" data-value=(r.cost_usd) { (format!("{:.4}", r.cost_usd)) }
                            }
                        }
                    }
                }
            }
            p.note #tau2-leaderboard-note {
                b { "Two agents whose intervals overlap are not told apart by this run." }
                " "
                @if let Some(l) = leader {
                    @if tied.is_empty() {
                        @if rows.len() > 1 {
                            "The interval of " (l.agent) " overlaps no other agent's: it leads this run."
                        }
                    } @else {
                        "This run does not tell " (l.agent) " apart from "
                        @for (i, t) in tied.iter().enumerate() {
                            @if i > 0 { @if i + 1 == tied.len() { " and " } @else { ", " } }
                            (t.agent)
                        }
                        " (their intervals overlap " (l.agent) "'s)."
                    }
                }
            }
            p.note {
                "Ranked by pass^1, best first (ties by name). A simulation passes when its reward is 1: "
                "the final database equals the gold one and the NL assertions are judged met. pass^1: per "
                "task, the share of its graded trials that passed, averaged over the tasks; interval: the "
                "95% percentile bootstrap over tasks (" (BOOTSTRAP_RESAMPLES) " resamples of the tasks "
                "with replacement, each task's trials kept together, fixed seed). pass^k: the chance "
                "that k trials of a task drawn without replacement all pass, averaged over the tasks "
                "(tau2-bench's estimator), shown up to the fewest graded trials of a task. "
                "Infrastructure errors are left out of every score. The numbers are those of "
                "summary.json."
            }
        }
    }

    fn run_html(&self) -> Markup {
        let info = &self.info;
        let opt = |x: Option<String>| x.unwrap_or_else(|| "—".into());
        let fact = |key: &str, label: &str, value: Markup| {
            html! { tr data-key=(key) { th { (label) } td { (value) } } }
        };
        let mut agents: Vec<&str> = info.agents.iter().map(String::as_str).collect();
        for a in self.agents.keys() {
            if !agents.contains(&a.as_str()) {
                agents.push(a);
            }
        }
        let infra: u32 = self.agents.values().map(|a| a.infra_errors).sum();
        let tasks_played = self.matrix(&[]).tasks;
        let planned = match (info.tasks, info.repeats) {
            (Some(t), Some(r)) if !agents.is_empty() => Some(agents.len() * t * r as usize),
            _ => None,
        };
        let list = |models: &[&str]| {
            html! {
                @for (i, m) in models.iter().enumerate() { @if i > 0 { ", " } (self.model_label(m)) }
            }
        };
        let judges: Vec<&str> = info.judge_models.iter().map(String::as_str).collect();
        let simulated_agents: Vec<&str> = agents
            .iter()
            .copied()
            .filter(|a| self.simulated(a))
            .collect();
        let simulated_roles = self.simulated(&info.customer_model)
            || info.judge_models.iter().any(|j| self.simulated(j));
        html! {
            @if !simulated_agents.is_empty() || simulated_roles {
                p.warn #tau2-simulated-warning {
                    @if !simulated_agents.is_empty() {
                        "Simulated agents ("
                        @for (i, a) in simulated_agents.iter().enumerate() { @if i > 0 { ", " } (a) }
                        ") are built-in simulations, not models: their scores test the harness. "
                    }
                    @if simulated_roles {
                        "The user simulator or a judge is simulated: these scores are not comparable "
                        "with tau2-bench's."
                    }
                }
            }
            table.data.kv #tau2-run-facts {
                (fact("run-id", "Run", html! { (info.run_id) }))
                (fact("date", "Started", html! { (info.created_at) }))
                (fact("seed", "Seed", html! { (opt(info.seed.map(|s| s.to_string()))) }))
                (fact("repeats", "Trials of each task with each agent", html! { (opt(info.repeats.map(|s| s.to_string()))) }))
                (fact("max-turns", "Most agent turns", html! { (opt(info.max_turns.map(|s| s.to_string()))) }))
                (fact("agents", "Agents under test", list(&agents)))
                (fact("customer", "User simulator", html! {
                    @if info.customer_model.is_empty() { "—" } @else { (self.model_label(&info.customer_model)) }
                }))
                (fact("judges", "Judges of the NL assertions (majority)", html! {
                    @if judges.is_empty() { "—" } @else { (list(&judges)) }
                }))
                (fact("simulated", "Simulated models", html! {
                    @if info.simulated_models.is_empty() {
                        "none: every model is a real endpoint"
                    } @else {
                        @for (i, m) in info.simulated_models.iter().enumerate() { @if i > 0 { ", " } span.agent-name { (m) } }
                    }
                }))
                (fact("tasks", "Tasks", html! {
                    (tasks_played)
                    @if let Some(t) = info.tasks { " played of " (t) }
                }))
                (fact("simulations", "Simulations", html! {
                    (self.folded)
                    @if let Some(p) = planned { " of " (p) " planned" }
                }))
                (fact("infra-errors", "Infrastructure errors", html! {
                    span class=(if infra == 0 { "good" } else { "bad" }) data-value=(infra) { (infra) }
                    " (left out of the scores)"
                }))
                @if self.duplicates > 0 {
                    (fact("duplicates", "Repeated records left out", html! { (self.duplicates) }))
                }
                (fact("version", "SAGE-RS", html! { (info.sage_version) }))
            }
        }
    }

    fn tasks_html(&self, m: &Tau2Matrix) -> Markup {
        html! {
            @if m.tasks == 0 {
                p.note { "No simulation yet." }
            } @else if m.rows.is_empty() {
                p.note #tau2-tasks-passed { "Every agent passed all " (m.tasks) " tasks in every trial." }
            } @else {
                p.note #tau2-tasks-passed data-value=(m.passed_by_all) {
                    b { (m.passed_by_all) } " of the " (m.tasks) " tasks were passed by every agent in every "
                    "trial (not listed). Below, the other " (m.rows.len()) ", most failed trials first; "
                    "each cell: trials passed / trials graded by that agent (⚠: infrastructure errors, not "
                    "graded), a link to its simulations in the explorer. Agents in the leaderboard's order."
                }
                div.table-box {
                    table.data.tau2-matrix #tau2-matrix {
                        thead { tr {
                            th { "Task" }
                            th.num title="failed trials over all agents" { "Failed" }
                            @for a in &m.agents {
                                th.num.rotated data-agent=(a) title=(a) { span { (a) } }
                            }
                        } }
                        tbody {
                            @for row in &m.rows {
                                tr data-task=(row.task) {
                                    th { (row.task) }
                                    td.num data-value=(row.failed) { (row.failed) }
                                    @for (a, cell) in m.agents.iter().zip(&row.cells) {
                                        (matrix_cell(a, &row.task, cell.as_ref()))
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }
    }
}

/// One cell of the matrix: `passed/trials`, coloured by the share passed, linked to the
/// explorer filtered on the agent and the task.
fn matrix_cell(agent: &str, task: &str, cell: Option<&TaskCell>) -> Markup {
    let Some(c) = cell else {
        return html! { td.num.cell data-agent=(agent) data-value="" title="not played" { "—" } };
    };
    let class = if c.trials == 0 {
        "cell p-infra"
    } else if c.passed >= c.trials {
        "cell p-all"
    } else if c.passed == 0 {
        "cell p-none"
    } else {
        "cell p-some"
    };
    let href = explore_anchor(&[("agent", agent), ("task", task)]);
    html! {
        td class={ "num " (class) } data-agent=(agent) data-passed=(c.passed) data-trials=(c.trials)
            data-infra=(c.infra_errors) {
            a href=(href) title={ (agent) ", task " (task) ": " (c.passed) " of " (c.trials) " graded trials passed" } {
                (c.passed) "/" (c.trials)
                @if c.infra_errors > 0 { " " span.infra { "⚠" (c.infra_errors) } }
            }
        }
    }
}

/// The failure reasons of each agent, in the leaderboard's order.
fn reasons_html(rows: &[Tau2AgentRow]) -> Markup {
    let cell = |agent: &str, key: &str, outcome: &str, n: u32, of: u32| {
        let share = if of == 0 {
            0.0
        } else {
            f64::from(n) / f64::from(of)
        };
        let href = explore_anchor(&[("agent", agent), ("outcome", outcome)]);
        html! {
            td.num data-reason=(key) data-value=(n) data-share=(share) {
                @if n == 0 { "0" } @else { a href=(href) { (n) } }
                " " span.ci { (format!("{:.0}%", 100.0 * share)) }
            }
        }
    };
    html! {
        p.note {
            "How each agent's failed simulations failed: graded with reward 0, or stopped by an "
            "infrastructure error. A simulation can fail both the database check and an NL "
            "assertion, so the shares can add up to more than 100%. Turn limit: the simulation "
            "reached the most agent turns (tau2's max_steps) and was not graded further. Other: "
            "reward 0 for none of these reasons. A count links to those simulations."
        }
        div.table-box {
            table.data #tau2-reasons-table {
                thead { tr {
                    th { "Agent" }
                    th.num { "Failed" }
                    th.num { "Database check failed" }
                    th.num { "NL assertion not met" }
                    th.num { "Turn limit reached" }
                    th.num { "Infrastructure error" }
                    th.num { "Other" }
                } }
                tbody {
                    @for r in rows {
                        @let of = r.failed + r.infra_errors;
                        tr data-agent=(r.agent) {
                            td { span.agent-name { (r.agent) } }
                            td.num data-reason="failed" data-value=(of) { (of) }
                            (cell(&r.agent, "db_miss", "db_miss", r.db_misses, of))
                            (cell(&r.agent, "nl_miss", "nl_miss", r.nl_misses, of))
                            (cell(&r.agent, "max_steps", "max_steps", r.max_steps, of))
                            (cell(&r.agent, "infra_error", "infra_error", r.infra_errors, of))
                            (cell(&r.agent, "other", "fail", r.other_failures, of))
                        }
                    }
                }
            }
        }
    }
}

/// The style of the tau2 sections.
pub const TAU2_CSS: &str = r#"
.tag.sim{background:transparent;color:var(--muted)}
.agent-name{overflow-wrap:anywhere}
#tau2-leaderboard-table td:first-child,#tau2-reasons-table td:first-child{min-width:10em;max-width:24em}
table.tau2-matrix td.cell{white-space:nowrap;padding:2px 5px;text-align:center}
table.tau2-matrix td.cell a{color:inherit;text-decoration:none;display:block}
table.tau2-matrix td.p-all{background:color-mix(in srgb,var(--good) 16%,var(--bg))}
table.tau2-matrix td.p-some{background:color-mix(in srgb,var(--warn) 22%,var(--bg))}
table.tau2-matrix td.p-none{background:color-mix(in srgb,var(--bad) 24%,var(--bg))}
table.tau2-matrix td.p-infra{background:var(--panel)}
table.tau2-matrix .infra{color:var(--warn);font-size:11px}
table.tau2-matrix th.rotated span{display:inline-block;white-space:normal;overflow-wrap:anywhere;max-inline-size:14em;text-align:left}
#tau2-explorer td.outcome .tag{white-space:nowrap}
#simulation-view .msg{padding:4px 8px;margin:3px 0;border-left:3px solid var(--line)}
#simulation-view .msg.assistant{border-left-color:var(--accent)}
#simulation-view .msg.user{background:var(--panel)}
#simulation-view .msg.tool{border-left-color:var(--warn);font-size:12px}
#simulation-view .msg.tool.error{border-left-color:var(--bad)}
#simulation-view .who{display:block;color:var(--muted);font-size:11px}
#simulation-view .text{white-space:pre-wrap}
#simulation-view .call code.tool{font-weight:600}
#simulation-view pre{margin:2px 0}
#simulation-view ul.assertions li.unmet{color:var(--bad)}
#simulation-view ul.assertions .why{display:block;color:var(--muted);font-size:12px}
"#;

/// The simulation explorer's script: its filters, columns and transcript view, mounted on the
/// shared engine ([`explorer::SCRIPT`]). Data are written as text only.
pub const TAU2_JS: &str = include_str!("../js/tau2.js");
