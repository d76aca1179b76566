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
//!
//! A tracer may also record `str()` of a lazy value the tool returned and
//! the framework consumed later: OpenLIT's Agno `execute_tool` span around
//! a Team's `delegate_task_to_member`, a generator function, holds
//! `<generator object ...delegate_task_to_member at 0x7f...>` as the
//! result, while the member's answer reaches the model as the tool message
//! of the next request. Python's repr of such an object, `<{kind} object
//! {name} at 0x{hex}>` with a kind of vocabulary `unawaited_result_reprs`,
//! is no result either: dropped, the conversation's record of the call
//! gives it (`conversation::witness`, by call id).

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

/// Whether `text` is Python's repr of a lazy object of one of `kinds`:
/// `<{kind} object {name} at 0x{hex}>`, the name one word (a qualname:
/// `f.<locals>.g` holds no space), the address hex digits.
fn is_lazy_repr(text: &str, kinds: &[String]) -> bool {
    let Some(inner) = text.strip_prefix('<').and_then(|t| t.strip_suffix('>')) else {
        return false;
    };
    let Some((head, addr)) = inner.rsplit_once(" at 0x") else {
        return false;
    };
    let Some((kind, name)) = head.split_once(" object ") else {
        return false;
    };
    kinds.iter().any(|k| k == kind)
        && !name.is_empty()
        && !name.contains(char::is_whitespace)
        && !addr.is_empty()
        && addr.bytes().all(|b| b.is_ascii_hexdigit())
}

/// The kinds of stand-in looked for: the `type`s of stand-in objects and
/// the kinds of lazy object whose repr stands in.
struct Kinds<'a> {
    types: &'a [String],
    reprs: &'a [String],
}

/// Whether result `r` is such a stand-in. JSON text is parsed only when it
/// is a short object holding one of the types, or a short string (most
/// results are not).
fn is_unawaited(r: &CallResult, kinds: &Kinds<'_>) -> bool {
    match r {
        CallResult::Json(text) if text.len() > MAX_STAND_IN => false,
        CallResult::Json(text) => match text.trim_start().as_bytes().first() {
            Some(b'{') => {
                kinds.types.iter().any(|t| text.contains(t.as_str()))
                    && serde_json::from_str::<Value>(text)
                        .is_ok_and(|v| is_stand_in(&v, kinds.types))
            }
            Some(b'"') => serde_json::from_str::<String>(text)
                .is_ok_and(|s| is_lazy_repr(s.trim(), kinds.reprs)),
            _ => false,
        },
        CallResult::Value(Value::String(s)) => {
            s.len() <= MAX_STAND_IN && is_lazy_repr(s.trim(), kinds.reprs)
        }
        CallResult::Value(v) => is_stand_in(v, kinds.types),
    }
}

/// Drops the results of `calls` that stand in for a value not awaited or
/// not consumed yet.
pub(crate) fn drop_stand_ins(calls: &mut [ToolCall]) {
    let kinds = Kinds {
        types: builtin_list("unawaited_result_types"),
        reprs: builtin_list("unawaited_result_reprs"),
    };
    if kinds.types.is_empty() && kinds.reprs.is_empty() {
        return;
    }
    for c in calls.iter_mut() {
        if c.result.as_ref().is_some_and(|r| is_unawaited(r, &kinds)) {
            c.result = None;
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn types() -> Kinds<'static> {
        Kinds {
            types: builtin_list("unawaited_result_types"),
            reprs: builtin_list("unawaited_result_reprs"),
        }
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
    fn a_lazy_objects_repr_is_no_result() {
        let kinds = types();
        for text in [
            "<generator object _team_tools.<locals>.hand_over at 0x7f3a11c0be40>",
            "<coroutine object Desk.book at 0x10>",
            "<async_generator object stream_rows at 0xAbC0>",
        ] {
            assert!(is_lazy_repr(text, kinds.reprs), "{text}");
            let json = serde_json::to_string(text).unwrap_or_default();
            assert!(
                is_unawaited(&CallResult::Json(json.into()), &kinds),
                "{text}"
            );
            assert!(
                is_unawaited(&CallResult::Value(json!(text)), &kinds),
                "{text}"
            );
        }
    }

    #[test]
    fn near_miss_reprs_stay_results() {
        let kinds = types();
        // Another kind of object (a value, not a lazy one), no address, an
        // address that is no hex, a name with a space, text around the
        // repr, a repr inside an object or a list.
        for text in [
            "<Booking object at 0x7f3a11c0be40>",
            "<function hand_over at 0x7f3a11c0be40>",
            "<generator object hand_over>",
            "<generator object hand_over at 0xZZ>",
            "<generator object hand over at 0x10>",
            "result: <generator object hand_over at 0x10>",
            "<generator object  at 0x10>",
        ] {
            assert!(!is_lazy_repr(text, kinds.reprs), "{text}");
            let json = serde_json::to_string(text).unwrap_or_default();
            assert!(
                !is_unawaited(&CallResult::Json(json.into()), &kinds),
                "{text}"
            );
        }
        let held = json!({"rows": "<generator object hand_over at 0x10>"});
        assert!(!is_unawaited(&CallResult::Value(held), &kinds));
        let listed = json!(["<generator object hand_over at 0x10>"]);
        assert!(!is_unawaited(
            &CallResult::Json(listed.to_string().into()),
            &kinds
        ));
    }

    #[test]
    fn the_vocabulary_lists_the_coroutine() {
        assert!(builtin_list("unawaited_result_types")
            .iter()
            .any(|t| t == "mcp_coroutine"));
        assert!(builtin_list("unawaited_result_reprs")
            .iter()
            .any(|t| t == "generator"));
    }
}
