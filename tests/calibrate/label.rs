//! `toolscore label` in a real pseudo-terminal (80x24, NO_COLOR): keys
//! sent one at a time, the labels file checked after each answer, undo,
//! a skip, a kill mid-session and a resume that skips what was labelled.

use std::io::{Read, Write};
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use portable_pty::{native_pty_system, Child, CommandBuilder, MasterPty, PtySize};
use serde_json::{json, Value};

use super::cli::{trace_id, write_run};
use crate::util::{poll_until, TempDir};

const WAIT: Duration = Duration::from_secs(60);

struct Session {
    child: Box<dyn Child + Send + Sync>,
    writer: Box<dyn Write + Send>,
    screen: Arc<Mutex<String>>,
    _master: Box<dyn MasterPty + Send>,
}

impl Session {
    fn start(args: &[&str]) -> Session {
        let pair = native_pty_system()
            .openpty(PtySize {
                rows: 24,
                cols: 80,
                pixel_width: 0,
                pixel_height: 0,
            })
            .expect("a pseudo-terminal");
        let mut cmd = CommandBuilder::new(env!("CARGO_BIN_EXE_toolscore"));
        cmd.args(args);
        cmd.env("NO_COLOR", "1");
        cmd.env("TERM", "xterm");
        let child = pair
            .slave
            .spawn_command(cmd)
            .expect("spawn toolscore label");
        drop(pair.slave);
        let mut reader = pair.master.try_clone_reader().unwrap();
        let screen = Arc::new(Mutex::new(String::new()));
        let sink = Arc::clone(&screen);
        std::thread::spawn(move || {
            let mut buf = [0u8; 4096];
            while let Ok(n) = reader.read(&mut buf) {
                if n == 0 {
                    break;
                }
                sink.lock()
                    .unwrap()
                    .push_str(&String::from_utf8_lossy(&buf[..n]));
            }
        });
        let writer = pair.master.take_writer().unwrap();
        Session {
            child,
            writer,
            screen,
            _master: pair.master,
        }
    }

    /// Everything written so far.
    fn output(&self) -> String {
        self.screen.lock().unwrap().clone()
    }

    /// The last screen drawn (what follows the last clear).
    fn last_screen(&self) -> String {
        let out = self.output();
        out.rsplit("\x1b[2J").next().unwrap_or("").to_string()
    }

    fn wait_screen(&self, what: &str) -> String {
        poll_until(&format!("a screen showing {what:?}"), WAIT, || {
            let s = self.last_screen();
            if s.contains(what) {
                Ok(s)
            } else {
                Err(s)
            }
        })
    }

