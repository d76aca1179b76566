//! Helpers shared by the integration tests.
#![allow(dead_code)]

use std::ops::{Deref, DerefMut};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Output};
use std::time::{Duration, Instant};

/// A fixture of `n` cases as small as cases get (`{"trace_id",
/// "expected_tools": ["name"]}`), with distinct trace ids that join no
/// trace of sample-traces.
pub fn small_cases(n: usize) -> String {
    let tools = ["search", "get_weather", "lookup_order", "send_email"];
    let mut text = String::new();
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    for i in 0..n {
        // xorshift: distinct trace ids, no two cases alike.
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let tool = tools[i % tools.len()];
        text += &format!(
            "{{\"trace_id\":\"{x:016x}{:016x}\",\"expected_tools\":[\"{tool}\"]}}\n",
            x.rotate_left(29)
        );
    }
    text
}

/// The peak RSS (`VmHWM`) of process `pid` so far, in bytes.
pub fn peak_rss(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let kib: u64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))?
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .ok()?;
    Some(kib * 1024)
}

/// The rows of a JSONL output (each line must be JSON).
pub fn json_rows(stdout: &[u8]) -> Vec<serde_json::Value> {
    String::from_utf8_lossy(stdout)
        .lines()
        .map(|l| serde_json::from_str(l).expect("a JSON row"))
        .collect()
}

/// Every tool call `inspect --format jsonl` reports for a file under
/// `tests/data/` (its `tools` rows, in output order); the run must succeed.
pub fn inspected_calls(rel: &str) -> Vec<serde_json::Value> {
    inspected_calls_in(&[rel])
}

/// [`inspected_calls`] of several files under `tests/data/` read as one
/// input (spans in one, log records in another).
pub fn inspected_calls_in(rels: &[&str]) -> Vec<serde_json::Value> {
    let mut args = vec!["inspect", "--format", "jsonl", "-q"]
        .into_iter()
        .map(String::from)
        .collect::<Vec<_>>();
    args.extend(rels.iter().map(|rel| data(rel).display().to_string()));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = toolscore(&args);
    assert!(
        out.status.success(),
        "inspect {rels:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    json_rows(&out.stdout)
        .into_iter()
        .flat_map(|row| row["tools"].as_array().cloned().unwrap_or_default())
        .collect()
}

/// Path of a file under `tests/data/`.
pub fn data(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data")
        .join(rel)
}

/// The real `toolscore` binary, with the run store off: tests run it from
/// the checkout, which must not get a `.toolscore/` (the store's own tests
/// turn it on, in a temporary directory).
pub fn bin() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_toolscore"));
    c.env("TOOLSCORE_STORE", "off");
    c
}

/// Runs the real `toolscore` binary with `args` (run store off).
pub fn toolscore(args: &[&str]) -> Output {
    bin()
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("run toolscore")
}

/// What one look of [`poll_until`] gives: `true`, `Some(v)` or `Ok(v)` ends
/// the wait with `()` or `v`; `false`, `None` or `Err(seen)` means not yet,
/// and the last `seen` goes into the failure message.
pub trait Polled {
    type Found;
    fn found(self) -> Result<Self::Found, Option<String>>;
}

impl Polled for bool {
    type Found = ();
    fn found(self) -> Result<(), Option<String>> {
        if self {
            Ok(())
        } else {
            Err(None)
        }
    }
}

impl<T> Polled for Option<T> {
    type Found = T;
    fn found(self) -> Result<T, Option<String>> {
        self.ok_or(None)
    }
}

impl<T, E: std::fmt::Debug> Polled for Result<T, E> {
    type Found = T;
    fn found(self) -> Result<T, Option<String>> {
        self.map_err(|seen| Some(format!("{seen:?}")))
    }
}

