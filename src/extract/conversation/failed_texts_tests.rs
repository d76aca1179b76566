//! A failed call told only in the next request's text (`failed_texts`):
//! the texts read, an ask answered so in its trace and across traces, and
//! the near misses that stay unread.

use serde_json::{json, Value};

use super::{in_text, Failure};
use crate::assemble::{Trace, TraceId};
use crate::extract::test_support::{asking_trace, chat_trace, final_text_trace, read_in_order};
use crate::extract::tests::sp;
use crate::extract::{Analysis, CallStatus, Extractor, ToolCall};

/// The loop's text for `hoist_sail` raising with arguments `args` (as
/// Python's `str(dict)` writes them).
fn told(name: &str, args: &str) -> String {
    format!(
        "Error:\nError executing tool '{name}' with arguments {args}: ValueError: mast 2 is cracked: no sail\nPlease try again or use another tool\nNow let's retry: take care.\n"
    )
}

#[test]
fn the_declared_shapes_read_the_tool_arguments_type_and_message() {
    let text = format!(
        "Observation:\n{{'knots': 12}}\n{}",
        told("hoist_sail", "{'mast': 2, 'reef': True, 'cloth': None}")
    );
    let f = in_text(&text);
    assert_eq!(
        f,
        [Failure {
            name: "hoist_sail".into(),
            args: json!({"mast": 2, "reef": true, "cloth": null}),
            error_type: Some("ValueError".into()),
            message: "mast 2 is cracked: no sail".into(),
            text: None,
        }]
    );
    // JSON arguments; a managed agent's failure names no type; the text
    // may end right after the error.
    let agent = "Error executing request to team member 'navigator' with arguments {\"task\": \"chart: north\"}: lost the chart";
    let f = in_text(agent);
    assert_eq!(f.len(), 1);
    assert_eq!(
        (f[0].name.as_str(), &f[0].args),
        ("navigator", &json!({"task": "chart: north"}))
    );
    assert_eq!(
        (f[0].error_type.as_deref(), f[0].message.as_str()),
        (None, "lost the chart")
    );
    // smolagents 1.12's words, the name unquoted.
    let older = "Error when executing tool hoist_sail with arguments {'mast': 2}: KeyError: 'mast'\nYou should only use this tool with a correct input.\n";
    let f = in_text(older);
    assert_eq!(f.len(), 1);
    assert_eq!(
        (f[0].name.as_str(), &f[0].args),
        ("hoist_sail", &json!({"mast": 2}))
    );
    assert_eq!(
        (f[0].error_type.as_deref(), f[0].message.as_str()),
        (Some("KeyError"), "'mast'")
    );
    // No value before the words after the arguments, or no name: nothing.
    assert!(
        in_text("Error executing tool 'hoist_sail' with arguments {'mast': 2: ValueError: x")
            .is_empty()
    );
    assert!(in_text("Error executing tool '' with arguments {}: ValueError: x").is_empty());
    // Two failures in one text, in order; a message that names no type
    // keeps its whole text.
    let two = format!(
        "{}{}",
        told("a", "{'n': 1}"),
        "Error executing tool 'b' with arguments {'n': 2}: not a type name: x"
    );
    let f = in_text(&two);
    assert_eq!(
        f.iter().map(|f| f.name.as_str()).collect::<Vec<_>>(),
        ["a", "b"]
    );
    assert_eq!(
        (f[1].error_type.as_deref(), f[1].message.as_str()),
        (None, "not a type name: x")
    );
}

/// A request's messages as `gen_ai.input.messages` text: the user's task,
/// then `user`, a user message whose text is given.
fn request(user: &str) -> Vec<Value> {
    vec![
        json!({"role": "user", "content": [{"type": "text", "text": "New task:\nsail to the bay"}]}),
        json!({"role": "user", "content": [{"type": "text", "text": user}]}),
    ]
}

fn hoist() -> Trace {
    asking_trace(
        1,
        (0, 10),
        &[("h1", "hoist_sail", json!({"mast": 2, "reef": true}))],
    )
}

fn failed(a: &Analysis) -> Vec<(&str, &Value, Option<&str>, Option<&str>)> {
    a.calls
        .iter()
        .map(|c| {
            assert_eq!(c.status, CallStatus::Error);
            assert!(c.result.is_none());
            (
                c.name.as_str(),
                c.args.value().unwrap_or(&Value::Null),
                c.error_type.as_deref(),
                c.error_message.as_deref(),
            )
        })
        .collect()
}

