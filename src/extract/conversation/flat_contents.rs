//! A flattened message's content in parts (docs/conventions.md, "The
//! conversation witness"): OpenInference writes a message whose content is
//! a list of parts as `message.contents.<j>.message_content.type` and
//! `.text` instead of `message.content` (smolagents' messages are always
//! so). The text parts are rebuilt as the message's `content`, a list of
//! `{"type": "text", "text"}` parts in index order, which is read as any
//! content in parts is; a `content` key of the message wins.

use serde_json::{Map, Value};

/// The key of a part's field under a message, after `contents.<j>.`.
const PART: &str = "message_content.";

/// Takes `text`, the value of field `field` of a flattened message, into
/// `message`'s content parts when the field is one of a part's
/// (`contents.<j>.message_content.text` or `.type`); whether it was.
pub(super) fn add(message: &mut Map<String, Value>, field: &str, text: &str) -> bool {
    let Some(rest) = field.strip_prefix("contents.") else {
        return false;
    };
    let Some((j, part)) = rest.split_once('.') else {
        return false;
    };
    let (Ok(j), Some(key)) = (j.parse::<usize>(), part.strip_prefix(PART)) else {
        return false;
    };
    if !matches!(key, "text" | "type") || j > MAX_PARTS {
        return true;
    }
    let content = message
        .entry("content")
        .or_insert_with(|| Value::Array(Vec::new()));
    let Value::Array(parts) = content else {
        return true; // the message's own `content` wins
    };
    while parts.len() <= j {
        parts.push(Value::Object(Map::new()));
    }
    if let Some(p) = parts[j].as_object_mut() {
        p.insert(key.to_string(), Value::String(text.to_string()));
    }
    true
}

/// Parts beyond this index are not rebuilt (a bound on untrusted keys).
const MAX_PARTS: usize = 256;

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn parts_are_rebuilt_in_index_order() {
        let mut m = Map::new();
        assert!(add(&mut m, "contents.1.message_content.text", "b"));
        assert!(add(&mut m, "contents.0.message_content.type", "text"));
        assert!(add(&mut m, "contents.0.message_content.text", "a"));
        assert!(add(&mut m, "contents.1.message_content.type", "text"));
        assert!(!add(&mut m, "role", "user"));
        assert_eq!(
            Value::Object(m),
            json!({"content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]})
        );
        // The message's own content wins.
        let mut m = Map::from_iter([("content".to_string(), json!("whole"))]);
        assert!(add(&mut m, "contents.0.message_content.text", "a"));
        assert_eq!(m["content"], json!("whole"));
    }
}