/// Looks every 20 ms until `look` finds what it waits for and returns that;
/// panics naming `what` (and the last thing seen) once `limit` has passed.
/// The one way the tests wait for something to happen.
pub fn poll_until<P: Polled>(what: &str, limit: Duration, look: impl FnMut() -> P) -> P::Found {
    poll_every(Duration::from_millis(20), what, limit, look)
}

/// [`poll_until`], looking every `every` (a sampler that must look more
/// often than a wait needs to).
pub fn poll_every<P: Polled>(
    every: Duration,
    what: &str,
    limit: Duration,
    mut look: impl FnMut() -> P,
) -> P::Found {
    let start = Instant::now();
    loop {
        let seen = match look().found() {
            Ok(found) => return found,
            Err(seen) => seen,
        };
        if start.elapsed() >= limit {
            match seen {
                Some(seen) => {
                    panic!("timed out after {limit:?} waiting for {what}; last seen: {seen}")
                }
                None => panic!("timed out after {limit:?} waiting for {what}"),
            }
        }
        std::thread::sleep(every);
    }
}

/// A child process that is killed (and reaped) when dropped, so a test that
/// fails while it runs leaves nothing behind.
pub struct ChildGuard(pub Child);

impl ChildGuard {
    /// Sends SIGTERM and waits at most `limit` for the exit.
    pub fn terminate(&mut self, limit: Duration) -> ExitStatus {
        let pid = self.0.id().to_string();
        let sent = Command::new("kill")
            .args(["-TERM", &pid])
            .status()
            .expect("run kill");
        assert!(sent.success(), "kill -TERM {pid}");
        poll_until("the process to exit after SIGTERM", limit, || {
            self.0.try_wait().expect("wait for the child")
        })
    }
}

impl Deref for ChildGuard {
    type Target = Child;
    fn deref(&self) -> &Child {
        &self.0
    }
}

impl DerefMut for ChildGuard {
    fn deref_mut(&mut self) -> &mut Child {
        &mut self.0
    }
}

impl Drop for ChildGuard {
    fn drop(&mut self) {
        // After an exit already reaped, both do nothing.
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A tool or device a test needs, `found` if it is here. When it is
/// missing the test fails if `CI` is `true` (a CI run must check
/// everything); elsewhere it says why it skips and gets `None` (the caller
/// returns).
pub fn require<T>(tool: &str, why: &str, found: Option<T>) -> Option<T> {
    if found.is_none() {
        let thread = std::thread::current();
        let test = thread.name().unwrap_or("this test");
        let missing = format!("{test} needs {tool}, which is missing: {why}");
        if std::env::var("CI").is_ok_and(|v| v == "true") {
            panic!("{missing} (CI=true: a missing tool fails the run)");
        }
        eprintln!("SKIPPED {missing}");
    }
    found
}

/// A fresh temporary directory, removed on drop.
pub struct TempDir(pub PathBuf);

impl TempDir {
    pub fn new(tag: &str) -> TempDir {
        // A number of this process's own besides the time: two threads may
        // ask for the same tag in the same clock tick, and a directory
        // shared by two tests is removed under one of them.
        static MADE: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let k = MADE.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let n = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0);
        let p =
            std::env::temp_dir().join(format!("toolscore-{tag}-{}-{n}-{k}", std::process::id()));
        std::fs::create_dir(&p).expect("a new temporary directory");
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

#[test]
fn poll_until_returns_what_it_found_and_names_what_timed_out() {
    let mut looks = 0;
    let found = poll_until("the third look", Duration::from_secs(15), || {
        looks += 1;
        (looks == 3).then_some(looks)
    });
    assert_eq!(found, 3);
    let timed_out =
        std::panic::catch_unwind(|| poll_until("a count of 2", Duration::ZERO, || Err::<(), _>(1)));
    let message = timed_out.expect_err("a timeout panics");
    let message = message
        .downcast_ref::<String>()
        .expect("a formatted message");
    assert!(
        message.ends_with("waiting for a count of 2; last seen: 1"),
        "{message}"
    );
}
