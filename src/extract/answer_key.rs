//! A tool span that records a call's result alone, each span a trace of its
//! own (docs/conventions.md, "One call, several spans", "Each model call its
//! own trace").
//!
//! Some processors write every span as the root of a trace of its own and
//! record a tool span's name and result but neither its arguments nor the
//! model's call id (catalyst-tracing's Agents SDK processor: `tool.name`,
//! `input.value = ""`, `output.value`). The model calls' traces count the
//! same calls from the conversation, with their arguments. Such a span, read
//! after the trace that counts the call, is the execution of that call when
//! it ran between the model's asking and the request carrying the result, in
//! the same process, under the same tool, and the result it recorded is the
//! one the request carries ([`ran_answering`]). The carry keeps each call's
//! result with it as it came (no parse: JSON text stays text) and compares
//! two only for such a span. Each conversation call takes one such span at
//! most, and a span fitting the calls of two traces joins none
//! (`Carry::counting_call`).

use serde_json::Value;

use super::open::{Answer, Echo};
use super::{CallArgs, CallStatus, ToolCall};
use crate::assemble::Trace;

/// Call `c`'s result, when the carry may compare it ([`ran_answering`]): a
/// call rebuilt from the conversation, or a tool span's call that records
/// its result alone (no arguments, no call id: `args`, `id` as the caller
/// read them, an empty text no arguments; status ok) in a trace of that one
/// span. `None` for every other call.
pub(crate) fn answer_of(
    trace: &Trace,
    c: &ToolCall,
    args: Option<&Value>,
    id: bool,
) -> Option<Answer> {
    let result = c.result.as_ref()?;
    let alone = || {
        args.is_none_or(no_args)
            && !id
            && c.call_id.is_none()
            && c.status == CallStatus::Ok
            && trace.spans.len() == 1
    };
    // A conversation call is compared only under a call id
    // (`ran_answering`): without one it need not be kept.
    ((c.from.is_some() && id) || alone()).then(|| Answer(result.clone()))
}

/// Whether `span`, a tool span's call that records its result alone, read
/// after the trace that counts `counted` from the conversation, ran that
/// call: the same tool and process, the span ran after the model output
/// that asked for the call (`Echo::asked`, found by the carry) and ended by
/// the request carrying its result (`call_window::answered_at`), and both
/// hold the same result. Read before that trace, the span stays a call of
/// its own: the conversation's call would give way to it
/// (`twice::ran_between`), and the span has no arguments to keep.
pub(crate) fn ran_answering(counted: &Echo, span: &Echo) -> bool {
    counted
        .asked
        .is_some_and(|t| t != u64::MAX && t <= span.start)
        && span.end <= super::call_window::answered_at(counted)
        && counted.name == span.name
        && counted.id.is_some()
        && counted.from_conversation
        && !span.from_conversation
        && span.id.is_none()
        && no_args(&span.args)
        && super::open::same_process(&counted.resource, &span.resource)
        // Last: it may read two JSON texts.
        && span.answer.is_some()
        && span.answer == counted.answer
}

/// Whether `c`, a tool span's call, records its result alone: no call id,
/// no arguments or an empty text ([`no_args`]), a result.
pub(crate) fn answer_only(c: &ToolCall) -> bool {
    let args = match &c.args {
        CallArgs::None => true,
        CallArgs::Text(t) => t.trim().is_empty(),
        CallArgs::Value(v) | CallArgs::Ordered { value: v, .. } => no_args(v),
    };
    c.from.is_none() && c.call_id.is_none() && c.result.is_some() && args
}

