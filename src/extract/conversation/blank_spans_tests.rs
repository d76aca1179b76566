//! Tests of model bodies under named keys (`named_bodies`), blank tool
//! spans (`blank_spans`) and the name join told apart by arguments
//! (`joins::same_args`): a made-up agent loop in the shape Google ADK TS
//! writes (model calls as `call_llm` spans holding Gemini's bodies, tool
//! spans that stay blank when the tool threw).

use serde_json::{json, Value};

use super::{Analysis, CallStatus, Extractor, FROM_CONVERSATION};
use crate::assemble::{SpanId, SpanRecord, Trace, TraceId};

use crate::extract::tests::sp;

fn analyze(spans: Vec<SpanRecord>) -> Analysis {
    Extractor::default().analyze(&Trace::new(TraceId([5; 16]), spans, 0))
}

/// A model call in ADK's shape: the Gemini request with `contents` (the
/// history so far) and the response asking for `asks` (name, args).
fn model(id: u8, when: (u64, u64), contents: &[Value], asks: &[(&str, Value)]) -> SpanRecord {
    let request = json!({"model": "gem-x", "contents": contents}).to_string();
    let parts: Vec<Value> = if asks.is_empty() {
        vec![json!({"text": "done"})]
    } else {
        asks.iter()
            .map(|(n, a)| json!({"functionCall": {"name": n, "args": a}}))
            .collect()
    };
    let response = json!({"content": {"role": "model", "parts": parts}}).to_string();
    sp(
        id,
        Some(1),
        when,
        "call_llm",
        &[
            ("gen_ai.request.model", "gem-x"),
            ("gcp.vertex.agent.llm_request", &request),
            ("gcp.vertex.agent.llm_response", &response),
        ],
    )
}

/// A tool span that recorded its call (the GenAI keys).
fn tool(
    id: u8,
    parent: u8,
    when: (u64, u64),
    name: &str,
    args: Value,
    result: Value,
) -> SpanRecord {
    let (args, result) = (args.to_string(), result.to_string());
    sp(
        id,
        Some(parent),
        when,
        &format!("execute_tool {name}"),
        &[
            ("gen_ai.operation.name", "execute_tool"),
            ("gen_ai.tool.name", name),
            ("gen_ai.tool.call.arguments", &args),
            ("gen_ai.tool.call.result", &result),
        ],
    )
}

/// A tool span its tracer never filled in.
fn blank(id: u8, parent: u8, when: (u64, u64), name: &str) -> SpanRecord {
    sp(id, Some(parent), when, &format!("execute_tool {name}"), &[])
}

fn user(text: &str) -> Value {
    json!({"role": "user", "parts": [{"text": text}]})
}

fn asked(name: &str, args: &Value) -> Value {
    json!({"role": "model", "parts": [{"functionCall": {"name": name, "args": args}}]})
}

fn answered(name: &str, response: Value) -> Value {
    json!({"role": "user", "parts": [{"functionResponse": {"name": name, "response": response}}]})
}

fn calls(a: &Analysis) -> Vec<(&str, Option<&Value>, Option<&str>, SpanId)> {
    a.calls
        .iter()
        .map(|c| (c.name.as_str(), c.args.value(), c.from, c.span_id))
        .collect()
}

