#![no_main]
//! See `traceval_fuzz::file`.
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| traceval_fuzz::file(data));
