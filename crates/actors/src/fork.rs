//! `sage fork`: the stored dialogues of a run asked again at some of their turns
//! (`sage_core::fork`), through the dialogue driver: each branch is a dialogue that starts after
//! its parent's turns before the fork point ([`crate::dialogue::Start`]), replays the parent's
//! customer message there against the parent turn's reference, and ends at that turn or, with
//! `--continue`, plays on. Resumable (branches already in the new folder are kept) and held to a
//! cost budget, as a run is. Must run inside an actix `System`.

use crate::dialogue::{Reference, Replay, Start};
use crate::roles::Registry;
use crate::runner::{RunError, endpoints};
use crate::{DialogueActor, RunDialogue, start_local_roles};
use actix::{Actor, Addr};
use futures::StreamExt;
use sage_core::fork::{
    ForkConfig, ForkFold, Forked, branch_id, branch_ids, branch_job, fix_id, fix_source,
    kept_turns, points, reference, stored_reply, written_reply,
};
use sage_core::plan::RunConfig;
use sage_core::protocol::{DialogueRecord, Fork as ForkLink, TurnVerdict};
use sage_core::scoring::rejudge::agent_chat;
use sage_core::scoring::summary::reached_target;
use sage_core::scoring::turn::turn_logic;
use sage_core::sop::Sop;
use sage_ports::llm::Limiters;
use sage_ports::store::RunDir;
use std::cell::Cell;
use std::collections::{HashMap, HashSet};
use std::sync::Arc;

/// A fork to make.
pub struct Fork<'a> {
    /// The forked run's configuration (its models; the fork's models are among them).
    pub config: &'a RunConfig,
    /// How to fork.
    pub fork: &'a ForkConfig,
    /// The new folder's run id.
    pub run_id: &'a str,
    /// The budget of the fork's calls, US dollars: no parent is started once it is spent.
    pub max_cost_usd: Option<f64>,
}

/// Forks every dialogue stored in `from` into `to` as `job` says, `config.concurrency` parents
/// at a time (only those in flight are in memory), and counts what `to` holds then.
pub async fn fork(
    job: &Fork<'_>,
    sops: HashMap<String, Arc<Sop>>,
    from: &RunDir,
    to: &RunDir,
    progress: Option<indicatif::ProgressBar>,
) -> Result<Forked, RunError> {
    let config = job.config;
    let limiters = Limiters::default();
    let registry = Arc::new(Registry::sage(
        config,
        sops.clone(),
        endpoints(config, &limiters)?,
    ));
    let transport = Arc::new(start_local_roles(
        registry,
        &actix::Arbiter::current(),
        None,
    ));
    let driver = DialogueActor::for_run(config, sops.clone(), transport).start();

    // A resume: the branches already stored are kept (a parent whose every branch is stored
    // is not forked again), and what they cost counts. Ids are held as 64-bit hashes (8 bytes
    // a branch, as a run's resume holds its jobs).
    let key = |id: &str| sage_core::plan::derive_seed(id);
    let mut kept: HashSet<u64> = HashSet::new();
    let spent = Cell::new(0.0);
    if to.path().join("dialogues.jsonl").exists() {
        to.scan_dialogues(|r| {
            spent.set(spent.get() + r.cost_usd);
            kept.insert(key(&r.job.dialogue_id));
        })?;
    }
    let mut written: HashSet<u64> = HashSet::new();
    let over_budget = || job.max_cost_usd.is_some_and(|max| spent.get() >= max);

    // The stored parents, read on a thread of their own and handed over a few at a time.
    let concurrency = config.concurrency.max(1);
    let (parents, reader) = crate::runner::stored_records(from, concurrency);
    let left = Cell::new(0usize);
    let todo = parents.filter(|parent| {
        let ids = branch_ids(parent, job.fork);
        let fork = !ids.is_empty() && !ids.iter().all(|id| kept.contains(&key(id)));
        let start = fork && !over_budget();
        if fork && !start {
            left.set(left.get() + 1);
        }
        if let (Some(p), false) = (&progress, start) {
            p.inc(1);
        }
        futures::future::ready(start)
    });
    let mut writer = to.writer()?;
    let mut forked = std::pin::pin!(
        todo.map(|parent| branches(&driver, &sops, job, parent))
            .buffer_unordered(concurrency)
    );
    while let Some(records) = forked.next().await {
        for record in records? {
            // A parent forked again after an interruption: its stored branches stay as they are.
            let id = key(&record.job.dialogue_id);
            if !kept.contains(&id) && written.insert(id) {
                spent.set(spent.get() + record.cost_usd);
                writer.append(&record)?;
            }
        }
        if let Some(p) = &progress {
            p.inc(1);
        }
    }
    reader
        .await
        .map_err(|e| RunError::Runtime(e.to_string()))??;
    drop(writer);
    if let Some(p) = &progress {
        p.finish_and_clear();
    }
    // What the folder holds now, recounted from every branch (a resume's included).
    let mut fold = ForkFold::new(job.fork.fixes());
    to.scan_dialogues(|r| fold.add(&r))?;
    Ok(fold.finish(left.get()))
}

