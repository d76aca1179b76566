//! MCP's `_meta` in a call's arguments (docs/conventions.md, "MCP's `_meta`
//! in the arguments"). An MCP client may put the caller's W3C trace context
//! (`traceparent`, `tracestate`, `baggage`) and the protocol's own request
//! metadata (`progressToken`) in a `tools/call` request's `_meta`, and an
//! instrumentation that records the request's arguments may record it
//! there (OpenLLMetry's MCP instrumentation for JavaScript:
//! `{"town": "Lisbon", "_meta": {"traceparent": "00-..."}}`).
//!
//! - Such a `_meta`, an object holding nothing but the vocabulary's
//!   `mcp_meta_keys`, is the protocol's, not the tool's: the server takes
//!   it off before the function runs, so it comes off the arguments of
//!   every call read from a span, whatever the rule. A `_meta` holding any
//!   other key (or no key, or no object) may be a parameter of the tool's
//!   own and stays.
//! - A call whose `_meta.traceparent` names this trace and, as parent, the
//!   span of another call of the same tool (or a namespaced form of its
//!   name) is that call recorded again: the MCP request was sent from
//!   within that call's span. When the two are not nested (an MCP client
//!   whose spans hang under its session span, beside the framework's tool
//!   span), they become one call here; nested ones are left to
//!   [`super::merge`], whose equal-arguments test the stripped `_meta` no
//!   longer spoils. Linear in the calls of the trace.

use std::collections::HashMap;
use std::sync::Arc;

use serde_json::Value;

use super::rules::builtin_list;
use super::{merge, Analysis, CallArgs, CallStatus, ToolCall};
use crate::assemble::{SpanId, Trace, TraceId};
use crate::value::PyValue;

/// The key under which MCP carries a request's metadata.
const META: &str = "_meta";
const META_QUOTED: &str = "\"_meta\"";

/// The W3C trace-context key whose parent id ties a request to its caller.
const TRACEPARENT: &str = "traceparent";

/// The keys a `_meta` of the protocol's holds (vocabulary `mcp_meta_keys`).
fn meta_keys() -> &'static [String] {
    builtin_list("mcp_meta_keys")
}

/// Whether `v` is a `_meta` of the protocol's: an object of at least one
/// key, every key one of [`meta_keys`].
fn is_protocol_meta(v: &Value) -> bool {
    let Value::Object(o) = v else {
        return false;
    };
    let keys = meta_keys();
    !o.is_empty() && o.keys().all(|k| keys.iter().any(|m| m == k))
}

/// Whether arguments `v` hold a `_meta` of the protocol's (for
/// `inspect --explain`, which names it `mcp_meta`).
pub(crate) fn holds_protocol_meta(v: &Value) -> bool {
    v.as_object()
        .and_then(|o| o.get(META))
        .is_some_and(is_protocol_meta)
}

/// Takes a `_meta` of the protocol's off `args` (every form), giving the
/// caller's span it names in trace `trace` when its `traceparent` does.
/// `Some(None)`: taken off, naming no span of this trace.
fn strip(args: &mut CallArgs, trace: TraceId) -> Option<Option<SpanId>> {
    match args {
        CallArgs::None => None,
        CallArgs::Value(v) => strip_value(v, trace),
        CallArgs::Ordered { value, ordered } => {
            let parent = strip_value(value, trace)?;
            if let PyValue::Dict(items) = Arc::make_mut(ordered) {
                items.retain(|(k, _)| k != META);
            }
            Some(parent)
        }
        CallArgs::Text(text) => {
            // Most arguments hold no `_meta`: a look at the text first.
            if !text.contains(META_QUOTED) {
                return None;
            }
            let mut v: Value = serde_json::from_str(text).ok()?;
            let parent = strip_value(&mut v, trace)?;
            *text = serde_json::to_string(&v).ok()?.into_boxed_str();
            Some(parent)
        }
    }
}

/// [`strip`] of a parsed value.
fn strip_value(v: &mut Value, trace: TraceId) -> Option<Option<SpanId>> {
    let o = v.as_object_mut()?;
    if !o.get(META).is_some_and(is_protocol_meta) {
        return None;
    }
    let meta = o.remove(META)?;
    let parent = meta
        .get(TRACEPARENT)
        .and_then(Value::as_str)
        .and_then(parent_in)
        .filter(|&(t, _)| t == trace)
        .map(|(_, s)| s);
    Some(parent)
}

/// The trace id and parent id of a W3C `traceparent`
/// (`version-traceid-parentid-flags`); an all-zero id is invalid.
fn parent_in(tp: &str) -> Option<(TraceId, SpanId)> {
    let mut parts = tp.trim().split('-');
    let (_version, trace, span) = (parts.next()?, parts.next()?, parts.next()?);
    let trace: TraceId = trace.parse().ok()?;
    let span: SpanId = span.parse().ok()?;
    (trace.0 != [0; 16] && span.0 != [0; 8]).then_some((trace, span))
}

