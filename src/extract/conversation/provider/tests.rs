//! Tests of the provider's calls (`super`), on a made-up vendor's keys.

use serde_json::{json, Value};

use super::super::super::tests::sp;
use super::FROM_PROVIDER;
use crate::assemble::{Trace, TraceId};
use crate::extract::{Analysis, CallResult, CallStatus, Extractor};

fn analyze(spans: Vec<crate::assemble::SpanRecord>) -> Analysis {
    Extractor::default().analyze(&Trace::new(TraceId([5; 16]), spans, 0))
}

/// One call: name, arguments, result, `from`, MCP server.
type Row<'a> = (String, Value, Value, Option<&'a str>, Option<String>);

/// The [`Row`] of each call, in start order.
fn rows(a: &Analysis) -> Vec<Row<'_>> {
    let mut calls: Vec<_> = a.calls.iter().collect();
    calls.sort_by_key(|c| c.start_time_unix_nano);
    calls
        .into_iter()
        .map(|c| {
            (
                c.name.clone(),
                c.args.value().cloned().unwrap_or_default(),
                c.result.as_ref().map_or(Value::Null, CallResult::to_value),
                c.from,
                c.mcp_server.clone(),
            )
        })
        .collect()
}

#[test]
fn a_hosted_item_in_a_made_up_vendor_s_output_is_a_call_once() {
    // A vendor of its own keys records a Responses output (a hosted MCP call
    // and a function call), then the next request repeats it as history.
    let output = json!([
        {"type": "mcp_call", "id": "mcp_q1", "server_label": "tides", "name": "high_tide",
         "arguments": "{\"port\": \"Brest\"}", "output": "06:12", "error": null},
        {"type": "function_call", "id": "fc_q2", "call_id": "q2", "name": "book_boat",
         "arguments": "{\"seats\": 2}"}
    ]);
    let request = json!([
        {"role": "user", "content": "tides, then a boat"},
        output[0], output[1],
        {"type": "function_call_output", "call_id": "q2", "output": "booked"}
    ]);
    let (o, r) = (output.to_string(), request.to_string());
    let a = analyze(vec![
        sp(1, None, (0, 100), "quux.turn", &[]),
        sp(2, Some(1), (10, 20), "quux.model", &[("quux.out", &o)]),
        sp(3, Some(1), (30, 40), "quux.model", &[("quux.input", &r)]),
    ]);
    let got = rows(&a);
    assert_eq!(got.len(), 1, "{got:?} {:?}", a.warnings);
    assert_eq!(got[0].0, "high_tide");
    assert_eq!(got[0].1, json!({"port": "Brest"}));
    assert_eq!(got[0].2, json!("06:12"));
    assert_eq!(got[0].3, Some(FROM_PROVIDER));
    assert_eq!(got[0].4.as_deref(), Some("tides"));
}

#[test]
fn a_call_answered_in_the_model_s_own_message_is_the_provider_s() {
    // GenAI parts under a made-up key: the server's call and its answer in
    // the assistant's message, then a call the loop answers.
    let output = json!([{"role": "assistant", "parts": [
        {"type": "tool_call", "id": "srvtoolu_7", "name": "run_code", "arguments": {"code": "1+1"}},
        {"type": "tool_call_response", "id": "srvtoolu_7", "response": {"stdout": "2"}},
        {"type": "tool_call", "id": "c_8", "name": "book_boat", "arguments": {"seats": 2}}]}]);
    let request = json!([
        {"role": "user", "parts": [{"type": "text", "content": "go"}]},
        output[0],
        {"role": "user", "parts": [{"type": "tool_call_response", "id": "c_8", "response": "booked"}]}]);
    let (o, r) = (output.to_string(), request.to_string());
    let a = analyze(vec![
        sp(1, None, (0, 100), "quux.turn", &[]),
        sp(
            2,
            Some(1),
            (10, 20),
            "chat",
            &[("gen_ai.output.messages", &o)],
        ),
        sp(
            3,
            Some(1),
            (30, 40),
            "chat",
            &[("gen_ai.input.messages", &r)],
        ),
    ]);
    let got = rows(&a);
    let names: Vec<_> = got.iter().map(|g| (g.0.as_str(), g.3)).collect();
    assert_eq!(
        names,
        [
            ("run_code", Some(FROM_PROVIDER)),
            ("book_boat", Some("conversation"))
        ],
        "{:?}",
        a.warnings
    );
    assert_eq!(got[0].2, json!({"stdout": "2"}));
    // The witness does not take the provider's call for an unanswered ask.
    assert!(
        a.warnings.iter().all(|w| !w.contains("run_code")),
        "{:?}",
        a.warnings
    );
}

