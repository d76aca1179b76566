//! The sixth held-out set's tool-span misses, on made-up vendors' shapes:
//! markers in new spellings, values written one attribute per key, results
//! under new keys or encodings.

use std::sync::Arc;

use opentelemetry_proto::tonic::common::v1::{any_value, AnyValue, InstrumentationScope, KeyValue};
use serde_json::json;

use super::*;
use crate::assemble::SpanRecord;
use crate::ingest::projection::{AttrsOf, KeyFilter};

/// An attribute value as the SDKs type it.
#[derive(Clone, Copy)]
enum A<'a> {
    S(&'a str),
    I(i64),
}

fn kv(key: &str, v: A<'_>) -> KeyValue {
    let value = match v {
        A::S(s) => any_value::Value::StringValue(s.to_string()),
        A::I(i) => any_value::Value::IntValue(i),
    };
    KeyValue {
        key: key.to_string(),
        value: Some(AnyValue { value: Some(value) }),
        ..Default::default()
    }
}

fn span(id: u8, parent: Option<u8>, name: &str, attrs: &[(&str, A<'_>)]) -> SpanRecord {
    let attributes = attrs.iter().map(|&(k, v)| kv(k, v)).collect();
    let start = u64::from(id) * 10;
    super::test_support::span_of(id, parent, name, (start, start + 5), attributes)
}

fn calls(spans: Vec<SpanRecord>) -> Vec<(String, Value, Value, String)> {
    super::test_support::calls_of(6, spans)
}

use super::test_support::call;

#[test]
fn values_written_one_attribute_per_key_are_rebuilt_typed() {
    use A::{I, S};
    let got = calls(vec![
        span(1, None, "run", &[("kite.type.node", S("workflow"))]),
        // A marker after a `.` namespace, inputs and outputs under a
        // `data.` prefix, a value that is no dict under `__default__`.
        span(
            2,
            Some(1),
            "book_room",
            &[
                ("kite.type.node", S("tool")),
                ("kite.data.inputs.room", I(12)),
                ("kite.data.inputs.guest.name", S("Ada")),
                ("kite.data.outputs.__default__", S("booked")),
            ],
        ),
        // A `_` namespace, the result under the SDK's `result`, the span
        // named by the function's Python path.
        span(
            3,
            Some(1),
            "my_module.<locals>.pay_bill",
            &[
                ("wren_event_type", S("TOOL")),
                ("wren_inputs.amount", I(40)),
                ("wren_outputs.result.paid", I(1)),
                ("wren_outputs.result.ref", S("r-9")),
                // No argument of the call: another prefix.
                ("wren_metadata.user", S("u")),
            ],
        ),
    ]);
    assert_eq!(
        got,
        vec![
            call(
                "book_room",
                json!({"room": 12, "guest": {"name": "Ada"}}),
                json!("booked"),
                "tool-kind"
            ),
            call(
                "pay_bill",
                json!({"amount": 40}),
                json!({"paid": 1, "ref": "r-9"}),
                "tool-kind"
            ),
        ]
    );
}

#[test]
fn a_flattened_path_that_runs_into_a_value_is_left_out() {
    use A::{I, S};
    let got = calls(vec![span(
        1,
        None,
        "lookup",
        &[
            ("kite.type.node", S("tool")),
            ("kite.data.inputs.q", S("x")),
            ("kite.data.inputs.q.deep", I(1)),
            ("kite.data.inputs..empty", I(2)),
        ],
    )]);
    assert_eq!(got[0].1, json!({"q": "x"}));
}

#[test]
fn a_capitalised_dotted_span_name_is_no_python_path() {
    use A::S;
    // `Toolbox.search` is a class's method, not a module path: the name
    // stays whole (the wrapper-method rule judges such names).
    let got = calls(vec![span(
        1,
        None,
        "Toolbox.search",
        &[
            ("kite.type.node", S("tool")),
            ("kite.data.inputs.q", S("x")),
        ],
    )]);
    assert_eq!(got[0].0, "Toolbox.search");
}

#[test]
fn decoding_keeps_markers_after_an_underscore_and_flattened_values() {
    let p = Extractor::default().projection(Vec::new());
    for key in [
        "wren_event_type",
        "kite.type.node",
        "wren_inputs.amount",
        "kite.data.inputs.guest.name",
        "wren_outputs.result.ref",
        "kite.data.outputs.__default__",
    ] {
        assert!(p.keep(AttrsOf::Span, key), "{key}");
    }
    for key in ["wren_metadata.user", "kite.data.other", "event_typed"] {
        assert!(!p.keep(AttrsOf::Span, key), "{key}");
    }
}

#[test]
fn genai_tool_input_and_output_beside_a_vendor_marker_are_read() {
    use A::S;
    let message = json!({
        "lc": 1, "type": "constructor",
        "id": ["langchain", "schema", "messages", "ToolMessage"],
        "kwargs": {"content": "{\"ok\": true}", "type": "tool", "name": "ping", "tool_call_id": "c1"},
    })
    .to_string();
    let got = calls(vec![span(
        1,
        None,
        "ping",
        &[
            ("kite.span.type", S("tool")),
            ("gen_ai.tool.name", S("ping")),
            ("gen_ai.tool.input", S(r#"{"host": "a"}"#)),
            ("gen_ai.tool.output", S(&message)),
        ],
    )]);
    assert_eq!(
        got,
        vec![call(
            "ping",
            json!({"host": "a"}),
            json!({"ok": true}),
            "otel-genai-no-operation"
        )]
    );
}

#[test]
fn a_tool_messages_repr_encoded_as_a_json_string_gives_its_content() {
    use A::S;
    let repr = json!("content='{\"n\": 2}' name='count' tool_call_id='c7'").to_string();
    let got = calls(vec![span(
        1,
        None,
        "execute_tool count",
        &[
            ("gen_ai.operation.name", S("execute_tool")),
            ("gen_ai.tool.name", S("count")),
            ("gen_ai.tool.call.arguments", S("{}")),
            ("gen_ai.tool.call.result", S(&repr)),
        ],
    )]);
    assert_eq!(got[0].2, json!({"n": 2}));
}

#[test]
fn a_trailing_tool_word_is_no_function_name() {
    use A::S;
    let names: Vec<String> = ["lookup.tool", "jobs.<locals>.lookup.tool", "jobs.lookup"]
        .iter()
        .enumerate()
        .map(|(i, &name)| {
            let id = u8::try_from(i).unwrap_or(0) + 1;
            calls(vec![span(id, None, name, &[("kite.span.kind", S("tool"))])])
                .remove(0)
                .0
        })
        .collect();
    assert_eq!(names, ["lookup", "lookup", "lookup"]);
}

#[test]
fn langchains_run_output_wrapper_comes_off_only_under_a_langchain_scope() {
    use A::S;
    let tool = |id: u8, scope: &str| {
        let mut s = span(
            id,
            None,
            "lookup",
            &[
                ("gen_ai.span.kind", S("TOOL")),
                ("gen_ai.tool.name", S("lookup")),
                ("input.value", S(r#"{"q": "x"}"#)),
                ("output.value", S(r#"{"output": {"n": 1}}"#)),
            ],
        );
        s.scope = Arc::new(InstrumentationScope {
            name: scope.into(),
            ..Default::default()
        });
        s
    };
    let got = calls(vec![tool(1, "acme_LangChain"), tool(2, "acme_agents")]);
    assert_eq!(got[0].2, json!({"n": 1}));
    assert_eq!(got[0].3, "langchain-run-outputs");
    // Another framework's tool may return `{"output": ...}` of its own.
    assert_eq!(got[1].2, json!({"output": {"n": 1}}));
}

#[test]
fn stringified_argument_values_take_the_models_typed_ones() {
    use A::S;
    let request = |id: u8, call: &str| {
        span(
            id,
            Some(1),
            "chat",
            &[
                ("gen_ai.request.model", S("m")),
                ("gen_ai.completion.0.content", S(call)),
            ],
        )
    };
    let tool = |id: u8, input: &str| {
        span(
            id,
            Some(1),
            "book",
            &[("kite.span.type", S("tool")), ("kite.input", S(input))],
        )
    };
    let asked =
        json!({"name": "book", "arguments": r#"{"nights": 2, "late": true, "room": "12"}"#});
    let got = calls(vec![
        span(1, None, "agent", &[]),
        request(2, &asked.to_string()),
        // The text of each requested value: the typed values are taken.
        tool(3, r#"{"nights": "2", "late": "True", "room": "12"}"#),
        // A value that differs: the recorded arguments stay.
        tool(4, r#"{"nights": "3", "late": "True", "room": "12"}"#),
    ]);
    assert_eq!(got[0].1, json!({"nights": 2, "late": true, "room": "12"}));
    assert_eq!(
        got[1].1,
        json!({"nights": "3", "late": "True", "room": "12"})
    );
}

#[test]
fn only_values_that_are_the_text_of_a_number_boolean_or_null_are_stringified() {
    for yes in [
        json!({"n": "3"}),
        json!({"a": "x", "b": "-1.5"}),
        json!({"ok": "False"}),
    ] {
        assert!(requested::stringified(&yes), "{yes}");
    }
    for no in [
        json!({"n": 3}),
        json!({"town": "Lyon"}),
        json!("3"),
        json!({"t": "true story"}),
    ] {
        assert!(!requested::stringified(&no), "{no}");
    }
}

#[test]
fn a_span_without_arguments_or_call_id_takes_them_from_the_next_requests_history() {
    use A::S;
    let tool = |id: u8, name: &str| {
        span(
            id,
            Some(1),
            &format!("execute_tool {name}"),
            &[
                ("gen_ai.operation.name", S("execute_tool")),
                ("gen_ai.tool.name", S(name)),
                ("gen_ai.tool.call.result", S("ok")),
            ],
        )
    };
    let part = |id: &str, name: &str, args: Value| {
        json!({"role": "assistant", "parts": [
            {"type": "tool_call", "id": id, "name": name, "arguments": args.to_string()}
        ]})
    };
    let request = |id: u8, history: Value| {
        span(
            id,
            Some(1),
            "chat m",
            &[
                ("gen_ai.operation.name", S("chat")),
                ("gen_ai.input.messages", S(&history.to_string())),
            ],
        )
    };
    let first = part("c1", "pay", json!({"amount": 5}));
    let second = part("c2", "pay", json!({"amount": 7}));
    let (a, b) = (
        part("c3", "tip", json!({"n": 1})),
        part("c4", "tip", json!({"n": 2})),
    );
    let got = calls(vec![
        span(1, None, "agent", &[]),
        tool(2, "pay"),
        request(3, json!([first])),
        // The same tool again: the history's earlier call is not this one.
        tool(4, "pay"),
        request(5, json!([first, second])),
        // Two new calls of the tool in one request: which one is unknown.
        tool(6, "tip"),
        request(7, json!([first, second, a, b])),
    ]);
    let args: Vec<Value> = got.into_iter().map(|c| c.1).collect();
    assert_eq!(
        args,
        [json!({"amount": 5}), json!({"amount": 7}), Value::Null]
    );
}

#[test]
fn a_call_without_arguments_takes_them_from_the_record_naming_its_id() {
    use opentelemetry_proto::tonic::trace::v1::span::Event;
    use A::S;
    let mut run = span(1, None, "interaction", &[]);
    let record = |id: &str, input: &str| Event {
        name: "tool_result".into(),
        attributes: vec![kv("tool_use_id", S(id)), kv("tool_input", S(input))],
        ..Default::default()
    };
    run.span.events = vec![record("t-1", r#"{"seat": "4A"}"#), record("t-9", "{}")];
    let tool = |id: u8, call_id: &str| {
        span(
            id,
            Some(1),
            "kite.tool",
            &[
                ("gen_ai.operation.name", S("execute_tool")),
                ("gen_ai.tool.name", S("pick_seat")),
                ("gen_ai.tool.call.id", S(call_id)),
            ],
        )
    };
    let got = calls(vec![run, tool(2, "t-1"), tool(3, "t-2")]);
    // No record names `t-2`: nothing is taken.
    assert_eq!(got[0].1, json!({"seat": "4A"}));
    assert_eq!(got[1].1, Value::Null);
}

#[test]
fn results_added_by_the_next_request_answer_the_calls_between_in_order() {
    use A::S;
    let tool = |id: u8, name: &str| {
        span(
            id,
            Some(1),
            &format!("execute_tool {name}"),
            &[
                ("gen_ai.operation.name", S("execute_tool")),
                ("gen_ai.tool.name", S(name)),
                ("gen_ai.tool.call.arguments", S("{}")),
            ],
        )
    };
    let result = |text: &str| json!({"role": "tool", "parts": [{"type": "text", "content": text}]});
    let request = |id: u8, history: Value| {
        span(
            id,
            Some(1),
            "chat m",
            &[
                ("gen_ai.operation.name", S("chat")),
                ("gen_ai.input.messages", S(&history.to_string())),
            ],
        )
    };
    let user = json!({"role": "user", "parts": [{"type": "text", "content": "go"}]});
    let (a, b, c) = (result("{'n': 1}"), result("two"), result("three"));
    let got = calls(vec![
        span(1, None, "agent", &[]),
        request(2, json!([user])),
        tool(3, "first"),
        tool(4, "second"),
        request(5, json!([user, a, b])),
        // One call, two results added: which is its own is unknown.
        tool(6, "third"),
        request(7, json!([user, a, b, c, c])),
    ]);
    let results: Vec<Value> = got.into_iter().map(|c| c.2).collect();
    assert_eq!(results, [json!({"n": 1}), json!("two"), Value::Null]);
}

#[test]
fn a_tool_span_joined_to_the_models_mcp_named_call_keeps_the_tools_own_name() {
    use A::S;
    // The model asked for `mcp__maps__look_up` (id k1); the tool span, an
    // OTel GenAI one, names it so too and records no arguments.
    let asks = json!([{"role": "assistant", "parts": [
        {"type": "tool_call", "id": "k1", "name": "mcp__maps__look_up", "arguments": {"town": "Oslo"}}
    ]}]);
    let got = calls(vec![
        span(1, None, "agent", &[]),
        span(
            2,
            Some(1),
            "chat m",
            &[
                ("gen_ai.operation.name", S("chat")),
                ("gen_ai.output.messages", S(&asks.to_string())),
            ],
        ),
        span(
            3,
            Some(1),
            "execute_tool mcp__maps__look_up",
            &[
                ("gen_ai.operation.name", S("execute_tool")),
                ("gen_ai.tool.name", S("mcp__maps__look_up")),
                ("gen_ai.tool.call.id", S("k1")),
                ("gen_ai.tool.call.result", S("found")),
            ],
        ),
    ]);
    let named: Vec<(&str, &Value)> = got.iter().map(|c| (c.0.as_str(), &c.1)).collect();
    assert_eq!(named, [("look_up", &json!({"town": "Oslo"}))]);
}