/// Takes the protocol's `_meta` off the arguments of `out`'s calls, then
/// makes one call of each call and the call whose span its traceparent
/// names (see the module's doc), noting each record not counted again.
pub(crate) fn settle(trace: &Trace, out: &mut Analysis) {
    let mut links: Vec<(usize, SpanId)> = Vec::new();
    for (i, c) in out.calls.iter_mut().enumerate() {
        if let Some(Some(parent)) = strip(&mut c.args, trace.id) {
            links.push((i, parent));
        }
    }
    if !links.is_empty() {
        join(trace, out, &links);
    }
}

/// Whether calls named `a` and `b` call one tool: the same name, or one
/// the other's namespaced form (`server__tool`, `server.tool`).
fn same_tool(a: &str, b: &str) -> bool {
    a == b || super::hollow_record::same_tool(a, b) || super::hollow_record::same_tool(b, a)
}

/// Joins each linked call (`links`: call index, the span its traceparent
/// names) with the call of that span.
fn join(trace: &Trace, out: &mut Analysis, links: &[(usize, SpanId)]) {
    let calls = &out.calls;
    let at = merge::by_span(calls);
    let mut root: Vec<usize> = (0..calls.len()).collect();
    let mut merged: HashMap<usize, ToolCall> = HashMap::new();
    let mut kept: HashMap<SpanId, SpanId> = HashMap::new();
    let positions = trace.positions();
    let has_id = |c: &ToolCall| {
        c.call_id.is_some()
            || positions
                .get(c.span_id)
                .and_then(|p| trace.spans.get(p))
                .and_then(super::source::tool_call_id)
                .is_some()
    };
    for &(i, parent) in links {
        let Some(&j) = at.get(&parent) else {
            continue;
        };
        let (a, b) = (&calls[i], &calls[j]);
        // Nested (the request's span under the call's): `merge` joins them.
        // Each call is joined once.
        if i == j || a.within == Some(parent) || root[i] != i || root[j] != j {
            continue;
        }
        if !same_tool(&a.name, &b.name) || merged.contains_key(&i) || merged.contains_key(&j) {
            continue;
        }
        // The record with the most of the call; of equals, the caller's.
        let score = |c: &ToolCall| {
            u8::from(!c.args.is_none()) + u8::from(c.result.is_some()) + u8::from(has_id(c))
        };
        let (keep, drop) = if score(a) > score(b) { (i, j) } else { (j, i) };
        let one = filled(&calls[keep], &calls[drop]);
        out.notes.push(format!(
            "tool call `{}` (span {}) is another record of the call span {} shows (its MCP request's `_meta.traceparent` names that span): not counted again",
            calls[drop].name, calls[drop].span_id, calls[keep].span_id
        ));
        kept.insert(calls[drop].span_id, calls[keep].span_id);
        root[drop] = keep;
        merged.insert(keep, one);
    }
    if merged.is_empty() {
        return;
    }
    merge::keep_groups(&mut out.calls, &root, merged);
    // What was within a record is within the call kept.
    for c in &mut out.calls {
        c.within = c.within.map(|w| kept.get(&w).copied().unwrap_or(w));
    }
    for r in &mut out.runs {
        r.within = r.within.map(|w| kept.get(&w).copied().unwrap_or(w));
    }
}

