//! What to run: the run configuration (run.yaml) and the dialogue jobs it expands to, sampled
//! intent-balanced and then supplemented so that every route of every scenario is exercised
//! (the paper's path coverage, section 3.2.1). Pure and deterministic for a seed.

pub mod config;
pub mod desk;
pub mod model;
pub mod rejudge;

pub use config::RunConfig;

use crate::protocol::DialogueJob;
use crate::scenario::{Domain, ValueBox};
use crate::sop::{Assignment, Sop, symbolic};
use rand::seq::IndexedRandom;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::collections::BTreeMap;
use std::hash::{Hash, Hasher};
use std::sync::Arc;

/// A stable 64-bit seed from any hashable parts (the run seed and a dialogue's coordinates):
/// FNV-1a over the parts' bytes, integers little-endian and `usize` as 64 bits, so the same
/// parts give the same seed on every platform and Rust version (std's default hasher promises
/// neither).
pub fn derive_seed(parts: impl Hash) -> u64 {
    let mut h = StableHasher(0xcbf2_9ce4_8422_2325);
    parts.hash(&mut h);
    h.finish()
}

/// FNV-1a, 64 bits.
struct StableHasher(u64);

impl Hasher for StableHasher {
    fn finish(&self) -> u64 {
        // A final mix so that nearby inputs give unrelated seeds.
        let mut x = self.0;
        x ^= x >> 33;
        x = x.wrapping_mul(0xff51_afd7_ed55_8ccd);
        x ^= x >> 33;
        x
    }
    fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.0 ^= u64::from(*b);
            self.0 = self.0.wrapping_mul(0x0100_0000_01b3);
        }
    }
    fn write_u16(&mut self, i: u16) {
        self.write(&i.to_le_bytes());
    }
    fn write_u32(&mut self, i: u32) {
        self.write(&i.to_le_bytes());
    }
    fn write_u64(&mut self, i: u64) {
        self.write(&i.to_le_bytes());
    }
    fn write_usize(&mut self, i: usize) {
        self.write(&(i as u64).to_le_bytes());
    }
    fn write_i64(&mut self, i: i64) {
        self.write(&i.to_le_bytes());
    }
}

/// A fingerprint of a job: a stable hash of its JSON with the keys of every object sorted (so
/// the order a map's keys were read in does not matter), so a record's job can be told from
/// the job planned under the same dialogue id by another configuration.
pub fn fingerprint(job: &impl serde::Serialize) -> u64 {
    let canonical = serde_json::to_value(job).unwrap_or_default();
    derive_seed(serde_json::to_vec(&canonical).unwrap_or_default())
}

/// The jobs of a run as its records must match them, and which of them are stored: each
/// dialogue id (as a 64-bit hash) with its job's [`fingerprint`]. A record of a dialogue id
/// that is not here, or whose job differs, is not of this run (another run's, another
/// configuration's, or forged). Kept sorted by id hash, with a bit per job for "stored": 16
/// bytes and a bit a job (16 MB for a million), looked up by binary search.
#[derive(Debug, Clone, Default)]
pub struct JobSet {
    /// `(id hash, fingerprint)`, sorted by id hash, one entry per id.
    jobs: Vec<(u64, u64)>,
    /// A bit per entry of `jobs`: stored.
    stored: Vec<u64>,
    done: usize,
}

/// A record that is not of the run.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Foreign {
    /// Its dialogue id is no job of the run.
    #[error("dialogue `{0}` is not a job of this run")]
    UnknownId(String),
    /// A job of the run has this id, but the record's job differs (another seed, model or case).
    #[error("dialogue `{0}` was played from another job than this run's (another configuration)")]
    OtherJob(String),
    /// It names another run.
    #[error("dialogue `{dialogue}` belongs to run `{run}`")]
    OtherRun {
        /// Its dialogue id.
        dialogue: String,
        /// The run it names.
        run: String,
    },
}

/// The key of a dialogue id in a [`JobSet`].
fn id_key(dialogue_id: &str) -> u64 {
    derive_seed(dialogue_id)
}

