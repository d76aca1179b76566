//! What a request recorded after the model's output says of that output's
//! calls (docs/conventions.md, "The conversation witness", "A request
//! that repeats the call").
//!
//! A request whose history holds a call was sent after that call, whatever
//! span records it and whenever that span started: some tracers write one
//! span for a whole conversation (the first output, the last request), so
//! the request that answers a call may sit on the span that asked for it.
//! Its history is also the better record of the call's arguments when the
//! output recorded none (a streamed output whose arguments were never
//! assembled: `{}`), and every call in it after one this trace asked for is
//! this trace's own, not an earlier trace's repeated.

use serde_json::Value;

use super::{AskedAt, Request};
use crate::extract::requested::Asked;

/// Whether request `r`'s history holds call `a`: the same call id and
/// tool, or, without ids, the same tool and arguments.
pub(super) fn carries(r: &Request, a: &Asked) -> bool {
    r.history.iter().any(|h| {
        h.name == a.name
            && match (a.id.as_deref(), h.id.as_deref()) {
                (Some(x), Some(y)) => x == y,
                (None, _) => h.args == a.args && !is_empty(&a.args),
                (Some(_), None) => false,
            }
    })
}

/// The calls of request `r`'s history after the first one that `asked`
/// (this trace's outputs) holds by call id: made in this trace.
pub(super) fn after_asked<'r>(r: &'r Request, asked: &[AskedAt]) -> &'r [Asked] {
    let first = r.history.iter().position(|h| {
        h.id.is_some()
            && asked
                .iter()
                .any(|at| at.asked.id == h.id && at.asked.name == h.name)
    });
    first.map_or(&[], |k| &r.history[k + 1..])
}

/// The arguments request `r`'s history gives call `a` (same call id and
/// tool) when the output recorded none or an empty set and the history
/// has some.
pub(super) fn fuller_args<'r>(r: &'r Request, a: &Asked) -> Option<&'r Value> {
    if !is_empty(&a.args) {
        return None;
    }
    let id = a.id.as_deref()?;
    r.history
        .iter()
        .find(|h| h.id.as_deref() == Some(id) && h.name == a.name && !is_empty(&h.args))
        .map(|h| &h.args)
}

/// No arguments: none recorded, an empty object, or its empty text.
pub(super) fn is_empty(v: &Value) -> bool {
    match v {
        Value::Null => true,
        Value::Object(o) => o.is_empty(),
        Value::String(t) => matches!(t.trim(), "" | "{}"),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::{json, Value};

    use crate::assemble::{SpanRecord, Trace, TraceId};
    use crate::extract::tests::sp;
    use crate::extract::{Analysis, Extractor};

    fn analyze(spans: Vec<SpanRecord>) -> Analysis {
        Extractor::default().analyze(&Trace::new(TraceId([7; 16]), spans, 0))
    }

    /// (name, args, result, span_name) of each call, in start order.
    fn got(a: &Analysis) -> Vec<(String, Value, Value, Option<String>)> {
        let mut calls: Vec<_> = a.calls.iter().collect();
        calls.sort_by_key(|c| c.start_time_unix_nano);
        calls
            .iter()
            .map(|c| {
                (
                    c.name.clone(),
                    c.args.value().cloned().unwrap_or_default(),
                    c.result.as_ref().map(|r| r.to_value()).unwrap_or_default(),
                    c.span_name.clone(),
                )
            })
            .collect()
    }

    /// A made-up vendor's model span with a request's messages and the
    /// model's output, both as OpenAI-shaped JSON.
    fn model(id: u8, when: (u64, u64), request: Value, output: Value) -> SpanRecord {
        let (i, o) = (request.to_string(), output.to_string());
        sp(
            id,
            None,
            when,
            "acme.chat",
            &[
                ("acme.span.kind", "LLM"),
                ("acme.prompt", &i),
                ("acme.completion", &o),
            ],
        )
    }

    fn asks(id: &str, name: &str, args: Value) -> Value {
        json!({"role": "assistant", "tool_calls": [
            {"id": id, "type": "function", "function": {"name": name, "arguments": args.to_string()}}]})
    }

    fn answer(id: &str, content: &str) -> Value {
        json!({"role": "tool", "tool_call_id": id, "content": content})
    }

    fn user() -> Value {
        json!({"role": "user", "content": "plan a day"})
    }

    #[test]
    fn one_span_with_the_first_output_and_the_last_request_gives_every_call() {
        let first = json!({"town": "Oslo"});
        let second = json!({"route": "north"});
        let whole = json!({"messages": [
            user(),
            asks("k1", "mcp__maps__look_up", first.clone()),
            answer("k1", "{\"inn\": \"Fjord\"}"),
            asks("k2", "walk", second.clone()),
            answer("k2", "done"),
            {"role": "assistant", "content": "Planned."},
        ]});
        let output =
            json!({"choices": [{"message": asks("k1", "mcp__maps__look_up", first.clone())}]});
        let a = analyze(vec![model(1, (10, 90), whole, output)]);
        assert_eq!(
            got(&a),
            vec![
                (
                    "look_up".into(),
                    first,
                    json!({"inn": "Fjord"}),
                    Some("mcp__maps__look_up".into())
                ),
                ("walk".into(), second, json!("done"), None),
            ],
            "{:?} {:?}",
            a.notes,
            a.warnings
        );
    }

    #[test]
    fn a_result_on_the_asking_span_without_the_call_before_it_answers_nothing() {
        // The request holds a result for the id but not the call: it may be
        // the request before the output (ids reused), so it is no answer.
        let request = json!({"messages": [user(), answer("k1", "1")]});
        let output =
            json!({"choices": [{"message": asks("k1", "look_up", json!({"town": "Oslo"}))}]});
        let a = analyze(vec![model(1, (10, 90), request, output)]);
        assert!(a.calls.is_empty(), "{:?}", got(&a));
        assert!(
            a.warnings.iter().any(|w| w.contains("look_up")),
            "{:?}",
            a.warnings
        );
    }

    #[test]
    fn empty_streamed_arguments_give_way_to_the_later_history_s() {
        let full = json!({"town": "Oslo"});
        let kept = json!({"route": "north"});
        let spans = vec![
            model(
                1,
                (10, 20),
                json!({"messages": [user()]}),
                json!({"choices": [{"message": asks("k1", "look_up", json!({}))}]}),
            ),
            model(
                2,
                (30, 40),
                json!({"messages": [user(), asks("k1", "look_up", full.clone()), answer("k1", "1")]}),
                json!({"choices": [{"message": asks("k2", "walk", kept.clone())}]}),
            ),
            // The history disagrees with an output that has arguments: the
            // output's stay.
            model(
                3,
                (50, 60),
                json!({"messages": [user(), asks("k1", "look_up", full.clone()), answer("k1", "1"),
                    asks("k2", "walk", json!({"route": "south"})), answer("k2", "2")]}),
                json!({"choices": [{"message": {"role": "assistant", "content": "ok"}}]}),
            ),
        ];
        let a = analyze(spans);
        let args: Vec<Value> = got(&a).into_iter().map(|c| c.1).collect();
        assert_eq!(args, vec![full, kept], "{:?}", a.warnings);
    }
}
