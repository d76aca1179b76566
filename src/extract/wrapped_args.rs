//! A tool span without a call id, a trace of its own (its root, or its one
//! tool span: [`mark`]), that records the
//! model's arguments wrapped in a one-key object: a decorator's record of a
//! function's single parameter (docs/conventions.md, "One call, several
//! spans").
//!
//! An observer that wraps a tool function records its input as a map of
//! parameter name to value (judgeval's `observe`: `judgment.input`). A tool
//! function of one parameter taking the model's whole arguments (`(a) =>
//! ...`, `function check(args)`) is recorded as `{"a": {...the model's
//! arguments...}}`, and nothing else says which call the span ran: no call
//! id, and every span the root of a trace of its own, the model calls'
//! traces counting the same calls from the conversation. Such a span is the
//! record of the call the model asked for when the conversation's call
//! would join it as a span with the model's own arguments does
//! (`twice::ran_between`: the same process and tool, run after the model's
//! output asking for it and before the request carrying its result) and,
//! besides:
//!
//! - its arguments are one key whose value equals the model's arguments,
//!   that key being none of the model's argument keys (`{"sku": ...}` for
//!   an ask `{"sku": ...}` is the arguments themselves, not a wrapper:
//!   [`wraps`]);
//! - its result, when it has one, equals the result the request carries
//!   (when that has one): [`results_agree`];
//! - only one ask fits the span (read after the asking trace) or only one
//!   conversation call fits it (read after the answering trace): two asks
//!   it could be join nothing.
//!
//! Read after the asking trace and before the answering one, the span takes
//! the model's arguments (`twice::args_of_ask`, as a bare value does) and
//! the answering trace finds it as a span with the same arguments, which
//! counts the call; two such spans in one window leave the request's call
//! ambiguous (`Carry::running_span`): nothing joins. Read after the
//! answering trace, the conversation counts the call
//! (`Carry::counting_wrapped`) and the span is not counted again.

use serde_json::Value;

use super::open::{Answer, Echo, OpenAsk, Wrapped};
use super::{CallResult, ToolCall};
use crate::assemble::{SpanId, Trace};

/// Whether `span`, a tool span's arguments, are `asked`, the model's,
/// wrapped in a one-key object whose key is none of the model's argument
/// keys.
pub(crate) fn wraps(span: &Value, asked: &Value) -> bool {
    let (Value::Object(o), Value::Object(a)) = (span, asked) else {
        return false;
    };
    let (1, Some((k, inner))) = (o.len(), o.iter().next()) else {
        return false;
    };
    inner.is_object() && !a.contains_key(k) && crate::value::json_eq(inner, asked)
}

/// Whether `args` have the shape of a wrapper ([`wraps`]): an object of one
/// key holding an object. Cheap: no comparison.
pub(crate) fn wrapper_shaped(args: &Value) -> bool {
    matches!(args, Value::Object(o) if o.len() == 1 && o.values().all(Value::is_object))
}

/// Whether `span`, a tool span's call without a call id, may have run `ask`,
/// a call an earlier trace's model output asked for and left open, its
/// arguments the model's wrapped ([`wraps`]): the same tool and process,
/// the span started after the model's answer ended.
pub(crate) fn wraps_ask(span: &Echo, ask: &OpenAsk) -> bool {
    !span.from_conversation
        && span.id.is_none()
        && span.name == ask.asked.name
        && ask.end_time_unix_nano <= span.start
        && span
            .resource
            .as_deref()
            .is_some_and(|r| super::open::resource_key(r) == ask.run)
        && wraps(&span.args, &ask.asked.args)
}

/// Whether `span`, a tool span's call without a call id read after the
/// trace that counts `counted` from the conversation, ran that call with
/// the model's arguments wrapped: [`super::twice::ran_between`]'s window
/// and process, [`wraps`] for the arguments, and [`results_agree`].
pub(crate) fn ran_wrapped(counted: &Echo, span: &Echo) -> bool {
    let Some(asked) = counted.asked else {
        return false;
    };
    counted.from_conversation
        && !span.from_conversation
        && counted.id.is_some()
        && span.id.is_none()
        && span.wrapped.as_ref().is_some_and(|w| !w.took_args)
        && counted.name == span.name
        && asked <= span.start
        && span.end <= super::call_window::answered_at(counted)
        && super::open::same_process(&counted.resource, &span.resource)
        && wraps(&span.args, &counted.args)
        && results_agree(counted, span)
}

/// Whether the result of `span`, a tool span's call whose arguments wrap
/// the model's ([`Wrapped`]), agrees with the one the request carrying
/// `conv`'s result holds: equal, or one of them missing.
pub(crate) fn results_agree(conv: &Echo, span: &Echo) -> bool {
    match (span.wrapped.and_then(|w| w.result), &conv.answer) {
        (Some(result), Some(Answer(answer))) => result == digest(answer),
        _ => true,
    }
}

