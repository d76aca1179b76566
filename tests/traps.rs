//! The first hour: mistakes a new user makes that must not look like
//! success. Each runs the real binary.

use std::fs;

use serde_json::Value;

use crate::util::{data, toolscore, TempDir};

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn rows(stdout: &[u8]) -> Vec<Value> {
    text(stdout)
        .lines()
        .map(|l| serde_json::from_str(l).expect("a JSON row"))
        .collect()
}

fn sample() -> String {
    format!("{}/sample-traces", env!("CARGO_MANIFEST_DIR"))
}

fn sample_fixture() -> String {
    format!("{}/expected.jsonl", sample())
}

#[test]
fn replay_without_expectations_lists_but_exits_2() {
    let out = toolscore(&["replay", &sample(), "-q"]);
    assert_eq!(out.status.code(), Some(2));
    let err = text(&out.stderr);
    assert!(err.contains("nothing was scored"), "{err}");
    assert!(err.contains("--expected"), "{err}");
    assert!(err.contains("toolscore inspect"), "{err}");
}

#[test]
fn a_missing_trace_path_is_a_usage_error_before_any_work() {
    let out = toolscore(&["replay", "no/such/dir", &sample(), "-e", &sample_fixture()]);
    assert_eq!(out.status.code(), Some(2));
    assert!(out.stdout.is_empty(), "no table: {}", text(&out.stdout));
    let err = text(&out.stderr);
    assert!(
        err.contains("no/such/dir: no such file or directory"),
        "{err}"
    );
    let out = toolscore(&["inspect", "no/such/file.json"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(out.stdout.is_empty());
}

#[test]
fn a_directory_without_trace_files_says_what_it_looked_for() {
    let dir = TempDir::new("no-traces");
    fs::write(dir.path().join("notes.txt"), "hello").unwrap();
    let d = dir.path().to_str().unwrap();
    let out = toolscore(&["replay", d, "-e", &sample_fixture(), "-f", "jsonl", "-q"]);
    assert_eq!(out.status.code(), Some(2));
    let rejected: Vec<Value> = rows(&out.stdout)
        .into_iter()
        .filter(|r| r["type"] == "rejected")
        .collect();
    assert_eq!(rejected.len(), 1, "{rejected:?}");
    let why = rejected[0]["reason"].as_str().unwrap();
    assert!(why.contains("no trace files"), "{why}");
    assert!(why.contains("*.jsonl") && why.contains("*.pb"), "{why}");
}

#[test]
fn a_fixture_or_a_csv_given_as_traces_is_named_for_what_it_is() {
    let dir = TempDir::new("not-traces");
    let csv = dir.path().join("calls.csv");
    fs::write(&csv, "tool,args\nget_weather,Paris\n").unwrap();
    let out = toolscore(&[
        "replay",
        &sample_fixture(),
        csv.to_str().unwrap(),
        "-e",
        &sample_fixture(),
        "-f",
        "jsonl",
        "-q",
    ]);
    assert_eq!(out.status.code(), Some(2));
    let reasons: Vec<String> = rows(&out.stdout)
        .into_iter()
        .filter(|r| r["type"] == "rejected")
        .map(|r| r["reason"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(reasons.len(), 2, "one rejection per file: {reasons:?}");
    assert!(
        reasons[0].contains("pass it with --expected"),
        "{reasons:?}"
    );
    assert!(reasons[1].contains("not a trace file"), "{reasons:?}");
    assert!(!reasons[1].contains("not OTLP protobuf"), "{reasons:?}");
}

#[test]
fn pretty_printed_fixture_records_are_read_like_json_lines() {
    let dir = TempDir::new("pretty-fixture");
    let lines = fs::read_to_string(sample_fixture()).unwrap();
    let pretty: Vec<String> = lines
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            let v: Value = serde_json::from_str(l).unwrap();
            serde_json::to_string_pretty(&v).unwrap()
        })
        .collect();
    let p = dir.path().join("cases.json");
    fs::write(&p, pretty.join("\n")).unwrap();
    let run = |fixture: &str| {
        let out = toolscore(&["replay", &sample(), "-e", fixture, "-f", "jsonl", "-q"]);
        let evals: Vec<(String, Value)> = rows(&out.stdout)
            .into_iter()
            .filter(|r| r["type"] == "evaluation")
            .map(|r| (r["case"].as_str().unwrap().to_string(), r["pass"].clone()))
            .collect();
        (out.status.code(), evals)
    };
    let (code, pretty_rows) = run(p.to_str().unwrap());
    let (want_code, want) = run(&sample_fixture());
    assert_eq!(code, want_code);
    assert!(!want.is_empty());
    assert_eq!(pretty_rows, want);
}

#[test]
fn deepeval_null_tools_and_adk_scenarios_are_not_input_errors() {
    let dir = TempDir::new("imports");
    let goldens = dir.path().join("goldens.json");
    fs::write(
        &goldens,
        r#"[{"input": "Hello there", "expected_tools": null, "name": "greeting"},
            {"input": "What is the weather in Paris?", "expected_tools": [{"name": "get_weather"}]}]"#,
    )
    .unwrap();
    let traces = data("corpus/pydantic-ai/traces.jsonl");
    let out = toolscore(&[
        "replay",
        traces.to_str().unwrap(),
        "-e",
        goldens.to_str().unwrap(),
        "-f",
        "jsonl",
        "-q",
    ]);
    let all = rows(&out.stdout);
    assert!(
        !all.iter().any(|r| r["type"] == "rejected"),
        "no input error: {all:?}"
    );

    let evalset = dir.path().join("sim.evalset.json");
    fs::write(
        &evalset,
        r#"{"eval_set_id": "s", "eval_cases": [
            {"eval_id": "simulated", "conversation_scenario": {"starting_prompt": "hi"}},
            {"eval_id": "weather", "conversation": [{"invocation_id": "1",
              "user_content": {"parts": [{"text": "What is the weather in Paris?"}], "role": "user"},
              "intermediate_data": {"tool_uses": [{"name": "get_weather", "args": {"city": "Paris"}}]}}]}
        ]}"#,
    )
    .unwrap();
    let out = toolscore(&[
        "replay",
        traces.to_str().unwrap(),
        "-e",
        evalset.to_str().unwrap(),
        "-f",
        "jsonl",
        "-q",
    ]);
    let err = text(&out.stderr);
    assert!(
        err.contains("simulated")
            && err.contains("skipped")
            && err.contains("conversation_scenario"),
        "{err}"
    );
    assert_ne!(out.status.code(), Some(2), "{err}");
    assert!(!rows(&out.stdout).iter().any(|r| r["type"] == "rejected"));
}

