#![no_main]
//! See `traceval_fuzz::otlp_json`.
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| traceval_fuzz::otlp_json(data));
