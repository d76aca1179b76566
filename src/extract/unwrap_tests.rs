//! Argument wrappers of issue 30 on hand-built spans shaped as each
//! instrumentation writes them (docs/conventions.md, "Coverage"): the
//! expected arguments are what the tool received.

use serde_json::json;

use super::*;
use crate::assemble::{SpanRecord, Trace, TraceId};

/// One span (id `id`, child of `parent`) with string attributes.
pub(crate) fn span(id: u8, parent: Option<u8>, name: &str, attrs: &[(&str, &str)]) -> SpanRecord {
    let start = u64::from(id) * 100;
    super::tests::sp(id, parent, (start, start + 50), name, attrs)
}

pub(crate) fn trace(spans: Vec<SpanRecord>) -> Trace {
    Trace::new(TraceId([7; 16]), spans, 0)
}

/// `(name, args, result, convention)` of every call.
pub(crate) fn calls(t: &Trace) -> Vec<(String, Value, Value, String)> {
    Extractor::default()
        .extract(t)
        .into_iter()
        .map(|c| {
            (
                c.name,
                c.args.value().cloned().unwrap_or(Value::Null),
                c.result.map_or(Value::Null, |r| r.to_value()),
                c.convention,
            )
        })
        .collect()
}

/// The single call of a one-span trace.
pub(crate) fn one(name: &str, attrs: &[(&str, &str)]) -> (String, Value, Value, String) {
    let mut found = calls(&trace(vec![span(1, None, name, attrs)]));
    assert_eq!(found.len(), 1, "{name}: {found:?}");
    found.remove(0)
}

/// The wrappers `inspect --explain` names for span 1 of `t`.
fn explained(t: &Trace) -> Vec<&'static str> {
    Extractor::default().explain(t)[0]
        .matched
        .as_ref()
        .map(|m| m.args_unwrapped.clone())
        .unwrap_or_default()
}

const LC_INPUT: &str = r#"{"input_str": "{'device_name': 'R1'}", "tags": ["seq:step:1"], "metadata": {"langgraph_node": "tools", "langgraph_step": 2}, "inputs": {"device_name": "R1"}, "kwargs": {"color": "green", "name": "show_interfaces"}}"#;
const LC_OUTPUT: &str = r#"{"output": {"lc": 1, "type": "constructor", "id": ["langchain", "schema", "messages", "ToolMessage"], "kwargs": {"content": "{\"Gi0/1\": \"up\"}", "type": "tool", "name": "show_interfaces", "tool_call_id": "call_1", "status": "success"}}, "kwargs": {"color": "green", "name": "show_interfaces"}}"#;

#[test]
fn openllmetry_langchain_payload_unwraps_to_inputs() {
    // opentelemetry-instrumentation-langchain before the GenAI attributes:
    // `{name}.tool`, the payload in `traceloop.entity.input` only.
    let old = [
        ("traceloop.span.kind", "tool"),
        ("traceloop.entity.name", "show_interfaces"),
        ("traceloop.workflow.name", "LangGraph"),
        ("traceloop.entity.input", LC_INPUT),
        ("traceloop.entity.output", LC_OUTPUT),
    ];
    let (name, args, result, rule) = one("show_interfaces.tool", &old);
    assert_eq!(
        (name.as_str(), rule.as_str()),
        ("show_interfaces", "traceloop")
    );
    assert_eq!(args, json!({"device_name": "R1"}));
    assert_eq!(result, json!({"Gi0/1": "up"}));
    assert_eq!(
        explained(&trace(vec![span(1, None, "show_interfaces.tool", &old)])),
        ["langchain_callback"]
    );

    // Later versions: `execute_tool {name}` with the GenAI attributes, the
    // same payload in both keys.
    let new = [
        ("traceloop.span.kind", "tool"),
        ("traceloop.entity.name", "show_interfaces"),
        ("gen_ai.operation.name", "execute_tool"),
        ("gen_ai.tool.name", "show_interfaces"),
        ("gen_ai.provider.name", "langgraph"),
        ("traceloop.entity.input", LC_INPUT),
        ("gen_ai.tool.call.arguments", LC_INPUT),
        ("traceloop.entity.output", LC_OUTPUT),
        ("gen_ai.tool.call.result", LC_OUTPUT),
    ];
    let (name, args, result, rule) = one("execute_tool show_interfaces", &new);
    assert_eq!(
        (name.as_str(), rule.as_str()),
        ("show_interfaces", "otel-genai")
    );
    assert_eq!(args, json!({"device_name": "R1"}));
    assert_eq!(result, json!({"Gi0/1": "up"}));

    // A single-string tool: `inputs` is the string itself.
    let bare = r#"{"input_str": "Paris", "tags": null, "metadata": null, "inputs": "Paris", "kwargs": {}}"#;
    let out = r#"{"output": "sunny", "kwargs": {}}"#;
    let (_, args, result, _) = one(
        "weather.tool",
        &[
            ("traceloop.span.kind", "tool"),
            ("traceloop.entity.name", "weather"),
            ("traceloop.entity.input", bare),
            ("traceloop.entity.output", out),
        ],
    );
    assert_eq!((args, result), (json!("Paris"), json!("sunny")));
}

/// `tool.parameters` as smolagents' instrumentor writes it: the tool's
/// `inputs` map, in declared order.
const SMOL_INPUTS: &str = r#"{"zone": {"type": "string", "description": "IANA zone"}, "fmt": {"type": "string", "description": "strftime format", "nullable": true}}"#;