#[test]
fn a_blank_span_is_the_call_the_model_asked_for_and_the_next_request_answers() {
    let (probe, drain) = (
        json!({"reef": "north"}),
        json!({"tank": 3, "pumps": ["a", "b"]}),
    );
    let failure = json!({"error": "pump jammed"});
    let history = vec![user("drain tank 3")];
    let after_probe = [
        history.clone(),
        vec![asked("probe", &probe), answered("probe", json!({"ok": 1}))],
    ]
    .concat();
    let after_drain = [
        after_probe.clone(),
        vec![asked("drain", &drain), answered("drain", failure.clone())],
    ]
    .concat();
    let a = analyze(vec![
        sp(1, None, (0, 100), "invoke_agent keeper", &[]),
        model(2, (10, 20), &history, &[("probe", probe.clone())]),
        tool(3, 2, (15, 18), "probe", probe.clone(), json!({"ok": 1})),
        model(4, (30, 50), &after_probe, &[("drain", drain.clone())]),
        blank(5, 4, (40, 45), "drain"),
        model(6, (60, 70), &after_drain, &[]),
    ]);
    assert_eq!(
        calls(&a),
        vec![
            ("probe", Some(&probe), None, SpanId([3; 8])),
            (
                "drain",
                Some(&drain),
                Some(FROM_CONVERSATION),
                SpanId([5; 8])
            ),
        ],
        "{:?}",
        a.warnings
    );
    let d = &a.calls[1];
    assert_eq!(d.status, CallStatus::Error);
    assert_eq!(d.error_message.as_deref(), Some("pump jammed"));
    assert_eq!((d.start_time_unix_nano, d.end_time_unix_nano), (40, 45));
    assert!(a.warnings.is_empty(), "{:?}", a.warnings);
}

#[test]
fn a_tool_span_per_call_adds_nothing() {
    let (probe, drain) = (json!({"reef": "south"}), json!({"tank": 1}));
    let history = vec![user("drain tank 1")];
    let after_probe = [
        history.clone(),
        vec![asked("probe", &probe), answered("probe", json!({"ok": 2}))],
    ]
    .concat();
    let after_drain = [
        after_probe.clone(),
        vec![asked("drain", &drain), answered("drain", json!({"ok": 3}))],
    ]
    .concat();
    let a = analyze(vec![
        sp(1, None, (0, 100), "invoke_agent keeper", &[]),
        model(2, (10, 20), &history, &[("probe", probe.clone())]),
        tool(3, 2, (15, 18), "probe", probe.clone(), json!({"ok": 2})),
        model(4, (30, 50), &after_probe, &[("drain", drain.clone())]),
        tool(5, 4, (40, 45), "drain", drain.clone(), json!({"ok": 3})),
        model(6, (60, 70), &after_drain, &[]),
    ]);
    assert_eq!(
        calls(&a),
        vec![
            ("probe", Some(&probe), None, SpanId([3; 8])),
            ("drain", Some(&drain), None, SpanId([5; 8])),
        ]
    );
    assert!(
        a.warnings.is_empty() && a.notes.is_empty(),
        "{:?} {:?}",
        a.warnings,
        a.notes
    );
}

#[test]
fn an_ask_no_request_answers_is_listed_not_counted() {
    let drain = json!({"tank": 2});
    let a = analyze(vec![
        sp(1, None, (0, 100), "invoke_agent keeper", &[]),
        model(
            2,
            (10, 20),
            &[user("drain tank 2")],
            &[("drain", drain.clone())],
        ),
        blank(3, 2, (15, 18), "drain"),
    ]);
    assert!(a.calls.is_empty(), "{:?}", calls(&a));
    assert!(
        a.warnings.iter().any(|w| w.contains("`drain`")),
        "{:?}",
        a.warnings
    );
}

#[test]
fn two_asks_of_one_tool_join_by_their_arguments() {
    // The first drain threw (blank span), the second ran (its span): the
    // span joins the ask with its arguments, the blank one the other.
    let (first, second) = (json!({"tank": 4}), json!({"tank": 5}));
    let failure = json!({"error": "valve stuck"});
    let history = vec![user("drain tanks 4 and 5")];
    let after_first = [
        history.clone(),
        vec![asked("drain", &first), answered("drain", failure)],
    ]
    .concat();
    let after_second = [
        after_first.clone(),
        vec![asked("drain", &second), answered("drain", json!({"ok": 5}))],
    ]
    .concat();
    let a = analyze(vec![
        sp(1, None, (0, 100), "invoke_agent keeper", &[]),
        model(2, (10, 20), &history, &[("drain", first.clone())]),
        blank(3, 2, (15, 18), "drain"),
        model(4, (30, 50), &after_first, &[("drain", second.clone())]),
        tool(5, 4, (40, 45), "drain", second.clone(), json!({"ok": 5})),
        model(6, (60, 70), &after_second, &[]),
    ]);
    assert_eq!(
        calls(&a),
        vec![
            (
                "drain",
                Some(&first),
                Some(FROM_CONVERSATION),
                SpanId([3; 8])
            ),
            ("drain", Some(&second), None, SpanId([5; 8])),
        ],
        "{:?}",
        a.warnings
    );
    assert_eq!(a.calls[0].status, CallStatus::Error);
    assert!(a.warnings.is_empty(), "{:?}", a.warnings);
}

