//! A call of a tool that takes no parameters, recorded without arguments
//! (docs/conventions.md, "Tools without parameters").
//!
//! Writers leave an empty arguments record out: OpenInference's LangChain
//! tool span has no `input.value` for a call made with `{}`, and its
//! model-side copies drop the empty `arguments` too. Absent arguments
//! mean "not recorded" in general, so they stay unknown, except where the
//! trace itself says the tool takes none: every declaration of the tool
//! offered to the model in the trace (`llm.tools`, the request's `tools`,
//! `gen_ai.tool.definitions`) has a parameter schema of no properties
//! that admits no others. Such a tool can only have been called with
//! `{}`. A tool declared nowhere in the trace keeps unknown arguments.
//!
//! An MCP server's record of such a call in a trace of its own (Sentry's
//! `tools/call get_time`, no argument attributes) is matched with the
//! caller's record of it as a record of `{}` ([`unsent`]).

use serde_json::{Map, Value};

use super::facts::ToolDef;
use super::{CallArgs, ToolCall};
use crate::assemble::SpanRecord;

/// Gives each of `calls` without arguments whose tool `offered` declares
/// no parameters the empty arguments `{}`.
pub(crate) fn settle(offered: &[ToolDef], calls: &mut [ToolCall]) {
    for c in calls
        .iter_mut()
        .filter(|c| matches!(c.args, CallArgs::None))
    {
        if takes_none(offered, &c.name) {
            c.args = CallArgs::Value(Value::Object(Map::new()));
        }
    }
}

/// Whether any call of `calls` lacks arguments (before the declarations
/// are looked up: most traces have none).
pub(crate) fn any_lacking(calls: &[ToolCall]) -> bool {
    calls.iter().any(|c| matches!(c.args, CallArgs::None))
}

/// The arguments an MCP `tools/call` request's record `c` (on span `s`)
/// stands for when it records none but did record the call's outcome: `{}`,
/// for matching it with another trace's record of the same call only
/// (`super::echo`). MCP's `arguments` is optional, and a writer that puts
/// each argument in an attribute of its own (Sentry's
/// `mcp.request.argument.<name>`) writes none for a call without any; the
/// call itself keeps its unknown arguments. A record with a call of other
/// arguments elsewhere still matches nothing.
pub(crate) fn unsent(c: &ToolCall, s: Option<&SpanRecord>) -> Option<Value> {
    let request = s.is_some_and(super::own_records::is_mcp_tools_call);
    (request && matches!(c.args, CallArgs::None) && c.result.is_some())
        .then(|| Value::Object(Map::new()))
}

/// Whether `v`, read as a call's arguments, is a language's text for no
/// value (Python's `str(None)`, JavaScript's `String(undefined)`) or JSON
/// `null`: no arguments recorded, so later sources and the model's ask
/// (joined by call id) may still give them.
pub(crate) fn no_value(v: &Value) -> bool {
    match v {
        Value::Null => true,
        Value::String(t) => matches!(t.trim(), "None" | "undefined" | "null"),
        _ => false,
    }
}

/// Whether tool `name` is declared in `offered`, each time with a
/// parameter schema that admits only the empty object.
fn takes_none(offered: &[ToolDef], name: &str) -> bool {
    let mut defs = offered.iter().filter(|d| d.name == name).peekable();
    defs.peek().is_some() && defs.all(|d| d.parameters.as_ref().is_some_and(empty_schema))
}