fn smol(input: &str) -> [(&'static str, String); 6] {
    [
        ("openinference.span.kind", "TOOL".into()),
        ("input.value", input.into()),
        ("tool.name", "local_time".into()),
        ("tool.description", "Current time in a zone".into()),
        ("tool.parameters", SMOL_INPUTS.into()),
        ("output.value", "12:00".into()),
    ]
}

fn smol_call(input: &str) -> (Value, Vec<&'static str>) {
    let attrs = smol(input);
    let borrowed: Vec<(&str, &str)> = attrs.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let t = trace(vec![span(1, None, "SimpleTool", &borrowed)]);
    let mut found = calls(&t);
    assert_eq!(found.len(), 1);
    let (name, args, result, rule) = found.remove(0);
    assert_eq!(
        (name.as_str(), rule.as_str()),
        ("local_time", "openinference")
    );
    assert_eq!(result, json!("12:00"));
    (args, explained(&t))
}

#[test]
fn smolagents_call_record_unwraps_with_positional_names_from_the_schema() {
    // The agent calls `tool(**arguments)`: keyword arguments only.
    let (args, notes) = smol_call(
        r#"{"args": [], "sanitize_inputs_outputs": true, "kwargs": {"zone": "Europe/Paris", "fmt": "%H:%M"}}"#,
    );
    assert_eq!(args, json!({"zone": "Europe/Paris", "fmt": "%H:%M"}));
    assert_eq!(notes, ["args_kwargs"]);
    // A string answer is passed positionally: named from `tool.parameters`.
    let (args, _) =
        smol_call(r#"{"args": ["Europe/Paris"], "sanitize_inputs_outputs": true, "kwargs": {}}"#);
    assert_eq!(args, json!({"zone": "Europe/Paris"}));
    // One dict of parameters passed positionally is the keyword arguments.
    let (args, _) = smol_call(
        r#"{"args": [{"zone": "Asia/Tokyo"}], "sanitize_inputs_outputs": false, "kwargs": {}}"#,
    );
    assert_eq!(args, json!({"zone": "Asia/Tokyo"}));
    // More values than parameters: kept as a list.
    let (args, _) =
        smol_call(r#"{"args": ["a", "b", "c"], "sanitize_inputs_outputs": true, "kwargs": {}}"#);
    assert_eq!(args, json!({"args": ["a", "b", "c"]}));
}

#[test]
fn openllmetry_fastmcp_tool_call_unwraps_to_its_arguments() {
    // opentelemetry-instrumentation-mcp, FastMCP server: `{tool}.tool` under
    // `mcp.server`, input `{"tool_name", "arguments"}`, output one
    // `{"type": "text", "content"}` item per content block.
    let attrs = [
        ("traceloop.span.kind", "tool"),
        ("traceloop.entity.name", "lookup_flight"),
        ("traceloop.workflow.name", "airline.mcp"),
        (
            "traceloop.entity.input",
            r#"{"tool_name": "lookup_flight", "arguments": {"code": "AF12", "day": "2026-03-04"}}"#,
        ),
        (
            "traceloop.entity.output",
            r#"[{"type": "text", "content": "{\"gate\": \"K41\"}"}]"#,
        ),
    ];
    let server = [
        ("traceloop.span.kind", "server"),
        ("traceloop.entity.name", "mcp.server"),
    ];
    let t = trace(vec![
        span(1, Some(2), "lookup_flight.tool", &attrs),
        span(2, None, "mcp.server", &server),
    ]);
    let found = calls(&t);
    assert_eq!(found.len(), 1, "{found:?}");
    let (name, args, result, rule) = &found[0];
    assert_eq!(
        (name.as_str(), rule.as_str()),
        ("lookup_flight", "traceloop")
    );
    assert_eq!(args, &json!({"code": "AF12", "day": "2026-03-04"}));
    assert_eq!(result, &json!({"gate": "K41"}));
    assert_eq!(explained(&t), ["mcp_tool_call"]);

    // A tool without parameters, several blocks: a list of texts.
    let (_, args, result, _) = one(
        "ping.tool",
        &[
            ("traceloop.span.kind", "tool"),
            ("traceloop.entity.name", "ping"),
            (
                "traceloop.entity.input",
                r#"{"tool_name": "ping", "arguments": {}}"#,
            ),
            (
                "traceloop.entity.output",
                r#"[{"type": "text", "content": "a"}, {"type": "text", "content": "b"}]"#,
            ),
        ],
    );
    assert_eq!((args, result), (json!({}), json!(["a", "b"])));
}

#[test]
fn mlflow_smolagents_agent_text_record_comes_off_a_result() {
    // `mlflow.smolagents.autolog()`: a tool's string return is smolagents'
    // `AgentText`, recorded as its `__dict__`; a dict return as it is.
    let tool = |output: &str| {
        one(
            "PierTool.__call__",
            &[
                ("mlflow.spanType", "\"TOOL\""),
                (
                    "mlflow.spanInputs",
                    r#"{"sanitize_inputs_outputs": true, "kwargs": {"pier": 9}}"#,
                ),
                ("mlflow.spanOutputs", output),
            ],
        )
    };
    let (name, args, result, convention) = tool(r#"{"_value": "pier 9 is free"}"#);
    assert_eq!(
        (name.as_str(), args, result, convention.as_str()),
        (
            "PierTool.__call__",
            json!({"pier": 9}),
            json!("pier 9 is free"),
            "mlflow"
        )
    );
    assert_eq!(tool(r#"{"_value": ["a"]}"#).2, json!(["a"]));
    // A tool's own dict, with that key among others, stays whole.
    for own in [
        json!({"_value": "x", "k": 1}),
        json!({"free": true, "pier": 9}),
        json!({"value": "x"}),
    ] {
        assert_eq!(tool(&own.to_string()).2, own);
    }
}
