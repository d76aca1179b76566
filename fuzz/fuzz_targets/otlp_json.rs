#![no_main]
//! See `toolscore_fuzz::otlp_json`.
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| toolscore_fuzz::otlp_json(data));