#[test]
fn an_ask_the_next_trace_tells_failed_is_a_failed_call_there() {
    let next = final_text_trace(
        2,
        (20, 30),
        request(&told("hoist_sail", "{'mast': 2, 'reef': True}")),
    );
    let read = read_in_order(vec![hoist(), next]);
    assert!(read[0].calls.is_empty());
    assert!(read[0].warnings.is_empty(), "{:?}", read[0].warnings);
    assert!(
        read[0].notes.iter().any(|n| n.contains("later")),
        "{:?}",
        read[0].notes
    );
    let args = json!({"mast": 2, "reef": true});
    let want = (
        "hoist_sail",
        &args,
        Some("ValueError"),
        Some("mast 2 is cracked: no sail"),
    );
    assert_eq!(failed(&read[1]), [want]);
    assert_eq!(read[1].calls[0].call_id.as_deref(), Some("h1"));
    assert_eq!(read[1].calls[0].start_time_unix_nano, 10);
}

#[test]
fn a_text_of_another_tool_other_arguments_or_an_earlier_request_is_no_answer() {
    let listed = |a: &Analysis| a.warnings.iter().any(|w| w.contains("listed, not counted"));
    for text in [
        told("lower_sail", "{'mast': 2, 'reef': True}"),
        told("hoist_sail", "{'mast': 3, 'reef': True}"),
    ] {
        let read = read_in_order(vec![hoist(), final_text_trace(2, (20, 30), request(&text))]);
        assert!(read[1].calls.is_empty() && listed(&read[0]), "{text}");
    }
    // A request that started before the model asked.
    let early = final_text_trace(
        2,
        (5, 30),
        request(&told("hoist_sail", "{'mast': 2, 'reef': True}")),
    );
    let read = read_in_order(vec![hoist(), early]);
    assert!(read[1].calls.is_empty() && listed(&read[0]));
    // A text before the request's last model turn is history.
    let mut input = request(&told("hoist_sail", "{'mast': 2, 'reef': True}"));
    input.push(json!({"role": "assistant", "content": "thinking"}));
    let read = read_in_order(vec![hoist(), final_text_trace(2, (20, 30), input)]);
    assert!(read[1].calls.is_empty() && listed(&read[0]));
}

#[test]
fn an_ask_answered_by_id_after_all_is_one_call_with_its_result() {
    let mut input = request(&told("hoist_sail", "{'mast': 2, 'reef': True}"));
    input.push(json!({"role": "tool", "tool_call_id": "h1", "content": "hoisted"}));
    let read = read_in_order(vec![hoist(), final_text_trace(2, (20, 30), input)]);
    assert_eq!(read[1].calls.len(), 1);
    assert_eq!(read[1].calls[0].status, CallStatus::Ok);
    assert_eq!(
        read[1].calls[0].result.as_ref().map(|r| r.to_value()),
        Some(json!("hoisted"))
    );
}

#[test]
fn a_user_quoting_such_text_with_no_ask_before_it_gives_nothing() {
    let quoted = final_text_trace(2, (20, 30), request(&told("hoist_sail", "{'mast': 2}")));
    let read = read_in_order(vec![quoted]);
    assert!(read[0].calls.is_empty());
}

/// One trace of model calls under an agent span: each `(input, output)`
/// a model call's messages, one after the other.
fn one_trace(calls: &[(Vec<Value>, Value)]) -> Trace {
    let mut spans = vec![sp(1, None, (0, 1000), "agent.run", &[])];
    for (k, (input, output)) in calls.iter().enumerate() {
        let at = 10 + 100 * k as u64;
        let (input, output) = (Value::Array(input.clone()).to_string(), output.to_string());
        let attrs = [
            ("gen_ai.operation.name", "chat"),
            ("gen_ai.input.messages", input.as_str()),
            ("gen_ai.output.messages", output.as_str()),
        ];
        spans.push(sp(2 + k as u8, Some(1), (at, at + 50), "acme.chat", &attrs));
    }
    Trace::new(TraceId([9; 16]), spans, 0)
}

fn asks(id: &str, mast: u8) -> Value {
    let args = json!({"mast": mast}).to_string();
    json!([{"role": "assistant", "tool_calls": [{"id": id, "type": "function", "function": {"name": "hoist_sail", "arguments": args}}]}])
}