#[test]
fn a_case_of_handoffs_alone_is_scored_on_them() {
    let dir = TempDir::new("handoffs-only");
    let fx = dir.path().join("f.jsonl");
    // The pydantic-ai corpus' nested trace: demo_agent hands off to trip_sub_agent.
    fs::write(
        &fx,
        r#"{"id": "order", "trace_id": "f8320a69772db4670295805f8a1a84a0", "handoffs": ["demo_agent", "trip_sub_agent"]}"#,
    )
    .unwrap();
    let out = toolscore(&[
        "replay",
        data("corpus/pydantic-ai/traces.jsonl").to_str().unwrap(),
        "-e",
        fx.to_str().unwrap(),
        "-f",
        "jsonl",
        "-q",
    ]);
    let all = rows(&out.stdout);
    assert!(
        !all.iter().any(|r| r["type"] == "rejected"),
        "accepted: {all:?}"
    );
    let e = all
        .iter()
        .find(|r| r["type"] == "evaluation")
        .expect("scored");
    let metrics: Vec<&String> = e["metrics"].as_object().unwrap().keys().collect();
    assert_eq!(metrics, ["handoffs"], "{e}");
    let h = &e["metrics"]["handoffs"];
    assert_eq!(h["score"].as_f64(), Some(1.0), "{h}");
    assert!(
        h["reason"].as_str().unwrap().contains("2/2 in order"),
        "{h}"
    );
}

