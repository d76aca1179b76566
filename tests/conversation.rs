//! Issue 37, classes 3 and 4: the model's side of a trace. Traces from real
//! runs of LLM-client instrumentations (OpenAI client, tools run by a
//! hand-written loop, a scripted model on 127.0.0.1; our own values):
//! the calls come from the conversation when no tool span records them,
//! tool spans take the model's name and arguments by call id, and a trace
//! whose tool spans and conversation disagree says so in every output.

use serde_json::{json, Value};

use crate::util::{data, json_rows, toolscore, TempDir};

fn path(file: &str) -> String {
    data(&format!("conversation/{file}")).display().to_string()
}

/// Every trace row `inspect --format jsonl` writes for `file`.
fn inspected(file: &str) -> Vec<Value> {
    let out = toolscore(&["inspect", "--format", "jsonl", "-q", &path(file)]);
    assert!(
        out.status.success(),
        "inspect {file}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    json_rows(&out.stdout)
}

/// `(name, args, result, from)` of every call of `rows`.
fn calls(rows: &[Value]) -> Vec<(Value, Value, Value, Value)> {
    rows.iter()
        .flat_map(|r| r["tools"].as_array().cloned().unwrap_or_default())
        .map(|t| {
            (
                t["name"].clone(),
                t["args"].clone(),
                t["result"].clone(),
                t["from"].clone(),
            )
        })
        .collect()
}

fn warnings(rows: &[Value]) -> Vec<String> {
    rows.iter()
        .flat_map(|r| r["warnings"].as_array().cloned().unwrap_or_default())
        .map(|w| w.as_str().unwrap_or_default().to_string())
        .collect()
}

/// What the tools of the hand-written loop received and returned.
fn loop_calls() -> Vec<(Value, Value, Value, Value)> {
    let conv = json!("conversation");
    vec![
        (
            json!("get_weather"),
            json!({"city": "Lisbon", "unit": "celsius"}),
            json!({"city": "Lisbon", "sky": "sunny", "temp": 21}),
            conv.clone(),
        ),
        (
            json!("get_time"),
            json!({"zone": "Europe/Lisbon"}),
            json!({"zone": "Europe/Lisbon", "time": "14:05"}),
            conv.clone(),
        ),
        (
            json!("convert_currency"),
            json!({"amount": 20, "from": "EUR", "to": "USD"}),
            json!({"amount": 21.6, "currency": "USD"}),
            conv,
        ),
    ]
}

#[test]
fn llm_only_traces_give_their_calls_from_the_conversation() {
    // OpenInference (flattened messages and request/response JSON),
    // OpenLLMetry 0.62 (OTel GenAI JSON messages), OpenLLMetry 0.40
    // (flattened `gen_ai.prompt.*`/`gen_ai.completion.*`), and the OTel
    // GenAI instrumentation (`opentelemetry-instrumentation-openai-v2`,
    // latest semantic conventions, content on spans).
    for (file, convention) in [
        ("openinference-loop.jsonl", "openinference-messages"),
        ("openllmetry-loop.jsonl", "otel-genai-messages"),
        ("openllmetry-legacy-loop.jsonl", "openllmetry-messages"),
        ("genai-loop.jsonl", "otel-genai-messages"),
    ] {
        let rows = inspected(file);
        assert_eq!(rows.len(), 1, "{file}: one trace");
        assert_eq!(calls(&rows), loop_calls(), "{file}");
        let tools = rows[0]["tools"].as_array().unwrap();
        assert!(
            tools.iter().all(|t| t["convention"] == convention),
            "{file}: {tools:?}"
        );
        // All three were answered: nothing to warn about.
        assert_eq!(warnings(&rows), Vec::<String>::new(), "{file}");
    }
}

#[test]
fn each_model_call_its_own_trace_counts_each_call_once() {
    // No parent span: every model call is a trace. The calls of a turn are
    // answered by the next trace's request, which carries them again in
    // its history: counted there, once.
    for file in ["openinference-per-call.jsonl", "genai-per-call.jsonl"] {
        let rows = inspected(file);
        assert_eq!(rows.len(), 3, "{file}");
        assert_eq!(calls(&rows), loop_calls(), "{file}");
        let per_trace: Vec<usize> = rows
            .iter()
            .map(|r| r["tools"].as_array().map_or(0, Vec::len))
            .collect();
        assert_eq!(per_trace, [0, 2, 1], "{file}");
        // The asking trace warns of nothing: a later trace counts its
        // calls, as its explanation notes.
        assert_eq!(warnings(&rows), Vec::<String>::new(), "{file}");
        let out = toolscore(&["inspect", "--explain", "-q", &path(file)]);
        let text = String::from_utf8_lossy(&out.stdout);
        let notes: Vec<&str> = text
            .lines()
            .filter(|l| l.contains("later (the same process), counts that call"))
            .collect();
        assert_eq!(notes.len(), 3, "{file}: {text}");
        assert!(
            notes[0].contains("`get_weather` (call id call_w1)"),
            "{file}: {notes:?}"
        );
    }
}

#[test]
fn tool_spans_take_the_model_name_and_arguments_by_call_id() {
    // The loop's own tool spans (OTel GenAI `execute_tool`): get_weather's
    // has the call id and no arguments; convert_currency's is named in a
    // namespace (`tools.convert_currency`); get_time has none.
    for file in [
        "openinference-tool-spans.jsonl",
        "openllmetry-tool-spans.jsonl",
    ] {
        let rows = inspected(file);
        let tools = rows[0]["tools"].as_array().unwrap();
        let got: Vec<(Value, Value, Value, Value)> = tools
            .iter()
            .map(|t| {
                (
                    t["name"].clone(),
                    t["args"].clone(),
                    t["span_name"].clone(),
                    t["from"].clone(),
                )
            })
            .collect();
        assert_eq!(
            got,
            vec![
                (
                    json!("get_weather"),
                    json!({"city": "Lisbon", "unit": "celsius"}),
                    Value::Null,
                    Value::Null
                ),
                (
                    json!("convert_currency"),
                    json!({"amount": 20, "from": "EUR", "to": "USD"}),
                    json!("tools.convert_currency"),
                    Value::Null
                ),
            ],
            "{file}"
        );
        let w = warnings(&rows);
        assert_eq!(w.len(), 1, "{file}: {w:?}");
        assert!(
            w[0].contains("`get_time` (call id call_t1)") && w[0].contains("no tool span shows"),
            "{file}: {w:?}"
        );
    }
}

#[test]
fn a_span_named_in_a_namespace_takes_the_model_name() {
    // BeeAI (TypeScript) through OpenInference names its tool spans
    // `dynamic.<camelCase>`; the model called `find_hotel`.
    let rows = inspected("beeai-js-openinference.jsonl");
    let tools: Vec<(Value, Value)> = rows
        .iter()
        .flat_map(|r| r["tools"].as_array().cloned().unwrap_or_default())
        .map(|t| (t["name"].clone(), t["span_name"].clone()))
        .collect();
    assert_eq!(
        tools,
        vec![
            (json!("find_hotel"), json!("dynamic.findHotel")),
            (json!("rent_bike"), json!("dynamic.rentBike")),
            (json!("final_answer"), json!("dynamic.finalAnswer")),
        ]
    );
    assert_eq!(warnings(&rows), Vec::<String>::new());
}

#[test]
fn a_disagreement_is_in_explain_and_every_report() {
    let file = path("openinference-tool-spans.jsonl");
    let wanted = "`get_time` (call id call_t1) in span";
    let explain = toolscore(&["inspect", "--explain", "-q", &file]);
    let text = String::from_utf8_lossy(&explain.stdout);
    assert!(
        text.contains("warning: the model asked for `get_time`")
            && text.contains("`tools.convert_currency` is the call `convert_currency`"),
        "{text}"
    );
    let explain_rows = toolscore(&["inspect", "--explain", "-f", "jsonl", "-q", &file]);
    let rows = json_rows(&explain_rows.stdout);
    let witness = rows
        .iter()
        .find(|r| r.get("conversation").is_some())
        .expect("a conversation row");
    assert!(witness["conversation"]["warnings"][0]
        .as_str()
        .is_some_and(|w| w.contains(wanted)));
    let dir = TempDir::new("conversation-reports");
    let fixture = dir.path().join("expected.jsonl");
    let case = json!({"id": "loop", "trace_id": "b5a30b79f332b96299a78d15f8d41272",
        "expected_tools": ["get_weather", "get_time", "convert_currency"]});
    std::fs::write(&fixture, format!("{case}\n")).unwrap();
    // With a case (the warning on its evaluation) and without (on the
    // trace no case took).
    let runs = [
        ("table", true),
        ("jsonl", true),
        ("junit", true),
        ("html", true),
    ]
    .into_iter()
    .chain([
        ("table", false),
        ("jsonl", false),
        ("junit", false),
        ("html", false),
    ]);
    for (format, with_case) in runs {
        let out_file = dir.path().join(format!("report-{with_case}.{format}"));
        let out_path = out_file.display().to_string();
        let fixture = fixture.display().to_string();
        let mut args = vec![
            "replay", "-q", &file, "--format", format, "--output", &out_path,
        ];
        if with_case {
            args.extend(["--expected", &fixture]);
        }
        let out = toolscore(&args);
        assert!(
            out.status.code().is_some(),
            "{format}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let written = std::fs::read_to_string(&out_file).unwrap_or_default();
        assert!(written.contains(wanted), "{format} {with_case}: {written}");
    }
}

#[test]
fn traces_whose_spans_and_conversation_agree_have_no_warning() {
    // The instrumentation traces of issue 30 record both tool spans and
    // the model's messages: where they agree nothing is said.
    let out = toolscore(&[
        "inspect",
        "--format",
        "jsonl",
        "-q",
        &data("instrumentations").display().to_string(),
    ]);
    let rows = json_rows(&out.stdout);
    assert!(rows.len() > 10);
    let w = warnings(&rows);
    assert_eq!(w, Vec::<String>::new());
}

/// Google ADK's own spans without content capture (the shape google-adk
/// 2.13 writes without `OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT`;
/// our own tools and values): the row, `--explain` and the JUnit report
/// say why the calls hold nothing, and what to set.
#[test]
fn calls_without_content_are_a_warning_in_the_row_explain_and_junit() {
    let file = path("adk-no-content.jsonl");
    let wanted = "2 tool calls hold neither arguments nor a result";
    let switch = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true";
    let rows = inspected("adk-no-content.jsonl");
    assert_eq!(rows.len(), 1);
    let names: Vec<Value> = calls(&rows).into_iter().map(|c| c.0).collect();
    assert_eq!(names, [json!("find_berth"), json!("reserve_berth")]);
    let w = warnings(&rows);
    assert_eq!(w.len(), 1, "{w:?}");
    assert!(w[0].contains(wanted) && w[0].contains(switch), "{w:?}");
    let explain = toolscore(&["inspect", "--explain", "-q", &file]);
    let text = String::from_utf8_lossy(&explain.stdout);
    assert!(text.contains(wanted), "{text}");
    let dir = TempDir::new("no-content-junit");
    let fixture = dir.path().join("expected.jsonl");
    let case = json!({"id": "berths", "trace_id": "5c0e7a11d2b34f6a8e9b0c1d2e3f4a5b",
        "expected_tools": [{"name": "find_berth", "args": {"length_m": 11}}, "reserve_berth"]});
    std::fs::write(&fixture, format!("{case}\n")).unwrap();
    for with_case in [true, false] {
        let out_file = dir.path().join(format!("report-{with_case}.xml"));
        let out_path = out_file.display().to_string();
        let fixture = fixture.display().to_string();
        let mut args = vec![
            "replay", "-q", &file, "--format", "junit", "--output", &out_path,
        ];
        if with_case {
            args.extend(["--expected", &fixture]);
        }
        let out = toolscore(&args);
        assert!(
            out.status.code().is_some(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let written = std::fs::read_to_string(&out_file).unwrap_or_default();
        assert!(
            written.contains(wanted) && written.contains(switch),
            "{with_case}: {written}"
        );
    }
}
