//! Progress on replays, as a person sees it: the binary runs on a real
//! pseudo-terminal (util-linux `script`, part of every Debian system) and we
//! read what the terminal showed. Progress must never reach a stderr that is
//! not a terminal, nor a terminal under `--quiet`.

use std::fs;
use std::process::{Command, Stdio};

use regex::Regex;
use serde_json::Value;

use crate::util::{toolscore, TempDir};

const REPLAY: &str = "replay sample-traces --expected sample-traces/expected.jsonl";

fn sh_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', r"'\''"))
}

fn bin() -> String {
    sh_quote(env!("CARGO_BIN_EXE_toolscore"))
}

/// Runs the shell command line `cmd` on a pseudo-terminal; returns its exit
/// code and what the terminal showed, escape sequences removed.
fn on_terminal(cmd: &str) -> (Option<i32>, String) {
    let out = Command::new("script")
        // -e: script exits with the command's code.
        .args(["-q", "-e", "-c", cmd, "/dev/null"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        // No run store in the checkout.
        .env("TOOLSCORE_STORE", "off")
        .stdin(Stdio::null())
        .output()
        .unwrap_or_else(|e| panic!("`script` (util-linux) runs the pseudo-terminal: {e}"));
    let screen = String::from_utf8_lossy(&out.stdout);
    let ansi = Regex::new(r"\x1b\[[0-9;?]*[A-Za-z]").unwrap();
    (
        out.status.code(),
        ansi.replace_all(&screen, "").into_owned(),
    )
}

/// Inputs and spans the replay read, from its JSONL summary.
fn expected_counts() -> (u64, u64) {
    let args: Vec<&str> = REPLAY
        .split(' ')
        .chain(["--format", "jsonl", "-q"])
        .collect();
    let out = toolscore(&args);
    let summary: Value = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find(|r| r["type"] == "summary")
        .expect("a summary row");
    let stats = &summary["stats"];
    (
        stats["inputs"].as_u64().unwrap(),
        stats["spans"].as_u64().unwrap(),
    )
}

fn progress_re() -> Regex {
    Regex::new(r"reading (\d+)/(\d+) files, (\d+) spans, (\d[\d.]* [KMG]?i?B)/(\d[\d.]* [KMG]?i?B)")
        .unwrap()
}

#[test]
fn progress_shows_files_bytes_and_spans_on_a_terminal() {
    let (inputs, spans) = expected_counts();
    assert!(inputs > 10 && spans > 20, "{inputs} inputs, {spans} spans");
    let (code, screen) = on_terminal(&format!("{} {REPLAY}", bin()));
    assert_eq!(code, Some(1), "some sample cases fail by design:\n{screen}");
    assert!(
        screen.contains("CASE"),
        "the table is on the terminal too:\n{screen}"
    );
    let last = progress_re()
        .captures_iter(&screen)
        .last()
        .unwrap_or_else(|| panic!("no progress on the terminal:\n{screen}"));
    assert_eq!(last[1].parse::<u64>().unwrap(), inputs, "{}", &last[0]);
    assert_eq!(last[2].parse::<u64>().unwrap(), inputs, "{}", &last[0]);
    assert_eq!(last[3].parse::<u64>().unwrap(), spans, "{}", &last[0]);
    assert_eq!(
        &last[4], &last[5],
        "all bytes read at the end: {}",
        &last[0]
    );
    // The progress is done before the report starts.
    let at = screen.find(&last[0]).unwrap();
    assert!(at < screen.find("CASE").unwrap(), "{screen}");
}

#[test]
fn no_progress_under_quiet_or_when_stderr_is_not_a_terminal() {
    let re = progress_re();
    // --quiet on a terminal.
    let (code, screen) = on_terminal(&format!("{} {REPLAY} --quiet", bin()));
    assert_eq!(code, Some(1));
    assert!(screen.contains("CASE"), "{screen}");
    assert!(!screen.contains("files,"), "{screen}");

    // stdout on the terminal, stderr to a file.
    let dir = TempDir::new("progress");
    let err = dir.path().join("stderr.txt");
    let (code, screen) = on_terminal(&format!(
        "{} {REPLAY} 2>{}",
        bin(),
        sh_quote(err.to_str().unwrap())
    ));
    assert_eq!(code, Some(1));
    assert!(screen.contains("CASE"), "{screen}");
    assert!(!screen.contains("files,"), "{screen}");
    let stderr = fs::read_to_string(&err).unwrap();
    assert!(
        !stderr.contains("files,") && !stderr.contains('\x1b'),
        "{stderr:?}"
    );

    // No terminal at all: stderr is a pipe.
    let args: Vec<&str> = REPLAY.split(' ').collect();
    let out = toolscore(&args);
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        !re.is_match(&stderr) && !stderr.contains("files,"),
        "{stderr:?}"
    );
}
