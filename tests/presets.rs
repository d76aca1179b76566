//! Compatibility presets against the oracle (tests/data/oracle).
//!
//! `expected.jsonl` holds what each Python library's own code scored on
//! `cases.jsonl` in 43 modes. Every case and every mode must agree: score to
//! 1e-9, the same pass/fail, and an error exactly where the library raised.

use std::collections::HashMap;

use serde_json::Value;

use crate::util::{data, toolscore};

fn read_jsonl(rel: &str) -> Vec<Value> {
    let text = std::fs::read_to_string(data(rel)).expect("read oracle file");
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).expect("oracle line is JSON"))
        .collect()
}

fn oracle_modes() -> Vec<String> {
    let meta: Value = serde_json::from_str(
        &std::fs::read_to_string(data("oracle/expected.meta.json")).expect("read meta"),
    )
    .expect("meta is JSON");
    meta["modes"]
        .as_array()
        .expect("modes")
        .iter()
        .map(|m| m.as_str().expect("mode name").to_string())
        .collect()
}

fn score_all() -> HashMap<String, Value> {
    let cases = data("oracle/cases.jsonl");
    let out = toolscore(&[
        "score",
        "--cases",
        cases.to_str().expect("path"),
        "--metric",
        "all",
    ]);
    assert!(
        out.status.success(),
        "toolscore score failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout)
        .expect("utf8")
        .lines()
        .map(|l| {
            let v: Value = serde_json::from_str(l).expect("output line is JSON");
            (
                v["id"].as_str().expect("id").to_string(),
                v["results"].clone(),
            )
        })
        .collect()
}

#[test]
fn every_oracle_mode_matches_the_libraries() {
    let modes = oracle_modes();
    assert_eq!(modes.len(), 43);
    let expected = read_jsonl("oracle/expected.jsonl");
    let cases = read_jsonl("oracle/cases.jsonl");
    assert_eq!(expected.len(), cases.len());
    let ours = score_all();
    assert_eq!(ours.len(), cases.len(), "one output line per case");

    let mut failures = Vec::new();
    let mut checked = 0;
    for row in &expected {
        let id = row["id"].as_str().expect("id");
        let theirs = &row["results"];
        let mine = ours
            .get(id)
            .unwrap_or_else(|| panic!("no output for case {id}"));
        for mode in &modes {
            let (t, m) = (&theirs[mode.as_str()], &mine[mode.as_str()]);
            assert!(m.is_object(), "case {id}: no result for {mode}");
            checked += 1;
            let raised = !t["error"].is_null();
            let we_raised = !m["error"].is_null();
            if raised != we_raised {
                failures.push(format!(
                    "{id} {mode}: error {} vs ours {}",
                    t["error"], m["error"]
                ));
                continue;
            }
            if raised {
                if !m["score"].is_null() || !m["pass"].is_null() {
                    failures.push(format!("{id} {mode}: an error must have no score/pass"));
                }
                continue;
            }
            let (ts, ms) = (t["score"].as_f64(), m["score"].as_f64());
            match (ts, ms) {
                (Some(a), Some(b)) if (a - b).abs() <= 1e-9 => {}
                _ => failures.push(format!(
                    "{id} {mode}: score {} vs ours {}",
                    t["score"], m["score"]
                )),
            }
            if t["pass"] != m["pass"] {
                failures.push(format!(
                    "{id} {mode}: pass {} vs ours {}",
                    t["pass"], m["pass"]
                ));
            }
        }
    }
    assert_eq!(checked, 43 * cases.len());
    assert!(
        failures.is_empty(),
        "{} mismatches:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
fn all_includes_native_and_extra_presets() {
    let ours = score_all();
    let results = ours.get("basic_single").expect("case");
    for name in [
        "tool_correctness",
        "adk.exact",
        "adk.in_order",
        "adk.any_order",
        "galtea",
        "cubeo",
    ] {
        assert!(
            results.get(name).is_some(),
            "{name} missing from --metric all"
        );
    }
    assert_eq!(results["galtea"]["score"], Value::from(1.0));
}

#[test]
fn rejected_lines_give_exit_2_and_do_not_stop_the_rest() {
    let dir = crate::util::TempDir::new("score-bad");
    let path = dir.path().join("cases.jsonl");
    std::fs::write(
        &path,
        "{\"id\": \"ok1\", \"tools_called\": [\"a\"], \"expected_tools\": [\"a\"]}\n\
         {\"id\": \"bad\", \"tools_called\": [{\"args\": {}}], \"expected_tools\": []}\n\
         {\"id\": \"ok2\", \"tools_called\": [{\"name\": \"a\", \"input_parameters\": {\"x\": 1}}], \
          \"expected_tools\": [{\"name\": \"a\", \"input_parameters\": {\"x\": 1.0}}]}\n",
    )
    .expect("write");
    let out_path = dir.path().join("out.jsonl");
    let out = toolscore(&[
        "score",
        "--cases",
        path.to_str().expect("path"),
        "--metric",
        "deepeval.input_params",
        "--metric",
        "mlflow.exact",
        "--output",
        out_path.to_str().expect("path"),
    ]);
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("line 2") && stderr.contains("missing `name`"),
        "{stderr}"
    );
    let lines: Vec<Value> = std::fs::read_to_string(&out_path)
        .expect("output")
        .lines()
        .map(|l| serde_json::from_str(l).expect("json"))
        .collect();
    assert_eq!(lines.len(), 2);
    assert_eq!(lines[1]["id"], "ok2");
    assert_eq!(
        lines[1]["results"]["deepeval.input_params"]["score"],
        Value::from(1.0)
    );
    assert_eq!(
        lines[1]["results"]["mlflow.exact"]["score"],
        Value::from(0.0)
    );
}

#[test]
fn threshold_and_strict_override_preset_defaults() {
    let dir = crate::util::TempDir::new("score-opts");
    let path = dir.path().join("cases.jsonl");
    std::fs::write(
        &path,
        "{\"id\": \"half\", \"tools_called\": [\"a\"], \"expected_tools\": [\"a\", \"b\"]}\n",
    )
    .expect("write");
    let run = |extra: &[&str]| -> Value {
        let mut args = vec![
            "score",
            "--cases",
            path.to_str().expect("path"),
            "--metric",
            "deepeval.default",
        ];
        args.extend_from_slice(extra);
        let out = toolscore(&args);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let line: Value = serde_json::from_slice(&out.stdout).expect("json");
        line["results"]["deepeval.default"].clone()
    };
    assert_eq!(run(&[])["pass"], Value::Bool(true));
    assert_eq!(run(&["--threshold", "0.6"])["pass"], Value::Bool(false));
    // The per-metric spec syntax of `replay` and `serve` works here too; the
    // result is reported under the spec as written.
    let out = toolscore(&[
        "score",
        "--cases",
        path.to_str().expect("path"),
        "--metric",
        "deepeval.default:threshold=0.6",
        "--metric",
        "eval_lib.default",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let line: Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(
        line["results"]["deepeval.default:threshold=0.6"]["pass"],
        Value::Bool(false),
        "{line}"
    );
    assert_eq!(
        line["results"]["eval_lib.default"]["pass"],
        Value::Bool(true)
    );
    let strict = run(&["--strict"]);
    assert_eq!(
        (strict["score"].as_f64(), strict["pass"].as_bool()),
        (Some(0.0), Some(false))
    );
}

#[test]
fn unknown_metric_is_a_usage_error() {
    let cases = data("oracle/cases.jsonl");
    let out = toolscore(&[
        "score",
        "--cases",
        cases.to_str().expect("path"),
        "--metric",
        "nope",
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("unknown metric"));
}

/// Edge cases scored by the libraries' own code (tests/data/presets-extra/README.md):
/// same score and verdict, and the same exception type where the library raised.
#[test]
fn extra_edge_cases_match_the_libraries() {
    let expected: Value = serde_json::from_str(
        &std::fs::read_to_string(data("presets-extra/expected.json")).expect("read expected"),
    )
    .expect("expected is JSON");
    let modes: Vec<&str> = expected["modes"]
        .as_array()
        .expect("modes")
        .iter()
        .map(|m| m.as_str().expect("mode"))
        .collect();
    let cases = data("presets-extra/cases.jsonl");
    let mut args = vec!["score", "--cases", cases.to_str().expect("path")];
    for m in &modes {
        args.extend(["--metric", m]);
    }
    let out = toolscore(&args);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let ours: HashMap<String, Value> = String::from_utf8(out.stdout)
        .expect("utf8")
        .lines()
        .map(|l| {
            let v: Value = serde_json::from_str(l).expect("json");
            (
                v["id"].as_str().expect("id").to_string(),
                v["results"].clone(),
            )
        })
        .collect();
    let results = expected["results"].as_object().expect("results");
    assert_eq!(ours.len(), results.len());
    let mut failures = Vec::new();
    for (id, row) in results {
        for (mode, want) in modes.iter().zip(row.as_array().expect("row")) {
            let got = &ours[id][*mode];
            let ok = match want {
                Value::String(exception) => got["error"]
                    .as_str()
                    .is_some_and(|e| e.split(':').next() == Some(exception.as_str())),
                _ => {
                    got["error"].is_null()
                        && got["score"]
                            .as_f64()
                            .zip(want[0].as_f64())
                            .is_some_and(|(a, b)| (a - b).abs() <= 1e-9)
                        && got["pass"] == want[1]
                }
            };
            if !ok {
                failures.push(format!("{id} {mode}: library {want} vs ours {got}"));
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} mismatches:\n{}",
        failures.len(),
        failures.join("\n")
    );
}
