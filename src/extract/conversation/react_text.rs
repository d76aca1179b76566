//! Calls written only in the model's text, in the ReAct text protocol
//! (docs/conventions.md, "The conversation witness", "ReAct calls in the
//! model's text").
//!
//! A loop without native function calling (LangChain's classic ReAct
//! agent, smolagents' text agents, hand loops) offers the model no tools:
//! the model answers `Thought: ...`, then a line `Action: <tool>` and a
//! line `Action Input: <arguments>`; the loop runs the tool and sends the
//! result back as a user (or tool) message opening with `Observation:`.
//! Such an assistant text is read as the model's turn asking for one call
//! without an id (arguments: JSON, else a Python literal, else the text),
//! and the `Observation:` message after it as its result (`text_results`),
//! paired by order as any result without an id is. Strict: both lines, in
//! that order, one `Action:` line only, in one model message's text; a
//! text with a final answer (`Final Answer:`) asks for no call. The words
//! are data (`vocabulary.toml`: `react_action`,
//! `react_action_input`, `react_final_answer`).
//!
//! The model's outputs are read so only in a trace where no tool span and
//! no native call gave anything (`witness`): where tool spans exist they
//! record the calls themselves.

use std::borrow::Cow;
use std::sync::OnceLock;

use serde_json::{Map, Value};

use super::look::Look;
use super::{
    bodies, flat_events, gather_flat, message_text, AskedAt, FLAT_OUT, MODEL_ROLES, OUTPUT_KEYS,
};
use crate::assemble::{SpanRecord, Trace};
use crate::extract::open::{run_key, OpenAsk};
use crate::extract::requested::Asked;
use crate::extract::rules::builtin_list;
use crate::extract::sides::Side;
use crate::extract::{content_events, genai_events, Analysis, ToolCall};

/// The form the calls are read in.
pub(super) const FORM: &str = "react-text";

/// The declared words, looked up once.
struct Words {
    action: &'static [String],
    input: &'static [String],
    final_answer: &'static [String],
    observation: &'static [String],
}

fn words() -> &'static Words {
    static WORDS: OnceLock<Words> = OnceLock::new();
    WORDS.get_or_init(|| Words {
        action: builtin_list("react_action"),
        input: builtin_list("react_action_input"),
        final_answer: builtin_list("react_final_answer"),
        observation: builtin_list("react_observation"),
    })
}

/// The words opening a ReAct step's tool line and its input line
/// (`react_action`, `react_action_input`), for readers of the same steps
/// on tool spans (`extract::react_input`).
pub(crate) fn step_words() -> (&'static [String], &'static [String]) {
    (words().action, words().input)
}

/// The rest of `line` after one of `words`, when it opens with one.
fn after<'l>(line: &'l str, words: &[String]) -> Option<&'l str> {
    words.iter().find_map(|w| line.strip_prefix(w.as_str()))
}

/// Whether `text` may hold a ReAct call (a cheap look before reading it).
fn mentions(text: &str) -> bool {
    words().input.iter().any(|w| text.contains(w.as_str()))
}

/// The call a model's text asks for in the ReAct text protocol: the tool's
/// name and its arguments; `None` when the text is no such ask.
pub(crate) fn call_of(text: &str) -> Option<(String, Value)> {
    if !mentions(text) {
        return None;
    }
    let w = words();
    let lines: Vec<&str> = text.lines().map(str::trim).collect();
    if lines.iter().any(|l| after(l, w.final_answer).is_some()) {
        return None;
    }
    let mut actions = lines
        .iter()
        .enumerate()
        .filter_map(|(i, l)| after(l, w.action).map(|name| (i, name.trim())));
    let (at, name) = actions.next()?;
    if actions.next().is_some() || name.is_empty() {
        return None;
    }
    // The input line is the next line that is not blank.
    let mut rest = lines[at + 1..].iter().skip_while(|l| l.is_empty());
    let first = after(rest.next()?, w.input)?;
    // It runs to the end of the text, or to an observation the model wrote.
    let mut input = vec![first];
    input.extend(rest.take_while(|l| after(l, w.observation).is_none()));
    let input = input.join("\n");
    Some((name.to_string(), arguments(input.trim())))
}

