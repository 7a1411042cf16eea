//! JetStream does not grow without end: the records stream ages records out after the
//! configured retention (changed on a stream that exists), and `sage forget` removes a complete
//! run from the runs bucket (an incomplete one only with --force).

mod common;

use common::cluster::{Nats, Sage, wait_status};
use common::sage_ok;
use common::write_config;
use std::process::Command;
use std::time::{Duration, Instant};

/// The records stream's max_age, once it exists.
fn records_max_age(url: &str) -> Duration {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(async {
            let js = async_nats::jetstream::new(async_nats::connect(url).await.unwrap());
            let started = Instant::now();
            loop {
                if let Ok(mut stream) = js.get_stream("SAGE_RECORDS").await {
                    return stream.info().await.unwrap().config.max_age;
                }
                assert!(
                    started.elapsed() < Duration::from_secs(30),
                    "no records stream"
                );
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        })
}

#[test]
fn records_age_out_and_a_complete_run_can_be_forgotten() {
    let dir = common::cluster::test_dir();
    let config = write_config(dir.path(), "null", 1, 21);
    let nats = Nats::start(dir.path());
    let url = nats.url();
    let out = dir.path().join("results");
    let args = |hours: &str| {
        vec![
            "--nats".to_string(),
            url.clone(),
            "--metrics-addr".into(),
            "127.0.0.1:0".into(),
            "--records-max-age-hours".into(),
            hours.into(),
        ]
    };
    let strs = |v: &Vec<String>| v.iter().map(String::as_str).collect::<Vec<_>>().join(" ");
    let first = args("2");
    let mut aggregator = Sage::aggregator(
        dir.path(),
        &out,
        &first.iter().map(String::as_str).collect::<Vec<_>>(),
    );
    let started = Instant::now();
    while records_max_age(&url) != Duration::from_secs(2 * 3600) {
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "{}",
            strs(&first)
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    // Another retention on the same stream: updated when the next process starts.
    aggregator.terminate(Duration::from_secs(20));
    let second = args("48");
    let _aggregator = Sage::aggregator(
        dir.path(),
        &out,
        &second.iter().map(String::as_str).collect::<Vec<_>>(),
    );
    let started = Instant::now();
    while records_max_age(&url) != Duration::from_secs(48 * 3600) {
        assert!(started.elapsed() < Duration::from_secs(30), "not updated");
        std::thread::sleep(Duration::from_millis(100));
    }
    // An incomplete run is not forgotten without --force.
    sage_ok(&[
        "sweep", "--nats", &url, "--config", &config, "--run-id", "kept",
    ]);
    let refused = Command::new(env!("CARGO_BIN_EXE_sage"))
        .args(["forget", "--nats", &url, "kept"])
        .output()
        .unwrap();
    assert_eq!(refused.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&refused.stderr).contains("is not complete"),
        "{}",
        String::from_utf8_lossy(&refused.stderr)
    );
    let _worker = Sage::spawn(
        dir.path(),
        "worker",
        &["worker", "--nats", &url, "--metrics-addr", "127.0.0.1:0"],
    );
    wait_status(&url, "kept", Duration::from_secs(120), |s| {
        s["state"] == "complete"
    });
    sage_ok(&["forget", "--nats", &url, "kept"]);
    let listed = sage_ok(&["status", "--nats", &url, "--json"]);
    let runs: serde_json::Value = serde_json::from_str(&listed).unwrap();
    assert_eq!(runs, serde_json::json!([]), "{listed}");
    // The results folder stays.
    assert!(out.join("kept/summary.json").exists());
}