impl JobSet {
    /// The set of `jobs`, each identified by `id`, none stored yet.
    pub fn of<J: serde::Serialize>(
        jobs: impl IntoIterator<Item = J>,
        id: impl Fn(&J) -> &str,
    ) -> JobSet {
        let mut jobs: Vec<(u64, u64)> = jobs
            .into_iter()
            .map(|j| (id_key(id(&j)), fingerprint(&j)))
            .collect();
        // The last job of an id wins, as a map would keep it (planned ids are unique).
        jobs.reverse();
        jobs.sort_by_key(|&(key, _)| key);
        jobs.dedup_by_key(|&mut (key, _)| key);
        jobs.shrink_to_fit();
        JobSet {
            stored: vec![0; jobs.len().div_ceil(64)],
            jobs,
            done: 0,
        }
    }

    /// The position of `dialogue_id`'s entry.
    fn find(&self, dialogue_id: &str) -> Option<usize> {
        let key = id_key(dialogue_id);
        self.jobs.binary_search_by_key(&key, |&(k, _)| k).ok()
    }

    fn stored_at(&self, at: usize) -> bool {
        self.stored[at / 64] & (1 << (at % 64)) != 0
    }

    /// Jobs in the set.
    pub fn len(&self) -> usize {
        self.jobs.len()
    }

    /// Whether the set is empty.
    pub fn is_empty(&self) -> bool {
        self.jobs.is_empty()
    }

    /// Jobs marked stored.
    pub fn done(&self) -> usize {
        self.done
    }

    /// Whether `job`, recorded under `dialogue_id`, is one of the set's jobs.
    pub fn check(&self, dialogue_id: &str, job: &impl serde::Serialize) -> Result<(), Foreign> {
        match self.find(dialogue_id) {
            None => Err(Foreign::UnknownId(dialogue_id.to_string())),
            Some(at) if self.jobs[at].1 != fingerprint(job) => {
                Err(Foreign::OtherJob(dialogue_id.to_string()))
            }
            Some(_) => Ok(()),
        }
    }

    /// Marks the job of `dialogue_id` stored; false when it already was (or is no job).
    pub fn mark_done(&mut self, dialogue_id: &str) -> bool {
        match self.find(dialogue_id) {
            Some(at) if !self.stored_at(at) => {
                self.stored[at / 64] |= 1 << (at % 64);
                self.done += 1;
                true
            }
            _ => false,
        }
    }

    /// Whether the job of `dialogue_id` is stored.
    pub fn is_done(&self, dialogue_id: &str) -> bool {
        self.find(dialogue_id).is_some_and(|at| self.stored_at(at))
    }
}

/// One test case of a scenario: the truth and the customer, before it is crossed with models
/// and repeats.
#[derive(Debug, Clone, PartialEq)]
pub struct Case {
    /// Index within the scenario.
    pub index: usize,
    /// Index of the target route in `Sop::routes()`.
    pub route: usize,
    /// Intent id.
    pub intent: String,
    /// Persona id.
    pub persona: String,
    /// Field values (ground truth).
    pub fields: Assignment,
    /// Variable values.
    pub variables: Assignment,
    /// True when added to cover a route the balanced sample missed.
    pub supplemented: bool,
    /// False when no intent of the scenario reaches the route: the case then borrows the intent
    /// that agrees with the route on the most implied values.
    pub intent_matches: bool,
}

