//! An MCP `tools/call` span no GenAI operation types (the `mcp-tools-call`
//! rule), arguments one attribute each under any namespace's `argument.`
//! (`flat_tool_args`), each value JSON text or plain text
//! (`extract::flat_types`), on made-up servers' spans.

use serde_json::json;

use super::test_support::{call, calls_of, read_in_order};
use super::tests::sp;
use super::*;
use crate::assemble::{Trace, TraceId};

/// A made-up MCP server's span of one `tools/call` request, a trace's
/// root, over `when`, with `args` (key after `mcp.request.argument.`,
/// value as written) and the result's text.
fn server_call(when: (u64, u64), tool: &str, args: &[(&str, &str)], result: &str) -> SpanRecord {
    let name = format!("tools/call {tool}");
    let keys: Vec<String> = args
        .iter()
        .map(|(k, _)| format!("mcp.request.argument.{k}"))
        .collect();
    let mut attrs = vec![
        ("mcp.method.name", "tools/call"),
        ("mcp.tool.name", tool),
        ("mcp.request.id", "4"),
        ("mcp.tool.result.content", result),
        ("mcp.tool.result.content_count", "1"),
    ];
    attrs.extend(
        keys.iter()
            .map(String::as_str)
            .zip(args.iter().map(|a| a.1)),
    );
    sp(9, None, when, &name, &attrs)
}

#[test]
fn a_server_s_tools_call_span_is_the_call() {
    // Each value as its JSON text: decoded, the quoted one and the number.
    let s = server_call(
        (10, 20),
        "hire_kayak",
        &[("quay", r#""Pier 4""#), ("hours", "3")],
        r#"{"kayak": "K7", "deposit": 20}"#,
    );
    let want = call(
        "hire_kayak",
        json!({"quay": "Pier 4", "hours": 3}),
        json!({"kayak": "K7", "deposit": 20}),
        "mcp-tools-call",
    );
    assert_eq!(calls_of(1, vec![s]), vec![want]);
    // Plain text (another writer): as written.
    let s = server_call((10, 20), "hire_kayak", &[("quay", "Pier 4")], "hired");
    let want = call(
        "hire_kayak",
        json!({"quay": "Pier 4"}),
        json!("hired"),
        "mcp-tools-call",
    );
    assert_eq!(calls_of(1, vec![s]), vec![want]);
}

#[test]
fn other_mcp_requests_and_typed_spans_are_not_this_rule_s() {
    let method = |m: &str| {
        let attrs = [("mcp.method.name", m), ("mcp.request.id", "1")];
        sp(9, None, (10, 20), m, &attrs)
    };
    for m in ["initialize", "tools/list", "notifications/initialized"] {
        assert!(calls_of(1, vec![method(m)]).is_empty(), "{m}");
    }
    // No tool named: a client's bare request span.
    let bare = sp(
        9,
        None,
        (10, 20),
        "MCP send tools/call hire_kayak",
        &[("mcp.method.name", "tools/call")],
    );
    assert!(calls_of(1, vec![bare]).is_empty());
    // With a GenAI operation the span is otel-genai's, as before.
    let genai = sp(
        9,
        None,
        (10, 20),
        "tools/call hire_kayak",
        &[
            ("mcp.method.name", "tools/call"),
            ("gen_ai.operation.name", "execute_tool"),
            ("gen_ai.tool.name", "hire_kayak"),
            ("gen_ai.tool.call.arguments", r#"{"quay": "Pier 4"}"#),
        ],
    );
    let got = calls_of(1, vec![genai]);
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].3, "otel-genai");
}

#[test]
fn arguments_one_attribute_each_under_any_namespace() {
    // A made-up vendor's tool span: the arguments under its own
    // `<ns>.call.argument.`, each value JSON text.
    let s = sp(
        2,
        None,
        (10, 20),
        "pick_berth",
        &[
            ("heron.span.kind", "tool"),
            ("heron.call.argument.marina", r#""Ostia""#),
            ("heron.call.argument.nights", "2"),
            ("heron.output", "berth 12"),
        ],
    );
    let want = call(
        "pick_berth",
        json!({"marina": "Ostia", "nights": 2}),
        json!("berth 12"),
        "tool-kind",
    );
    assert_eq!(calls_of(1, vec![s]), vec![want]);
}

#[test]
fn a_server_s_record_of_a_call_the_client_s_trace_counts_is_not_counted_again() {
    // The agent's trace records the call in full; the MCP server's span of
    // it, in the same process and within that call, is a lone MCP trace.
    let agent = Trace::new(
        TraceId([1; 16]),
        vec![
            sp(
                1,
                None,
                (0, 100),
                "invoke_agent harbour",
                &[
                    ("gen_ai.operation.name", "invoke_agent"),
                    ("gen_ai.agent.name", "harbour"),
                ],
            ),
            sp(
                2,
                Some(1),
                (10, 50),
                "execute_tool hire_kayak",
                &[
                    ("gen_ai.operation.name", "execute_tool"),
                    ("gen_ai.tool.name", "hire_kayak"),
                    (
                        "gen_ai.tool.call.arguments",
                        r#"{"quay": "Pier 4", "hours": 3}"#,
                    ),
                    ("gen_ai.tool.call.result", "hired"),
                ],
            ),
        ],
        0,
    );
    let args = [("quay", r#""Pier 4""#), ("hours", "3")];
    let server = |when| {
        let s = server_call(when, "hire_kayak", &args, "hired");
        Trace::new(TraceId([2; 16]), vec![s], 0)
    };
    let got = read_in_order(vec![agent.clone(), server((20, 40))]);
    assert_eq!(got[0].calls.len(), 1);
    assert!(got[1].calls.is_empty(), "{:?}", got[1].calls);
    // Outside the call's time it is another call.
    let got = read_in_order(vec![agent, server((60, 70))]);
    assert_eq!(got[1].calls.len(), 1);
}
