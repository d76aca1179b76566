//! Tests of the conversation witness (`super`).

use super::*;
use serde_json::json;

use crate::assemble::TraceId;

fn sp(id: u8, parent: Option<u8>, start: u64, name: &str, attrs: &[(&str, &str)]) -> SpanRecord {
    super::super::tests::sp(id, parent, (start, start + 5), name, attrs)
}

fn analyze(spans: Vec<SpanRecord>) -> Analysis {
    Extractor::default().analyze(&Trace::new(TraceId([3; 16]), spans, 0))
}

fn names(a: &Analysis) -> Vec<(&str, Option<&Value>, Option<&str>)> {
    a.calls
        .iter()
        .map(|c| (c.name.as_str(), c.args.value(), c.from))
        .collect()
}

/// A GenAI model span asking for `calls` (id, name, args) after
/// `results` (id, content) came back.
fn chat(id: u8, start: u64, results: &[(&str, &str)], calls: &[(&str, &str, Value)]) -> SpanRecord {
    let input: Vec<Value> = results
        .iter()
        .map(|(id, r)| {
            json!({"role": "tool", "parts": [{"type": "tool_call_response", "id": id, "response": r}]})
        })
        .collect();
    let parts: Vec<Value> = calls
        .iter()
        .map(|(id, n, a)| json!({"type": "tool_call", "id": id, "name": n, "arguments": a}))
        .collect();
    let output = json!([{"role": "assistant", "parts": parts}]).to_string();
    let input = Value::Array(input).to_string();
    sp(
        id,
        Some(1),
        start,
        "chat m",
        &[
            ("gen_ai.operation.name", "chat"),
            ("gen_ai.input.messages", &input),
            ("gen_ai.output.messages", &output),
        ],
    )
}

#[test]
fn indexed_messages_are_rebuilt_in_either_layout() {
    let s = sp(
        1,
        None,
        0,
        "x",
        &[
            ("llm.input_messages.1.message.role", "tool"),
            ("llm.input_messages.1.message.tool_call_id", "c1"),
            ("llm.input_messages.1.message.content", "{\"ok\": 1}"),
            ("llm.input_messages.0.message.role", "assistant"),
            (
                "llm.input_messages.0.message.tool_calls.0.tool_call.id",
                "c1",
            ),
            (
                "llm.input_messages.0.message.tool_calls.0.tool_call.function.name",
                "f",
            ),
            (
                "llm.input_messages.0.message.tool_calls.0.tool_call.function.arguments",
                "{\"a\": 1}",
            ),
            ("gen_ai.completion.0.role", "assistant"),
            ("gen_ai.completion.0.tool_calls.0.id", "c2"),
            ("gen_ai.completion.0.tool_calls.0.name", "g"),
            ("gen_ai.completion.0.tool_calls.0.arguments", "{\"b\": 2}"),
        ],
    );
    let request = read_request(&flat_messages(&s, &OI_IN).unwrap(), "openinference");
    assert_eq!(request.answers.len(), 1);
    assert_eq!(request.answers[0].id.as_deref(), Some("c1"));
    assert_eq!(request.last_turn[0].name, "f");
    let (asked, form) = asked_of(&s);
    assert_eq!(form, "openllmetry");
    assert_eq!(
        (
            asked[0].id.as_deref(),
            asked[0].name.as_str(),
            &asked[0].args
        ),
        (Some("c2"), "g", &json!({"b": 2}))
    );
}

#[test]
fn a_flattened_call_without_arguments_stays_in_its_turn() {
    // OpenInference leaves out a no-argument call's empty `arguments`: the
    // Responses API's two call items, the second without them, are one
    // turn, both answered.
    let call = |m: u8, j: &str, id: &str, name: &str| {
        let key = |f: &str| format!("llm.input_messages.{m}.message.tool_calls.{j}.tool_call.{f}");
        vec![
            (key("id"), id.to_string()),
            (key("function.name"), name.to_string()),
        ]
    };
    let mut attrs: Vec<(String, String)> = vec![
        (
            "llm.input_messages.0.message.role".into(),
            "assistant".into(),
        ),
        (
            "llm.input_messages.1.message.role".into(),
            "assistant".into(),
        ),
        ("llm.input_messages.2.message.role".into(), "tool".into()),
        (
            "llm.input_messages.2.message.tool_call_id".into(),
            "c1".into(),
        ),
        (
            "llm.input_messages.2.message.content".into(),
            "moved".into(),
        ),
        ("llm.input_messages.3.message.role".into(), "tool".into()),
        (
            "llm.input_messages.3.message.tool_call_id".into(),
            "c2".into(),
        ),
        (
            "llm.input_messages.3.message.content".into(),
            "9 bales".into(),
        ),
    ];
    attrs.extend(call(0, "0", "c1", "move_flock"));
    attrs.push((
        "llm.input_messages.0.message.tool_calls.0.tool_call.function.arguments".into(),
        "{\"to\": \"Cae\"}".into(),
    ));
    attrs.extend(call(1, "0", "c2", "feed_stock"));
    let pairs: Vec<(&str, &str)> = attrs
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    let s = sp(1, None, 0, "Response", &pairs);
    let request = read_request(&flat_messages(&s, &OI_IN).unwrap(), "openinference");
    let turn: Vec<_> = request
        .last_turn
        .iter()
        .map(|a| (a.id.as_deref(), a.name.as_str(), a.args.clone()))
        .collect();
    assert_eq!(
        turn,
        [
            (Some("c1"), "move_flock", json!({"to": "Cae"})),
            (Some("c2"), "feed_stock", Value::Null),
        ]
    );
    assert_eq!(request.answers.len(), 2);
}