/// A random complete assignment inside a region (a random box, then a random value per key;
/// integers prefer the key's examples).
fn sample(sop: &Sop, region: &[ValueBox], rng: &mut ChaCha8Rng) -> (Assignment, Assignment) {
    let b = region.choose(rng).expect("regions are never empty");
    let sc = sop.scenario();
    let narrowed: ValueBox = sc
        .keys
        .iter()
        .zip(b)
        .map(|(k, d)| match d {
            Domain::Set(m) => {
                let bits: Vec<u32> = (0..64).filter(|i| m & (1u64 << i) != 0).collect();
                Domain::Set(1u64 << bits.choose(rng).copied().unwrap_or(0))
            }
            Domain::Ints(s) => {
                let examples = match &k.kind {
                    crate::scenario::KeyKind::Integer { examples, .. } => examples.clone(),
                    _ => Vec::new(),
                };
                let fitting: Vec<i64> = examples.into_iter().filter(|e| s.contains(*e)).collect();
                let v = match fitting.choose(rng) {
                    Some(v) => *v,
                    None => {
                        let (lo, hi) = s.ranges()[0];
                        let (lo, hi) = (
                            lo.max(-1_000_000),
                            hi.min(lo.max(-1_000_000).saturating_add(1_000_000)),
                        );
                        rng.random_range(lo..=hi.max(lo))
                    }
                };
                Domain::Ints(crate::scenario::IntSet::range(v, v))
            }
        })
        .collect();
    symbolic::representative(sop, &narrowed)
}

/// The cases of one scenario: `n` intent-balanced cases (intents in turn; within an intent, the
/// route exercised least so far), then extra cases for every route exercised fewer than
/// `min_per_route` times, each with a compatible intent where one exists (inverse configuration).
pub fn cases(sop: &Sop, n: usize, min_per_route: usize, seed: u64) -> Vec<Case> {
    let plan = CasePlan::new(sop, n, min_per_route, seed);
    (0..plan.len()).map(|i| plan.case(i)).collect()
}

/// Where a case's values are drawn from.
#[derive(Debug, Clone, Copy)]
enum Region {
    /// The part of a route that an intent covers: (intent, its k-th reachable route).
    Intent(usize, usize),
    /// A route's whole region (no intent reaches it).
    Route(usize),
}

/// One case as planned, before its values are drawn (about 40 bytes).
#[derive(Debug, Clone, Copy)]
struct Spec {
    route: usize,
    intent: Option<usize>,
    region: Region,
    supplemented: bool,
    matches: bool,
}

/// The cases of a scenario as [`cases`] draws them, each made only when asked for: which route
/// and intent every case has is decided up front (a few dozen bytes a case), and a case's values
/// come from its own generator (seeded by its index), so a case can be made at any time, in any
/// order, and is the same.
pub struct CasePlan<'a> {
    sop: &'a Sop,
    seed: u64,
    /// Per intent: the routes it can reach, with the part of each route's region it covers.
    per_intent: Vec<Vec<(usize, Vec<ValueBox>)>>,
    specs: Vec<Spec>,
}

