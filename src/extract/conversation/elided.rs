//! Results a writer elided in one form of a request and kept in another
//! (vocabulary `elided_values`; docs/conventions.md, "Images and elided
//! content").
//!
//! OpenInference replaces an image's base64 data with a stand-in in the
//! flattened messages of an LLM span, while the raw request it also
//! records (`input.value`) holds the data. Both forms keep the call ids, so
//! the count of ids does not choose between them; the count of stand-ins
//! does.

use serde_json::Value;

use super::super::rules::builtin_list;
use super::Answer;

/// Deepest nesting searched for a stand-in (results are small trees; a
/// deeper one is taken as holding none below the limit).
const MAX_DEPTH: usize = 32;

/// How many of `answers` hold a stand-in somewhere in their content.
pub(super) fn count(answers: &[Answer]) -> usize {
    let marks = builtin_list("elided_values");
    if marks.is_empty() {
        return 0;
    }
    answers
        .iter()
        .filter(|a| a.content.as_ref().is_some_and(|c| holds(c, marks, 0)))
        .count()
}

/// Whether `v` holds a stand-in: a string that is one, or a string of JSON
/// text holding one as a string (a flattened message's content is often
/// the result's JSON as text).
fn holds(v: &Value, marks: &[String], depth: usize) -> bool {
    if depth > MAX_DEPTH {
        return false;
    }
    match v {
        Value::String(s) => marks.iter().any(|m| s.trim() == m || quoted_in(s, m)),
        Value::Array(items) => items.iter().any(|i| holds(i, marks, depth + 1)),
        Value::Object(map) => map.values().any(|i| holds(i, marks, depth + 1)),
        _ => false,
    }
}

/// Whether `mark` stands in `text` between double quotes (a JSON string
/// of its own inside JSON text).
fn quoted_in(text: &str, mark: &str) -> bool {
    let b = text.as_bytes();
    text.match_indices(mark)
        .any(|(at, _)| at > 0 && b[at - 1] == b'"' && b.get(at + mark.len()) == Some(&b'"'))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn answer(content: Value) -> Answer {
        Answer {
            id: Some("c1".into()),
            name: None,
            content: Some(content),
            ..Answer::default()
        }
    }

    #[test]
    fn a_stand_in_is_found_as_a_value_or_inside_json_text() {
        let as_value = answer(json!([{"type": "image", "source": {"data": "__REDACTED__"}}]));
        let as_text = answer(json!(
            r#"[{"type": "image", "source": {"data": "__REDACTED__"}}]"#
        ));
        let kept = answer(json!([{"type": "image", "source": {"data": "iVBORw0KGgo="}}]));
        assert_eq!(count(&[as_value, as_text, kept]), 2);
    }

    #[test]
    fn a_word_that_only_contains_the_stand_in_is_not_one() {
        // A result that quotes the marker inside other text is not elided.
        let prose = answer(json!("the field was __REDACTED__ by policy"));
        let other = answer(json!({"note": "REDACTED"}));
        assert_eq!(count(&[prose, other]), 0);
    }
}
