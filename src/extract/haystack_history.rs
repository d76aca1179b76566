//! Haystack's `Agent` runs its tools inside its own component: with no
//! tool span (OpenInference's Haystack instrumentation types the
//! component `CHAIN`), the calls are only in the chat history the span's
//! `output.value` lists, each message the `repr()` of Haystack's
//! `ChatMessage` dataclass:
//!
//! `ChatMessage(_role=<ChatRole.TOOL: 'tool'>, _content=[ToolCallResult(
//! result='...', origin=ToolCall(tool_name='find_hotel', arguments={...},
//! id='call_1', extra=None), error=False)], ...)`
//!
//! A message is read only when it parses in whole as such a repr
//! (`literal::parse_repr`, nothing evaluated); each `ToolCallResult` in it
//! is a call answered: its origin's name, arguments and id, its result
//! (JSON or a Python literal decoded, else the text) and `error`. A
//! `ToolCall` never answered is no call. The history repeats in every
//! enclosing span's output (`Pipeline.run` around `Agent.run`): one call
//! per call id, on the innermost span holding it (docs/conventions.md,
//! "Haystack's chat history"). When the calls come from the model's
//! messages instead (OpenInference's generator spans), whose tool messages
//! keep no content, the history gives their results.

use std::collections::HashSet;

use memchr::memmem;
use serde_json::Value;

use super::args::CallArgs;
use super::conversation::FROM_CONVERSATION;
use super::literal::{self, CLASS_KEY};
use super::merge::same_args;
use super::source::parse_json_or_literal;
use super::{Analysis, CallResult, CallStatus, ToolCall};
use crate::assemble::{SpanRecord, Trace};

/// The attribute holding a component's output (OpenInference).
const OUTPUT_KEY: &str = "output.value";

/// The attribute holding a component's input (OpenInference).
const INPUT_KEY: &str = "input.value";

/// The convention calls read here report.
const CONVENTION: &str = "haystack-messages";

/// How deep in a span's output JSON the message lists are looked for
/// (`{"agent": {"messages": [...]}}` is two).
const MAX_NESTING: usize = 4;

/// Adds to `out` the calls the chat histories of `trace` hold, when `out`
/// has none (a trace with tool spans or conversation calls reads those);
/// when its calls all come from the conversation and some lack a result
/// (the model's flattened messages keep a tool message's role, not its
/// content), the history gives those results.
pub(crate) fn read(trace: &Trace, out: &mut Analysis) {
    let from_talk = |c: &ToolCall| c.from == Some(FROM_CONVERSATION);
    if !out.calls.is_empty() {
        let lacking = |c: &ToolCall| c.result.is_none() && c.status == CallStatus::Ok;
        if out.calls.iter().all(from_talk) && out.calls.iter().any(lacking) {
            fill(trace, out);
        }
        return;
    }
    let calls = history(trace);
    if calls.is_empty() {
        return;
    }
    out.notes.push(format!(
        "{} call(s) read from Haystack's chat history (`ChatMessage` reprs in `{OUTPUT_KEY}`): no tool span",
        calls.len()
    ));
    out.calls
        .extend(calls.into_iter().map(|(s, _, a)| a.call(s)));
}

/// The answered calls of the chat histories of `trace`, one per call id,
/// each on the innermost span holding it, in the order of the history.
fn history(trace: &Trace) -> Vec<(&SpanRecord, usize, Answered)> {
    let finder = memmem::Finder::new(b"ToolCallResult(");
    let mut seen: HashSet<String> = HashSet::new();
    let mut calls = Vec::new();
    // Innermost first: a span that starts later inside another holds the
    // same history.
    for s in trace.spans.iter().rev() {
        let Some(found) = answered_in(s, OUTPUT_KEY, &finder) else {
            continue;
        };
        // A call the span was given as history (a second run's input
        // holds the first run's answered calls) is no call of this run,
        // nor of any span around it.
        for given in answered_in(s, INPUT_KEY, &finder).into_iter().flatten() {
            seen.insert(given.key());
        }
        for (n, answered) in found.into_iter().enumerate() {
            let key = answered.key();
            if seen.insert(key) {
                calls.push((s, n, answered));
            }
        }
    }
    // Span by span in trace order.
    calls.sort_by_key(|(s, n, _)| (s.span.start_time_unix_nano, *n));
    calls
}

/// The answered calls of the chat history span `s` holds under `key`, if
/// it holds one.
fn answered_in(s: &SpanRecord, key: &str, finder: &memmem::Finder) -> Option<Vec<Answered>> {
    let text = s.attr_str(key)?;
    finder.find(text.as_bytes())?;
    let value = serde_json::from_str::<Value>(text).ok()?;
    let mut found = Vec::new();
    messages(&value, 0, &mut found);
    Some(found)
}