/// An action's input as the tool's arguments: a JSON object or list, a
/// Python literal, a JSON string's text, else the text.
fn arguments(text: &str) -> Value {
    match super::text_results::value_of(text) {
        Value::String(t) => match serde_json::from_str::<Value>(&t) {
            Ok(Value::String(inner)) => Value::String(inner),
            _ => Value::String(t),
        },
        other => other,
    }
}

/// The text of a model message: its `content` string, or its text parts.
fn text_of(o: &Map<String, Value>) -> Option<Cow<'_, str>> {
    match o.get("content") {
        Some(Value::String(t)) => Some(Cow::Borrowed(t)),
        _ => match super::order::text_of_parts(o)? {
            Value::String(t) => Some(Cow::Owned(t)),
            _ => None,
        },
    }
}

/// The call model message `o` asks for in its text.
fn message_call(o: &Map<String, Value>) -> Option<(String, Value)> {
    let role = o.get("role").and_then(Value::as_str)?;
    if !MODEL_ROLES.contains(&role) || o.contains_key("tool_calls") {
        return None;
    }
    call_of(&text_of(o)?)
}

/// The model message `(name, args)` call `c` stands for: an assistant turn
/// with that one call, without an id.
fn as_turn(role: &Value, (name, args): (String, Value)) -> Value {
    let function = Map::from_iter([
        ("name".to_string(), Value::String(name)),
        ("arguments".to_string(), args),
    ]);
    let call = Map::from_iter([("function".to_string(), Value::Object(function))]);
    Value::Object(Map::from_iter([
        ("role".to_string(), role.clone()),
        (
            "tool_calls".to_string(),
            Value::Array(vec![Value::Object(call)]),
        ),
    ]))
}