    fn key(&mut self, k: char) {
        self.writer.write_all(k.to_string().as_bytes()).unwrap();
        self.writer.flush().unwrap();
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn rows(path: &Path) -> Vec<Value> {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    assert!(
        text.is_empty() || text.ends_with('\n'),
        "a cut line: {text:?}"
    );
    text.lines()
        .map(|l| serde_json::from_str(l).expect("a whole JSON row"))
        .collect()
}

fn wait_rows(path: &Path, n: usize) -> Vec<Value> {
    poll_until(&format!("{n} label rows"), WAIT, || {
        let r = rows(path);
        if r.len() == n {
            Ok(r)
        } else {
            Err(r)
        }
    })
}

fn label(i: usize, pass: bool) -> Value {
    json!({"case": format!("c{i:02}"), "trace_id": trace_id(i), "label": if pass {"pass"} else {"fail"}, "rater": "ann"})
}

/// A screen fits 80x24, has no colour and does not show the verdict.
fn plain_and_blind(screen: &str) {
    let text = screen.trim_start_matches("\x1b[H");
    let lines: Vec<&str> = text.split("\r\n").collect();
    assert!(lines.len() <= 24, "{} lines: {screen}", lines.len());
    for l in &lines {
        assert!(l.chars().count() <= 80, "wider than 80: {l:?}");
    }
    assert!(!text.contains('\x1b'), "an escape sequence in {text:?}");
    for verdict in ["FAIL", "score", "expected calls matched"] {
        assert!(
            !text.contains(verdict),
            "the metric's verdict shows: {text}"
        );
    }
}

#[test]
fn label_session_answers_undo_kill_and_resume() {
    let dir = TempDir::new("label-pty");
    let (traces, fixture) = write_run(dir.path(), 6);
    let out = dir.path().join("labels.jsonl");
    let out_s = out.display().to_string();
    let args = [
        "label",
        traces.as_str(),
        "-e",
        fixture.as_str(),
        "-o",
        out_s.as_str(),
        "--rater",
        "ann",
        "-q",
    ];

    let mut s = Session::start(&args);
    let first = s.wait_screen("case c00 (1 of 6)");
    plain_and_blind(&first);
    assert!(
        first.contains("request: Weather please, ticket q00x"),
        "{first}"
    );
    assert!(first.contains("get_weather({\"city\":\"c0\"})"), "{first}");
    s.key('p');
    assert_eq!(wait_rows(&out, 1), [label(0, true)]);
    s.wait_screen("case c01 (2 of 6)");
    s.key('f');
    assert_eq!(wait_rows(&out, 2), [label(0, true), label(1, false)]);
    s.wait_screen("case c02 (3 of 6)");
    // Undo takes the last answer out of the file and shows its case again.
    s.key('u');
    let again = s.wait_screen("undone");
    assert!(again.contains("case c01 (2 of 6)"), "{again}");
    assert_eq!(wait_rows(&out, 1), [label(0, true)]);
    s.key('s');
    s.wait_screen("case c02 (3 of 6)");
    s.key('f');
    assert_eq!(wait_rows(&out, 2), [label(0, true), label(2, false)]);
    plain_and_blind(&s.wait_screen("case c03 (4 of 6)"));
    // Killed mid-session: what was answered is on disk, whole.
    s.child.kill().unwrap();
    poll_until("the killed session to end", WAIT, || {
        s.child.try_wait().ok().flatten().is_some()
    });
    drop(s);
    assert_eq!(rows(&out).len(), 2);

    // The next session skips what ann labelled: c01 (skipped) comes first.
    let mut s = Session::start(&args);
    s.wait_screen("case c01 (1 of 4)");
    s.key('p');
    assert_eq!(wait_rows(&out, 3)[2], label(1, true));
    s.wait_screen("case c03 (2 of 4)");
    s.key('q');
    let status = poll_until("the session to quit", WAIT, || {
        s.child.try_wait().ok().flatten()
    });
    assert!(status.success(), "{status:?}: {}", s.output());
    assert_eq!(rows(&out).len(), 3);
}

/// The cases a session over `args` shows, skipping each.
fn cases_shown(args: &[&str], n: usize) -> Vec<String> {
    let mut s = Session::start(args);
    let mut cases = Vec::new();
    for k in 1..=n {
        let screen = s.wait_screen(&format!("({k} of {n})"));
        let at = screen.find("case ").expect("a case line") + "case ".len();
        let name = screen[at..].split(" (").next().unwrap_or("").to_string();
        cases.push(name);
        s.key('s');
    }
    let status = poll_until("the session to end", WAIT, || {
        s.child.try_wait().ok().flatten()
    });
    assert!(status.success(), "{status:?}: {}", s.output());
    cases
}

#[test]
fn label_sample_is_seeded_and_balanced() {
    let dir = TempDir::new("label-sample");
    let (traces, fixture) = write_run(dir.path(), 8);
    let out = dir.path().join("labels.jsonl").display().to_string();
    let args = [
        "label",
        traces.as_str(),
        "-e",
        fixture.as_str(),
        "-o",
        out.as_str(),
        "--sample",
        "4",
        "--seed",
        "3",
        "--balanced",
        "-q",
    ];
    let first = cases_shown(&args, 4);
    assert_eq!(
        cases_shown(&args, 4),
        first,
        "the same seed picks the same cases"
    );
    // tool_correctness at 0.5 fails only the runs without calls (c03, c07):
    // both are picked, and two of the six passes.
    let mut picked = first.clone();
    picked.sort();
    assert!(
        picked.contains(&"c03".to_string()) && picked.contains(&"c07".to_string()),
        "{picked:?}"
    );
    assert_eq!(
        picked
            .iter()
            .filter(|c| !c.ends_with('3') && !c.ends_with('7'))
            .count(),
        2,
        "{picked:?}"
    );
    // Skips write nothing.
    assert_eq!(rows(Path::new(&out)).len(), 0);
}
