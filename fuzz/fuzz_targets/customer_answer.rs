//! The simulated customer's answer (`prompts::parse_user_output`): the message without labels
//! and quotes, the end of the dialogue, or an error (empty, refusal, no content). A message it
//! keeps is already clean: parsing it again gives it back.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| sage_fuzz::customer_answer::run(data));