/// A request's `messages` with each model message that asks for a call in
/// its text read as the turn it stands for; borrowed when there is none.
pub(super) fn converted(messages: Cow<'_, [Value]>) -> Cow<'_, [Value]> {
    let asks = |m: &Value| m.as_object().and_then(message_call);
    if !messages.iter().any(|m| asks(m).is_some()) {
        return messages;
    }
    let out = messages
        .iter()
        .map(|m| match (asks(m), m.get("role")) {
            (Some(call), Some(role)) => as_turn(role, call),
            _ => m.clone(),
        })
        .collect();
    Cow::Owned(out)
}

/// The first call a model message in `v` asks for in its text (a list of
/// messages, a response body's choices, a choice around its message).
fn first_call(v: &Value, depth: usize) -> Option<(String, Value)> {
    if depth > super::MAX_DEPTH {
        return None;
    }
    match v {
        Value::Array(items) => items.iter().find_map(|x| first_call(x, depth + 1)),
        Value::Object(o) => message_call(o).or_else(|| {
            o.values()
                .filter(|x| x.is_array() || x.is_object())
                .find_map(|x| first_call(x, depth + 1))
        }),
        _ => None,
    }
}

/// The call span `s`'s output asks for in the model's text, read in the
/// output's forms the span records (the first that has it; `look`: the
/// span's [`Look`]).
fn asked_of(s: &SpanRecord, look: Look) -> Option<(String, Value)> {
    let there = |bits: u8, j: usize| bits & (1 << j) != 0;
    for (j, flat) in FLAT_OUT.iter().enumerate() {
        if there(look.flat_out, j) {
            if let Some(c) = first_call(&gather_flat(s, flat), 0) {
                return Some(c);
            }
        }
        if look.flat_out_events {
            let messages = flat_events::messages(s, flat);
            if let Some(c) = messages.and_then(|m| first_call(&m, 0)) {
                return Some(c);
            }
        }
    }
    for (j, key) in OUTPUT_KEYS.iter().enumerate() {
        let Some(text) = message_text(s, key).filter(|t| there(look.named_out, j) && mentions(t))
        else {
            continue;
        };
        let v = serde_json::from_str::<Value>(text).ok();
        if let Some(c) = v.and_then(|v| first_call(&v, 0)) {
            return Some(c);
        }
    }
    // A span that says it is a model call: its provider bodies.
    if look.model_call {
        let bodies = bodies::bodies_of_model_call(s, Side::Output).filter(|t| mentions(t));
        let parsed = bodies.filter_map(|t| serde_json::from_str::<Value>(t).ok());
        if let Some(c) = parsed.into_iter().find_map(|v| first_call(&v, 0)) {
            return Some(c);
        }
    }
    if s.span.events.is_empty() {
        return None;
    }
    let events = genai_events::output(s).into_iter();
    events
        .chain(content_events::output(s))
        .find_map(|v| first_call(&v, 0))
}

/// The calls the model outputs of `trace` that asked for no native call
/// (`quiet`: those spans and their [`Look`]) ask for in their text, in
/// span order; the same ask recorded by a span and its parent once.
pub(super) fn asked(trace: &Trace, quiet: &[(usize, Look)]) -> Vec<AskedAt> {
    let mut out: Vec<AskedAt> = Vec::new();
    for &(i, look) in quiet {
        let s = &trace.spans[i];
        let Some((name, args)) = asked_of(s, look) else {
            continue;
        };
        let repeated = out.iter().any(|o| {
            let other = &trace.spans[o.span];
            o.asked.name == name
                && o.asked.args == args
                && (Some(other.span_id) == s.parent || other.parent == Some(s.span_id))
        });
        if !repeated {
            let asked = Asked {
                id: None,
                name,
                args,
            };
            out.push(AskedAt {
                span: i,
                asked,
                form: FORM,
            });
        }
    }
    out
}

/// The spans whose model output asked for no native call, with their
/// [`Look`] (gathered by `asked_in`, which looks at every span once).
pub(super) type Quiet = Vec<(usize, Look)>;

/// Notes span `i` (`s`, its `look`) in `quiet` when its output asked for
/// none of `calls` natively.
pub(super) fn note(quiet: &mut Quiet, (i, s, look): (usize, &SpanRecord, Look), calls: &[Asked]) {
    if calls.is_empty() && look.may_output(s) {
        quiet.push((i, look));
    }
}

/// `native`, the calls the model outputs asked for natively; when there
/// is none, the calls they ask for in their text ([`asked`]) where no tool
/// span gave a call, else nothing after the cross-check ([`check`]).
pub(super) fn unless_native(
    native: Vec<AskedAt>,
    trace: &Trace,
    quiet: &[(usize, Look)],
    out: &mut Analysis,
) -> Vec<AskedAt> {
    if !native.is_empty() || quiet.is_empty() {
        return native;
    }
    if out.calls.is_empty() {
        return asked(trace, quiet);
    }
    check(trace, quiet, out);
    Vec::new()
}

/// The cross-check where tool spans gave the calls and no model output
/// asked for one natively: each ask written in the model's text that no
/// tool span's call of that tool shows (each call showing one ask) is a
/// warning of the trace, and left open: a later trace's tool span may
/// show it (`carry::later`). Nothing is counted from the text there.
fn check(trace: &Trace, quiet: &[(usize, Look)], out: &mut Analysis) {
    let mut shown = vec![false; out.calls.len()];
    for at in asked(trace, quiet) {
        let name = at.asked.name.as_str();
        let same = |c: &ToolCall| c.name == name || c.span_name.as_deref() == Some(name);
        match (0..shown.len()).find(|&k| !shown[k] && same(&out.calls[k])) {
            Some(k) => shown[k] = true,
            None => {
                let s = &trace.spans[at.span];
                let warning = super::unshown_warning(name, s.span_id);
                out.warnings.push(warning);
                let open = out.open.get_or_insert_with(Default::default);
                open.unshown.push(OpenAsk {
                    asked: at.asked,
                    form: FORM,
                    trace_id: trace.id,
                    span_id: s.span_id,
                    end_time_unix_nano: s.span.end_time_unix_nano,
                    run: run_key(s),
                });
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::{json, Value};

    use super::call_of;
    use crate::assemble::{Trace, TraceId};
    use crate::extract::test_support::{acme_model, name_args_results, read_in_order};
    use crate::extract::Extractor;

    /// A made-up vendor's model call `id` (a trace of its own when read
    /// alone): the request's `history` after the user's question, and the
    /// model's answer `text`.
    fn turn(id: u8, history: &[Value], text: &str) -> Trace {
        let mut messages = vec![json!({"role": "user", "content": "Moor at pier B"})];
        messages.extend(history.iter().cloned());
        let input = json!({"model": "m", "messages": messages});
        let output = json!({"choices": [{"message": {"role": "assistant", "content": text}}]});
        let when = (u64::from(id) * 100, u64::from(id) * 100 + 50);
        let span = acme_model(id, when, "harbour.chat", &input, &output);
        Trace::new(TraceId([id; 16]), vec![span], 0)
    }

    const ASK: &str = "Thought: moor first.\nAction: moor_boat\nAction Input: {\"pier\": \"B\"}";
    const DONE: &str = "Thought: done.\nFinal Answer: moored at B";

    fn ask_and_observe() -> [Value; 2] {
        [
            json!({"role": "assistant", "content": ASK}),
            json!({"role": "user", "content": "Observation: {\"berth\": 4}"}),
        ]
    }

    #[test]
    fn a_text_ask_is_answered_by_the_observation_in_the_next_trace() {
        let traces = vec![turn(1, &[], ASK), turn(2, &ask_and_observe(), DONE)];
        let read = read_in_order(traces);
        let calls: Vec<_> = read.iter().flat_map(name_args_results).collect();
        let want = (
            "moor_boat",
            Some(json!({"pier": "B"})),
            Some(json!({"berth": 4})),
        );
        assert_eq!(calls, [want]);
    }

    #[test]
    fn a_text_ask_is_answered_in_its_own_trace() {
        let [a, b] = [turn(1, &[], ASK), turn(2, &ask_and_observe(), DONE)];
        let spans = a.spans.iter().chain(&b.spans).cloned().collect();
        let read = Extractor::default().analyze(&Trace::new(TraceId([9; 16]), spans, 0));
        assert_eq!(name_args_results(&read).len(), 1);
        // Never answered: listed, not counted.
        let read = Extractor::default().analyze(&turn(1, &[], ASK));
        assert!(read.calls.is_empty());
        assert!(read.warnings.iter().any(|w| w.contains("`moor_boat`")));
    }

    fn call(text: &str) -> Option<(String, serde_json::Value)> {
        call_of(text)
    }

    #[test]
    fn an_action_and_its_input_are_a_call() {
        let t = "Thought: the quay first.\nAction: berth_of\nAction Input: {\"quay\": \"North\"}";
        assert_eq!(call(t), Some(("berth_of".into(), json!({"quay": "North"}))));
        // A Python literal, a JSON string, plain text.
        let t = "Action: berth_of\nAction Input: {'quay': 'North', 'deep': True}";
        assert_eq!(call(t).unwrap().1, json!({"quay": "North", "deep": true}));
        let t = "Action: tide\n\nAction Input: \"Brest\"";
        assert_eq!(call(t), Some(("tide".into(), json!("Brest"))));
        let t = "Action: tide\nAction Input: Brest harbour\nObservation: made up";
        assert_eq!(call(t), Some(("tide".into(), json!("Brest harbour"))));
    }

    #[test]
    fn anything_else_is_no_call() {
        for t in [
            // The input before the action, or no input line.
            "Action Input: {\"quay\": \"North\"}\nAction: berth_of",
            "Thought: done.\nAction: berth_of",
            // An input line not right after the action.
            "Action: berth_of\nThought: hm.\nAction Input: {}",
            // A final answer is no call, nor are two actions.
            "Action: berth_of\nAction Input: {}\nFinal Answer: berth 12",
            "Action: a\nAction Input: {}\nAction: b\nAction Input: {}",
            "Action: \nAction Input: {}",
            "The words Action Input: inside prose.",
        ] {
            assert_eq!(call(t), None, "{t}");
        }
    }
}
