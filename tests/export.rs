//! `sage export`: training data from a results folder, streamed.
//!
//! The fixture run (tests/data/export/fixture-run) is a small real run: the six bundled
//! scenarios, two cases each, three simulated agents, two repeats, at most four turns (72
//! dialogues). `openai-min90.jsonl` and `sharegpt-min90.json` are the outputs of the in-memory
//! implementation that preceded streaming (commit 7c49964) on it, kept to check that the
//! streamed output is the same bytes.

use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn sage(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_sage"))
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("sage runs")
}

fn data(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/export")
        .join(name)
}

fn fixture_run() -> String {
    data("fixture-run").display().to_string()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// `sage export` on the fixture run; its standard output (the command must succeed).
fn export(args: &[&str]) -> Vec<u8> {
    let run = fixture_run();
    let mut all = vec!["export", run.as_str()];
    all.extend_from_slice(args);
    let o = sage(&all);
    assert!(o.status.success(), "sage {all:?}: {}", stderr(&o));
    o.stdout
}

#[test]
fn the_existing_formats_give_the_bytes_the_in_memory_export_gave() {
    for (args, fixture) in [
        (
            &["--format", "openai", "--min-logic", "90"][..],
            "openai-min90.jsonl",
        ),
        (
            &["--format", "sharegpt", "--min-logic", "90"][..],
            "sharegpt-min90.json",
        ),
    ] {
        let expected = std::fs::read(data(fixture)).unwrap();
        let got = export(args);
        assert!(
            got == expected,
            "{args:?}: output differs from {fixture} ({} bytes, expected {})",
            got.len(),
            expected.len()
        );
    }
    // Every turn with an answer (2 MB each, so only their SHA-256 are kept).
    for (args, sha, lines) in [
        (
            &["--format", "openai"][..],
            "2843d4af3b125c27dfabaf6c4871c102896aa424dbe63cc25a78d98b5cc3a1db",
            276,
        ),
        (
            &["--format", "sharegpt"][..],
            "9dfcf5ad3e98c37aa322d346921938fab1ee350cdb576d71c7366b3c3cf3d611",
            0,
        ),
    ] {
        let got = export(args);
        if lines > 0 {
            assert_eq!(got.iter().filter(|b| **b == b'\n').count(), lines);
        }
        assert_eq!(hex(&Sha256::digest(&got)), sha, "{args:?}");
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}
