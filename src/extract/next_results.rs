//! Results only in the next model request, without call ids
//! (docs/conventions.md, "The conversation witness"): Splunk's LlamaIndex
//! spans record a tool's name, arguments and call id but no result, and
//! the next `chat` request's OTel GenAI history adds the result as a `tool`
//! message with neither id nor name. Each request repeats the history, so
//! the tool messages a request adds to the one before it answer the calls
//! that ran between the two; when exactly as many calls without a result
//! ran there as messages were added, the messages are their results, in
//! order. Anything else (a message with an id, more or fewer calls) is left
//! to the other joins.

use serde_json::Value;

use super::source::parse_json_or_literal;
use super::{CallResult, ToolCall};
use crate::assemble::Trace;

/// The attribute a model request's history is read from.
const MESSAGES: &str = "gen_ai.input.messages";

/// A request's tool messages: each one's text, `None` for one that has a
/// call id (some other join reads those).
type ToolMessages = Vec<Option<String>>;

/// Fills, when `results` are read, the results of `calls` of `trace` that
/// have none from the tool messages the next request adds.
pub(crate) fn fill(results: bool, trace: &Trace, calls: &mut [ToolCall]) {
    if !results || calls.iter().all(|c| c.result.is_some()) {
        return;
    }
    let requests: Vec<(u64, ToolMessages)> = trace
        .spans
        .iter()
        .filter_map(|s| {
            let text = s.attr_str(MESSAGES)?;
            Some((s.span.start_time_unix_nano, tool_messages(text)?))
        })
        .collect();
    for pair in requests.windows(2) {
        let [(from, before), (to, after)] = pair else {
            continue;
        };
        let Some(added) = after.get(before.len()..).filter(|a| !a.is_empty()) else {
            continue;
        };
        let mut between: Vec<&mut ToolCall> = calls
            .iter_mut()
            .filter(|c| (*from..*to).contains(&c.start_time_unix_nano))
            .collect();
        if between.len() != added.len() || between.iter().any(|c| c.result.is_some()) {
            continue;
        }
        between.sort_by_key(|c| c.start_time_unix_nano);
        for (call, text) in between.into_iter().zip(added) {
            if let Some(text) = text {
                call.result = Some(CallResult::Value(parse_json_or_literal(text)));
            }
        }
    }
}

/// The `tool` messages of an OTel GenAI history (`[{"role", "parts":
/// [{"type": "text", "content"}]}]`), `None` when it is no such list.
fn tool_messages(text: &str) -> Option<ToolMessages> {
    if !text.contains("\"tool\"") {
        return Some(Vec::new());
    }
    let Value::Array(messages) = serde_json::from_str::<Value>(text).ok()? else {
        return None;
    };
    let tools = messages
        .iter()
        .filter(|m| m.get("role").and_then(Value::as_str) == Some("tool"))
        .map(|m| {
            let parts = m.get("parts").and_then(Value::as_array)?;
            let with_id = parts.iter().any(|p| p.get("id").is_some());
            let texts: Vec<&str> = parts
                .iter()
                .filter(|p| p.get("type").and_then(Value::as_str) == Some("text"))
                .filter_map(|p| p.get("content").and_then(Value::as_str))
                .collect();
            match (with_id, texts.as_slice()) {
                (false, [one]) => Some((*one).to_string()),
                _ => None,
            }
        })
        .collect();
    Some(tools)
}