/// The branches of one parent: at each fork point, each model's samples and, for a failed
/// parent in a deviation fork that plays on, its fix.
async fn branches(
    driver: &Addr<DialogueActor>,
    sops: &HashMap<String, Arc<Sop>>,
    job: &Fork<'_>,
    parent: DialogueRecord,
) -> Result<Vec<DialogueRecord>, RunError> {
    let fork = job.fork;
    let sop = sops.get(&parent.job.scenario);
    let mut out = Vec::new();
    for index in points(&parent, fork.at) {
        let stored = &parent.turns[index];
        let Some((consensus, route)) = reference(stored) else {
            continue;
        };
        let kept = kept_turns(&parent, index);
        let reference = Reference {
            consensus: consensus.clone(),
            route: Ok(route.clone()),
            judge: fork.judge,
        };
        let replay = |reply, sample| Start {
            turns: kept.clone(),
            replay: Some(Replay {
                user_message: stored.user_message.clone(),
                reply,
                sample,
                reference: reference.clone(),
            }),
        };
        let link = |sample: u32, record: &DialogueRecord| ForkLink {
            parent: parent.job.dialogue_id.clone(),
            parent_model: parent.job.service_model.clone(),
            turn: stored.turn,
            sample,
            fix: None,
            logic: record
                .turns
                .get(index)
                .zip(sop)
                .and_then(|(t, sop)| turn_logic(t, sop)),
        };
        let mut samples = Vec::new();
        for model in &fork.models {
            for k in 0..fork.samples {
                let id = branch_id(&parent.job.dialogue_id, stored.turn, model, k);
                let branch = branch_job(&parent.job, job.run_id, id, stored.turn, model, fork);
                let mut record = play(driver, branch, replay(None, Some(fork.draw(k)))).await?;
                record.fork = Some(Box::new(link(k, &record)));
                samples.push((model, k, record));
            }
        }
        if fork.fixes() && !reached_target(&parent) {
            // The first sample (models in order, then samples) that followed the reference,
            // else a reply written from it; played on by the parent's own model.
            let follows = samples.iter().find(|(_, _, r)| {
                r.turns
                    .get(index)
                    .is_some_and(|t| t.verdict() == TurnVerdict::Followed)
            });
            let (reply, from) = match follows {
                Some((model, k, r)) => (stored_reply(&r.turns[index]), Some((model.as_str(), *k))),
                None => (
                    written_reply(&consensus, &route, agent_chat(&stored.outcome)),
                    None,
                ),
            };
            let model = &parent.job.service_model;
            let id = fix_id(&parent.job.dialogue_id, stored.turn, model);
            let branch = branch_job(&parent.job, job.run_id, id, stored.turn, model, fork);
            let mut record = play(driver, branch, replay(Some(reply), None)).await?;
            record.fork = Some(Box::new(ForkLink {
                fix: Some(fix_source(from)),
                ..link(0, &record)
            }));
            out.push(record);
        }
        out.extend(samples.into_iter().map(|(_, _, r)| r));
    }
    Ok(out)
}

/// A branch played by the dialogue driver.
async fn play(
    driver: &Addr<DialogueActor>,
    job: sage_core::protocol::DialogueJob,
    start: Start,
) -> Result<DialogueRecord, RunError> {
    driver
        .send(RunDialogue::from(job, start))
        .await
        .map_err(|e| RunError::Runtime(e.to_string()))
}
