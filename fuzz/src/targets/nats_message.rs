//! Every message a worker or the aggregator decodes from NATS, the first byte saying which:
//! jobs, each role's requests and replies (SAGE and support desk), the runs bucket's spec and
//! status, and the records the aggregator reads. Every decoded message survives a JSON round
//! trip; every role request is then answered as a worker answers it (the bundled scenarios or
//! Northline, and the simulated models), and its reply encodes; a run spec's scenario or store
//! texts are compiled as a worker loading the run compiles them; a record is counted as the
//! aggregator counts it.

use super::{desk_registry, json_roundtrip, runtime, sage_registry};
use sage::actors::cluster::collector::{Record, RecordHead, count};
use sage::actors::cluster::{RunSpec, RunStatus};
use sage::actors::roles::{JudgePanel, RuleRole, ServiceRole, UserRole};
use sage::protocol::desk::*;
use sage::protocol::*;
use serde::Serialize;
use serde::de::DeserializeOwned;
use std::fmt::Debug;

/// The message, decoded and checked to round-trip, if it decodes.
fn decode<T: Serialize + DeserializeOwned + Debug>(payload: &[u8]) -> Option<T> {
    let message: T = serde_json::from_slice(payload)
        .map_err(|e| {
            if super::debug() {
                eprintln!("not a {}: {e}", std::any::type_name::<T>());
            }
        })
        .ok()?;
    json_roundtrip(&message);
    Some(message)
}

/// A role's reply as the worker sends it.
fn encode(reply: &impl Serialize) {
    serde_json::to_vec(reply).expect("a role reply encodes");
}

/// Feeds one input to what this target fuzzes (panics on what must not happen).
pub fn run(data: &[u8]) {
    let (kind, payload) = super::split_first(data);
    match kind % 19 {
        0 => {
            decode::<DialogueJob>(payload);
        }
        1 => {
            decode::<DeskJob>(payload);
        }
        2 => {
            if let Some(r) = decode::<UserRequest>(payload) {
                encode(&runtime().block_on(UserRole(sage_registry()).handle(r)));
            }
        }
        3 => {
            decode::<UserReply>(payload);
        }
        4 => {
            if let Some(r) = decode::<ServiceRequest>(payload) {
                encode(&runtime().block_on(ServiceRole(sage_registry()).handle(r)));
            }
        }
        5 => {
            decode::<ServiceReply>(payload);
        }
        6 => {
            if let Some(r) = decode::<JudgeRequest>(payload) {
                encode(&runtime().block_on(JudgePanel(sage_registry()).handle(r)));
            }
        }
        7 => {
            decode::<JudgeReply>(payload);
        }
        8 => {
            if let Some(r) = decode::<RuleRequest>(payload) {
                encode(&RuleRole(sage_registry()).handle(r));
            }
        }
        9 => {
            decode::<RuleReply>(payload);
        }
        10 => {
            if let Some(r) = decode::<DeskAgentRequest>(payload) {
                encode(&runtime().block_on(ServiceRole(desk_registry()).desk(r)));
            }
        }
        11 => {
            decode::<DeskAgentReply>(payload);
        }
        12 => {
            if let Some(r) = decode::<DeskCustomerRequest>(payload) {
                encode(&runtime().block_on(UserRole(desk_registry()).desk(r)));
            }
        }
        13 => {
            decode::<DeskCustomerReply>(payload);
        }
        14 => {
            if let Some(r) = decode::<DeskJudgeRequest>(payload) {
                encode(&runtime().block_on(JudgePanel(desk_registry()).desk(r)));
            }
        }
        15 => {
            decode::<DeskJudgeReply>(payload);
        }
        16 => {
            let Ok(value) = serde_json::from_slice(payload) else {
                return;
            };
            let spec = match RunSpec::from_value(value) {
                Ok(spec) => spec,
                Err(e) => {
                    if super::debug() {
                        eprintln!("not a RunSpec: {e}");
                    }
                    return;
                }
            };
            // Written and read as the runs bucket holds it.
            let text = spec.to_json().expect("a parsed spec serializes");
            let back = serde_json::from_slice(&text)
                .map(RunSpec::from_value)
                .expect("a spec serialized is JSON")
                .expect("a spec serialized parses again");
            let again = back.to_json().expect("a parsed spec serializes");
            let json = |t: &[u8]| serde_json::from_slice::<serde_json::Value>(t).expect("JSON");
            assert!(super::same_json(&json(&text), &json(&again)));
            let _ = (spec.run_id(), spec.created_at(), spec.jobs(), spec.suite());
            match &spec {
                RunSpec::Sage { scenarios, .. } => {
                    for (name, text) in scenarios.iter().take(4) {
                        let _ = sage::sop::from_yaml(text, name);
                    }
                }
                RunSpec::Suite(run) => {
                    let _ = (run.0.agents(), run.0.customers(), run.0.judges());
                    let _ = run.0.records_file();
                }
            }
        }
        17 => {
            decode::<RunStatus>(payload);
        }
        _ => {
            let Ok(head) = serde_json::from_slice::<RecordHead>(payload) else {
                return;
            };
            let Ok(record) = ["sage", "support-desk", "tau2-retail"]
                .into_iter()
                .find_map(|suite| Record::parse(suite, payload).ok())
                .ok_or(())
            else {
                return;
            };
            assert_eq!(record.ids().0, head.run_id());
            let mut status = RunStatus::submitted(head.run_id(), 2, "now");
            // Two records of the run, as the aggregator counts them.
            count(&mut status, &record);
            count(&mut status, &record);
            assert_eq!(status.stored, 2);
            assert!(status.infra_errors <= status.stored);
        }
    }
}
