//! One call with three records, each a trace of its own: the framework's
//! tool span (no call id), an MCP client's span (a lone client trace) and
//! the conversation's record in the request that carries the result. The
//! client's record joining one of the other two leaves the third to join
//! the call too (`Echo::client_record`). Made-up vendor spans.

use serde_json::{json, Value};

use crate::assemble::{Trace, TraceId};
use crate::extract::test_support::{
    answering_trace as answering, asking_trace as asking, in_process, read_in_order,
};
use crate::extract::tests::sp;
use crate::extract::Analysis;

/// A tool span of `name` (GenAI attributes, no call id), a trace of its
/// own in process `p`; `mcp`: an MCP client's span (`mcp.method.name`).
fn tool(trace: u8, when: (u64, u64), name: &str, args: &Value, mcp: bool) -> Trace {
    let args = args.to_string();
    let mut attrs = vec![
        ("gen_ai.operation.name", "execute_tool"),
        ("gen_ai.tool.name", name),
        ("gen_ai.tool.call.arguments", args.as_str()),
        ("gen_ai.tool.call.result", "two seats held"),
    ];
    if mcp {
        attrs.push(("mcp.method.name", "tools/call"));
    }
    let s = in_process(sp(1, None, when, &format!("run {name}"), &attrs), "p");
    Trace::new(TraceId([trace; 16]), vec![s], 0)
}

fn total(got: &[Analysis]) -> usize {
    got.iter().map(|a| a.calls.len()).sum()
}

fn seats() -> Value {
    json!({"seats": 2})
}

#[test]
fn a_framework_span_a_client_span_and_the_conversation_are_one_call() {
    let ask = || asking(1, (0, 10), &[("call_7", "reserve", seats())]);
    let span = || tool(2, (20, 40), "reserve", &seats(), false);
    let client = |args: &Value| tool(3, (22, 38), "reserve", args, true);
    let answer = || answering(4, (50, 60), &[("call_7", "reserve", seats())], &["two seats held"]);
    // The client's trace read after the framework's span, after the
    // request, or before both (held until a trace counts calls).
    for order in [[0, 1, 2, 3], [0, 1, 3, 2], [0, 2, 1, 3]] {
        let traces = [ask(), span(), client(&seats()), answer()];
        let mut slots: Vec<Option<Trace>> = traces.into_iter().map(Some).collect();
        let input = order.iter().filter_map(|&k| slots[k].take()).collect();
        let got = read_in_order(input);
        assert_eq!(total(&got), 1, "order {order:?}: {got:#?}");
    }
    // Near miss: a client record of other arguments is a call of its own.
    let got = read_in_order(vec![ask(), span(), client(&json!({"seats": 5})), answer()]);
    assert_eq!(total(&got), 2);
}
