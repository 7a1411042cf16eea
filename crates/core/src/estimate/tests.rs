use super::*;
use crate::plan::{Plan, jobs};

/// The six bundled scenarios, compiled, in the run's order.
fn bundled() -> Vec<Arc<Sop>> {
    crate::scenario::bundled::BUNDLED
        .iter()
        .map(|(file, _)| {
            let path =
                std::path::Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../../scenarios"))
                    .join(file);
            Arc::new(crate::sop::load(&path).unwrap())
        })
        .collect()
}

/// The default run with `--dialogues 5 --repeats 3`.
fn five_by_three() -> RunConfig {
    RunConfig {
        dialogues_per_scenario: 5,
        repeats: 3,
        ..RunConfig::default()
    }
}

#[test]
fn the_dialogues_are_the_runs_per_scenario_and_model_and_the_line_says_why() {
    let (config, sops) = (five_by_three(), bundled());
    let estimate = RunEstimate::new(&config, &sops);
    let jobs = jobs(&config, "r", &sops);
    assert_eq!(estimate.dialogues, jobs.len());
    assert_eq!(estimate.dialogues, 1368);
    for s in &estimate.scenarios {
        let of = jobs.iter().filter(|j| j.scenario == s.id).count();
        assert_eq!(s.dialogues, of, "{}", s.id);
        assert_eq!(s.cases * 3 * 3, of);
        assert_eq!(s.asked, 5, "{}", s.id);
        assert_eq!(s.cases, s.asked + s.added - s.left_out);
        assert_eq!(s.levels.iter().sum::<usize>(), s.cases);
    }
    for m in &estimate.models {
        let of = jobs.iter().filter(|j| j.service_model == m.model).count();
        assert_eq!(m.dialogues, of);
    }
    assert_eq!(
        estimate.line(),
        "1,368 dialogues (6 scenarios, 152 cases: 30 asked + 122 added by min_per_route 2; x 3 repeats; x 3 models)"
    );
    // Levels are the cases' own: keeping one level leaves the others out, multiplies nothing.
    let strong = RunConfig {
        adversarial_levels: vec![Adversarial::Strong],
        ..five_by_three()
    };
    let only = RunEstimate::new(&strong, &sops);
    assert_eq!(only.dialogues, Plan::new(&strong, "r", &sops).len());
    let strong_cases: usize = estimate.scenarios.iter().map(|s| s.levels[2]).sum();
    assert_eq!(only.cases, strong_cases);
    assert_eq!(only.left_out, estimate.cases - strong_cases);
    assert!(only.line().contains(&format!(
        " - {} of levels adversarial_levels leaves out;",
        estimate.cases - strong_cases
    )));
}

#[test]
fn calls_per_dialogue_are_bounded_by_max_turns_and_the_judged_turns() {
    let estimate = RunEstimate::new(&RunConfig::default(), &bundled());
    let d = estimate.per_dialogue;
    // Paper, 16 turns: turns 1, 5, 10, 15 and the final one (16) at most, three judges.
    assert_eq!(d.turns.at_most, 16.0);
    assert_eq!(d.agent.at_most, 16.0);
    assert_eq!(d.customer.at_most, 16.0);
    assert_eq!(d.judged_turns.at_most, 5.0);
    assert_eq!(d.judges.at_most, 15.0);
    // Expected: the agent's turns are 1 + q + ... + q^15 with q = 0.93; the customer speaks
    // once more unless the dialogue reaches turn 16.
    let q: f64 = 1.0 - END_CHANCE;
    let turns = (1.0 - q.powi(16)) / END_CHANCE;
    assert!(
        (d.agent.expected - turns).abs() < 1e-9,
        "{}",
        d.agent.expected
    );
    assert!((d.customer.expected - (turns + 1.0 - q.powi(15))).abs() < 1e-9);
    assert!(
        (9.75..9.85).contains(&d.turns.expected),
        "{}",
        d.turns.expected
    );
    assert!((d.judges.expected - 3.0 * d.judged_turns.expected).abs() < 1e-9);
    // Every turn judged: as many judged turns as turns.
    let every = RunConfig {
        judge_turns: JudgeTurns::Every,
        max_turns: 4,
        ..RunConfig::default()
    };
    let d = RunEstimate::new(&every, &bundled()).per_dialogue;
    assert_eq!((d.judged_turns.at_most, d.judges.at_most), (4.0, 12.0));
    assert!((d.judged_turns.expected - d.turns.expected).abs() < 1e-9);
    // A list judges its turns, never the final one for being final.
    let list = RunConfig {
        judge_turns: JudgeTurns::List(vec![2, 3]),
        max_turns: 4,
        ..RunConfig::default()
    };
    let d = RunEstimate::new(&list, &bundled()).per_dialogue;
    assert_eq!(d.judged_turns.at_most, 2.0);
    let (q2, q3) = (q, q * q);
    assert!((d.judged_turns.expected - (q2 + q3)).abs() < 1e-9);
}