#[test]
fn a_blank_span_outside_the_ask_s_turn_or_of_another_tool_stands_for_nothing() {
    let drain = json!({"tank": 6});
    let history = vec![user("drain tank 6")];
    let after = [
        history.clone(),
        vec![asked("drain", &drain), answered("drain", json!({"ok": 6}))],
    ]
    .concat();
    for stray in [blank(3, 1, (2, 5), "drain"), blank(3, 2, (15, 18), "flush")] {
        let a = analyze(vec![
            sp(1, None, (0, 100), "invoke_agent keeper", &[]),
            model(2, (10, 20), &history, &[("drain", drain.clone())]),
            stray,
            tool(4, 1, (22, 25), "probe", json!({}), json!({"ok": 0})),
            model(6, (60, 70), &after, &[]),
        ]);
        // The ask stays a warning; the stray span is no call.
        assert!(!calls(&a).iter().any(|c| c.0 == "drain"), "{:?}", calls(&a));
        assert!(
            a.warnings.iter().any(|w| w.contains("`drain`")),
            "{:?}",
            a.warnings
        );
    }
}

#[test]
fn a_blank_span_that_failed_fails_its_call_with_the_spans_error() {
    // AutoGen's `execute_tool` spans under Langtrace: nothing of the call,
    // but a tool that raised leaves `error.type`, status ERROR and its
    // exception event.
    let sample = json!({"spot": "inlet 4"});
    let history = vec![user("is inlet 4 clean?")];
    let after = [
        history.clone(),
        vec![
            asked("sample_water", &sample),
            answered("sample_water", json!("no sample since May")),
        ],
    ]
    .concat();
    let thrown = |id: u8, extra: &[(&str, &str)]| {
        let mut attrs = vec![("error.type", "RuntimeError")];
        attrs.extend_from_slice(extra);
        let mut s = sp(id, Some(4), (40, 45), "execute_tool sample_water", &attrs);
        s.span.status = Some(opentelemetry_proto::tonic::trace::v1::Status {
            code: 2,
            message: "RuntimeError: no sample since May".into(),
        });
        s
    };
    let run = |tool_span: SpanRecord| {
        analyze(vec![
            sp(1, None, (0, 100), "invoke_agent keeper", &[]),
            model(4, (30, 50), &history, &[("sample_water", sample.clone())]),
            tool_span,
            model(6, (60, 70), &after, &[]),
        ])
    };
    let a = run(thrown(5, &[]));
    assert_eq!(
        calls(&a),
        vec![(
            "sample_water",
            Some(&sample),
            Some(FROM_CONVERSATION),
            SpanId([5; 8])
        )],
        "{:?}",
        a.warnings
    );
    let c = &a.calls[0];
    assert_eq!(c.status, CallStatus::Error);
    assert_eq!(
        c.error_message.as_deref(),
        Some("RuntimeError: no sample since May")
    );
    assert_eq!(c.error_type.as_deref(), Some("RuntimeError"));
    // An attribute that says anything else: no blank span, the call is the
    // conversation's, at its ask, as the model was answered.
    let b = run(thrown(5, &[("http.method", "POST")]));
    assert_eq!(b.calls.len(), 1, "{:?}", b.calls);
    assert_ne!(b.calls[0].span_id, SpanId([5; 8]));
    assert_eq!(b.calls[0].status, CallStatus::Ok);
}
