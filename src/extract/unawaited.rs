//! A result recorded before the call was awaited (docs/conventions.md,
//! "One call, several spans").
//!
//! A tracer that wraps an async client method may record the method's
//! return value, the coroutine, rather than what awaiting it gave:
//! acceldata-aio-tracer's MCP client spans nest one `mcp tools/call` span
//! (around the awaiting) over another (around the call that made the
//! coroutine), both with the tool's name and arguments; the inner one's
//! `mcp.response.payload` is a stand-in, `{"type": "mcp_coroutine",
//! "awaitable": true, "note": ...}`, the outer one's the server's answer.
//! The stand-in is no result: dropped before the nested records become one
//! call, the awaited answer is the call's. The stand-ins' `type`s are data
//! (vocabulary `unawaited_result_types`).

use serde_json::Value;

use super::rules::builtin_list;
use super::{CallResult, ToolCall};

/// The key whose value names a stand-in's kind.
const TYPE_KEY: &str = "type";

/// A stand-in is a few fields: a longer result is not looked into (most
/// results are not stand-ins: no search, no parse).
const MAX_STAND_IN: usize = 512;

/// Whether `v` is a stand-in for a result not awaited yet: an object whose
/// `type` is one of the vocabulary's.
fn is_stand_in(v: &Value, types: &[String]) -> bool {
    v.get(TYPE_KEY)
        .and_then(Value::as_str)
        .is_some_and(|t| types.iter().any(|k| k == t))
}

/// Whether result `r` is such a stand-in. JSON text is parsed only when it
/// is a short object holding one of the types (most results are not).
fn is_unawaited(r: &CallResult, types: &[String]) -> bool {
    match r {
        CallResult::Json(text) => {
            text.len() <= MAX_STAND_IN
                && text.trim_start().starts_with('{')
                && types.iter().any(|t| text.contains(t.as_str()))
                && serde_json::from_str::<Value>(text).is_ok_and(|v| is_stand_in(&v, types))
        }
        CallResult::Value(v) => is_stand_in(v, types),
    }
}

/// Drops the results of `calls` that stand in for a value not awaited.
pub(crate) fn drop_stand_ins(calls: &mut [ToolCall]) {
    let types = builtin_list("unawaited_result_types");
    if types.is_empty() {
        return;
    }
    for c in calls.iter_mut() {
        if c.result.as_ref().is_some_and(|r| is_unawaited(r, types)) {
            c.result = None;
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn types() -> Vec<String> {
        vec!["mcp_coroutine".to_string()]
    }

    #[test]
    fn a_coroutine_stand_in_is_no_result() {
        let text = r#"{"type": "mcp_coroutine", "function": "call_tool", "awaitable": true}"#;
        assert!(is_unawaited(&CallResult::Json(text.into()), &types()));
        let v = json!({"type": "mcp_coroutine", "note": "later"});
        assert!(is_unawaited(&CallResult::Value(v), &types()));
    }

    #[test]
    fn near_misses_stay_results() {
        // Another type, the type's word elsewhere, a type that is no text,
        // a bare string of the word, a list holding a stand-in.
        let kept = [
            json!({"type": "text", "text": "mcp_coroutine"}),
            json!({"kind": "mcp_coroutine"}),
            json!({"type": ["mcp_coroutine"]}),
            json!("mcp_coroutine"),
            json!([{"type": "mcp_coroutine"}]),
        ];
        // A long object is not looked into.
        let long = json!({"type": "mcp_coroutine", "pad": "x".repeat(MAX_STAND_IN)});
        let text = long.to_string();
        assert!(!is_unawaited(&CallResult::Json(text.into()), &types()));
        for v in kept {
            assert!(
                !is_unawaited(&CallResult::Value(v.clone()), &types()),
                "{v}"
            );
            let text = v.to_string();
            assert!(
                !is_unawaited(&CallResult::Json(text.into()), &types()),
                "{v}"
            );
        }
    }

    #[test]
    fn the_vocabulary_lists_the_coroutine() {
        assert!(builtin_list("unawaited_result_types")
            .iter()
            .any(|t| t == "mcp_coroutine"));
    }
}
