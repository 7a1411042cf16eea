//! Who played the customer, described for a run ([`describe`]): its model and parameters, the
//! hash of its prompt template ([`template_probe`]) and its version in this project. The data
//! is [`crate::protocol::simulator::Simulator`] (summary.json's `simulator`); this module sits
//! above the plan and the prompts it reads.

use crate::plan::RunConfig;
use crate::prompts::user;
use crate::protocol::simulator::Simulator;
use crate::protocol::{Line, Speaker};
use std::collections::BTreeMap;
use std::fmt::Write;
use std::sync::Arc;

/// The simulator of a run of `config`, its prompt template hashed as `prompt_sha256` (`None`
/// when the user model is not among the configuration's models).
pub fn describe(config: &RunConfig, prompt_sha256: &str) -> Option<Simulator> {
    let model = config.models.iter().find(|m| m.name == config.user_model)?;
    let value = |v: serde_json::Result<serde_json::Value>| v.unwrap_or_default();
    let mut parameters = BTreeMap::new();
    if let Some(t) = model.temperature {
        // Rounded as written (an f32 shown as f64 would carry noise digits).
        parameters.insert("temperature".into(), value(serde_json::to_value(t)));
    }
    if let Some(seed) = model.seed {
        parameters.insert("seed".into(), seed.into());
    }
    if let Some(max) = model.max_tokens {
        parameters.insert("max_tokens".into(), max.into());
    }
    if let Some(sim) = &model.sim {
        parameters.insert("sim".into(), value(serde_json::to_value(sim)));
    }
    let provider = match value(serde_json::to_value(model.provider)) {
        serde_json::Value::String(s) => s,
        other => other.to_string(),
    };
    Some(Simulator {
        name: model.name.clone(),
        provider,
        model: model.model.clone().unwrap_or_else(|| model.name.clone()),
        parameters,
        customer_guard: config.customer_guard,
        prompt_sha256: prompt_sha256.to_string(),
        version: user::SIMULATOR_VERSION,
    })
}

/// The simulator's prompt template as text: what the customer model is sent for a fixed probe
/// (the first bundled scenario, the first planned case at each adversarial level of the
/// default run): the system prompt and the conversation with its opening and continuation cues,
/// asked again with the re-ask note; then the end marker. Its SHA-256 is summary.json's
/// `simulator.prompt_sha256`, so it changes when the template does (and when that bundled
/// scenario does).
pub fn template_probe() -> String {
    let (file, text) = crate::scenario::bundled::BUNDLED[0];
    let Ok(sop) = crate::sop::from_yaml(text, file) else {
        return String::new();
    };
    let sops = [Arc::new(sop)];
    let config = crate::plan::RunConfig::default();
    let plan = crate::plan::Plan::new(&config, "probe", &sops);
    let mut seen = Vec::new();
    let mut out = String::new();
    for job in plan.jobs() {
        if seen.contains(&job.adversarial) {
            continue;
        }
        seen.push(job.adversarial);
        let system: Arc<str> = crate::prompts::user_system_prompt(&sops[0], &job).into();
        let history = [
            Line {
                speaker: Speaker::User,
                text: "<customer>".into(),
            },
            Line {
                speaker: Speaker::Agent,
                text: "<agent>".into(),
            },
        ];
        for messages in [
            user::user_messages(system.clone(), &history),
            user::user_reask_messages(&user::user_messages(system, &history[..1])),
        ] {
            for m in messages {
                let _ = write!(out, "{:?}\n{}\n", m.role, m.content);
            }
        }
    }
    out.push_str(user::END_MARKER);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::prompts::user::{CONTINUE_CUE, END_MARKER, OPENING_CUE, REASK_NOTE};

    #[test]
    fn the_simulator_names_its_model_parameters_and_prompt_and_tells_a_change() {
        let config = RunConfig::default();
        let a = describe(&config, "ab".repeat(32).as_str()).expect("the default user model");
        assert_eq!(a.name, config.user_model);
        assert_eq!(a.provider, "simulated");
        assert!(a.parameters.contains_key("sim"), "{a:?}");
        assert_eq!(a.version, crate::prompts::user::SIMULATOR_VERSION);
        assert!(
            a.line().contains("simulator v1, prompt abababababab"),
            "{}",
            a.line()
        );
        assert!(a.differences(&a).is_empty());
        let mut guarded = config.clone();
        guarded.customer_guard = true;
        let b = describe(&guarded, "cd".repeat(32).as_str()).unwrap();
        let d = a.differences(&b);
        assert_eq!(d.len(), 2, "{d:?}");
        assert!(d[0].starts_with("customer_guard") && d[1].starts_with("prompt"));
        let mut missing = config;
        missing.user_model = "nobody".into();
        assert!(describe(&missing, "").is_none());
    }

    #[test]
    fn the_probe_holds_every_level_its_cues_and_its_note() {
        let probe = template_probe();
        for needed in [OPENING_CUE, CONTINUE_CUE, REASK_NOTE, END_MARKER, "<agent>"] {
            assert!(probe.contains(needed), "{needed}");
        }
        // The default run plays three adversarial levels: one system prompt each.
        assert_eq!(probe.matches("System\n").count(), 3 * 2);
        assert_eq!(template_probe(), probe, "deterministic");
    }
}
