//! `--expected` files in other tools' formats (Google ADK eval sets and
//! test files, MLflow dataset records, DeepEval goldens, Ragas samples), run
//! through the real binary against real traces: detected by content,
//! converted to cases, joined as docs/formats.md says, the join reported.

use serde_json::Value;

use crate::util::{data, json_rows, toolscore};

/// Runs `replay` on a corpus folder's traces with `expected` (under
/// `tests/data/expect/`) and `extra` flags, JSONL out; gives the exit code,
/// the evaluation rows by case id, the rejected rows and stderr.
fn replay(
    corpus: &str,
    expected: &str,
    extra: &[&str],
) -> (i32, Vec<(String, Value)>, Vec<Value>, String) {
    let traces = data(&format!("corpus/{corpus}/traces.jsonl"));
    let fixture = data(&format!("expect/{expected}"));
    let mut args = vec![
        "replay",
        traces.to_str().unwrap(),
        "--expected",
        fixture.to_str().unwrap(),
        "-f",
        "jsonl",
    ];
    args.extend_from_slice(extra);
    let out = toolscore(&args);
    let rows = json_rows(&out.stdout);
    let evaluations = rows
        .iter()
        .filter(|r| r["type"] == "evaluation")
        .map(|r| (r["case"].as_str().unwrap().to_string(), r.clone()))
        .collect();
    let rejected = rows
        .iter()
        .filter(|r| r["type"] == "rejected")
        .cloned()
        .collect();
    (
        out.status.code().unwrap(),
        evaluations,
        rejected,
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn row<'a>(rows: &'a [(String, Value)], case: &str) -> &'a Value {
    &rows
        .iter()
        .find(|(c, _)| c == case)
        .unwrap_or_else(|| panic!("no evaluation of {case}: {rows:?}"))
        .1
}

#[test]
fn adk_eval_set_one_case_per_invocation_joined_by_user_text_scored_with_adk() {
    let (code, rows, rejected, err) = replay("google-adk", "weather.evalset.json", &[]);
    assert!(rejected.is_empty(), "{rejected:?} {err}");
    // stock_price expects the wrong ticker: the run fails on it alone.
    assert_eq!(code, 1, "{err}");
    assert_eq!(rows.len(), 4, "{rows:?}");
    let weather = row(&rows, "weather_two_cities");
    assert_eq!(weather["trace_id"], "39bff4502bbb4d7eca218aacb368e112");
    assert_eq!(weather["joined_by"], "user_text");
    // No --metric: ADK's own default criterion.
    assert_eq!(weather["metric"], "adk.exact");
    assert_eq!(weather["pass"], true);
    // A two-turn conversation: each turn joins the trace of that turn (the
    // second trace's LLM input repeats the first turn's words before its own).
    assert_eq!(
        row(&rows, "berlin_session#1")["trace_id"],
        "45753eb444c9e8e39ec0886af55f5ff8"
    );
    let second = row(&rows, "berlin_session#2");
    assert_eq!(second["trace_id"], "90bd82fc94874edb5cc013dfce485a76");
    assert_eq!(second["pass"], true);
    let stock = row(&rows, "stock_price");
    assert_eq!(stock["pass"], false);
    assert_eq!(stock["score"], 0.0);
}

#[test]
fn adk_camel_case_eval_set_and_user_metric_wins() {
    let (code, rows, rejected, err) = replay(
        "google-adk",
        "support.evalset.json",
        &["--metric", "adk.in_order", "--metric", "tool_correctness"],
    );
    assert!(rejected.is_empty(), "{rejected:?}");
    assert_eq!(code, 0, "{err}");
    assert_eq!(rows.len(), 1);
    let r = row(&rows, "support_ticket");
    assert_eq!(r["trace_id"], "a1c5af58646227bba879e3811e0e66d3");
    assert_eq!(r["metric"], "adk.in_order");
    assert!(r["metrics"]["tool_correctness"].is_object(), "{r}");
}

