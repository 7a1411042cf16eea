//! NATS message headers as a worker and a requester read and write them: the lines of a header
//! block (`Name: value`, as async-nats accepts them) become a header map; `Sage-Run` and
//! `Sage-Error` are read with `transport::nats::header`; the W3C trace context is extracted
//! into a span (`extract_trace`) and injected again from it (`inject_trace`), keeping the
//! trace id of a valid `traceparent`; and any text, made a header value (`header_value`, as a
//! `Sage-Error` reply or a message id is made), keeps everything but its line breaks.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| sage_fuzz::nats_headers::run(data));