#[test]
fn a_server_block_takes_its_result_block_by_id() {
    let output = json!({"content": [
        {"type": "server_tool_use", "id": "srv_1", "name": "web_search", "input": {"query": "ferries"}},
        {"type": "web_search_tool_result", "tool_use_id": "srv_1", "content": [{"title": "Ferries"}]},
        {"type": "text", "text": "found"}]});
    let o = output.to_string();
    let a = analyze(vec![sp(
        2,
        None,
        (10, 20),
        "quux.model",
        &[("quux.response", &o)],
    )]);
    let got = rows(&a);
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].0, "web_search");
    assert_eq!(got[0].1, json!({"query": "ferries"}));
    assert_eq!(got[0].2, json!([{"title": "Ferries"}]));
}

#[test]
fn a_block_of_a_type_only_and_a_tool_definition_are_no_calls() {
    // A writer that kept only the block's type; the offered tools' list.
    let output = json!([{"role": "assistant", "parts": [{"type": "server_tool_use"}, {"type": "web_search_tool_result"}]}]);
    let tools = json!([{"type": "web_search"}, {"type": "mcp", "server_label": "tides"}]);
    let (o, t) = (output.to_string(), tools.to_string());
    let a = analyze(vec![sp(
        2,
        None,
        (10, 20),
        "chat",
        &[("gen_ai.output.messages", &o), ("quux.tools", &t)],
    )]);
    assert!(a.calls.is_empty(), "{:?}", a.calls);
}

#[test]
fn code_a_model_ran_is_one_call_and_empty_code_fields_are_none() {
    // Gemini's parts: the code, then its result; an SDK dump's `null`
    // fields name no code.
    let ran = json!({"candidates": [{"content": {"role": "model", "parts": [
        {"executableCode": {"language": "PYTHON", "code": "print(6 * 7)"}},
        {"codeExecutionResult": {"outcome": "OUTCOME_OK", "output": "42\n"}}]}}]});
    let dumped = json!({"candidates": [{"content": {"role": "model", "parts": [
        {"executable_code": null, "code_execution_result": null,
         "function_call": {"name": "book_boat", "args": {"seats": 2}}}]}}]});
    let (r, d) = (ran.to_string(), dumped.to_string());
    let a = analyze(vec![sp(
        2,
        None,
        (10, 20),
        "quux.model",
        &[("quux.response", &r)],
    )]);
    let got = rows(&a);
    assert_eq!(got.len(), 1, "{got:?}");
    assert_eq!(got[0].0, "code_execution");
    assert_eq!(
        got[0].1,
        json!({"language": "PYTHON", "code": "print(6 * 7)"})
    );
    // The result is what the code printed, its `output`.
    assert_eq!(got[0].2, json!("42\n"));
    let a = analyze(vec![sp(
        2,
        None,
        (10, 20),
        "quux.model",
        &[("quux.response", &d)],
    )]);
    assert!(
        a.calls.iter().all(|c| c.from != Some(FROM_PROVIDER)),
        "{:?}",
        a.calls
    );
}

#[test]
fn a_call_part_named_after_a_hosted_item_is_the_provider_s() {
    // A converter that writes a hosted item as a plain call part named
    // after its type, with no answer (a search returns none).
    let output = json!([{"role": "assistant", "parts": [
        {"type": "tool_call", "id": "hs_1", "name": "web_search_call", "arguments": {"type": "search", "query": "ferries"}},
        {"type": "tool_call", "id": "c_2", "name": "book_boat", "arguments": {"seats": 2}}]}]);
    let o = output.to_string();
    let a = analyze(vec![sp(
        2,
        None,
        (10, 20),
        "chat",
        &[("gen_ai.output.messages", &o)],
    )]);
    let got: Vec<_> = a
        .calls
        .iter()
        .filter(|c| c.from == Some(FROM_PROVIDER))
        .collect();
    assert_eq!(got.len(), 1, "{:?}", a.calls);
    assert_eq!(got[0].name, "web_search");
    assert_eq!(
        got[0].args.value(),
        Some(&json!({"type": "search", "query": "ferries"}))
    );
    assert!(
        a.warnings.iter().all(|w| !w.contains("web_search")),
        "{:?}",
        a.warnings
    );
}

#[test]
fn a_request_is_read_only_after_another_span_ended() {
    let spans = [(1, (0, 50)), (2, (10, 20)), (3, (30, 40)), (4, (5, 8))];
    let t = Trace::new(
        TraceId([6; 16]),
        spans
            .iter()
            .map(|(id, when)| sp(*id, None, *when, "s", &[]))
            .collect(),
        0,
    );
    let ended = super::Ended::of(&t);
    let at = |id: u8| t.spans.iter().position(|s| s.span_id.0[0] == id);
    let before = |id: u8, when: u64| at(id).is_some_and(|i| ended.before(i, when));
    // Span 4 ended first (8): a span starting at 8 sees it, span 4 itself
    // only the next end (20).
    assert!(before(1, 8) && !before(1, 7));
    assert!(!before(4, 19) && before(4, 20));
}

