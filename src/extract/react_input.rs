//! A text-parsed ReAct step's tool input (docs/conventions.md, "Text-parsed
//! ReAct tools"): an agent without native function calling (LangChain's
//! `createReactAgent` / Python's `create_react_agent`) has the model write
//! `Action: find_hotel` and `Action Input: {"town": "Lisbon"}` in its
//! reply, and runs a string tool (`DynamicTool`, Python's `Tool`) with that
//! text. LangChain's callbacks hand the writers the string as
//! `{"input": "<the text>"}`, and some tracers name the span after the
//! tool's class. A call whose arguments are that one-key wrapper around a
//! JSON object's text is read as that text, the way a bare JSON-text
//! argument is read, when the trace shows the model asking for the call
//! with exactly that text: `Action: <the call's tool>`, then on the next
//! line `Action Input: <the text>` (in the reply, the agent's parsed
//! action's `log`, or the scratchpad; as written or JSON-escaped). A call
//! named a placeholder (vocabulary `placeholder_tool_names`) takes the tool
//! those lines name, when all of them name one. A tool the trace offers
//! with a parameter `input` keeps its arguments as recorded.

use std::collections::BTreeSet;

use memchr::memmem;
use serde_json::Value;

use super::args::CallArgs;
use super::placeholder_names::is_placeholder;
use super::{facts, Analysis, ToolCall};
use crate::assemble::Trace;
use crate::value::PyValue;

/// The words opening a ReAct step's line naming the tool (`Action:`) and
/// the line after it holding the tool's input text (`Action Input:`), as
/// the conversation's ReAct reader declares them.
fn step_words() -> (&'static [String], &'static [String]) {
    super::conversation::react_step_words()
}

/// The text a call's arguments wrap: `{"input": S}`, one key, S the text
/// of a JSON object (trimmed).
fn wrapped(call: &ToolCall) -> Option<String> {
    // Arguments kept as text (serde_json's, compact) are parsed only when
    // they start so: this runs on every call of every trace.
    if let CallArgs::Text(t) = &call.args {
        if !t.starts_with(r#"{"input":""#) {
            return None;
        }
    }
    let args = call.args.parsed()?;
    let o = args.as_object().filter(|o| o.len() == 1)?;
    let text = o.get("input")?.as_str()?.trim();
    if !text.starts_with('{') {
        return None;
    }
    let inner: Value = serde_json::from_str(text).ok()?;
    inner.is_object().then(|| text.to_string())
}

/// Reads the wrapped inputs of `out`'s calls (see the module's doc),
/// noting each.
pub(super) fn settle(trace: &Trace, out: &mut Analysis) {
    // Most traces have no such call: nothing more is read for them.
    let wraps: Vec<(usize, String)> = out
        .calls
        .iter()
        .enumerate()
        .filter_map(|(k, c)| Some((k, wrapped(c)?)))
        .collect();
    if wraps.is_empty() {
        return;
    }
    let offered = facts::offered_tools(trace);
    let takes_input = |tool: &str| {
        offered.iter().any(|d| {
            d.name == tool
                && d.parameters
                    .as_ref()
                    .and_then(|p| p.get("properties"))
                    .and_then(|p| p.get("input"))
                    .is_some()
        })
    };
    let at = trace.positions();
    for (k, text) in wraps {
        let asks = asked_with(trace, &text);
        let call = &mut out.calls[k];
        let tool = if is_placeholder(&call.name) {
            match named_by(&asks, call.start_time_unix_nano) {
                Some(tool) => tool.to_string(),
                None => continue,
            }
        } else if asks.iter().any(|a| a.tool == call.name) {
            call.name.clone()
        } else {
            continue;
        };
        if takes_input(&tool) {
            continue;
        }
        let Ok(value) = serde_json::from_str::<Value>(&text) else {
            continue;
        };
        call.args = match &call.args {
            CallArgs::Ordered { .. } => match PyValue::parse(&text).ok() {
                Some(ordered) => CallArgs::Ordered {
                    value,
                    ordered: ordered.into(),
                },
                None => CallArgs::Value(value),
            },
            CallArgs::Text(_) => CallArgs::Text(value.to_string().into()),
            _ => CallArgs::Value(value),
        };
        let mut note = format!(
            "tool span {}: arguments `{{\"input\": ...}}` hold the text the model wrote after `Action Input:` for `{tool}`: read as that text",
            call.span_id
        );
        if tool != call.name {
            let placeholder = std::mem::replace(&mut call.name, tool);
            if call.span_name.is_none() {
                let own = at.get(call.span_id).map(|i| trace.spans[i].span.name());
                call.span_name = Some(own.unwrap_or(&placeholder).to_string());
            }
            note.push_str(&format!(
                "; the span names no tool (`{placeholder}`): the model's `Action:` line names `{}`",
                call.name
            ));
        }
        out.notes.push(note);
    }
}

