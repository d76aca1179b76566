#![no_main]
//! See `traceval_fuzz::config`.
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| traceval_fuzz::config(data));
