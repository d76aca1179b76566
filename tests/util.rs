//! Helpers shared by the integration tests.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// Path of a file under `tests/data/`.
pub fn data(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data")
        .join(rel)
}

/// Runs the real `toolscore` binary with `args`.
pub fn toolscore(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_toolscore"))
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("run toolscore")
}

/// Polls `done` every 20 ms until it holds or `limit` passes; whether it
/// held (callers assert what they expected).
pub fn poll_until(limit: std::time::Duration, mut done: impl FnMut() -> bool) -> bool {
    let start = std::time::Instant::now();
    loop {
        if done() {
            return true;
        }
        if start.elapsed() >= limit {
            return false;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

/// A fresh temporary directory, removed on drop.
pub struct TempDir(pub PathBuf);

impl TempDir {
    pub fn new(tag: &str) -> TempDir {
        let n = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0);
        let p = std::env::temp_dir().join(format!("toolscore-{tag}-{}-{n}", std::process::id()));
        std::fs::create_dir_all(&p).expect("mkdir");
        TempDir(p)
    }
    pub fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Standard base64 with padding (as Go's protojson writes bytes fields).
pub fn base64(bytes: &[u8]) -> String {
    const ABC: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::new();
    for chunk in bytes.chunks(3) {
        let b = [
            chunk[0],
            *chunk.get(1).unwrap_or(&0),
            *chunk.get(2).unwrap_or(&0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(ABC[((n >> (18 - 6 * i)) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// Lowercase hex.
pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// One GenAI `execute_tool` span as OTLP/JSON the way Go's protojson (and
/// Tempo) write it: base64 ids, enum names, int64 as strings, zero values
/// left out.
pub fn protojson_tool_span(
    trace: &[u8],
    span: &[u8],
    parent: &[u8],
    tool: &str,
    args: &str,
    start: u64,
) -> String {
    serde_json::json!({
        "traceId": base64(trace),
        "spanId": base64(span),
        "parentSpanId": base64(parent),
        "name": format!("execute_tool {tool}"),
        "kind": "SPAN_KIND_INTERNAL",
        "startTimeUnixNano": start.to_string(),
        "endTimeUnixNano": (start + 50).to_string(),
        "attributes": [
            {"key": "gen_ai.operation.name", "value": {"stringValue": "execute_tool"}},
            {"key": "gen_ai.tool.name", "value": {"stringValue": tool}},
            {"key": "gen_ai.tool.call.arguments", "value": {"stringValue": args}},
        ],
        "status": {"code": "STATUS_CODE_OK"}
    })
    .to_string()
}

/// The `invoke_agent` root of such a trace.
pub fn protojson_agent_span(trace: &[u8], span: &[u8], start: u64) -> String {
    serde_json::json!({
        "traceId": base64(trace),
        "spanId": base64(span),
        "name": "invoke_agent planner",
        "kind": "SPAN_KIND_SERVER",
        "startTimeUnixNano": start.to_string(),
        "endTimeUnixNano": (start + 1000).to_string(),
        "attributes": [
            {"key": "gen_ai.operation.name", "value": {"stringValue": "invoke_agent"}},
            {"key": "gen_ai.agent.name", "value": {"stringValue": "planner"}},
        ],
        "status": {}
    })
    .to_string()
}
