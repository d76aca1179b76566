//! A chain output retelling the history (docs/conventions.md, "The
//! conversation witness"): a LangGraph.js step whose output is the graph's
//! state (the agent node's input, or the state a graph resumed after
//! `interrupt()` returns) lists the model's earlier messages with the
//! tool messages answering them. Such an output retells answered calls:
//! a model call's `AIMessage` whose call a `ToolMessage` of the same output
//! answers (its `tool_call_id`) is history, not an ask left open.

use crate::extract::borrowed::Json;

/// The class path's last part of a LangChain-serialized tool message.
const TOOL_MESSAGE: &str = "ToolMessage";

/// The call ids the serialized `ToolMessage`s in `v` answer, at any depth
/// (`depth` bounds the walk).
pub(super) fn answered_ids<'j>(v: &'j Json<'_>, depth: usize, out: &mut Vec<&'j str>) {
    if depth > 16 {
        return;
    }
    match v {
        Json::Array(items) => items.iter().for_each(|i| answered_ids(i, depth + 1, out)),
        Json::Object(o) => {
            if let Some(id) = tool_message_id(v) {
                out.push(id);
                return;
            }
            o.iter().for_each(|(_, i)| answered_ids(i, depth + 1, out));
        }
        _ => {}
    }
}

/// The `tool_call_id` of `v` when it is a LangChain-serialized
/// `ToolMessage` (`{"lc": 1, "type": "constructor", "id": [...,
/// "ToolMessage"], "kwargs": {...}}`).
fn tool_message_id<'j>(v: &'j Json<'_>) -> Option<&'j str> {
    let class = match v.get("id")? {
        Json::Array(path) => path.last()?.as_str()?,
        _ => return None,
    };
    let serialized = v.get("type").and_then(Json::as_str) == Some("constructor")
        && class == TOOL_MESSAGE
        && matches!(v.get("lc"), Some(Json::Scalar(n)) if n.as_u64() == Some(1));
    if !serialized {
        return None;
    }
    v.get("kwargs")?
        .get("tool_call_id")?
        .as_str()
        .filter(|id| !id.trim().is_empty())
}
