//! Helpers the extractor's tests share: traces read in order as `inspect`
//! reads them, spans of one process.

use std::borrow::Borrow;
use std::sync::Arc;

use opentelemetry_proto::tonic::common::v1::{any_value, AnyValue, InstrumentationScope, KeyValue};
use opentelemetry_proto::tonic::resource::v1::Resource;
use opentelemetry_proto::tonic::trace::v1::span::Event;
use opentelemetry_proto::tonic::trace::v1::Span;
use serde_json::{json, Value};

use super::{Analysis, CallResult, Extractor};
use crate::assemble::{SpanId, SpanRecord, Trace, TraceId};

/// Span `id` (all its id bytes `id`) under `parent`, from `when.0` to
/// `when.1`, with `attributes`.
pub(crate) fn span_of(
    id: u8,
    parent: Option<u8>,
    name: &str,
    when: (u64, u64),
    attributes: Vec<KeyValue>,
) -> SpanRecord {
    SpanRecord {
        span_id: SpanId([id; 8]),
        parent: parent.map(|p| SpanId([p; 8])),
        span: Span {
            span_id: vec![id; 8],
            name: name.to_string(),
            start_time_unix_nano: when.0,
            end_time_unix_nano: when.1,
            attributes,
            ..Default::default()
        }
        .into(),
        resource: Arc::new(Resource::default()),
        scope: Arc::new(InstrumentationScope::default()),
    }
}

/// `(name, arguments, result, convention)` of each call of trace `trace`
/// (its id bytes all `trace`) made of `spans`.
pub(crate) fn calls_of(trace: u8, spans: Vec<SpanRecord>) -> Vec<(String, Value, Value, String)> {
    Extractor::default()
        .extract(&Trace::new(TraceId([trace; 16]), spans, 0))
        .into_iter()
        .map(|c| {
            let result = c.result.as_ref().map_or(Value::Null, CallResult::to_value);
            let args = c.args.value().cloned().unwrap_or(Value::Null);
            (c.name, args, result, c.convention)
        })
        .collect()
}

/// One expected row of [`calls_of`].
pub(crate) fn call(
    name: &str,
    args: Value,
    result: Value,
    rule: &str,
) -> (String, Value, Value, String) {
    (name.into(), args, result, rule.into())
}

/// Span `s` as one of process `process` (its resource's
/// `service.instance.id`).
pub(crate) fn in_process(mut s: SpanRecord, process: &str) -> SpanRecord {
    s.resource = Arc::new(Resource {
        attributes: vec![KeyValue {
            key: "service.instance.id".into(),
            value: Some(AnyValue {
                value: Some(any_value::Value::StringValue(process.into())),
            }),
            ..Default::default()
        }],
        ..Default::default()
    });
    s
}

/// Reads `traces` in order as `inspect` does (calls left open carried
/// to the traces after).
pub(crate) fn read_in_order(traces: Vec<Trace>) -> Vec<Analysis> {
    let x = Extractor::default();
    let mut carry = super::carry::Carry::default();
    let mut out = Vec::new();
    for t in traces {
        let mut first = x.analyze(&t);
        let left = super::carry::Left::of(first.open.take(), || t);
        out.extend(carry.settle(first, left, |t, carried| {
            let mut a = x.analyze_carried(t, carried);
            let open = a.open.take();
            (a, open)
        }));
    }
    out.extend(carry.finish());
    out
}

/// A span event `name` with one string attribute `key` = `text`.
pub(crate) fn event(name: &str, key: &str, text: &str) -> Event {
    Event {
        name: name.into(),
        attributes: vec![KeyValue {
            key: key.into(),
            value: Some(AnyValue {
                value: Some(any_value::Value::StringValue(text.into())),
            }),
            ..KeyValue::default()
        }],
        ..Event::default()
    }
}

/// `(name, arguments, result)` of each call `a` read.
pub(crate) fn name_args_results(a: &Analysis) -> Vec<(&str, Option<Value>, Option<Value>)> {
    a.calls
        .iter()
        .map(|c| {
            let result = c.result.as_ref().map(CallResult::to_value);
            (c.name.as_str(), c.args.value().cloned(), result)
        })
        .collect()
}