#[test]
fn unknown_metric_names_get_a_suggestion() {
    let out = toolscore(&[
        "replay",
        &sample(),
        "-e",
        &sample_fixture(),
        "-m",
        "tool_corectness",
    ]);
    assert_eq!(out.status.code(), Some(2));
    let err = text(&out.stderr);
    assert!(err.contains("did you mean `tool_correctness`?"), "{err}");
}

#[test]
fn a_dry_run_of_the_judge_needs_no_model() {
    let out = toolscore(&[
        "replay",
        &sample(),
        "-e",
        &sample_fixture(),
        "-m",
        "mlflow.llm_fuzzy",
        "--judge-dry-run",
        "-q",
    ]);
    let err = text(&out.stderr);
    assert!(!err.contains("no model"), "{err}");
    assert!(!err.contains("error:"), "{err}");
}

#[test]
fn long_case_ids_keep_the_end_that_tells_them_apart() {
    let dir = TempDir::new("long-ids");
    let fx = dir.path().join("f.jsonl");
    let long = "tests/fixtures/agents/support/weather/order_query.test.json#3";
    fs::write(
        &fx,
        format!(
            r#"{{"id": "{long}", "trace_id": "31d90f5c8edb6ba92f3e6727a8ad96ea", "expected_tools": ["get_weather"]}}"#
        ),
    )
    .unwrap();
    let out = toolscore(&["replay", &sample(), "-e", fx.to_str().unwrap(), "-q"]);
    let table = text(&out.stdout);
    assert!(table.contains("…"), "{table}");
    assert!(table.contains("order_query.test.json#3"), "{table}");
}

#[test]
fn a_case_that_joins_nothing_says_what_it_looked_for_and_expected() {
    let dir = TempDir::new("unjoined");
    let fx = dir.path().join("f.jsonl");
    fs::write(
        &fx,
        concat!(
            r#"{"id": "by-id", "trace_id": "0123456789abcdef0123456789abcdef", "expected_tools": ["get_weather", "format_answer"]}"#,
            "\n",
            r#"{"id": "by-match", "match": {"app.user": "nobody"}, "expected_tools": []}"#,
            "\n"
        ),
    )
    .unwrap();
    let f = fx.to_str().unwrap();
    let out = toolscore(&["replay", &sample(), "-e", f, "-f", "jsonl", "-q"]);
    let unjoined: Vec<Value> = rows(&out.stdout)
        .into_iter()
        .filter(|r| r["type"] == "unmatched_case")
        .collect();
    assert_eq!(unjoined.len(), 2);
    assert_eq!(
        unjoined[0]["looked_for"],
        "trace_id 0123456789abcdef0123456789abcdef"
    );
    assert_eq!(unjoined[0]["expected_tools"][1]["name"], "format_answer");
    let why = unjoined[0]["explanation"].as_str().unwrap();
    assert!(why.contains("expected get_weather, format_answer"), "{why}");
    assert_eq!(unjoined[1]["looked_for"], "match app.user=nobody");
    let table = text(&toolscore(&["replay", &sample(), "-e", f, "-q"]).stdout);
    assert!(
        table.contains("looked for trace_id 0123456789abcdef"),
        "{table}"
    );
    let page = dir.path().join("r.html");
    toolscore(&[
        "replay",
        &sample(),
        "-e",
        f,
        "-f",
        "html",
        "-o",
        page.to_str().unwrap(),
    ]);
    let html = fs::read_to_string(page).unwrap();
    assert!(
        html.contains("looked for match app.user=nobody"),
        "in the page"
    );
}