/// Whether `args` are none: no value, or an empty text (the processor's
/// `input.value = ""`).
pub(crate) fn no_args(args: &Value) -> bool {
    match args {
        Value::Null => true,
        Value::String(s) => s.trim().is_empty(),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::extract::CallResult;

    #[test]
    fn equal_values_are_equal_answers_whatever_their_form() {
        let text = Answer(CallResult::Json(r#"{ "b": [1, 2.5], "a": "x" }"#.into()));
        let value = Answer(CallResult::Value(json!({"a": "x", "b": [1, 2.5]})));
        assert_eq!(text, value);
        // A near miss: another number, another string, a list in another
        // order, the object's JSON as a text.
        for other in [
            json!({"a": "x", "b": [1, 2.6]}),
            json!({"a": "y", "b": [1, 2.5]}),
            json!({"a": "x", "b": [2.5, 1]}),
            json!("{\"a\": \"x\", \"b\": [1, 2.5]}"),
        ] {
            assert_ne!(value, Answer(CallResult::Value(other)));
        }
    }
}

#[cfg(test)]
mod join_tests {
    use serde_json::json;

    use crate::assemble::{Trace, TraceId};
    use crate::extract::test_support::{answering_trace, asking_trace, in_process, read_in_order};
    use crate::extract::tests::sp;
    use crate::extract::Analysis;

    /// A made-up processor's tool span, the root of a trace of its own:
    /// the tool's name and result, an empty input, no call id.
    fn tool_trace(trace: u8, when: (u64, u64), process: &str, name: &str, out: &str) -> Trace {
        let attrs = [
            ("openinference.span.kind", "TOOL"),
            ("tool.name", name),
            ("input.value", ""),
            ("output.value", out),
        ];
        let s = sp(1, None, when, &format!("tool.{name}"), &attrs);
        Trace::new(TraceId([trace; 16]), vec![in_process(s, process)], 0)
    }

    fn counts(got: &[Analysis]) -> Vec<usize> {
        got.iter().map(|a| a.calls.len()).collect()
    }

    fn run(tool: Trace, tool_first: bool) -> Vec<Analysis> {
        let calls = [("k1", "check_stock", json!({"sku": "A-1"}))];
        let ask = asking_trace(1, (0, 10), &calls);
        let answer = answering_trace(2, (40, 50), &calls, &["12 units"]);
        if tool_first {
            read_in_order(vec![ask, tool, answer])
        } else {
            read_in_order(vec![ask, answer, tool])
        }
    }

    #[test]
    fn a_lone_tool_span_recording_the_requests_result_is_that_call() {
        let got = run(
            tool_trace(9, (20, 30), "p", "check_stock", "12 units"),
            false,
        );
        assert_eq!(counts(&got), [0, 1, 0]);
        // The conversation's call stays, with its arguments.
        assert_eq!(got[1].calls[0].args.value(), Some(&json!({"sku": "A-1"})));
        assert!(
            got[2].notes.iter().any(|n| n.contains("answer only")),
            "{:?}",
            got[2].notes
        );
        // Read before the request, the span stays a call of its own (it
        // has no arguments for the conversation's call to keep).
        let got = run(
            tool_trace(9, (20, 30), "p", "check_stock", "12 units"),
            true,
        );
        assert_eq!(counts(&got).iter().sum::<usize>(), 2);
    }

    #[test]
    fn another_result_time_process_or_tool_is_another_call() {
        let near = [
            tool_trace(9, (20, 30), "p", "check_stock", "13 units"),
            // Ran before the model asked, or after the request.
            tool_trace(9, (5, 8), "p", "check_stock", "12 units"),
            tool_trace(9, (45, 60), "p", "check_stock", "12 units"),
            tool_trace(9, (20, 30), "q", "check_stock", "12 units"),
            tool_trace(9, (20, 30), "p", "count_stock", "12 units"),
        ];
        for tool in near {
            assert_eq!(counts(&run(tool, false)).iter().sum::<usize>(), 2);
        }
    }

    #[test]
    fn one_call_takes_one_span_of_its_result() {
        let calls = [("k1", "check_stock", json!({"sku": "A-1"}))];
        let got = read_in_order(vec![
            asking_trace(1, (0, 10), &calls),
            answering_trace(2, (40, 50), &calls, &["12 units"]),
            tool_trace(8, (20, 25), "p", "check_stock", "12 units"),
            tool_trace(9, (26, 30), "p", "check_stock", "12 units"),
        ]);
        assert_eq!(counts(&got), [0, 1, 0, 1]);
    }
}
