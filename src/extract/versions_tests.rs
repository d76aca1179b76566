//! Extraction on hand-built spans shaped like the output of framework
//! versions the corpus does not cover (docs/conventions.md, "Framework
//! versions added in issue 12"), and `Extractor::explain` on them.

use opentelemetry_proto::tonic::common::v1::{any_value, AnyValue, KeyValue};
use opentelemetry_proto::tonic::trace::v1::Status;
use serde_json::{json, Value};

use super::explain::Reason;
use super::rules::{self, Kind};
use super::{CallResult, CallStatus, Extractor, ToolCall};
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

fn span(id: u8, parent: Option<u8>, name: &str, attrs: &[(&str, &str)]) -> SpanRecord {
    // Start order is span order.
    let start = u64::from(id) * 100;
    let attributes = attrs.iter().map(|(k, v)| kv(k, v)).collect();
    super::test_support::span_of(id, parent, name, (start, start + 50), attributes)
}

fn failed(mut s: SpanRecord, message: &str) -> SpanRecord {
    s.span.status = Some(Status {
        code: 2,
        message: message.to_string(),
    });
    s
}

fn trace(spans: Vec<SpanRecord>) -> Trace {
    Trace::new(TraceId([7; 16]), spans, 0)
}

fn names_args(calls: &[ToolCall]) -> Vec<(String, Option<Value>)> {
    calls
        .iter()
        .map(|c| (c.name.clone(), c.args.value().cloned()))
        .collect()
}

fn result(c: &ToolCall) -> Option<Value> {
    c.result.as_ref().map(CallResult::to_value)
}

/// The built-in table without the named rules (to show a test needs them).
fn without(names: &[&str]) -> Extractor {
    let disable: Vec<String> = names.iter().map(|n| n.to_string()).collect();
    Extractor::new(&rules::merge(rules::builtin(), &[], &disable)).unwrap()
}

