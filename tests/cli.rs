//! The `toolscore` binary end to end: exit codes, report formats, bad input.

use std::fs;

use serde_json::Value;

use crate::util::{data, toolscore, TempDir};

const WEATHER_TRACE: &str = "31d90f5c8edb6ba92f3e6727a8ad96ea";

fn pydantic() -> String {
    data("corpus/pydantic-ai/traces.jsonl")
        .display()
        .to_string()
}

fn fixture(dir: &TempDir, lines: &[&str]) -> String {
    let p = dir.path().join("expected.jsonl");
    fs::write(&p, lines.join("\n")).unwrap();
    p.display().to_string()
}

fn jsonl(stdout: &[u8]) -> Vec<Value> {
    String::from_utf8_lossy(stdout)
        .lines()
        .map(|l| serde_json::from_str(l).expect("JSONL line"))
        .collect()
}

#[test]
fn passing_case_exits_zero() {
    let dir = TempDir::new("pass");
    let f = fixture(
        &dir,
        &[&format!(
            r#"{{"id":"w","trace_id":"{WEATHER_TRACE}","expected_tools":[{{"name":"get_weather","args":{{"city":"Paris"}}}},{{"name":"get_weather","args":{{"city":"London"}}}},"format_answer"]}}"#
        )],
    );
    let out = toolscore(&[
        "replay",
        &pydantic(),
        "--expected",
        &f,
        "--format",
        "jsonl",
        "-q",
    ]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let rows = jsonl(&out.stdout);
    let eval = rows.iter().find(|r| r["type"] == "evaluation").unwrap();
    assert_eq!(eval["trace_id"], WEATHER_TRACE);
    assert_eq!(eval["case"], "w");
    assert_eq!(eval["score"], 1.0);
    assert_eq!(eval["pass"], true);
    for k in [
        "recall",
        "precision",
        "f1",
        "order",
        "exact",
        "tools_called",
        "expected_tools",
        "explanation",
    ] {
        assert!(eval.get(k).is_some(), "missing {k} in {eval}");
    }
    assert_eq!(eval["tools_called"].as_array().unwrap().len(), 3);
    // Every other trace is reported as unmatched, not dropped.
    assert_eq!(
        rows.iter()
            .filter(|r| r["type"] == "unmatched_trace")
            .count(),
        6
    );
    let summary = rows.last().unwrap();
    assert_eq!(summary["type"], "summary");
    assert_eq!(summary["exit_code"], 0);
}

#[test]
fn failing_case_exits_one_and_junit_parses() {
    let dir = TempDir::new("fail");
    let f = fixture(
        &dir,
        &[
            &format!(
                r#"{{"id":"needs-search","trace_id":"{WEATHER_TRACE}","expected_tools":["search_web"]}}"#
            ),
            r#"{"id":"ghost","trace_id":"00000000000000000000000000000001","expected_tools":["x"]}"#,
        ],
    );
    let out = toolscore(&["replay", &pydantic(), "-e", &f, "--format", "junit", "-q"]);
    assert_eq!(out.status.code(), Some(1));
    let xml = String::from_utf8(out.stdout).unwrap();
    assert!(xml.starts_with("<?xml"));
    let doc = crate::junit::check_schema(&xml).unwrap_or_else(|p| panic!("{p:?}\n{xml}"));
    let suite = doc.root_element();
    assert_eq!(suite.attribute("tests"), Some("2"), "{xml}");
    assert_eq!(suite.attribute("failures"), Some("2"), "{xml}");
    assert!(xml.contains("missing: search_web"), "{xml}");
    assert!(xml.contains("no trace matched this case"));
}

#[test]
fn threshold_and_score_flags() {
    let dir = TempDir::new("thr");
    let f = fixture(
        &dir,
        &[&format!(
            r#"{{"id":"w","trace_id":"{WEATHER_TRACE}","expected_tools":["get_weather","get_weather"]}}"#
        )],
    );
    // F1 = 0.8 (one unexpected format_answer): passes at 0.5, fails at 0.9.
    let ok = toolscore(&["replay", &pydantic(), "-e", &f, "-q", "--format", "jsonl"]);
    assert_eq!(ok.status.code(), Some(0));
    let fail = toolscore(&[
        "replay",
        &pydantic(),
        "-e",
        &f,
        "-q",
        "--threshold",
        "0.9",
        "--format",
        "jsonl",
    ]);
    assert_eq!(fail.status.code(), Some(1));
    let recall = toolscore(&[
        "replay",
        &pydantic(),
        "-e",
        &f,
        "-q",
        "--threshold",
        "0.9",
        "--score",
        "recall",
    ]);
    assert_eq!(recall.status.code(), Some(0));
}

#[test]
fn bad_file_among_good_ones_is_reported_and_others_still_scored() {
    let dir = TempDir::new("bad");
    let bad = dir.path().join("broken.json");
    fs::write(&bad, "{\"resourceSpans\": [ {\"scopeSpans\": [ }").unwrap();
    let snake = dir.path().join("snake.json");
    fs::write(
        &snake,
        r#"{"resource_spans":[{"scope_spans":[{"spans":[{"trace_id":"x"}]}]}]}"#,
    )
    .unwrap();
    let trunc = dir.path().join("trunc.pb");
    let pb = fs::read(data("corpus/mlflow/otlp/req-0001.pb")).unwrap();
    fs::write(&trunc, &pb[..pb.len() / 2]).unwrap();
    let badgz = dir.path().join("bad.json.gz");
    fs::write(&badgz, [0x1f, 0x8b, 8, 0, 1, 2, 3]).unwrap();
    let f = fixture(
        &dir,
        &[
            &format!(
                r#"{{"id":"w","trace_id":"{WEATHER_TRACE}","expected_tools":["get_weather","get_weather","format_answer"]}}"#
            ),
            "this line is not JSON",
        ],
    );
    let out = toolscore(&[
        "replay",
        bad.to_str().unwrap(),
        &pydantic(),
        snake.to_str().unwrap(),
        trunc.to_str().unwrap(),
        badgz.to_str().unwrap(),
        "-e",
        &f,
        "--format",
        "jsonl",
        "-q",
    ]);
    assert_eq!(out.status.code(), Some(2));
    let rows = jsonl(&out.stdout);
    let eval = rows.iter().find(|r| r["type"] == "evaluation").unwrap();
    assert_eq!(eval["pass"], true, "the good trace is still scored");
    let rejected: Vec<&Value> = rows.iter().filter(|r| r["type"] == "rejected").collect();
    assert_eq!(rejected.len(), 5, "{rejected:?}");
    let all = format!("{rejected:?}");
    for needle in [
        "broken.json",
        "snake.json",
        "zero spans",
        "trunc.pb",
        "bad.json.gz",
        "gzip",
        "expected.jsonl",
    ] {
        assert!(all.contains(needle), "{needle} not in {all}");
    }
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("expected.jsonl:2"), "{stderr}");
}