#[test]
fn adk_old_test_file_turns() {
    let (code, rows, rejected, err) = replay("google-adk", "trip.test.json", &[]);
    assert!(rejected.is_empty(), "{rejected:?}");
    assert_eq!(code, 0, "{err}");
    let r = row(&rows, "trip#1");
    assert_eq!(r["trace_id"], "d00081095df6551c9f6c3a9ded815265");
    assert_eq!(r["joined_by"], "user_text");
    assert_eq!(r["metric"], "adk.exact");
    assert_eq!(r["score"], 1.0);
}

#[test]
fn mlflow_records_join_by_source_trace_else_inputs() {
    let (code, rows, rejected, err) = replay(
        "mlflow",
        "mlflow-records.json",
        &["--metric", "mlflow.exact"],
    );
    assert!(rejected.is_empty(), "{rejected:?}");
    assert_eq!(code, 0, "{err}");
    let by_trace = row(&rows, "dr-4f1e9a0c2b7d4e8f");
    assert_eq!(by_trace["joined_by"], "trace_id");
    assert_eq!(by_trace["trace_id"], "5e5e3251271865ab32c5c2f650a10a43");
    assert_eq!(by_trace["pass"], true);
    let by_text = row(&rows, "dr-0aa31c5e9d2b4f10");
    assert_eq!(by_text["joined_by"], "user_text");
    assert_eq!(by_text["trace_id"], "f86a6daf2f4863f5be5f4265152d3ad7");
    // Not an ADK file: the usual default metric when none is named.
    let (_, rows, _, _) = replay("mlflow", "mlflow-records.json", &[]);
    assert_eq!(
        row(&rows, "dr-4f1e9a0c2b7d4e8f")["metric"],
        "tool_correctness"
    );
}

#[test]
fn deepeval_goldens() {
    let (code, rows, rejected, err) = replay(
        "openinference-langchain",
        "goldens.json",
        &["--metric", "deepeval.input_params"],
    );
    assert!(rejected.is_empty(), "{rejected:?}");
    assert_eq!(code, 0, "{err}");
    let r = row(&rows, "goldens#1");
    assert_eq!(r["trace_id"], "90790e3c5ffe30d7b929afe58f1065fa");
    assert_eq!(r["joined_by"], "user_text");
    assert_eq!(
        r["expected_tools"][1],
        serde_json::json!({"name": "create_ticket", "args": {"subject": "Login failure", "priority": "high"}})
    );
    assert_eq!(row(&rows, "goldens#2")["score"], 1.0);
}

#[test]
fn ragas_samples_jsonl() {
    let (code, rows, rejected, err) = replay(
        "strands",
        "ragas-samples.jsonl",
        &["--metric", "ragas.tool_call_f1"],
    );
    assert!(rejected.is_empty(), "{rejected:?}");
    assert_eq!(code, 0, "{err}");
    assert_eq!(rows.len(), 2);
    let r = row(&rows, "ragas-samples#1");
    assert_eq!(r["trace_id"], "46a66d85be998c8c37dd6095762299c8");
    assert_eq!(r["joined_by"], "user_text");
    assert_eq!(r["score"], 1.0);
    assert_eq!(
        row(&rows, "ragas-samples#2")["trace_id"],
        "a5a59dbd301b09737ed66c4e5912e31f"
    );
}

#[test]
fn table_says_how_each_case_was_joined() {
    let traces = data("corpus/mlflow/traces.jsonl");
    let fixture = data("expect/mlflow-records.json");
    let out = toolscore(&[
        "replay",
        traces.to_str().unwrap(),
        "--expected",
        fixture.to_str().unwrap(),
    ]);
    let table = String::from_utf8_lossy(&out.stdout);
    assert!(
        table.lines().next().unwrap().contains("JOINED BY"),
        "{table}"
    );
    let line = |case: &str| {
        table
            .lines()
            .find(|l| l.starts_with(case))
            .unwrap_or_else(|| panic!("{case}: {table}"))
            .to_string()
    };
    assert!(
        line("dr-4f1e9a0c2b7d4e8f").contains(" trace_id "),
        "{table}"
    );
    assert!(
        line("dr-0aa31c5e9d2b4f10").contains(" user_text "),
        "{table}"
    );
}

