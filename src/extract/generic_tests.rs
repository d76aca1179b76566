//! The mechanisms every rule benefits from, on made-up spans: the generic
//! tool-kind rule (a tool marker in a namespace no rule knows), one call
//! however many spans record it, arguments written as Python literals.

use opentelemetry_proto::tonic::common::v1::{any_value, AnyValue, KeyValue};
use serde_json::json;

use super::*;
use crate::assemble::{SpanRecord, Trace, TraceId};
use crate::ingest::projection::{AttrsOf, KeyFilter};

fn kv(key: &str, v: &str) -> KeyValue {
    KeyValue {
        key: key.to_string(),
        value: Some(AnyValue {
            value: Some(any_value::Value::StringValue(v.to_string())),
        }),
        ..Default::default()
    }
}

/// A span lasting `(start, end)`.
fn span(
    id: u8,
    parent: Option<u8>,
    name: &str,
    when: (u64, u64),
    attrs: &[(&str, &str)],
) -> SpanRecord {
    let attributes = attrs.iter().map(|(k, v)| kv(k, v)).collect();
    super::test_support::span_of(id, parent, name, when, attributes)
}

fn trace(spans: Vec<SpanRecord>) -> Trace {
    Trace::new(TraceId([1; 16]), spans, 0)
}

/// `(name, arguments, result, convention)` of each call.
fn calls(spans: Vec<SpanRecord>) -> Vec<(String, Option<Value>, Option<Value>, String)> {
    Extractor::default()
        .extract(&trace(spans))
        .into_iter()
        .map(|c| {
            let result = c.result.as_ref().map(CallResult::to_value);
            (c.name, c.args.value().cloned(), result, c.convention)
        })
        .collect()
}

fn call(
    name: &str,
    args: Value,
    result: Value,
    rule: &str,
) -> (String, Option<Value>, Option<Value>, String) {
    (name.into(), Some(args), Some(result), rule.into())
}

