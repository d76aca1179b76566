//! A tool span without a call id, a trace of its own, whose arguments wrap
//! the model's under its function's one parameter (`wrapped_args`,
//! `wrapped_span`): the conversation's call, in either input order, and
//! the near misses that stay calls of their own.

use serde_json::{json, Value};

use crate::assemble::{Trace, TraceId};
use crate::extract::test_support::{in_process, read_in_order};
use crate::extract::tests::sp;
use crate::extract::Analysis;

/// One call the model asks for: its id and arguments.
type Ask<'a> = (&'a str, Value);

fn turn(asks: &[Ask]) -> Value {
    let calls: Vec<Value> = asks
        .iter()
        .map(|(id, args)| {
            json!({"id": id, "type": "function",
                "function": {"name": "count_bins", "arguments": args.to_string()}})
        })
        .collect();
    json!({"role": "assistant", "tool_calls": calls})
}

fn chat(trace: u8, when: (u64, u64), p: &str, input: Value, output: Value) -> Trace {
    let s = sp(
        1,
        None,
        when,
        "acme.llm",
        &[
            ("gen_ai.operation.name", "chat"),
            ("gen_ai.input.messages", &input.to_string()),
            ("gen_ai.output.messages", &output.to_string()),
        ],
    );
    Trace::new(TraceId([trace; 16]), vec![in_process(s, p)], 0)
}

/// A made-up vendor's model call, a trace of its own, asking for `asks`.
fn asking(trace: u8, when: (u64, u64), p: &str, asks: &[Ask]) -> Trace {
    let user = json!({"role": "user", "content": "how many bins?"});
    chat(trace, when, p, json!([user]), json!([turn(asks)]))
}

/// The model call whose request carries `result` for each of `asks`.
fn answering(trace: u8, when: (u64, u64), p: &str, asks: &[Ask], result: &str) -> Trace {
    let user = json!({"role": "user", "content": "how many bins?"});
    let mut input = vec![user, turn(asks)];
    for (id, _) in asks {
        input.push(json!({"role": "tool", "tool_call_id": id, "content": result}));
    }
    let done = json!([{"role": "assistant", "content": "four bins"}]);
    chat(trace, when, p, Value::Array(input), done)
}

