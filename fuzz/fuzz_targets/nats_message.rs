//! Every message a worker or the aggregator decodes from NATS, the first byte saying which:
//! jobs, each role's requests and replies (SAGE and support desk), the runs bucket's spec and
//! status, and the records the aggregator reads. Every decoded message survives a JSON round
//! trip; every role request is then answered as a worker answers it (the bundled scenarios or
//! Northline, and the simulated models), and its reply encodes; a run spec's scenario or store
//! texts are compiled as a worker loading the run compiles them; a record is counted as the
//! aggregator counts it.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| sage_fuzz::nats_message::run(data));
