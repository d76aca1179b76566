//! Calls a trace's first request shows answered in its history that no
//! earlier trace asked for (docs/conventions.md, "The conversation
//! witness", "Each model call its own trace").
//!
//! When each model call is a trace of its own, the history of a trace's
//! first request repeats calls the traces before counted, so only its last
//! model turn is counted there. An instrumentation may fail to record a
//! model call's messages (OpenLIT's Azure AI Inference integration writes
//! none on a call that returned tool calls): no trace asked for those
//! calls, and the later request's history is the only record. Such calls
//! are left to the reader going through the traces in order
//! (`extract::carry`): those that no earlier trace of the process asked for
//! or counted come back as carried entries ([`HISTORY_FORM`]) and are
//! counted in the trace of that request, in the order of the history.

use std::collections::HashSet;

use super::{conversation_call, id_text, Request};
use crate::assemble::Trace;
use crate::extract::open::{run_key, OpenAsk, HISTORY_FORM};
use crate::extract::{Analysis, Ctx, Extractor};

/// The answered calls of the history of the trace's first request (the
/// first span with `inputs`), before its last model turn and before any
/// call the trace asked for, that nothing in
/// the trace asked for or counted: counted when `carried` says no earlier
/// trace did, else left in `history` for the reader to ask.
pub(super) fn history_calls<'r>(
    (x, trace, seen, asked): (&Extractor, &Trace, &[Ctx], &[super::AskedAt]),
    inputs: &[bool],
    requests: &'r [Request],
    counted: &mut HashSet<(&'r str, &'r str)>,
    carried: &[OpenAsk],
    history: &mut Vec<OpenAsk>,
    out: &mut Analysis,
) {
    let Some(i) = inputs.iter().position(|&input| input) else {
        return;
    };
    let Some(r) = requests.get(i) else {
        return;
    };
    // The trace's own calls are counted after its asked ones.
    let last = super::own_ids(r, asked);
    let start = trace.spans[i].span.start_time_unix_nano;
    for a in &r.history {
        let Some(id) = a.id.as_deref().filter(|id| !last.contains(id)) else {
            continue;
        };
        let Some(answer) = super::uncounted_answer(r, a, id, asked, counted) else {
            continue;
        };
        let unseen = carried
            .iter()
            .any(|c| c.form == HISTORY_FORM && c.asked.id == a.id && c.asked.name == a.name);
        // An earlier trace's output asked for it and no trace counted it
        // (`carry::history_asked`): a call of the turn before the last.
        let before = (!unseen)
            .then(|| super::repeated::asked_before(carried, a))
            .flatten();
        if !unseen && before.is_none() {
            history.push(OpenAsk {
                asked: a.clone(),
                form: HISTORY_FORM,
                trace_id: trace.id,
                span_id: trace.spans[i].span_id,
                end_time_unix_nano: start,
                run: run_key(&trace.spans[i]),
            });
            continue;
        }
        counted.insert((id, &a.name));
        let span_id = trace.spans[i].span_id;
        out.notes.push(match &before {
            Some((_, c)) => format!(
                "`{}`{} is answered in the history of the request of span {span_id} before its last model turn; the model output of trace {} (span {}) asked for it and no trace counted it: counted here, with that output's arguments",
                a.name, id_text(a), c.trace_id, c.span_id
            ),
            None => format!(
                "`{}`{} is answered in the history of the request of span {span_id} and no earlier trace of the process asked for or counted it: counted here",
                a.name, id_text(a)
            ),
        });
        let a = before.as_ref().map_or(a, |(b, _)| b);
        let mut call = conversation_call(x, trace, seen, out, i, a, r.form, Some((i, answer)));
        call.start_time_unix_nano = before
            .as_ref()
            .map_or(start, |(_, c)| super::asked_time::asked_start(c, start));
        call.end_time_unix_nano = start;
        out.calls.push(call);
    }
}

#[cfg(test)]
mod tests {
    use serde_json::{json, Value};

    use crate::assemble::{Trace, TraceId};
    use crate::extract::test_support::{in_process, read_in_order};
    use crate::extract::tests::sp;

    fn call(id: &str, name: &str, args: &str) -> Value {
        json!({"id": id, "type": "function", "function": {"name": name, "arguments": args}})
    }

    /// A made-up vendor's model call, a trace of its own: its request and
    /// output when it recorded them.
    fn model_call(n: u8, input: Option<&Value>, output: Option<&Value>) -> Trace {
        let (input, output) = (input.map(Value::to_string), output.map(Value::to_string));
        let mut attrs = vec![("gen_ai.operation.name", "chat")];
        attrs.extend(input.as_deref().map(|t| ("gen_ai.input.messages", t)));
        attrs.extend(output.as_deref().map(|t| ("gen_ai.output.messages", t)));
        let at = u64::from(n) * 100;
        let s = sp(1, None, (at, at + 50), "acme.chat", &attrs);
        Trace::new(TraceId([n; 16]), vec![in_process(s, "p")], 0)
    }

    fn names(got: &[crate::extract::Analysis]) -> Vec<Vec<String>> {
        got.iter()
            .map(|a| a.calls.iter().map(|c| c.name.clone()).collect())
            .collect()
    }

    #[test]
    fn history_calls_no_earlier_trace_asked_for_are_counted_once() {
        let user = json!({"role": "user", "content": "plan"});
        let (c1, c2) = (call("k1", "get_tide", "{}"), call("k2", "get_wind", "{}"));
        let turn = |c: &Value| json!({"role": "assistant", "tool_calls": [c]});
        let result = |id: &str| json!({"role": "tool", "tool_call_id": id, "content": "ok"});
        let second = json!([user, turn(&c1), result("k1")]);
        let third = json!([user, turn(&c1), result("k1"), turn(&c2), result("k2")]);
        let done = json!([{"role": "assistant", "content": "done"}]);

        // The first two model calls recorded nothing: the last request's
        // history is the only record of the first call.
        let got = read_in_order(vec![
            model_call(1, None, None),
            model_call(2, None, None),
            model_call(3, Some(&third), Some(&done)),
        ]);
        assert_eq!(names(&got), [vec![], vec![], vec!["get_tide", "get_wind"]]);

        // Recorded: each call counted once, in the trace after its asking.
        let got = read_in_order(vec![
            model_call(1, Some(&json!([user])), Some(&json!([turn(&c1)]))),
            model_call(2, Some(&second), Some(&json!([turn(&c2)]))),
            model_call(3, Some(&third), Some(&done)),
        ]);
        assert_eq!(names(&got), [vec![], vec!["get_tide"], vec!["get_wind"]]);

        // Only the model's last turn recorded before: that call was counted.
        let got = read_in_order(vec![
            model_call(2, Some(&second), None),
            model_call(3, Some(&third), Some(&done)),
        ]);
        assert_eq!(names(&got), [vec!["get_tide"], vec!["get_wind"]]);

        // One span for the whole conversation (the first output, the last
        // request): the history past the asked call is the trace's own,
        // counted after it, not as an unseen earlier call.
        // Rows are written in start order.
        let said = json!({"role": "assistant", "content": "done"});
        let whole = json!([user, turn(&c1), result("k1"), turn(&c2), result("k2"), said]);
        let mut got = read_in_order(vec![model_call(1, Some(&whole), Some(&json!([turn(&c1)])))]);
        got[0].calls.sort_by_key(|c| c.start_time_unix_nano);
        assert_eq!(names(&got), [vec!["get_tide", "get_wind"]]);
    }
}