#[test]
fn in_one_trace_each_new_text_answers_one_ask_and_an_old_one_none() {
    let user = |t: &str| json!({"role": "user", "content": t});
    let task = user("sail");
    let done = json!([{"role": "assistant", "content": "done"}]);
    let once = told("hoist_sail", "{'mast': 2}");
    let twice = format!("{once}{once}");
    // Asked twice with the same arguments, failing twice: two failed calls.
    let trace = one_trace(&[
        (vec![task.clone()], asks("h1", 2)),
        (vec![task.clone(), user(&once)], asks("h2", 2)),
        (vec![task.clone(), user(&twice)], done.clone()),
    ]);
    let a = Extractor::default().analyze(&trace);
    assert_eq!(failed(&a).len(), 2, "{:?}", a.warnings);
    // The second ask told by no new text: listed, not counted.
    let trace = one_trace(&[
        (vec![task.clone()], asks("h1", 2)),
        (vec![task.clone(), user(&once)], asks("h2", 2)),
        (vec![task.clone(), user(&once)], done),
    ]);
    let a = Extractor::default().analyze(&trace);
    assert_eq!(failed(&a).len(), 1);
    assert_eq!(a.calls[0].call_id.as_deref(), Some("h1"));
    assert!(
        a.warnings.iter().any(|w| w.contains("(call id h2)")),
        "{:?}",
        a.warnings
    );
}

#[test]
fn the_next_request_is_the_first_after_the_model_answered_not_another_record_of_its_call() {
    let task = json!({"role": "user", "content": "sail"});
    let told = json!({"role": "user", "content": told("hoist_sail", "{'mast': 2}")});
    let chat = |id: u8, parent: u8, when: (u64, u64), input: Vec<Value>, output: Value| {
        let (input, output) = (Value::Array(input).to_string(), output.to_string());
        let attrs = [
            ("gen_ai.operation.name", "chat"),
            ("gen_ai.input.messages", input.as_str()),
            ("gen_ai.output.messages", output.as_str()),
        ];
        sp(id, Some(parent), when, "acme.chat", &attrs)
    };
    let done = json!([{"role": "assistant", "content": "done"}]);
    let spans = vec![
        sp(1, None, (0, 1000), "agent.run", &[]),
        chat(2, 1, (10, 60), vec![task.clone()], asks("h1", 2)),
        // The same model call, recorded again by a child span.
        chat(3, 2, (12, 58), vec![task.clone()], asks("h1", 2)),
        chat(4, 1, (110, 160), vec![task, told], done),
    ];
    let a = Extractor::default().analyze(&Trace::new(TraceId([8; 16]), spans, 0));
    assert_eq!(failed(&a).len(), 1, "{:?}", a.warnings);
    assert_eq!(a.calls[0].end_time_unix_nano, 110);
}

#[test]
fn a_text_of_many_failures_without_end_words_holds_each_message_once() {
    // Each failure ends at the next one's opening: no message holds the
    // rest of the text (a text of k failures would hold k x n/2 bytes).
    let one = "Error when executing tool tack with arguments {}: TurnError: luffed ";
    let f = in_text(&one.repeat(500));
    assert_eq!(f.len(), 500);
    assert!(f.iter().all(|f| f.message == "luffed"), "{:?}", f[0]);
    // A message longer than the bound is cut (at a character's edge).
    let long = format!(
        "Error when executing tool tack with arguments {{}}: TurnError: {}",
        "é".repeat(3000)
    );
    let f = in_text(&long);
    assert_eq!(f.len(), 1);
    assert!(f[0].message.len() <= super::MAX_MESSAGE && f[0].message.len() > 4000);
    assert!(f[0].message.chars().all(|c| c == 'é'));
}

#[test]
fn arguments_of_any_length_are_read_once_whatever_they_hold() {
    // Many `": "` inside the arguments (each once a try at their end).
    let note = "tide: low ".repeat(90);
    let text = told("moor", &format!("{{'pier': 4, 'note': '{note}'}}"));
    let f = in_text(&text);
    assert_eq!(f.len(), 1, "{text}");
    assert_eq!(f[0].args, json!({"pier": 4, "note": note}));
    assert_eq!(f[0].error_type.as_deref(), Some("ValueError"));
    // JSON arguments with the separator inside a string.
    let text = "Error executing tool 'moor' with arguments {\"note\": \"a: b: c\"}: KeyError: pier";
    let f = in_text(text);
    assert_eq!(f[0].args, json!({"note": "a: b: c"}));
    assert_eq!(f[0].message, "pier");
    // A value the separator does not follow, or no value: nothing.
    assert!(in_text("Error executing tool 'moor' with arguments {'pier': 4} x: E: m").is_empty());
    assert!(in_text("Error executing tool 'moor' with arguments (4): E: m").is_empty());
}

