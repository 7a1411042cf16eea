//! `sage scenario ...`: validate, paths, route, graph, draft, schema, diff.

use anyhow::{Context, bail};
use clap::{Subcommand, ValueEnum};
use sage_core::prompts::draft::Step;
use sage_core::scenario::{KeyKind, Scope, Value};
use sage_core::scoring::summary::route_key;
use sage_core::sop::{self, Values};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

#[derive(Debug, Subcommand)]
pub enum ScenarioCommand {
    /// Check scenario files; prints `ok: FILE` for each valid one, the problems otherwise.
    Validate {
        /// Scenario YAML files, or support-desk folders (store.yaml and cases.yaml).
        #[arg(required = true)]
        files: Vec<PathBuf>,
    },
    /// List every route of the SOP with an assignment that produces it.
    Paths {
        /// Scenario YAML file.
        file: PathBuf,
        /// Print a JSON array of {path, action, outputs, fields, variables}.
        #[arg(long)]
        json: bool,
    },
    /// Run the rule engine: the reference path, action and outputs for the given values.
    Route {
        /// Scenario YAML file.
        file: PathBuf,
        /// A field or variable value, e.g. `--set ConsumptionType=Enquiry --set Penalty=0`.
        #[arg(long = "set", value_name = "KEY=VALUE")]
        set: Vec<String>,
        /// Print {path, action, outputs} as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Print the decision graph.
    Graph {
        /// Scenario YAML file.
        file: PathBuf,
        /// Output format.
        #[arg(long, value_enum, default_value = "dot")]
        format: GraphFormat,
    },
    /// Draft a scenario from a policy document with a model, in three steps (the keys, the
    /// stages, the routes) each checked before the next: the validator's messages go back to the
    /// model until the step validates or its rounds are spent; every part cites the policy
    /// sentences it comes from. Writes OUT (when it validates) and OUT.draft.json (every
    /// round), prints the route table, the uncovered sentences and the uncited parts
    /// (docs/scenario-format.md, "Drafting from a policy"). Exit code 1 when no draft validated.
    Draft {
        /// The policy (plain text or Markdown).
        policy: PathBuf,
        /// The model that drafts (a name from --config's `models`).
        #[arg(long)]
        model: String,
        /// The run configuration declaring the model.
        #[arg(long, value_name = "FILE")]
        config: PathBuf,
        /// Where to write the scenario YAML.
        #[arg(long, value_name = "FILE")]
        out: PathBuf,
        /// Most rounds of each step (a first answer, then repairs).
        #[arg(long, default_value_t = 4, value_parser = clap::value_parser!(u32).range(1..=20))]
        rounds: u32,
        /// The most the rounds may cost, in US dollars.
        #[arg(long, value_name = "USD")]
        max_cost_usd: Option<f64>,
        /// Draft the whole scenario in one step (for a capable model) instead of three (the
        /// keys, the stages, the routes), each with its own rounds.
        #[arg(long)]
        one_shot: bool,
    },
    /// Print the JSON Schema of the scenario file format (for an editor, e.g. the YAML language
    /// server's `# yaml-language-server: $schema=...`); the validator checks what a schema
    /// cannot (references, coverage, reachability).
    Schema,
    /// Compare two scenarios route by route: the routes one has and the other lacks, and each
    /// region of assignments they route to another action (or along another path), with an
    /// assignment to show. Exit code 0 when they route every assignment alike, 1 when not.
    Diff {
        /// The first scenario (e.g. the hand-written one).
        a: PathBuf,
        /// The second (e.g. a draft).
        b: PathBuf,
        /// Print the differences as JSON.
        #[arg(long)]
        json: bool,
    },
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum GraphFormat {
    /// Graphviz DOT.
    Dot,
    /// Mermaid flowchart.
    Mermaid,
}

pub fn run(cmd: ScenarioCommand) -> anyhow::Result<ExitCode> {
    match cmd {
        ScenarioCommand::Validate { files } => Ok(validate(&files)),
        ScenarioCommand::Paths { file, json } => paths(&file, json),
        ScenarioCommand::Route { file, set, json } => route(&file, &set, json),
        ScenarioCommand::Diff { a, b, json } => diff(&a, &b, json),
        ScenarioCommand::Schema => {
            let schema = sage_core::protocol::scenario_schema::scenario_schema();
            let mut json = schema.schema.to_json();
            if let Some(object) = json.as_object_mut() {
                object.insert(
                    "$schema".into(),
                    "https://json-schema.org/draft/2020-12/schema".into(),
                );
                object.insert("title".into(), "SAGE-RS scenario".into());
            }
            emit(&(serde_json::to_string_pretty(&json)? + "\n"));
            Ok(ExitCode::SUCCESS)
        }
        ScenarioCommand::Draft {
            policy,
            model,
            config,
            out,
            rounds,
            max_cost_usd,
            one_shot,
        } => {
            let steps: &[Step] = if one_shot {
                &[Step::Whole]
            } else {
                &Step::STEPS
            };
            draft(
                &policy,
                &model,
                &config,
                &out,
                (steps, rounds),
                max_cost_usd,
            )
        }
        ScenarioCommand::Graph { file, format } => {
            let sop = sop::load(&file)?;
            emit(&match format {
                GraphFormat::Dot => sop.to_dot(),
                GraphFormat::Mermaid => sop.to_mermaid(),
            });
            Ok(ExitCode::SUCCESS)
        }
    }
}

fn validate(files: &[PathBuf]) -> ExitCode {
    let mut failed = false;
    for file in files {
        if file.is_dir() {
            match sage_ports::store::inputs::load_desk(&file.display().to_string()) {
                Ok(desk) => {
                    let counts: Vec<String> = desk
                        .counts()
                        .iter()
                        .map(|(b, n)| format!("{n} {b:?}"))
                        .collect();
                    emit(&format!(
                        "ok: {} (support desk: {} orders; cases: {})\n",
                        file.display(),
                        desk.store.orders.len(),
                        counts.join(", ")
                    ));
                }
                Err(e) => {
                    failed = true;
                    eprintln!("{e:#}");
                }
            }
            continue;
        }
        match sop::load(file) {
            Ok(sop) => {
                emit(&format!("ok: {}\n", file.display()));
                for a in sop.unused_actions() {
                    eprintln!(
                        "{}: warning: action {a} is declared but no route reaches it",
                        file.display()
                    );
                }
            }
            Err(e) => {
                failed = true;
                eprintln!("{e}");
            }
        }
    }
    if failed {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}

fn paths(file: &Path, json: bool) -> anyhow::Result<ExitCode> {
    let sop = sop::load(file)?;
    if json {
        emit(&(serde_json::to_string_pretty(sop.routes())? + "\n"));
        return Ok(ExitCode::SUCCESS);
    }
    emit(&route_table(&sop));
    Ok(ExitCode::SUCCESS)
}

/// Every route of `sop` with an assignment that produces it, as `sage scenario paths` prints.
fn route_table(sop: &sop::Sop) -> String {
    let sc = sop.scenario();
    let combos = sc
        .field_combinations()
        .map_or_else(|| "unbounded".to_string(), |n| n.to_string());
    let mut text = format!(
        "{}: {} routes; {} field-value combinations\n",
        sc.id,
        sop.routes().len(),
        combos
    );
    let values = |m: &sop::Assignment| {
        m.iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
            .join(" ")
    };
    for (i, rc) in sop.routes().iter().enumerate() {
        text += &format!("{:>4}. {}\n", i + 1, route_key(&rc.route));
        text += &format!("      fields: {}\n", values(&rc.fields));
        if !rc.variables.is_empty() {
            text += &format!("      variables: {}\n", values(&rc.variables));
        }
    }
    text
}

fn draft(
    policy: &Path,
    model: &str,
    config: &Path,
    out: &Path,
    (steps, rounds): (&[Step], u32),
    max_cost_usd: Option<f64>,
) -> anyhow::Result<ExitCode> {
    use sage_core::prompts::draft;
    let text = super::read_text(policy, draft::MAX_POLICY_BYTES, "the policy")?;
    let sentences = draft::sentences(&text);
    if sentences.is_empty() {
        bail!("{}: no sentence of three words or more", policy.display());
    }
    if let Some(usd) = max_cost_usd {
        sage_core::plan::model::cost_budget("--max-cost-usd", usd).map_err(anyhow::Error::msg)?;
    }
    let file = config.display().to_string();
    let models = sage_core::plan::RunConfig::models_from_yaml(
        &std::fs::read_to_string(config).with_context(|| format!("--config {file}"))?,
        &file,
    )?;
    let Some(declared) = models.iter().find(|m| m.name == model) else {
        bail!(
            "--model {model}: not declared in {file}; expected one of: {}",
            models
                .iter()
                .map(|m| m.name.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        );
    };
    let endpoint = sage_ports::llm::Endpoint::new(declared.clone(), None)?;
    let label = out.display().to_string();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("starting the runtime")?;
    let sage_actors::draft::Drafted { log, last, valid } = runtime.block_on(
        sage_actors::draft::draft(&endpoint, &sentences, steps, rounds, max_cost_usd, &label),
    );
    let log_file = out.with_extension("draft.json");
    std::fs::write(&log_file, serde_json::to_string_pretty(&log)?)
        .with_context(|| format!("writing {}", log_file.display()))?;
    let per_step: Vec<String> = steps
        .iter()
        .map(|s| {
            let n = log.rounds.iter().filter(|r| r.step == *s).count();
            format!("{} {n}", s.name())
        })
        .collect();
    let mut report = format!(
        "{} rounds ({}) with {model} (${:.4}); every round in {}\n",
        log.rounds.len(),
        per_step.join(", "),
        log.cost_usd,
        log_file.display()
    );
    let Some(valid) = valid else {
        report += "no draft validated";
        if let Some(yaml) = last {
            let rejected = out.with_extension("rejected.yaml");
            std::fs::write(&rejected, yaml)
                .with_context(|| format!("writing {}", rejected.display()))?;
            report += &format!("; the last one: {}", rejected.display());
        }
        report += "\n";
        let last_round = log.rounds.last();
        if log.budget_spent {
            report += &format!(
                "stopped: --max-cost-usd {} spent\n",
                max_cost_usd.unwrap_or_default()
            );
        } else if let Some(e) = last_round.and_then(|r| r.call_error.as_ref()) {
            report += &format!("the model could not be reached: {e}\n");
        } else if let Some(round) = last_round {
            report += &format!(
                "step {} did not validate; its last answer's problems:\n",
                round.step.name()
            );
            for e in &round.errors {
                report += &format!("  {e}\n");
            }
        }
        emit(&report);
        return Ok(ExitCode::FAILURE);
    };
    std::fs::write(out, &valid.yaml).with_context(|| format!("writing {label}"))?;
    report += &format!("validated: {label}\n\n");
    report += &route_table(&valid.sop);
    let cited = draft::citations(&valid.sop, &sentences);
    for (title, items) in [
        (
            "policy sentences nothing cites (not covered)",
            &cited.uncovered,
        ),
        ("parts that cite nothing", &cited.uncited),
        (
            "citations that are no sentence of the policy",
            &cited.unknown,
        ),
    ] {
        if !items.is_empty() {
            report += &format!("\n{} {title}:\n", items.len());
            for i in items {
                report += &format!("  {i}\n");
            }
        }
    }
    let page = out.with_extension("html");
    let commands = [
        format!("sage scenario paths {label}"),
        format!("sage scenario diff HAND_WRITTEN.yaml {label}"),
        format!("sage run --config RUN.yaml    # RUN.yaml: scenarios: [{label}]"),
    ];
    let html = sage_report::draft::page(&sage_report::draft::Review {
        sop: &valid.sop,
        file: &label,
        sentences: &sentences,
        citations: &cited,
        log: &log,
        commands: &commands,
    });
    std::fs::write(&page, html).with_context(|| format!("writing {}", page.display()))?;
    report += &format!(
        "\nreview it (the graph and every citation): {}\n{}\n",
        page.display(),
        commands.join("\n")
    );
    emit(&report);
    Ok(ExitCode::SUCCESS)
}

fn route(file: &Path, sets: &[String], json: bool) -> anyhow::Result<ExitCode> {
    let sop = sop::load(file)?;
    let sc = sop.scenario();
    let mut fields = Values::new();
    let mut variables = Values::new();
    for s in sets {
        let (name, raw) = s
            .split_once('=')
            .with_context(|| format!("--set {s}: expected KEY=VALUE"))?;
        if fields.contains_key(name) || variables.contains_key(name) {
            bail!("--set {s}: `{name}` is already set; expected each key once");
        }
        let Some(key) = sc.keys.iter().find(|k| k.name == name) else {
            let names: Vec<&str> = sc.keys.iter().map(|k| k.name.as_str()).collect();
            bail!(
                "--set {s}: unknown key `{name}`; expected one of: {}",
                names.join(", ")
            );
        };
        let value = match key.kind {
            KeyKind::Boolean => Value::Bool(match raw {
                "true" => true,
                "false" => false,
                _ => bail!("--set {s}: {name} is a boolean; expected true or false"),
            }),
            KeyKind::Integer { .. } => Value::Int(raw.parse().with_context(|| {
                format!("--set {s}: {name} is an integer; expected a whole number")
            })?),
            KeyKind::Enum(_) => Value::Str(raw.to_string()),
        };
        if key.point(&value).is_none() {
            bail!(
                "--set {s}: `{raw}` is not a value of {name}; expected {}",
                key.expected()
            );
        }
        match key.scope {
            Scope::Field => fields.insert(name.to_string(), value),
            Scope::Variable => variables.insert(name.to_string(), value),
        };
    }
    let r = sop
        .route(&fields, &variables)
        .with_context(|| file.display().to_string())?;
    if json {
        emit(&(serde_json::to_string(&r)? + "\n"));
    } else {
        let mut text = format!("path: {}\naction: {}\n", r.path.join(">"), r.action);
        for (k, v) in &r.outputs {
            text += &format!("{k}: {v}\n");
        }
        emit(&text);
    }
    Ok(ExitCode::SUCCESS)
}

fn diff(a: &Path, b: &Path, json: bool) -> anyhow::Result<ExitCode> {
    let (sa, sb) = (sop::load(a)?, sop::load(b)?);
    let d = sop::diff::diff(&sa, &sb);
    let code = if d.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    };
    if json {
        emit(&(serde_json::to_string_pretty(&d)? + "\n"));
        return Ok(code);
    }
    let (na, nb) = (a.display(), b.display());
    if !d.keys.is_empty() {
        let mut text = format!("{na} and {nb} declare different keys (routes not compared):\n");
        for k in &d.keys {
            text += &format!("  {k}\n");
        }
        emit(&text);
        return Ok(code);
    }
    let route = route_key;
    let values = |m: &sop::Assignment| {
        m.iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
            .join(" ")
    };
    let mut text = format!(
        "{na}: {} routes; {nb}: {} routes\n",
        sa.routes().len(),
        sb.routes().len()
    );
    if d.is_empty() {
        text += "every assignment is routed alike\n";
    }
    for (title, routes) in [("only in", (&d.only_a, &na)), ("only in", (&d.only_b, &nb))] {
        if !routes.0.is_empty() {
            text += &format!("{title} {}:\n", routes.1);
            for r in routes.0 {
                text += &format!("  {}\n", route(r));
            }
        }
    }
    for (title, changes) in [
        ("routed to another action", &d.actions),
        ("routed to the same action along another path", &d.paths),
    ] {
        if !changes.is_empty() {
            text += &format!("{} regions {title}:\n", changes.len());
            for c in changes {
                text += &format!(
                    "  {}\n    {na}: {}\n    {nb}: {}\n",
                    [values(&c.fields), values(&c.variables)]
                        .iter()
                        .filter(|v| !v.is_empty())
                        .cloned()
                        .collect::<Vec<_>>()
                        .join(" "),
                    route(&c.a),
                    route(&c.b)
                );
            }
        }
    }
    emit(&text);
    Ok(code)
}

/// Writes to stdout; a closed pipe (`sage ... | head`) ends the output quietly, never a panic.
fn emit(text: &str) {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    let _ = out.write_all(text.as_bytes()).and_then(|()| out.flush());
}
