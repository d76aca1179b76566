//! The files serve reads and writes, across crashes, restarts and log
//! rotation (issue 28): strict JSON rows in `--output`, a torn last line
//! left by a crash moved to a side file at the next start, SIGKILL in
//! a loop, SIGHUP reopening the file (rename and copytruncate), and a
//! token file with a byte order mark. The real binary, on real sockets.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use opentelemetry_proto::tonic::trace::v1::Span;
use prost::Message;
use serde_json::Value;

use super::{kv, of_type, post, read_rows, request, start, weather, Framing, JSON, PROTOBUF};
use crate::reports::{all_results, check_results, python_reads, results_trace, serde_rows};
use crate::util::{
    hex, peak_rss, poll_every, poll_until, require, small_cases, ChildGuard, TempDir,
};

const LIMIT: Duration = Duration::from_secs(20);

/// The wait for serve to listen: generous, as reading a big fixture first
/// takes long on a loaded machine (a start that fails ends the wait at
/// once, the process having exited).
const START_LIMIT: Duration = Duration::from_secs(300);

/// `toolscore serve` as a child process on 127.0.0.1:0 ports (HTTP and
/// admin, found in its `Listening.` line), its log collected as it comes.
pub(super) struct Serve {
    child: ChildGuard,
    pub(super) http: SocketAddr,
    log: Arc<Mutex<String>>,
    reader: Option<std::thread::JoinHandle<()>>,
}

impl Serve {
    pub(super) fn start(args: &[&str], out: &Path) -> Serve {
        Serve::spawn(crate::util::bin(), args, out)
    }

    /// With a file-size limit (`RLIMIT_FSIZE`) and SIGXFSZ ignored, so a
    /// write past `bytes` fails with EFBIG (as on a full disk).
    fn start_with_file_limit(args: &[&str], out: &Path, bytes: u64) -> Serve {
        use std::os::unix::process::CommandExt;
        let mut cmd = crate::util::bin();
        // SAFETY: only async-signal-safe calls between fork and exec.
        unsafe {
            cmd.pre_exec(move || {
                let lim = libc::rlimit {
                    rlim_cur: bytes,
                    rlim_max: bytes,
                };
                if libc::setrlimit(libc::RLIMIT_FSIZE, &lim) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                libc::signal(libc::SIGXFSZ, libc::SIG_IGN);
                Ok(())
            });
        }
        Serve::spawn(cmd, args, out)
    }

    pub(super) fn spawn(mut cmd: Command, args: &[&str], out: &Path) -> Serve {
        let mut child = ChildGuard(
            cmd.args([
                "serve",
                "--quiet",
                "--grpc-endpoint",
                "off",
                "--http-endpoint",
                "127.0.0.1:0",
                "--admin-endpoint",
                "127.0.0.1:0",
            ])
            .args(args)
            .arg("--output")
            .arg(out)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start toolscore serve"),
        );
        let stderr = child.stderr.take().unwrap();
        let log = Arc::new(Mutex::new(String::new()));
        let reader = {
            let log = Arc::clone(&log);
            std::thread::spawn(move || {
                for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                    let mut log = log.lock().unwrap();
                    log.push_str(&line);
                    log.push('\n');
                }
            })
        };
        let mut serve = Serve {
            child,
            http: "0.0.0.0:0".parse().unwrap(),
            log,
            reader: Some(reader),
        };
        let line = serve.wait_log_within("`Listening.`", "Listening.", START_LIMIT);
        serve.http = line
            .split_whitespace()
            .find_map(|w| w.strip_prefix("http="))
            .unwrap_or_else(|| panic!("http= in {line}"))
            .parse()
            .unwrap();
        serve
    }

    pub(super) fn log(&self) -> String {
        self.log.lock().unwrap().clone()
    }

    /// Waits for a log line holding `text` (a process that exits first
    /// fails the wait at once) and returns it.
    pub(super) fn wait_log(&mut self, what: &str, text: &str) -> String {
        self.wait_log_within(what, text, LIMIT)
    }

    /// [`Serve::wait_log`], waiting at most `limit`.
    pub(super) fn wait_log_within(&mut self, what: &str, text: &str, limit: Duration) -> String {
        let log = Arc::clone(&self.log);
        let child = &mut self.child;
        poll_until(what, limit, || {
            let found = log
                .lock()
                .unwrap()
                .lines()
                .find(|l| l.contains(text))
                .map(String::from);
            if let Some(line) = found {
                return Ok(line);
            }
            if let Some(status) = child.try_wait().expect("wait for serve") {
                panic!(
                    "serve exited ({status}) before {what}:\n{}",
                    log.lock().unwrap()
                );
            }
            Err(log.lock().unwrap().lines().count())
        })
    }

    fn signal(&self, name: &str) {
        let sent = Command::new("kill")
            .args([&format!("-{name}"), &self.child.id().to_string()])
            .status()
            .expect("run kill");
        assert!(sent.success(), "kill -{name}");
    }

    /// SIGTERM; the exit status and the whole log.
    pub(super) fn terminate(mut self) -> (std::process::ExitStatus, String) {
        let status = self.child.terminate(LIMIT);
        self.join_log();
        (status, self.log())
    }

    /// SIGKILL, reaped.
    pub(super) fn kill(mut self) -> String {
        self.child.kill().expect("SIGKILL");
        self.child.wait().expect("reap");
        self.join_log();
        self.log()
    }

    fn join_log(&mut self) {
        if let Some(r) = self.reader.take() {
            r.join().unwrap();
        }
    }
}