/// A made-up observer's span of a tool function, a trace of its own: the
/// function's arguments by parameter name, its result, no call id.
fn observed(trace: u8, when: (u64, u64), p: &str, name: &str, input: &Value) -> Trace {
    observed_with(trace, when, p, name, input, Some(r#"{"bins": 4}"#))
}

/// [`observed`] with `output` for the result (none: no result recorded).
fn observed_with(
    trace: u8,
    when: (u64, u64),
    p: &str,
    name: &str,
    input: &Value,
    output: Option<&str>,
) -> Trace {
    let input = input.to_string();
    let mut attrs = vec![("acme.span.kind", "tool"), ("acme.input", input.as_str())];
    attrs.extend(output.map(|o| ("acme.output", o)));
    let s = sp(1, None, when, name, &attrs);
    Trace::new(TraceId([trace; 16]), vec![in_process(s, p)], 0)
}

fn counts(got: &[Analysis]) -> Vec<usize> {
    got.iter().map(|a| a.calls.len()).collect()
}

fn args() -> Value {
    json!({"aisle": "C", "levels": [1, 2]})
}

/// The asking trace, the span traces and the answering trace, the spans'
/// read before or after the answering one.
fn in_order(asking: Trace, spans: Vec<Trace>, answering: Trace, spans_last: bool) -> Vec<Trace> {
    let mut out = vec![asking];
    if spans_last {
        out.push(answering);
        out.extend(spans);
    } else {
        out.extend(spans);
        out.push(answering);
    }
    out
}

/// Everything of the usual case but what `change` makes otherwise: the
/// model asks at (0, 10), the span runs at (20, 30), the request at (40,
/// 50), all in process `p`.
struct Case {
    span_when: (u64, u64),
    span_process: &'static str,
    span_name: &'static str,
    span_input: Value,
    span_output: Option<&'static str>,
    asks: Vec<(&'static str, Value)>,
    result: &'static str,
}

impl Case {
    fn usual() -> Case {
        Case {
            span_when: (20, 30),
            span_process: "p",
            span_name: "count_bins",
            span_input: json!({"a": args()}),
            span_output: Some(r#"{"bins": 4}"#),
            asks: vec![("call_b1", args())],
            result: r#"{"bins": 4}"#,
        }
    }

    fn read(&self, spans_last: bool) -> Vec<Analysis> {
        let span = observed_with(
            2,
            self.span_when,
            self.span_process,
            self.span_name,
            &self.span_input,
            self.span_output,
        );
        read_in_order(in_order(
            asking(1, (0, 10), "p", &self.asks),
            vec![span],
            answering(3, (40, 50), "p", &self.asks, self.result),
            spans_last,
        ))
    }
}

#[test]
fn a_span_wrapping_the_model_s_arguments_is_the_conversation_s_call() {
    for spans_last in [false, true] {
        let got = Case::usual().read(spans_last);
        assert_eq!(counts(&got), [0, 1, 0], "spans last: {spans_last}");
        // The call shows the model's arguments, where it is counted: the
        // span's trace read first, the conversation's read first.
        let counted = got.iter().flat_map(|a| &a.calls).next();
        assert_eq!(counted.and_then(|c| c.args.value()), Some(&args()));
        let note = if spans_last {
            "the model's wrapped under its one parameter"
        } else {
            "wrapped under its one parameter `a`"
        };
        let notes: Vec<&String> = got.iter().flat_map(|a| &a.notes).collect();
        assert!(notes.iter().any(|n| n.contains(note)), "{notes:?}");
    }
}

#[test]
fn a_span_without_a_result_joins_on_the_rest() {
    // The result is compared only when both records have one.
    for spans_last in [false, true] {
        let got = Case {
            span_output: None,
            ..Case::usual()
        }
        .read(spans_last);
        assert_eq!(counts(&got), [0, 1, 0], "spans last: {spans_last}");
    }
}

#[test]
fn near_misses_stay_two_calls() {
    let one = json!({"aisle": "C"});
    let cases: Vec<(&str, Case)> = vec![
        (
            "another process",
            Case {
                span_process: "q",
                ..Case::usual()
            },
        ),
        (
            "another tool",
            Case {
                span_name: "count_shelves",
                ..Case::usual()
            },
        ),
        (
            "other arguments",
            Case {
                span_input: json!({"a": {"aisle": "D", "levels": [1, 2]}}),
                ..Case::usual()
            },
        ),
        // The key one of the model's: the arguments, not a wrapper.
        (
            "the key an argument",
            Case {
                span_input: json!({"aisle": one.clone()}),
                asks: vec![("call_b1", one.clone())],
                ..Case::usual()
            },
        ),
        (
            "before the asking ended",
            Case {
                span_when: (5, 15),
                ..Case::usual()
            },
        ),
        (
            "after the request started",
            Case {
                span_when: (35, 45),
                ..Case::usual()
            },
        ),
        (
            "another result",
            Case {
                result: r#"{"bins": 5}"#,
                ..Case::usual()
            },
        ),
    ];
    for (what, case) in cases {
        for spans_last in [false, true] {
            let got = case.read(spans_last);
            let n: usize = counts(&got).iter().sum();
            assert_eq!(n, 2, "{what}, spans last: {spans_last}: {:?}", counts(&got));
        }
    }
}

#[test]
fn two_asks_the_span_could_be_join_nothing() {
    // The model asked twice with the same arguments; one span: which call
    // it ran is not known, in either order.
    for spans_last in [false, true] {
        let got = Case {
            asks: vec![("call_b1", args()), ("call_b2", args())],
            ..Case::usual()
        }
        .read(spans_last);
        assert_eq!(counts(&got).iter().sum::<usize>(), 3, "{spans_last}");
        let span = got.iter().flat_map(|a| &a.calls).find(|c| c.from.is_none());
        let wrapped = json!({"a": args()});
        assert_eq!(span.and_then(|c| c.args.value()), Some(&wrapped));
    }
}

#[test]
fn two_spans_of_one_ask_in_its_window_join_nothing() {
    // Read between the asking and the answering trace, both spans may be
    // the call: none is joined.
    let asks = [("call_b1", args())];
    let input = json!({"a": args()});
    let got = read_in_order(in_order(
        asking(1, (0, 10), "p", &asks),
        vec![
            observed(2, (20, 25), "p", "count_bins", &input),
            observed(4, (26, 30), "p", "count_bins", &input),
        ],
        answering(3, (40, 50), "p", &asks, r#"{"bins": 4}"#),
        false,
    ));
    assert_eq!(counts(&got), [0, 1, 1, 1]);
    // Read after the answering trace, the first span joins the call: the
    // second, not read yet, is not known then, and stays a call.
    let got = read_in_order(in_order(
        asking(1, (0, 10), "p", &asks),
        vec![
            observed(2, (20, 25), "p", "count_bins", &input),
            observed(4, (26, 30), "p", "count_bins", &input),
        ],
        answering(3, (40, 50), "p", &asks, r#"{"bins": 4}"#),
        true,
    ));
    assert_eq!(counts(&got), [0, 1, 0, 1]);
}

#[test]
fn an_older_ask_left_open_does_not_make_the_span_ambiguous() {
    // An earlier model output in the process asked for the same call and
    // was never answered (an aborted run): the span ran the call of the
    // last output before it, which the request answers; in either order.
    let asks = [("call_b1", args())];
    let stale = [("call_b0", args())];
    for spans_last in [false, true] {
        let mut traces = vec![asking(4, (0, 5), "p", &stale)];
        traces.extend(in_order(
            asking(1, (6, 10), "p", &asks),
            vec![observed(
                2,
                (20, 30),
                "p",
                "count_bins",
                &json!({"a": args()}),
            )],
            answering(3, (40, 50), "p", &asks, r#"{"bins": 4}"#),
            spans_last,
        ));
        let got = read_in_order(traces);
        assert_eq!(counts(&got).iter().sum::<usize>(), 1, "{spans_last}");
        let counted = got.iter().flat_map(|a| &a.calls).next();
        assert_eq!(counted.and_then(|c| c.args.value()), Some(&args()));
    }
}

#[test]
fn two_last_outputs_ending_together_join_nothing() {
    // Two model outputs of the process ending at the same time, each
    // asking for the call: which one the span ran is not known.
    let got = read_in_order(vec![
        asking(4, (0, 10), "p", &[("call_b0", args())]),
        asking(1, (2, 10), "p", &[("call_b1", args())]),
        observed(2, (20, 30), "p", "count_bins", &json!({"a": args()})),
    ]);
    let span = got.iter().flat_map(|a| &a.calls).find(|c| c.from.is_none());
    assert_eq!(
        span.and_then(|c| c.args.value()),
        Some(&json!({"a": args()}))
    );
}

/// A made-up job's trace: a root span (no tool) over the observed tool
/// span of [`observed`], and `others` more tool spans beside it.
fn in_job(trace: u8, p: &str, others: usize) -> Trace {
    let input = json!({"a": args()}).to_string();
    let tool = |id: u8, when: (u64, u64), name: &str, input: &str| {
        let attrs = [("acme.span.kind", "tool"), ("acme.input", input)];
        in_process(sp(id, Some(1), when, name, &attrs), p)
    };
    let mut spans = vec![
        in_process(sp(1, None, (15, 38), "nightly job", &[]), p),
        tool(2, (20, 30), "count_bins", &input),
    ];
    for i in 0..others {
        let id = 3 + u8::try_from(i).unwrap_or(0);
        spans.push(tool(id, (31, 33), "stamp_label", r#"{"label": "C"}"#));
    }
    Trace::new(TraceId([trace; 16]), spans, 0)
}

#[test]
fn a_wrapper_shaped_span_among_others_under_a_root_is_its_own_call() {
    // Not a trace of its own: a job's tool span beside another, under a
    // root that is no tool span, is the record of its own call, however
    // its arguments look; the trace's one tool span under such a root is
    // the decorator's record still. In either order.
    let asks = [("call_b1", args())];
    for spans_last in [false, true] {
        for (others, want) in [(1, 3), (0, 1)] {
            let got = read_in_order(in_order(
                asking(1, (0, 10), "p", &asks),
                vec![in_job(2, "p", others)],
                answering(3, (40, 50), "p", &asks, r#"{"bins": 4}"#),
                spans_last,
            ));
            let n: usize = counts(&got).iter().sum();
            assert_eq!(n, want, "others {others}, spans last {spans_last}");
        }
    }
}

#[test]
fn the_carry_holds_a_digest_of_the_span_s_result() {
    // Only equality is asked of a wrapper's result: a digest of the value,
    // the same for texts of one value, whatever the result's size.
    use crate::extract::open::Wrapped;
    use crate::extract::wrapped_args::digest;
    use crate::extract::CallResult;
    let text = |t: &str| CallResult::Json(t.into());
    assert_eq!(
        digest(&text(r#"{"bins": 4, "aisle": "C"}"#)),
        digest(&CallResult::Value(json!({"aisle": "C", "bins": 4})))
    );
    assert_ne!(
        digest(&text(r#"{"bins": 4}"#)),
        digest(&text(r#"{"bins": 5}"#))
    );
    assert!(std::mem::size_of::<Wrapped>() <= 24);
}

#[test]
fn the_note_of_a_span_without_a_result_claims_no_result() {
    // Read after the answering trace, a span without a result joins on the
    // rest: its note says the result is compared only where there is one.
    let got = Case {
        span_output: None,
        ..Case::usual()
    }
    .read(true);
    let notes: Vec<&String> = got.iter().flat_map(|a| &a.notes).collect();
    let said = |n: &&String| n.contains("its one parameter, its result, if any, the same");
    assert!(notes.iter().any(said), "{notes:?}");
}
