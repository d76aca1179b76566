#![no_main]
//! See `toolscore_fuzz::fixtures`.
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| toolscore_fuzz::fixtures(data));
