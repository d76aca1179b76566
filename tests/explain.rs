//! `toolscore inspect --explain` and the hint for inputs with spans but no
//! tool call, through the real binary on OTLP/JSON files written here.

use serde_json::{json, Value};

use crate::util::{data, toolscore, TempDir};

fn span(id: &str, parent: Option<&str>, name: &str, start: u64, attrs: &[(&str, &str)]) -> Value {
    let mut s = json!({
        "traceId": "5b8efff798038103d269b633813fc60c",
        "spanId": id,
        "name": name,
        "kind": 1,
        "startTimeUnixNano": start.to_string(),
        "endTimeUnixNano": (start + 1000).to_string(),
        "attributes": attrs
            .iter()
            .map(|(k, v)| json!({"key": k, "value": {"stringValue": v}}))
            .collect::<Vec<_>>(),
    });
    if let Some(p) = parent {
        s["parentSpanId"] = json!(p);
    }
    s
}

/// One OTLP/JSON request holding `spans`, written to `dir/name`.
fn write(dir: &TempDir, name: &str, spans: Vec<Value>) -> String {
    let doc = json!({"resourceSpans": [{
        "resource": {"attributes": [{"key": "service.name", "value": {"stringValue": "demo"}}]},
        "scopeSpans": [{"scope": {"name": "pydantic-ai"}, "spans": spans}],
    }]});
    let path = dir.path().join(name);
    std::fs::write(&path, doc.to_string()).unwrap();
    path.display().to_string()
}

