//! Benchmarks of the pure core: validating and enumerating scenarios symbolically, and routing.
//! Run with `cargo bench --bench sop`; numbers are recorded in docs/benchmarks.md.

#[path = "../tests/common/mod.rs"]
mod common;

use criterion::{Criterion, criterion_group, criterion_main};
use sage::scenario::Value;
use sage::sop::{self, Values};
use std::hint::black_box;

fn validate_and_enumerate(c: &mut Criterion) {
    let wide = common::wide_scenario(24, 5);
    c.bench_function(
        "compile wide 24 fields x 5 options (5^24 combinations)",
        |b| b.iter(|| sop::from_yaml(black_box(&wide), "wide.yaml").unwrap()),
    );
    let telecom = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/scenarios/telecom_package.yaml"
    ))
    .unwrap();
    c.bench_function("compile telecom_package", |b| {
        b.iter(|| sop::from_yaml(black_box(&telecom), "t.yaml").unwrap())
    });
}

fn route(c: &mut Criterion) {
    let sop = sop::load(std::path::Path::new(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/scenarios/telecom_package.yaml"
    )))
    .unwrap();
    let s = |x: &str| Value::Str(x.into());
    let fields: Values = [
        ("ConsumptionType", s("Enquiry")),
        ("ApplicationTendency", s("Agree")),
        ("ConsumptionProfile", s("Data")),
        ("EmotionTag", s("Discontent")),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect();
    let variables: Values = [
        ("PackageStatus".to_string(), s("Contracted")),
        ("Penalty".to_string(), Value::Int(100)),
    ]
    .into();
    c.bench_function("route telecom (7-stage path)", |b| {
        b.iter(|| {
            sop.route(black_box(&fields), black_box(&variables))
                .unwrap()
        })
    });
}

criterion_group!(benches, validate_and_enumerate, route);
criterion_main!(benches);
