//! A judge's answer. Top bit of the first byte clear: a SAGE judge's verdict against a bundled
//! scenario (`parse_judge_output`); the fast path for an answer that is exactly the object must
//! agree with the general one, and a verdict written back parses to the same verdict. Top bit
//! set: a support-desk judge's scores (`actors::desk::roles::judged`), each within 0-1.

use sage::actors::desk::roles::judged;
use sage::protocol::parse::parse_judge_output;
use serde_json::json;

/// Feeds one input to what this target fuzzes (panics on what must not happen).
pub fn run(data: &[u8]) {
    let (selector, rest) = super::split_first(data);
    let Ok(raw) = std::str::from_utf8(rest) else {
        return;
    };
    if selector & 0x80 != 0 {
        if let Some(scores) = judged(raw) {
            for x in [scores.resolution_quality, scores.policy_adherence] {
                assert!((0.0..=1.0).contains(&x), "{scores:?}");
            }
            let written = json!({
                "resolution_quality": scores.resolution_quality,
                "policy_adherence": scores.policy_adherence,
            })
            .to_string();
            assert!(judged(&written).is_some(), "{written}");
        }
        return;
    }
    let sop = super::pick_sop(selector);
    let verdict = parse_judge_output(sop, raw);
    // Not starting with `{`, the same text takes the general path.
    let general = parse_judge_output(sop, &format!("x{raw}"));
    assert_eq!(
        verdict, general,
        "the fast path disagrees with the general one"
    );
    let Ok(verdict) = verdict else { return };
    super::json_roundtrip(&verdict);
    let c = &verdict.chat;
    let written = json!({
        "classification": verdict.classification,
        "chat_quality_dimensions": {
            "linguistic_quality": c.linguistic_quality,
            "anthropomorphism_emotion": c.anthropomorphism_emotion,
            "content_utility": c.content_utility,
            "user_satisfaction": c.user_satisfaction,
            "instruction_compliance": c.instruction_compliance,
        },
    })
    .to_string();
    assert_eq!(parse_judge_output(sop, &written), Ok(verdict));
}