impl<'a> CasePlan<'a> {
    /// The cases of `sop`: `n` intent-balanced ones, then the supplements to `min_per_route`.
    pub fn new(sop: &'a Sop, n: usize, min_per_route: usize, seed: u64) -> CasePlan<'a> {
        let sc = sop.scenario();
        let routes = sop.routes();
        let per_intent: Vec<Vec<(usize, Vec<ValueBox>)>> = sc
            .intents
            .iter()
            .map(|i| {
                sop.routes_within(&sop.intent_box(i))
                    .into_iter()
                    .map(|(rc, parts)| {
                        (
                            routes.iter().position(|r| std::ptr::eq(r, rc)).unwrap_or(0),
                            parts,
                        )
                    })
                    .collect()
            })
            .collect();
        let mut counts = vec![0usize; routes.len()];
        let mut used = vec![0usize; sc.intents.len()];
        let mut specs = Vec::new();
        let mut push = |spec: Spec, counts: &mut Vec<usize>, used: &mut Vec<usize>| {
            counts[spec.route] += 1;
            if let Some(i) = spec.intent {
                used[i] += 1;
            }
            specs.push(spec);
        };
        if !sc.intents.is_empty() {
            for k in 0..n {
                let intent = k % sc.intents.len();
                let candidates = &per_intent[intent];
                let Some(least) = candidates.iter().map(|(r, _)| counts[*r]).min() else {
                    continue;
                };
                let at = candidates
                    .iter()
                    .position(|(r, _)| counts[*r] == least)
                    .expect("a minimum exists");
                let spec = Spec {
                    route: candidates[at].0,
                    intent: Some(intent),
                    region: Region::Intent(intent, at),
                    supplemented: false,
                    matches: true,
                };
                push(spec, &mut counts, &mut used);
            }
        }
        for (route, rc) in routes.iter().enumerate() {
            while counts[route] < min_per_route {
                // A compatible intent, the least used one.
                let compatible = per_intent
                    .iter()
                    .enumerate()
                    .filter_map(|(i, rs)| rs.iter().position(|(r, _)| *r == route).map(|k| (i, k)))
                    .min_by_key(|(i, _)| used[*i]);
                let spec = match compatible {
                    Some((intent, k)) => Spec {
                        route,
                        intent: Some(intent),
                        region: Region::Intent(intent, k),
                        supplemented: true,
                        matches: true,
                    },
                    None => {
                        // No intent reaches this route: borrow the one agreeing on most implied
                        // values.
                        let region = &rc.region;
                        let agree = |i: usize| {
                            sc.intents[i]
                                .implies
                                .iter()
                                .filter(|(k, d)| !region[0][*k].intersect(d).is_empty())
                                .count()
                        };
                        let closest = (0..sc.intents.len())
                            .max_by_key(|&i| (agree(i), std::cmp::Reverse(used[i])));
                        Spec {
                            route,
                            intent: closest,
                            region: Region::Route(route),
                            supplemented: true,
                            matches: false,
                        }
                    }
                };
                push(spec, &mut counts, &mut used);
            }
        }
        CasePlan {
            sop,
            seed,
            per_intent,
            specs,
        }
    }

    /// Cases in the scenario.
    pub fn len(&self) -> usize {
        self.specs.len()
    }

    /// Whether the scenario has no case.
    pub fn is_empty(&self) -> bool {
        self.specs.is_empty()
    }

    /// Whether case `index` was added to bring a route up to `min_per_route` (not one of the
    /// intent-balanced cases asked for).
    pub fn supplemented(&self, index: usize) -> bool {
        self.specs[index].supplemented
    }

    /// The adversarial level of case `index`'s intent (`zero` without an intent).
    pub fn adversarial(&self, index: usize) -> crate::scenario::Adversarial {
        self.specs[index]
            .intent
            .and_then(|i| self.sop.scenario().intents.get(i))
            .map(|i| i.adversarial)
            .unwrap_or(crate::scenario::Adversarial::Zero)
    }

    /// Case `index`, its values drawn from its own generator.
    pub fn case(&self, index: usize) -> Case {
        let spec = self.specs[index];
        let sc = self.sop.scenario();
        let region: &[ValueBox] = match spec.region {
            Region::Intent(i, k) => &self.per_intent[i][k].1,
            Region::Route(r) => &self.sop.routes()[r].region,
        };
        let mut rng = ChaCha8Rng::seed_from_u64(derive_seed((self.seed, &sc.id, index)));
        let (fields, variables) = sample(self.sop, region, &mut rng);
        let persona = sc
            .personas
            .choose(&mut rng)
            .map(|p| p.id.clone())
            .unwrap_or_else(|| "default".into());
        Case {
            index,
            route: spec.route,
            intent: spec
                .intent
                .and_then(|i| sc.intents.get(i))
                .map(|i| i.id.clone())
                .unwrap_or_else(|| "unspecified".into()),
            persona,
            fields,
            variables,
            supplemented: spec.supplemented,
            intent_matches: spec.matches,
        }
    }
}

/// The case plan of `sop` in a run of `config`.
pub(crate) fn case_plan<'s>(config: &RunConfig, sop: &'s Sop) -> CasePlan<'s> {
    CasePlan::new(
        sop,
        config.dialogues_per_scenario,
        config.min_per_route,
        derive_seed((config.seed, &sop.scenario().id)),
    )
}

/// The indexes of the cases of `plan` whose level the run plays.
pub(crate) fn played(config: &RunConfig, plan: &CasePlan) -> impl Iterator<Item = usize> + use<> {
    let keep: Vec<bool> = (0..plan.len())
        .map(|i| config.adversarial_levels.contains(&plan.adversarial(i)))
        .collect();
    keep.into_iter()
        .enumerate()
        .filter_map(|(i, keep)| keep.then_some(i))
}

