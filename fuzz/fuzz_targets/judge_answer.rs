//! A judge's answer. Top bit of the first byte clear: a SAGE judge's verdict against a bundled
//! scenario (`parse_judge_output`); the fast path for an answer that is exactly the object must
//! agree with the general one, and a verdict written back parses to the same verdict. Top bit
//! set: a support-desk judge's scores (`actors::desk::roles::judged`), each within 0-1.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| sage_fuzz::judge_answer::run(data));