#[test]
fn request_keys_as_before() {
    for (key, request) in [
        ("gen_ai.input.messages", true),
        ("gen_ai.prompt", true),
        ("pydantic_ai.all_messages", true),
        ("all_messages.count", false),
        ("gen_ai.output.messages", false),
        ("mlflow.spanInputs", false),
        ("", false),
    ] {
        assert_eq!(super::is_request_key(key), request, "{key}");
    }
}

#[test]
fn code_that_failed_is_a_failed_call_with_what_it_printed() {
    let run = |outcome: &str, output: Value| {
        let doc = json!({"candidates": [{"content": {"role": "model", "parts": [
            {"executableCode": {"language": "PYTHON", "code": "1 / 0"}},
            {"codeExecutionResult": {"outcome": outcome, "output": output}}]}}]});
        let d = doc.to_string();
        let a = analyze(vec![sp(
            2,
            None,
            (10, 20),
            "quux.model",
            &[("quux.response", &d)],
        )]);
        let c = a.calls.into_iter().next().expect("one call");
        (c.status, c.error_message, c.result.map(|r| r.to_value()))
    };
    let trace = json!("ZeroDivisionError: division by zero");
    let (status, message, result) = run("OUTCOME_FAILED", trace.clone());
    assert_eq!(status, CallStatus::Error);
    assert_eq!(message.as_deref(), Some("OUTCOME_FAILED"));
    assert_eq!(result, Some(trace));
    // A Python enum's text; a deadline with nothing printed.
    let (status, _, result) = run("Outcome.OUTCOME_DEADLINE_EXCEEDED", Value::Null);
    assert_eq!((status, result), (CallStatus::Error, None));
    // Not a failure: OK, and an outcome no one declared.
    for outcome in ["OUTCOME_OK", "OUTCOME_UNSPECIFIED"] {
        let (status, message, result) = run(outcome, json!("ok"));
        assert_eq!(
            (status, message, result),
            (CallStatus::Ok, None, Some(json!("ok")))
        );
    }
}

#[test]
fn a_code_result_with_no_output_is_kept_whole() {
    // Not Gemini's shape: no field of it is the output.
    let doc = json!({"candidates": [{"content": {"role": "model", "parts": [
        {"executableCode": {"language": "PYTHON", "code": "x"}},
        {"codeExecutionResult": {"outcome": "OUTCOME_OK", "stdout": "1"}}]}}]});
    let d = doc.to_string();
    let a = analyze(vec![sp(
        2,
        None,
        (10, 20),
        "quux.model",
        &[("quux.response", &d)],
    )]);
    let got = rows(&a);
    assert_eq!(got[0].2, json!({"outcome": "OUTCOME_OK", "stdout": "1"}));
}

#[test]
fn code_in_the_last_model_turn_before_function_responses_is_read() {
    // A writer that leaves the code parts out of the model's output (a
    // call list of its own) keeps them in the next request's Gemini
    // contents, where the user's `functionResponse` parts (no `type`)
    // answer the turn.
    let output = json!([{"role": "model", "content": "", "tool_calls": [
        {"name": "fetch_tide", "arguments": "{\"port\": \"Brest\"}"}]}]);
    let turn = json!({"role": "model", "parts": [
        {"executableCode": {"language": "PYTHON", "code": "print(1 + 2)"}},
        {"codeExecutionResult": {"outcome": "OUTCOME_OK", "output": "3\n"}},
        {"functionCall": {"name": "fetch_tide", "args": {"port": "Brest"}}}]});
    let answered = json!({"role": "user", "parts": [
        {"functionResponse": {"name": "fetch_tide", "response": {"high": "06:12"}}}]});
    let asked = json!({"role": "user", "parts": [{"text": "tides?"}]});
    let first = json!([asked]).to_string();
    let read = |request: Value| {
        let (o, r) = (output.to_string(), request.to_string());
        let asking = [
            ("gen_ai.input.messages", first.as_str()),
            ("gen_ai.output.messages", o.as_str()),
        ];
        analyze(vec![
            sp(1, None, (0, 100), "quux.turn", &[]),
            sp(2, Some(1), (10, 20), "chat", &asking),
            sp(
                3,
                Some(1),
                (30, 40),
                "chat",
                &[("gen_ai.input.messages", &r)],
            ),
        ])
    };
    let a = read(json!([asked, turn, answered]));
    let code: Vec<_> = (rows(&a).into_iter())
        .filter(|r| r.3 == Some(FROM_PROVIDER))
        .collect();
    assert_eq!(code.len(), 1, "{:?}", a.calls);
    assert_eq!(code[0].0, "code_execution");
    assert_eq!(code[0].2, json!("3\n"));
    // A new question after the answers: that turn is no longer the last.
    let a = read(json!([asked, turn, answered, asked]));
    assert!(
        a.calls.iter().all(|c| c.from != Some(FROM_PROVIDER)),
        "{:?}",
        a.calls
    );
}
