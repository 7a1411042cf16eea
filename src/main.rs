//! The `sage` binary: a thin wrapper around [`sage::cli`].

// The engine allocates many small, short-lived strings per turn; mimalloc handles that pattern
// markedly better than the system allocator (docs/benchmarks.md).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> std::process::ExitCode {
    sage::cli::main()
}
