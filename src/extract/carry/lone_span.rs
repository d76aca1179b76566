//! A tool span in a trace of its own beside a conversation asked and
//! answered in another trace (docs/conventions.md, "One call, several
//! spans").
//!
//! A tool run on a thread that does not carry the caller's context (a
//! plain thread pool) opens a trace of its own: its span, named after the
//! tool with its arguments and result and no call id, is the root of a
//! trace that holds nothing else, while the agent's trace holds the model
//! calls whose messages ask for the call (with the model's id) and carry
//! its result in the next request. The two are one call when the span is
//! the conversation call's execution (`twice::ran_between`): the same tool
//! and equal arguments, the same process, the span run after the model's
//! output asking for it ended and before the request carrying its result
//! started. For a call asked and answered within its own trace those two
//! times are the call's own (`call_window`); for one the
//! model asked for in another trace, the carry dates the asking
//! (`Echo::asked`).
//!
//! Concurrent runs in one process may each ask for the same tool: other
//! arguments tell their spans apart. A span that equally fits the calls of
//! two runs (the same tool and arguments asked in both, each window holding
//! it), or a call that equally fits two spans while its trace asked for it
//! once, is ambiguous: nothing is joined, both records stay calls. Unless
//! all spans fitting but one are attempts of the call, named after it by
//! their arguments (`extract::attempts`: a failed run a retry ran again):
//! the one left ran the call whose result the model saw.

use serde_json::Value;

use super::{key, Carry, CONVERSATION, SPAN_BARE};
use crate::assemble::TraceId;
use crate::extract::open::{Echo, OpenAsk, AMBIGUOUS_FORM};
use crate::extract::requested::Asked;
use crate::extract::twice;

impl<T> Carry<T> {
    /// The position of the kept conversation call that `span`, a tool
    /// span's call without a call id, ran (`twice::between_either`), when
    /// only one run's calls fit it: calls of two traces fitting it are
    /// ambiguous (none, and a note in `notes`).
    pub(super) fn counting_call(&self, span: &Echo, notes: &mut Vec<OpenAsk>) -> Option<usize> {
        let conversation = key(CONVERSATION, span.name.as_str());
        let mut fits = self
            .calls
            .under(conversation)
            .filter(|&k| {
                self.calls.get(k).is_some_and(|c| {
                    twice::between_either(span, c)
                            // Or the span records the result alone, the
                            // request's (`answer_key`).
                            || crate::extract::answer_key::ran_answering(c, span)
                })
            })
            .filter_map(|k| Some((k, self.calls.get(k)?.trace_id)));
        let (first, trace) = fits.next()?;
        match fits.find(|(_, t)| *t != trace) {
            None => Some(first),
            Some((_, other)) => {
                notes.push(ambiguous(span, [trace, other]));
                None
            }
        }
    }

    /// The position of the kept tool span's call without a call id that
    /// ran `later`, a call rebuilt from the conversation that a model
    /// output asked for at `asked` (`twice::ran_between`), when only one
    /// fits or `later`'s trace (`calls`) asked for as many equal calls as
    /// fit (then the first, by order); else none, and a note in `notes`.
    pub(super) fn running_span(
        &self,
        later: &Echo,
        asked: u64,
        calls: &[Echo],
        notes: &mut Vec<OpenAsk>,
    ) -> Option<usize> {
        let bare = key(SPAN_BARE, later.name.as_str());
        let mut fits = self.calls.under(bare).filter(|&k| {
            self.calls
                .get(k)
                .is_some_and(|c| twice::ran_between(later, c, asked))
        });
        let first = fits.next()?;
        let second = fits.next();
        let more = usize::from(second.is_some()) + fits.count();
        if more == 0 {
            return Some(first);
        }
        // Attempts of the call (`extract::attempts`) beside one span that
        // is none: that one ran the call whose result the model saw.
        if let Some(k) = self.one_run(later, asked) {
            return Some(k);
        }
        let equal = calls
            .iter()
            .filter(|c| {
                c.from_conversation
                    && c.name == later.name
                    && crate::extract::merge::same_args(&c.args, &later.args)
            })
            .count();
        if equal > more {
            return Some(first);
        }
        let traces = [first, second.unwrap_or(first)]
            .map(|k| self.calls.get(k).map_or(later.trace_id, |c| c.trace_id));
        notes.push(ambiguous(later, traces));
        None
    }
}

impl<T> Carry<T> {
    /// The position of the one kept span's call that ran `later` (asked at
    /// `asked`, see [`Carry::running_span`]) and is no attempt of it
    /// (`Echo::attempt`), when the others fitting are all attempts.
    fn one_run(&self, later: &Echo, asked: u64) -> Option<usize> {
        let bare = key(SPAN_BARE, later.name.as_str());
        let mut attempts = false;
        let mut runs = self.calls.under(bare).filter(|&k| {
            self.calls.get(k).is_some_and(|c| {
                let fits = twice::ran_between(later, c, asked);
                attempts |= fits && c.attempt;
                fits && !c.attempt
            })
        });
        let run = runs.next()?;
        let more = runs.next().is_some();
        drop(runs);
        (attempts && !more).then_some(run)
    }
}

