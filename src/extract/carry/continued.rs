//! A conversation a later trace of the same process retells, with calls
//! an earlier trace counted (docs/conventions.md, "Each model call its own
//! trace", "One call id in two traces").
//!
//! When each model call is a trace of its own, a later request repeats the
//! calls and answers of the turns before it. The conversation witness leaves
//! them to the traces before when it can tell history from the model's own
//! turn; an instrumentation that records the whole conversation, answers
//! included, on the output side (Mirascope's ops: `mirascope.response.messages`
//! beside the model's content) makes every call of it look like the trace's
//! own, and each trace counts them again.
//!
//! The model asks once for a call id, and the call is counted once, in the
//! first trace after the asking that counts it. A call of the trace read,
//! rebuilt from the conversation under call id `X`, retells the call an
//! earlier trace counted under `X` ([`Carry::continued`]) when: the earlier
//! call was rebuilt from the conversation too, in the same process, under
//! `X` with the same tool and arguments, in a trace that ended before the
//! trace read began; a model output of the process asked for `X` before the
//! earlier call (the carry found it: `Echo::asked`, or it keeps the ask);
//! and no model output of the process asked for `X` after the earlier call
//! (a scripted model reusing its ids asks again first). Two records that
//! merely share an id, without an asking output before them (two runs one
//! after the other), stay two calls; so do records of calls whose ask the
//! carry no longer keeps. The earlier call stays kept: each later trace of
//! the conversation retells it once more.

use super::{key, Carry, OpenAsk, ASK_ID, CALL_ID};
use crate::extract::merge::same_args;
use crate::extract::open::{resource_key, same_process, Echo, CONTINUED_FORM};

impl<T> Carry<T> {
    /// The position of the kept call that `later`, a call of the trace read
    /// rebuilt from the conversation, retells (see the module's doc).
    pub(super) fn continued(&self, later: &Echo) -> Option<usize> {
        let id = later.id.as_deref()?;
        let run = resource_key(later.resource.as_deref()?);
        if !later.from_conversation || later.args.is_null() {
            return None;
        }
        let began = later.window.0;
        let found = self
            .calls
            .last_under(key(CALL_ID, (later.name.as_str(), id)), |e| {
                e.from_conversation
                    && e.trace_id != later.trace_id
                    && e.id.as_deref() == Some(id)
                    && e.window.1 <= began
                    && !e.args.is_null()
                    && same_args(&e.args, &later.args)
                    && same_process(&e.resource, &later.resource)
            })?;
        let earlier = self.calls.get(found)?;
        // The model outputs of the process that asked for the id (`u64::MAX`:
        // an asking the carry no longer dates, `Carry::echoed`).
        let asks = |a: &OpenAsk| {
            a.run == run && a.asked.name == later.name && a.trace_id != later.trace_id
        };
        let dated = earlier
            .asked
            .is_some_and(|t| t != u64::MAX && t <= earlier.start);
        let asked_before = dated
            || self.asks.any_under(key(ASK_ID, id), |a| {
                asks(a) && a.end_time_unix_nano <= earlier.start
            });
        let asked_again = self.asks.any_under(key(ASK_ID, id), |a| {
            asks(a) && a.end_time_unix_nano > earlier.start
        });
        (asked_before && !asked_again).then_some(found)
    }
}

/// The carried entry saying that `later` retells `earlier`, a call an
/// earlier trace counted ([`Carry::continued`]); the arguments tell which
/// of the span's calls of that tool it is.
pub(super) fn carried(later: &Echo, earlier: &Echo) -> OpenAsk {
    OpenAsk::of_echo(later, earlier, later.args.clone(), CONTINUED_FORM)
}

#[cfg(test)]
mod tests {
    use serde_json::{json, Value};

    use crate::assemble::{Trace, TraceId};
    use crate::extract::test_support::{
        asking_trace, in_process, openai_tool_calls, read_in_order,
    };
    use crate::extract::tests::sp;
    use crate::extract::Analysis;

    /// A made-up vendor's model call, a trace of its own in `process`, that
    /// writes the whole conversation, answers included, under an
    /// output-like key (`acme.response.messages`) and the model's reply
    /// under another.
    fn retelling(
        trace: u8,
        at: u64,
        process: &str,
        conversation: &[Value],
        reply: &Value,
    ) -> Trace {
        let (conversation, reply) = (Value::from(conversation).to_string(), reply.to_string());
        let attrs = [
            ("gen_ai.operation.name", "chat"),
            ("acme.response.messages", conversation.as_str()),
            ("acme.response.content", reply.as_str()),
        ];
        let s = sp(1, None, (at, at + 10), "acme.chat", &attrs);
        Trace::new(TraceId([trace; 16]), vec![in_process(s, process)], 0)
    }

    fn ask(id: &str, name: &str, args: Value) -> Value {
        json!({"role": "assistant", "tool_calls": openai_tool_calls(&[(id, name, args)])})
    }

    fn answer(id: &str, text: &str) -> Value {
        json!({"role": "tool", "tool_call_id": id, "content": text})
    }

    /// One run: the first model call asks for `k1`, the second's
    /// conversation answers it and asks for `k2`, the third's answers both.
    fn run(first: u8, at: u64, process: &str, second_args: Value) -> Vec<Trace> {
        let user = json!({"role": "user", "content": "plan the tides"});
        let a1 = ask("k1", "tide", json!({"port": "Brest"}));
        let a2 = ask("k2", "tide", second_args.clone());
        let two = [user.clone(), a1.clone(), answer("k1", "6.8")];
        let mut three = two.to_vec();
        three.extend([a2.clone(), answer("k2", "5.3")]);
        vec![
            asking_trace(
                first,
                (at, at + 10),
                &[("k1", "tide", json!({"port": "Brest"}))],
            ),
            retelling(first + 1, at + 20, process, &two, &a2),
            retelling(
                first + 2,
                at + 40,
                process,
                &three,
                &json!({"role": "assistant", "content": "done"}),
            ),
        ]
        .into_iter()
        .map(|mut t| {
            // The asking trace in the run's process too.
            if let Some(s) = t.spans.first_mut() {
                *s = in_process(s.clone(), process);
            }
            t
        })
        .collect()
    }

    fn counts(got: &[Analysis]) -> Vec<usize> {
        got.iter().map(|a| a.calls.len()).collect()
    }

    #[test]
    fn a_later_trace_retelling_counted_calls_counts_only_its_new_one() {
        let got = read_in_order(run(1, 0, "p", json!({"port": "Cork"})));
        assert_eq!(counts(&got), [0, 1, 1]);
        assert!(
            got[2].notes.iter().any(|n| n.contains("retelling")),
            "{:?}",
            got[2].notes
        );
        // A second run reusing the ids asks for them again: its calls count.
        let mut twice = run(1, 0, "p", json!({"port": "Cork"}));
        twice.extend(run(4, 100, "p", json!({"port": "Cork"})));
        assert_eq!(counts(&read_in_order(twice)), [0, 1, 1, 0, 1, 1]);
    }

    #[test]
    fn another_process_s_retelling_is_other_calls() {
        // The third trace of another process retells nothing of the first.
        let mut traces = run(1, 0, "p", json!({"port": "Cork"}));
        let other = run(1, 0, "q", json!({"port": "Cork"})).remove(2);
        traces[2] = other;
        assert_eq!(counts(&read_in_order(traces))[2], 2);
    }
}
