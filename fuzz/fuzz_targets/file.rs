#![no_main]
//! See `toolscore_fuzz::file`.
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| toolscore_fuzz::file(data));
