//! Calls answered in a trace's requests that no output of the trace asked
//! for (docs/conventions.md, "The conversation witness", "Each model call
//! its own trace").
//!
//! When each model call is a trace of its own, the request of the next
//! model call repeats the model turn that asked for the calls, and those
//! calls are counted in the trace of that request. The request's copy of a
//! call is the framework's, not the model's: a framework may rewrite it
//! before sending it back (Langroid adds its tool message's `request` field
//! to the arguments). The model's own output, in the trace before, has the
//! exact arguments under the same call id: when the reader going through
//! the traces in order (`extract::carry`) holds that output's call, left
//! open in the same process before the request, the call takes the
//! output's arguments, the request's copy filling in only when the output
//! recorded none. Read on its own, the trace lists the ids it counted so
//! (`Open::retold`), and the reader reads it again with those calls, which
//! it keeps (a later request's history repeats them).

use std::collections::HashSet;

use serde_json::Value;

use super::idless::{by_name, is_made};
use super::{conversation_call, has_any_input, id_text, later, own_ids, uncounted_answer};
use super::{AskedAt, Request};
use crate::assemble::Trace;
use crate::extract::open::{run_key, OpenAsk, HISTORY_FORM};
use crate::extract::requested::Asked;
use crate::extract::{Analysis, Ctx, Extractor};

/// The model output's record of call `a` that an earlier trace left open
/// (`carried`), with the arguments the call is counted with: the output's,
/// else the request's copy's.
pub(super) fn asked_before<'c>(carried: &'c [OpenAsk], a: &Asked) -> Option<(Asked, &'c OpenAsk)> {
    // A history without call ids (Monocle's) retells a call under an id
    // made from its place: the output's call of that tool whose arguments
    // the retold ones hold, each the same, is it (a framework may add a
    // key of its own, never change the model's).
    let unrecorded = a.id.as_deref().is_some_and(is_made);
    let c = carried.iter().find(|c| {
        let same = if unrecorded {
            c.asked.id.as_deref().is_some_and(|id| !is_made(id)) && holds(&a.args, &c.asked.args)
        } else {
            c.asked.id == a.id
        };
        !c.is_echo() && c.form != HISTORY_FORM && same && c.asked.name == a.name
    })?;
    let args = if later::is_empty(&c.asked.args) {
        &a.args
    } else {
        &c.asked.args
    };
    let asked = Asked {
        args: args.clone(),
        ..a.clone()
    };
    Some((asked, c))
}

/// Whether request `r` carries results and neither they nor its history
/// keep a call id.
fn keeps_no_id(r: &Request) -> bool {
    !r.answers.is_empty()
        && r.answers.iter().all(|a| a.id.is_none())
        && r.history.iter().all(|h| h.id.is_none())
}

/// Whether `retold` holds every key of `asked`, an object with at least
/// one, with the same value.
fn holds(retold: &Value, asked: &Value) -> bool {
    match (retold.as_object(), asked.as_object()) {
        (Some(r), Some(a)) => !a.is_empty() && a.iter().all(|(k, v)| r.get(k) == Some(v)),
        _ => false,
    }
}

/// The calls answered in this trace's requests that no output of the trace
/// asked for, when the requests show them ([`super::rebuild`]), each with
/// the arguments of the model output an earlier trace recorded for it
/// (`carried`), if any. Returns the (call id, process, request start) of
/// those counted without such a record, for the reader to look for one.
pub(super) fn in_requests<'r>(
    (x, trace, seen, asked): (&Extractor, &Trace, &[Ctx], &[AskedAt]),
    requests: &'r [Request],
    counted: &mut HashSet<(&'r str, &'r str)>,
    carried: &[OpenAsk],
    out: &mut Analysis,
) -> Vec<(String, u64, u64)> {
    let mut told: Vec<(String, u64, u64)> = Vec::new();
    let start = |i: usize| trace.spans[i].span.start_time_unix_nano;
    // Calls answered here that no output of this trace asked for. The
    // trace's first request repeats the earlier traces' calls, counted
    // there: of it, only the last model turn (its calls answered by the
    // results after it). A later request's history is this trace's own,
    // whatever lost the model's outputs: each of its answered calls that
    // the first request did not carry already.
    let mut before_trace: Option<HashSet<&str>> = None;
    for (i, r) in requests.iter().enumerate() {
        // (Of the first request, also its history past a call this trace
        // asked for: `later`.)
        let own = later::after_asked(r, asked);
        let candidates: Vec<&Asked> = match &before_trace {
            None => r.last_turn.iter().chain(own).collect(),
            Some(_) => r.history.iter().collect(),
        };
        let earlier = before_trace.as_ref();
        let fresh: Vec<&Asked> = candidates
            .into_iter()
            .filter(|a| {
                a.id.as_deref()
                    .is_some_and(|id| earlier.is_none_or(|e| !e.contains(id)))
            })
            .collect();
        // The trace's first request decides (one with no result at all
        // starts the conversation here); one whose results and history
        // keep no call id cannot say which calls came before it (a chain's
        // flattened copy of the messages, beside the model call's own
        // record with ids: instructor under OpenInference).
        if before_trace.is_none() && has_any_input(&trace.spans[i]) && !keeps_no_id(r) {
            let last = own_ids(r, asked);
            before_trace = Some(
                r.history
                    .iter()
                    .filter_map(|a| a.id.as_deref())
                    .filter(|id| !last.contains(id))
                    .collect(),
            );
        }
        for a in fresh {
            let Some(id) = a.id.as_deref() else {
                continue;
            };
            let Some(answer) = uncounted_answer(r, a, id, asked, counted) else {
                continue;
            };
            counted.insert((id, &a.name));
            let before = asked_before(carried, a);
            let span_id = trace.spans[i].span_id;
            out.notes.push(match &before {
                Some((_, c)) => format!(
                    "`{}`{} is answered in the request of span {span_id}; its arguments are those the model output of trace {} (span {}) gave: counted here",
                    a.name, id_text(a), c.trace_id, c.span_id
                ),
                None => format!(
                    "`{}`{} is asked for and answered only in the request of span {span_id} (no output of this trace asks for it): counted here",
                    a.name, id_text(a)
                ),
            });
            if before.is_none() {
                // Without a recorded id, the reader looks for its tool.
                let id = if is_made(id) {
                    by_name(&a.name)
                } else {
                    id.to_string()
                };
                told.push((id, run_key(&trace.spans[i]), start(i)));
            }
            let a = before.as_ref().map_or(a, |(b, _)| b);
            let mut call = conversation_call(x, trace, seen, out, i, a, r.form, Some((i, answer)));
            // It ran before the request that carries its result (after the
            // span's own output, when it follows a call that output asked;
            // after the earlier trace's output that asked for it).
            if !own.iter().any(|o| o.id == a.id && o.name == a.name) {
                call.start_time_unix_nano = before.as_ref().map_or(start(i), |(_, c)| {
                    super::asked_time::asked_start(c, start(i))
                });
                call.end_time_unix_nano = start(i);
            }
            out.calls.push(call);
        }
    }
    told
}

