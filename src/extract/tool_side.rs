//! Whose result a call recorded by several spans keeps when the records
//! disagree (docs/conventions.md, "One call, several spans").
//!
//! The records of one call sit at different distances from the tool. A
//! model-side record (an agent harness's or a proxy's span of the
//! `tool_result` it sent the model) records what the harness made of the
//! return value, and a harness may add to it: the Claude Code CLI ends a
//! tool's text with a newline and appends a `<system-reminder>` block,
//! which Laminar's proxy span records. The MCP `tools/call` request's span
//! records the `CallToolResult` the server answered, which is what the
//! function returned. So when the records' results differ and a record's
//! own span is an MCP `tools/call` request (`mcp.method.name`) with a
//! result, the call keeps that result (the innermost such record's). The
//! arguments, name and timing stay as [`super::merge::merge`] chose them.

use super::own_records::is_mcp_tools_call;
use super::ToolCall;
use crate::assemble::{SpanPositions, Trace};

/// Sets `one`'s result (merged from the records `group` of `calls`) to the
/// MCP `tools/call` record's when the records' results differ (see the
/// module's doc). `at`: the trace's span positions.
pub(crate) fn keep_tool_result(
    trace: &Trace,
    at: &SpanPositions<'_>,
    calls: &[ToolCall],
    group: &[usize],
    one: &mut ToolCall,
) {
    let is_tools_call = |c: &ToolCall| {
        at.get(c.span_id)
            .is_some_and(|i| is_mcp_tools_call(&trace.spans[i]))
    };
    // The innermost record first: the deepest, the latest-starting.
    let Some(tool) = group
        .iter()
        .map(|&i| &calls[i])
        .filter(|c| c.result.is_some() && is_tools_call(c))
        .max_by_key(|c| (c.depth, c.start_time_unix_nano))
    else {
        return;
    };
    let differ = group
        .iter()
        .filter_map(|&i| calls[i].result.as_ref())
        .any(|r| Some(r) != tool.result.as_ref());
    if differ {
        one.result.clone_from(&tool.result);
    }
}

#[cfg(test)]
mod tests {
    use super::super::own_records::{MCP_METHOD, MCP_TOOLS_CALL};
    use super::super::tests::sp;
    use super::super::unwrap_tests::{calls, trace};
    use serde_json::{json, Value};

    /// A harness's span of a call and, inside its time, the MCP request's
    /// span of the same call, side by side under one turn (vendor `acme`,
    /// made up).
    fn side_by_side(harness_out: &str, mcp_out: &str) -> Vec<(String, Value, Value, String)> {
        let turn = sp(1, None, (100, 900), "acme.turn", &[]);
        let harness = sp(
            2,
            Some(1),
            (200, 600),
            "acme__shop__buy",
            &[
                ("openinference.span.kind", "TOOL"),
                ("tool.name", "buy"),
                ("input.value", r#"{"item":"pen"}"#),
                ("output.value", harness_out),
            ],
        );
        let mcp = sp(
            3,
            Some(1),
            (300, 400),
            "tools/call buy",
            &[
                (MCP_METHOD, MCP_TOOLS_CALL),
                ("gen_ai.operation.name", "execute_tool"),
                ("gen_ai.tool.name", "buy"),
                ("gen_ai.tool.call.arguments", r#"{"item":"pen"}"#),
                ("gen_ai.tool.call.result", mcp_out),
            ],
        );
        calls(&trace(vec![turn, harness, mcp]))
    }

    const MCP_OUT: &str = r#"{"content":[{"type":"text","text":"bought"}],"isError":false}"#;

    #[test]
    fn the_mcp_request_s_result_wins_over_a_harness_copy() {
        let harness = r#"[{"type":"text","text":"bought\n"},{"type":"text","text":"<note>budget left</note>"}]"#;
        let got = side_by_side(harness, MCP_OUT);
        assert_eq!(got.len(), 1, "{got:?}");
        // One call of both records: the harness's gave the arguments.
        assert_eq!(got[0].3, "openinference", "{got:?}");
        assert_eq!(got[0].2, json!("bought"));
    }

    #[test]
    fn equal_results_keep_the_merge_s_choice() {
        let got = side_by_side(MCP_OUT, MCP_OUT);
        assert_eq!(got.len(), 1, "{got:?}");
        assert_eq!(got[0].2, json!("bought"));
    }
}
