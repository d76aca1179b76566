//! A tool result given as several JSON documents in a row, one a line
//! group: a list whose elements a framework wrote out one by one
//! (docs/conventions.md, "Multi-part results").
//!
//! An MCP server may answer a list as one text part per element (FastMCP
//! does, each element pretty-printed), and a client that hands the model
//! text joins the parts with line breaks (mcp-use's LangChain adapter),
//! dropping the structured copy. What the tool returned was the list, so
//! text that is exactly two or more JSON objects or arrays, separated by
//! whitespace holding a line break and by nothing else, is their list.
//! Anything else (one document, scalars, a document beside prose, two on
//! one line) stays text: a string element or a number cannot be told from
//! text that merely looks like one.

use serde_json::Value;

use super::{CallResult, ToolCall};

/// Gives each of `calls` whose result is text of a run of JSON documents
/// the list of those documents.
pub(crate) fn settle(calls: &mut [ToolCall]) {
    for c in calls.iter_mut() {
        if let Some(list) = c.result.as_ref().and_then(run_of_result) {
            c.result = Some(CallResult::Value(list));
        }
    }
}

/// The list a result's text holds as a run of documents, if it does.
fn run_of_result(r: &CallResult) -> Option<Value> {
    match r {
        CallResult::Value(Value::String(text)) => run_list(text),
        // JSON text of a string: cheap test before decoding it.
        CallResult::Json(json) if json.starts_with('"') && json.contains("\\n") => {
            match serde_json::from_str::<Value>(json).ok()? {
                Value::String(text) => run_list(&text),
                _ => None,
            }
        }
        _ => None,
    }
}

/// `text` as the list of the two or more JSON objects or arrays it is,
/// each apart from the next by whitespace holding a line break, or by
/// any whitespace when each document spans lines of its own (indented
/// JSON: Monocle joins an MCP result's text parts with a space).
pub(crate) fn run_list(text: &str) -> Option<Value> {
    let text = text.trim();
    // Cheap rejections first: most results are one value or prose.
    if !matches!(text.as_bytes().first(), Some(b'{' | b'[')) || !text.contains('\n') {
        return None;
    }
    let mut items = Vec::new();
    let mut stream = serde_json::Deserializer::from_str(text).into_iter::<Value>();
    let mut end = 0;
    // Whether every gap holds a line break, and every document does.
    let (mut gaps_break, mut documents_break) = (true, true);
    while let Some(item) = stream.next() {
        let item = item.ok()?;
        let gap = &text[end..];
        let start = gap.len() - gap.trim_start().len();
        if !items.is_empty() && start == 0 {
            return None;
        }
        gaps_break &= items.is_empty() || gap[..start].contains('\n');
        if !(item.is_object() || item.is_array()) {
            return None;
        }
        let from = end + start;
        end = stream.byte_offset();
        documents_break &= text[from..end].contains('\n');
        items.push(item);
    }
    (items.len() >= 2 && text[end..].trim().is_empty() && (gaps_break || documents_break))
        .then_some(Value::Array(items))
}

#[cfg(test)]
mod tests {
    use super::run_list;
    use serde_json::json;

    #[test]
    fn documents_one_after_another_on_their_own_lines_are_a_list() {
        let text = "{\n  \"leg\": 1,\n  \"to\": \"Łódź\"\n}\n{\n  \"leg\": 2\n}\n[1, 2]";
        assert_eq!(
            run_list(text),
            Some(json!([{"leg": 1, "to": "Łódź"}, {"leg": 2}, [1, 2]]))
        );
        // Indented documents joined by a space (Monocle's MCP output).
        let text = "{\n  \"leg\": 1\n} {\n  \"leg\": 2\n}";
        assert_eq!(run_list(text), Some(json!([{"leg": 1}, {"leg": 2}])));
    }

    #[test]
    fn anything_but_a_run_of_documents_stays_text() {
        for text in [
            "{\"leg\": 1}",                         // one document
            "{\"leg\": 1} {\"leg\": 2}",            // no line break between
            "{\"leg\": 1} {\n  \"leg\": 2\n}",      // one document on one line
            "{\n  \"leg\": 1\n}{\n  \"leg\": 2\n}", // no gap at all
            "{\"leg\": 1}\n{\"leg\": 2}\nand more",
            "{\"leg\": 1}\n2", // a scalar
            "1\n2",
            "note\n{\"leg\": 1}\n{\"leg\": 2}",
            "{\"leg\": 1}\n{\"leg\": ", // cut off
        ] {
            assert_eq!(run_list(text), None, "{text:?}");
        }
    }
}
