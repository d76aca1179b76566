//! A tool span named by the tool's display name (`Reserve table`) while the
//! model called it by its own (`reserve_table`): the witness joins the two
//! and the call takes the model's name (`tool_name::is_display_of`). Made-up
//! vendor spans: a generic tool kind and OTel GenAI chat spans.

use super::tests::sp;
use super::Extractor;
use crate::assemble::{SpanRecord, Trace, TraceId};

/// The model asks for `reserve_table` and `order_cake` in one turn; the
/// tools' spans, named `displays`, record arguments other than the
/// model's (the tools got them converted), so neither arguments nor one
/// ask left in the turn tell which span ran which call.
fn calls(displays: [&str; 2]) -> (Vec<(String, Option<String>)>, Vec<String>) {
    let ask = r#"[{"role": "assistant", "parts": [
        {"type": "tool_call", "id": "c-1", "name": "reserve_table", "arguments": {"seats": 2}},
        {"type": "tool_call", "id": "c-2", "name": "order_cake", "arguments": {"size": "L"}}]}]"#;
    let answer = r#"[{"role": "tool", "parts": [
        {"type": "tool_call_response", "id": "c-1", "response": "table 9"},
        {"type": "tool_call_response", "id": "c-2", "response": "cake 4"}]}]"#;
    let chat = |id: u8, when: (u64, u64), key: &'static str, v: &'static str| {
        let attrs = [("gen_ai.operation.name", "chat"), (key, v)];
        sp(id, Some(1), when, "chat acme-1", &attrs)
    };
    let tool = |id: u8, when: (u64, u64), display: &str, args: &str, out: &str| -> SpanRecord {
        let attrs = [
            ("acmeflow.span.kind", "tool"),
            ("acmeflow.tool.name", display),
            ("acmeflow.input", args),
            ("acmeflow.output", out),
        ];
        sp(id, Some(1), when, &format!("{display}.run"), &attrs)
    };
    let spans = vec![
        sp(1, None, (0, 100), "run", &[("acmeflow.span.kind", "agent")]),
        chat(2, (10, 20), "gen_ai.output.messages", ask),
        tool(3, (30, 40), displays[1], r#"{"size": "large"}"#, "cake 4"),
        tool(4, (30, 40), displays[0], r#"{"seats": "2"}"#, "table 9"),
        chat(5, (50, 60), "gen_ai.input.messages", answer),
    ];
    let a = Extractor::default().analyze(&Trace::new(TraceId([7; 16]), spans, 0));
    let mut calls: Vec<_> = a.calls.into_iter().map(|c| (c.name, c.span_name)).collect();
    calls.sort();
    (calls, a.warnings)
}

#[test]
fn a_display_named_span_takes_the_models_name() {
    let (calls, warnings) = calls(["Reserve table", "Order Cake"]);
    let named = |n: &str, d: &str| (n.to_string(), Some(d.to_string()));
    assert_eq!(
        calls,
        vec![
            named("order_cake", "Order Cake"),
            named("reserve_table", "Reserve table")
        ]
    );
    assert!(warnings.is_empty(), "{warnings:?}");
}

#[test]
fn a_name_with_other_words_is_another_tool() {
    // Near miss: a word more, or another separator, is no display of the
    // model's name: the spans keep their names and the witness warns.
    let (calls, warnings) = calls(["Reserve a table", "Order-cake"]);
    let kept = |d: &str| (d.to_string(), None);
    assert_eq!(calls, vec![kept("Order-cake"), kept("Reserve a table")]);
    assert!(!warnings.is_empty());
}