/// The lines of `path` (complete ones: a last line without its newline is
/// left out) and that last part.
fn lines_of(path: &Path) -> (Vec<String>, String) {
    let text = String::from_utf8(std::fs::read(path).unwrap_or_default()).expect("UTF-8");
    let (complete, tail) = match text.rfind('\n') {
        Some(end) => (&text[..end], &text[end + 1..]),
        None => ("", text.as_str()),
    };
    let lines = if complete.is_empty() && !text.starts_with('\n') {
        Vec::new()
    } else {
        complete.split('\n').map(String::from).collect()
    };
    (lines, tail.to_string())
}

/// The length of the file at `path` and whether it ends in part of a line.
fn end_of(path: &Path) -> (u64, bool) {
    use std::io::{Seek, SeekFrom};
    let Ok(mut file) = std::fs::File::open(path) else {
        return (0, false);
    };
    let len = file.metadata().map_or(0, |m| m.len());
    let mut last = [0u8];
    let read = len > 0
        && file.seek(SeekFrom::Start(len - 1)).is_ok()
        && file.read_exact(&mut last).is_ok();
    (len, read && last[0] != b'\n')
}

fn parses(line: &str) -> bool {
    serde_json::from_str::<Value>(line).is_ok()
}

/// One trace (`n` makes its id) whose single tool call returns `result`.
fn result_request(n: u64, result: &str) -> Vec<u8> {
    let mut id = vec![0xcd; 16];
    id[8..].copy_from_slice(&n.to_be_bytes());
    let root = vec![0, 0, 0, 0, 0, 0, 0, 1];
    let spans = vec![
        Span {
            trace_id: id.clone(),
            span_id: vec![0, 0, 0, 0, 0, 0, 0, 2],
            parent_span_id: root.clone(),
            name: "execute_tool lookup".into(),
            start_time_unix_nano: 1_000,
            end_time_unix_nano: 2_000,
            attributes: vec![
                kv("gen_ai.operation.name", "execute_tool"),
                kv("gen_ai.tool.name", "lookup"),
                kv("gen_ai.tool.call.result", result),
            ],
            ..Default::default()
        },
        Span {
            trace_id: id,
            span_id: root,
            name: "invoke_agent planner".into(),
            start_time_unix_nano: 900,
            end_time_unix_nano: 3_000,
            attributes: vec![kv("gen_ai.operation.name", "invoke_agent")],
            ..Default::default()
        },
    ];
    request(spans).encode_to_vec()
}

/// One POST that may fail (the server may be killed meanwhile): the status.
fn try_post(addr: SocketAddr, body: &[u8]) -> Option<u16> {
    let mut s = TcpStream::connect(addr).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(10))).ok()?;
    let head = format!(
        "POST /v1/traces HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\
         Content-Type: application/x-protobuf\r\nContent-Length: {}\r\n\r\n",
        body.len()
    );
    s.write_all(head.as_bytes()).ok()?;
    s.write_all(body).ok()?;
    let mut reply = Vec::new();
    s.read_to_end(&mut reply).ok()?;
    std::str::from_utf8(reply.get(..12)?)
        .ok()?
        .split(' ')
        .nth(1)?
        .parse()
        .ok()
}

