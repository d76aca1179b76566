//! Extraction on hand-built spans shaped like the variants of
//! docs/conventions.md that are not in the copied corpus
//! (other library versions and modes).

use std::sync::Arc;

use opentelemetry_proto::tonic::common::v1::{any_value, AnyValue, InstrumentationScope, KeyValue};
use opentelemetry_proto::tonic::trace::v1::{span::Event, Status};
use serde_json::json;

use super::rules::{CondSpec, RuleSpec, SourceSpec};
use super::*;
use crate::assemble::{SpanRecord, Trace, TraceId};

fn kv(key: &str, v: &str) -> KeyValue {
    KeyValue {
        key: key.to_string(),
        value: Some(AnyValue {
            value: Some(any_value::Value::StringValue(v.to_string())),
        }),
        ..Default::default()
    }
}

struct S {
    rec: SpanRecord,
}

fn span(id: u8, parent: Option<u8>, name: &str, start: u64, attrs: &[(&str, &str)]) -> S {
    let attributes = attrs.iter().map(|(k, v)| kv(k, v)).collect();
    S {
        rec: super::test_support::span_of(id, parent, name, (start, start + 10), attributes),
    }
}

impl S {
    fn scope(mut self, name: &str) -> S {
        self.rec.scope = Arc::new(InstrumentationScope {
            name: name.to_string(),
            ..Default::default()
        });
        self
    }
    fn event(mut self, name: &str, attrs: &[(&str, &str)]) -> S {
        self.rec.span.events.push(Event {
            name: name.to_string(),
            attributes: attrs.iter().map(|(k, v)| kv(k, v)).collect(),
            ..Default::default()
        });
        self
    }
    fn error(mut self, message: &str) -> S {
        self.rec.span.status = Some(Status {
            code: 2,
            message: message.to_string(),
        });
        self
    }
    fn end(mut self, end: u64) -> S {
        self.rec.span.end_time_unix_nano = end;
        self
    }
}

fn trace(spans: Vec<S>) -> Trace {
    Trace::new(
        TraceId([1; 16]),
        spans.into_iter().map(|s| s.rec).collect(),
        0,
    )
}

fn names_args(calls: &[ToolCall]) -> Vec<(String, Option<Value>)> {
    calls
        .iter()
        .map(|c| (c.name.clone(), c.args.value().cloned()))
        .collect()
}

const TOOL: (&str, &str) = ("gen_ai.operation.name", "execute_tool");

