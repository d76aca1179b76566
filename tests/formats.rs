//! Trace formats other than OTLP, end to end through the real binary:
//! Jaeger JSON, Zipkin v2 JSON and the OTel Python console exporter's span
//! JSON (tests/data/formats/, hand-written in each tool's exact shape).

use std::fs;
use std::io::Write;

use serde_json::{json, Value};

use crate::util::{data, toolscore, TempDir};

fn path(name: &str) -> String {
    data(&format!("formats/{name}")).display().to_string()
}

fn rows(stdout: &[u8]) -> Vec<Value> {
    String::from_utf8_lossy(stdout)
        .lines()
        .map(|l| serde_json::from_str(l).expect("JSONL line"))
        .collect()
}

/// `toolscore inspect --format jsonl FILE`, expecting success.
fn inspect(file: &str) -> Vec<Value> {
    let out = toolscore(&["inspect", "--format", "jsonl", file]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    rows(&out.stdout)
}

fn trace<'a>(rows: &'a [Value], id: &str) -> &'a Value {
    rows.iter()
        .find(|r| r["trace_id"] == id)
        .unwrap_or_else(|| panic!("no trace {id} in {rows:?}"))
}

/// `toolscore replay FILE --expected <cases>`: the exit code and the rows.
fn replay(dir: &TempDir, file: &str, cases: &[Value]) -> (Option<i32>, Vec<Value>) {
    let fixture = dir.path().join("expected.jsonl");
    let text: Vec<String> = cases.iter().map(Value::to_string).collect();
    fs::write(&fixture, text.join("\n")).unwrap();
    let out = toolscore(&[
        "replay",
        file,
        "--expected",
        fixture.to_str().unwrap(),
        "--format",
        "jsonl",
        "-q",
    ]);
    (out.status.code(), rows(&out.stdout))
}

fn evaluation<'a>(rows: &'a [Value], case: &str) -> &'a Value {
    rows.iter()
        .find(|r| r["type"] == "evaluation" && r["case"] == case)
        .unwrap_or_else(|| panic!("no evaluation of {case} in {rows:?}"))
}

const JAEGER_TRACE: &str = "4bf92f3577b34da6a3ce929d0e0e4736";
/// The 64-bit Jaeger trace id `d3a1c6e8f04b7a29`, as a 128-bit id.
const JAEGER_SHORT_TRACE: &str = "0000000000000000d3a1c6e8f04b7a29";

#[test]
fn jaeger_download_gives_the_tool_calls() {
    let file = path("jaeger-traces.json");
    let rows = inspect(&file);
    assert_eq!(rows.len(), 2);
    let t = trace(&rows, JAEGER_TRACE);
    assert_eq!(t["spans"], 3);
    let tools = t["tools"].as_array().unwrap();
    assert_eq!(tools.len(), 1, "{tools:?}");
    assert_eq!(tools[0]["name"], "get_weather");
    assert_eq!(tools[0]["convention"], "openinference");
    assert_eq!(
        tools[0]["args"],
        json!({"city": "Paris", "unit": "celsius"})
    );
    assert_eq!(tools[0]["agent"]["name"], "AgentExecutor");
    assert_eq!(
        tools[0]["start_time_unix_nano"],
        1_717_236_001_650_000_000u64
    );

    let t = trace(&rows, JAEGER_SHORT_TRACE);
    let tool = &t["tools"][0];
    assert_eq!(tool["name"], "convert_currency");
    assert_eq!(
        tool["args"],
        json!({"amount": 100, "src": "EUR", "dst": "USD"})
    );
    assert_eq!(tool["status"], "error");
    assert_eq!(tool["error_message"], "rate service unavailable");
    assert_eq!(tool["agent"]["name"], "fx_agent");

    let dir = TempDir::new("jaeger");
    let (code, rows) = replay(
        &dir,
        &file,
        &[
            json!({"id": "weather", "trace_id": JAEGER_TRACE,
                   "expected_tools": [{"name": "get_weather", "args": {"city": "Paris", "unit": "celsius"}}]}),
            json!({"id": "fx", "trace_id": JAEGER_SHORT_TRACE,
                   "expected_tools": [{"name": "convert_currency", "args": {"amount": 100, "src": "EUR", "dst": "USD"}}]}),
        ],
    );
    assert_eq!(code, Some(0), "{rows:?}");
    assert_eq!(evaluation(&rows, "weather")["score"], 1.0);
    assert_eq!(evaluation(&rows, "fx")["pass"], true);

    // The same trace with other arguments expected fails.
    let (code, rows) = replay(
        &dir,
        &file,
        &[json!({"id": "weather", "trace_id": JAEGER_TRACE,
                 "expected_tools": [{"name": "get_weather", "args": {"city": "London", "unit": "celsius"}}]})],
    );
    assert_eq!(code, Some(1));
    assert_eq!(evaluation(&rows, "weather")["pass"], false);
}