#[test]
fn simulated_calls_count_the_tokens_they_record_and_prices_make_the_cost() {
    let mut config = RunConfig {
        service_models: vec!["sim-strong".into()],
        max_turns: 2,
        judge_turns: JudgeTurns::Every,
        ..five_by_three()
    };
    config.models[0].price = Price {
        input_per_million: 2.0,
        output_per_million: 8.0,
        ..Price::default()
    };
    let estimate = RunEstimate::new(&config, &bundled());
    let agent = &estimate.models[0].agent;
    let dialogues = estimate.dialogues as f64;
    // At most two turns: (4,000 + 300) / 4 and (4,000 + 600) / 4 input tokens.
    assert_eq!(agent.calls.at_most, 2.0 * dialogues);
    assert_eq!(agent.input_tokens.at_most, (1075.0 + 1150.0) * dialogues);
    // Expected: the second turn with chance 0.93.
    let q = 1.0 - END_CHANCE;
    assert!((agent.input_tokens.expected - (1075.0 + q * 1150.0) * dialogues).abs() < 1e-6);
    let cost = (agent.input_tokens.at_most * 2.0 + agent.output_tokens.at_most * 8.0) / 1e6;
    assert!((agent.cost_usd.at_most - cost).abs() < 1e-12);
    assert!(agent.cost_usd.at_most > 0.0);
    // The customer and the judges cost nothing (no price), their calls are in the total.
    let customer = &estimate.roles[1].spend;
    assert_eq!(customer.cost_usd.at_most, 0.0);
    // The customer at most twice (two turns; none after the last).
    assert_eq!(customer.calls.at_most, 2.0 * dialogues);
    assert_eq!(estimate.roles[2].spend.calls.at_most, 3.0 * 2.0 * dialogues);
    assert_eq!(estimate.total.calls.at_most, (2.0 + 2.0 + 6.0) * dialogues);
    assert_eq!(estimate.total.cost_usd, agent.cost_usd);
}

#[test]
fn a_real_models_tokens_grow_with_the_prompts_rendered() {
    let mut config = RunConfig {
        max_turns: 3,
        ..five_by_three()
    };
    // The first model under test a real one, with a short answer limit.
    let real = ModelConfig {
        max_tokens: Some(20),
        ..ModelConfig::new("real", Provider::Openai)
    };
    config.models.push(real);
    config.service_models[0] = "real".into();
    let sops = bundled();
    let estimate = RunEstimate::new(&config, &sops);
    let real = &estimate.models[0];
    assert!(!real.simulated && estimate.models[1].simulated);
    // Answers capped at max_tokens: 20 a call.
    assert_eq!(
        real.agent.output_tokens.at_most,
        20.0 * real.agent.calls.at_most
    );
    // The rendered agent prompt of airline_refund's first case, and two lines of 150 more a turn.
    let plan = Plan::new(&config, "plan", &sops);
    let job = plan.first_jobs()[0].clone().unwrap();
    let system =
        prompts::agent_system_prompt(&sops[0], &prompts::system_information(&sops[0], &job));
    let first =
        Input::rendered(|h| prompts::agent_messages(system.clone().into(), h, &"x".repeat(150)));
    assert_eq!(first.base, system.len() + 150);
    assert_eq!(first.per_turn, 300);
    assert!(first.base > SIMULATED_PROMPT_CHARS, "{}", first.base);
}

#[test]
fn the_plan_fits_120_columns_at_27_models() {
    let mut config = five_by_three();
    // Names as long as real ones, and one as long as a name may usefully be (cut to fit).
    let mut names: Vec<String> = (0..26)
        .map(|i| format!("meta-llama--Llama-3.3-70B-Instruct-Turbo-{i:02}"))
        .collect();
    names.push(format!(
        "meta-llama--Llama-3.3-70B-Instruct-Turbo-{}",
        "x".repeat(60)
    ));
    for name in &names {
        config.models.push(ModelConfig {
            price: Price {
                input_per_million: 0.88,
                output_per_million: 0.88,
                ..Price::default()
            },
            ..ModelConfig::new(name.as_str(), Provider::Openai)
        });
    }
    config.service_models = names;
    let estimate = RunEstimate::new(&config, &bundled());
    assert_eq!(estimate.dialogues, 152 * 3 * 27);
    let text = estimate.text();
    for line in text.lines() {
        assert!(line.chars().count() <= TERMINAL_WIDTH, "{line}\n{text}");
    }
    assert!(
        text.starts_with("12,312 dialogues (6 scenarios, 152 cases"),
        "{text}"
    );
    // One row per model under test, then the total.
    let rows = text
        .lines()
        .filter(|l| l.starts_with("meta-llama--Llama-3.3"))
        .count();
    assert_eq!(rows, 27, "{text}");
    assert!(
        text.contains("\nmeta-llama--Llama-3.3-70B-Instruct-Turbo-00  "),
        "{text}"
    );
    assert!(text.contains("…xxxxxxx"), "{text}");
    assert!(
        text.lines()
            .any(|l| l.starts_with("Total ") && l.contains("12,312"))
    );
}

#[test]
fn numbers_are_written_with_thousands_separated() {
    assert_eq!(thousands(0.0), "0");
    assert_eq!(thousands(999.4), "999");
    assert_eq!(thousands(1368.0), "1,368");
    assert_eq!(thousands(1_234_567.0), "1,234,567");
    assert_eq!(usd(0.0), "0.00");
    assert_eq!(usd(0.001234), "0.0012");
    assert_eq!(usd(14.4192), "14.42");
    assert_eq!(usd(1234.567), "1,234.57");
    assert_eq!(usd(99_999.999), "100,000.00");
}

#[test]
fn an_adaptive_runs_figures_are_its_most() {
    let sops = bundled();
    let mut config = five_by_three();
    let full = RunEstimate::new(&config, &sops);
    assert!(!full.line().contains("adaptive"));
    config.adaptive_top = Some(1);
    let adaptive = RunEstimate::new(&config, &sops);
    assert_eq!(adaptive.dialogues, full.dialogues);
    assert!(
        adaptive.line().ends_with(
            "; adaptive, top 1: at most this many, a model decided against the top 1 stops early)"
        ),
        "{}",
        adaptive.line()
    );
    let json = serde_json::to_value(&adaptive).unwrap();
    assert_eq!(json["adaptive_top"], 1);
    assert!(
        serde_json::to_value(&full)
            .unwrap()
            .get("adaptive_top")
            .is_none()
    );
}
