//! A tool span whose tool name is a placeholder (docs/conventions.md,
//! "Spans named after a wrapper's method"): Aegis's LangChain
//! instrumentation writes every LangGraph tool run as `gen_ai.tool.name =
//! "tool"`, with the tool's arguments right and, as the result, Python's
//! `repr()` of the `ToolMessage` the run returned (`content='rented'
//! name='rent_bike' id='...' tool_call_id='call_1'`), JSON-encoded. The
//! message names the tool and the model's call id: a call named a
//! placeholder takes both from such a message in any attribute of its span
//! (the result itself is unwrapped by `langchain_message_repr`), so the
//! conversation's record of the call joins it by that id (`twice`).

use super::ToolCall;
use crate::assemble::{SpanRecord, Trace};

/// Whether `name` is one a tracer gives a tool span when it does not know
/// the tool (vocabulary `placeholder_tool_names`), not a tool's name.
pub(crate) fn is_placeholder(name: &str) -> bool {
    super::rules::builtin_list("placeholder_tool_names")
        .iter()
        .any(|p| p.eq_ignore_ascii_case(name))
}

/// Names the calls of `calls` read from spans under a placeholder from the
/// tool message their span records, and gives them its call id.
pub(crate) fn fill(trace: &Trace, calls: &mut [ToolCall]) {
    let named = |c: &ToolCall| c.from.is_none() && is_placeholder(&c.name);
    if !calls.iter().any(named) {
        return;
    }
    // One index, not a walk per call: a trace may hold thousands of calls.
    let at = trace.positions();
    for call in calls.iter_mut().filter(|c| named(c)) {
        let Some(s) = at.get(call.span_id).and_then(|i| trace.spans.get(i)) else {
            continue;
        };
        let Some((name, id)) = tool_message_in(s) else {
            continue;
        };
        let own = s.span.name();
        call.span_name = (own != name).then(|| own.to_string());
        call.name = name;
        if super::source::tool_call_id(s).is_none() {
            call.call_id = id;
        }
    }
}

/// The tool's name and call id of the one `ToolMessage` `repr()` among the
/// span's string attributes (JSON-encoded or not).
fn tool_message_in(s: &SpanRecord) -> Option<(String, Option<String>)> {
    s.span.attributes().find_map(|(_, value)| {
        let text = value?.as_str()?.trim();
        let decoded;
        let text = match text.starts_with('"') {
            true => {
                decoded = serde_json::from_str::<String>(text).ok()?;
                decoded.as_str()
            }
            false => text,
        };
        tool_message(text)
    })
}

/// The `name` and `tool_call_id` of a `ToolMessage` `repr()`: keyword
/// fields, `content` first, `tool_call_id` among them, every key one a
/// `ToolMessage` has, the name a non-empty string that is no placeholder.
fn tool_message(text: &str) -> Option<(String, Option<String>)> {
    if !text.starts_with("content=") {
        return None;
    }
    let fields = super::literal::keyword_fields(text)?;
    let keys_ok = fields
        .iter()
        .all(|(k, _)| super::wrappers::TOOL_MESSAGE_KEYS.contains(&k.as_str()));
    let field = |key: &str| {
        fields
            .iter()
            .find(|(k, _)| k == key)
            .and_then(|(_, v)| v.as_str().map(str::to_string))
    };
    let id = fields.iter().find(|(k, _)| k == "tool_call_id")?;
    let name = field("name").filter(|n| !n.is_empty() && !is_placeholder(n))?;
    keys_ok.then(|| (name, id.1.as_str().map(str::to_string)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::assemble::{Trace, TraceId};
    use crate::extract::tests::sp;
    use crate::extract::Extractor;

    #[test]
    fn a_tool_message_names_the_tool_and_the_call() {
        assert_eq!(
            tool_message("content='ok' name='book_desk' id='m-1' tool_call_id='k-7'"),
            Some(("book_desk".into(), Some("k-7".into())))
        );
        // No call id, an unknown key, no name, or a placeholder's: nothing.
        assert_eq!(tool_message("content='ok' name='book_desk'"), None);
        assert_eq!(
            tool_message("content='ok' name='b' tool_call_id='k' colour='red'"),
            None
        );
        assert_eq!(tool_message("content='ok' tool_call_id='k'"), None);
        assert_eq!(
            tool_message("content='ok' name='tool' tool_call_id='k'"),
            None
        );
        assert!(is_placeholder("Tool") && !is_placeholder("tools_list"));
    }

    #[test]
    fn a_span_named_a_placeholder_takes_the_name_its_message_gives() {
        let result = serde_json::to_string(
            "content='{\"desk\": 4}' name='book_desk' id='m-1' tool_call_id='k-7'",
        )
        .unwrap_or_default();
        let span = |name: &str| {
            sp(
                1,
                None,
                (0, 10),
                name,
                &[
                    ("gen_ai.operation.name", "execute_tool"),
                    ("gen_ai.tool.name", name),
                    ("gen_ai.tool.call.arguments", r#"{"floor": 2}"#),
                    ("gen_ai.tool.call.result", &result),
                ],
            )
        };
        let read = |name: &str| {
            let t = Trace::new(TraceId([1; 16]), vec![span(name)], 0);
            Extractor::default().analyze(&t).calls
        };
        let calls = read("tool");
        assert_eq!(calls.len(), 1);
        assert_eq!(calls[0].name, "book_desk");
        assert_eq!(calls[0].call_id.as_deref(), Some("k-7"));
        assert_eq!(calls[0].span_name.as_deref(), Some("tool"));
        // A span named after its tool keeps its name.
        assert_eq!(read("reserve")[0].name, "reserve");
    }
}