#[test]
fn adk_merged_tools_summary_is_skipped() {
    // Schema 2 and schema 1 both add the summary span after parallel calls.
    let t = trace(vec![
        span(
            1,
            None,
            "invoke_agent a",
            0,
            &[
                ("gen_ai.operation.name", "invoke_agent"),
                ("gen_ai.agent.name", "a"),
            ],
        ),
        span(
            2,
            Some(1),
            "execute_tool get_weather",
            10,
            &[
                TOOL,
                ("gen_ai.tool.name", "get_weather"),
                ("gen_ai.tool.call.arguments", r#"{"city":"Paris"}"#),
            ],
        ),
        span(
            3,
            Some(1),
            "execute_tool get_weather",
            11,
            &[
                TOOL,
                ("gen_ai.tool.name", "get_weather"),
                ("gen_ai.tool.call.arguments", r#"{"city":"London"}"#),
            ],
        ),
        span(
            4,
            Some(1),
            "execute_tool (merged)",
            12,
            &[
                TOOL,
                ("gen_ai.tool.name", "(merged tools)"),
                ("gcp.vertex.agent.tool_response", "[1, 2]"),
            ],
        ),
    ]);
    let calls = Extractor::default().extract(&t);
    assert_eq!(
        names_args(&calls),
        vec![
            ("get_weather".into(), Some(json!({"city": "Paris"}))),
            ("get_weather".into(), Some(json!({"city": "London"}))),
        ]
    );
}

#[test]
fn adk_schema_1_args_results_invocation_and_errors() {
    let t = trace(vec![
        span(1, None, "invocation", 0, &[]).scope("gcp.vertex.agent"),
        span(
            2,
            Some(1),
            "invoke_agent demo_agent",
            1,
            &[
                ("gen_ai.operation.name", "invoke_agent"),
                ("gen_ai.agent.name", "demo_agent"),
            ],
        )
        .scope("gcp.vertex.agent"),
        span(
            3,
            Some(2),
            "call_llm",
            2,
            &[("gcp.vertex.agent.session_id", "s-1")],
        )
        .scope("gcp.vertex.agent"),
        span(
            4,
            Some(2),
            "execute_tool get_weather",
            3,
            &[
                TOOL,
                ("gen_ai.tool.name", "get_weather"),
                ("gcp.vertex.agent.tool_call_args", r#"{"city": "Oslo"}"#),
                ("gcp.vertex.agent.tool_response", r#"{"weather": "rain"}"#),
                ("gcp.vertex.agent.llm_request", "{}"),
            ],
        )
        .scope("gcp.vertex.agent"),
        span(
            5,
            Some(2),
            "execute_tool get_stock_price",
            4,
            &[
                TOOL,
                ("gen_ai.tool.name", "get_stock_price"),
                ("gen_ai.tool.call.id", "<not specified>"),
                ("gcp.vertex.agent.tool_call_args", r#"{"ticker": "XXXX"}"#),
                ("error.type", "ValueError"),
            ],
        )
        .error("ValueError: Unknown ticker: XXXX")
        .event(
            "exception",
            &[
                ("exception.type", "ValueError"),
                ("exception.message", "Unknown ticker: XXXX"),
            ],
        )
        .event(
            "exception",
            &[
                ("exception.type", "ValueError"),
                ("exception.message", "Unknown ticker: XXXX"),
            ],
        ),
    ]);
    let a = Extractor::default().analyze(&t);
    assert_eq!(
        names_args(&a.calls),
        vec![
            ("get_weather".into(), Some(json!({"city": "Oslo"}))),
            ("get_stock_price".into(), Some(json!({"ticker": "XXXX"}))),
        ]
    );
    assert_eq!(
        a.calls[0].result.as_ref().map(super::CallResult::to_value),
        Some(json!({"weather": "rain"}))
    );
    let err = &a.calls[1];
    assert_eq!(err.status, CallStatus::Error);
    assert_eq!(
        err.error_message.as_deref(),
        Some("ValueError: Unknown ticker: XXXX")
    );
    assert_eq!(err.error_type.as_deref(), Some("ValueError"));
    let runs: Vec<&str> = a.runs.iter().map(|r| r.name.as_str()).collect();
    assert_eq!(runs, vec!["invocation", "demo_agent"]);
    assert_eq!(
        a.calls[0].agent.as_ref().map(|r| r.name.as_str()),
        Some("demo_agent")
    );
    assert_eq!(
        crate::assemble::session::session_of(&t, &crate::assemble::session::default_keys()),
        Some(("gcp.vertex.agent.session_id".into(), "s-1".into()))
    );
}

#[test]
fn pydantic_ai_v2_names() {
    let t = trace(vec![
        span(
            1,
            None,
            "agent run",
            0,
            &[
                ("agent_name", "demo_agent"),
                ("gen_ai.conversation.id", "c-1"),
            ],
        ),
        span(
            2,
            Some(1),
            "running tool",
            5,
            &[
                TOOL,
                ("gen_ai.tool.name", "get_weather"),
                ("gen_ai.tool.call.id", "call_1"),
                ("tool_arguments", r#"{"city":"Paris"}"#),
                ("tool_response", "18C"),
                ("logfire.msg", "running tool: get_weather"),
            ],
        ),
        // Without `gen_ai.tool.name` the name still comes from `logfire.msg`,
        // never from the generic span name.
        span(
            3,
            Some(1),
            "running tool",
            6,
            &[
                TOOL,
                ("tool_arguments", "{}"),
                ("logfire.msg", "running tool: noop"),
            ],
        ),
    ]);
    let a = Extractor::default().analyze(&t);
    assert_eq!(
        names_args(&a.calls),
        vec![
            ("get_weather".into(), Some(json!({"city": "Paris"}))),
            ("noop".into(), Some(json!({}))),
        ]
    );
    assert_eq!(
        a.calls[0].result.as_ref().map(super::CallResult::to_value),
        Some(json!("18C"))
    );
    assert_eq!(a.runs.len(), 1);
    assert_eq!(a.runs[0].name, "demo_agent");
    assert_eq!(a.runs[0].convention, "pydantic-ai-agent");
}

#[test]
fn strands_default_and_latest() {
    let t = trace(vec![
        span(
            1,
            None,
            "invoke_agent demo",
            0,
            &[
                ("gen_ai.operation.name", "invoke_agent"),
                ("gen_ai.agent.name", "demo"),
            ],
        ),
        span(2, Some(1), "execute_event_loop_cycle", 1, &[]),
        // default: arguments and result only in events
        span(
            3,
            Some(2),
            "execute_tool get_weather",
            2,
            &[
                TOOL,
                ("gen_ai.tool.name", "get_weather"),
                ("gen_ai.tool.json_schema", r#"{"properties":{"city":{}}}"#),
                ("gen_ai.tool.status", "success"),
            ],
        )
        .event(
            "gen_ai.tool.message",
            &[
                ("role", "tool"),
                ("content", r#"{"city": "Paris"}"#),
                ("id", "t1"),
            ],
        )
        .event(
            "gen_ai.choice",
            &[
                ("message", r#"[{"text": "{\"weather\": \"sun\"}"}]"#),
                ("id", "t1"),
            ],
        ),
        // latest: attributes, result as content blocks
        span(
            4,
            Some(2),
            "execute_tool get_weather",
            3,
            &[
                TOOL,
                ("gen_ai.tool.name", "get_weather"),
                ("gen_ai.tool.call.arguments", r#"{"city": "London"}"#),
                (
                    "gen_ai.tool.call.result",
                    r#"[{"text": "{\"city\": \"London\", \"weather\": \"rain\"}"}]"#,
                ),
            ],
        ),
        // an error marked only by Strands' own status
        span(
            5,
            Some(2),
            "execute_tool get_stock_price",
            4,
            &[
                TOOL,
                ("gen_ai.tool.name", "get_stock_price"),
                ("gen_ai.tool.call.arguments", r#"{"ticker": "X"}"#),
                ("gen_ai.tool.status", "error"),
            ],
        ),
    ]);
    let calls = Extractor::default().extract(&t);
    assert_eq!(
        names_args(&calls),
        vec![
            ("get_weather".into(), Some(json!({"city": "Paris"}))),
            ("get_weather".into(), Some(json!({"city": "London"}))),
            ("get_stock_price".into(), Some(json!({"ticker": "X"}))),
        ]
    );
    assert_eq!(
        calls[0].result.as_ref().map(super::CallResult::to_value),
        Some(json!({"weather": "sun"}))
    );
    assert_eq!(
        calls[1].result.as_ref().map(super::CallResult::to_value),
        Some(json!({"city": "London", "weather": "rain"}))
    );
    assert_eq!(calls[2].status, CallStatus::Error);
    assert!(calls
        .iter()
        .all(|c| c.agent.as_ref().is_some_and(|a| a.name == "demo")));
}

#[test]
fn openinference_genai_mode_single_and_multi_argument_tools() {
    // Both markers on one span; arguments only in `input.value`; the result
    // is LangChain's ToolMessage envelope.
    let envelope = r#"{"type": "tool", "data": {"content": "{\"weather\": \"sun\"}", "tool_call_id": "call_1"}}"#;
    let t = trace(vec![
        span(
            1,
            None,
            "agent",
            0,
            &[
                ("openinference.span.kind", "AGENT"),
                ("gen_ai.operation.name", "invoke_agent"),
            ],
        ),
        span(
            2,
            Some(1),
            "ChatModel",
            1,
            &[
                ("openinference.span.kind", "LLM"),
                ("gen_ai.operation.name", "chat"),
                (
                    "gen_ai.output.messages",
                    r#"[{"role":"assistant","parts":[{"type":"tool_call","id":"call_1","name":"get_weather","arguments":{"city":"Paris"}}]}]"#,
                ),
            ],
        ),
        span(
            3,
            Some(1),
            "get_weather",
            2,
            &[
                ("openinference.span.kind", "TOOL"),
                TOOL,
                ("gen_ai.tool.name", "get_weather"),
                ("gen_ai.tool.type", "function"),
                ("tool.name", "get_weather"),
                ("input.value", "Paris"),
                ("gen_ai.tool.call.result", envelope),
            ],
        ),
        span(
            4,
            Some(1),
            "convert",
            3,
            &[
                ("openinference.span.kind", "TOOL"),
                TOOL,
                ("gen_ai.tool.name", "convert"),
                ("input.value", r#"{"amount": 1, "src": "EUR"}"#),
                ("input.mime_type", "application/json"),
            ],
        ),
        // No request for this bare value: it stays as recorded.
        span(
            5,
            Some(1),
            "lookup",
            4,
            &[
                ("openinference.span.kind", "TOOL"),
                TOOL,
                ("gen_ai.tool.name", "lookup"),
                ("input.value", "xyz"),
            ],
        ),
    ]);
    let calls = Extractor::default().extract(&t);
    assert_eq!(
        names_args(&calls),
        vec![
            ("get_weather".into(), Some(json!({"city": "Paris"}))),
            ("convert".into(), Some(json!({"amount": 1, "src": "EUR"}))),
            ("lookup".into(), Some(json!("xyz"))),
        ]
    );
    assert_eq!(calls[0].convention, "otel-genai");
    assert_eq!(
        calls[0].result.as_ref().map(super::CallResult::to_value),
        Some(json!({"weather": "sun"}))
    );
}

#[test]
fn two_conventions_on_one_span_count_once() {
    // LangSmith sets both its kind and the GenAI operation; Traceloop tool
    // spans also carry `gen_ai.tool.name`; OpenInference + MLflow markers.
    let t = trace(vec![
        span(
            1,
            None,
            "search",
            0,
            &[
                ("langsmith.span.kind", "tool"),
                TOOL,
                ("gen_ai.prompt", r#"{"q": "x"}"#),
                ("gen_ai.completion", r#"{"output": [1, 2]}"#),
            ],
        ),
        span(
            2,
            None,
            "lookup.tool",
            1,
            &[
                ("traceloop.span.kind", "tool"),
                ("traceloop.entity.name", "lookup"),
                ("gen_ai.tool.name", "lookup"),
                (
                    "traceloop.entity.input",
                    r#"{"args": [], "kwargs": {"id": 7}}"#,
                ),
            ],
        ),
        span(
            3,
            None,
            "fetch",
            2,
            &[
                ("openinference.span.kind", "TOOL"),
                ("mlflow.spanType", "\"TOOL\""),
                ("input.value", r#"{"u": 1}"#),
                ("input.mime_type", "application/json"),
            ],
        ),
    ]);
    let calls = Extractor::default().extract(&t);
    assert_eq!(
        names_args(&calls),
        vec![
            ("search".into(), Some(json!({"q": "x"}))),
            ("lookup".into(), Some(json!({"id": 7}))),
            ("fetch".into(), Some(json!({"u": 1}))),
        ]
    );
    assert_eq!(
        calls[0].result.as_ref().map(super::CallResult::to_value),
        Some(json!([1, 2]))
    );
    let conventions: Vec<&str> = calls.iter().map(|c| c.convention.as_str()).collect();
    assert_eq!(
        conventions,
        vec!["otel-genai", "traceloop", "openinference"]
    );
}

#[test]
fn langsmith_retriever_only_with_the_flag() {
    let t = trace(vec![span(
        1,
        None,
        "kb_search",
        0,
        &[
            ("langsmith.span.kind", "retriever"),
            ("gen_ai.operation.name", "embeddings"),
            ("gen_ai.prompt", r#"{"query": "login"}"#),
        ],
    )]);
    let off = Extractor::default().analyze(&t);
    assert!(off.calls.is_empty());
    assert_eq!(off.retrievers.len(), 1);
    assert!(off.retrievers[0].retriever);
    let on = Extractor::default().with_retrievers(true).extract(&t);
    assert_eq!(
        names_args(&on),
        vec![("kb_search".into(), Some(json!({"query": "login"})))]
    );
    assert!(on[0].retriever);
}

#[test]
fn children_ending_after_parents_keep_their_nesting() {
    // A child that ends after its parent (JS timers) is still its child;
    // nesting follows parent links, order follows start times.
    let t = trace(vec![
        span(
            1,
            None,
            "ai.generateText",
            0,
            &[
                ("ai.operationId", "ai.generateText"),
                ("ai.telemetry.functionId", "outer"),
            ],
        )
        .end(100),
        span(
            2,
            Some(1),
            "ai.toolCall",
            10,
            &[
                ("ai.toolCall.name", "plan"),
                ("ai.toolCall.args", r#"{"d":"x"}"#),
            ],
        )
        .end(150),
        span(
            3,
            Some(2),
            "ai.generateText",
            20,
            &[
                ("ai.operationId", "ai.generateText"),
                ("ai.telemetry.functionId", "inner"),
            ],
        )
        .end(160),
        span(
            4,
            Some(3),
            "ai.toolCall",
            30,
            &[("ai.toolCall.name", "get"), ("ai.toolCall.args", "{}")],
        )
        .end(170),
        span(
            5,
            Some(1),
            "ai.toolCall",
            40,
            &[("ai.toolCall.name", "fmt"), ("ai.toolCall.args", "{}")],
        )
        .end(101),
    ]);
    let x = Extractor::default();
    let a = x.analyze(&t);
    let got: Vec<(&str, usize, &str)> = a
        .calls
        .iter()
        .map(|c| {
            (
                c.name.as_str(),
                c.depth,
                c.agent.as_ref().map_or("", |r| r.name.as_str()),
            )
        })
        .collect();
    assert_eq!(
        got,
        vec![
            ("plan", 0, "outer"),
            ("get", 1, "inner"),
            ("fmt", 0, "outer")
        ]
    );
    assert_eq!(a.runs[1].within, Some(SpanId([2; 8])));
    assert_eq!(a.runs[1].depth, 1);
    let top: Vec<String> = x
        .with_scope(Scope::TopLevel)
        .extract(&t)
        .into_iter()
        .map(|c| c.name)
        .collect();
    assert_eq!(top, vec!["plan", "fmt"]);
}

#[test]
fn galtea_double_exception_and_langfuse_vendor_error() {
    let t = trace(vec![
        span(
            1,
            None,
            "get_stock_price",
            0,
            &[
                ("galtea.trace.type", "TOOL"),
                ("galtea.trace.input", r#"{"ticker":"X"}"#),
                ("galtea.trace.error", "Unknown ticker: X"),
            ],
        )
        .error("ValueError: Unknown ticker: X")
        .event(
            "exception",
            &[
                ("exception.type", "ValueError"),
                ("exception.message", "Unknown ticker: X"),
            ],
        )
        .event(
            "exception",
            &[
                ("exception.type", "ValueError"),
                ("exception.message", "Unknown ticker: X"),
            ],
        ),
        // Langfuse: no exception event, status may be unset; the level says it.
        span(
            2,
            None,
            "get_stock_price",
            1,
            &[
                ("langfuse.observation.type", "tool"),
                (
                    "langfuse.observation.input",
                    r#"{"args": [], "kwargs": {"ticker": "Y"}}"#,
                ),
                ("langfuse.observation.level", "ERROR"),
                ("langfuse.observation.status_message", "Unknown ticker: Y"),
            ],
        ),
    ]);
    let calls = Extractor::default().extract(&t);
    assert_eq!(calls.len(), 2);
    assert_eq!(calls[0].error_message.as_deref(), Some("Unknown ticker: X"));
    assert_eq!(calls[0].error_type.as_deref(), Some("ValueError"));
    assert_eq!(calls[1].status, CallStatus::Error);
    assert_eq!(calls[1].error_message.as_deref(), Some("Unknown ticker: Y"));
}

#[test]
fn positional_arguments_named_from_a_generation() {
    let t = trace(vec![
        span(
            1,
            None,
            "llm",
            0,
            &[
                ("langfuse.observation.type", "generation"),
                (
                    "langfuse.observation.output",
                    r#"{"role": "assistant", "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "convert", "arguments": "{\"amount\": 100, \"src\": \"EUR\", \"dst\": \"USD\"}"}}]}"#,
                ),
            ],
        ),
        span(
            2,
            None,
            "convert",
            1,
            &[
                ("langfuse.observation.type", "tool"),
                (
                    "langfuse.observation.input",
                    r#"{"args": [100, "EUR"], "kwargs": {"dst": "USD"}}"#,
                ),
            ],
        ),
        span(
            3,
            None,
            "convert",
            2,
            &[
                ("langfuse.observation.type", "tool"),
                (
                    "langfuse.observation.input",
                    r#"{"args": [5, "GBP"], "kwargs": {}}"#,
                ),
            ],
        ),
    ]);
    let calls = Extractor::default().extract(&t);
    assert_eq!(
        names_args(&calls),
        vec![
            (
                "convert".into(),
                Some(json!({"amount": 100, "src": "EUR", "dst": "USD"}))
            ),
            // No matching request: positional arguments are kept, never dropped.
            ("convert".into(), Some(json!({"args": [5, "GBP"]}))),
        ]
    );
}

#[test]
fn user_rule_overrides_a_builtin_and_adds_a_convention() {
    // A user `mlflow` rule replaces the built-in one (here: names from
    // `mlflow.spanFunctionName`), and an in-house convention is added.
    let user = vec![
        RuleSpec {
            name: "mlflow".into(),
            priority: 30,
            when: vec![CondSpec {
                attr: Some("mlflow.spanType".into()),
                equals: Some("TOOL".into()),
                json: true,
                ..CondSpec::default()
            }],
            name_from: vec![SourceSpec {
                attr: Some("mlflow.spanFunctionName".into()),
                decode: rules::Decode::Json,
                ..SourceSpec::default()
            }],
            ..RuleSpec::default()
        },
        RuleSpec {
            name: "acme".into(),
            priority: 1,
            when: vec![CondSpec::span_name_matches("^tool:")],
            name_from: vec![SourceSpec {
                span_name: true,
                pattern: Some("^tool:(.+)$".into()),
                ..SourceSpec::default()
            }],
            args: vec![SourceSpec {
                attr: Some("acme.args".into()),
                decode: rules::Decode::Json,
                ..SourceSpec::default()
            }],
            ..RuleSpec::default()
        },
    ];
    let x = Extractor::new(&rules::merge(rules::builtin(), &user, &[])).unwrap();
    let t = trace(vec![
        span(
            1,
            None,
            "wrapper",
            0,
            &[
                ("mlflow.spanType", "\"TOOL\""),
                ("mlflow.spanFunctionName", "\"real_fn\""),
            ],
        ),
        span(2, None, "tool:lookup", 1, &[("acme.args", r#"{"id": 3}"#)]),
    ]);
    let calls = x.extract(&t);
    assert_eq!(calls[0].convention, "mlflow");
    assert_eq!(calls[0].name, "real_fn");
    assert_eq!(calls[1].name, "lookup");
    assert_eq!(calls[1].args.value(), Some(&json!({"id": 3})));
    assert_eq!(x.rules()[0].name(), "acme");
}

/// Results are kept as the JSON text they came as (key order and all),
/// except text with line breaks (it would split a JSONL row) and non-JSON.
#[test]
fn results_pass_through_as_json_text() {
    let call = |id: u8, result: &str| {
        span(
            id,
            None,
            "execute_tool t",
            u64::from(id),
            &[
                TOOL,
                ("gen_ai.tool.name", "t"),
                ("gen_ai.tool.call.result", result),
            ],
        )
    };
    let t = trace(vec![
        call(1, r#"{"zone": "eu", "age": 3}"#),
        call(2, "{\n  \"b\": 1\n}"),
        call(3, "not json"),
    ]);
    let calls = Extractor::default().extract(&t);
    let row = |i: usize| serde_json::to_string(&calls[i].result).unwrap();
    assert_eq!(row(0), r#"{"zone": "eu", "age": 3}"#);
    assert_eq!(row(1), r#"{"b":1}"#);
    assert_eq!(row(2), r#""not json""#);
    assert!(matches!(calls[0].result, Some(CallResult::Json(_))));
    assert_eq!(
        calls[0].result.as_ref().map(CallResult::to_value),
        Some(json!({"age": 3, "zone": "eu"}))
    );
}
