#![no_main]
//! See `traceval_fuzz::fixtures`.
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| traceval_fuzz::fixtures(data));
