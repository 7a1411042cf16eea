//! The `sage` binary: a thin wrapper around [`sage::cli`].

fn main() -> std::process::ExitCode {
    sage::cli::main()
}