/// `(name, arguments, result, convention)` of each call of `spans`, in a
/// trace of their own; `None` where the call has none.
pub(crate) fn calls_in(
    spans: Vec<SpanRecord>,
) -> Vec<(String, Option<Value>, Option<Value>, String)> {
    Extractor::default()
        .extract(&Trace::new(TraceId([7; 16]), spans, 0))
        .into_iter()
        .map(|c| {
            let result = c.result.as_ref().map(CallResult::to_value);
            (c.name, c.args.value().cloned(), result, c.convention)
        })
        .collect()
}

/// A made-up vendor's model span `name` under span 1: the request's GenAI
/// messages `input` and the reply `output`.
pub(crate) fn genai_chat(
    id: u8,
    when: (u64, u64),
    name: &str,
    input: Value,
    output: Value,
) -> SpanRecord {
    let (input, output) = (input.to_string(), output.to_string());
    let attrs = [
        ("gen_ai.operation.name", "chat"),
        ("gen_ai.input.messages", input.as_str()),
        ("gen_ai.output.messages", output.as_str()),
    ];
    super::tests::sp(id, Some(1), when, name, &attrs)
}

/// A user's GenAI message (`gen_ai.input.messages` parts).
pub(crate) fn genai_user() -> Value {
    serde_json::json!({"role": "user", "parts": [{"type": "text", "content": "go"}]})
}

/// An assistant's GenAI message asking for `calls` (`(id, name, arguments)`).
pub(crate) fn genai_asks(calls: &[(&str, &str, Value)]) -> Value {
    let parts: Vec<Value> = calls
        .iter()
        .map(|(id, n, a)| serde_json::json!({"type": "tool_call", "id": id, "name": n, "arguments": a}))
        .collect();
    serde_json::json!({"role": "assistant", "parts": parts})
}

/// A tool's GenAI message answering call `id` with `v`.
pub(crate) fn genai_result(id: &str, v: &str) -> Value {
    serde_json::json!({"role": "tool", "parts": [{"type": "tool_call_response", "id": id, "response": v}]})
}

/// `(name, result)` of each call of `a`, a call without a result `null`.
pub(crate) fn names_and_results(a: &Analysis) -> Vec<(String, Value)> {
    a.calls
        .iter()
        .map(|c| {
            let r = c
                .result
                .as_ref()
                .map(CallResult::to_value)
                .unwrap_or_default();
            (c.name.clone(), r)
        })
        .collect()
}

/// A model call span `name` of a made-up vendor (`acme.span.kind = LLM`)
/// with its request body `input` and response body `output`.
pub(crate) fn acme_model(
    id: u8,
    when: (u64, u64),
    name: &str,
    input: &Value,
    output: &Value,
) -> SpanRecord {
    let (i, o) = (input.to_string(), output.to_string());
    super::tests::sp(
        id,
        None,
        when,
        name,
        &[
            ("acme.span.kind", "LLM"),
            ("acme.input", &i),
            ("acme.output", &o),
        ],
    )
}

/// The model's two chat spans around one call of `moor_boat` (call id
/// `m-1`), as a made-up vendor records them with GenAI messages: span 1
/// asks for it, span `answered_in` holds in its input the history with
/// `response` as the call's result (no status on the tool message).
pub(crate) fn ask_and_answer(response: Value, answered_in: u8) -> [SpanRecord; 2] {
    use serde_json::json;
    let ask = json!([{"role": "assistant", "parts": [{"type": "tool_call", "id": "m-1",
        "name": "moor_boat", "arguments": {"pier": "B"}}]}]);
    let user = json!({"role": "user", "parts": [{"type": "text", "content": "Moor at B"}]});
    let answer = json!({"role": "tool", "parts": [{"type": "tool_call_response", "id": "m-1",
        "response": response}]});
    let history = json!([user, ask[0], answer]);
    let chat = |id, attrs: &[(&str, &str)]| {
        super::tests::sp(
            id,
            None,
            (u64::from(id) * 100, u64::from(id) * 100 + 50),
            "chat harbour-model",
            attrs,
        )
    };
    [
        chat(
            1,
            &[
                ("gen_ai.operation.name", "chat"),
                ("gen_ai.input.messages", &json!([user]).to_string()),
                ("gen_ai.output.messages", &ask.to_string()),
            ],
        ),
        chat(
            answered_in,
            &[
                ("gen_ai.operation.name", "chat"),
                ("gen_ai.input.messages", &history.to_string()),
            ],
        ),
    ]
}