#[test]
fn a_tool_marker_in_any_namespace_is_a_call() {
    let got = calls(vec![
        span(1, None, "agent", (0, 100), &[]),
        span(
            2,
            Some(1),
            "get_weather",
            (10, 20),
            &[
                ("acme.span.kind", "tool"),
                ("acme.input", r#"{"city": "Paris"}"#),
                ("acme.output", r#"{"temp": 18}"#),
            ],
        ),
        // Another spelling and case, the name in an attribute, the span
        // name a message template.
        span(
            3,
            Some(1),
            "Function: {name}",
            (30, 40),
            &[
                ("zeta.observation.type", "TOOL"),
                ("zeta.tool.name", "book"),
                ("zeta.tool.input", r#"{"args": [], "kwargs": {"room": 2}}"#),
                ("zeta.tool.output", "booked"),
            ],
        ),
        // A bare key, the arguments beside it.
        span(
            4,
            Some(1),
            "lookup",
            (50, 60),
            &[
                ("span_type", "\"Tool\""),
                ("input", r#"{"q": "x"}"#),
                ("output", "[1]"),
            ],
        ),
    ]);
    assert_eq!(
        got,
        vec![
            call(
                "get_weather",
                json!({"city": "Paris"}),
                json!({"temp": 18}),
                "tool-kind"
            ),
            call("book", json!({"room": 2}), json!("booked"), "tool-kind"),
            call("lookup", json!({"q": "x"}), json!([1]), "tool-kind"),
        ]
    );
}

#[test]
fn the_generic_rule_reads_the_wider_argument_and_result_keys() {
    let got = calls(vec![
        span(1, None, "agent", (0, 100), &[]),
        // Arguments and result under a bare `tool.` prefix beside the
        // marker.
        span(
            2,
            Some(1),
            "find_room",
            (10, 20),
            &[
                ("omni.span.kind", "tool"),
                ("tool.name", "find_room"),
                ("tool.parameters", r#"{"floor": 2}"#),
                ("tool.result", r#"{"room": 7}"#),
            ],
        ),
        // In the marker's namespace; `parameters` there is the tool's
        // schema, so the arguments are the next key's.
        span(
            3,
            Some(1),
            "book",
            (30, 40),
            &[
                ("kappa.span.type", "TOOL"),
                (
                    "kappa.parameters",
                    r#"{"type": "object", "properties": {"room": {"type": "integer"}}}"#,
                ),
                ("kappa.params", r#"{"room": 7}"#),
                ("kappa.response", "booked"),
            ],
        ),
        // A key ranked before the wider ones still wins.
        span(
            4,
            Some(1),
            "pay",
            (50, 60),
            &[
                ("kappa.span.type", "tool"),
                ("kappa.input", r#"{"amount": 5}"#),
                ("kappa.tool.arguments", r#"{"amount": 6}"#),
                ("kappa.output", "paid"),
                ("kappa.tool.result", "not this"),
            ],
        ),
    ]);
    assert_eq!(
        got,
        vec![
            call(
                "find_room",
                json!({"floor": 2}),
                json!({"room": 7}),
                "tool-kind"
            ),
            call("book", json!({"room": 7}), json!("booked"), "tool-kind"),
            call("pay", json!({"amount": 5}), json!("paid"), "tool-kind"),
        ]
    );
}

#[test]
fn what_is_not_a_tool_marker_gives_no_call() {
    let got = calls(vec![
        // Another kind; a key that only ends like a marker; a template name
        // with nothing else to name the tool.
        span(
            1,
            None,
            "chat",
            (0, 10),
            &[("acme.span.kind", "llm"), ("acme.input", "{}")],
        ),
        span(
            2,
            None,
            "x",
            (20, 30),
            &[("acmespan.kind", "tool"), ("acme.input", "{}")],
        ),
        span(
            3,
            None,
            "Function: {name}",
            (40, 50),
            &[("acme.span.kind", "tool")],
        ),
    ]);
    assert_eq!(got, vec![]);
}

#[test]
fn a_named_convention_wins_over_the_generic_rule() {
    let got = calls(vec![span(
        1,
        None,
        "get_weather",
        (0, 10),
        &[
            ("openinference.span.kind", "TOOL"),
            ("input.value", r#"{"city": "Oslo"}"#),
            ("input.mime_type", "application/json"),
            ("acme.span.kind", "tool"),
            ("acme.input", r#"{"city": "elsewhere"}"#),
        ],
    )]);
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].1, Some(json!({"city": "Oslo"})));
    assert_eq!(got[0].3, "openinference");
}

#[test]
fn explain_names_the_generic_rule_and_what_it_read() {
    let t = trace(vec![span(
        1,
        None,
        "Function: {name}",
        (0, 10),
        &[
            ("acme.span.kind", "tool"),
            ("acme.name", "get_weather"),
            ("acme.input", r#"{"city": "Paris"}"#),
        ],
    )]);
    let rows = Extractor::default().explain(&t);
    let m = rows[0].matched.clone().expect("matched");
    assert_eq!(m.rule, "tool-kind");
    assert_eq!(m.name.as_deref(), Some("get_weather"));
    assert_eq!(m.read, vec!["acme.span.kind", "acme.name", "acme.input"]);
}

#[test]
fn decoding_keeps_what_the_generic_rule_reads_in_any_namespace() {
    let p = Extractor::default().projection(Vec::new());
    for key in [
        "acme.span.kind",
        "acme.input",
        "acme.tool.name",
        "acme.span.output",
        "span_type",
    ] {
        assert!(p.keep(AttrsOf::Span, key), "{key}");
    }
    assert!(!p.keep(AttrsOf::Span, "acme.unrelated"));
}

/// OpenInference's TOOL span (arguments as JSON when given).
fn oi_tool(
    id: u8,
    parent: Option<u8>,
    name: &str,
    when: (u64, u64),
    args: Option<&str>,
) -> SpanRecord {
    let mut attrs = vec![("openinference.span.kind", "TOOL"), ("tool.name", name)];
    if let Some(a) = args {
        attrs.extend([("input.value", a), ("input.mime_type", "application/json")]);
    }
    span(id, parent, name, when, &attrs)
}

/// An OTel GenAI `execute_tool` span, with a call id and arguments when given.
fn genai_tool(
    id: u8,
    parent: Option<u8>,
    name: &str,
    when: (u64, u64),
    call_id: Option<&str>,
    args: Option<&str>,
) -> SpanRecord {
    let mut attrs = vec![
        ("gen_ai.operation.name", "execute_tool"),
        ("gen_ai.tool.name", name),
    ];
    attrs.extend(call_id.map(|c| ("gen_ai.tool.call.id", c)));
    attrs.extend(args.map(|a| ("gen_ai.tool.call.arguments", a)));
    span(id, parent, &format!("execute_tool {name}"), when, &attrs)
}

/// `(name, args, convention, span id byte, start, depth, within byte)` of each call.
type Seen = (String, Option<Value>, String, u8, u64, usize, Option<u8>);

fn seen(spans: Vec<SpanRecord>) -> Vec<Seen> {
    Extractor::default()
        .extract(&trace(spans))
        .into_iter()
        .map(|c| {
            (
                c.name,
                c.args.value().cloned(),
                c.convention,
                c.span_id.0[0],
                c.start_time_unix_nano,
                c.depth,
                c.within.map(|w| w.0[0]),
            )
        })
        .collect()
}

#[test]
fn nested_records_of_one_call_are_one_call() {
    let args = r#"{"city": "Paris"}"#;
    // Arguments outside (an instrumentation around the framework's span):
    // the outer call's arguments, convention and span; the inner timing.
    let got = seen(vec![
        oi_tool(1, None, "get_weather", (0, 100), Some(args)),
        genai_tool(2, Some(1), "get_weather", (10, 90), None, None),
    ]);
    let want = json!({"city": "Paris"});
    assert_eq!(
        got,
        vec![(
            "get_weather".into(),
            Some(want.clone()),
            "openinference".into(),
            1,
            10,
            0,
            None
        )]
    );
    // Arguments inside, three records deep (an MCP client's span inside):
    // the inner arguments, with their convention and span.
    let got = seen(vec![
        oi_tool(1, None, "get_weather", (0, 100), None),
        genai_tool(2, Some(1), "get_weather", (10, 90), None, None),
        span(3, Some(2), "tools/call", (15, 85), &[]),
        genai_tool(4, Some(3), "get_weather", (20, 80), None, Some(args)),
    ]);
    assert_eq!(
        got,
        vec![(
            "get_weather".into(),
            Some(want),
            "otel-genai".into(),
            4,
            20,
            0,
            None
        )]
    );
}

#[test]
fn one_call_id_is_one_call_whatever_the_names() {
    // A wrapper class's span around the tool's, both with the model's call id.
    let got = seen(vec![
        genai_tool(
            1,
            None,
            "DynamicStructuredTool",
            (0, 100),
            Some("call_1"),
            None,
        ),
        span(
            2,
            Some(1),
            "find_hotel",
            (10, 90),
            &[
                ("openinference.span.kind", "TOOL"),
                ("tool.name", "find_hotel"),
                ("tool_call.id", "call_1"),
                ("input.value", r#"{"town": "Lyon"}"#),
                ("input.mime_type", "application/json"),
            ],
        ),
    ]);
    assert_eq!(got.len(), 1, "{got:?}");
    assert_eq!(got[0].0, "find_hotel");
    assert_eq!(got[0].1, Some(json!({"town": "Lyon"})));
}

#[test]
fn a_tool_that_calls_itself_keeps_every_call() {
    let a = r#"{"n": 2}"#;
    let b = r#"{"n": 1}"#;
    for spans in [
        // Other arguments.
        vec![
            oi_tool(1, None, "fact", (0, 100), Some(a)),
            oi_tool(2, Some(1), "fact", (10, 90), Some(b)),
        ],
        // Other call ids, no arguments.
        vec![
            genai_tool(1, None, "fact", (0, 100), Some("c1"), None),
            genai_tool(2, Some(1), "fact", (10, 90), Some("c2"), None),
        ],
        // One convention, nothing to tell the calls apart.
        vec![
            genai_tool(1, None, "fact", (0, 100), None, None),
            genai_tool(2, Some(1), "fact", (10, 90), None, None),
        ],
        // Equal arguments, but other call ids.
        vec![
            genai_tool(1, None, "fact", (0, 100), Some("c1"), Some(a)),
            genai_tool(2, Some(1), "fact", (10, 90), Some("c2"), Some(a)),
        ],
    ] {
        let got = seen(spans);
        assert_eq!(got.len(), 2, "{got:?}");
        assert_eq!((got[0].5, got[1].5, got[1].6), (0, 1, Some(1)), "{got:?}");
    }
}

#[test]
fn what_ran_inside_a_merged_call_is_nested_once() {
    // A tool recorded twice runs a sub-agent with its own call: that call
    // is one level deep, within the merged call.
    let got = seen(vec![
        oi_tool(1, None, "plan", (0, 100), Some(r#"{"to": "Oslo"}"#)),
        genai_tool(2, Some(1), "plan", (10, 90), None, None),
        span(
            3,
            Some(2),
            "invoke_agent sub",
            (20, 80),
            &[
                ("gen_ai.operation.name", "invoke_agent"),
                ("gen_ai.agent.name", "sub"),
            ],
        ),
        genai_tool(4, Some(3), "lookup", (30, 40), None, Some(r#"{"q": 1}"#)),
    ]);
    assert_eq!(got.len(), 2, "{got:?}");
    assert_eq!((got[0].0.as_str(), got[0].5), ("plan", 0));
    assert_eq!(
        (got[1].0.as_str(), got[1].5, got[1].6),
        ("lookup", 1, Some(3))
    );
    let (_, runs) = Extractor::default().extract_with_runs(&trace(vec![
        oi_tool(1, None, "plan", (0, 100), Some(r#"{"to": "Oslo"}"#)),
        genai_tool(2, Some(1), "plan", (10, 90), None, None),
        span(
            3,
            Some(2),
            "invoke_agent sub",
            (20, 80),
            &[
                ("gen_ai.operation.name", "invoke_agent"),
                ("gen_ai.agent.name", "sub"),
            ],
        ),
    ]));
    // The run sits within the kept call, one call deep.
    assert_eq!((runs[0].depth, runs[0].within), (1, Some(SpanId([1; 8]))));
}

#[test]
fn python_literal_arguments_and_results_are_read() {
    let got = calls(vec![span(
        1,
        None,
        "execute_tool find_hotel",
        (0, 10),
        &[
            ("gen_ai.operation.name", "execute_tool"),
            ("gen_ai.tool.name", "find_hotel"),
            (
                "gen_ai.tool.call.arguments",
                "{'town': 'Lyon', 'near': ('Part-Dieu', None), 'ok': True}",
            ),
            (
                "gen_ai.tool.call.result",
                "{'hotel': \"Le Phare\", 'stars': 3}",
            ),
        ],
    )]);
    assert_eq!(
        got,
        vec![call(
            "find_hotel",
            json!({"town": "Lyon", "near": ["Part-Dieu", null], "ok": true}),
            json!({"hotel": "Le Phare", "stars": 3}),
            "otel-genai"
        )]
    );
    // Text that is no literal stays text; a JSON string holding JSON text
    // stays the string it holds.
    let got = calls(vec![span(
        1,
        None,
        "execute_tool t",
        (0, 10),
        &[
            ("gen_ai.operation.name", "execute_tool"),
            ("gen_ai.tool.name", "t"),
            ("gen_ai.tool.call.arguments", "{'a': os.system('x')}"),
            ("gen_ai.tool.call.result", r#""{\"a\": 1}""#),
        ],
    )]);
    assert_eq!(
        got,
        vec![call(
            "t",
            json!("{'a': os.system('x')}"),
            json!("{\"a\": 1}"),
            "otel-genai"
        )]
    );
}

#[test]
fn a_python_literal_inside_a_json_string_or_a_wrapper_is_read() {
    let got = calls(vec![
        span(1, None, "agent", (0, 100), &[]),
        // The `str()` of a returned dict, JSON-encoded as a string (as
        // every value of this vendor is).
        span(
            2,
            Some(1),
            "find_room",
            (10, 20),
            &[
                ("omni.span.kind", "tool"),
                ("omni.input", r#"{"floor": 2}"#),
                (
                    "omni.output",
                    r#""{'room': 'A7', 'free': True, 'view': None}""#,
                ),
            ],
        ),
        // The same text inside a wrapper the rule takes off (a typed value).
        span(
            3,
            Some(1),
            "list_rooms",
            (30, 40),
            &[
                ("omni.span.kind", "tool"),
                ("omni.input", "{}"),
                (
                    "omni.output",
                    r#"{"type": "text", "value": "[('A7', 2), ('B1', 1)]"}"#,
                ),
            ],
        ),
        // A JSON string of plain words, or of a literal Python would not
        // read back (a call), stays the text.
        span(
            4,
            Some(1),
            "note",
            (50, 60),
            &[
                ("omni.span.kind", "tool"),
                ("omni.input", "{}"),
                ("omni.output", r#""{'done': yes}""#),
            ],
        ),
    ]);
    assert_eq!(
        got,
        vec![
            call(
                "find_room",
                json!({"floor": 2}),
                json!({"room": "A7", "free": true, "view": null}),
                "tool-kind"
            ),
            call(
                "list_rooms",
                json!({}),
                json!([["A7", 2], ["B1", 1]]),
                "tool-kind"
            ),
            call("note", json!({}), json!("{'done': yes}"), "tool-kind"),
        ]
    );
}

#[test]
fn a_span_named_after_a_wrappers_method_takes_the_tools_own_name() {
    let spans = vec![
        span(1, None, "agent", (0, 100), &[]),
        // The tool's name JSON-quoted in a bare `name`, as MLflow writes it.
        span(
            2,
            Some(1),
            "ToolBox.ainvoke",
            (10, 20),
            &[
                ("omni.span.kind", "tool"),
                ("name", "\"find_room\""),
                ("omni.input", r#"{"floor": 2}"#),
            ],
        ),
        // Nothing names the tool: the name stays.
        span(
            3,
            Some(1),
            "ToolBox.__call__",
            (30, 40),
            &[("omni.span.kind", "tool"), ("omni.input", "{}")],
        ),
        // Not a wrapper's method: the span's name is the tool's.
        span(
            4,
            Some(1),
            "Tool.lookup",
            (50, 60),
            &[
                ("omni.span.kind", "tool"),
                ("name", "other"),
                ("omni.input", "{}"),
            ],
        ),
    ];
    let got: Vec<(String, Option<String>)> = Extractor::default()
        .extract(&trace(spans))
        .into_iter()
        .map(|c| (c.name, c.span_name))
        .collect();
    assert_eq!(
        got,
        vec![
            ("find_room".into(), Some("ToolBox.ainvoke".into())),
            ("ToolBox.__call__".into(), None),
            ("Tool.lookup".into(), None),
        ]
    );
}

#[test]
fn a_framework_s_tool_keys_name_a_span_its_marker_names_by_kind() {
    // The marker in the instrumentation's namespace, the tool in the
    // framework's (AgentOps' LangChain callback), the input a Python literal.
    let got = calls(vec![
        span(1, None, "agent", (0, 100), &[]),
        span(
            2,
            Some(1),
            "tool.tool",
            (10, 20),
            &[
                ("langchain.tool.name", "pick_seat"),
                ("langchain.tool.input", "{'row': 4, 'aisle': True}"),
                ("omni.span.kind", "tool"),
                ("langchain.tool.output", r#"{"seat": "4C"}"#),
            ],
        ),
    ]);
    assert_eq!(
        got,
        [call(
            "pick_seat",
            json!({"row": 4, "aisle": true}),
            json!({"seat": "4C"}),
            "tool-kind"
        )]
    );
}

#[test]
fn a_traced_functions_return_value_is_the_result_in_any_namespace() {
    let spans = vec![
        span(
            1,
            None,
            "book_room",
            (10, 20),
            &[
                ("quill.span_type", "tool"),
                ("quill.call.function", "hotel.book_room"),
                ("quill.input", r#"{"floor": 2}"#),
                ("quill.call.return", "booked"),
            ],
        ),
        // The return value as the `repr()` of a graph node's state update.
        span(
            2,
            None,
            "find_room",
            (30, 40),
            &[
                ("quill.span_type", "tool"),
                ("quill.input", r#"{"floor": 3}"#),
                (
                    "quill.call.return",
                    r#"{'messages': [ToolMessage(content='{"room": 31}', name='find_room', tool_call_id='q_2')]}"#,
                ),
            ],
        ),
    ];
    assert_eq!(
        calls(spans),
        vec![
            call(
                "book_room",
                json!({"floor": 2}),
                json!("booked"),
                "tool-kind"
            ),
            call(
                "find_room",
                json!({"floor": 3}),
                json!({"room": 31}),
                "tool-kind"
            ),
        ]
    );
    // Decoding keeps the key in any namespace, whatever its value.
    let p = Extractor::default().projection(Vec::new());
    assert!(p.keep(AttrsOf::Span, "quill.call.return"));
}

#[test]
fn a_named_rule_without_a_result_takes_it_beside_the_vendors_marker() {
    let genai = |id: u8, extra: &[(&'static str, &'static str)]| {
        let mut attrs = vec![
            ("gen_ai.tool.name", "find_room"),
            ("quill.span_type", "tool"),
            ("quill.call.return", r#"{"room": 12}"#),
        ];
        attrs.extend_from_slice(extra);
        span(
            id,
            None,
            "find_room",
            (u64::from(id) * 10, u64::from(id) * 10 + 5),
            &attrs,
        )
    };
    let got: Vec<(String, Option<Value>)> = calls(vec![
        // otel-genai-no-operation finds no result: the namespace's.
        genai(1, &[]),
        // Its own result key wins.
        genai(2, &[("gen_ai.tool.call.result", r#"{"room": 7}"#)]),
        // No marker: no namespace to read.
        span(
            3,
            None,
            "find_room",
            (30, 35),
            &[
                ("gen_ai.tool.name", "find_room"),
                ("quill.call.return", "x"),
            ],
        ),
    ])
    .into_iter()
    .map(|(name, _, result, rule)| (format!("{name} [{rule}]"), result))
    .collect();
    let rule = "find_room [otel-genai-no-operation]".to_string();
    assert_eq!(
        got,
        vec![
            (rule.clone(), Some(json!({"room": 12}))),
            (rule.clone(), Some(json!({"room": 7}))),
            (rule, None),
        ]
    );
}

#[test]
fn the_ai_sdk_s_tool_name_beside_a_marker_wins_over_a_prefixed_span_name() {
    let got = calls(vec![
        span(1, None, "agent", (0, 100), &[]),
        // A vendor's marker on the AI SDK's tool span, renamed with a prefix.
        span(
            2,
            Some(1),
            "ai.tool moor_boat",
            (10, 20),
            &[
                ("acme.span.type", "TOOL"),
                ("ai.toolCall.name", "moor_boat"),
                ("acme.span.input", r#"{"berth": 3}"#),
                ("acme.span.output", r#"{"moored": true}"#),
            ],
        ),
        // Near miss: without the key the span name's reading stands.
        span(
            3,
            Some(1),
            "ai.tool moor_boat",
            (30, 40),
            &[
                ("acme.span.type", "TOOL"),
                ("acme.span.input", r#"{"berth": 4}"#),
                ("acme.span.output", r#"{"moored": false}"#),
            ],
        ),
    ]);
    assert_eq!(
        got,
        vec![
            call(
                "moor_boat",
                json!({"berth": 3}),
                json!({"moored": true}),
                "tool-kind"
            ),
            call(
                "ai.tool moor_boat",
                json!({"berth": 4}),
                json!({"moored": false}),
                "tool-kind"
            ),
        ]
    );
}
