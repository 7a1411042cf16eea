//! `sage run --suite support-desk`: wiring only.

use crate::actors::desk::{DeskModels, run_suite};
use crate::llm::Endpoint;
use crate::plan::desk::DeskConfig;
use crate::scenario::desk::Desk;
use crate::scoring::desk::{summarize, table};
use crate::store::{RunDir, now_utc};
use anyhow::Context;
use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;

/// The options of `sage run` that apply to the support desk.
pub struct DeskArgs<'a> {
    /// A desk configuration.
    pub config: Option<&'a Path>,
    /// Runs of each case.
    pub repeats: Option<u32>,
    /// Run seed.
    pub seed: Option<u64>,
    /// Conversations in flight.
    pub concurrency: Option<usize>,
    /// Most customer turns.
    pub max_turns: Option<u32>,
    /// Results folder.
    pub out: Option<&'a Path>,
    /// Run id.
    pub run_id: Option<&'a str>,
    /// No progress bar.
    pub quiet: bool,
}

/// Loads a store folder (store.yaml + cases.yaml), or the bundled Northline store.
pub fn load_desk(store: &str) -> anyhow::Result<Desk> {
    if store == "bundled" {
        let (s, c) = crate::scenario::bundled::NORTHLINE;
        return Ok(Desk::from_yaml(
            s,
            c,
            ("northline/store.yaml", "northline/cases.yaml"),
        )?);
    }
    let dir = Path::new(store);
    let read = |name: &str| {
        let path = dir.join(name);
        std::fs::read_to_string(&path).with_context(|| format!("{}", path.display()))
    };
    let (s, c) = (read("store.yaml")?, read("cases.yaml")?);
    let files = (
        dir.join("store.yaml").display().to_string(),
        dir.join("cases.yaml").display().to_string(),
    );
    Ok(Desk::from_yaml(&s, &c, (&files.0, &files.1))?)
}

/// `sage run --suite support-desk`.
pub fn run(args: DeskArgs<'_>) -> anyhow::Result<()> {
    let mut config = match args.config {
        Some(path) => {
            let text =
                std::fs::read_to_string(path).with_context(|| format!("{}", path.display()))?;
            DeskConfig::from_yaml(&text, &path.display().to_string())?
        }
        None => DeskConfig::default(),
    };
    if let Some(n) = args.repeats {
        config.repeats = n;
    }
    if let Some(n) = args.seed {
        config.seed = n;
    }
    if let Some(n) = args.concurrency {
        config.concurrency = n;
    }
    if let Some(n) = args.max_turns {
        config.max_turns = n;
    }
    if let Some(out) = args.out {
        config.output_dir = out.to_path_buf();
    }
    config.check("command line")?;
    let desk = Arc::new(load_desk(&config.store)?);
    let run_id = args
        .run_id
        .map(str::to_string)
        .unwrap_or_else(|| format!("{}-desk-s{}", now_utc().1, config.seed));
    let run = RunDir::create(&config.output_dir, &run_id)?;
    run.write_json("desk-config.json", &config)?;
    let needed: Vec<&String> = config
        .agents
        .iter()
        .chain(std::iter::once(&config.customer_model))
        .chain(&config.judge_models)
        .collect();
    let mut endpoints = HashMap::new();
    for m in config.models.iter().filter(|m| needed.contains(&&m.name)) {
        let endpoint =
            Endpoint::new(m.clone(), None).with_context(|| format!("model {}", m.name))?;
        endpoints.insert(m.name.clone(), Arc::new(endpoint));
    }
    let models = Arc::new(DeskModels {
        customer: endpoints[&config.customer_model].clone(),
        judges: [
            endpoints[&config.judge_models[0]].clone(),
            endpoints[&config.judge_models[1]].clone(),
        ],
        endpoints,
    });
    let total = config.agents.len() * desk.cases.len() * config.repeats as usize;
    eprintln!(
        "run {run_id}: {} cases x {} models x {} runs = {total} conversations -> {}",
        desk.cases.len(),
        config.agents.len(),
        config.repeats,
        run.path().display()
    );
    let progress = (!args.quiet).then(|| indicatif::ProgressBar::new(total as u64));
    let mut writer = run.jsonl_writer("desk.jsonl")?;
    let mut records = Vec::with_capacity(total);
    let mut failed = None;
    super::system(run_suite(&config, desk, models, &run_id, |record| {
        if let Err(e) = writer.append(&record) {
            failed.get_or_insert(e);
        }
        if let Some(p) = &progress {
            p.inc(1);
        }
        records.push(record);
    }));
    if let Some(e) = failed {
        return Err(e.into());
    }
    if let Some(p) = &progress {
        p.finish_and_clear();
    }
    let infra = records.iter().filter(|r| r.infra_error.is_some()).count();
    if infra > 0 {
        eprintln!(
            "{infra} conversations stopped early: a model could not be reached (see desk.jsonl)"
        );
    }
    let rows = summarize(
        records
            .iter()
            .map(|r| (r.model.as_str(), r.repeat, &r.run, r.cost_usd)),
    );
    let text = table(&rows);
    run.write_json("desk-summary.json", &rows)?;
    run.write_text("desk-leaderboard.txt", &text)?;
    println!("{text}");
    println!("results: {}", run.path().display());
    Ok(())
}
