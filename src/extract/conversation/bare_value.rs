//! A one-field argument written bare (docs/conventions.md, "The model's
//! ask"): a tool span may record only the value of a tool's one argument
//! (OpenInference's LangChain TOOL span of a one-field MCP tool:
//! `input.value = Lisbon`, `input.mime_type = text/plain`) while the
//! model asked for the tool with the object (`{"town": "Lisbon"}`). The
//! call joined to that ask takes the object. Strict: an ask of two fields,
//! or of another value, leaves the span's arguments as they are.

use serde_json::Value;

use super::{args_of, Asked, CallArgs, ToolCall};

/// What a call joined by name to the model's ask `a` takes from it: the
/// MCP server its name holds, and the object of a one-field argument the
/// span wrote bare. Nothing else: the span's record is the call's.
pub(super) fn joined_by_name(call: &mut ToolCall, a: &Asked) {
    if call.mcp_server.is_none() {
        call.mcp_server = crate::extract::tool_name::server(&a.name, &call.name);
    }
    if is_bare(&call.args, &a.args) {
        call.args = args_of(&a.args);
    }
}

/// Whether `args` (a call's) are the one value of `asked` (the model's
/// arguments for it), written bare: a string, number or boolean equal to
/// that value, the text of a number or boolean equal to it, or digits read
/// back as a number for a text (`merge::bare_field`).
pub(super) fn is_bare(args: &CallArgs, asked: &Value) -> bool {
    args.parsed()
        .is_some_and(|bare| crate::extract::merge::bare_field(&bare, asked))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn bare(args: Value, asked: Value) -> bool {
        is_bare(&CallArgs::Value(args), &asked)
    }

    #[test]
    fn a_lone_fields_value_written_bare_is_that_object() {
        assert!(bare(json!("Oslo"), json!({"quay": "Oslo"})));
        assert!(bare(json!(4), json!({"berth": 4})));
        assert!(bare(json!("4"), json!({"berth": 4})));
        assert!(bare(json!("true"), json!({"moored": true})));
        assert!(is_bare(
            &CallArgs::Text("\"Oslo\"".into()),
            &json!({"quay": "Oslo"})
        ));
    }

    #[test]
    fn two_fields_another_value_or_no_scalar_stay() {
        assert!(!bare(json!("Oslo"), json!({"quay": "Oslo", "berth": 4})));
        assert!(!bare(json!("Oslo"), json!({"quay": "Bergen"})));
        // A number stands for its own text: a span's text `4` decodes as
        // a number (OpenInference's LangChain.js tool span, `text/plain`).
        assert!(bare(json!(4), json!({"berth": "4"})));
        assert!(!bare(json!(4), json!({"berth": "04"})));
        assert!(!bare(json!({"quay": "Oslo"}), json!({"quay": "Oslo"})));
        assert!(!bare(json!(null), json!({"quay": null})));
        assert!(!bare(json!(["Oslo"]), json!({"quay": ["Oslo"]})));
        assert!(!bare(json!("Oslo"), json!("Oslo")));
        assert!(!is_bare(&CallArgs::None, &json!({"quay": "Oslo"})));
    }
}