/// The jobs of a run, planned lazily: each case is made when its jobs are played (a scenario's
/// [`CasePlan`] holds a few dozen bytes a case), and the jobs (every case crossed with the
/// service models and the repeats) one at a time, so planning a run of any size holds neither
/// its cases nor its jobs. Dialogue ids are `scenario/case/model/rN`; the seed depends on
/// the case and the repeat but not on the model, so models meet the same customers (paired
/// comparison).
pub struct Plan<'a> {
    config: &'a RunConfig,
    run_id: String,
    /// Each scenario with its number of cases of a played adversarial level.
    scenarios: Vec<(Arc<Sop>, usize)>,
}

impl<'a> Plan<'a> {
    /// Plans `config` over `sops` (in this order) as run `run_id` (the cases are drawn once here
    /// to count them, and again when iterated).
    pub fn new(config: &'a RunConfig, run_id: &str, sops: &[Arc<Sop>]) -> Plan<'a> {
        Plan {
            config,
            run_id: run_id.to_string(),
            scenarios: sops
                .iter()
                .map(|sop| (sop.clone(), played(config, &case_plan(config, sop)).count()))
                .collect(),
        }
    }

    /// Jobs in the run.
    pub fn len(&self) -> usize {
        let cases: usize = self.scenarios.iter().map(|(_, n)| n).sum();
        cases
            * self.config.service_models.len()
            * self.config.customers().len()
            * self.config.repeats.max(1) as usize
    }

    /// Whether the run has no job.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Every job, made as it is asked for: scenario by scenario (its cases drawn then), case by
    /// case, each case with every model and repeat.
    pub fn jobs(&self) -> impl Iterator<Item = DialogueJob> + '_ {
        let config = self.config;
        self.scenarios.iter().flat_map(move |(sop, _)| {
            let plan = Arc::new(case_plan(config, sop));
            played(config, &plan).flat_map(move |index| {
                let (case, adversarial) = (Arc::new(plan.case(index)), plan.adversarial(index));
                self.case_jobs(sop, case, adversarial)
            })
        })
    }