/// An object schema of no properties admitting no others: `properties`
/// present and empty, nothing required, and `additionalProperties` not
/// opened (absent or `false`, as the writers put it for an empty model).
fn empty_schema(schema: &Value) -> bool {
    let Some(o) = schema.as_object() else {
        return false;
    };
    let no_props = o
        .get("properties")
        .and_then(Value::as_object)
        .is_some_and(Map::is_empty);
    let none_required = o
        .get("required")
        .is_none_or(|r| r.as_array().is_some_and(Vec::is_empty));
    let closed = o
        .get("additionalProperties")
        .is_none_or(|a| *a == Value::Bool(false));
    let object = o.get("type").is_none_or(|t| t == "object");
    no_props && none_required && closed && object
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::assemble::{Trace, TraceId};
    use crate::extract::test_support::read_in_order;
    use crate::extract::tests::sp;
    use serde_json::json;

    /// A made-up vendor's agent trace: one tool span of `tick` with `args`.
    fn caller(args: &str) -> Trace {
        let spans = vec![
            sp(
                1,
                None,
                (5, 55),
                "invoke_agent desk",
                &[
                    ("gen_ai.operation.name", "invoke_agent"),
                    ("gen_ai.agent.name", "desk"),
                ],
            ),
            sp(
                2,
                Some(1),
                (10, 50),
                "tick",
                &[("acme.span.kind", "tool"), ("acme.input", args)],
            ),
        ];
        Trace::new(TraceId([1; 16]), spans, 0)
    }

    /// An MCP server's `tools/call tick` span, a trace of its own, with a
    /// result and no argument attribute.
    fn server() -> Trace {
        let s = sp(
            9,
            None,
            (20, 40),
            "tools/call tick",
            &[
                ("mcp.method.name", "tools/call"),
                ("mcp.tool.name", "tick"),
                ("mcp.tool.result.content", "\"07:45\""),
            ],
        );
        Trace::new(TraceId([2; 16]), vec![s], 0)
    }

    #[test]
    fn no_value_in_a_language_s_words_is_no_arguments_record() {
        for none in [
            json!(null),
            json!("None"),
            json!(" undefined "),
            json!("null"),
        ] {
            assert!(no_value(&none), "{none}");
        }
        for some in [
            json!({}),
            json!("none"),
            json!("None of them"),
            json!([]),
            json!(0),
        ] {
            assert!(!no_value(&some), "{some}");
        }
        // On a span: the arguments stay unknown, not the text `None`.
        let got = read_in_order(vec![caller("None")]);
        assert_eq!(got[0].calls[0].args, CallArgs::None);
    }

    #[test]
    fn a_span_inside_a_call_of_its_tool_takes_no_later_ask_s_arguments() {
        // Two model calls of the made-up vendor: the first asks `tick`
        // with `{"zone": "CET"}`, its call (span 3, id k1) holds a span of
        // the same tool without arguments or id (span 4); the second asks
        // `tick` again with other arguments.
        let chat = |id: u8, when: (u64, u64), call: &str, zone: &str| {
            let out = json!([{"role": "assistant", "parts": [{"type": "tool_call",
                "id": call, "name": "tick", "arguments": {"zone": zone}}]}]);
            let out = out.to_string();
            let attrs = [
                ("gen_ai.operation.name", "chat"),
                ("gen_ai.output.messages", &out),
            ];
            sp(id, Some(1), when, "chat acme", &attrs)
        };
        let tool = |id: u8, parent: u8, when: (u64, u64), call: Option<&str>, zone: &str| {
            let args = json!({"zone": zone}).to_string();
            let mut attrs = vec![
                ("gen_ai.operation.name", "execute_tool"),
                ("gen_ai.tool.name", "tick"),
            ];
            if let Some(call) = call {
                attrs.push(("gen_ai.tool.call.id", call));
                attrs.push(("gen_ai.tool.call.arguments", &args));
            }
            let attrs: Vec<(&str, &str)> = attrs;
            sp(id, Some(parent), when, "execute_tool tick", &attrs)
        };
        let spans = vec![
            sp(
                1,
                None,
                (0, 100),
                "invoke_agent desk",
                &[("gen_ai.operation.name", "invoke_agent")],
            ),
            chat(2, (5, 9), "k1", "CET"),
            tool(3, 1, (10, 20), Some("k1"), "CET"),
            tool(4, 3, (11, 19), None, ""),
            chat(5, (30, 39), "k2", "UTC"),
            tool(6, 1, (40, 50), Some("k2"), "UTC"),
        ];
        let got = read_in_order(vec![Trace::new(TraceId([4; 16]), spans, 0)]);
        let args: Vec<_> = got[0]
            .calls
            .iter()
            .map(|c| c.args.value().cloned())
            .collect();
        let want = [Some(json!({"zone": "CET"})), Some(json!({"zone": "UTC"}))];
        assert_eq!(args, want, "{:?}", got[0].calls);
    }

    #[test]
    fn an_mcp_record_without_arguments_is_the_record_of_a_call_made_with_none() {
        let got = read_in_order(vec![caller("{}"), server()]);
        assert_eq!(got[0].calls.len(), 1);
        assert!(got[1].calls.is_empty(), "{:?}", got[1].calls);
        // A call made with arguments is another call.
        let got = read_in_order(vec![caller(r#"{"zone": "CET"}"#), server()]);
        assert_eq!(got[1].calls.len(), 1);
        assert_eq!(got[1].calls[0].args, CallArgs::None);
    }

    fn def(name: &str, parameters: Option<Value>) -> ToolDef {
        ToolDef {
            name: name.into(),
            description: None,
            parameters,
        }
    }

    #[test]
    fn a_tool_declared_with_an_empty_schema_takes_none() {
        let offered = [
            def("tick", Some(json!({"type": "object", "properties": {}}))),
            def(
                "tock",
                Some(json!({"type": "object", "properties": {}, "additionalProperties": false})),
            ),
        ];
        assert!(takes_none(&offered, "tick"));
        assert!(takes_none(&offered, "tock"));
    }

    #[test]
    fn a_tool_declared_nowhere_or_open_keeps_unknown_arguments() {
        let offered = [
            def("open", Some(json!({"type": "object"}))),
            def(
                "loose",
                Some(json!({"type": "object", "properties": {}, "additionalProperties": true})),
            ),
            def(
                "some",
                Some(json!({"properties": {"q": {"type": "string"}}})),
            ),
            def("bare", None),
            def("twice", Some(json!({"properties": {}}))),
            def("twice", Some(json!({"properties": {"q": {}}}))),
        ];
        for name in ["open", "loose", "some", "bare", "twice", "absent"] {
            assert!(!takes_none(&offered, name), "{name}");
        }
    }
}