/// The carried entry noting that `call` (of the trace read) and the
/// records of `traces` fit each other more than one way: not joined.
pub(super) fn ambiguous(call: &Echo, traces: [TraceId; 2]) -> OpenAsk {
    OpenAsk {
        asked: Asked {
            id: None,
            name: call.name.clone(),
            args: Value::String(traces[1].to_string()),
        },
        form: AMBIGUOUS_FORM,
        trace_id: traces[0],
        span_id: call.span_id,
        // Ends after every call: never taken as the asking of one.
        end_time_unix_nano: u64::MAX,
        run: 0,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::{json, Value};

    use crate::assemble::{Trace, TraceId};
    use crate::extract::test_support::{in_process, read_in_order};
    use crate::extract::tests::sp;
    use crate::extract::Analysis;

    /// A made-up vendor's agent run in process `p`: a model call asking for
    /// `book_room` with `args` under `id` (ending at `when.0 + 10`), then
    /// one whose request carries the result (starting at `when.1 - 10`).
    fn run(trace: u8, when: (u64, u64), p: &str, id: &str, args: &Value) -> Trace {
        let ask = json!({"role": "assistant", "tool_calls": [{"id": id, "type": "function",
            "function": {"name": "book_room", "arguments": args.to_string()}}]});
        let user = json!({"role": "user", "content": "book a room"});
        let first = sp(
            2,
            Some(1),
            (when.0, when.0 + 10),
            "chat acme-1",
            &[
                ("gen_ai.operation.name", "chat"),
                ("gen_ai.input.messages", &json!([user]).to_string()),
                ("gen_ai.output.messages", &json!([ask]).to_string()),
            ],
        );
        let result = json!({"role": "tool", "tool_call_id": id, "content": "booked"});
        let done = json!([{"role": "assistant", "content": "done"}]);
        let second = sp(
            3,
            Some(1),
            (when.1 - 10, when.1),
            "chat acme-1",
            &[
                ("gen_ai.operation.name", "chat"),
                (
                    "gen_ai.input.messages",
                    &json!([user, ask, result]).to_string(),
                ),
                ("gen_ai.output.messages", &done.to_string()),
            ],
        );
        let root = sp(
            1,
            None,
            when,
            "invoke_agent desk",
            &[
                ("gen_ai.operation.name", "invoke_agent"),
                ("gen_ai.agent.name", "desk"),
            ],
        );
        let spans = [root, first, second].map(|s| in_process(s, p));
        Trace::new(TraceId([trace; 16]), spans.into(), 0)
    }

    /// A made-up vendor's tool span, the root of a trace of its own: the
    /// tool's name, arguments and result, no call id.
    fn lone(trace: u8, when: (u64, u64), p: &str, args: &Value) -> Trace {
        let s = sp(
            1,
            None,
            when,
            "book_room",
            &[
                ("gen_ai.operation.name", "execute_tool"),
                ("gen_ai.tool.name", "book_room"),
                ("gen_ai.tool.call.arguments", &args.to_string()),
                ("gen_ai.tool.call.result", "booked"),
            ],
        );
        Trace::new(TraceId([trace; 16]), vec![in_process(s, p)], 0)
    }

    fn counts(got: &[Analysis]) -> Vec<usize> {
        got.iter().map(|a| a.calls.len()).collect()
    }

    #[test]
    fn a_lone_tool_span_inside_a_runs_window_is_that_runs_call() {
        let room = |n: u32| json!({"room": n});
        // Two concurrent runs, each asking for its own room; the spans in
        // traces of their own, read after or before the runs.
        let runs = || {
            [
                run(1, (0, 100), "p", "call_a", &room(12)),
                run(2, (5, 105), "p", "call_b", &room(14)),
            ]
        };
        let spans = || {
            [
                lone(3, (20, 30), "p", &room(14)),
                lone(4, (22, 32), "p", &room(12)),
            ]
        };
        let [r1, r2] = runs();
        let [s1, s2] = spans();
        let after = read_in_order(vec![r1, r2, s1, s2]);
        assert_eq!(counts(&after), [1, 1, 0, 0]);
        assert!(
            after[2]
                .notes
                .iter()
                .any(|n| n.contains("ran after the model")),
            "{:?}",
            after[2].notes
        );
        let [r1, r2] = runs();
        let [s1, s2] = spans();
        let before = read_in_order(vec![s1, s2, r1, r2]);
        assert_eq!(counts(&before).iter().sum::<usize>(), 2);
        // Outside the window, another process, other arguments: two calls.
        for (when, p, args) in [
            ((5, 12), "p", room(12)),
            ((85, 95), "p", room(12)),
            ((20, 30), "q", room(12)),
            ((20, 30), "p", room(13)),
        ] {
            let got = read_in_order(vec![
                run(1, (0, 100), "p", "call_a", &room(12)),
                lone(3, when, p, &args),
            ]);
            assert_eq!(counts(&got), [1, 1], "{when:?} {p} {args}");
        }
    }

    #[test]
    fn a_span_fitting_two_runs_equally_joins_neither() {
        let room = json!({"room": 12});
        // Both runs asked for the same room at the same time: each span
        // fits both, so all four records stay calls, in either order.
        let runs = || {
            [
                run(1, (0, 100), "p", "call_a", &room),
                run(2, (5, 105), "p", "call_b", &room),
            ]
        };
        let spans = || [lone(3, (20, 30), "p", &room), lone(4, (22, 32), "p", &room)];
        let [r1, r2] = runs();
        let [s1, s2] = spans();
        let after = read_in_order(vec![r1, r2, s1, s2]);
        assert_eq!(counts(&after), [1, 1, 1, 1]);
        let noted = |a: &Analysis| a.notes.iter().any(|n| n.contains("not joined"));
        assert!(noted(&after[2]), "{:?}", after[2].notes);
        let [r1, r2] = runs();
        let [s1, s2] = spans();
        let before = read_in_order(vec![s1, s2, r1, r2]);
        assert_eq!(counts(&before), [1, 1, 1, 1]);
        assert!(noted(&before[2]), "{:?}", before[2].notes);
    }
}
