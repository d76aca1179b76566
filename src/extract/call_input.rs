//! A tool span named after the wrapper that ran the tool, by its qualified
//! name (docs/conventions.md, "Spans named after a wrapper's method"):
//! TruLens writes LangGraph's tool node as `gen_ai.tool.name =
//! langgraph.prebuilt.tool_node.ToolNode.invoke`, and the node's input,
//! the call the model asked for, as a list of one LangChain tool call
//! `[{"name", "args", "id", "type": "tool_call"}]` under its own input key
//! (`ai.observability.call.kwargs.input`). Whatever rule read the span, a
//! call still named a wrapper's method after [`super::wrapper_names`]
//! takes the tool's name and arguments from such a record under an
//! input-like key of its span; with none, from the span's own name when
//! that is a plain tool name. A list of several records names no one call
//! and changes nothing.

use serde_json::{Map, Value};

use super::wrapper_names::is_wrapper_method;
use super::{CallArgs, ToolCall};
use crate::assemble::{SpanRecord, Trace};

/// The keys of a tool-call record besides its name and arguments.
const RECORD_EXTRA: [&str; 2] = ["id", "type"];
/// The record types a tool call is written with (LangChain's `tool_call`,
/// OpenAI's `function_call`).
const RECORD_TYPES: [&str; 3] = ["tool_call", "function_call", "function"];

/// Names the calls of `calls` still named a wrapper's method from their
/// span's input record or own name.
pub(crate) fn fill(trace: &Trace, calls: &mut [ToolCall]) {
    for call in calls.iter_mut().filter(|c| is_wrapper_method(&c.name)) {
        let Some(s) = trace.spans.iter().find(|s| s.span_id == call.span_id) else {
            continue;
        };
        let own = s.span.name();
        if let Some((name, args)) = record_in(s) {
            call.span_name = (own != name).then(|| own.to_string());
            call.name = name;
            call.args = CallArgs::Value(args);
        } else if is_tool_name(own) {
            call.name = own.to_string();
        }
    }
}

/// The tool's own name for a call named `name` on span `s`, when `name`
/// is a wrapper's method and the span's input record or own name gives
/// one, with where it came from (`inspect --explain`).
pub(crate) fn named(name: &str, s: &SpanRecord) -> Option<(String, &'static str)> {
    if !is_wrapper_method(name) {
        return None;
    }
    match record_in(s) {
        Some((n, ..)) => Some((n, "input")),
        None => is_tool_name(s.span.name()).then(|| (s.span.name().to_string(), "span name")),
    }
}

/// Whether `name` reads as a model's tool name: a word of letters, digits,
/// `_` and `-`, starting with a letter or `_`.
fn is_tool_name(name: &str) -> bool {
    name.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

/// The one tool-call record under an input-like key of `s` (the key
/// `input`, or one ending in `.input`): name and arguments. (Its call id
/// is left: a tool span's call joins the model's request by its span's
/// call id key, else by name or equal arguments.)
fn record_in(s: &SpanRecord) -> Option<(String, Value)> {
    s.span.attributes().find_map(|(key, value)| {
        if key != "input" && !key.ends_with(".input") {
            return None;
        }
        let text = value?.as_str()?.trim_start();
        if !text.starts_with('[') {
            return None;
        }
        match serde_json::from_str::<Value>(text).ok()? {
            Value::Array(mut list) if list.len() == 1 => match list.pop() {
                Some(Value::Object(o)) => record(o),
                _ => None,
            },
            _ => None,
        }
    })
}

/// A tool-call record `{"name", "args" | "arguments", "id"?, "type"?}`
/// (arguments an object or its JSON text; no other key) as its name and
/// arguments.
fn record(mut o: Map<String, Value>) -> Option<(String, Value)> {
    let args_key = ["args", "arguments"]
        .into_iter()
        .find(|k| o.contains_key(*k))?;
    let known = |k: &String| k == "name" || k == args_key || RECORD_EXTRA.contains(&k.as_str());
    if !o.keys().all(known) {
        return None;
    }
    if let Some(t) = o.get("type") {
        if !t.as_str().is_some_and(|t| RECORD_TYPES.contains(&t)) {
            return None;
        }
    }
    let name = match o.remove("name")? {
        Value::String(n) if !n.trim().is_empty() => n,
        _ => return None,
    };
    let args = match o.remove(args_key)? {
        v @ Value::Object(_) => v,
        Value::String(t) => match serde_json::from_str::<Value>(&t).ok()? {
            v @ Value::Object(_) => v,
            _ => return None,
        },
        _ => return None,
    };
    Some((name, args))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::assemble::TraceId;
    use crate::extract::test_support::in_process;
    use crate::extract::tests::sp;
    use crate::extract::Extractor;

    /// A made-up tracer's tool span: named `span`, the tool name its
    /// wrapper's qualname, the input under the tracer's own key.
    fn wrapped(span: &str, input: &str) -> Trace {
        let s = sp(
            1,
            None,
            (10, 20),
            span,
            &[
                (
                    "gen_ai.tool.name",
                    "acme_graph.nodes.runner.ToolRunner.invoke",
                ),
                ("acme.trace.call.kwargs.input", input),
            ],
        );
        Trace::new(TraceId([1; 16]), vec![in_process(s, "p")], 0)
    }

    fn read(t: &Trace) -> Vec<(String, Value, Option<String>)> {
        let calls = Extractor::default().extract(t);
        calls
            .into_iter()
            .map(|c| {
                (
                    c.name,
                    c.args.value().cloned().unwrap_or_default(),
                    c.span_name,
                )
            })
            .collect()
    }

    #[test]
    fn a_wrapper_named_span_takes_the_call_record_of_its_input() {
        let input = json!([{"name": "rent_kayak", "args": {"lake": "Annecy", "hours": 3}, "id": "tc_9", "type": "tool_call"}]);
        // The span named after another tool (the tracer's): the record wins.
        let got = read(&wrapped("find_cabin", &input.to_string()));
        let want = (
            "rent_kayak".to_string(),
            json!({"lake": "Annecy", "hours": 3}),
            Some("find_cabin".to_string()),
        );
        assert_eq!(got, vec![want]);
    }

    #[test]
    fn without_one_record_the_span_name_or_the_wrapper_stays() {
        let two = json!([
            {"name": "a", "args": {}, "id": "1"},
            {"name": "b", "args": {}, "id": "2"}
        ]);
        let got = read(&wrapped("find_cabin", &two.to_string()));
        assert_eq!(got[0].0, "find_cabin");
        let other = json!([{"name": "a", "args": {}, "extra": 1}]);
        let got = read(&wrapped("Runner node", &other.to_string()));
        assert_eq!(got[0].0, "acme_graph.nodes.runner.ToolRunner.invoke");
    }
}
