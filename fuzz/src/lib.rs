//! What the fuzz targets share: the bundled scenarios and store compiled once, the role
//! registries a worker would serve them with, and the round-trip checks.
//!
//! Every target feeds outside input to one parser of SAGE-RS and checks that it never panics,
//! hangs or allocates without bound (libFuzzer's `-timeout`, `-rss_limit_mb` and
//! `-malloc_limit_mb`), and, where it is cheap, an invariant of what parsed (see
//! docs/fuzzing.md).

// The targets' bodies, one module each: `fuzz/fuzz_targets/NAME.rs` feeds libFuzzer's inputs
// to `NAME::run`, and tests/fuzz_corpus.rs replays every committed corpus through them in
// `cargo test` (no sanitizer build), including core.rs and runtime.rs as this file does (the
// module names must stay). The targets of the core build without the runtime; the others need
// the `runtime` feature (default).
#[path = "core.rs"]
mod core_targets;
pub use core_targets::*;

#[cfg(feature = "runtime")]
#[path = "runtime.rs"]
mod runtime_targets;
#[cfg(feature = "runtime")]
pub use runtime_targets::*;