/// pydantic-ai data format v2 (`running tool`, `tool_arguments`) as it was
/// written before the tool span got `gen_ai.operation.name`.
fn pydantic_v2() -> Trace {
    trace(vec![
        span(
            1,
            None,
            "agent run",
            &[
                ("model_name", "gpt-4o"),
                ("agent_name", "demo"),
                ("logfire.msg", "demo run"),
            ],
        ),
        span(
            2,
            Some(1),
            "chat gpt-4o",
            &[
                ("gen_ai.operation.name", "chat"),
                ("gen_ai.system", "openai"),
                ("gen_ai.request.model", "gpt-4o"),
                (
                    "model_request_parameters",
                    r#"{"function_tools":[{"name":"get_weather"}]}"#,
                ),
            ],
        ),
        // The parent of parallel calls names them all, but is not a call.
        span(
            3,
            Some(1),
            "running tools",
            &[("tools", "get_weather"), ("logfire.msg", "running 2 tools")],
        ),
        span(
            4,
            Some(3),
            "running tool",
            &[
                ("gen_ai.tool.name", "get_weather"),
                ("gen_ai.tool.call.id", "call_1"),
                ("tool_arguments", r#"{"city":"Paris"}"#),
                ("logfire.msg", "running tool: get_weather"),
                (
                    "logfire.json_schema",
                    r#"{"type":"object","properties":{"tool_arguments":{"type":"object"},"tool_response":{"type":"object"},"gen_ai.tool.name":{},"gen_ai.tool.call.id":{}}}"#,
                ),
                ("tool_response", r#"{"weather":"sun"}"#),
            ],
        ),
        span(
            5,
            Some(3),
            "running tool",
            &[
                ("gen_ai.tool.name", "get_weather"),
                ("gen_ai.tool.call.id", "call_2"),
                ("tool_arguments", r#"{"city":"London"}"#),
                ("logfire.msg", "running tool: get_weather"),
            ],
        ),
        span(
            6,
            Some(1),
            "running output function",
            &[
                ("gen_ai.tool.name", "final_result"),
                ("gen_ai.tool.call.id", "call_3"),
                ("logfire.msg", "running output function: final_result"),
                ("tool_arguments", r#"{"answer":"sunny"}"#),
            ],
        ),
    ])
}

/// pydantic-ai data format v3 (`execute_tool {name}`, `gen_ai.tool.call.*`)
/// before the operation name was added to tool and agent spans.
fn pydantic_v3() -> Trace {
    trace(vec![
        span(
            1,
            None,
            "invoke_agent demo",
            &[
                ("model_name", "gpt-4o"),
                ("agent_name", "demo"),
                ("gen_ai.agent.name", "demo"),
                ("logfire.msg", "demo run"),
            ],
        ),
        span(
            2,
            Some(1),
            "chat gpt-4o",
            &[
                ("gen_ai.operation.name", "chat"),
                ("gen_ai.request.model", "gpt-4o"),
                ("gen_ai.tool.definitions", r#"[{"name":"get_weather"}]"#),
            ],
        ),
        failed(
            span(
                3,
                Some(1),
                "execute_tool get_stock_price",
                &[
                    ("gen_ai.tool.name", "get_stock_price"),
                    ("gen_ai.tool.call.id", "call_1"),
                    ("gen_ai.tool.call.arguments", r#"{"ticker":"acme"}"#),
                    ("logfire.msg", "running tool: get_stock_price"),
                    (
                        "gen_ai.tool.call.result",
                        "Ticker must be upper-case, e.g. ACME",
                    ),
                ],
            ),
            "ToolRetryError: Ticker must be upper-case, e.g. ACME",
        ),
        span(
            4,
            Some(1),
            "execute_tool get_stock_price",
            &[
                ("gen_ai.tool.name", "get_stock_price"),
                ("gen_ai.tool.call.id", "call_2"),
                ("gen_ai.tool.call.arguments", r#"{"ticker":"ACME"}"#),
                ("logfire.msg", "running tool: get_stock_price"),
                ("gen_ai.tool.call.result", "123.45"),
            ],
        ),
    ])
}

#[test]
fn pydantic_ai_before_the_operation_name() {
    let x = Extractor::default();
    let a = x.analyze(&pydantic_v2());
    assert_eq!(
        names_args(&a.calls),
        vec![
            ("get_weather".into(), Some(json!({"city": "Paris"}))),
            ("get_weather".into(), Some(json!({"city": "London"}))),
            ("final_result".into(), Some(json!({"answer": "sunny"}))),
        ]
    );
    assert!(a.calls.iter().all(|c| c.convention == "pydantic-ai-legacy"));
    assert_eq!(result(&a.calls[0]), Some(json!({"weather": "sun"})));
    assert!(a
        .calls
        .iter()
        .all(|c| c.agent.as_ref().is_some_and(|r| r.name == "demo")));

    let a = x.analyze(&pydantic_v3());
    assert_eq!(
        names_args(&a.calls),
        vec![
            ("get_stock_price".into(), Some(json!({"ticker": "acme"}))),
            ("get_stock_price".into(), Some(json!({"ticker": "ACME"}))),
        ]
    );
    assert_eq!(a.calls[0].status, CallStatus::Error);
    assert_eq!(a.calls[1].status, CallStatus::Ok);
    assert_eq!(result(&a.calls[1]), Some(json!(123.45)));
    assert_eq!(a.runs.len(), 1);
    assert_eq!(a.runs[0].convention, "pydantic-ai-agent-legacy");
    assert_eq!(
        a.calls[0].agent.as_ref().map(|r| r.name.as_str()),
        Some("demo")
    );

    // Without the rule (and the generic fallback) these traces have no call.
    let bare = without(&["pydantic-ai-legacy", "otel-genai-no-operation"]);
    assert!(bare.extract(&pydantic_v2()).is_empty());
    assert!(bare.extract(&pydantic_v3()).is_empty());
}

#[test]
fn otel_genai_spans_without_an_operation_name() {
    let t = trace(vec![
        span(
            1,
            None,
            "agent",
            &[("gen_ai.agent.name", "helper"), ("gen_ai.system", "openai")],
        ),
        // Model calls that name tools: never a call.
        span(
            2,
            Some(1),
            "chat gpt-4o",
            &[
                ("gen_ai.operation.name", "chat"),
                ("gen_ai.tool.name", "lookup"),
            ],
        ),
        span(
            3,
            Some(1),
            "llm",
            &[
                ("gen_ai.tool.definitions", r#"[{"name":"lookup"}]"#),
                ("gen_ai.tool.name", "lookup"),
            ],
        ),
        span(
            4,
            Some(1),
            "llm",
            &[
                ("llm.tools", r#"[{"name":"lookup"}]"#),
                ("gen_ai.tool.name", "lookup"),
            ],
        ),
        span(
            5,
            Some(1),
            "completion",
            &[
                ("gen_ai.request.model", "gpt-4o"),
                ("gen_ai.tool.name", "lookup"),
            ],
        ),
        // The tool calls.
        span(
            6,
            Some(1),
            "lookup",
            &[
                ("gen_ai.tool.name", "lookup"),
                ("gen_ai.tool.call.id", "c1"),
                ("gen_ai.tool.call.arguments", r#"{"id": 7}"#),
                ("gen_ai.tool.call.result", r#"{"found": true}"#),
            ],
        ),
        span(
            7,
            Some(1),
            "tool",
            &[
                ("gen_ai.tool.name", "search"),
                ("input.value", r#"{"q": "otel"}"#),
            ],
        ),
        // Two conventions on one span: one call, from the specific rule.
        span(
            8,
            Some(1),
            "search",
            &[
                ("openinference.span.kind", "TOOL"),
                ("tool.name", "search"),
                ("gen_ai.tool.name", "search"),
                ("input.value", r#"{"q": "rust"}"#),
                ("input.mime_type", "application/json"),
            ],
        ),
        // Google ADK's summary span, here without its operation name.
        span(
            9,
            Some(1),
            "execute_tool (merged)",
            &[("gen_ai.tool.name", "(merged tools)")],
        ),
        // The same summary span typed a tool by a vendor's kind key
        // (HoneyHive's `honeyhive_event_type = tool` over OpenInference's ADK
        // spans): still no call of the generic tool-kind rule.
        span(
            10,
            Some(1),
            "execute_tool (merged)",
            &[
                ("gen_ai.tool.name", "(merged tools)"),
                ("honeyhive_event_type", "tool"),
                ("honeyhive_inputs.q", "rust"),
            ],
        ),
    ]);
    let calls = Extractor::default().extract(&t);
    assert_eq!(
        names_args(&calls),
        vec![
            ("lookup".into(), Some(json!({"id": 7}))),
            ("search".into(), Some(json!({"q": "otel"}))),
            ("search".into(), Some(json!({"q": "rust"}))),
        ]
    );
    let conventions: Vec<&str> = calls.iter().map(|c| c.convention.as_str()).collect();
    assert_eq!(
        conventions,
        [
            "otel-genai-no-operation",
            "otel-genai-no-operation",
            "openinference"
        ]
    );
    assert_eq!(result(&calls[0]), Some(json!({"found": true})));
    assert_eq!(without(&["otel-genai-no-operation"]).extract(&t).len(), 1);
}

#[test]
fn koog_tool_spans_before_execute_tool() {
    let t = trace(vec![
        span(
            1,
            None,
            "run.5f0c",
            &[
                ("gen_ai.operation.name", "invoke_agent"),
                ("gen_ai.agent.id", "weather-agent"),
                ("gen_ai.conversation.id", "5f0c"),
            ],
        ),
        span(
            2,
            Some(1),
            "node.nodeExecuteTool",
            &[("koog.node.name", "nodeExecuteTool")],
        ),
        span(
            3,
            Some(2),
            "llm.5f0c",
            &[
                ("gen_ai.operation.name", "chat"),
                ("gen_ai.system", "openai"),
                ("gen_ai.request.model", "gpt-4o"),
            ],
        ),
        // Before 0.5: `tool.{Name}`, no operation name, arguments in `input.value`.
        span(
            4,
            Some(2),
            "tool.WeatherTool",
            &[
                ("gen_ai.tool.description", "Current weather"),
                ("gen_ai.tool.name", "WeatherTool"),
                ("gen_ai.tool.call.id", "call_1"),
                ("input.value", r#"{"city":"Paris"}"#),
            ],
        ),
        // 0.5, `verbose = true`: name with the arguments' hash, result too.
        span(
            5,
            Some(2),
            "tool.WeatherTool.args.q1w2e3",
            &[
                ("gen_ai.operation.name", "execute_tool"),
                ("gen_ai.tool.description", "Current weather"),
                ("gen_ai.tool.name", "WeatherTool"),
                ("gen_ai.tool.call.id", "call_2"),
                ("input.value", r#"{"city":"London"}"#),
                ("output.value", r#"{"weather":"rain"}"#),
            ],
        ),
        // 0.5 default: content replaced by a placeholder.
        failed(
            span(
                6,
                Some(2),
                "tool.StockTool.args.z9x8",
                &[
                    ("gen_ai.operation.name", "execute_tool"),
                    ("gen_ai.tool.name", "StockTool"),
                    ("input.value", "HIDDEN:non-empty"),
                    ("error.type", "Unknown ticker"),
                ],
            ),
            "Unknown ticker",
        ),
        // The earliest shape: name and description only.
        span(
            7,
            Some(2),
            "tool.ClockTool",
            &[("gen_ai.tool.name", "ClockTool")],
        ),
    ]);
    let calls = Extractor::default().extract(&t);
    assert_eq!(
        names_args(&calls),
        vec![
            ("WeatherTool".into(), Some(json!({"city": "Paris"}))),
            ("WeatherTool".into(), Some(json!({"city": "London"}))),
            ("StockTool".into(), None),
            ("ClockTool".into(), None),
        ]
    );
    assert!(calls.iter().all(|c| c.convention == "koog"));
    assert_eq!(result(&calls[1]), Some(json!({"weather": "rain"})));
    assert_eq!(calls[2].status, CallStatus::Error);
    assert_eq!(calls[2].error_message.as_deref(), Some("Unknown ticker"));
    // Without the rule the 0.5 span's placeholder would be its arguments.
    let bare = without(&["koog"]).extract(&t);
    assert!(bare
        .iter()
        .any(|c| c.args.value() == Some(&json!("HIDDEN:non-empty"))));
}

#[test]
fn any_agent_arguments_in_gen_ai_tool_args() {
    let t = trace(vec![
        span(
            1,
            None,
            "invoke_agent [search_agent]",
            &[
                ("gen_ai.operation.name", "invoke_agent"),
                ("gen_ai.agent.name", "search_agent"),
            ],
        ),
        span(
            2,
            Some(1),
            "call_llm gpt-4.1-nano",
            &[
                ("gen_ai.operation.name", "call_llm"),
                ("gen_ai.request.model", "gpt-4.1-nano"),
                (
                    "gen_ai.output",
                    r#"[{"tool.name": "search_web", "tool.args": "{\"query\": \"otel\"}"}]"#,
                ),
                ("gen_ai.output.type", "json"),
            ],
        ),
        span(
            3,
            Some(1),
            "execute_tool search_web",
            &[
                ("gen_ai.operation.name", "execute_tool"),
                ("gen_ai.tool.name", "search_web"),
                ("gen_ai.tool.description", "Search the web"),
                ("gen_ai.tool.args", r#"{"query": "otel"}"#),
                ("gen_ai.output", r#"[{"title": "OpenTelemetry"}]"#),
                ("gen_ai.output.type", "json"),
            ],
        ),
        failed(
            span(
                4,
                Some(1),
                "execute_tool visit_webpage",
                &[
                    ("gen_ai.operation.name", "execute_tool"),
                    ("gen_ai.tool.name", "visit_webpage"),
                    ("gen_ai.tool.args", r#"{"url": "http://x.invalid"}"#),
                    ("gen_ai.output", "Error calling tool: unreachable"),
                    ("gen_ai.output.type", "text"),
                ],
            ),
            "Error calling tool: unreachable",
        ),
    ]);
    let calls = Extractor::default().extract(&t);
    assert_eq!(
        names_args(&calls),
        vec![
            ("search_web".into(), Some(json!({"query": "otel"}))),
            (
                "visit_webpage".into(),
                Some(json!({"url": "http://x.invalid"}))
            ),
        ]
    );
    assert!(calls.iter().all(|c| c.convention == "any-agent"));
    assert_eq!(result(&calls[0]), Some(json!([{"title": "OpenTelemetry"}])));
    assert_eq!(calls[1].status, CallStatus::Error);
    assert_eq!(
        calls[1].agent.as_ref().map(|a| a.name.as_str()),
        Some("search_agent")
    );
    // Without the rule otel-genai finds the same calls: its key
    // vocabularies hold `gen_ai.tool.args` and `gen_ai.output`.
    let bare = without(&["any-agent"]).extract(&t);
    assert_eq!(names_args(&bare), names_args(&calls));
    assert_eq!(result(&bare[0]), result(&calls[0]));
}

#[test]
fn openinference_tool_input_without_a_mime_type() {
    let tool = |id: u8, name: &str, extra: &[(&str, &str)]| {
        let mut attrs = vec![("openinference.span.kind", "TOOL"), ("tool.name", name)];
        attrs.extend_from_slice(extra);
        span(id, Some(1), name, &attrs)
    };
    let t = trace(vec![
        span(
            1,
            None,
            "Agent.run",
            &[("openinference.span.kind", "AGENT")],
        ),
        // Older agno: JSON arguments, no mime type; `tool.parameters` holds
        // the same arguments.
        tool(
            2,
            "get_weather",
            &[
                ("tool.description", "Current weather"),
                ("tool.parameters", r#"{"city": "Paris"}"#),
                ("input.value", r#"{"city": "Paris"}"#),
                ("output.value", "sunny"),
                ("output.mime_type", "text/plain"),
            ],
        ),
        // Text that is not a JSON object stays text.
        tool(3, "echo", &[("input.value", "[1, 2]")]),
        // Plain text by mime type: today's behaviour (named by the schema).
        tool(
            4,
            "search",
            &[
                ("input.value", r#"{"q": 1}"#),
                ("input.mime_type", "text/plain"),
                (
                    "tool.parameters",
                    r#"{"properties": {"query": {"type": "string"}}}"#,
                ),
            ],
        ),
    ]);
    let calls = Extractor::default().extract(&t);
    assert_eq!(
        names_args(&calls),
        vec![
            ("get_weather".into(), Some(json!({"city": "Paris"}))),
            ("echo".into(), Some(json!("[1, 2]"))),
            ("search".into(), Some(json!({"query": "{\"q\": 1}"}))),
        ]
    );
    assert_eq!(result(&calls[0]), Some(json!("sunny")));
}

/// openinference-instrumentation-beeai 0.1.0-0.1.6: one span per framework
/// event, under the agent's events, under the run's wrapper span.
fn beeai_events() -> Trace {
    let tool_event = |id: u8, parent: u8, path: &str, n: u8, extra: &[(&str, &str)]| {
        let event = path.rsplit('.').next().unwrap_or_default().to_string();
        let mut attrs: Vec<(&str, String)> = vec![
            ("target", path.to_string()),
            ("name", event),
            ("traceId", "f3a1".to_string()),
            ("openinference.span.kind", "TOOL".to_string()),
        ];
        attrs.extend(extra.iter().map(|(k, v)| (*k, v.to_string())));
        let borrowed: Vec<(&str, &str)> = attrs.iter().map(|(k, v)| (*k, v.as_str())).collect();
        span(id, Some(parent), &format!("{path}-{n}"), &borrowed)
    };
    trace(vec![
        span(
            1,
            None,
            "beeai-framework-main",
            &[
                ("source", "ReActAgent"),
                ("traceId", "f3a1"),
                ("openinference.span.kind", "AGENT"),
                ("beeai.version", "0.1.17"),
                ("input.value", "Weather in Paris and the price of X?"),
                ("output.value", "{'role': 'assistant', 'text': 'Sunny.'}"),
            ],
        ),
        span(
            2,
            Some(1),
            "iteration-1",
            &[
                ("target", "groupId"),
                ("name", "iteration-1"),
                ("openinference.span.kind", "CHAIN"),
            ],
        ),
        span(
            3,
            Some(2),
            "agent.react.start-1",
            &[
                ("target", "agent.react.start"),
                ("name", "start"),
                ("openinference.span.kind", "AGENT"),
            ],
        ),
        span(
            4,
            Some(3),
            "backend.ollama.chat.start-1",
            &[
                ("target", "backend.ollama.chat.start"),
                ("name", "start"),
                ("openinference.span.kind", "LLM"),
                ("llm.provider", "ollama"),
            ],
        ),
        span(
            5,
            Some(2),
            "agent.react.update-1",
            &[
                ("target", "agent.react.update"),
                ("name", "update"),
                ("openinference.span.kind", "AGENT"),
                ("tool.name", "get_weather"),
                ("tool.parameters", r#"{"city": "Paris"}"#),
            ],
        ),
        tool_event(
            6,
            5,
            "tool.custom.get_weather.start",
            1,
            &[("tool.parameters", r#"{"city": "Paris"}"#)],
        ),
        tool_event(
            7,
            5,
            "tool.custom.get_weather.success",
            1,
            &[
                ("tool.parameters", r#"{"city": "Paris"}"#),
                ("output.value", "Sunny, 20C"),
            ],
        ),
        tool_event(8, 5, "tool.custom.get_weather.finish", 1, &[]),
        tool_event(
            9,
            5,
            "tool.custom.get_stock.start",
            1,
            &[("tool.parameters", r#"{"ticker": "X"}"#)],
        ),
        tool_event(
            10,
            5,
            "tool.custom.get_stock.retry",
            1,
            &[("tool.parameters", r#"{"ticker": "X"}"#)],
        ),
        tool_event(
            11,
            5,
            "tool.custom.get_stock.error",
            1,
            &[
                ("tool.parameters", r#"{"ticker": "X"}"#),
                ("exception.message", "Unknown ticker X"),
                ("exception.type", "ToolError"),
            ],
        ),
        tool_event(12, 5, "tool.custom.get_stock.finish", 1, &[]),
    ])
}

#[test]
fn beeai_event_spans_give_one_call_each() {
    let x = Extractor::default();
    let a = x.analyze(&beeai_events());
    assert_eq!(
        names_args(&a.calls),
        vec![
            ("get_weather".into(), Some(json!({"city": "Paris"}))),
            ("get_stock".into(), Some(json!({"ticker": "X"}))),
        ]
    );
    assert_eq!(result(&a.calls[0]), Some(json!("Sunny, 20C")));
    assert_eq!(a.calls[1].status, CallStatus::Error);
    assert_eq!(
        a.calls[1].error_message.as_deref(),
        Some("Unknown ticker X")
    );
    // The agent's own event spans are steps, not runs.
    let runs: Vec<&str> = a.runs.iter().map(|r| r.name.as_str()).collect();
    assert_eq!(runs, ["ReActAgent"]);
    assert!(a
        .calls
        .iter()
        .all(|c| c.agent.as_ref().is_some_and(|r| r.name == "ReActAgent")));
    // Without the rule no event span is a call.
    assert!(without(&["beeai-events"])
        .extract(&beeai_events())
        .is_empty());

    // 0.1.7 and later: one TOOL span per run; its event children (same
    // kind, `metadata.path`) are not calls.
    let t = trace(vec![
        span(
            1,
            None,
            "get_weather",
            &[
                ("openinference.span.kind", "TOOL"),
                ("tool.name", "get_weather"),
                ("input.value", r#"{"city": "Paris"}"#),
                ("input.mime_type", "application/json"),
                ("output.value", "Sunny"),
                ("output.mime_type", "text/plain"),
                ("metadata.class_name", "FunctionTool"),
            ],
        ),
        span(
            2,
            Some(1),
            "start",
            &[
                ("openinference.span.kind", "TOOL"),
                ("input.value", r#"{"input": {"city": "Paris"}}"#),
                ("input.mime_type", "application/json"),
                ("metadata.path", "tool.custom.get_weather.start"),
                ("metadata.id", "e1"),
            ],
        ),
        span(
            3,
            Some(1),
            "finish",
            &[
                ("openinference.span.kind", "TOOL"),
                ("input.mime_type", "application/json"),
                ("metadata.path", "tool.custom.get_weather.finish"),
            ],
        ),
    ]);
    assert_eq!(
        names_args(&x.extract(&t)),
        vec![("get_weather".into(), Some(json!({"city": "Paris"})))]
    );
}

#[test]
fn explain_names_the_matching_rule_and_near_misses() {
    let x = Extractor::default();
    let t = pydantic_v3();
    let rows = x.explain(&t);
    assert_eq!(rows.len(), t.spans.len());
    let by_name = |n: &str| rows.iter().find(|e| e.span_name == n).unwrap();
    let agent = by_name("invoke_agent demo").matched.clone().unwrap();
    assert_eq!(
        (agent.rule.as_str(), agent.kind),
        ("pydantic-ai-agent-legacy", Kind::Agent)
    );
    assert!(!agent.call);
    let tool = rows[2].matched.clone().unwrap();
    assert_eq!(tool.rule, "pydantic-ai-legacy");
    assert_eq!(tool.name.as_deref(), Some("get_stock_price"));
    assert!(tool.call);
    // The model call: no rule, otel-genai closest (wrong operation name).
    let chat = by_name("chat gpt-4o");
    assert!(chat.matched.is_none());
    let first = &chat.near_misses[0];
    assert_eq!(first.rule, "otel-genai");
    assert_eq!(
        first.reasons,
        vec![Reason::WrongValue {
            what: "attribute gen_ai.operation.name".into(),
            found: "chat".into(),
            wants: "`execute_tool`".into(),
        }]
    );
    assert_eq!(
        first.to_string(),
        "otel-genai: attribute gen_ai.operation.name is `chat`, wants `execute_tool`"
    );
    assert!(chat.near_misses.len() <= 3);

    // A span excluded by `unless` is the closest miss of that rule.
    let merged = trace(vec![span(
        1,
        None,
        "execute_tool (merged)",
        &[
            ("gen_ai.operation.name", "execute_tool"),
            ("gen_ai.tool.name", "(merged tools)"),
        ],
    )]);
    let rows = x.explain(&merged);
    let miss = &rows[0].near_misses[0];
    assert_eq!(
        (miss.rule.as_str(), miss.held, miss.of),
        ("otel-genai", 1, 1)
    );
    assert!(
        matches!(&miss.reasons[0], Reason::Excluded { condition } if condition.contains("(merged tools)"))
    );

    // A span that speaks no convention: the main conventions' markers.
    let plain = trace(vec![span(1, None, "GET /", &[("http.method", "GET")])]);
    let rows = x.explain(&plain);
    let rules: Vec<&str> = rows[0]
        .near_misses
        .iter()
        .map(|m| m.rule.as_str())
        .collect();
    assert_eq!(rules, ["otel-genai", "openinference", "mlflow"]);
    assert_eq!(
        rows[0].near_misses[1].to_string(),
        "openinference: missing attribute openinference.span.kind"
    );

    // A rule that matches but finds no name: reported, and not a call.
    let unnamed = trace(vec![span(
        1,
        None,
        "wrapper",
        &[("galtea.trace.type", "TOOL")],
    )]);
    let spec = rules::RuleSpec {
        name: "named-by-attr".into(),
        priority: 1,
        when: vec![rules::CondSpec::attr_equals("galtea.trace.type", "TOOL")],
        name_from: vec![rules::SourceSpec {
            attr: Some("tool.title".into()),
            ..rules::SourceSpec::default()
        }],
        ..rules::RuleSpec::default()
    };
    let custom = Extractor::new(&[spec]).unwrap();
    let m = custom.explain(&unnamed)[0].matched.clone().unwrap();
    assert_eq!((m.name, m.call), (None, false));
    assert!(custom.extract(&unnamed).is_empty());
}

#[test]
fn the_no_calls_hint_names_the_conventions_tried() {
    let x = Extractor::default();
    assert_eq!(x.no_calls_hint(0, 0), None);
    assert_eq!(x.no_calls_hint(5, 1), None);
    let hint = x.no_calls_hint(5, 0).unwrap();
    for needle in [
        "5 span(s)",
        "otel-genai",
        "openinference",
        "koog",
        "inspect --explain",
    ] {
        assert!(hint.contains(needle), "{needle}: {hint}");
    }
    // Retrievers count only when they are calls.
    assert!(!hint.contains("mlflow-retriever"));
    let with = x.with_retrievers(true).no_calls_hint(5, 0).unwrap();
    assert!(with.contains("mlflow-retriever"));
    // Agent rules find no calls.
    assert!(!hint.contains("otel-genai-agent"));
}
