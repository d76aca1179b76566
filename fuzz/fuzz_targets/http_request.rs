#![no_main]
//! See `traceval_fuzz::http_request`.
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| traceval_fuzz::http_request(data));