#[test]
fn bad_eval_case_is_rejected_alone_naming_file_record_and_field() {
    let (code, rows, rejected, err) = replay("google-adk", "bad/broken.evalset.json", &[]);
    assert_eq!(code, 2, "{err}");
    // The good eval case is still scored.
    assert_eq!(row(&rows, "weather_two_cities")["pass"], true);
    assert_eq!(rejected.len(), 1, "{rejected:?}");
    let line = err
        .lines()
        .find(|l| l.contains("rejected"))
        .unwrap_or_else(|| panic!("{err}"));
    for part in [
        "broken.evalset.json",
        "eval_cases[1]",
        "no_tool_name",
        "conversation[0].intermediate_data.tool_uses[0].name",
    ] {
        assert!(line.contains(part), "{part} not in {line}");
    }
}

#[test]
fn bad_mlflow_record_is_rejected_with_its_line_and_field() {
    let (code, rows, rejected, err) = replay("mlflow", "bad/mlflow-missing.jsonl", &[]);
    assert_eq!(code, 2, "{err}");
    assert_eq!(rows.len(), 1, "the good record is kept: {rows:?}");
    assert_eq!(rejected.len(), 1);
    assert_eq!(rejected[0]["position"], "2");
    let reason = rejected[0]["reason"].as_str().unwrap();
    assert!(reason.contains("dr-2"), "{reason}");
    assert!(
        reason.contains("expectations.expected_tool_calls"),
        "{reason}"
    );
    assert!(err.contains("mlflow-missing.jsonl:2"), "{err}");
}

#[test]
fn unknown_file_is_named_with_its_keys() {
    let (code, rows, _, err) = replay("google-adk", "bad/unknown.json", &[]);
    assert_eq!(code, 2, "{err}");
    assert!(rows.is_empty());
    assert!(
        err.contains("unknown.json: not an expectations file of a known format"),
        "{err}"
    );
    assert!(err.contains("`suite`, `tests`"), "{err}");
}

#[test]
fn inspect_names_the_cases_each_trace_joins_and_how() {
    let traces = data("corpus/google-adk/traces.jsonl");
    let fixture = data("expect/weather.evalset.json");
    let out = toolscore(&[
        "inspect",
        traces.to_str().unwrap(),
        "--expected",
        fixture.to_str().unwrap(),
        "-f",
        "jsonl",
    ]);
    assert_eq!(out.status.code(), Some(0));
    let rows = json_rows(&out.stdout);
    let cases_of = |trace: &str| {
        rows.iter()
            .find(|r| r["trace_id"] == trace)
            .unwrap_or_else(|| panic!("{trace}"))["cases"]
            .clone()
    };
    assert_eq!(
        cases_of("90bd82fc94874edb5cc013dfce485a76"),
        serde_json::json!([{"case": "berlin_session#2", "joined_by": "user_text"}])
    );
    assert_eq!(
        cases_of("a1c5af58646227bba879e3811e0e66d3"),
        serde_json::json!([])
    );
    let out = toolscore(&[
        "inspect",
        traces.to_str().unwrap(),
        "--expected",
        data("expect/bad/broken.evalset.json").to_str().unwrap(),
    ]);
    let table = String::from_utf8_lossy(&out.stdout);
    assert!(
        table.contains("  cases: weather_two_cities (by user_text)"),
        "{table}"
    );
    // The bad eval case is reported, and the run says input was rejected.
    assert_eq!(out.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("no_tool_name"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