/// A trace holding one model call of a made-up vendor's client, in
/// process `process`: its request carries `results` (call id, content)
/// and nothing else of the history; its output asks for `calls`.
pub(crate) fn model_call(
    trace: u8,
    when: (u64, u64),
    process: &str,
    results: &[(&str, &str)],
    calls: &[(&str, &str, Value)],
) -> Trace {
    let input: Vec<Value> = results
        .iter()
        .map(|(id, r)| json!({"role": "tool", "parts": [{"type": "tool_call_response", "id": id, "response": r}]}))
        .collect();
    let parts: Vec<Value> = calls
        .iter()
        .map(|(id, n, a)| json!({"type": "tool_call", "id": id, "name": n, "arguments": a}))
        .collect();
    let input = Value::Array(input).to_string();
    let output = json!([{"role": "assistant", "parts": parts}]).to_string();
    let s = crate::extract::tests::sp(
        trace,
        None,
        when,
        "acme.chat",
        &[
            ("acme.operation", "chat"),
            ("gen_ai.input.messages", &input),
            ("gen_ai.output.messages", &output),
        ],
    );
    let s = in_process(s, process);
    Trace::new(TraceId([trace; 16]), vec![s], 0)
}

/// `calls` (id, tool, arguments) as an OpenAI assistant message's
/// `tool_calls`.
pub(crate) fn openai_tool_calls<V: Borrow<Value>>(calls: &[(&str, &str, V)]) -> Vec<Value> {
    calls
        .iter()
        .map(|(id, name, args)| {
            json!({"id": id, "type": "function",
                "function": {"name": name, "arguments": args.borrow().to_string()}})
        })
        .collect()
}

/// A made-up vendor's model call (`acme.chat`, GenAI messages), a trace of
/// its own in process `p`, with the `input` and `output` messages given.
pub(crate) fn chat_trace(
    trace: u8,
    when: (u64, u64),
    input: Option<&str>,
    output: Option<&str>,
) -> Trace {
    let mut attrs = vec![("gen_ai.operation.name", "chat")];
    attrs.extend(input.map(|i| ("gen_ai.input.messages", i)));
    attrs.extend(output.map(|o| ("gen_ai.output.messages", o)));
    let s = in_process(super::tests::sp(1, None, when, "acme.chat", &attrs), "p");
    Trace::new(TraceId([trace; 16]), vec![s], 0)
}

/// [`chat_trace`] whose output asks for `calls` (id, tool, arguments).
pub(crate) fn asking_trace<V: Borrow<Value>>(
    trace: u8,
    when: (u64, u64),
    calls: &[(&str, &str, V)],
) -> Trace {
    let output = json!([{"role": "assistant", "tool_calls": openai_tool_calls(calls)}]);
    chat_trace(trace, when, None, Some(&output.to_string()))
}

/// [`chat_trace`] whose request repeats the turn asking for `calls` and
/// carries `results` under their ids, and whose answer is final text.
pub(crate) fn answering_trace<V: Borrow<Value>>(
    trace: u8,
    when: (u64, u64),
    calls: &[(&str, &str, V)],
    results: &[&str],
) -> Trace {
    let mut input = vec![
        json!({"role": "user", "content": "plan my day"}),
        json!({"role": "assistant", "tool_calls": openai_tool_calls(calls)}),
    ];
    for ((id, ..), r) in calls.iter().zip(results) {
        input.push(json!({"role": "tool", "tool_call_id": id, "content": r}));
    }
    final_text_trace(trace, when, input)
}

/// [`chat_trace`] whose request is the messages `input` and whose answer is
/// final text.
pub(crate) fn final_text_trace(trace: u8, when: (u64, u64), input: Vec<Value>) -> Trace {
    let output = json!([{"role": "assistant", "content": "done"}]).to_string();
    chat_trace(
        trace,
        when,
        Some(&Value::Array(input).to_string()),
        Some(&output),
    )
}

/// A made-up framework's tool spans (`acme.step = tool`): the tool's name
/// in `acme.tool`, arguments only when `acme.args` is there, no result.
/// `extra` adds lines to the rule (TOML).
pub(crate) fn acme_tool_extractor(extra: &str) -> super::Extractor {
    let rule = format!(
        r#"
        name = "acme"
        priority = 5
        when = [{{ attr = "acme.step", equals = "tool" }}]
        name_from = [{{ attr = "acme.tool" }}]
        args = [{{ attr = "acme.args", decode = "json" }}]
        {extra}
        "#
    );
    let mut specs = super::rules::builtin();
    specs.push(toml::from_str::<super::rules::RuleSpec>(&rule).expect("rule"));
    super::Extractor::new(&specs).expect("rules")
}