/// Gives the conversation's calls without a result the result of the
/// history's answered call of the same name and arguments (each used
/// once, in order); an answer with `error=True` makes the call failed.
fn fill(trace: &Trace, out: &mut Analysis) {
    let mut answers: Vec<Option<Answered>> = history(trace)
        .into_iter()
        .map(|(_, _, a)| Some(a))
        .collect();
    let mut filled = 0;
    let lacking = |c: &&mut ToolCall| c.result.is_none() && c.status == CallStatus::Ok;
    for c in out.calls.iter_mut().filter(lacking) {
        let args = c.args.parsed();
        let same = |a: &Option<Answered>| {
            a.as_ref().is_some_and(|a| {
                a.name == c.name && args.as_deref().is_some_and(|v| same_args(v, &a.args))
            })
        };
        let Some(a) = answers.iter_mut().find(|a| same(a)).and_then(Option::take) else {
            continue;
        };
        c.result = Some(CallResult::Value(a.result));
        if a.error {
            c.status = CallStatus::Error;
        }
        filled += 1;
    }
    if filled > 0 {
        out.notes.push(format!(
            "{filled} result(s) of calls from the conversation read from Haystack's chat history (`ChatMessage` reprs in `{OUTPUT_KEY}`)"
        ));
    }
}

/// One `ToolCallResult` of the history.
struct Answered {
    name: String,
    args: Value,
    id: Option<String>,
    result: Value,
    error: bool,
}

impl Answered {
    /// One call per call id; without one, per name, arguments and result.
    fn key(&self) -> String {
        match &self.id {
            Some(id) => format!("id:{id}"),
            None => format!("{}\u{0}{}\u{0}{}", self.name, self.args, self.result),
        }
    }

    fn call(self, s: &SpanRecord) -> ToolCall {
        ToolCall {
            name: self.name,
            args: CallArgs::Value(self.args),
            result: Some(CallResult::Value(self.result)),
            status: if self.error {
                CallStatus::Error
            } else {
                CallStatus::Ok
            },
            error_message: None,
            error_type: None,
            span_id: s.span_id,
            start_time_unix_nano: s.span.start_time_unix_nano,
            depth: 0,
            agent: None,
            retriever: false,
            convention: CONVENTION.to_string(),
            from: Some(FROM_CONVERSATION),
            span_name: None,
            mcp_server: None,
            within: None,
            end_time_unix_nano: s.span.end_time_unix_nano,
            call_id: None,
        }
    }
}

/// The answered calls of every `ChatMessage` repr in `v`, in order.
fn messages(v: &Value, depth: usize, out: &mut Vec<Answered>) {
    if depth > MAX_NESTING {
        return;
    }
    match v {
        Value::String(t) if t.starts_with("ChatMessage(") => {
            let Some(m) = literal::parse_repr(t).filter(|m| class(m) == Some("ChatMessage")) else {
                return;
            };
            let parts = m.get("_content").and_then(Value::as_array);
            out.extend(parts.into_iter().flatten().filter_map(answered));
        }
        Value::Array(items) => items.iter().for_each(|x| messages(x, depth + 1, out)),
        Value::Object(o) => o.values().for_each(|x| messages(x, depth + 1, out)),
        _ => {}
    }
}

fn class(v: &Value) -> Option<&str> {
    v.get(CLASS_KEY).and_then(Value::as_str)
}

/// A `ToolCallResult` whose origin is a `ToolCall` with a name and an
/// arguments object.
fn answered(part: &Value) -> Option<Answered> {
    if class(part) != Some("ToolCallResult") {
        return None;
    }
    let origin = part
        .get("origin")
        .filter(|o| class(o) == Some("ToolCall"))?;
    let name = origin.get("tool_name")?.as_str()?.to_string();
    let args = origin.get("arguments").filter(|a| a.is_object())?.clone();
    let result = match part.get("result")? {
        Value::String(t) => parse_json_or_literal(t),
        other => other.clone(),
    };
    Some(Answered {
        name,
        args,
        id: origin.get("id").and_then(Value::as_str).map(str::to_string),
        result,
        error: part.get("error").and_then(Value::as_bool).unwrap_or(false),
    })
}

#[cfg(test)]
mod tests {
    use serde_json::{json, Value};

    use crate::assemble::{Trace, TraceId};
    use crate::extract::tests::sp;
    use crate::extract::{CallStatus, Extractor};

    /// A component span whose output lists `messages` (reprs).
    fn component(
        id: u8,
        parent: Option<u8>,
        when: (u64, u64),
        messages: &[&str],
    ) -> crate::assemble::SpanRecord {
        let output = json!({"messages": messages}).to_string();
        sp(
            id,
            parent,
            when,
            "Agent.run",
            &[
                ("openinference.span.kind", "CHAIN"),
                ("output.value", &output),
            ],
        )
    }