#[test]
fn results_are_read_in_every_known_shape() {
    let messages = json!({"messages": [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "tool_calls": [{"id": "a", "function": {"name": "f", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "a", "content": "1"},
        {"role": "tool", "parts": [{"type": "tool_call_response", "id": "b", "response": 2}]},
        {"role": "tool", "content": [{"type": "tool-result", "toolCallId": "c", "toolName": "h", "output": 3}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "d", "content": "4"}]},
        {"role": "tool", "content": [{"toolResponse": {"name": "k", "ref": "e", "output": 5}}]},
    ]});
    let r = read_request(&messages, "test");
    let ids: Vec<Option<&str>> = r.answers.iter().map(|a| a.id.as_deref()).collect();
    assert_eq!(ids, [Some("a"), Some("b"), Some("c"), Some("d"), Some("e")]);
    // Only results follow the model's turn: its calls are the last turn.
    assert_eq!(r.last_turn.len(), 1);
    let mut later = messages.clone();
    later["messages"]
        .as_array_mut()
        .unwrap()
        .push(json!({"role": "user", "content": "and now?"}));
    assert!(read_request(&later, "test").last_turn.is_empty());
}

#[test]
fn calls_come_from_the_conversation_once_per_call_id() {
    let w = json!({"city": "Oslo"});
    let t = json!({"zone": "CET"});
    let a = analyze(vec![
        sp(1, None, 0, "loop", &[]),
        chat(
            2,
            10,
            &[],
            &[("c1", "weather", w.clone()), ("c2", "time", t.clone())],
        ),
        // The SDK's own span of the same model call: the same output.
        {
            let mut inner = chat(3, 11, &[], &[("c1", "weather", w.clone())]);
            inner.parent = Some(SpanId([2; 8]));
            inner
        },
        // The next request repeats the history and asks again.
        chat(
            4,
            30,
            &[("c1", "sunny"), ("c2", "9:00")],
            &[("c3", "weather", w.clone())],
        ),
        chat(5, 50, &[("c1", "sunny"), ("c2", "9:00")], &[]),
    ]);
    let conv = Some(FROM_CONVERSATION);
    assert_eq!(
        names(&a),
        [("weather", Some(&w), conv), ("time", Some(&t), conv)]
    );
    // c3 was never answered: listed, not counted.
    assert_eq!(a.warnings.len(), 1, "{:?}", a.warnings);
    assert!(a.warnings[0].contains("`weather` (call id c3)"));
    assert_eq!(a.calls[0].result, Some(CallResult::Value(json!("sunny"))));
}

#[test]
fn tool_spans_join_the_model_call_by_id_and_disagreements_are_warned() {
    let args = json!({"q": "x"});
    let tool = |id: u8, start: u64, name: &str, call_id: &str| {
        sp(
            id,
            Some(1),
            start,
            &format!("execute_tool {name}"),
            &[
                ("gen_ai.operation.name", "execute_tool"),
                ("gen_ai.tool.name", name),
                ("gen_ai.tool.call.id", call_id),
            ],
        )
    };
    let a = analyze(vec![
        sp(1, None, 0, "loop", &[]),
        chat(
            2,
            10,
            &[],
            &[
                ("k1", "search", args.clone()),
                ("k2", "fetch", json!({})),
                ("k3", "never_run", json!({})),
            ],
        ),
        // A wrapper class's name, no arguments: the model's name and
        // arguments by call id.
        tool(3, 20, "FunctionTool", "k1"),
        tool(4, 21, "fetch", "k2"),
        // Nothing asked for this one.
        tool(5, 22, "extra", "k9"),
    ]);
    assert_eq!(
        names(&a),
        [
            ("search", Some(&args), None),
            ("fetch", Some(&json!({})), None),
            ("extra", None, None)
        ]
    );
    assert_eq!(a.calls[0].span_name.as_deref(), Some("FunctionTool"));
    assert_eq!(a.warnings.len(), 3, "{:?}", a.warnings);
    assert!(a.warnings[0].contains("`never_run` (call id k3)"));
    assert!(a.warnings[1].contains("call of `extra`"));
    // `extra` holds nothing, with the request's messages recorded
    // (`no_content`).
    assert!(a.warnings[2].contains("`extra` (span 0505050505050505)): this trace records"));
}

#[test]
fn one_call_id_in_two_conversations_is_two_calls() {
    // A sub-agent's conversation reuses its parent's call id.
    let a = analyze(vec![
        sp(1, None, 0, "loop", &[]),
        chat(2, 10, &[], &[("c", "plan", json!({"to": "Rome"}))]),
        chat(3, 20, &[], &[("c", "weather", json!({"city": "Rome"}))]),
        chat(4, 30, &[("c", "sun")], &[]),
    ]);
    let got: Vec<&str> = a.calls.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(got, ["plan", "weather"]);
}

#[test]
fn an_agent_run_without_tool_spans_gets_its_calls_from_its_conversation() {
    let run = |id: u8, parent: u8, start: u64, name: &str| {
        sp(
            id,
            Some(parent),
            start,
            &format!("invoke_agent {name}"),
            &[
                ("gen_ai.operation.name", "invoke_agent"),
                ("gen_ai.agent.name", name),
            ],
        )
    };
    let in_run = |mut s: SpanRecord, parent: u8| {
        s.parent = Some(SpanId([parent; 8]));
        s
    };
    let a = analyze(vec![
        sp(1, None, 0, "loop", &[]),
        run(2, 1, 1, "main"),
        in_run(
            chat(3, 10, &[], &[("m1", "delegate", json!({"task": "t"}))]),
            2,
        ),
        sp(
            4,
            Some(2),
            20,
            "execute_tool delegate",
            &[
                ("gen_ai.operation.name", "execute_tool"),
                ("gen_ai.tool.name", "delegate"),
                ("gen_ai.tool.call.id", "m1"),
            ],
        ),
        // A sub-agent on a bare client inside the tool: no tool span.
        run(5, 4, 21, "helper"),
        in_run(chat(6, 22, &[], &[("h1", "lookup", json!({"k": 1}))]), 5),
        in_run(chat(7, 30, &[("h1", "found")], &[]), 5),
        in_run(chat(8, 40, &[("m1", "done")], &[]), 2),
    ]);
    let got: Vec<(&str, Option<&str>, Option<&str>)> = a
        .calls
        .iter()
        .map(|c| {
            (
                c.name.as_str(),
                c.agent.as_ref().map(|r| r.name.as_str()),
                c.from,
            )
        })
        .collect();
    assert_eq!(
        got,
        [
            ("delegate", Some("main"), None),
            ("lookup", Some("helper"), Some(FROM_CONVERSATION))
        ]
    );
    assert!(a.warnings.is_empty(), "{:?}", a.warnings);
}

#[test]
fn responses_items_in_a_request_text_are_its_messages() {
    // One user message whose text is the JSON of the Responses items.
    let items = json!([
        {"role": "user", "content": "go"},
        {"type": "function_call", "id": "fc_1", "call_id": "c1", "name": "f", "arguments": "{\"a\": 1}"},
        {"type": "function_call_output", "call_id": "c1", "output": "one"},
        {"type": "function_call", "id": "fc_2", "call_id": "c2", "name": "g", "arguments": "{}"},
        {"type": "function_call", "id": "fc_3", "call_id": "c3", "name": "h", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "c2", "output": "two"},
        {"type": "function_call_output", "call_id": "c3", "output": "three"},
    ]);
    let messages =
        json!([{"role": "user", "parts": [{"type": "text", "content": items.to_string()}]}]);
    let r = read_request(&messages, "test");
    let ids: Vec<Option<&str>> = r.answers.iter().map(|a| a.id.as_deref()).collect();
    assert_eq!(ids, [Some("c1"), Some("c2"), Some("c3")]);
    // Two call items in a row are one model turn; ids are the call ids.
    let last: Vec<Option<&str>> = r.last_turn.iter().map(|a| a.id.as_deref()).collect();
    assert_eq!(last, [Some("c2"), Some("c3")]);
    assert_eq!(r.history.len(), 3);
}

#[test]
fn calls_only_a_later_request_shows_are_counted_once() {
    // The outputs lost the calls; the second request holds them all,
    // the third repeats them.
    let history = |extra: &[(&str, &str)]| {
        let mut m = vec![
            json!({"role": "user", "content": "go"}),
            json!({"role": "assistant", "tool_calls": [{"id": "c1", "function": {"name": "f", "arguments": "{}"}}]}),
            json!({"role": "tool", "tool_call_id": "c1", "content": "1"}),
            json!({"role": "assistant", "tool_calls": [{"id": "c2", "function": {"name": "g", "arguments": "{}"}}]}),
            json!({"role": "tool", "tool_call_id": "c2", "content": "2"}),
        ];
        m.extend(extra.iter().map(|(r, c)| json!({"role": r, "content": c})));
        Value::Array(m).to_string()
    };
    let model = |id: u8, start: u64, input: &str| {
        sp(
            id,
            Some(1),
            start,
            "acme.chat",
            &[
                ("gen_ai.input.messages", input),
                ("gen_ai.output.messages", "[]"),
            ],
        )
    };
    let first = json!([{"role": "user", "content": "go"}]).to_string();
    let a = analyze(vec![
        sp(1, None, 0, "loop", &[]),
        model(2, 10, &first),
        model(3, 20, &history(&[])),
        model(4, 30, &history(&[("assistant", "done"), ("user", "again")])),
    ]);
    let got: Vec<&str> = a.calls.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(got, ["f", "g"]);
    // A trace whose first request already carries a history: of it,
    // only the last turn is new (the rest was counted before).
    let b = analyze(vec![
        sp(1, None, 0, "loop", &[]),
        model(3, 20, &history(&[])),
    ]);
    let got: Vec<&str> = b.calls.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(got, ["g"]);
}

#[test]
fn a_made_up_vendor_namespace_is_joined_by_the_model_name() {
    // A tool span whose name is `<namespace>.<tool>` with no call id.
    let a = analyze(vec![
        sp(1, None, 0, "loop", &[]),
        chat(2, 10, &[], &[("c", "lookup", json!({"id": 7}))]),
        sp(
            3,
            Some(1),
            20,
            "acme.lookup",
            &[
                ("gen_ai.operation.name", "execute_tool"),
                ("gen_ai.tool.name", "acme.lookup"),
            ],
        ),
    ]);
    assert_eq!(a.calls[0].name, "lookup");
    assert_eq!(a.calls[0].span_name.as_deref(), Some("acme.lookup"));
    assert!(a.warnings.is_empty(), "{:?}", a.warnings);
}

/// A span of a made-up tracer that says it is a model call in its own
/// namespace and dumps the provider's bodies under its own keys.
fn zeta_model(id: u8, start: u64, kind: &str, request: Value, response: Value) -> SpanRecord {
    let (request, response) = (request.to_string(), response.to_string());
    sp(
        id,
        Some(1),
        start,
        "zeta.call",
        &[
            ("zeta.span_type", kind),
            ("zeta.requestPayload", &request),
            ("zeta.response_payload", &response),
        ],
    )
}

#[test]
fn provider_bodies_under_any_key_of_a_model_span_are_read() {
    // Gemini: `functionCall` parts out, `functionResponse` parts back in.
    let gemini_call = json!({"candidates": [{"content": {"role": "model", "parts": [
        {"functionCall": {"id": "g1", "name": "tide", "args": {"port": "Brest"}}}]}}]});
    let gemini_next = json!({"contents": [
        {"role": "user", "parts": [{"text": "tides?"}]},
        {"role": "model", "parts": [{"functionCall": {"id": "g1", "name": "tide", "args": {"port": "Brest"}}}]},
        {"role": "user", "parts": [{"functionResponse": {"id": "g1", "name": "tide", "response": {"high": "06:12"}}}]}]});
    let a = analyze(vec![
        sp(1, None, 0, "loop", &[]),
        zeta_model(
            2,
            10,
            "\"Chat_Model\"",
            json!({"contents": []}),
            gemini_call.clone(),
        ),
        zeta_model(3, 30, "LLM", gemini_next, json!({"candidates": []})),
    ]);
    assert_eq!(
        names(&a),
        vec![(
            "tide",
            Some(&json!({"port": "Brest"})),
            Some("conversation")
        )]
    );
    assert_eq!(a.calls[0].convention, "model-body-messages");
    assert_eq!(
        a.calls[0].result,
        Some(CallResult::Value(json!({"high": "06:12"})))
    );

    // Bedrock Converse: `toolUse` out, `toolResult` with a `json` block in.
    let converse_call = json!({"output": {"message": {"role": "assistant", "content": [
        {"toolUse": {"toolUseId": "b1", "name": "tide", "input": {"port": "Cork"}}}]}}});
    let converse_next = json!({"messages": [
        {"role": "assistant", "content": [{"toolUse": {"toolUseId": "b1", "name": "tide", "input": {"port": "Cork"}}}]},
        {"role": "user", "content": [{"toolResult": {"toolUseId": "b1", "content": [{"json": {"high": "07:40"}}]}}]}]});
    let a = analyze(vec![
        sp(1, None, 0, "loop", &[]),
        zeta_model(2, 10, "generation", json!({"messages": []}), converse_call),
        zeta_model(3, 30, "generation", converse_next, json!({})),
    ]);
    assert_eq!(
        names(&a),
        vec![("tide", Some(&json!({"port": "Cork"})), Some("conversation"))]
    );
    assert_eq!(
        a.calls[0].result,
        Some(CallResult::Value(json!({"high": "07:40"})))
    );

    // The same bodies on a span that does not say it is a model call (a
    // tool's or an agent's) are not read: nothing is counted.
    let a = analyze(vec![
        sp(1, None, 0, "loop", &[]),
        zeta_model(2, 10, "AGENT", json!({"contents": []}), gemini_call),
    ]);
    assert!(a.calls.is_empty());
    assert!(a.warnings.iter().all(|w| !w.contains("tide")));
}

#[test]
fn a_tool_span_that_carries_nothing_of_a_call_does_not_stand_in_for_it() {
    let hollow = |id: u8, start: u64| {
        sp(
            id,
            Some(1),
            start,
            "execute_tool zeta-model",
            &[("gen_ai.operation.name", "execute_tool")],
        )
    };
    let a = analyze(vec![
        sp(1, None, 0, "run", &[]),
        chat(2, 10, &[], &[("t1", "tide", json!({"port": "Brest"}))]),
        hollow(3, 20),
        chat(4, 30, &[("t1", "high at 06:12")], &[]),
        hollow(5, 40),
    ]);
    assert_eq!(
        names(&a),
        vec![(
            "tide",
            Some(&json!({"port": "Brest"})),
            Some("conversation")
        )]
    );
    assert_eq!(
        a.notes
            .iter()
            .filter(|n| n.contains("records nothing of a call"))
            .count(),
        2
    );
    // Without a call of the model's that no span shows, the span stays a
    // call, however little it records.
    let a = analyze(vec![sp(1, None, 0, "run", &[]), hollow(3, 20)]);
    assert_eq!(names(&a), vec![("zeta-model", None, None)]);
}

#[test]
fn calls_and_results_in_one_transcript_are_calls_when_nothing_else_shows_them() {
    let transcript = json!({"log": [
        {"kind": "Asked", "items": [{"id": "q1", "name": "tide", "arguments": "{\"port\": \"Brest\"}"}]},
        {"kind": "Ran", "items": [{"call_id": "q1", "name": "tide", "content": "{'high': '06:12'}"}]},
        {"kind": "Asked", "items": [{"id": "q2", "name": "ferry", "arguments": "{}"}]},
    ]})
    .to_string();
    let a = analyze(vec![sp(
        1,
        None,
        0,
        "zeta.run",
        &[("zeta.span_kind", "AGENT"), ("zeta.outputs", &transcript)],
    )]);
    // The call never answered is not counted; the Python literal is read.
    assert_eq!(
        names(&a),
        vec![(
            "tide",
            Some(&json!({"port": "Brest"})),
            Some("conversation")
        )]
    );
    assert_eq!(a.calls[0].convention, "transcript-messages");
    assert_eq!(
        a.calls[0].result,
        Some(CallResult::Value(json!({"high": "06:12"})))
    );
    // The same text as a run's input is what went in, not what happened.
    let a = analyze(vec![sp(
        1,
        None,
        0,
        "zeta.run",
        &[("zeta.span_kind", "AGENT"), ("zeta.inputs", &transcript)],
    )]);
    assert!(a.calls.is_empty());
    // Nor is a span that says it is no agent's run (a workflow's state).
    let a = analyze(vec![sp(
        1,
        None,
        0,
        "zeta.run",
        &[
            ("zeta.span_kind", "workflow"),
            ("zeta.outputs", &transcript),
        ],
    )]);
    assert!(a.calls.is_empty());
}

#[test]
fn a_provider_s_content_blocks_come_off_a_result_the_conversation_carries() {
    let pairs = [
        // A Bedrock Converse json block, as JSON text.
        (r#"[{"json": {"seat": "12A"}}]"#, json!({"seat": "12A"})),
        // Anthropic's text block holding JSON, as a list.
        (
            r#"[{"type": "text", "text": "{\"seat\": \"3C\"}"}]"#,
            json!({"seat": "3C"}),
        ),
        (r#"[{"text": "done"}]"#, json!("done")),
        // Two blocks, another key, or plain text: the value as it came.
        (
            r#"[{"json": 1}, {"json": 2}]"#,
            json!([{"json": 1}, {"json": 2}]),
        ),
        (
            r#"[{"json": 1, "kind": "x"}]"#,
            json!([{"json": 1, "kind": "x"}]),
        ),
        ("[1, 2]", json!([1, 2])),
    ];
    for (i, (content, want)) in pairs.iter().enumerate() {
        let as_list = i == 1;
        let mut request = chat(3, 30, &[("c1", content)], &[]);
        if as_list {
            let v: Value = serde_json::from_str(content).expect("test JSON");
            let input = json!([{"role": "tool", "parts": [{"type": "tool_call_response", "id": "c1", "response": v}]}]);
            request = sp(
                3,
                Some(1),
                30,
                "chat m",
                &[
                    ("gen_ai.operation.name", "chat"),
                    ("gen_ai.input.messages", &input.to_string()),
                ],
            );
        }
        let a = analyze(vec![
            sp(1, None, 0, "loop", &[]),
            chat(2, 10, &[], &[("c1", "seat", json!({}))]),
            request,
        ]);
        assert_eq!(a.calls.len(), 1, "{content}");
        assert_eq!(
            a.calls[0].result,
            Some(CallResult::Value(want.clone())),
            "{content}"
        );
    }
}

#[test]
fn langwatch_s_typed_chat_messages_are_a_request_s_messages() {
    let typed = |messages: Value| json!({"type": "chat_messages", "value": messages}).to_string();
    let ask = typed(json!([{"role": "assistant", "tool_calls": [
        {"id": "k1", "type": "function", "function": {"name": "seat", "arguments": "{\"row\": 4}"}}
    ]}]));
    let answer = typed(json!([
        {"role": "tool", "tool_call_id": "k1", "content": "{\"seat\": \"4B\"}"}
    ]));
    let llm = |id: u8, start: u64, input: &str, output: &str| {
        sp(
            id,
            Some(1),
            start,
            "llm",
            &[
                ("zeta.span.type", "llm"),
                ("zeta.input", input),
                ("zeta.output", output),
            ],
        )
    };
    let none = typed(json!([{"role": "assistant", "content": "ok"}]));
    let a = analyze(vec![
        sp(1, None, 0, "run", &[]),
        llm(
            2,
            10,
            &typed(json!([{"role": "user", "content": "hi"}])),
            &ask,
        ),
        llm(3, 30, &answer, &none),
    ]);
    assert_eq!(
        names(&a),
        [("seat", Some(&json!({"row": 4})), Some(FROM_CONVERSATION))]
    );
    assert_eq!(
        a.calls[0].result,
        Some(CallResult::Value(json!({"seat": "4B"})))
    );
    // Another type, or a third key: no messages.
    let other = json!({"type": "json", "value": [{"role": "tool"}]});
    assert!(super::super::wrappers::langwatch_messages(&other).is_none());
    let third = json!({"type": "chat_messages", "value": [], "x": 1});
    assert!(super::super::wrappers::langwatch_messages(&third).is_none());
}

/// A provider that takes a result only as an object: one `result` or
/// `output` key around a value that is no object comes off; an object
/// under it, or a second key, is the tool's own value.
#[test]
fn a_result_the_provider_demands_as_an_object_comes_off_its_one_key() {
    use super::object_wrapped;
    assert_eq!(object_wrapped(json!({"result": "docked"})), json!("docked"));
    assert_eq!(object_wrapped(json!({"output": [1, 2]})), json!([1, 2]));
    assert_eq!(object_wrapped(json!({"result": null})), json!(null));
    for own in [
        json!({"result": {"dock": 3}}),
        json!({"result": "docked", "fee": 2}),
        json!({"status": "docked"}),
        json!("docked"),
    ] {
        assert_eq!(object_wrapped(own.clone()), own);
    }
}

#[test]
fn otel_genai_keys_flattened_as_openinference_s_are_read() {
    let first = sp(
        2,
        Some(1),
        10,
        "Chat",
        &[
            ("gen_ai.input.messages.0.message.role", "user"),
            ("gen_ai.input.messages.0.message.content", "plan"),
            ("gen_ai.output.messages.0.message.role", "assistant"),
            (
                "gen_ai.output.messages.0.message.tool_calls.0.tool_call.id",
                "k1",
            ),
            (
                "gen_ai.output.messages.0.message.tool_calls.0.tool_call.function.name",
                "look_up",
            ),
            (
                "gen_ai.output.messages.0.message.tool_calls.0.tool_call.function.arguments",
                "{\"town\": \"Oslo\"}",
            ),
        ],
    );
    let second = sp(
        3,
        Some(1),
        30,
        "Chat",
        &[
            ("gen_ai.input.messages.0.message.role", "user"),
            ("gen_ai.input.messages.1.message.role", "assistant"),
            (
                "gen_ai.input.messages.1.message.tool_calls.0.tool_call.id",
                "k1",
            ),
            (
                "gen_ai.input.messages.1.message.tool_calls.0.tool_call.function.name",
                "look_up",
            ),
            ("gen_ai.input.messages.2.message.role", "tool"),
            ("gen_ai.input.messages.2.message.tool_call_id", "k1"),
            ("gen_ai.input.messages.2.message.content", "{\"inn\": 1}"),
            ("gen_ai.output.messages.0.message.role", "assistant"),
            ("gen_ai.output.messages.0.message.content", "done"),
        ],
    );
    let a = analyze(vec![sp(1, None, 0, "run", &[]), first, second]);
    assert_eq!(
        names(&a),
        vec![(
            "look_up",
            Some(&json!({"town": "Oslo"})),
            Some(FROM_CONVERSATION)
        )]
    );
    assert_eq!(a.calls[0].convention, "traceai-messages");
    assert_eq!(
        a.calls[0].result,
        Some(CallResult::Value(json!({"inn": 1})))
    );
}

/// An output's calls are kept once per call id, in their order, calls
/// without an id all kept; the same with many calls (a set, not a scan).
#[test]
fn an_output_s_calls_are_kept_once_per_call_id() {
    let call = |id: Option<String>, n: usize| {
        let mut c = json!({"type": "tool_call", "name": format!("f{n}"), "arguments": {}});
        if let Some(id) = id {
            c["id"] = json!(id);
        }
        c
    };
    for many in [3, 40] {
        // Ids 0, 1, 2, ... each twice (the second named otherwise), then
        // calls without an id.
        let mut parts: Vec<Value> = (0..many)
            .flat_map(|n| {
                [
                    call(Some(format!("c{n}")), n),
                    call(Some(format!("c{n}")), 99),
                ]
            })
            .collect();
        parts.extend((0..2).map(|n| call(None, n)));
        let got = calls_in(&json!([{"role": "assistant", "parts": parts}]));
        let got: Vec<(Option<&str>, &str)> = got
            .iter()
            .map(|a| (a.id.as_deref(), a.name.as_str()))
            .collect();
        let ids: Vec<String> = (0..many).map(|n| format!("c{n}")).collect();
        let names: Vec<String> = (0..many).map(|n| format!("f{n}")).collect();
        let mut want: Vec<(Option<&str>, &str)> = ids
            .iter()
            .zip(&names)
            .map(|(i, n)| (Some(i.as_str()), n.as_str()))
            .collect();
        want.extend([(None, "f0"), (None, "f1")]);
        assert_eq!(got, want, "{many} calls");
    }
}

/// A trace where the model asks for `hand_over` (k1) and, in the turn
/// before the request carrying k1's result, `tools` ran (start, name, call
/// id, arguments); `answered`: whether that request carries k1's result.
fn one_turn(tools: &[(u64, &str, Option<&str>, &str)], answered: bool) -> Analysis {
    let mut spans = vec![
        sp(1, None, 0, "loop", &[]),
        chat(2, 10, &[], &[("k1", "hand_over", json!({}))]),
    ];
    for (i, (start, name, id, args)) in tools.iter().enumerate() {
        let mut attrs = vec![
            ("gen_ai.operation.name", "execute_tool"),
            ("gen_ai.tool.name", *name),
            ("gen_ai.tool.call.arguments", *args),
        ];
        if let Some(id) = id {
            attrs.push(("gen_ai.tool.call.id", id));
        }
        spans.push(sp(3 + i as u8, Some(1), *start, "acme step", &attrs));
    }
    let results: &[(&str, &str)] = if answered { &[("k1", "moved")] } else { &[] };
    spans.push(chat(9, 40, results, &[]));
    analyze(spans)
}

#[test]
fn the_lone_unasked_span_of_a_turn_is_its_lone_unshown_ask() {
    // A framework runs the model's `hand_over` and records it as
    // `acme.relay` with its own arguments, no call id: one call, under
    // the model's name and arguments; no warning.
    let a = one_turn(&[(20, "acme.relay", None, r#"{"from": "a"}"#)], true);
    assert_eq!(names(&a), [("hand_over", Some(&json!({})), None)]);
    assert_eq!(a.calls[0].span_name.as_deref(), Some("acme.relay"));
    assert!(a.warnings.is_empty(), "{:?}", a.warnings);
    assert!(
        a.notes[0].contains("only call of its turn"),
        "{:?}",
        a.notes
    );
}

#[test]
fn an_output_item_type_for_a_name_leaves_the_span_its_name_and_arguments() {
    // The model's side names the call after a Responses item's type, its
    // arguments the item's `{"action": ...}`; the tool span names the
    // tool and holds the action. One call, under the span's name.
    let action = json!({"kind": "scroll", "dy": 300});
    let run = |asked: &str| {
        analyze(vec![
            sp(1, None, 0, "loop", &[]),
            chat(2, 10, &[], &[("k1", asked, json!({"action": action}))]),
            sp(
                3,
                Some(1),
                20,
                "screen",
                &[
                    ("openinference.span.kind", "TOOL"),
                    ("tool.name", "screen"),
                    ("input.value", r#"{"kind": "scroll", "dy": 300}"#),
                ],
            ),
            chat(9, 40, &[("k1", "{\"type\": \"shot\"}")], &[]),
        ])
    };
    let a = run("computer_call");
    assert_eq!(names(&a), [("screen", Some(&action), None)]);
    assert_eq!(a.calls[0].span_name, None);
    assert!(a.warnings.is_empty(), "{:?}", a.warnings);
    assert!(
        a.notes.iter().any(|n| n.contains("output item's type")),
        "{:?}",
        a.notes
    );
    // A function name, even one ending in `_call`, is the model's name.
    let a = run("place_call");
    assert_eq!(
        names(&a),
        [("place_call", Some(&json!({"action": action})), None)]
    );
    assert_eq!(a.calls[0].span_name.as_deref(), Some("screen"));
}

#[test]
fn a_turn_with_more_than_one_of_either_or_no_answer_is_left_alone() {
    // Arguments other than the model's (equal ones join by the pass
    // before).
    let from = r#"{"from": "a"}"#;
    let relay = (20, "acme.relay", None, from);
    for (tools, answered, why) in [
        (
            vec![relay, (22, "acme.audit", None, from)],
            true,
            "two spans",
        ),
        (vec![relay], false, "no result came back"),
        (
            vec![(20, "acme.relay", Some("z9"), from)],
            true,
            "its own call id",
        ),
        (
            vec![(2, "acme.relay", None, from)],
            true,
            "before the ask ended",
        ),
        (
            vec![(45, "acme.relay", None, from)],
            true,
            "after the result",
        ),
    ] {
        let a = one_turn(&tools, answered);
        let got: Vec<&str> = a.calls.iter().map(|c| c.name.as_str()).collect();
        let want: Vec<&str> = tools.iter().map(|t| t.1).collect();
        assert_eq!(got, want, "{why}");
        assert_eq!(a.warnings.len(), 1 + tools.len(), "{why}: {:?}", a.warnings);
    }
}

#[test]
fn a_span_in_the_turn_of_two_unshown_asks_is_left_alone() {
    let a = analyze(vec![
        sp(1, None, 0, "loop", &[]),
        chat(
            2,
            10,
            &[],
            &[("k1", "hand_over", json!({})), ("k2", "notify", json!({}))],
        ),
        sp(
            3,
            Some(1),
            20,
            "acme step",
            &[
                ("gen_ai.operation.name", "execute_tool"),
                ("gen_ai.tool.name", "acme.relay"),
                ("gen_ai.tool.call.arguments", r#"{"from": "a"}"#),
            ],
        ),
        chat(4, 40, &[("k1", "moved"), ("k2", "sent")], &[]),
    ]);
    let got: Vec<&str> = a.calls.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(got, ["acme.relay"]);
    assert_eq!(a.warnings.len(), 3, "{:?}", a.warnings);
}

#[test]
fn a_result_flagged_is_error_is_a_failure_in_whichever_form_keeps_the_flag() {
    // A made-up Anthropic request: the raw body keeps `is_error`, the
    // flattened messages of the same span drop it.
    let body = json!({"model": "m", "messages": [
        {"role": "user", "content": "pay"},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "pay", "input": {"n": 2}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "Error: card declined", "is_error": true}]},
    ]})
    .to_string();
    let flat = [
        ("llm.input_messages.0.message.role", "assistant"),
        (
            "llm.input_messages.0.message.tool_calls.0.tool_call.id",
            "t1",
        ),
        (
            "llm.input_messages.0.message.tool_calls.0.tool_call.function.name",
            "pay",
        ),
        (
            "llm.input_messages.0.message.tool_calls.0.tool_call.function.arguments",
            "{\"n\": 2}",
        ),
        ("llm.input_messages.1.message.role", "tool"),
        ("llm.input_messages.1.message.tool_call_id", "t1"),
        (
            "llm.input_messages.1.message.content",
            "Error: card declined",
        ),
    ];
    let outcome = |attrs: &[(&str, &str)]| {
        let mut attrs = attrs.to_vec();
        attrs.push(("openinference.span.kind", "LLM"));
        let r = request_of(&sp(1, None, 0, "Messages", &attrs));
        r.answers
            .iter()
            .map(|a| a.outcome.clone())
            .collect::<Vec<_>>()
    };
    let failed = ai_sdk_output::Outcome::Failed("Error: card declined".into());
    assert_eq!(
        outcome(&[("input.value", body.as_str())]),
        std::slice::from_ref(&failed)
    );
    assert_eq!(outcome(&flat), [ai_sdk_output::Outcome::Ran]);
    let mut both = flat.to_vec();
    both.push(("input.value", body.as_str()));
    assert_eq!(outcome(&both), std::slice::from_ref(&failed));
    both.rotate_right(1);
    assert_eq!(outcome(&both), [failed]);
    // `is_error: false` says nothing new.
    let ok = body.replace("\"is_error\":true", "\"is_error\":false");
    assert_eq!(
        outcome(&[("input.value", ok.as_str())]),
        [ai_sdk_output::Outcome::Ran]
    );
}

#[test]
fn a_gemini_function_response_of_one_error_key_is_a_failure() {
    // A made-up Gemini request: one call answered `{"error": ...}`, as
    // google-genai's automatic function calling answers a raised function.
    let outcome = |response: Value| {
        let body = json!({"contents": [
            {"role": "user", "parts": [{"text": "dock"}]},
            {"role": "model", "parts": [{"functionCall": {"id": "g1", "name": "dock", "args": {"berth": 4}}}]},
            {"role": "user", "parts": [{"functionResponse": {"id": "g1", "name": "dock", "response": response}}]},
        ]})
        .to_string();
        let attrs = [
            ("openinference.span.kind", "LLM"),
            ("input.value", body.as_str()),
        ];
        let r = request_of(&sp(1, None, 0, "GenerateContent", &attrs));
        r.answers
            .iter()
            .map(|a| a.outcome.clone())
            .collect::<Vec<_>>()
    };
    assert_eq!(
        outcome(json!({"error": "berth 4 is closed"})),
        [ai_sdk_output::Outcome::Failed("berth 4 is closed".into())]
    );
    // Near misses: an error beside other keys is the tool's own value, and
    // a result under `result` ran.
    assert_eq!(
        outcome(json!({"error": "none", "berth": 4})),
        [ai_sdk_output::Outcome::Ran]
    );
    assert_eq!(
        outcome(json!({"result": {"error": "x"}})),
        [ai_sdk_output::Outcome::Ran]
    );
    for nothing in [json!(null), json!(false), json!(""), json!({})] {
        let got = outcome(json!({ "error": nothing }));
        assert_eq!(got, [ai_sdk_output::Outcome::Ran], "{nothing}");
    }
}