pub(super) fn send(addr: SocketAddr, body: &[u8]) {
    assert_eq!(try_post(addr, body), Some(200));
}

/// Issue 28, item 6, in serve: `--output` rows are strict JSON whatever a
/// call's result holds.
#[test]
fn serve_output_rows_are_strict_json() {
    let dir = TempDir::new("serve-strict");
    let trace = results_trace(dir.path(), &all_results());
    let body = std::fs::read(trace).unwrap();
    let server = start("serve-strict", |_, _| {});
    let r = post(server.http, &[JSON], &body, Framing::Length);
    assert_eq!(r.status, 200);
    server.wait_for("the trace scored", |s| s.traces_scored == 1);
    let text = std::fs::read_to_string(&server.out).unwrap();
    let rows = serde_rows(&text);
    check_results(&rows);
    if let Some(read) = require("python3", "reads the results file", python_reads(&text)) {
        read.unwrap();
    }
    server.stop();
}

/// The side files (`results.jsonl.torn-*`) next to `out`, by name.
fn torn_files(out: &Path) -> Vec<std::path::PathBuf> {
    let prefix = format!("{}.torn-", out.file_name().unwrap().to_str().unwrap());
    let mut found: Vec<_> = std::fs::read_dir(out.parent().unwrap())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with(&prefix))
        })
        .collect();
    found.sort();
    found
}

/// Issue 36, §4: a results file that ends in half a line (a crash
/// mid-write) is cut back to its last newline at the next start; the
/// fragment goes to a side file and is logged with its length, so the
/// file holds only whole rows.
#[test]
fn a_torn_last_line_is_moved_aside() {
    let dir = TempDir::new("torn-tail");
    let out = dir.path().join("results.jsonl");
    let fragment = r#"{"type":"unmatched_trace","trace_id":"ab"#;
    std::fs::write(&out, format!("{{\"type\":\"summary\"}}\n{fragment}")).unwrap();
    let mut serve = Serve::start(&["--decision-wait", "50ms"], &out);
    let warned = serve.wait_log("the fragment logged", "partial line");
    assert!(
        warned.contains(&format!("fragment_bytes={}", fragment.len()))
            && warned.contains(out.to_str().unwrap()),
        "{warned}"
    );
    let sides = torn_files(&out);
    assert_eq!(sides.len(), 1, "{sides:?}");
    assert!(warned.contains(sides[0].to_str().unwrap()), "{warned}");
    assert_eq!(std::fs::read_to_string(&sides[0]).unwrap(), fragment);
    send(serve.http, &weather(1).encode_to_vec());
    poll_until("the row written", LIMIT, || lines_of(&out).0.len() >= 2);
    let (status, log) = serve.terminate();
    assert_eq!(status.code(), Some(0), "{log}");
    let (lines, tail) = lines_of(&out);
    assert_eq!(tail, "");
    let rows: Vec<Value> = lines
        .iter()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect();
    assert_eq!(rows[0]["type"], "summary", "the whole rows before it kept");
    assert_eq!(of_type(&rows, "unmatched_trace").len(), 1, "{log}");
    assert_eq!(rows.last().unwrap()["type"], "summary");
}

