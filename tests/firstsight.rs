//! Issue 37: traces shaped as instrumentations never seen before wrote them
//! when run for real (a scripted model, tools that recorded what they
//! received), with our own ids and values. Each `X.jsonl` in
//! `tests/data/firstsight/` has `X.truth.json`: the calls the tool functions
//! received, in call order. A pair is read right when `inspect` reports
//! exactly those calls: same count, and per call the name, the arguments
//! and, where the truth has one, the result (JSON text compared as its
//! value). The pairs read right must be exactly those not listed in
//! `misses.txt` (one pair a line, then its reason), so a fix that makes a
//! pair read right, or a change that breaks one, shows here.

use std::collections::BTreeSet;
use std::fs;

use serde_json::Value;

use crate::util::{data, json_rows, toolscore};

/// JSON text becomes its value, repeatedly (spans encode values twice).
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

/// Every call `inspect` reports, in start-time order (stable).
fn reported(path: &std::path::Path) -> Vec<Value> {
    let out = toolscore(&[
        "inspect",
        "--format",
        "jsonl",
        "-q",
        &path.display().to_string(),
    ]);
    assert!(
        out.status.success(),
        "inspect {}: {}",
        path.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    let mut calls: Vec<Value> = json_rows(&out.stdout)
        .into_iter()
        .flat_map(|row| row["tools"].as_array().cloned().unwrap_or_default())
        .collect();
    calls.sort_by_key(|c| c["start_time_unix_nano"].as_u64().unwrap_or(0));
    calls
}

/// `None` when `got` is `want`, else the first difference.
fn difference(got: &[Value], want: &[Value]) -> Option<String> {
    if got.len() != want.len() {
        let names = |cs: &[Value]| {
            cs.iter()
                .map(|c| c["name"].to_string())
                .collect::<Vec<_>>()
                .join(", ")
        };
        return Some(format!(
            "{} calls [{}], want {} [{}]",
            got.len(),
            names(got),
            want.len(),
            names(want)
        ));
    }
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        let n = i + 1;
        if g["name"] != w["name"] {
            return Some(format!("call {n}: name {}, want {}", g["name"], w["name"]));
        }
        if decoded(&g["args"]) != decoded(&w["args"]) {
            return Some(format!("call {n}: args {}, want {}", g["args"], w["args"]));
        }
        let result = w.get("result").unwrap_or(&Value::Null);
        if !result.is_null() && decoded(&g["result"]) != decoded(result) {
            return Some(format!("call {n}: result {}, want {result}", g["result"]));
        }
    }
    None
}

/// The pairs `misses.txt` lists: the first word of each line that is not
/// blank or a `#` comment (a `:` after it is allowed).
fn listed_misses() -> BTreeSet<String> {
    let text = fs::read_to_string(data("firstsight/misses.txt")).expect("misses.txt");
    text.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .filter_map(|l| l.split_whitespace().next())
        .map(|w| w.trim_end_matches(':').to_string())
        .collect()
}

#[test]
fn pairs_read_right_are_exactly_those_not_listed_as_misses() {
    let dir = data("firstsight");
    let mut pairs: Vec<String> = fs::read_dir(&dir)
        .expect("tests/data/firstsight")
        .map(|e| {
            e.expect("dir entry")
                .file_name()
                .to_string_lossy()
                .into_owned()
        })
        .filter_map(|f| f.strip_suffix(".jsonl").map(str::to_string))
        .collect();
    pairs.sort();
    assert!(!pairs.is_empty(), "no pairs in {}", dir.display());

    let mut misses = BTreeSet::new();
    let mut lines = Vec::new();
    for pair in &pairs {
        let truth: Vec<Value> = serde_json::from_str(
            &fs::read_to_string(dir.join(format!("{pair}.truth.json")))
                .unwrap_or_else(|e| panic!("{pair}.truth.json: {e}")),
        )
        .unwrap_or_else(|e| panic!("{pair}.truth.json: {e}"));
        let got = reported(&dir.join(format!("{pair}.jsonl")));
        match difference(&got, &truth) {
            None => lines.push(format!("ok   {pair}")),
            Some(why) => {
                lines.push(format!("miss {pair}: {why}"));
                misses.insert(pair.clone());
            }
        }
    }
    let read = pairs.len() - misses.len();
    println!("{}", lines.join("\n"));
    println!(
        "first sight: {read}/{} pairs read right ({:.0}%)",
        pairs.len(),
        100.0 * read as f64 / pairs.len() as f64
    );

    let listed = listed_misses();
    let known: BTreeSet<String> = pairs.iter().cloned().collect();
    let stale: Vec<_> = listed.difference(&known).collect();
    assert!(
        stale.is_empty(),
        "misses.txt names pairs that do not exist: {stale:?}"
    );
    let fixed: Vec<_> = listed.difference(&misses).collect();
    let broken: Vec<_> = misses.difference(&listed).collect();
    assert!(
        fixed.is_empty() && broken.is_empty(),
        "read right but listed in misses.txt (remove them): {fixed:?}; \
         missed but not listed: {broken:?}\n{}",
        lines.join("\n")
    );
}