    /// The jobs of one case: with every model under test, customer simulator and repeat.
    fn case_jobs<'s>(
        &'s self,
        sop: &'s Sop,
        case: Arc<Case>,
        adversarial: crate::scenario::Adversarial,
    ) -> impl Iterator<Item = DialogueJob> + 's {
        let config = self.config;
        config.service_models.iter().flat_map(move |model| {
            let case = case.clone();
            (0..config.customers().len()).flat_map(move |customer| {
                let case = case.clone();
                (0..config.repeats.max(1))
                    .map(move |repeat| self.job(sop, &case, adversarial, model, customer, repeat))
            })
        })
    }

    /// Every job in the order a run plays them: an adaptive run's random order
    /// ([`Plan::jobs_in_random_order`]), else the plan's ([`Plan::jobs`]).
    pub fn jobs_in_play_order(&self) -> Box<dyn Iterator<Item = DialogueJob> + Send + '_> {
        match self.config.adaptive_top {
            Some(_) => Box::new(self.jobs_in_random_order()),
            None => Box::new(self.jobs()),
        }
    }

    /// Every job, the cases in a random order across the scenarios (drawn from the run seed;
    /// each case with every model and repeat): an adaptive run's order, so that the dialogues
    /// a model has played at any time are a random sample of the run's cases, as its
    /// confidence sequence assumes. Holds each scenario's case plan and the list of cases
    /// played (16 bytes each).
    pub fn jobs_in_random_order(&self) -> impl Iterator<Item = DialogueJob> + '_ {
        let config = self.config;
        let plans: Arc<Vec<Arc<CasePlan>>> = Arc::new(
            self.scenarios
                .iter()
                .map(|(sop, _)| Arc::new(case_plan(config, sop)))
                .collect(),
        );
        let mut order: Vec<(usize, usize)> = plans
            .iter()
            .enumerate()
            .flat_map(|(s, plan)| played(config, plan).map(move |i| (s, i)))
            .collect();
        order.sort_by_key(|(s, i)| derive_seed((config.seed, "adaptive order", *s, *i)));
        order.into_iter().flat_map(move |(s, index)| {
            let plan = plans[s].clone();
            let sop = &self.scenarios[s].0;
            let (case, adversarial) = (Arc::new(plan.case(index)), plan.adversarial(index));
            self.case_jobs(sop, case, adversarial)
        })
    }

    /// The first job of each scenario (its first case played, with the first model under test,
    /// repeat 0; `None` for a scenario without a case played), in the order of the scenarios.
    pub fn first_jobs(&self) -> Vec<Option<DialogueJob>> {
        let model = self.config.service_models.first();
        self.scenarios
            .iter()
            .map(|(sop, _)| {
                let plan = case_plan(self.config, sop);
                let index = played(self.config, &plan).next()?;
                Some(self.job(
                    sop,
                    &plan.case(index),
                    plan.adversarial(index),
                    model?,
                    0,
                    0,
                ))
            })
            .collect()
    }

    /// The job of `case` of `sop` (at its intent's `adversarial` level) with `model`, the
    /// `customer`th customer simulator and repeat `repeat`. A case's dialogues under every
    /// simulator share its seed; those under the second and later simulators have the
    /// simulator in their id (`.../<model>@<simulator>/r<repeat>`), those under the first
    /// have the id a run with one simulator gives them.
    fn job(
        &self,
        sop: &Sop,
        case: &Case,
        adversarial: crate::scenario::Adversarial,
        model: &str,
        customer: usize,
        repeat: u32,
    ) -> DialogueJob {
        let (config, sc) = (self.config, sop.scenario());
        let user_model = config.customers()[customer].clone();
        let played_by = match customer {
            0 => String::new(),
            _ => format!("@{user_model}"),
        };
        DialogueJob {
            run_id: self.run_id.clone(),
            dialogue_id: format!("{}/{:04}/{model}{played_by}/r{repeat}", sc.id, case.index),
            scenario: sc.id.clone(),
            target: sop.routes()[case.route].route.clone(),
            fields: case.fields.clone(),
            variables: case.variables.clone(),
            intent: case.intent.clone(),
            persona: case.persona.clone(),
            adversarial,
            service_model: model.to_string(),
            user_model,
            user_model_index: u32::try_from(customer).unwrap_or(u32::MAX),
            judge_models: config.judge_models.clone(),
            judge_turns: config.judge_turns.clone(),
            max_turns: config.max_turns,
            seed: derive_seed((config.seed, &sc.id, case.index, repeat)),
            repeat,
        }
    }
}

/// Every job of a run in one list, sorted by dialogue id (small runs and tests; a large run
/// iterates [`Plan::jobs`]).
pub fn jobs(config: &RunConfig, run_id: &str, sops: &[Arc<Sop>]) -> Vec<DialogueJob> {
    let mut out: Vec<DialogueJob> = Plan::new(config, run_id, sops).jobs().collect();
    out.sort_by(|a, b| a.dialogue_id.cmp(&b.dialogue_id));
    out
}

