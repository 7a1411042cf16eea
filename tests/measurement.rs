//! The harness measures what it is given: a simulated agent with configured skills, run over
//! enough dialogues, shows measured classification accuracy, action derivation and format-error
//! rate whose 95% confidence intervals contain the configured values.

mod common;

use sage::actors::runner::run_embedded;
use sage::llm::sim::SimSpec;
use sage::llm::sim::agent::SkillOverrides;
use sage::plan::{self, RunConfig};
use sage::protocol::ServiceOutcome;
use sage::sop::Values;
use sage::store::RunDir;
use std::sync::Arc;

/// p-hat and the half-width of its 95% (normal approximation) interval.
fn proportion(successes: usize, n: usize) -> (f64, f64) {
    let p = successes as f64 / n as f64;
    (p, 1.96 * (p * (1.0 - p) / n as f64).sqrt())
}

#[test]
fn measured_skills_match_configured_skills() {
    let (accuracy, derivation, format_rate) = (0.80, 0.60, 0.10);
    let mut config = RunConfig::default();
    for m in &mut config.models {
        if let Some(SimSpec::Agent { skills, .. }) = &mut m.sim {
            // No degradation: the configured values hold at every turn and level.
            *skills = SkillOverrides {
                classification_accuracy: Some(accuracy),
                action_derivation: Some(derivation),
                format_error_rate: Some(format_rate),
                adversarial_penalty: Some([0.0; 3]),
                format_error_escalation: Some(0.0),
                cold_start: Some(1.0),
                fatigue: Some(0.0),
                ..SkillOverrides::default()
            };
        }
        if let Some(SimSpec::Judge { noise, .. }) = &mut m.sim {
            *noise = 0.0;
        }
    }
    config.service_models = vec!["sim-balanced".into()];
    config.dialogues_per_scenario = 100;
    config.max_turns = 10;
    config.seed = 7;
    let sops = vec![
        Arc::new(common::load("telecom_package")),
        Arc::new(common::load("ecommerce_refund")),
    ];
    let dir = tempfile::tempdir().unwrap();
    let run = RunDir::create(dir.path(), "m").unwrap();
    let jobs = plan::jobs(&config, "m", &sops);
    actix::System::new()
        .block_on(run_embedded(&config, &sops, &jobs, &run, None))
        .unwrap();
    let records = run.read_dialogues().unwrap();

    let (mut fields_right, mut fields_seen) = (0, 0);
    let (mut derived, mut valid) = (0, 0);
    let mut format_errors = 0;
    for r in &records {
        let sop = sops
            .iter()
            .find(|s| s.scenario().id == r.job.scenario)
            .unwrap();
        let variables: Values = r.job.variables.clone().into_iter().collect();
        for t in &r.turns {
            match &t.outcome {
                ServiceOutcome::Valid { turn } => {
                    valid += 1;
                    for (k, v) in &turn.classification {
                        fields_seen += 1;
                        fields_right += usize::from(r.job.fields.get(k) == Some(v));
                    }
                    let own = sop.route(&turn.classification, &variables).unwrap();
                    derived += usize::from(own.action == turn.action && own.path == turn.path);
                }
                ServiceOutcome::FormatError { .. } => format_errors += 1,
                ServiceOutcome::InfraError { .. } => panic!("no infrastructure errors expected"),
            }
        }
    }
    let (acc, acc_hw) = proportion(fields_right, fields_seen);
    let (der, der_hw) = proportion(derived, valid);
    let (fmt, fmt_hw) = proportion(format_errors, valid + format_errors);
    eprintln!(
        "classification {acc:.4} ± {acc_hw:.4} (n {fields_seen}); derivation {der:.4} ± {der_hw:.4} (n {valid}); format errors {fmt:.4} ± {fmt_hw:.4}"
    );
    assert!(fields_seen > 5_000 && valid > 1_000, "too few observations");
    assert!(
        (acc - accuracy).abs() <= acc_hw,
        "classification accuracy {acc} ± {acc_hw}, configured {accuracy}"
    );
    assert!(
        (der - derivation).abs() <= der_hw,
        "action derivation {der} ± {der_hw}, configured {derivation}"
    );
    assert!(
        (fmt - format_rate).abs() <= fmt_hw,
        "format-error rate {fmt} ± {fmt_hw}, configured {format_rate}"
    );

    // The summary counts the same turns the records hold: every format error, and every valid
    // answer either judged (`valid_turns`) or on a turn the judges were not asked about.
    let summary = sage::scoring::summarize(
        &records,
        &sage::scoring::Bootstrap {
            resamples: 200,
            ..Default::default()
        },
    );
    let all = &summary.models[0].all;
    assert_eq!(summary.models[0].model, "sim-balanced");
    assert_eq!(
        (all.valid_turns + all.unjudged_turns, all.format_error_turns),
        (valid, format_errors)
    );
}

/// The intervals' coverage is honest: over many seeds, the 95% interval of a simulated agent's
/// format-error rate and classification accuracy holds the configured value in about 95% of
/// the runs (binomial: 95 of 100 give or take 2.2; 88 to 99 is three standard deviations).
#[test]
fn the_95_percent_interval_holds_the_configured_value_in_about_95_percent_of_seeds() {
    let (accuracy, format_rate) = (0.7, 0.2);
    let mut config = RunConfig::default();
    for m in &mut config.models {
        if let Some(SimSpec::Agent { skills, .. }) = &mut m.sim {
            *skills = SkillOverrides {
                classification_accuracy: Some(accuracy),
                format_error_rate: Some(format_rate),
                adversarial_penalty: Some([0.0; 3]),
                format_error_escalation: Some(0.0),
                cold_start: Some(1.0),
                fatigue: Some(0.0),
                ..SkillOverrides::default()
            };
        }
        if let Some(SimSpec::Judge { noise, .. }) = &mut m.sim {
            *noise = 0.0;
        }
    }
    config.service_models = vec!["sim-balanced".into()];
    config.dialogues_per_scenario = 30;
    config.min_per_route = 0;
    config.max_turns = 6;
    let sops = vec![Arc::new(common::load("telecom_package"))];
    let (mut format_covered, mut accuracy_covered) = (0, 0);
    let seeds = 100;
    for seed in 0..seeds {
        config.seed = seed;
        let dir = tempfile::tempdir().unwrap();
        let run = RunDir::create(dir.path(), "c").unwrap();
        let jobs = plan::Plan::new(&config, "c", &sops);
        let summary = actix::System::new()
            .block_on(run_embedded(&config, &sops, &jobs, &run, None))
            .unwrap()
            .report
            .summary();
        let all = &summary.models[0].all;
        let holds = |m: Option<sage::scoring::Metric>, value: f64| {
            let m = m.expect("observed");
            m.ci_low <= value && value <= m.ci_high
        };
        format_covered += usize::from(holds(all.format_error_rate, 100.0 * format_rate));
        // A format-error turn scores Acc_cls 0: the expected value is over every answer.
        let expected = 100.0 * (1.0 - format_rate) * accuracy;
        accuracy_covered += usize::from(holds(all.acc_cls, expected));
    }
    eprintln!(
        "coverage over {seeds} seeds: format errors {format_covered}, accuracy {accuracy_covered}"
    );
    for covered in [format_covered, accuracy_covered] {
        assert!(
            (88..=99).contains(&covered),
            "the 95% interval held the configured value in {covered} of {seeds} runs"
        );
    }
}