/// Issue 28, item 10, and issue 36, §4: runs killed with SIGKILL in the
/// middle of a load of large rows (~200 KB). A kill can cut the last row
/// short (the kernel stops a write at a page boundary), but never a row
/// before it; the next start moves the fragment to a side file of its
/// length, so after every start the file holds only whole JSON rows.
#[test]
fn sigkill_mid_load_leaves_only_whole_rows_after_a_restart() {
    const RUNS: usize = 6;
    let dir = TempDir::new("sigkill-loop");
    let out = dir.path().join("results.jsonl");
    let big = format!("{{\"blob\":\"{}\"}}", "x".repeat(200_000));
    // The last kill's fragment, until a start has moved it aside.
    let mut torn: Option<String> = None;
    let mut moved = 0;
    let next = Arc::new(AtomicU64::new(0));
    for run in 0..=RUNS {
        let mut serve = Serve::start(&["--decision-wait", "1ms"], &out);
        if let Some(fragment) = torn.take() {
            let warned = serve.wait_log("the fragment logged", "partial line");
            assert!(
                warned.contains(&format!("fragment_bytes={}", fragment.len())),
                "{warned}"
            );
            moved += 1;
            let sides = torn_files(&out);
            assert_eq!(sides.len(), moved, "{sides:?}");
            let saved = sides
                .iter()
                .map(|p| std::fs::read_to_string(p).unwrap())
                .filter(|t| *t == fragment)
                .count();
            assert!(saved >= 1, "run {run}: no side file holds the fragment");
        }
        // Started: only whole rows, however the last run ended.
        let (lines, tail) = lines_of(&out);
        assert_eq!(tail.len(), 0, "run {run}: a partial line after the start");
        for (i, line) in lines.iter().enumerate() {
            assert!(
                parses(line),
                "run {run}: line {} is not a whole row ({} bytes: {}...)",
                i + 1,
                line.len(),
                &line[..line.len().min(80)]
            );
        }
        if run == RUNS {
            let (status, log) = serve.terminate();
            assert_eq!(status.code(), Some(0), "{log}");
            break;
        }
        let stop = Arc::new(AtomicBool::new(false));
        let senders: Vec<_> = (0..4)
            .map(|_| {
                let (stop, next, big, addr) = (
                    Arc::clone(&stop),
                    Arc::clone(&next),
                    big.clone(),
                    serve.http,
                );
                std::thread::spawn(move || {
                    while !stop.load(Ordering::Relaxed) {
                        let n = next.fetch_add(1, Ordering::Relaxed);
                        if try_post(addr, &result_request(n, &big)).is_none() {
                            break;
                        }
                    }
                })
            })
            .collect();
        // Killed once rows are being written: in the middle of a write if
        // one is seen (the file ends mid-row), else after a few rows.
        let start_len = std::fs::metadata(&out).map_or(0, |m| m.len());
        poll_every(Duration::from_micros(100), "rows written", LIMIT, || {
            let (len, mid_row) = end_of(&out);
            len > start_len && mid_row || len > start_len + 1_500_000
        });
        let log = serve.kill();
        stop.store(true, Ordering::Relaxed);
        for s in senders {
            s.join().unwrap();
        }
        // Before the restart: every line but a torn last one is whole.
        let (lines, tail) = lines_of(&out);
        for (i, line) in lines.iter().enumerate() {
            assert!(
                parses(line),
                "run {run}: line {} torn before the last ({} bytes)\n{log}",
                i + 1,
                line.len()
            );
        }
        torn = (!tail.is_empty()).then_some(tail);
    }
    // How many kills tore a row (the kernel's timing decides).
    eprintln!("{moved} of {RUNS} kills left a partial row");
    let (lines, tail) = lines_of(&out);
    assert_eq!(tail, "");
    assert!(lines.iter().all(|l| parses(l)));
    assert!(lines.last().is_some_and(|l| l.contains("\"summary\"")));
}

/// Issue 28, item 11: SIGHUP does not stop serve, and loses nothing it
/// acknowledged: traces buffered across two HUPs are all scored at SIGTERM.
#[test]
fn sighup_does_not_stop_serve_or_lose_buffered_traces() {
    let dir = TempDir::new("hup-buffered");
    let out = dir.path().join("results.jsonl");
    let mut serve = Serve::start(&["--decision-wait", "10m"], &out);
    for t in 1..=5 {
        send(serve.http, &weather(t).encode_to_vec());
    }
    serve.signal("HUP");
    serve.wait_log("the first HUP handled", "SIGHUP");
    serve.signal("HUP");
    poll_until("the second HUP handled", LIMIT, || {
        serve.log().matches("SIGHUP").count() >= 2
    });
    for t in 6..=10 {
        send(serve.http, &weather(t).encode_to_vec());
    }
    let (status, log) = serve.terminate();
    assert_eq!(status.code(), Some(0), "{log}");
    let rows = read_rows(&out);
    assert_eq!(of_type(&rows, "unmatched_trace").len(), 10, "{log}");
    assert_eq!(rows.last().unwrap()["type"], "summary");
}