#[test]
fn an_empty_export_line_in_a_jsonl_file_is_no_error() {
    // A receiver writes each export request it gets as a line; some
    // exporters send an empty request (`{}`) first. That line is no error;
    // a snake_case line still is, and a file of nothing but `{}` gives no
    // span at all, which is an error.
    let dir = TempDir::new("cli-empty-export");
    let spans =
        fs::read_to_string(crate::util::data("firstsight/js-langchain-arize.jsonl")).unwrap();
    let good = dir.path().join("good.jsonl");
    fs::write(&good, format!("{{}}\n{spans}")).unwrap();
    let out = toolscore(&["inspect", "--format", "jsonl", "-q", good.to_str().unwrap()]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let calls: usize = jsonl(&out.stdout)
        .iter()
        .map(|r| r["tools"].as_array().map_or(0, Vec::len))
        .sum();
    assert_eq!(calls, 2);
    let snake = dir.path().join("snake.jsonl");
    fs::write(&snake, format!("{{\"resource_spans\":[]}}\n{spans}")).unwrap();
    let out = toolscore(&[
        "inspect",
        "--format",
        "jsonl",
        "-q",
        snake.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("snake.jsonl:1"));
    let empty = dir.path().join("empty.jsonl");
    fs::write(&empty, "{}\n{}\n").unwrap();
    let out = toolscore(&[
        "inspect",
        "--format",
        "jsonl",
        "-q",
        empty.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no spans"));
}

#[test]
fn usage_errors_exit_two() {
    assert_eq!(toolscore(&["replay"]).status.code(), Some(2));
    assert_eq!(
        toolscore(&["replay", &pydantic(), "--metric", "nope"])
            .status
            .code(),
        Some(2)
    );
    assert_eq!(
        toolscore(&["replay", &pydantic(), "--args", "fuzzy:7"])
            .status
            .code(),
        Some(2)
    );
    let out = toolscore(&["replay", &pydantic(), "-e", "/nonexistent/expected.jsonl"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("/nonexistent/expected.jsonl"));
}

#[test]
fn match_by_attribute_and_stdin_and_protobuf_dir() {
    let dir = TempDir::new("match");
    let f = fixture(
        &dir,
        &[
            r#"{"id":"strands-session","match":{"session.id":"sess-strands-42","gen_ai.tool.name":"convert_currency"},"expected_tools":[{"name":"convert_currency","args":{"amount":100,"src":"EUR"}}]}"#,
        ],
    );
    let out = toolscore(&[
        "replay",
        data("corpus/strands/otlp").to_str().unwrap(),
        "-e",
        &f,
        "--format",
        "jsonl",
        "-q",
    ]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let rows = jsonl(&out.stdout);
    let evals: Vec<&Value> = rows.iter().filter(|r| r["type"] == "evaluation").collect();
    assert_eq!(evals.len(), 1);
    assert_eq!(evals[0]["trace_id"], "cd66435d89a36a12590b823619d0679b");

    // stdin, gzip-compressed.
    use std::io::Write;
    let raw = fs::read(data("corpus/pydantic-ai/traces.jsonl")).unwrap();
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    gz.write_all(&raw).unwrap();
    let gz = gz.finish().unwrap();
    let mut child = crate::util::bin()
        .args(["inspect", "--format", "jsonl", "-"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(&gz).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success());
    assert_eq!(jsonl(&out.stdout).len(), 7);
}

#[test]
fn sample_traces_show_a_mix() {
    let out = toolscore(&[
        "replay",
        "sample-traces",
        "--expected",
        "sample-traces/expected.jsonl",
        "--format",
        "jsonl",
        "-q",
    ]);
    assert_eq!(out.status.code(), Some(1));
    let rows = jsonl(&out.stdout);
    let passes = rows
        .iter()
        .filter(|r| r["type"] == "evaluation" && r["pass"] == true)
        .count();
    let fails = rows
        .iter()
        .filter(|r| r["type"] == "evaluation" && r["pass"] == false)
        .count();
    assert!(passes >= 3 && fails >= 2, "passes {passes}, fails {fails}");
    assert_eq!(rows.iter().filter(|r| r["type"] == "rejected").count(), 0);
}

/// ragas compares Python `str()` of nested dicts, which follows key order:
/// the arguments extracted from a span keep the order the agent wrote.
#[test]
fn ragas_sees_argument_keys_in_the_order_written() {
    let dir = TempDir::new("ragas-order");
    let trace = r#"{"resourceSpans":[{"resource":{"attributes":[]},"scopeSpans":[{"spans":[
        {"traceId":"5b8efff798038103d269b633813fc60c","spanId":"eee19b7ec3c1b174","name":"invoke_agent a",
         "kind":1,"startTimeUnixNano":"1","endTimeUnixNano":"9",
         "attributes":[{"key":"gen_ai.operation.name","value":{"stringValue":"invoke_agent"}}]},
        {"traceId":"5b8efff798038103d269b633813fc60c","spanId":"eee19b7ec3c1b175","parentSpanId":"eee19b7ec3c1b174",
         "name":"execute_tool search","kind":1,"startTimeUnixNano":"2","endTimeUnixNano":"3",
         "attributes":[{"key":"gen_ai.operation.name","value":{"stringValue":"execute_tool"}},
                       {"key":"gen_ai.tool.name","value":{"stringValue":"search"}},
                       {"key":"gen_ai.tool.call.arguments","value":{"stringValue":"{\"filter\": {\"zone\": \"eu\", \"age\": 3}}"}}]}
    ]}]}]}"#;
    let path = dir.path().join("trace.json");
    fs::write(&path, trace).unwrap();
    let run = |expected_args: &str| {
        let f = fixture(
            &dir,
            &[&format!(
                r#"{{"id":"c","trace_id":"5b8efff798038103d269b633813fc60c","expected_tools":[{{"name":"search","args":{expected_args}}}]}}"#
            )],
        );
        let out = toolscore(&[
            "replay",
            path.to_str().unwrap(),
            "--expected",
            &f,
            "--metric",
            "ragas.tool_call_accuracy_strict",
            "--format",
            "jsonl",
            "-q",
        ]);
        let rows = jsonl(&out.stdout);
        let eval = rows
            .iter()
            .find(|r| r["type"] == "evaluation")
            .unwrap_or_else(|| panic!("{rows:?}"))
            .clone();
        eval["score"].as_f64().unwrap()
    };
    assert_eq!(run(r#"{"filter": {"zone": "eu", "age": 3}}"#), 1.0);
    // The same dict with its keys the other way round is another `str()`.
    assert_eq!(run(r#"{"filter": {"age": 3, "zone": "eu"}}"#), 0.0);
}

/// Fixture problems (issue 14): a byte order mark is not content; a repeated
/// case id is rejected with both places named, not silently renamed; an
/// unknown metric in a case is a usage error naming the case, as
/// `--metric nope` is.
#[test]
fn fixture_bom_repeats_and_unknown_case_metrics() {
    let dir = TempDir::new("fixture-problems");
    let case =
        format!(r#"{{"id":"w","trace_id":"{WEATHER_TRACE}","expected_tools":["get_weather"]}}"#);
    let p = dir.path().join("expected.jsonl");
    fs::write(&p, format!("\u{feff}{case}\n{case}\n")).unwrap();
    let out = toolscore(&[
        "replay",
        &pydantic(),
        "--expected",
        p.to_str().unwrap(),
        "--format",
        "jsonl",
    ]);
    assert_eq!(out.status.code(), Some(2), "the repeat is an input problem");
    let rows = jsonl(&out.stdout);
    let evals: Vec<&Value> = rows.iter().filter(|r| r["type"] == "evaluation").collect();
    assert_eq!(evals.len(), 1, "the first case is kept and scored");
    assert_eq!(evals[0]["case"], "w");
    let rejected: Vec<&Value> = rows.iter().filter(|r| r["type"] == "rejected").collect();
    assert_eq!(rejected.len(), 1, "{rows:?}");
    assert_eq!(rejected[0]["position"], "2");
    assert!(rejected[0]["reason"]
        .as_str()
        .unwrap()
        .contains("repeats the case at line 1"));

    let bad = fixture(
        &dir,
        &[r#"{"id":"odd","match":{"a":"b"},"expected_tools":[],"metrics":["nope"]}"#],
    );
    let out = toolscore(&["replay", &pydantic(), "--expected", &bad]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("case `odd`") && err.contains("unknown metric `nope`"),
        "{err}"
    );
}

/// A tool name from a trace cannot forge table lines or send escape
/// sequences to the terminal (issue 14); JSONL keeps it exact.
#[test]
fn names_from_traces_are_escaped_in_the_table() {
    let dir = TempDir::new("inject");
    let name = "evil\nFORGED  case  1.000  pass\u{1b}[2J";
    let doc = serde_json::json!({"resourceSpans": [{"scopeSpans": [{"spans": [{
        "traceId": "0123456789abcdef0123456789abcdef",
        "spanId": "0123456789abcdef",
        "name": "tool",
        "startTimeUnixNano": "1",
        "endTimeUnixNano": "2",
        "attributes": [
            {"key": "openinference.span.kind", "value": {"stringValue": "TOOL"}},
            {"key": "tool.name", "value": {"stringValue": name}}
        ]
    }]}]}]});
    let p = dir.path().join("t.json");
    fs::write(&p, doc.to_string()).unwrap();
    let out = toolscore(&["replay", p.to_str().unwrap()]);
    let table = String::from_utf8_lossy(&out.stdout);
    assert!(!table.lines().any(|l| l.starts_with("FORGED")), "{table}");
    assert!(!table.contains('\u{1b}'), "{table}");
    assert!(table.contains("evil\\nFORGED"), "{table}");
    let out = toolscore(&["inspect", p.to_str().unwrap()]);
    let tree = String::from_utf8_lossy(&out.stdout);
    assert!(!tree.lines().any(|l| l.starts_with("FORGED")), "{tree}");
    assert!(!tree.contains('\u{1b}'), "{tree}");
    let out = toolscore(&["replay", p.to_str().unwrap(), "--format", "jsonl"]);
    let rows = jsonl(&out.stdout);
    assert_eq!(rows[0]["tools_called"][0]["name"], name);
}

/// OTLP/JSON as Go's protojson and Tempo write it (base64 ids, enum names),
/// in a Collector-style JSON-lines file and a Tempo `/api/traces` download:
/// both traces are scored; a span with a bad id and a line that is not JSON
/// are rejected with file, line and reason, and the rest is kept.
#[test]
fn protojson_and_tempo_files_with_enum_names_and_base64_ids() {
    use crate::util::{base64, hex, protojson_agent_span, protojson_tool_span};
    let dir = TempDir::new("protojson");
    let (ta, tb, tc) = ([0xa1u8; 16], [0xb2u8; 16], [0xc3u8; 16]);
    let sid = |t: u8, n: u8| [t, 0, 0, 0, 0, 0, 0, n];
    let request = |spans: &[String]| {
        format!(
            r#"{{"resourceSpans":[{{"resource":{{"attributes":[{{"key":"service.name","value":{{"stringValue":"go-agent"}}}}]}},"scopeSpans":[{{"scope":{{"name":"agent"}},"spans":[{}]}}]}}]}}"#,
            spans.join(",")
        )
    };
    // Children first, the root in a later request (as batching exporters send).
    let mut bad_span = protojson_tool_span(&tc, &sid(3, 2), &sid(3, 1), "broken", "{}", 10);
    bad_span = bad_span.replace(&base64(&sid(3, 2)), "not-an-id!");
    let lines = [
        request(&[
            protojson_tool_span(
                &ta,
                &sid(1, 2),
                &sid(1, 1),
                "get_weather",
                r#"{"city":"Paris"}"#,
                1000,
            ),
            protojson_tool_span(
                &ta,
                &sid(1, 3),
                &sid(1, 1),
                "get_weather",
                r#"{"city":"London"}"#,
                1100,
            ),
        ]),
        request(&[protojson_agent_span(&ta, &sid(1, 1), 900)]),
        request(&[protojson_agent_span(&tc, &sid(3, 1), 5), bad_span]),
        "{not json".to_string(),
    ];
    let go = dir.path().join("go-protojson.jsonl");
    fs::write(&go, lines.join("\n")).unwrap();
    // Tempo v1 API answer, pretty-printed, with the pre-1.0 names.
    let tempo_doc = serde_json::json!({"batches": [{
        "resource": {"attributes": [{"key": "service.name", "value": {"stringValue": "py-agent"}}]},
        "instrumentationLibrarySpans": [{
            "instrumentationLibrary": {"name": "agent"},
            "spans": [
                serde_json::from_str::<Value>(&protojson_agent_span(&tb, &sid(2, 1), 10)).unwrap(),
                serde_json::from_str::<Value>(&protojson_tool_span(&tb, &sid(2, 2), &sid(2, 1), "search", r#"{"q":"x"}"#, 20)).unwrap(),
            ]
        }]
    }]});
    let tempo = dir.path().join("tempo-trace.json");
    fs::write(&tempo, serde_json::to_string_pretty(&tempo_doc).unwrap()).unwrap();
    let f = fixture(
        &dir,
        &[
            &format!(
                r#"{{"id":"go","trace_id":"{}","expected_tools":[{{"name":"get_weather","args":{{"city":"Paris"}}}},{{"name":"get_weather","args":{{"city":"London"}}}}]}}"#,
                hex(&ta)
            ),
            &format!(
                r#"{{"id":"tempo","trace_id":"{}","expected_tools":[{{"name":"search","args":{{"q":"x"}}}}]}}"#,
                hex(&tb)
            ),
        ],
    );
    let run = |files: &[&std::path::Path]| {
        let mut args = vec!["replay".to_string()];
        args.extend(files.iter().map(|p| p.display().to_string()));
        args.extend(["-e", &f, "--format", "jsonl", "-q"].map(String::from));
        let argv: Vec<&str> = args.iter().map(String::as_str).collect();
        toolscore(&argv)
    };

    // The Tempo file alone is clean: its case passes, nothing is rejected
    // (exit 1: the other case has no trace).
    let out = run(&[&tempo]);
    let rows = jsonl(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{rows:#?}");
    let eval = rows.iter().find(|r| r["type"] == "evaluation").unwrap();
    assert_eq!(
        (&eval["case"], &eval["pass"]),
        (&Value::from("tempo"), &Value::from(true))
    );
    assert!(!rows.iter().any(|r| r["type"] == "rejected"), "{rows:#?}");

    let out = run(&[&go, &tempo]);
    assert_eq!(out.status.code(), Some(2), "rejected input is exit 2");
    let rows = jsonl(&out.stdout);
    let evals: Vec<&Value> = rows.iter().filter(|r| r["type"] == "evaluation").collect();
    assert_eq!(evals.len(), 2, "{rows:#?}");
    for e in &evals {
        assert_eq!(e["pass"], true, "{e}");
    }
    let rejected: Vec<&Value> = rows.iter().filter(|r| r["type"] == "rejected").collect();
    assert_eq!(rejected.len(), 2, "{rejected:#?}");
    let span_row = rejected.iter().find(|r| r["position"] == "3").unwrap();
    assert!(span_row["source"]
        .as_str()
        .unwrap()
        .ends_with("go-protojson.jsonl"));
    let reason = span_row["reason"].as_str().unwrap();
    for needle in [
        "span `execute_tool broken`",
        "resourceSpans[0].scopeSpans[0].spans[1]",
        "not-an-id!",
        "tried hex",
        "base64",
    ] {
        assert!(reason.contains(needle), "{needle} not in {reason}");
    }
    let line_row = rejected.iter().find(|r| r["position"] == "4").unwrap();
    assert!(line_row["reason"]
        .as_str()
        .unwrap()
        .contains("not valid OTLP/JSON"));
    // The rejected span's trace still holds its good span.
    let summary = rows.iter().find(|r| r["type"] == "summary").unwrap();
    assert_eq!(summary["stats"]["spans"], 6, "{summary}");
}

/// Special paths (issue 14): a FIFO given or found in a walked directory is
/// skipped with the reason instead of hanging the run; a directory that
/// links to itself is walked once; `/dev/zero` as a fixture or a config is
/// an error, not a memory blow-up.
#[test]
fn fifos_link_cycles_and_devices_are_not_read() {
    let dir = TempDir::new("special");
    let traces = dir.path().join("traces");
    fs::create_dir_all(&traces).unwrap();
    fs::copy(
        data("corpus/pydantic-ai/traces.jsonl"),
        traces.join("a.jsonl"),
    )
    .unwrap();
    let fifo = traces.join("pipe.json");
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .expect("mkfifo");
    assert!(made.success());
    std::os::unix::fs::symlink(".", traces.join("loop-a")).unwrap();
    std::os::unix::fs::symlink(".", traces.join("loop-b")).unwrap();
    let started = std::time::Instant::now();
    let out = toolscore(&[
        "inspect",
        traces.to_str().unwrap(),
        fifo.to_str().unwrap(),
        "--format",
        "jsonl",
    ]);
    assert!(started.elapsed() < std::time::Duration::from_secs(60));
    assert_eq!(out.status.code(), Some(2), "the FIFO is reported");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("FIFO"), "{err}");
    // The real file is read once, through the links too: one row per trace.
    let rows = jsonl(&out.stdout);
    let ids: std::collections::HashSet<&str> =
        rows.iter().filter_map(|r| r["trace_id"].as_str()).collect();
    assert_eq!(ids.len(), rows.len(), "no trace read twice");
    assert!(!rows.is_empty());

    for flag in ["--expected", "--config"] {
        let out = toolscore(&["replay", &pydantic(), flag, "/dev/zero"]);
        assert_eq!(out.status.code(), Some(2), "{flag}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("a device"), "{flag}: {err}");
    }
}
