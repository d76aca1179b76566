//! Tool content written as Python reprs (held-out set 19): a GenAI tool
//! span's call and tool message as span events, and a tool-kind span's
//! `tool_input` / `tool_output` keys with a `tool:` name prefix. Made-up
//! vendors' namespaces.

use serde_json::json;

use crate::extract::test_support::{calls_in, event};
use crate::extract::tests::sp;

/// An `execute_tool` span whose arguments are a dict repr on a
/// `gen_ai.tool.call` event and whose result is the JSON text of a
/// LangChain ToolMessage repr on a `gen_ai.tool.message` event.
#[test]
fn genai_tool_events_hold_repr_arguments_and_a_tool_message_repr() {
    let mut s = sp(
        1,
        None,
        (10, 20),
        "execute_tool find_hotel",
        &[
            ("gen_ai.operation.name", "execute_tool"),
            ("gen_ai.tool.name", "find_hotel"),
        ],
    );
    s.span.events = vec![
        event(
            "gen_ai.tool.call",
            "arguments",
            "{'town': 'Brest', 'near': None}",
        ),
        event(
            "gen_ai.tool.message",
            "gen_ai.tool.message.content",
            r#""content='{\"hotel\": \"Vauban\"}' name='find_hotel' tool_call_id='call_q1'""#,
        ),
    ];
    let got = calls_in(vec![s]);
    assert_eq!(got.len(), 1, "{got:?}");
    assert_eq!(got[0].0, "find_hotel");
    assert_eq!(got[0].1, Some(json!({"town": "Brest", "near": null})));
    assert_eq!(got[0].2, Some(json!({"hotel": "Vauban"})));
}

/// A made-up vendor's tool-kind span named `tool:<name>`: the name from
/// `<ns>.tool_name`, the arguments a dict repr in `<ns>.tool_input`, the
/// result a ToolMessage repr in `<ns>.tool_output`; without the name key,
/// the span name's prefix is taken off.
#[test]
fn tool_kind_span_reads_underscore_keys_and_a_tool_prefix() {
    let named = sp(
        1,
        None,
        (10, 20),
        "tool:rent_bike",
        &[
            ("zorp.span.type", "tool"),
            ("zorp.tool_name", "rent_bike"),
            ("zorp.tool_input", "{'station': 'Gare', 'hours': 2}"),
            (
                "zorp.tool_output",
                "content='rented' name='rent_bike' tool_call_id='call_z1'",
            ),
        ],
    );
    let bare = sp(
        2,
        None,
        (30, 40),
        "tool:find_hotel",
        &[("zorp.span.type", "tool")],
    );
    let got = calls_in(vec![named, bare]);
    let names: Vec<_> = got.iter().map(|c| c.0.as_str()).collect();
    assert_eq!(names, ["rent_bike", "find_hotel"], "{got:?}");
    assert_eq!(got[0].1, Some(json!({"station": "Gare", "hours": 2})));
    assert_eq!(got[0].2, Some(json!("rented")));
}