/// Issue 28, item 11: `mv F F.1` then SIGHUP: rows written before stay in
/// `F.1`, new rows go to a new `F`.
#[test]
fn sighup_after_a_rename_writes_to_a_new_file() {
    let dir = TempDir::new("hup-rename");
    let out = dir.path().join("results.jsonl");
    let rotated = dir.path().join("results.jsonl.1");
    let mut serve = Serve::start(&["--decision-wait", "50ms"], &out);
    send(serve.http, &weather(1).encode_to_vec());
    poll_until("the first row", LIMIT, || lines_of(&out).0.len() == 1);
    std::fs::rename(&out, &rotated).unwrap();
    serve.signal("HUP");
    serve.wait_log("the file reopened", "Reopened the results file");
    assert!(out.exists(), "a new file at the path");
    send(serve.http, &weather(2).encode_to_vec());
    poll_until("the second row", LIMIT, || lines_of(&out).0.len() == 1);
    let (status, log) = serve.terminate();
    assert_eq!(status.code(), Some(0), "{log}");
    let old = read_rows(&rotated);
    let new = read_rows(&out);
    assert_eq!(old.len(), 1, "{log}");
    assert_eq!(old[0]["trace_id"], hex(&super::trace_id(1)));
    assert_eq!(new[0]["trace_id"], hex(&super::trace_id(2)));
    assert_eq!(new.last().unwrap()["type"], "summary");
    assert_eq!(new.len(), 2);
}

/// Issue 28, item 11: after a copytruncate (the file copied, then cut to 0
/// under serve), rows go to the start of the file, not past NUL bytes up
/// to the old length; and when a write then fails (here: a file-size limit,
/// as a full disk would), what it wrote is cut off without extending the
/// file: it holds whole rows only.
#[test]
fn copytruncate_then_a_failed_write_leaves_whole_rows_only() {
    const CAP: u64 = 64 << 10;
    let dir = TempDir::new("copytruncate");
    let out = dir.path().join("results.jsonl");
    let mut serve = Serve::start_with_file_limit(&["--decision-wait", "50ms"], &out, CAP);
    let row = format!("{{\"pad\":\"{}\"}}", "p".repeat(4_000));
    for n in 0..8 {
        send(serve.http, &result_request(n, &row));
    }
    poll_until("8 rows", LIMIT, || lines_of(&out).0.len() == 8);
    let old_len = std::fs::metadata(&out).unwrap().len();
    // logrotate's copytruncate.
    std::fs::copy(&out, dir.path().join("results.jsonl.1")).unwrap();
    std::fs::OpenOptions::new()
        .write(true)
        .open(&out)
        .unwrap()
        .set_len(0)
        .unwrap();
    send(serve.http, &result_request(100, &row));
    poll_until("a row after the truncation", LIMIT, || {
        lines_of(&out).0.len() == 1
    });
    let after = std::fs::read(&out).unwrap();
    assert!(!after.contains(&0), "NUL bytes after a copytruncate");
    assert!((after.len() as u64) < old_len);
    // A row larger than the file may grow: its write fails part way.
    let huge = format!("{{\"blob\":\"{}\"}}", "h".repeat(CAP as usize));
    send(serve.http, &result_request(101, &huge));
    serve.wait_log("the failed write logged", "Cannot write the results file");
    // The run ends failing (the row was never written), the file as it was.
    let (status, log) = serve.terminate();
    assert_ne!(status.code(), Some(0), "{log}");
    let text = std::fs::read(&out).unwrap();
    assert!(!text.contains(&0), "NUL bytes after a failed write");
    assert_eq!(
        String::from_utf8_lossy(&text),
        String::from_utf8_lossy(&after),
        "the failed write's part cut off"
    );
}