/// A pydantic-ai v2 run from before tool spans had an operation name.
fn legacy_run(dir: &TempDir) -> String {
    write(
        dir,
        "legacy.json",
        vec![
            span(
                "0000000000000001",
                None,
                "agent run",
                1_000,
                &[("agent_name", "demo"), ("logfire.msg", "demo run")],
            ),
            span(
                "0000000000000002",
                Some("0000000000000001"),
                "chat gpt-4o",
                2_000,
                &[
                    ("gen_ai.operation.name", "chat"),
                    ("gen_ai.request.model", "gpt-4o"),
                ],
            ),
            span(
                "0000000000000003",
                Some("0000000000000001"),
                "running tool",
                3_000,
                &[
                    ("gen_ai.tool.name", "get_weather"),
                    ("gen_ai.tool.call.id", "call_1"),
                    ("tool_arguments", r#"{"city":"Paris"}"#),
                    ("logfire.msg", "running tool: get_weather"),
                ],
            ),
        ],
    )
}

/// Spans of model calls only: nothing any convention calls a tool call.
fn model_calls_only(dir: &TempDir) -> String {
    write(
        dir,
        "chat.json",
        vec![span(
            "0000000000000009",
            None,
            "chat gpt-4o",
            1_000,
            &[
                ("gen_ai.operation.name", "chat"),
                ("gen_ai.tool.definitions", r#"[{"name":"get_weather"}]"#),
            ],
        )],
    )
}

#[test]
fn inspect_explain_shows_the_rule_or_the_near_misses_per_span() {
    let dir = TempDir::new("explain");
    let file = legacy_run(&dir);
    let out = toolscore(&["inspect", "--explain", "--format", "jsonl", &file]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let rows: Vec<Value> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(rows.len(), 3, "one row per span: {rows:?}");
    let row = |name: &str| rows.iter().find(|r| r["span_name"] == name).unwrap();
    assert_eq!(
        row("running tool")["matched"],
        json!({"rule": "pydantic-ai-legacy", "kind": "tool", "name": "get_weather", "call": true})
    );
    assert_eq!(row("agent run")["matched"]["kind"], "agent");
    let chat = row("chat gpt-4o");
    assert!(chat.get("matched").is_none());
    assert_eq!(chat["trace_id"], "5b8efff798038103d269b633813fc60c");
    assert_eq!(chat["near_misses"][0]["rule"], "otel-genai");
    assert_eq!(
        chat["near_misses"][0]["reasons"][0],
        json!({"why": "wrong_value", "what": "attribute gen_ai.operation.name", "found": "chat", "wants": "`execute_tool`"})
    );

    let out = toolscore(&["inspect", "--explain", &file]);
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    for needle in [
        "trace 5b8efff798038103d269b633813fc60c  (3 spans, 1 tool calls)",
        "tool call `get_weather`  [pydantic-ai-legacy]",
        "agent run `demo`  [pydantic-ai-agent]",
        // No condition of any rule held: not "almost", one short line.
        "no rule matched\n      no rule's conditions held; otel-genai: attribute gen_ai.operation.name is `chat`, wants `execute_tool`\n",
    ] {
        assert!(text.contains(needle), "{needle} missing:\n{text}");
    }
    assert!(!text.contains("almost"), "{text}");
}

#[test]
fn a_model_call_the_conversation_witness_reads_says_so() {
    let dir = TempDir::new("explain-model");
    let output = r#"[{"role":"assistant","parts":[{"type":"text","content":"hi"}]}]"#;
    let file = write(
        &dir,
        "chat.json",
        vec![span(
            "0000000000000001",
            None,
            "chat acme-1",
            1_000,
            &[
                ("gen_ai.operation.name", "chat"),
                ("gen_ai.output.messages", output),
            ],
        )],
    );
    let out = toolscore(&["inspect", "--explain", &file]);
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains(
            "chat acme-1  model call: its messages are read by the conversation witness\n"
        ),
        "{text}"
    );
    assert!(!text.contains("no rule"), "{text}");
}

#[test]
fn spans_without_any_tool_call_get_a_hint_never_a_silent_empty_result() {
    let dir = TempDir::new("hint");
    let empty = model_calls_only(&dir);

    let out = toolscore(&["inspect", &empty]);
    assert!(out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    let hint = err
        .lines()
        .find(|l| l.starts_with("toolscore: hint: "))
        .unwrap_or_else(|| panic!("no hint on stderr: {err}"));
    for needle in [
        "no tool calls in 1 span(s)",
        "conventions tried: ",
        "otel-genai",
        "openinference",
        "run `toolscore inspect --explain` to see why",
    ] {
        assert!(hint.contains(needle), "{needle}: {hint}");
    }

    // replay: the hint ends the summary line (stdout for the table,
    // stderr for machine formats).
    let out = toolscore(&["replay", &empty]);
    let text = String::from_utf8_lossy(&out.stdout);
    let summary = text.lines().last().unwrap_or_default();
    assert!(
        summary.contains("0 tool call(s); no tool calls in 1 span(s)"),
        "{summary}"
    );
    assert!(summary.contains("inspect --explain"), "{summary}");
    let out = toolscore(&["replay", "--format", "jsonl", &empty]);
    assert!(String::from_utf8_lossy(&out.stderr).contains("inspect --explain"));

    // Inputs with calls get no hint.
    let found = legacy_run(&dir);
    for args in [
        vec!["inspect", found.as_str()],
        vec!["replay", "--format", "jsonl", found.as_str()],
    ] {
        let out = toolscore(&args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!err.contains("inspect --explain"), "{args:?}: {err}");
    }
    let corpus = data("corpus/pydantic-ai/traces.jsonl")
        .display()
        .to_string();
    let out = toolscore(&["inspect", &corpus]);
    assert!(!String::from_utf8_lossy(&out.stderr).contains("hint"));
}

#[test]
fn explain_header_counts_calls_not_spans_when_several_spans_record_one_call() {
    // VoltAgent's and the AI SDK's spans of each call sit side by side:
    // four tool spans, two calls, as the rows list them.
    let file = data("firstsight/js-voltagent-sentry.jsonl");
    let file = file.to_str().unwrap();
    let out = toolscore(&["inspect", "--explain", "-q", file]);
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    let needle = "trace b8010000000000000000000000000004  (13 spans, 4 tool spans, 2 tool calls)";
    assert!(text.contains(needle), "{needle} missing:\n{text}");
    let rows = toolscore(&["inspect", "--format", "jsonl", "-q", file]);
    let listed: usize = String::from_utf8_lossy(&rows.stdout)
        .lines()
        .map(|l| {
            serde_json::from_str::<Value>(l).unwrap()["tools"]
                .as_array()
                .map_or(0, Vec::len)
        })
        .sum();
    assert_eq!(listed, 2);
}
