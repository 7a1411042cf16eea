//! `sage models check`: wiring only (the probes are `llm::probe`, the rehearsal of each role
//! with the run's real prompts is `actors::rehearsal`).

use anyhow::bail;
use clap::{Args, Subcommand};
use sage_actors::rehearsal;
use sage_core::plan::RunConfig;
use sage_ports::llm::Provider;
use sage_ports::llm::probe::{self, ModelReport, ProbeOptions, Role};
use sage_report::transcript::terminal_safe;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

/// `sage models ...`.
#[derive(Debug, Subcommand)]
pub enum ModelsCommand {
    /// Probe every model of a run configuration (a few short, bounded calls each), rehearse
    /// each role it plays with the run's real prompt for its first scenario (one call each),
    /// and print a capability table and the configuration lines to use; exits 1 when a role's
    /// rehearsal call fails (a format error is a warning).
    Check(CheckArgs),
}

/// Options of `sage models check`.
#[derive(Debug, Args)]
pub struct CheckArgs {
    /// A run configuration (docs/run-config.md); without it, the default run's models.
    #[arg(long)]
    config: Option<PathBuf>,
    /// Most seconds per probe or rehearsal call (a model's own timeout_secs when smaller).
    #[arg(long, default_value_t = 30.0)]
    timeout: f64,
}

/// Runs a `sage models` command.
pub fn run(cmd: ModelsCommand) -> anyhow::Result<ExitCode> {
    match cmd {
        ModelsCommand::Check(args) => check(args),
    }
}

/// The roles each model plays, in the configuration's model order (models in no role left out).
fn roles(config: &RunConfig) -> Vec<(&sage_ports::llm::ModelConfig, Vec<Role>)> {
    config
        .models
        .iter()
        .filter_map(|m| {
            let mut roles = Vec::new();
            if config.service_models.contains(&m.name) {
                roles.push(Role::Agent);
            }
            if config.customers().contains(&m.name) {
                roles.push(Role::Customer);
            }
            if config.judge_models.contains(&m.name) {
                roles.push(Role::Judge);
            }
            (!roles.is_empty()).then_some((m, roles))
        })
        .collect()
}

fn check(args: CheckArgs) -> anyhow::Result<ExitCode> {
    if !(args.timeout.is_finite() && args.timeout > 0.0 && args.timeout <= 600.0) {
        bail!(
            "--timeout {}: expected more than 0 and at most 600 seconds",
            args.timeout
        );
    }
    let (config, file) = match &args.config {
        Some(path) => (
            sage_ports::store::inputs::read_config(path)?,
            path.display().to_string(),
        ),
        None => (RunConfig::default(), "the default run".to_string()),
    };
    config.check(&file)?;
    // The rehearsal's scenario: the first the configuration names, as the run loads it.
    let first_scenario = sage_ports::store::inputs::load_scenarios(&config)?
        .into_iter()
        .next()
        .map(|(sop, _)| sop);
    let options = ProbeOptions {
        timeout: Duration::from_secs_f64(args.timeout),
    };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let mut reports: Vec<ModelReport> = Vec::new();
    for (model, roles) in roles(&config) {
        if matches!(model.provider, Provider::Openai | Provider::Anthropic) {
            eprintln!("probing {} ...", model.name);
        }
        reports.push(runtime.block_on(probe::probe(model, roles, &options)));
    }
    let real = reports.iter().any(|r| r.provider != Provider::Simulated);
    if let (true, Some(sop)) = (real, first_scenario) {
        eprintln!(
            "rehearsing the first turn of {} with each role's real prompt ...",
            sop.scenario().id
        );
        let found = runtime.block_on(rehearsal::rehearse(&config, sop, options.timeout))?;
        for f in found {
            if let Some(report) = reports.iter_mut().find(|r| r.name == f.model) {
                report.rehearsed(f.role, f.found, f.limits);
            }
        }
    }
    println!("{}", terminal_safe(&probe::render_table(&reports)));
    let advice = probe::render_advice(&reports);
    if !advice.is_empty() {
        println!("{advice}");
    }
    let failing: Vec<&str> = reports
        .iter()
        .filter(|r| !r.works())
        .map(|r| r.name.as_str())
        .collect();
    let refused: Vec<&str> = reports
        .iter()
        .filter(|r| r.format_errors())
        .map(|r| r.name.as_str())
        .collect();
    if !refused.is_empty() {
        eprintln!(
            "warning: a rehearsal answer did not parse (a real run records format errors) with: {}",
            refused.join(", ")
        );
    }
    if failing.is_empty() {
        Ok(ExitCode::SUCCESS)
    } else {
        eprintln!("a role cannot work with: {}", failing.join(", "));
        Ok(ExitCode::FAILURE)
    }
}
