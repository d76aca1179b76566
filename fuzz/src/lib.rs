//! What each fuzz target does with one input. The targets (fuzz_targets/)
//! call these, and so does the corpus replay in the root package's tests
//! (tests/fuzz_corpora.rs includes this file), so `cargo test` runs every
//! saved input through the same code the fuzzer did. A panic is a finding.

use bytes::Bytes;
use http::{HeaderMap, HeaderName, HeaderValue};

/// A target: its name (a folder of `corpus/`) and its function.
pub type Target = (&'static str, fn(&[u8]));

/// Every target.
pub const TARGETS: &[Target] = &[
    ("otlp_protobuf", otlp_protobuf),
    ("otlp_json", otlp_json),
    ("file", file),
    ("fixtures", fixtures),
    ("config", config),
    ("http_request", http_request),
];

/// One OTLP/HTTP protobuf export body, as a receiver decodes it.
pub fn otlp_protobuf(data: &[u8]) {
    let _ = toolscore::ingest::decode_request(data, toolscore::ingest::Wire::Protobuf);
}

/// One OTLP/HTTP JSON export body, as a receiver decodes it.
pub fn otlp_json(data: &[u8]) {
    let _ = toolscore::ingest::decode_request(data, toolscore::ingest::Wire::Json);
}

/// A whole trace file or stdin: the format is found from the content
/// (gzip, Collector JSONL, OTLP JSON/protobuf, protobuf records, MLflow,
/// Jaeger, Zipkin, console JSON); then the traces are assembled.
pub fn file(data: &[u8]) {
    // A small inflate cap: a gzip bomb must stop at it, not exhaust memory.
    let limits = toolscore::ingest::Limits {
        max_inflated_bytes: 16 << 20,
    };
    let decoded = toolscore::ingest::decode(data, "fuzz", &limits);
    let mut assembler = toolscore::assemble::Assembler::new();
    for req in decoded.requests {
        assembler.add(req);
    }
    for trace in assembler.finish() {
        let _ = trace.cycle_warning();
        let _ = trace.conflict_warning();
    }
}

/// An expectations (fixture) file: JSONL or a JSON array of cases.
pub fn fixtures(data: &[u8]) {
    // The loader reads text; bytes that are not UTF-8 never reach the parser.
    if let Ok(text) = std::str::from_utf8(data) {
        let _ = toolscore::expect::parse(text, "fuzz");
    }
}

/// A config file, read as each syntax it may be written in.
pub fn config(data: &[u8]) {
    use toolscore::config::{Config, Syntax};
    if let Ok(text) = std::str::from_utf8(data) {
        for syntax in [Syntax::Toml, Syntax::Yaml, Syntax::Json] {
            if let Ok(config) = Config::parse(text, syntax, "fuzz") {
                // What the commands do next with a config that parsed.
                let _ = config.session_keys();
                let _ = config.normalizer(false);
            }
        }
    }
}

/// The OTLP/HTTP receiver's request path without a socket. Input: header
/// lines (`name: value`), an empty line, then the body.
pub fn http_request(data: &[u8]) {
    let (headers, body) = split_request(data);
    let status = toolscore::serve::http_exchange(&headers, body, 1 << 20);
    // A bad request is the client's fault (4xx), never a server error.
    assert!(status < 500 || status == 503, "status {status}");
}

/// Splits a fuzz input into request headers (`name: value` lines, until an
/// empty line) and the body. Lines that are not valid headers are skipped.
pub fn split_request(data: &[u8]) -> (HeaderMap, Bytes) {
    let (head, body) = match data.windows(2).position(|w| w == b"\n\n") {
        Some(i) => (&data[..i], &data[i + 2..]),
        None => (&b""[..], data),
    };
    let mut headers = HeaderMap::new();
    for line in head.split(|&b| b == b'\n') {
        let Some(colon) = line.iter().position(|&b| b == b':') else {
            continue;
        };
        let value = line[colon + 1..].trim_ascii();
        if let (Ok(name), Ok(value)) = (
            HeaderName::from_bytes(line[..colon].trim_ascii()),
            HeaderValue::from_bytes(value),
        ) {
            headers.append(name, value);
        }
    }
    (headers, Bytes::copy_from_slice(body))
}