/// How many cases exercise each route of a scenario: `path > ... -> action` to count.
pub fn coverage(sop: &Sop, cases: &[Case]) -> BTreeMap<String, usize> {
    sop.routes()
        .iter()
        .enumerate()
        .map(|(i, rc)| {
            let r = &rc.route;
            let outputs: String = r.outputs.iter().map(|(k, v)| format!(" {k}={v}")).collect();
            (
                format!("{} -> {}{}", r.path.join(">"), r.action, outputs),
                cases.iter().filter(|c| c.route == i).count(),
            )
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sop::Values;

    fn telecom() -> Sop {
        crate::sop::load(std::path::Path::new(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../scenarios/telecom_package.yaml"
        )))
        .unwrap()
    }

    #[test]
    fn cases_cover_every_route_and_route_to_their_target() {
        let sop = telecom();
        let cases = cases(&sop, 22, 2, 7);
        let cov = coverage(&sop, &cases);
        assert_eq!(cov.len(), sop.routes().len());
        assert!(cov.values().all(|n| *n >= 2), "{cov:?}");
        for c in &cases {
            let f: Values = c.fields.clone().into_iter().collect();
            let v: Values = c.variables.clone().into_iter().collect();
            assert_eq!(sop.route(&f, &v).unwrap(), sop.routes()[c.route].route);
            if !c.intent_matches {
                continue;
            }
            // The intent's implied values hold.
            let intent = sop
                .scenario()
                .intents
                .iter()
                .find(|i| i.id == c.intent)
                .unwrap();
            for (k, d) in &intent.implies {
                let key = &sop.scenario().keys[*k];
                let value = c
                    .fields
                    .get(&key.name)
                    .or_else(|| c.variables.get(&key.name))
                    .unwrap();
                assert!(
                    d.contains(key.point(value).unwrap()),
                    "{} {:?}",
                    c.intent,
                    value
                );
            }
        }
        // Intent-balanced: the first 22 cases cycle through the 11 intents twice.
        for i in 0..11 {
            assert_eq!(
                cases
                    .iter()
                    .take(22)
                    .filter(|c| c.intent == sop.scenario().intents[i].id)
                    .count(),
                2
            );
        }
        // Deterministic for a seed.
        assert_eq!(cases, super::cases(&sop, 22, 2, 7));
        assert_ne!(cases, super::cases(&sop, 22, 2, 8));
    }

    /// The default run's models and a second simulated customer, `user_models` as given.
    fn two_customers(extra: &str) -> Result<RunConfig, config::ConfigError> {
        let text = format!(
            "models:
  - {{name: a, provider: simulated, sim: {{kind: agent, profile: strong}}}}
  - {{name: b, provider: simulated, sim: {{kind: agent, profile: weak}}}}
  - {{name: kind, provider: simulated, sim: {{kind: user}}}}
  - {{name: drifts, provider: simulated, sim: {{kind: user, off_case_rate: 0.5}}}}
  - {{name: j, provider: simulated, sim: {{kind: judge}}}}
service_models: [a, b]
judge_models: [j]
dialogues_per_scenario: 4
{extra}
"
        );
        RunConfig::from_yaml(&text, "run.yaml")
    }

    #[test]
    fn several_customer_simulators_play_every_case_under_the_same_seed() {
        let config = two_customers("user_models: [kind, drifts]").unwrap();
        assert_eq!(
            config.user_model, "kind",
            "the first is the run's user_model"
        );
        assert_eq!(config.customers(), ["kind", "drifts"]);
        let sops = [Arc::new(telecom())];
        let one = RunConfig {
            user_models: Vec::new(),
            ..config.clone()
        };
        let (two, single) = (jobs(&config, "r", &sops), jobs(&one, "r", &sops));
        assert_eq!(Plan::new(&config, "r", &sops).len(), two.len());
        assert_eq!(two.len(), 2 * single.len());
        // The first simulator's jobs are those of the run with it alone.
        let firsts: Vec<&DialogueJob> = two.iter().filter(|j| j.user_model_index == 0).collect();
        assert_eq!(firsts, single.iter().collect::<Vec<_>>());
        for job in two.iter().filter(|j| j.user_model_index == 1) {
            assert_eq!(job.user_model, "drifts");
            let id = job.dialogue_id.replacen("@drifts/", "/", 1);
            assert_ne!(id, job.dialogue_id);
            let first = single
                .iter()
                .find(|j| j.dialogue_id == id)
                .expect("its case");
            assert_eq!(
                (job.seed, &job.fields, &job.intent),
                (first.seed, &first.fields, &first.intent)
            );
        }
        let estimate = crate::estimate::RunEstimate::new(&config, &sops);
        assert_eq!(estimate.dialogues, two.len());
        assert!(
            estimate.line().contains("x 2 customer simulators"),
            "{}",
            estimate.line()
        );
    }

    #[test]
    fn user_models_are_checked_where_they_are_read() {
        let problem = |extra: &str| two_customers(extra).unwrap_err().problem;
        assert!(
            problem("user_models: [kind, nobody]").contains("user_models: unknown model `nobody`")
        );
        assert!(problem("user_models: [kind, kind]").contains("`kind` is listed twice"));
        assert!(
            problem("user_models: [kind, a]")
                .contains("user_models: `a` is a simulated model of kind `agent`")
        );
        assert!(
            problem("user_model: drifts\nuser_models: [kind, drifts]")
                .contains("user_model: `drifts` while user_models starts with `kind`")
        );
        assert!(problem("user_models: [kind, drifts]\nadaptive_top: 1").contains("adaptive_top"));
        assert!(problem("user_models: [kind, drifts, j, a, b]").contains("expected at most 4"));
        // Given both, they agree: fine.
        let config = two_customers("user_model: kind\nuser_models: [kind, drifts]").unwrap();
        assert_eq!(config.customers().len(), 2);
    }

    #[test]
    fn a_job_set_knows_its_jobs_however_their_keys_are_ordered() {
        let config = RunConfig {
            dialogues_per_scenario: 3,
            ..RunConfig::default()
        };
        let jobs = jobs(&config, "r1", &[Arc::new(telecom())]);
        let set = JobSet::of(&jobs, |j| &j.dialogue_id);
        assert_eq!(set.len(), jobs.len());
        // Read back through a JSON value (object keys sorted): still the same job.
        let job = &jobs[0];
        let value = serde_json::to_value(job).unwrap();
        let read: DialogueJob = serde_json::from_value(value).unwrap();
        assert_eq!(set.check(&job.dialogue_id, &read), Ok(()));
        // Another seed, another id: not of this run.
        let mut other = job.clone();
        other.seed += 1;
        assert_eq!(
            set.check(&job.dialogue_id, &other),
            Err(Foreign::OtherJob(job.dialogue_id.clone()))
        );
        assert_eq!(
            set.check("telecom_package/9999/x/r0", job),
            Err(Foreign::UnknownId("telecom_package/9999/x/r0".into()))
        );
    }

    #[test]
    fn an_adaptive_order_has_the_same_jobs_cases_shuffled_across_scenarios() {
        let config = RunConfig {
            dialogues_per_scenario: 6,
            ..RunConfig::default()
        };
        let sops: Vec<Arc<Sop>> = ["telecom_package", "airline_refund", "online_education"]
            .iter()
            .map(|id| {
                let path = format!("{}/../../scenarios/{id}.yaml", env!("CARGO_MANIFEST_DIR"));
                Arc::new(crate::sop::load(std::path::Path::new(&path)).unwrap())
            })
            .collect();
        let plan = Plan::new(&config, "r1", &sops);
        let plain: Vec<DialogueJob> = plan.jobs().collect();
        let shuffled: Vec<DialogueJob> = plan.jobs_in_random_order().collect();
        let ids = |jobs: &[DialogueJob]| {
            let mut ids: Vec<String> = jobs.iter().map(|j| j.dialogue_id.clone()).collect();
            ids.sort();
            ids
        };
        assert_eq!(ids(&shuffled), ids(&plain));
        // Each case keeps its models together; the scenarios are mixed from the start.
        let models = config.service_models.len();
        for case in shuffled.chunks(models) {
            assert!(case.iter().all(|j| j.seed == case[0].seed));
        }
        let first: std::collections::BTreeSet<&str> = shuffled[..12 * models]
            .iter()
            .map(|j| j.scenario.as_str())
            .collect();
        assert_eq!(first.len(), 3, "{first:?}");
        let again: Vec<String> = plan.jobs_in_random_order().map(|j| j.dialogue_id).collect();
        assert!(
            again.iter().eq(shuffled.iter().map(|j| &j.dialogue_id)),
            "the same order"
        );
        assert!(
            !again.iter().eq(plain.iter().map(|j| &j.dialogue_id)),
            "another order"
        );
    }
}
