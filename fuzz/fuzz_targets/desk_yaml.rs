//! A support-desk store (store.yaml) and its cases (cases.yaml): `Desk::from_yaml`. The first
//! byte says which file the rest is (the other one is a three-case slice of Northline,
//! fuzz/seeds/mini_*.yaml), or both, split at the first NUL. What loads must hold together: every case's order is in the store and looks up,
//! and the prompts render.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| sage_fuzz::desk_yaml::run(data));