    const ASK: &str = "ChatMessage(_role=<ChatRole.ASSISTANT: 'assistant'>, _content=[ToolCall(tool_name='dock', arguments={'berth': 4}, id='k1', extra=None)], _name=None, _meta={})";
    const ANSWER: &str = "ChatMessage(_role=<ChatRole.TOOL: 'tool'>, _content=[ToolCallResult(result=\"{'ok': True}\", origin=ToolCall(tool_name='dock', arguments={'berth': 4}, id='k1', extra=None), error=False)], _name=None, _meta={})";
    const FAILED: &str = "ChatMessage(_role=<ChatRole.TOOL: 'tool'>, _content=[ToolCallResult(result='no berth', origin=ToolCall(tool_name='moor', arguments={}, id='k2', extra=None), error=True)], _name=None, _meta={})";

    fn calls(spans: Vec<crate::assemble::SpanRecord>) -> Vec<(String, Value, Value, CallStatus)> {
        Extractor::default()
            .analyze(&Trace::new(TraceId([3; 16]), spans, 0))
            .calls
            .into_iter()
            .map(|c| {
                let result = c.result.map(|r| r.to_value()).unwrap_or_default();
                (
                    c.name,
                    c.args.value().cloned().unwrap_or_default(),
                    result,
                    c.status,
                )
            })
            .collect()
    }

    #[test]
    fn answered_calls_of_the_history_are_calls_once() {
        // The pipeline's output repeats the agent's history.
        let got = calls(vec![
            component(1, None, (0, 100), &[ASK, ANSWER, FAILED]),
            component(2, Some(1), (10, 90), &[ASK, ANSWER, FAILED]),
        ]);
        assert_eq!(
            got,
            vec![
                (
                    "dock".into(),
                    json!({"berth": 4}),
                    json!({"ok": true}),
                    CallStatus::Ok
                ),
                (
                    "moor".into(),
                    json!({}),
                    json!("no berth"),
                    CallStatus::Error
                ),
            ]
        );
    }

    #[test]
    fn a_call_given_as_history_is_no_call_of_the_run() {
        // A second run (its own trace) is given the first run's history as
        // its input and answers `moor` itself; the pipeline around it
        // repeats the whole history in its output.
        let given = json!({"messages": [ASK, ANSWER]}).to_string();
        let output = json!({"messages": [ASK, ANSWER, FAILED]}).to_string();
        let run = sp(
            2,
            Some(1),
            (10, 90),
            "Agent.run",
            &[
                ("openinference.span.kind", "CHAIN"),
                ("input.value", &given),
                ("output.value", &output),
            ],
        );
        let got = calls(vec![
            component(1, None, (0, 100), &[ASK, ANSWER, FAILED]),
            run,
        ]);
        let names: Vec<&str> = got.iter().map(|(n, ..)| n.as_str()).collect();
        assert_eq!(names, ["moor"]);
    }

    #[test]
    fn a_call_never_answered_or_a_message_that_is_no_repr_is_no_call() {
        let evaluated = "ChatMessage(_role=<ChatRole.TOOL: 'tool'>, _content=[ToolCallResult(result=os.system('x'), origin=ToolCall(tool_name='dock', arguments={}, id='k3'), error=False)])";
        let positional = "ChatMessage(_content=[ToolCallResult('x', ToolCall('dock', {}))])";
        assert!(calls(vec![component(
            1,
            None,
            (0, 100),
            &[ASK, evaluated, positional]
        )])
        .is_empty());
    }

    #[test]
    fn conversation_calls_without_results_take_them_from_the_history() {
        // A generator span asked for `dock` (no call id, flattened) and the
        // next one's tool message kept only its role; the agent's output
        // holds the history.
        let generator = |id: u8, when: (u64, u64), args: &str, tool_turn: bool| {
            let mut attrs = vec![
                ("openinference.span.kind", "LLM"),
                ("llm.input_messages.0.message.role", "user"),
                ("llm.input_messages.0.message.content", "dock at 4"),
                ("llm.output_messages.0.message.role", "assistant"),
            ];
            if tool_turn {
                attrs.push(("llm.input_messages.1.message.role", "assistant"));
                attrs.push(("llm.input_messages.2.message.role", "tool"));
                attrs.push(("llm.output_messages.0.message.content", "docked"));
            } else {
                let name = "llm.output_messages.0.message.tool_calls.0.tool_call.function.name";
                let arguments =
                    "llm.output_messages.0.message.tool_calls.0.tool_call.function.arguments";
                attrs.push((name, "dock"));
                attrs.push((arguments, args));
            }
            sp(id, Some(1), when, "OpenAIChatGenerator.run", &attrs)
        };
        let run = |args: &str| {
            calls(vec![
                component(1, None, (0, 100), &[ASK, ANSWER]),
                generator(2, (10, 20), args, false),
                generator(3, (30, 40), args, true),
            ])
        };
        let got = run(r#"{"berth": 4}"#);
        assert_eq!(got.len(), 1, "{got:?}");
        assert_eq!(got[0].2, json!({"ok": true}));
        // Near miss: other arguments than the history's call are no answer.
        let got = run(r#"{"berth": 5}"#);
        assert_eq!(got.len(), 1, "{got:?}");
        assert_eq!(got[0].2, Value::Null);
    }
}
