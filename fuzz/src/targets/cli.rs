//! The command line (`sage::cli::Cli`, clap): arbitrary arguments (split at NUL bytes, not
//! necessarily UTF-8) are parsed with `try_parse_from`. Parsing is deterministic, and an error
//! (help and version included) renders.

use clap::{CommandFactory, Parser};
use sage::cli::Cli;
use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::sync::Once;

/// Feeds one input to what this target fuzzes (panics on what must not happen).
pub fn run(data: &[u8]) {
    static CHECKED: Once = Once::new();
    // clap's own consistency checks of the command definition, once.
    CHECKED.call_once(|| Cli::command().debug_assert());
    let argv: Vec<&OsStr> = std::iter::once(OsStr::new("sage"))
        .chain(data.split(|b| *b == 0).map(OsStr::from_bytes))
        .take(64)
        .collect();
    match Cli::try_parse_from(&argv) {
        Ok(cli) => {
            let again = Cli::try_parse_from(&argv).expect("the same arguments parse again");
            assert_eq!(format!("{cli:?}"), format!("{again:?}"));
        }
        Err(e) => {
            let _ = (e.kind(), e.render().to_string());
        }
    }
}
