//! The command line: parses arguments, wires the layers, prints. No logic of its own.

mod scenario;

use clap::{Parser, Subcommand};
use std::process::ExitCode;

/// SAGE-RS: graph-guided evaluation of LLM customer-service agents against their SOPs.
#[derive(Debug, Parser)]
#[command(name = "sage", version, about)]
pub struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Validate, inspect and route scenarios (SOP decision graphs).
    #[command(subcommand)]
    Scenario(scenario::ScenarioCommand),
}

/// Runs the command line with the process arguments; the exit code of the binary.
pub fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Scenario(cmd) => scenario::run(cmd),
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}
