//! Calls an earlier trace's model output asked for and left open that a
//! trace's first request shows answered in its history, before its last
//! model turn, and that no trace counted (docs/conventions.md, "Each model
//! call its own trace").
//!
//! A turn's parallel calls may come back to the model as one call and its
//! output after another (OpenAI's Responses API takes one input item per
//! call, and its function-calling guide pushes each `function_call` item
//! followed by its `function_call_output`): the next request's history
//! reads as turns of one call each, and only the last of them is taken as
//! the asking turn. When one model output, in a trace read before and left
//! open there, asked for the calls of that last turn (the trace counts
//! them from its request: `Open::retold`) and for earlier ones of the
//! history, those are that turn's too: they come back to the trace as
//! carried entries, and it counts them from its history with the output's
//! arguments. History calls another output asked for were turns of their
//! own, counted by the traces between; a call a trace counted since its
//! asking is not taken again either.

use super::{key, Carry, Echo, Open, OpenAsk, ASK_ID, CALL_ID};
use crate::assemble::{SpanId, Trace, TraceId};

impl<T> Carry<T> {
    /// The kept open calls that `open`'s history (`Open::history`, of
    /// `trace`) answers, asked by an output that asked for a call the
    /// trace counts as its request's last turn, with no kept call counting
    /// them after their asking: the same call id and tool, asked in the
    /// same process.
    pub(super) fn history_asked(&self, open: &Open, trace: Option<&Trace>) -> Vec<OpenAsk> {
        let (Some(trace), false) = (trace, open.history.is_empty()) else {
            return Vec::new();
        };
        // The outputs that asked for the calls the trace counts as its
        // request's last turn.
        let last_turn: Vec<(TraceId, SpanId)> = open
            .retold
            .iter()
            .filter_map(|(id, run, _)| {
                let is = |a: &OpenAsk| !a.is_echo() && a.run == *run;
                let k = self.asks.last_under(key(ASK_ID, id.as_str()), is)?;
                self.asks.get(k).map(|a| (a.trace_id, a.span_id))
            })
            .collect();
        let mut out: Vec<OpenAsk> = Vec::new();
        for h in &open.history {
            let Some(id) = h.asked.id.as_deref() else {
                continue;
            };
            let name = h.asked.name.as_str();
            // A streamed answer's span may end after the loop sent the
            // request that retells it: the answer ended before that
            // request's own answer did.
            let request_end = trace
                .spans
                .iter()
                .find(|s| s.span_id == h.span_id)
                .map_or(h.end_time_unix_nano, |s| s.span.end_time_unix_nano);
            let is = |a: &OpenAsk| {
                !a.is_echo()
                    && a.asked.id.as_deref() == Some(id)
                    && a.asked.name == name
                    && a.run == h.run
                    && a.end_time_unix_nano <= request_end
            };
            let Some(a) =
                (self.asks.last_under(key(ASK_ID, id), is)).and_then(|k| self.asks.get(k))
            else {
                continue;
            };
            if !last_turn.contains(&(a.trace_id, a.span_id)) {
                continue;
            }
            // Counted by a trace that ended after the asking one: a run
            // before reusing the call id counted its own.
            let counted = |c: &Echo| {
                c.id.as_deref() == Some(id) && c.name == name && c.window.1 >= a.end_time_unix_nano
            };
            if !self.calls.any_under(key(CALL_ID, (name, id)), counted) && !out.contains(a) {
                out.push(a.clone());
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use serde_json::{json, Value};

    use crate::assemble::{Trace, TraceId};
    use crate::extract::test_support::{in_process, read_in_order};
    use crate::extract::tests::sp;
    use crate::extract::Analysis;

    /// A made-up vendor's model call in Responses API items, a trace of
    /// its own (id bytes `n`) from `when.0` to `when.1`.
    fn model_call(n: u8, when: (u64, u64), input: &Value, output: &Value) -> Trace {
        let (input, output) = (input.to_string(), output.to_string());
        let attrs = [
            ("acme.span.kind", "LLM"),
            ("acme.request", input.as_str()),
            ("acme.response", output.as_str()),
        ];
        let s = sp(1, None, when, "acme.respond", &attrs);
        Trace::new(TraceId([n; 16]), vec![in_process(s, "p")], 0)
    }

    fn call(id: &str, name: &str) -> Value {
        json!({"type": "function_call", "call_id": id, "name": name, "arguments": "{\"berth\": 4}"})
    }

    fn output(id: &str) -> Value {
        json!({"type": "function_call_output", "call_id": id, "output": "free"})
    }

    fn names(got: &[Analysis]) -> Vec<Vec<&str>> {
        got.iter()
            .map(|a| a.calls.iter().map(|c| c.name.as_str()).collect())
            .collect()
    }

    #[test]
    fn a_turn_s_calls_retold_one_output_after_another_are_all_counted() {
        let user = json!({"role": "user", "content": "moor us"});
        let asked = json!({"output": [call("k1", "tide"), call("k2", "berth")]});
        let done =
            json!({"output": [{"type": "message", "role": "assistant", "content": "moored"}]});
        let interleaved = json!({"input": [user, call("k1", "tide"), output("k1"),
            call("k2", "berth"), output("k2")]});
        let got = read_in_order(vec![
            model_call(1, (0, 100), &json!({"input": [user]}), &asked),
            model_call(2, (200, 300), &interleaved, &done),
        ]);
        assert_eq!(names(&got), [vec![], vec!["tide", "berth"]]);

        // A streamed answer's span may end after the next request started.
        let got = read_in_order(vec![
            model_call(1, (0, 210), &json!({"input": [user]}), &asked),
            model_call(2, (200, 300), &interleaved, &done),
        ]);
        assert_eq!(names(&got), [vec![], vec!["tide", "berth"]]);

        // Another run with the same call ids counts its own calls again.
        let got = read_in_order(vec![
            model_call(1, (0, 100), &json!({"input": [user]}), &asked),
            model_call(2, (200, 300), &interleaved, &done),
            model_call(3, (400, 500), &json!({"input": [user]}), &asked),
            model_call(4, (600, 700), &interleaved, &done),
        ]);
        assert_eq!(
            names(&got),
            [vec![], vec!["tide", "berth"], vec![], vec!["tide", "berth"]]
        );
    }

    #[test]
    fn a_call_an_earlier_request_counted_is_not_counted_again() {
        // One call a turn: the second trace counts `tide`, the third only
        // `berth`, though its history reads the same as above.
        let user = json!({"role": "user", "content": "moor us"});
        let second = json!({"input": [user, call("k1", "tide"), output("k1")]});
        let third = json!({"input": [user, call("k1", "tide"), output("k1"),
            call("k2", "berth"), output("k2")]});
        let done =
            json!({"output": [{"type": "message", "role": "assistant", "content": "moored"}]});
        let got = read_in_order(vec![
            model_call(
                1,
                (0, 100),
                &json!({"input": [user]}),
                &json!({"output": [call("k1", "tide")]}),
            ),
            model_call(
                2,
                (200, 300),
                &second,
                &json!({"output": [call("k2", "berth")]}),
            ),
            model_call(3, (400, 500), &third, &done),
        ]);
        assert_eq!(names(&got), [vec![], vec!["tide"], vec!["berth"]]);
    }
}
