#![no_main]
//! See `toolscore_fuzz::config`.
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| toolscore_fuzz::config(data));