#[test]
fn zipkin_spans_give_the_tool_calls_plain_and_gzipped() {
    let file = path("zipkin-spans.json");
    let rows = inspect(&file);
    assert_eq!(rows.len(), 1);
    let t = trace(&rows, "e457b5a2e4d86bd1a3b2c5e0f9d81c47");
    let tools = t["tools"].as_array().unwrap();
    let names: Vec<&str> = tools.iter().map(|c| c["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["search_flights", "book_flight"]);
    assert_eq!(
        tools[0]["args"],
        json!({"origin": "CDG", "destination": "JFK", "date": "2024-06-14"})
    );
    assert_eq!(tools[0]["convention"], "otel-genai");
    assert_eq!(tools[0]["agent"]["name"], "travel_agent");
    assert_eq!(tools[1]["args"], json!({"flight": "AF006", "seats": 2}));
    assert_eq!(tools[1]["status"], "error");
    // From the exception event (the Python exporter's annotation encoding).
    assert_eq!(tools[1]["error_type"], "SoldOut");

    let dir = TempDir::new("zipkin");
    let gz = dir.path().join("spans.json.gz");
    let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    enc.write_all(&fs::read(&file).unwrap()).unwrap();
    fs::write(&gz, enc.finish().unwrap()).unwrap();
    assert_eq!(inspect(gz.to_str().unwrap()), rows);

    let (code, rows) = replay(
        &dir,
        gz.to_str().unwrap(),
        &[
            json!({"id": "trip", "trace_id": "e457b5a2e4d86bd1a3b2c5e0f9d81c47",
                 "expected_tools": [
                    {"name": "search_flights", "args": {"origin": "CDG", "destination": "JFK", "date": "2024-06-14"}},
                    {"name": "book_flight", "args": {"flight": "AF006", "seats": 2}}]}),
        ],
    );
    assert_eq!(code, Some(0), "{rows:?}");
    assert_eq!(evaluation(&rows, "trip")["score"], 1.0);
}

#[test]
fn console_exporter_output_gives_the_tool_calls() {
    let file = path("console-spans.json");
    let rows = inspect(&file);
    assert_eq!(rows.len(), 1);
    let t = trace(&rows, "8f2c4e6a1b3d5f7092a4c6e8b0d2f416");
    assert_eq!(t["spans"], 3);
    let tools = t["tools"].as_array().unwrap();
    assert_eq!(tools[0]["name"], "lookup_order");
    assert_eq!(tools[0]["args"], json!({"order_id": "A-1042"}));
    assert_eq!(
        tools[0]["result"],
        json!({"status": "shipped", "carrier": "UPS"})
    );
    // ISO-8601 with microseconds -> Unix nanoseconds.
    assert_eq!(
        tools[0]["start_time_unix_nano"],
        1_717_236_902_104_512_000u64
    );
    assert_eq!(tools[1]["name"], "refund_order");
    assert_eq!(tools[1]["status"], "error");
    assert_eq!(
        tools[1]["error_message"],
        "PermissionError: refunds need a supervisor"
    );
    assert_eq!(tools[1]["agent"]["name"], "support_agent");

    let dir = TempDir::new("console");
    let (code, rows) = replay(
        &dir,
        &file,
        &[
            json!({"id": "support", "trace_id": "8f2c4e6a1b3d5f7092a4c6e8b0d2f416",
                 "expected_tools": [
                    {"name": "lookup_order", "args": {"order_id": "A-1042"}},
                    {"name": "refund_order", "args": {"order_id": "A-1042", "reason": "late"}}]}),
        ],
    );
    assert_eq!(code, Some(0), "{rows:?}");
    let eval = evaluation(&rows, "support");
    assert_eq!(eval["score"], 1.0);
    assert_eq!(eval["tools_called"].as_array().unwrap().len(), 2);
}

#[test]
fn a_broken_console_object_is_rejected_alone_with_its_line() {
    let text = fs::read_to_string(path("console-spans.json")).unwrap();
    // Break the second object (a Python repr where JSON is expected).
    let at = text.find("\"kind\": \"SpanKind.INTERNAL\"").unwrap();
    let second = text[at + 1..]
        .find("\"kind\": \"SpanKind.INTERNAL\"")
        .unwrap()
        + at
        + 1;
    let broken = format!(
        "{}\"kind\": SpanKind.INTERNAL{}",
        &text[..second],
        &text[second + "\"kind\": \"SpanKind.INTERNAL\"".len()..]
    );
    // `lines()` counts the partial line the `"kind"` key is on.
    let line = text[..second].lines().count();
    let dir = TempDir::new("console-broken");
    let file = dir.path().join("spans.json");
    fs::write(&file, broken).unwrap();
    let out = toolscore(&["inspect", "--format", "jsonl", file.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(&format!("spans.json:{line}: not valid JSON")),
        "line {line}: {stderr}"
    );
    // The other two spans are still read: the first tool call and its agent.
    let rows = rows(&out.stdout);
    let tools = rows[0]["tools"].as_array().unwrap();
    assert_eq!(tools.len(), 1);
    assert_eq!(tools[0]["name"], "lookup_order");
    assert_eq!(tools[0]["agent"]["name"], "support_agent");
}

#[test]
fn empty_or_unreadable_downloads_are_never_silently_empty() {
    let dir = TempDir::new("formats-empty");
    let empty = dir.path().join("jaeger.json");
    fs::write(
        &empty,
        r#"{"data":[],"total":0,"limit":0,"offset":0,"errors":null}"#,
    )
    .unwrap();
    let bad_span = dir.path().join("zipkin.json");
    fs::write(
        &bad_span,
        r#"[{"traceId":"e457b5a2e4d86bd1a3b2c5e0f9d81c47","id":"not-hex","name":"search_flights"}]"#,
    )
    .unwrap();
    let out = toolscore(&[
        "inspect",
        "--format",
        "jsonl",
        empty.to_str().unwrap(),
        bad_span.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(out.stdout.is_empty());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("jaeger.json: Jaeger JSON: the response holds no traces"),
        "{stderr}"
    );
    assert!(
        stderr.contains(
            "zipkin.json: Zipkin v2 JSON [0]: span `search_flights` rejected: id `not-hex`"
        ),
        "{stderr}"
    );
}

#[test]
fn one_bad_mlflow_span_is_left_out_alone_and_its_trace_kept() {
    let native = |id: &str| -> Value {
        let p = data(&format!("corpus/mlflow/mlflow-native/{id}.json"));
        serde_json::from_str(&fs::read_to_string(p).unwrap()).unwrap()
    };
    let first = native("3db4b55a476481ac5b47aa94caea582a");
    let mut second = native("5e5e3251271865ab32c5c2f650a10a43");
    let mut third = native("f568a804e2b40611c4e3d2fb7598ecf3");
    // Trace 2: span #10 (the `format_answer` tool call) gets an id that is
    // neither base64 nor hex; trace 3 loses its `data` (not a trace).
    let spans = second["data"]["spans"].as_array_mut().unwrap();
    assert_eq!(spans[9]["name"], "format_answer");
    spans[9]["span_id"] = json!("!!bad!!");
    third.as_object_mut().unwrap().remove("data");
    let dir = TempDir::new("mlflow-bad-span");
    let file = dir.path().join("traces.json");
    fs::write(&file, json!([first, second, third]).to_string()).unwrap();

    let out = toolscore(&["inspect", "--format", "jsonl", file.to_str().unwrap()]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains(
            "traces.json: MLflow trace JSON: trace #2 (tr-5e5e3251271865ab32c5c2f650a10a43): \
             span #10 `!!bad!!` left out: bad span id `!!bad!!`"
        ),
        "{stderr}"
    );
    assert!(
        stderr.contains("trace #3 (tr-f568a804e2b40611c4e3d2fb7598ecf3): no `data.spans` list"),
        "{stderr}"
    );
    let rows = rows(&out.stdout);
    let names = |id: &str| -> Vec<String> {
        trace(&rows, id)["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["name"].as_str().unwrap().to_string())
            .collect()
    };
    assert_eq!(rows.len(), 2, "{rows:?}");
    assert_eq!(names("3db4b55a476481ac5b47aa94caea582a"), ["get_weather"]);
    // The good spans of the trace with the bad one are all kept.
    assert_eq!(
        names("5e5e3251271865ab32c5c2f650a10a43"),
        ["get_weather", "get_weather"]
    );
    assert_eq!(
        trace(&rows, "5e5e3251271865ab32c5c2f650a10a43")["spans"],
        10
    );
}

/// Issue 36, §3: the input formats are declared once (`Format::ALL`); the
/// `PATHS` help of `inspect` and `replay` lists exactly them, and so does
/// docs/formats.md ("The formats read": one `- **NAME**:` bullet each, in
/// the same order, then gzip).
#[test]
fn help_and_docs_list_every_format_read() {
    use toolscore::ingest::Format;
    let want: Vec<String> = Format::ALL
        .iter()
        .map(|f| format!("{}: {}", f.name(), f.description()))
        .collect();
    for command in ["inspect", "replay"] {
        let out = toolscore(&[command, "--help"]);
        assert!(out.status.success(), "{command} --help");
        let help = String::from_utf8(out.stdout).unwrap();
        let listed: Vec<String> = help
            .lines()
            .skip_while(|l| !l.contains("Formats, found from the content"))
            .skip(1)
            .map_while(|l| l.trim_start().strip_prefix("- "))
            .map(String::from)
            .collect();
        assert_eq!(listed, want, "{command} --help:\n{help}");
    }
    let docs = fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/formats.md")).unwrap();
    let section = docs
        .split("\n## The formats read\n")
        .nth(1)
        .and_then(|s| s.split("\n## ").next())
        .expect("docs/formats.md has a section \"The formats read\"");
    let documented: Vec<&str> = section
        .lines()
        .filter_map(|l| l.strip_prefix("- **"))
        .filter_map(|l| l.split_once("**").map(|(name, _)| name))
        .collect();
    let names: Vec<&str> = Format::ALL.iter().map(|f| f.name()).collect();
    assert_eq!(
        documented.split_last(),
        Some((&"gzip", &names[..])),
        "{section}"
    );
}
