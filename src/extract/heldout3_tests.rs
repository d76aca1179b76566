//! Extraction on made-up spans of the shapes behind the third held-out
//! set's first-sight misses (issue 37): each mechanism on its own, with our
//! own names and values.

use serde_json::{json, Value};

use super::tests::sp;
use super::*;
use crate::assemble::TraceId;

fn analyze(spans: Vec<SpanRecord>) -> Analysis {
    Extractor::default().analyze(&Trace::new(TraceId([7; 16]), spans, 0))
}

/// Each call's name, arguments and result.
fn calls(a: &Analysis) -> Vec<(String, Option<Value>, Option<Value>)> {
    a.calls
        .iter()
        .map(|c| {
            let result = c.result.as_ref().map(CallResult::to_value);
            (c.name.clone(), c.args.value().cloned(), result)
        })
        .collect()
}

#[test]
fn a_span_named_by_the_function_template_is_a_call() {
    let template = ("logfire.msg_template", "Function: {name}");
    let a = analyze(vec![
        sp(
            1,
            None,
            (0, 100),
            "Agent run: {name!r}",
            &[
                ("logfire.msg_template", "Agent run: {name!r}"),
                ("name", "desk"),
            ],
        ),
        sp(
            2,
            Some(1),
            (10, 20),
            "Function: {name}",
            &[
                template,
                ("name", "lookup_tide"),
                ("input", r#"{"harbour": "Brest"}"#),
                ("output", r#"{"high": "06:12"}"#),
                ("mcp_data", "null"),
            ],
        ),
        sp(
            3,
            Some(1),
            (30, 40),
            "Function: {name}",
            &[
                template,
                ("name", "book_berth"),
                ("input", r#"{"nights": 2}"#),
                ("output", "booked"),
                ("mcp_data", "null"),
            ],
        ),
    ]);
    assert_eq!(
        calls(&a),
        vec![
            (
                "lookup_tide".to_string(),
                Some(json!({"harbour": "Brest"})),
                Some(json!({"high": "06:12"}))
            ),
            (
                "book_berth".to_string(),
                Some(json!({"nights": 2})),
                Some(json!("booked"))
            ),
        ]
    );
    assert!(a
        .calls
        .iter()
        .all(|c| c.convention == "logfire-openai-agents"));
}

#[test]
fn an_sdk_tool_span_renamed_to_execute_tool_keeps_its_result() {
    // An SDK's own tool span that a vendor renamed after the GenAI
    // convention: the operation name wins the rule, the SDK's attributes
    // still hold what the tool received and returned.
    let a = analyze(vec![sp(
        1,
        None,
        (0, 10),
        "execute_tool lookup_tide",
        &[
            ("gen_ai.operation.name", "execute_tool"),
            ("gen_ai.tool.name", "lookup_tide"),
            ("gen_ai.tool.call.id", "c-1"),
            ("ai.operationId", "ai.toolCall"),
            ("ai.toolCall.args", r#"{"harbour":"Brest"}"#),
            ("ai.toolCall.result", r#"{"high":"06:12"}"#),
        ],
    )]);
    assert_eq!(
        calls(&a),
        vec![(
            "lookup_tide".to_string(),
            Some(json!({"harbour": "Brest"})),
            Some(json!({"high": "06:12"}))
        )]
    );
}

#[test]
fn a_tool_message_with_text_parts_answers_its_call() {
    // Only model spans; the result is the text part of the tool message
    // that carries the call id.
    let asked = r#"[{"role":"assistant","parts":[],"tool_calls":[{"id":"c-7","type":"function","function":{"name":"lookup_tide","arguments":"{\"harbour\": \"Brest\"}"}}]}]"#;
    let history = r#"[{"role":"user","parts":[{"type":"text","content":"When is high tide?"}]},
        {"role":"assistant","parts":[],"tool_calls":[{"id":"c-7","type":"function","function":{"name":"lookup_tide","arguments":"{\"harbour\": \"Brest\"}"}}]},
        {"role":"tool","parts":[{"type":"text","content":"{\"high\": \"06:12\"}"}],"tool_call_id":"c-7"}]"#;
    let chat = ("gen_ai.operation.name", "chat");
    let a = analyze(vec![
        sp(
            1,
            None,
            (0, 10),
            "chat m",
            &[
                chat,
                (
                    "gen_ai.input.messages",
                    r#"[{"role":"user","parts":[{"type":"text","content":"When is high tide?"}]}]"#,
                ),
                ("gen_ai.output.messages", asked),
            ],
        ),
        sp(
            2,
            None,
            (20, 30),
            "chat m",
            &[
                chat,
                ("gen_ai.input.messages", history),
                (
                    "gen_ai.output.messages",
                    r#"[{"role":"assistant","parts":[{"type":"text","content":"At 06:12."}]}]"#,
                ),
            ],
        ),
    ]);
    assert_eq!(
        calls(&a),
        vec![(
            "lookup_tide".to_string(),
            Some(json!({"harbour": "Brest"})),
            Some(json!({"high": "06:12"}))
        )]
    );
    assert_eq!(a.calls[0].from, Some(conversation::FROM_CONVERSATION));
}

#[test]
fn an_agno_execution_result_gives_its_result_and_nothing_else_does() {
    let tool = |id: u8, output: &str| {
        sp(
            id,
            None,
            (u64::from(id) * 10, u64::from(id) * 10 + 5),
            "lookup_tide.tool",
            &[
                ("traceloop.span.kind", "tool"),
                ("traceloop.entity.name", "lookup_tide"),
                ("traceloop.entity.input", r#"{"harbour": "Brest"}"#),
                ("traceloop.entity.output", output),
            ],
        )
    };
    let a = analyze(vec![
        tool(1, "status='success' result={'high': '06:12', 'metres': 6.5} error=None updated_session_state=None images=None videos=None audios=None files=None"),
        tool(2, "status='success' result='calm' error=None"),
        tool(3, r#"status='success' result='{"coef": 95}' error=None files=None"#),
        // Not Agno's fields alone: no `result` taken, the fields read as
        // any model's `str()` (an object); a failure is a failed call, no
        // result (`outcome_record`); no literal: text.
        tool(4, "status='success' result='calm' mood='fine'"),
        tool(5, "status='failure' result=None error='no such harbour'"),
        tool(6, "status='success' result=Tide(high='06:12') error=None"),
    ]);
    let results: Vec<Option<Value>> = calls(&a).into_iter().map(|c| c.2).collect();
    assert_eq!(
        results,
        vec![
            Some(json!({"high": "06:12", "metres": 6.5})),
            Some(json!("calm")),
            Some(json!({"coef": 95})),
            Some(json!({"status": "success", "result": "calm", "mood": "fine"})),
            None,
            Some(json!(
                "status='success' result=Tide(high='06:12') error=None"
            )),
        ]
    );
}

#[test]
fn pydantic_fields_are_read_as_literals() {
    let f = literal::keyword_fields("a='x y' b=None c={'k': [1, (2,)]} d=-3.5 e=True").unwrap();
    assert_eq!(
        Value::Object(f.into_iter().collect()),
        json!({"a": "x y", "b": null, "c": {"k": [1, [2]]}, "d": -3.5, "e": true})
    );
    for bad in [
        "",
        "a",
        "a=",
        "=1",
        "a=1,b=2",
        "a=x",
        "1a=2",
        "a=1  b=2 c",
        "a='x'b=1",
    ] {
        assert!(literal::keyword_fields(bad).is_none(), "{bad}");
    }
}

#[test]
fn a_name_attribute_names_the_call_only_as_a_word_of_the_span_name() {
    let mlflow = |id: u8, span: &str, name: &str| {
        sp(
            id,
            None,
            (u64::from(id) * 10, u64::from(id) * 10 + 5),
            span,
            &[
                ("mlflow.spanType", "\"TOOL\""),
                ("mlflow.spanInputs", r#"{"harbour": "Brest"}"#),
                ("name", name),
            ],
        )
    };
    let a = analyze(vec![
        mlflow(1, "Tide.lookup_tide", "\"lookup_tide\""),
        // Part of a longer word, or not in the span name: the span's name.
        mlflow(2, "Tide.lookup_tides", "\"lookup_tide\""),
        mlflow(3, "check_berth", "\"unrelated\""),
        // The whole span name: nothing more to keep.
        mlflow(4, "lookup_tide", "\"lookup_tide\""),
    ]);
    let named: Vec<(&str, Option<&str>)> = a
        .calls
        .iter()
        .map(|c| (c.name.as_str(), c.span_name.as_deref()))
        .collect();
    assert_eq!(
        named,
        vec![
            ("lookup_tide", Some("Tide.lookup_tide")),
            ("Tide.lookup_tides", None),
            ("check_berth", None),
            ("lookup_tide", None),
        ]
    );
    assert!(source::has_word("tool: 'é_x'", "é_x") && !source::has_word("aé_x", "é_x"));
    assert!(!source::has_word("anything", " "));
}

#[test]
fn a_tool_span_named_by_a_quoting_template_is_named_by_the_quoted_name() {
    let tool = |id: u8, span: &str| {
        sp(
            id,
            None,
            (u64::from(id) * 10, u64::from(id) * 10 + 5),
            span,
            &[
                ("acme.span.type", "TOOL"),
                ("acme.span.input", r#"{"harbour": "Brest"}"#),
            ],
        )
    };
    let a = analyze(vec![
        tool(1, "tool: 'lookup_tide'"),
        tool(2, "run tool: 'book berth'"),
        // Not the whole template: the span's name as it is.
        tool(3, "tool: 'a' and 'b'"),
        tool(4, "lookup_tide"),
    ]);
    let named: Vec<(&str, Option<&str>)> = a
        .calls
        .iter()
        .map(|c| (c.name.as_str(), c.span_name.as_deref()))
        .collect();
    assert_eq!(
        named,
        vec![
            ("lookup_tide", Some("tool: 'lookup_tide'")),
            ("book berth", Some("run tool: 'book berth'")),
            ("tool: 'a' and 'b'", None),
            ("lookup_tide", None),
        ]
    );
}

/// `s` with status ERROR and the status message `message`.
fn failed(mut s: SpanRecord, message: &str) -> SpanRecord {
    s.span.status = Some(opentelemetry_proto::tonic::trace::v1::Status {
        code: 2,
        message: message.to_string(),
    });
    s
}

#[test]
fn a_tool_span_without_a_result_takes_the_one_the_next_request_carries() {
    let chat = |id: u8, start: u64, input: &str, output: &str| {
        sp(
            id,
            Some(1),
            (start, start + 5),
            "chat m",
            &[
                ("gen_ai.operation.name", "chat"),
                ("gen_ai.input.messages", input),
                ("gen_ai.output.messages", output),
            ],
        )
    };
    let tool = |id: u8, start: u64, name: &str, call: &str, result: Option<&str>| {
        let mut attrs = vec![
            ("gen_ai.operation.name", "execute_tool"),
            ("gen_ai.tool.name", name),
            ("gen_ai.tool.call.id", call),
        ];
        attrs.extend(result.map(|r| ("gen_ai.tool.call.result", r)));
        sp(
            id,
            Some(1),
            (start, start + 2),
            &format!("execute_tool {name}"),
            &attrs,
        )
    };
    let ask = |call: &str, name: &str| {
        format!(
            r#"[{{"role":"assistant","parts":[{{"type":"tool_call","id":"{call}","name":"{name}","arguments":{{}}}}]}}]"#
        )
    };
    let answered = |call: &str, response: &str| {
        format!(
            r#"[{{"role":"user","parts":[{{"type":"text","content":"Tides?"}}]}},{{"role":"tool","parts":[{{"type":"tool_call_response","id":"{call}","response":{response}}}]}}]"#
        )
    };
    for status in ["", "internal_error"] {
        let a = analyze(vec![
            sp(
                1,
                None,
                (0, 200),
                "invoke_agent desk",
                &[
                    ("gen_ai.operation.name", "invoke_agent"),
                    ("gen_ai.agent.name", "desk"),
                ],
            ),
            chat(2, 10, "[]", &ask("c-1", "lookup_tide")),
            tool(3, 20, "lookup_tide", "c-1", None),
            chat(
                4,
                30,
                &answered("c-1", r#""{\"high\": \"06:12\"}""#),
                &ask("c-2", "book_berth"),
            ),
            // Its own result stays; a failed call takes the text the model was
            // sent too (and, having no message, that text as its message).
            tool(5, 40, "book_berth", "c-2", Some("booked")),
            chat(
                6,
                50,
                &answered("c-2", r#""other""#),
                &ask("c-3", "lookup_tide"),
            ),
            tool(7, 60, "lookup_tide", "c-3", None),
            chat(
                8,
                70,
                &answered("c-3", r#""missing""#),
                &ask("c-4", "lookup_tide"),
            ),
            failed(tool(9, 80, "lookup_tide", "c-4", None), status),
            chat(
                10,
                90,
                &answered("c-4", r#""Error: no such harbour""#),
                "[]",
            ),
        ]);
        let results: Vec<Option<Value>> = calls(&a).into_iter().map(|c| c.2).collect();
        assert_eq!(
            results,
            vec![
                Some(json!({"high": "06:12"})),
                Some(json!("booked")),
                Some(json!("missing")),
                Some(json!("Error: no such harbour"))
            ]
        );
        // A status message naming only a status class (Sentry's
        // `internal_error`) says no more than none.
        let failed = a.calls.last().map(|c| c.error_message.as_deref());
        assert_eq!(failed, Some(Some("Error: no such harbour")), "{status}");
        // Two notes for the failed call: its message, its result.
        assert_eq!(a.notes.len(), 4, "{:?}", a.notes);
    }
}

#[test]
fn plain_text_under_a_message_key_is_no_later_request() {
    // An agent framework's span names the sending agent where a request's
    // messages go: the model's call stays open for the next trace.
    let a = analyze(vec![
        sp(
            1,
            None,
            (0, 10),
            "chat m",
            &[
                ("gen_ai.operation.name", "chat"),
                (
                    "gen_ai.input.messages",
                    r#"[{"role":"user","parts":[{"type":"text","content":"Tides?"}]}]"#,
                ),
                (
                    "gen_ai.output.messages",
                    r#"[{"role":"assistant","parts":[{"type":"tool_call","id":"c-9","name":"lookup_tide","arguments":{}}]}]"#,
                ),
            ],
        ),
        sp(
            2,
            None,
            (20, 30),
            "execute_task desk",
            &[
                ("gen_ai.operation.name", "chat"),
                ("gen_ai.input.messages", "harbour_master"),
            ],
        ),
    ]);
    assert!(a.calls.is_empty());
    let open = a.open.expect("the call is left open");
    assert_eq!(open.asks.len(), 1);
    assert_eq!(open.asks[0].asked.id.as_deref(), Some("c-9"));
}

#[test]
fn a_status_class_gives_way_to_the_exception_text() {
    let span = |status: &str, thrown: bool| {
        let mut s = failed(sp(1, None, (0, 5), "execute_tool lookup_tide", &[]), status);
        if thrown {
            let e = crate::extract::test_support::event(
                "exception",
                "exception.message",
                "tide table missing",
            );
            s.span.events.push(e);
        }
        s
    };
    let message = |s: &SpanRecord| crate::extract::failure_of(s, None).0;
    let exception = Some("tide table missing".to_string());
    // Sentry's `internal_error` names only the status class.
    assert_eq!(message(&span("internal_error", true)), exception);
    // With nothing better, it is still the message.
    assert_eq!(
        message(&span("internal_error", false)).as_deref(),
        Some("internal_error")
    );
    // Any other status message comes first, as before.
    assert_eq!(
        message(&span("harbour closed", true)).as_deref(),
        Some("harbour closed")
    );
}
