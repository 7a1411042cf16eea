//! The simulated customer's answer (`prompts::parse_user_output`): the message without labels
//! and quotes, the end of the dialogue, or an error (empty, refusal, no content). A message it
//! keeps is already clean: parsing it again gives it back.

use sage_core::prompts::parse_user_output;

/// Feeds one input to what this target fuzzes (panics on what must not happen).
pub fn run(data: &[u8]) {
    let Ok(raw) = std::str::from_utf8(data) else {
        return;
    };
    match parse_user_output(raw) {
        Ok(Some(message)) => {
            assert!(!message.is_empty());
            assert_eq!(message.trim(), message);
            assert_eq!(
                parse_user_output(&message).map_err(|e| e.to_string()),
                Ok(Some(message.clone())),
                "a kept message parses to itself"
            );
        }
        Ok(None) => {}
        Err(e) => assert!(!e.to_string().is_empty()),
    }
}