#[cfg(test)]
mod tests {
    use serde_json::{json, Value};

    use crate::assemble::{Trace, TraceId};
    use crate::extract::test_support::{in_process, read_in_order};
    use crate::extract::tests::sp;

    /// A made-up vendor's model call, a trace of its own in `process`:
    /// OpenAI-shaped messages under its own keys.
    fn model_call(
        trace: u8,
        when: (u64, u64),
        process: &str,
        input: Value,
        output: Value,
    ) -> Trace {
        let (input, output) = (input.to_string(), output.to_string());
        let s = sp(
            1,
            None,
            when,
            "acme.complete",
            &[
                ("acme.span.kind", "LLM"),
                ("acme.request", &input),
                ("acme.response", &output),
            ],
        );
        Trace::new(TraceId([trace; 16]), vec![in_process(s, process)], 0)
    }

    fn asks(id: &str, name: &str, args: &Value) -> Value {
        json!({"role": "assistant", "tool_calls": [{"id": id, "type": "function",
            "function": {"name": name, "arguments": args.to_string()}}]})
    }

    /// The arguments of the calls read from the model's output asking with
    /// `said` and the next trace's history repeating the call as `retelling`
    /// and its result as `result`.
    fn args_read(said: &Value, retelling: Value, result: Value, process: &str) -> Vec<Value> {
        let user = json!({"role": "user", "content": "tide at Brest?"});
        let read = read_in_order(vec![
            model_call(
                1,
                (0, 10),
                "p",
                json!({"messages": [user]}),
                json!({"choices": [{"message": asks("k1", "tide", said)}]}),
            ),
            model_call(
                2,
                (20, 30),
                process,
                json!({"messages": [user, retelling, result]}),
                json!({"choices": [{"message": {"role": "assistant", "content": "06:12"}}]}),
            ),
        ]);
        read.iter()
            .flat_map(|a| &a.calls)
            .map(|c| c.args.value().cloned().unwrap_or_default())
            .collect()
    }

    /// [`args_read`] with the call retold as `retold` under its call id.
    fn args(said: Value, retold: Value, process: &str) -> Vec<Value> {
        let result = json!({"role": "tool", "tool_call_id": "k1", "content": "06:12"});
        args_read(&said, asks("k1", "tide", &retold), result, process)
    }

    /// As [`args`], the next trace's history keeping no call ids (the
    /// call retold without one, its result without one).
    fn args_without_ids(said: Value, retold: Value) -> Vec<Value> {
        let bare = json!({"role": "assistant", "tool_calls": [{"type": "function",
            "function": {"name": "tide", "arguments": retold.to_string()}}]});
        args_read(
            &said,
            bare,
            json!({"role": "tool", "content": "06:12"}),
            "p",
        )
    }

    #[test]
    fn a_call_retold_without_an_id_keeps_the_model_s_arguments_it_holds() {
        let said = json!({"port": "Brest"});
        let retold = json!({"port": "Brest", "request": "tide"});
        assert_eq!(args_without_ids(said.clone(), retold.clone()), [said]);
        // Arguments the retold ones do not hold are another call's.
        let other = json!({"port": "Cork"});
        assert_eq!(args_without_ids(other, retold.clone()), [retold]);
    }

    #[test]
    fn a_call_retold_in_the_next_request_keeps_the_model_s_arguments() {
        let said = json!({"port": "Brest"});
        let retold = json!({"port": "Brest", "request": "tide"});
        assert_eq!(args(said.clone(), retold.clone(), "p"), [said]);
        // An output without arguments: the request's copy fills them.
        assert_eq!(args(json!({}), retold.clone(), "p"), vec![retold.clone()]);
        // Another process's output is no record of this call.
        assert_eq!(args(json!({"port": "Cork"}), retold.clone(), "q"), [retold]);
    }
}