/// A 64-bit digest of `result` as a JSON value, written as serde_json
/// writes it (object keys sorted): equal for results equal as values
/// (`open::Answer`'s equality), unequal otherwise but by a hash collision.
pub(crate) fn digest(result: &CallResult) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    result.to_value().to_string().hash(&mut h);
    h.finish()
}

/// [`results_agree`] for a span that took the model's arguments through a
/// wrapper, for `twice::ran_between`; any other span agrees there (its
/// join does not ask for a result).
pub(crate) fn took_agrees(conv: &Echo, span: &Echo) -> bool {
    span.wrapped
        .as_ref()
        .is_none_or(|w| !w.took_args || results_agree(conv, span))
}

/// Marks the calls of `calls` (the trace's, as the carry keeps them, in
/// the order of `a`'s calls) that may be a wrapper's record ([`Wrapped`],
/// with the call's result's digest if any): a tool span's call without a
/// call id, in a trace of its own ([`own_trace`]), whose arguments were
/// taken from an ask through a wrapper (`took`, by span), or have a
/// wrapper's shape. The other calls are left as they are.
pub(crate) fn mark(calls: &mut [Echo], trace: &Trace, a: &super::Analysis, took: &[SpanId]) {
    // One walk: `calls` follow `a.calls` in order (`echo::echoes_of`).
    let mut of_trace = a.calls.iter();
    // Built once, at the first candidate: most traces have none.
    let mut positions = None;
    for e in calls.iter_mut() {
        if e.from_conversation || e.id.is_some() {
            continue;
        }
        let took_args = took.contains(&e.span_id);
        if !took_args && !wrapper_shaped(&e.args) {
            continue;
        }
        let positions = positions.get_or_insert_with(|| trace.positions());
        if !own_trace(trace, positions.get(e.span_id), a) {
            continue;
        }
        let call = of_trace
            .by_ref()
            .find(|c| c.span_id == e.span_id && c.name == e.name && c.from.is_none());
        e.wrapped = Some(Wrapped {
            result: call.and_then(|c| c.result.as_ref()).map(digest),
            took_args,
        });
    }
}

/// Whether the span at `at` of `trace` is a tool span in a trace of its
/// own: the trace's root (no parent in it), or the one span of the trace
/// a call is read from. A tool span under an agent's run among others is
/// the record of its own call, not a decorator's of an asked one.
fn own_trace(trace: &Trace, at: Option<usize>, a: &super::Analysis) -> bool {
    at.is_some_and(|i| trace.parent.get(i).is_some_and(Option::is_none))
        || a.calls.iter().filter(|c| c.from.is_none()).count() == 1
}

/// The note for `c`, a tool span's call whose own arguments `wrapper` wrap
/// the model's, that takes them from `e`, an earlier trace's ask.
pub(crate) fn took_note(c: &ToolCall, wrapper: &Value, e: &OpenAsk) -> String {
    let key = match wrapper {
        Value::Object(o) => o.keys().next().map_or("", String::as_str),
        _ => "",
    };
    format!(
        "tool call `{}` (span {}) records the arguments {} the model asked for in trace {} wrapped under its one parameter `{}` (no call id): the model's are taken",
        c.name, c.span_id, e.asked.args, e.trace_id, key
    )
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_one_key_object_holding_the_model_s_arguments_wraps_them() {
        let asked = json!({"sku": "B-7", "bins": ["N", "S"]});
        assert!(wraps(
            &json!({"a": {"bins": ["N", "S"], "sku": "B-7"}}),
            &asked
        ));
        assert!(wraps(&json!({"args": {}}), &json!({})));
        // Near misses: the key one of the model's (the arguments
        // themselves), other values, two keys, a bare value, the model's
        // arguments not an object.
        let one = json!({"sku": "B-7"});
        assert!(!wraps(&json!({"sku": {"sku": "B-7"}}), &one));
        assert!(!wraps(&json!({"sku": "B-7"}), &one));
        assert!(!wraps(
            &json!({"a": {"sku": "B-8", "bins": ["N", "S"]}}),
            &asked
        ));
        assert!(!wraps(&json!({"a": {"sku": "B-7"}, "b": {}}), &one));
        assert!(!wraps(&json!({"a": "B-7"}), &one));
        assert!(!wraps(&json!({"a": ["B-7"]}), &json!(["B-7"])));
        assert!(wrapper_shaped(&json!({"a": {}})));
        assert!(!wrapper_shaped(&json!({"a": 1})));
        assert!(!wrapper_shaped(&json!({"a": {}, "b": {}})));
    }
}