/// `keep` with what it lacks taken from `other`: arguments, result, an
/// error `other` recorded.
fn filled(keep: &ToolCall, other: &ToolCall) -> ToolCall {
    let mut one = keep.clone();
    if one.args.is_none() {
        one.args = other.args.clone();
    }
    if one.result.is_none() {
        one.result = other.result.clone();
    }
    if one.mcp_server.is_none() {
        one.mcp_server = other.mcp_server.clone();
    }
    if one.status == CallStatus::Ok && other.status == CallStatus::Error {
        one.status = other.status.clone();
        one.error_message = other.error_message.clone();
        one.error_type = other.error_type.clone();
    }
    one
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::assemble::{SpanRecord, TraceId};
    use crate::extract::tests::sp;
    use crate::extract::Extractor;

    const TRACE: TraceId = TraceId([7; 16]);

    fn traceparent(span: u8) -> String {
        format!("00-{}-{}-01", TRACE.to_hex(), SpanId([span; 8]))
    }

    /// A made-up framework's tool span (`acme.*`, with the model's call id)
    /// under its agent, and a made-up MCP client's span of the request
    /// (`relay.*`, no call id) under the client's session, beside it.
    fn two_writers(client_input: &str, client_name: &str) -> Vec<SpanRecord> {
        vec![
            sp(1, None, (0, 1000), "workflow", &[]),
            sp(
                2,
                Some(1),
                (10, 990),
                "agent",
                &[("acme.span.kind", "agent")],
            ),
            sp(
                3,
                Some(2),
                (100, 200),
                "tool book_room",
                &[
                    ("acme.span.kind", "tool"),
                    ("acme.tool.name", "book_room"),
                    ("gen_ai.tool.call.id", "call_7"),
                    ("acme.input", r#"{"room": 12}"#),
                ],
            ),
            sp(4, Some(1), (5, 995), "relay.session", &[]),
            sp(
                5,
                Some(4),
                (100, 190),
                "relay.call",
                &[
                    ("relay.span.kind", "tool"),
                    ("relay.tool.name", client_name),
                    ("relay.input", client_input),
                    ("relay.output", r#"{"booked": true}"#),
                ],
            ),
        ]
    }

    fn analyze(spans: Vec<SpanRecord>) -> Analysis {
        Extractor::default().analyze(&Trace::new(TRACE, spans, 0))
    }

    #[test]
    fn the_protocol_s_meta_comes_off_any_rule_s_arguments() {
        let input = format!(
            r#"{{"room": 12, "_meta": {{"traceparent": "{}", "progressToken": 4}}}}"#,
            traceparent(9)
        );
        let a = analyze(two_writers(&input, "book_room"));
        assert_eq!(a.calls.len(), 2, "{:?}", a.calls);
        for c in &a.calls {
            assert_eq!(c.args.value(), Some(&json!({"room": 12})), "{c:?}");
        }
        // As text too (what `inspect` keeps), and with the key order kept.
        for (text, ordered) in [(true, false), (false, true)] {
            let x = Extractor {
                args_text: text,
                ordered_args: ordered,
                ..Extractor::default()
            };
            let a = x.analyze(&Trace::new(TRACE, two_writers(&input, "book_room"), 0));
            let mut out = Vec::new();
            a.calls[1].args.write_json(&mut out);
            assert_eq!(out, br#"{"room":12}"#);
            if ordered {
                let kept = a.calls[1].args.ordered().map(|o| &**o);
                assert!(matches!(kept, Some(PyValue::Dict(items)) if items.len() == 1));
            }
        }
        // A `_meta` with a key of another kind, or none, is the tool's.
        for own in [
            r#"{"room": 12, "_meta": {"owner": "ann"}}"#,
            r#"{"room": 12, "_meta": {}}"#,
            r#"{"room": 12, "_meta": "x"}"#,
        ] {
            let a = analyze(two_writers(own, "book_room"));
            let client = a.calls.iter().find(|c| c.span_id == SpanId([5; 8]));
            let args = client.and_then(|c| c.args.value());
            assert!(
                args.is_some_and(|v| v.get("_meta").is_some()),
                "{:?}",
                a.calls
            );
        }
    }

    #[test]
    fn a_traceparent_naming_another_call_s_span_is_that_call() {
        let input = format!(
            r#"{{"room": 12, "_meta": {{"traceparent": "{}"}}}}"#,
            traceparent(3)
        );
        let a = analyze(two_writers(&input, "book_room"));
        assert_eq!(a.calls.len(), 1, "{:?}", a.calls);
        let c = &a.calls[0];
        // The framework's record has the call id: kept, the result filled.
        assert_eq!(c.span_id, SpanId([3; 8]));
        assert_eq!(c.args.value(), Some(&json!({"room": 12})));
        assert!(c.result.is_some(), "{c:?}");
        assert!(
            a.notes.iter().any(|n| n.contains("traceparent")),
            "{:?}",
            a.notes
        );
        // A namespaced name is the same tool.
        let a = analyze(two_writers(&input, "hotel.book_room"));
        assert_eq!(a.calls.len(), 1, "{:?}", a.calls);
        // Another tool, another trace, a span that is no call's: two calls.
        let other_trace = input.replace(&TRACE.to_hex(), &TraceId([8; 16]).to_hex());
        let no_call = format!(
            r#"{{"room": 12, "_meta": {{"traceparent": "{}"}}}}"#,
            traceparent(2)
        );
        for (input, name) in [
            (&input, "cancel_room"),
            (&other_trace, "book_room"),
            (&no_call, "book_room"),
        ] {
            let a = analyze(two_writers(input, name));
            assert_eq!(a.calls.len(), 2, "{name} {input}: {:?}", a.calls);
        }
    }

    #[test]
    fn a_traceparent_s_ids_are_read_as_w3c_writes_them() {
        let (t, s) = parent_in(&traceparent(3)).unwrap();
        assert_eq!((t, s), (TRACE, SpanId([3; 8])));
        assert!(parent_in("00-0000-0303030303030303-01").is_none());
        assert!(parent_in(&format!("00-{}-0000000000000000-01", TRACE.to_hex())).is_none());
        assert!(parent_in("traceparent").is_none());
    }
}