/// Issue 28, item 15: a token file saved with a UTF-8 byte order mark (as
/// some Windows editors do) holds the token without it.
#[test]
fn a_token_file_with_a_byte_order_mark_is_read_without_it() {
    let server = start("token-bom", |c, dir| {
        let file = dir.join("token");
        std::fs::write(&file, "\u{feff}s3cret\r\n").unwrap();
        c.auth_token_file = Some(file);
    });
    let body = weather(1).encode_to_vec();
    let with = |token: &str| {
        let auth = format!("Bearer {token}");
        post(
            server.http,
            &[PROTOBUF, ("Authorization", &auth)],
            &body,
            Framing::Length,
        )
        .status
    };
    assert_eq!(with("s3cret"), 200);
    assert_eq!(with("s3cre"), 401);
    server.stop();
}

/// A fixture's argument matchers scored by a preset (which compares them
/// literally) are named once in serve's log, as `replay` notes them.
#[test]
fn matchers_scored_by_a_preset_are_noted_in_the_log() {
    let dir = TempDir::new("matcher-note");
    let out = dir.path().join("results.jsonl");
    let fixture = dir.path().join("cases.jsonl");
    std::fs::write(
        &fixture,
        r#"{"id":"re","trace_id":"31d90f5c8edb6ba92f3e6727a8ad96ea","expected_tools":[{"name":"get_weather","args":{"city":{"$regex":"^Par"}}}]}"#,
    )
    .unwrap();
    let fixture = fixture.display().to_string();
    let serve = Serve::start(
        &[
            "--expected",
            &fixture,
            "-m",
            "tool_correctness",
            "-m",
            "mlflow.exact",
        ],
        &out,
    );
    let (status, log) = serve.terminate();
    assert_eq!(status.code(), Some(0), "{log}");
    let notes: Vec<&str> = log
        .lines()
        .filter(|l| l.contains("Argument matchers compared literally."))
        .collect();
    assert_eq!(notes.len(), 1, "{log}");
    assert!(
        notes[0].contains("1 case(s) with argument matchers"),
        "{log}"
    );
    assert!(notes[0].contains("mlflow.exact"), "{log}");
}

/// `serve` with a big fixture (200,000 small cases, none joined) writes
/// every case as unmatched when it stops, without holding them all: the
/// memory it adds over a one-case run stays within 4x the fixture
/// (docs/formats.md, "Fixture memory"); it was 18x.
#[test]
fn a_big_fixture_in_serve_costs_at_most_four_times_its_size() {
    let dir = TempDir::new("serve-bigfixture");
    let text = small_cases(200_000);
    let big = dir.path().join("big.jsonl");
    std::fs::write(&big, &text).unwrap();
    let one = dir.path().join("one.jsonl");
    std::fs::write(&one, text.lines().next().unwrap()).unwrap();
    let run = |fixture: &Path| {
        let out = dir
            .path()
            .join(format!("results-{}", fixture.display().to_string().len()));
        let _ = std::fs::remove_file(&out);
        let fixture = fixture.display().to_string();
        // Writing every case as it stops takes long on a loaded machine
        // (a debug build under load passed the default 25 s): the deadline
        // is not what is measured here.
        let mut serve = Serve::start(
            &["--expected", &fixture, "--shutdown-timeout", "600s"],
            &out,
        );
        let pid = serve.child.id();
        // Read once while serve surely runs: a small fixture's serve may
        // exit before the first reading below, and an exited process has
        // no VmHWM.
        let mut peak = peak_rss(pid).unwrap_or(0);
        serve.signal("INT");
        // Every 2 ms: the interval of the peak reading, not of a wait.
        let status = poll_every(
            Duration::from_millis(2),
            "serve to write its rows and exit",
            Duration::from_secs(660),
            || {
                peak = peak.max(peak_rss(pid).unwrap_or(0));
                serve.child.try_wait().expect("wait for serve")
            },
        );
        serve.join_log();
        assert_eq!(status.code(), Some(0), "{}", serve.log());
        let rows = std::fs::read_to_string(&out).unwrap();
        (peak, rows.matches(r#""type":"unmatched_case""#).count())
    };
    let (base, _) = run(&one);
    let (peak, unmatched) = run(&big);
    assert_eq!(unmatched, 200_000, "every case written");
    let (added, size) = (peak.saturating_sub(base), text.len() as u64);
    assert!(base > 0 && peak > 0, "no VmHWM read");
    assert!(
        added <= 4 * size,
        "a {size}-byte fixture added {added} bytes of memory ({:.1}x)",
        added as f64 / size as f64
    );
}
