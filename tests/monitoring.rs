//! Monitoring against the real tools.
//!
//! - The alerting rules of deploy/alerts.yml pass their unit tests (`promtool test rules
//!   deploy/alerts.test.yml`), and every alert is tested both firing and not firing.

mod common;

use std::path::Path;
use std::process::Command;

/// A YAML file of the repository as JSON.
fn yaml(path: &str) -> serde_json::Value {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(path);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path:?}: {e}"));
    serde_saphyr::from_str(&text).unwrap_or_else(|e| panic!("{path:?}: {e}"))
}

#[test]
fn the_alerting_rules_pass_their_promtool_tests() {
    let out = Command::new("promtool")
        .args(["test", "rules", "alerts.test.yml"])
        .current_dir(Path::new(env!("CARGO_MANIFEST_DIR")).join("deploy"))
        .output()
        .unwrap_or_else(|e| {
            panic!(
                "cannot run promtool ({e}): it must be on PATH (Debian: apt-get install prometheus)"
            )
        });
    assert!(
        out.status.success(),
        "promtool test rules deploy/alerts.test.yml:\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    // Every alert has an evaluation where it fires and one where it does not.
    let rules = yaml("deploy/alerts.yml");
    let tests = yaml("deploy/alerts.test.yml");
    let alerts: Vec<&str> = rules["groups"]
        .as_array()
        .expect("groups")
        .iter()
        .flat_map(|g| g["rules"].as_array().expect("rules"))
        .filter_map(|r| r["alert"].as_str())
        .collect();
    assert_eq!(alerts.len(), 5, "{alerts:?}");
    let evaluations: Vec<&serde_json::Value> = tests["tests"]
        .as_array()
        .expect("tests")
        .iter()
        .flat_map(|t| t["alert_rule_test"].as_array().expect("alert_rule_test"))
        .collect();
    for alert in alerts {
        let fired: Vec<bool> = evaluations
            .iter()
            .filter(|e| e["alertname"] == alert)
            .map(|e| e["exp_alerts"].as_array().is_some_and(|a| !a.is_empty()))
            .collect();
        assert!(
            fired.contains(&true) && fired.contains(&false),
            "{alert}: evaluations firing {fired:?}; each alert needs one firing and one not"
        );
    }
}