/// [`told`] with another error.
fn told_as(name: &str, args: &str, error: &str) -> String {
    format!("Error:\nError executing tool '{name}' with arguments {args}: {error}\nNow let's retry: take care.\n")
}

/// The retry tests' outcome: the first try (`h1`) failed with
/// `ValueError`, the retry (`h2`) with its own `TimeoutError`.
fn assert_each_try_has_its_own_error(calls: &[ToolCall]) {
    let errors: Vec<_> = calls
        .iter()
        .map(|c| (c.call_id.as_deref(), c.error_type.as_deref()))
        .collect();
    assert_eq!(
        errors,
        [
            (Some("h1"), Some("ValueError")),
            (Some("h2"), Some("TimeoutError"))
        ]
    );
}

#[test]
fn a_retry_with_the_same_arguments_gets_its_own_error_in_one_trace() {
    let user = |t: &str| json!({"role": "user", "content": t});
    let task = user("sail");
    let first = told_as("hoist_sail", "{'mast': 2}", "ValueError: cracked");
    let both = format!(
        "{first}{}",
        told_as("hoist_sail", "{'mast': 2}", "TimeoutError: winch stuck")
    );
    let trace = one_trace(&[
        (vec![task.clone()], asks("h1", 2)),
        (vec![task.clone(), user(&first)], asks("h2", 2)),
        (
            vec![task, user(&both)],
            json!([{"role": "assistant", "content": "done"}]),
        ),
    ]);
    let a = Extractor::default().analyze(&trace);
    assert_each_try_has_its_own_error(&a.calls);
}

#[test]
fn a_retry_with_the_same_arguments_gets_its_own_error_across_traces() {
    let user = |t: &str| json!({"role": "user", "content": t});
    let first = told_as("hoist_sail", "{'mast': 2}", "ValueError: cracked");
    let both = format!(
        "{first}{}",
        told_as("hoist_sail", "{'mast': 2}", "TimeoutError: winch stuck")
    );
    let input = |t: &str| Value::Array(vec![user("sail"), user(t)]).to_string();
    let retry = chat_trace(
        2,
        (20, 30),
        Some(&input(&first)),
        Some(&asks("h2", 2).to_string()),
    );
    let done = json!([{"role": "assistant", "content": "done"}]).to_string();
    let last = chat_trace(3, (40, 50), Some(&input(&both)), Some(&done));
    let first_ask = chat_trace(1, (0, 10), None, Some(&asks("h1", 2).to_string()));
    let read = read_in_order(vec![first_ask, retry, last]);
    let calls: Vec<_> = read.iter().flat_map(|a| a.calls.clone()).collect();
    assert_each_try_has_its_own_error(&calls);
}

#[test]
fn a_failure_told_across_traces_answers_the_latest_ask_before_it() {
    // h0 was never answered (an aborted step); h1 asked the same later.
    let first = chat_trace(1, (0, 10), None, Some(&asks("h0", 2).to_string()));
    let again = chat_trace(2, (20, 30), None, Some(&asks("h1", 2).to_string()));
    let next = final_text_trace(3, (40, 50), request(&told("hoist_sail", "{'mast': 2}")));
    let read = read_in_order(vec![first, again, next]);
    let calls: Vec<_> = read.iter().flat_map(|a| &a.calls).collect();
    assert_eq!(calls.len(), 1);
    assert_eq!(calls[0].call_id.as_deref(), Some("h1"));
    assert_eq!(calls[0].start_time_unix_nano, 30);
}

#[test]
fn arguments_equal_as_values_are_the_same_call() {
    // The model wrote 2.0, the loop's text 2.
    let ask = chat_trace(
        1,
        (0, 10),
        None,
        Some(&json!([{"role": "assistant", "tool_calls": [{"id": "h1", "type": "function", "function": {"name": "hoist_sail", "arguments": "{\"mast\": 2.0}"}}]}]).to_string()),
    );
    let next = final_text_trace(2, (20, 30), request(&told("hoist_sail", "{'mast': 2}")));
    let read = read_in_order(vec![ask, next]);
    assert_eq!(read[1].calls.len(), 1, "{:?}", read[0].warnings);
    assert_eq!(read[1].calls[0].call_id.as_deref(), Some("h1"));
}
