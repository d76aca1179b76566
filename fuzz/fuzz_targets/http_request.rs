#![no_main]
//! See `toolscore_fuzz::http_request`.
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| toolscore_fuzz::http_request(data));
