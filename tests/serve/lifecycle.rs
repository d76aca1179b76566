//! The real binary: SIGTERM scores everything buffered, and a results
//! exporter that is down never blocks scoring or shutdown.

use std::io::{BufRead, BufReader, Read};
use std::net::SocketAddr;
use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use prost::Message;
use serde_json::Value;

use super::{get, metric_value, of_type, post, read_rows, weather, Framing, PROTOBUF};
use crate::util::{poll_until, ChildGuard, TempDir};

#[test]
fn sigterm_scores_everything_buffered_and_exits_zero() {
    let dir = TempDir::new("sigterm");
    let out = dir.path().join("results.jsonl");
    let serve = Spawned::start(&["--decision-wait", "10m"], &out);
    for t in 1..=3 {
        let r = post(
            serve.http,
            &[PROTOBUF],
            &weather(t).encode_to_vec(),
            Framing::Length,
        );
        assert_eq!(r.status, 200);
    }
    let (status, log, stdout) = serve.terminate(Duration::from_secs(30));
    assert_eq!(status.code(), Some(0), "{log}");
    let rows = read_rows(&out);
    assert_eq!(of_type(&rows, "unmatched_trace").len(), 3, "{log}");
    assert_eq!(rows.last().unwrap()["type"], "summary");
    assert_eq!(rows.last().unwrap()["stats"]["spans"], 9);
    assert!(log.contains("SIGTERM"), "{log}");
    // One stdout line per trace, then the summary.
    assert_eq!(
        stdout.lines().filter(|l| l.starts_with("----")).count(),
        3,
        "{stdout}"
    );
    assert!(stdout.contains("3 trace(s) scored"), "{stdout}");
}

/// Scoring never waits on the results exporter (issue 11: it did, holding
/// the results lock, and SIGTERM then hung for ever). The results
/// downstream is down and its queue holds one request: every trace is still
/// scored and written as it completes, the records that cannot be queued
/// are counted, and SIGTERM ends the run within `--shutdown-timeout` with a
/// non-zero exit and a log line saying what was abandoned.
#[test]
fn results_exporter_down_never_blocks_scoring_or_shutdown() {
    let dir = TempDir::new("results-down");
    let out = dir.path().join("results.jsonl");
    let default = dir.path().join("default.json");
    std::fs::write(&default, r#"["get_weather"]"#).unwrap();
    // A port nothing listens on: connections are refused.
    let dead = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    let results = format!("http://{dead}");
    let default_arg = default.to_str().unwrap();
    let serve = Spawned::start(
        &[
            "--default-expected",
            default_arg,
            "--results-otlp",
            &results,
            "--forward-queue",
            "1",
            "--forward-concurrency",
            "1",
            "--decision-wait",
            "100ms",
            "--shutdown-timeout",
            "3s",
        ],
        &out,
    );
    for t in 1..=8u8 {
        let r = post(
            serve.http,
            &[PROTOBUF],
            &weather(t).encode_to_vec(),
            Framing::Length,
        );
        assert_eq!(r.status, 200);
        // Each trace is scored and written before the next is sent.
        let written = || {
            complete_rows(&out)
                .iter()
                .filter(|r| r["type"] == "evaluation")
                .count()
        };
        poll_until(
            &format!("trace {t} to be scored"),
            Duration::from_secs(15),
            || written() >= usize::from(t),
        );
        assert_eq!(written(), usize::from(t), "trace {t} was not scored");
    }
    let dropped = || {
        let (_, text) = get(serve.admin, "/metrics");
        metric_value(&text, "toolscore_results_dropped_total")
    };
    poll_until(
        "dropped records to be counted",
        Duration::from_secs(15),
        || dropped() > 0.0,
    );
    let started = Instant::now();
    let (status, log, _) = serve.terminate(Duration::from_secs(20));
    assert!(
        started.elapsed() < Duration::from_secs(15),
        "shutdown took {:?}",
        started.elapsed()
    );
    assert_ne!(status.code(), Some(0), "{log}");
    assert!(log.contains("abandon"), "{log}");
    let rows = read_rows(&out);
    assert_eq!(of_type(&rows, "evaluation").len(), 8, "{log}");
    assert_eq!(rows.last().unwrap()["type"], "summary", "{log}");
}

/// `toolscore serve` as a child process on 127.0.0.1:0 ports, found in its
/// `Listening.` log line.
struct Spawned {
    child: ChildGuard,
    http: SocketAddr,
    admin: SocketAddr,
    log: std::thread::JoinHandle<String>,
}

impl Spawned {
    fn start(args: &[&str], out: &Path) -> Spawned {
        let mut child = ChildGuard(
            crate::util::bin()
                .args([
                    "serve",
                    "--grpc-endpoint",
                    "127.0.0.1:0",
                    "--http-endpoint",
                    "127.0.0.1:0",
                    "--admin-endpoint",
                    "127.0.0.1:0",
                ])
                .args(args)
                .arg("--output")
                .arg(out)
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .expect("start toolscore serve"),
        );
        let stderr = child.stderr.take().unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        let log = std::thread::spawn(move || {
            let mut log = String::new();
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                if line.contains("Listening.") {
                    let _ = tx.send(line.clone());
                }
                log.push_str(&line);
                log.push('\n');
            }
            log
        });
        let line = rx
            .recv_timeout(Duration::from_secs(20))
            .expect("serve logs `Listening.`");
        let addr = |key: &str| -> SocketAddr {
            line.split_whitespace()
                .find_map(|w| w.strip_prefix(key))
                .unwrap_or_else(|| panic!("{key} in {line}"))
                .parse()
                .unwrap()
        };
        Spawned {
            http: addr("http="),
            admin: addr("admin="),
            child,
            log,
        }
    }

    /// Sends SIGTERM and waits (at most `limit`) for the exit: status, log
    /// and stdout.
    fn terminate(mut self, limit: Duration) -> (std::process::ExitStatus, String, String) {
        let status = self.child.terminate(limit);
        let log = self.log.join().unwrap();
        let mut stdout = String::new();
        self.child
            .stdout
            .take()
            .unwrap()
            .read_to_string(&mut stdout)
            .unwrap();
        (status, log, stdout)
    }
}

/// The complete rows of a JSONL file being written (a last line still being
/// written is left out).
fn complete_rows(path: &Path) -> Vec<Value> {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let complete = text.rfind('\n').map_or("", |end| &text[..end]);
    complete
        .lines()
        .map(|l| serde_json::from_str(l).expect("JSONL row"))
        .collect()
}
