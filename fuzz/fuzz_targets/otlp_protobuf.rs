#![no_main]
//! See `toolscore_fuzz::otlp_protobuf`.
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| toolscore_fuzz::otlp_protobuf(data));
