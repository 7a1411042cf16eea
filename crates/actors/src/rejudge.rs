//! `sage rejudge`: the stored dialogues of a run judged again by a new panel. Only judge calls
//! are made (the agent's and the customer's lines are the stored ones), on the turns the new
//! configuration's `judge_turns` picks; each judged turn gets its new reference route from the
//! rule engine and its scores. Resumable (dialogues already in the new folder are kept) and
//! held to a cost budget on the new judges' calls, as a run is.

use crate::roles::{JudgePanel, Registry};
use crate::runner::{RunError, build_endpoints};
use futures::StreamExt;
use sage_core::plan::RunConfig;
use sage_core::protocol::{DialogueRecord, JudgeRequest};
use sage_core::scoring::rejudge::{
    Rejudged, agent_chat, apply_panel, forget_judges, history_before, judged_turns, recount,
};
use sage_core::sop::Sop;
use sage_ports::llm::Limiters;
use sage_ports::store::RunDir;
use std::cell::Cell;
use std::collections::{HashMap, HashSet};
use std::sync::Arc;

/// What a rejudge judges with: the new run's configuration and id, the stored run's panel.
pub struct Rejudge<'a> {
    /// The run's configuration with the new panel
    /// ([`sage_core::plan::rejudge::RejudgeConfig::apply`]).
    pub config: &'a RunConfig,
    /// The stored run's panel, whose calls are dropped from the records.
    pub old_judges: &'a [String],
    /// The budget of the new judges' calls, in US dollars.
    pub max_cost_usd: Option<f64>,
    /// The new run's id.
    pub run_id: &'a str,
}

/// Judges again every dialogue stored in `from` into `to` as `job` says, `config.concurrency`
/// dialogues at a time (only those in flight are in memory).
pub async fn rejudge(
    job: &Rejudge<'_>,
    sops: HashMap<String, Arc<Sop>>,
    from: &RunDir,
    to: &RunDir,
    progress: Option<indicatif::ProgressBar>,
) -> Result<Rejudged, RunError> {
    let Rejudge {
        config,
        old_judges,
        max_cost_usd,
        run_id,
    } = *job;
    let judges: Vec<_> = config
        .models
        .iter()
        .filter(|m| config.judge_models.contains(&m.name))
        .cloned()
        .collect();
    let limiters = Limiters::default();
    let endpoints = build_endpoints(&judges, config.cache_dir.clone(), &limiters)?;
    let panel = JudgePanel(Arc::new(Registry::sage(config, sops.clone(), endpoints)));
    let is_judge = |model: &str| config.judge_models.iter().any(|j| j == model);
    let judge_cost = |r: &DialogueRecord| -> f64 {
        r.calls()
            .filter(|c| is_judge(&c.model))
            .map(|c| c.cost_usd)
            .sum()
    };

    // A resume: the dialogues already judged into `to` are kept, and their judges' cost counts.
    let mut done = Rejudged::default();
    let mut stored: HashSet<String> = HashSet::new();
    if to.path().join("dialogues.jsonl").exists() {
        to.scan_dialogues(|r| {
            done.cost_usd += judge_cost(&r);
            stored.insert(r.job.dialogue_id);
        })?;
    }
    done.kept = stored.len();
    let spent = Cell::new(done.cost_usd);
    let over_budget = || max_cost_usd.is_some_and(|max| spent.get() >= max);

    // The stored records, read on a thread of their own and handed over a few at a time, so
    // only the dialogues in flight are in memory.
    let (records, reader) = crate::runner::stored_records(from, config.concurrency);
    let left = Cell::new(0usize);
    let mut writer = to.writer()?;
    let todo = records.filter(|r| {
        let play = if stored.contains(&r.job.dialogue_id) {
            false
        } else if over_budget() {
            left.set(left.get() + 1);
            false
        } else {
            true
        };
        futures::future::ready(play)
    });
    let mut judged = std::pin::pin!(
        todo.map(|record| judge_dialogue(&panel, &sops, config, old_judges, run_id, record))
            .buffer_unordered(config.concurrency.max(1))
    );
    while let Some((record, calls)) = judged.next().await {
        spent.set(spent.get() + judge_cost(&record));
        done.judged += 1;
        done.judge_calls += calls;
        writer.append(&record)?;
        if let Some(p) = &progress {
            p.inc(1);
        }
    }
    reader
        .await
        .map_err(|e| RunError::Runtime(e.to_string()))??;
    done.left_for_budget = left.get();
    done.cost_usd = spent.get();
    if let Some(p) = &progress {
        p.finish_and_clear();
    }
    Ok(done)
}

/// One stored dialogue judged again by `panel`: the old panel forgotten, the job set to the new
/// run's panel and turns, each turn `judge_turns` picks judged (one after the other, as the
/// judges read the conversation up to it). Returns the record and the judge calls made.
async fn judge_dialogue(
    panel: &JudgePanel,
    sops: &HashMap<String, Arc<Sop>>,
    config: &RunConfig,
    old_judges: &[String],
    run_id: &str,
    mut record: DialogueRecord,
) -> (DialogueRecord, usize) {
    forget_judges(&mut record, old_judges);
    record.job.run_id = run_id.to_string();
    record.job.judge_models = config.judge_models.clone();
    record.job.judge_turns = config.judge_turns.clone();
    let Some(sop) = sops.get(&record.job.scenario) else {
        return (record, 0);
    };
    let variables = sage_core::sop::values(&record.job.variables);
    let job = Arc::new(record.job.clone());
    let mut calls = 0;
    for index in judged_turns(&record, &job.judge_turns) {
        let turn = &record.turns[index];
        let reply = panel
            .handle(JudgeRequest {
                job: job.clone(),
                turn: turn.turn,
                history: Arc::new(history_before(&record, index)),
                user_message: turn.user_message.clone(),
                agent_chat: agent_chat(&turn.outcome).to_string(),
            })
            .await;
        calls += reply.calls.len();
        apply_panel(&mut record.turns[index], reply, sop, &variables);
    }
    recount(&mut record);
    (record, calls)
}
