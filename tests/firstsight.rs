//! Issue 37: instrumentations never seen before, each run for real against a
//! scripted model and written anew in the shape it wrote (with our own ids and
//! values) in `tests/data/firstsight/<lang>-<pair>.jsonl`, next to what the
//! tool functions received (`<...>.truth.json`). A pair is read right when
//! `inspect` reports exactly those calls, in order: name, arguments and, where
//! the truth has one, the result. The pairs read right must be exactly those
//! not listed in `tests/data/firstsight/misses.txt`, so a fix that makes a
//! listed pair read right fails here until its line is removed.

use std::collections::BTreeMap;
use std::fs;

use serde_json::Value;

use crate::util::{data, inspected_calls, inspected_calls_in, json_rows, toolscore, TempDir};

/// Decodes JSON text (repeatedly: some spans encode twice), so a value and
/// its JSON text compare equal.
fn decoded(v: &Value) -> Value {
    let mut v = v.clone();
    for _ in 0..4 {
        let Value::String(s) = &v else { break };
        match serde_json::from_str::<Value>(s.trim()) {
            Ok(inner) => v = inner,
            Err(_) => break,
        }
    }
    v
}

/// The calls `inspect` reports for `file`, in start order; with the log
/// records beside it (`<stem>.logs.jsonl`), where the instrumentation wrote
/// the messages as logs.
fn reported(file: &str) -> Vec<Value> {
    let spans = format!("firstsight/{file}");
    let logs = spans.replace(".jsonl", ".logs.jsonl");
    let mut calls = if data(&logs).exists() {
        inspected_calls_in(&[&spans, &logs])
    } else {
        inspected_calls(&spans)
    };
    calls.sort_by_key(|c| c["start_time_unix_nano"].as_u64().unwrap_or(0));
    calls
}

/// `None` when the calls are the truth, else the first difference.
fn difference(calls: &[Value], truth: &[Value]) -> Option<String> {
    if calls.len() != truth.len() {
        let got: Vec<String> = calls
            .iter()
            .map(|c| format!("{} [{}]", c["name"], c["convention"]))
            .collect();
        return Some(format!(
            "{} calls, want {}: {}",
            calls.len(),
            truth.len(),
            got.join(", ")
        ));
    }
    for (i, (got, want)) in calls.iter().zip(truth).enumerate() {
        let n = i + 1;
        if got["name"] != want["name"] {
            return Some(format!(
                "call {n}: name {}, want {}",
                got["name"], want["name"]
            ));
        }
        if decoded(&got["args"]) != decoded(&want["args"]) {
            return Some(format!(
                "call {n}: args {}, want {}",
                got["args"], want["args"]
            ));
        }
        let result = &want["result"];
        if !result.is_null() && decoded(&got["result"]) != decoded(result) {
            return Some(format!("call {n}: result {}, want {result}", got["result"]));
        }
    }
    None
}

/// `pair -> reason` from misses.txt: one pair a line, its name first (a `:` after it
/// allowed), then a one-line reason; `#` comments and blank lines skipped.
fn misses() -> BTreeMap<String, String> {
    let text = fs::read_to_string(data("firstsight/misses.txt")).expect("misses.txt");
    text.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(|l| {
            let (pair, reason) = l.split_once(char::is_whitespace).unwrap_or((l, ""));
            (
                pair.trim_end_matches(':').to_string(),
                reason.trim().to_string(),
            )
        })
        .collect()
}

/// Every pair: its file stem and truth.
fn pairs() -> Vec<(String, Vec<Value>)> {
    let dir = data("firstsight");
    let mut pairs: Vec<(String, Vec<Value>)> = fs::read_dir(&dir)
        .expect("tests/data/firstsight")
        .map(|e| {
            e.expect("dir entry")
                .file_name()
                .to_string_lossy()
                .into_owned()
        })
        .filter_map(|f| f.strip_suffix(".truth.json").map(str::to_string))
        .map(|stem| {
            let text = fs::read_to_string(dir.join(format!("{stem}.truth.json")))
                .unwrap_or_else(|e| panic!("{stem}.truth.json: {e}"));
            let truth: Vec<Value> =
                serde_json::from_str(&text).unwrap_or_else(|e| panic!("{stem}.truth.json: {e}"));
            assert!(!truth.is_empty(), "{stem}.truth.json: no calls");
            (stem, truth)
        })
        .collect();
    pairs.sort_by(|a, b| a.0.cmp(&b.0));
    pairs
}