/// An `Action:` line naming `tool` before an `Action Input:` line, in an
/// attribute of a span that ended at `end`, at byte `at` of it.
struct Ask {
    tool: String,
    end: u64,
    at: usize,
}

/// The tool a call named a placeholder and started at `start` takes from
/// `asks`: the one tool they name; when they name several, the one the
/// latest ask recorded before the call names (the agent's parsed action,
/// recorded just before the tool ran).
fn named_by(asks: &[Ask], start: u64) -> Option<&str> {
    let mut tools: BTreeSet<&str> = asks.iter().map(|a| a.tool.as_str()).collect();
    tools.retain(|t| !is_placeholder(t));
    let mut it = tools.iter();
    match (it.next(), it.next()) {
        (Some(one), None) => Some(one),
        (Some(_), Some(_)) => asks
            .iter()
            .filter(|a| a.end <= start && !is_placeholder(&a.tool))
            .max_by_key(|a| (a.end, a.at))
            .map(|a| a.tool.as_str()),
        _ => None,
    }
}

/// The `Action:` lines in the trace right before an `Action Input:` line
/// holding exactly `text`, written as is or JSON-escaped, in any span
/// attribute.
fn asked_with(trace: &Trace, text: &str) -> Vec<Ask> {
    let escaped = serde_json::to_string(text).unwrap_or_default();
    let escaped = escaped
        .get(1..escaped.len().saturating_sub(1))
        .unwrap_or("");
    let inputs = step_words().1;
    let forms = inputs.iter().map(|w| (format!("{w} {text}"), false)).chain(
        inputs
            .iter()
            .filter(|_| escaped != text)
            .map(|w| (format!("{w} {escaped}"), true)),
    );
    let forms: Vec<(memmem::Finder<'static>, bool)> = forms
        .map(|(n, esc)| (memmem::Finder::new(n.as_bytes()).into_owned(), esc))
        .collect();
    let mut asks = Vec::new();
    for s in &trace.spans {
        for (_, value) in s.span.attributes() {
            let Some(t) = value.as_ref().and_then(|v| v.as_str()) else {
                continue;
            };
            for (finder, esc) in &forms {
                for at in finder.find_iter(t.as_bytes()) {
                    let end = at + finder.needle().len();
                    if !ends_input(&t.as_bytes()[end..]) {
                        continue;
                    }
                    if let Some(tool) = t.get(..at).and_then(|b| action_before(b, *esc)) {
                        let (tool, end) = (tool.to_string(), s.span.end_time_unix_nano);
                        asks.push(Ask { tool, end, at });
                    }
                }
            }
        }
    }
    asks
}

/// Whether the input text ends where `rest` starts: at the end of the
/// string, a space or line break, or the string's closing quote.
fn ends_input(rest: &[u8]) -> bool {
    matches!(
        rest.first(),
        None | Some(b' ' | b'\n' | b'\r' | b'\t' | b'"' | b'\\')
    )
}

/// The tool an `Action:` line names, the line ending right where
/// `before` ends (a line break, escaped when `escaped`).
fn action_before(before: &str, escaped: bool) -> Option<&str> {
    let (nl, cr) = if escaped {
        ("\\n", "\\r")
    } else {
        ("\n", "\r")
    };
    let before = before.strip_suffix(nl)?;
    let before = before.strip_suffix(cr).unwrap_or(before);
    let line = &before[before.rfind(nl).map_or(0, |i| i + nl.len())..];
    let (at, len) = step_words()
        .0
        .iter()
        .filter_map(|w| line.rfind(w.as_str()).map(|at| (at, w.len())))
        .max()?;
    // The line starts there, or a string holding it does.
    if !line[..at].trim_end().is_empty() && !line[..at].ends_with(['"', '[']) {
        return None;
    }
    let name = line[at + len..].trim();
    let plain = !name.is_empty() && !name.contains(['"', '\\', '\n']);
    plain.then_some(name)
}

#[cfg(test)]
mod tests {
    use serde_json::{json, Value};

    use super::action_before;
    use crate::assemble::{SpanRecord, Trace, TraceId};
    use crate::extract::tests::sp;
    use crate::extract::Extractor;

    /// A made-up vendor's tool span named `name`, arguments `args`.
    fn tool(id: u8, when: (u64, u64), name: &str, args: &Value) -> SpanRecord {
        let args = args.to_string();
        let attrs = [
            ("gen_ai.operation.name", "execute_tool"),
            ("gen_ai.tool.name", name),
            ("gen_ai.tool.call.arguments", args.as_str()),
        ];
        sp(id, Some(1), when, &format!("run {name}"), &attrs)
    }

    /// A made-up vendor's chain span whose output is the model's reply.
    fn reply(id: u8, when: (u64, u64), text: &str) -> SpanRecord {
        let out = json!({"text": text}).to_string();
        sp(id, Some(1), when, "acme.step", &[("acme.output", &out)])
    }

    fn read(spans: Vec<SpanRecord>) -> Vec<(String, Value)> {
        let out = Extractor::default().analyze(&Trace::new(TraceId([3; 16]), spans, 0));
        let calls = out.calls.iter();
        calls
            .map(|c| {
                (
                    c.name.clone(),
                    c.args.parsed().map(|a| a.into_owned()).unwrap_or_default(),
                )
            })
            .collect()
    }

    fn input(text: &str) -> Value {
        json!({ "input": text })
    }

    #[test]
    fn a_string_tool_s_wrapped_input_is_the_text_the_model_wrote() {
        let (room, kayak) = (r#"{"town": "Oslo"}"#, r#"{"dock": "Aker", "hours": 3}"#);
        let spans = vec![
            sp(1, None, (0, 100), "acme run", &[]),
            reply(
                2,
                (1, 2),
                &format!("Thought: first\nAction: find_room\nAction Input: {room} "),
            ),
            tool(3, (3, 4), "find_room", &input(room)),
            reply(
                5,
                (5, 6),
                &format!("Thought: then\nAction: rent_kayak\nAction Input: {kayak}"),
            ),
            // Named after the tool's class: takes the name the line gives.
            tool(6, (7, 8), "DynamicTool", &input(kayak)),
        ];
        let got = read(spans);
        assert_eq!(
            got,
            [
                ("find_room".to_string(), json!({"town": "Oslo"})),
                (
                    "rent_kayak".to_string(),
                    json!({"dock": "Aker", "hours": 3})
                ),
            ]
        );
    }

    #[test]
    fn one_input_two_tools_asked_the_latest_ask_before_the_call_names_it() {
        let town = r#"{"town": "Oslo"}"#;
        let (time, weather) = (
            format!("Action: get_time\nAction Input: {town}"),
            format!("Action: get_weather\nAction Input: {town}"),
        );
        let spans = vec![
            sp(1, None, (0, 100), "acme run", &[]),
            reply(2, (1, 2), &time),
            tool(3, (3, 4), "DynamicTool", &input(town)),
            reply(5, (5, 6), &format!("{time}\nObservation: 9:00\n{weather}")),
            tool(6, (7, 8), "DynamicTool", &input(town)),
            // The whole scratchpad, recorded after both ran.
            reply(7, (9, 10), &format!("{weather}\nObservation: rain\n{time}")),
        ];
        let got: Vec<String> = read(spans).into_iter().map(|(n, _)| n).collect();
        assert_eq!(got, ["get_time", "get_weather"]);
    }

    #[test]
    fn without_the_model_s_lines_the_wrapper_stays() {
        let room = r#"{"town": "Oslo"}"#;
        // No ReAct text; another tool's; other text after the input.
        for text in [
            "I will look for a room.".to_string(),
            format!("Action: rent_kayak\nAction Input: {room}"),
            format!("Action: find_room\nAction Input: {room}, then more"),
        ] {
            let spans = vec![
                sp(1, None, (0, 100), "acme run", &[]),
                reply(2, (1, 2), &text),
                tool(3, (3, 4), "find_room", &input(room)),
            ];
            assert_eq!(
                read(spans),
                [("find_room".to_string(), input(room))],
                "{text}"
            );
        }
    }

    #[test]
    fn a_tool_offered_with_an_input_parameter_keeps_it() {
        let room = r#"{"town": "Oslo"}"#;
        let tools = json!([{"type": "function", "function": {"name": "find_room",
            "parameters": {"type": "object", "properties": {"input": {"type": "string"}}}}}])
        .to_string();
        let spans = vec![
            sp(1, None, (0, 100), "acme run", &[]),
            sp(
                2,
                Some(1),
                (1, 2),
                "chat",
                &[
                    ("gen_ai.operation.name", "chat"),
                    ("gen_ai.tool.definitions", &tools),
                    (
                        "acme.output",
                        &format!("Action: find_room\nAction Input: {room}"),
                    ),
                ],
            ),
            tool(3, (3, 4), "find_room", &input(room)),
        ];
        assert_eq!(read(spans), [("find_room".to_string(), input(room))]);
    }

    #[test]
    fn the_action_line_is_read_as_written_or_escaped() {
        assert_eq!(
            action_before("Thought: x\nAction: find_room\n", false),
            Some("find_room")
        );
        assert_eq!(
            action_before(r#"{"log":"Action: find_room\n"#, true),
            Some("find_room")
        );
        assert_eq!(action_before("Action: find_room ", false), None);
        assert_eq!(action_before("No Action: find_room\n", false), None);
    }
}