#[test]
fn pairs_read_right_are_exactly_those_not_listed_as_misses() {
    let pairs = pairs();
    assert!(!pairs.is_empty(), "no pairs in tests/data/firstsight");
    let listed = misses();
    for pair in listed.keys() {
        assert!(
            pairs.iter().any(|(stem, _)| stem == pair),
            "misses.txt lists {pair}, which has no {pair}.jsonl"
        );
    }
    let mut wrong = Vec::new();
    let mut read = 0;
    for (stem, truth) in &pairs {
        let missed = difference(&reported(&format!("{stem}.jsonl")), truth);
        read += usize::from(missed.is_none());
        match (missed, listed.get(stem)) {
            (None, Some(reason)) => wrong.push(format!(
                "{stem} is read right now: remove its line from misses.txt ({reason})"
            )),
            (Some(why), None) => wrong.push(format!("{stem} is missed: {why}")),
            _ => {}
        }
    }
    println!(
        "first sight: {read}/{} pairs read right ({}%)",
        pairs.len(),
        100 * read / pairs.len()
    );
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn a_wrong_argument_or_result_is_a_difference() {
    let truth: Vec<Value> = serde_json::from_str(
        r#"[{"name": "find_hotel", "args": {"town": "Lyon"}, "result": {"stars": 3}}]"#,
    )
    .expect("truth");
    let call = |args: &str, result: &str| -> Vec<Value> {
        vec![serde_json::json!({
            "name": "find_hotel",
            "args": serde_json::from_str::<Value>(args).expect("args"),
            "result": serde_json::from_str::<Value>(result).expect("result"),
        })]
    };
    // JSON text of the same value is the same value.
    assert_eq!(
        difference(&call(r#"{"town": "Lyon"}"#, r#""{\"stars\": 3}""#), &truth),
        None
    );
    assert!(difference(&call(r#"{"town": "Paris"}"#, r#"{"stars": 3}"#), &truth).is_some());
    assert!(difference(&call(r#""{'town': 'Lyon'}""#, r#"{"stars": 3}"#), &truth).is_some());
    assert!(difference(&call(r#"{"town": "Lyon"}"#, r#"{"stars": 4}"#), &truth).is_some());
    assert!(difference(&[], &truth).is_some());
}

/// The calls of each trace `replay` (no fixture) reports for `file`, in
/// input order.
fn replayed(file: &str) -> Vec<Vec<String>> {
    let out = toolscore(&["replay", "-q", "-f", "jsonl", file]);
    json_rows(&out.stdout)
        .iter()
        .filter(|r| r["type"] == "unmatched_trace")
        .map(|r| {
            r["tools_called"]
                .as_array()
                .map(|calls| {
                    calls
                        .iter()
                        .map(|c| c["name"].as_str().unwrap_or("").to_string())
                        .collect()
                })
                .unwrap_or_default()
        })
        .collect()
}

#[test]
fn replay_and_record_join_a_call_to_its_result_in_the_next_trace() {
    // OpenLIT's OpenAI client: each model call a trace, the next request
    // holding only the results.
    let file = data("firstsight/py-openai-openlit.jsonl");
    let file = file.display().to_string();
    assert_eq!(
        replayed(&file),
        [
            vec![],
            vec!["find_hotel".to_string()],
            vec!["rent_bike".to_string()]
        ]
    );
    // A recording of the run replays as passing on it.
    let dir = TempDir::new("carry-record");
    let fixture = dir.path().join("recorded.jsonl").display().to_string();
    let rec = toolscore(&["record", "-q", "-o", &fixture, &file]);
    assert!(
        rec.status.success(),
        "{}",
        String::from_utf8_lossy(&rec.stderr)
    );
    let text = fs::read_to_string(&fixture).expect("recorded fixture");
    assert!(
        text.contains("find_hotel") && text.contains("rent_bike"),
        "{text}"
    );
    let run = toolscore(&["replay", "-q", "-f", "jsonl", &file, "-e", &fixture]);
    let summary = json_rows(&run.stdout)
        .into_iter()
        .find(|r| r["type"] == "summary")
        .expect("a summary row");
    assert!(run.status.success(), "{summary}");
    assert_eq!(
        (summary["passed"].as_u64(), summary["failed"].as_u64()),
        (Some(3), Some(0)),
        "{summary}"
    );
}

#[test]
fn replay_counts_an_mcp_clients_trace_of_a_call_once_in_either_order() {
    // The client's trace after the agent's (Python), and before it, with
    // both calls in one session trace (JavaScript): replay gives each call
    // once, in the agent's trace, as `inspect` does.
    for (pair, agent_trace) in [
        ("py-langgraph-mcp-openinference", 3),
        ("js-vercel-mcp-openllmetry", 1),
    ] {
        let file = data(&format!("firstsight/{pair}.jsonl"))
            .display()
            .to_string();
        let traces = replayed(&file);
        let calls: Vec<&String> = traces.iter().flatten().collect();
        assert_eq!(calls, ["find_hotel", "rent_bike"], "{pair}: {traces:?}");
        assert_eq!(traces[agent_trace].len(), 2, "{pair}: {traces:?}");
    }
}
