//! MCP embedded resource blocks that hold text (docs/conventions.md,
//! "Result wrappers", `mcp_content`).
//!
//! An MCP tool may answer with a resource it embeds rather than a text
//! block: `{"type": "resource", "resource": {"uri", "mimeType", "text"}}`.
//! Its `text` is what the tool returned, as a text block's `text` is, so
//! `mcp_content` reads it the same way. A resource of bytes (`blob`), an
//! image or a resource link is no text and keeps the content whole.

use serde_json::{Map, Value};

/// The keys an embedded resource block may have: MCP's `annotations` and
/// `_meta`, and `meta` as the Python SDK's models dump it.
const BLOCK_KEYS: [&str; 5] = ["type", "resource", "annotations", "_meta", "meta"];

/// The keys of a text resource's contents, as the protocol writes them and
/// as the Python SDK's models dump them (`mime_type`, `meta`).
const CONTENTS_KEYS: [&str; 6] = ["uri", "mimeType", "mime_type", "text", "_meta", "meta"];

/// An embedded resource block whose resource holds text and a `uri`, with
/// no key a resource block does not have (a `blob` is not one of them).
pub(super) fn is_text_resource_block(v: &Value) -> bool {
    v.as_object().is_some_and(is_text_resource_block_map)
}

pub(super) fn is_text_resource_block_map(o: &Map<String, Value>) -> bool {
    // The type first: most blocks are text blocks and stop here.
    o.get("type").and_then(Value::as_str) == Some("resource")
        && o.keys().all(|k| BLOCK_KEYS.contains(&k.as_str()))
        && o.get("resource")
            .and_then(Value::as_object)
            .is_some_and(|r| {
                r.get("text").is_some_and(Value::is_string)
                    && r.get("uri").is_some_and(Value::is_string)
                    && r.keys().all(|k| CONTENTS_KEYS.contains(&k.as_str()))
            })
}

/// The text of a text block (`text`) or of a text resource block
/// (`resource.text`), taken out of it; `None` for any other block.
pub(super) fn take_block_text(v: Value) -> Option<Value> {
    let Value::Object(mut o) = v else {
        return None;
    };
    if is_text_resource_block_map(&o) {
        return match o.remove("resource") {
            Some(Value::Object(mut r)) => r.remove("text"),
            _ => None,
        };
    }
    o.remove("text")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_text_resource_is_a_block_of_text() {
        let b = json!({"type": "resource",
            "resource": {"uri": "note://a/1", "mimeType": "text/markdown", "text": "# hi"}});
        assert!(is_text_resource_block(&b));
        assert_eq!(take_block_text(b), Some(json!("# hi")));
        // The Python SDK's dump: snake_case and nulls.
        let d = json!({"type": "resource", "annotations": null, "meta": null,
            "resource": {"uri": "note://a/2", "mime_type": null, "meta": null, "text": "x"}});
        assert!(is_text_resource_block(&d));
        assert_eq!(
            take_block_text(json!({"type": "text", "text": "t"})),
            Some(json!("t"))
        );
    }

    #[test]
    fn blobs_links_and_other_shapes_are_no_text() {
        let cases = [
            // Bytes, not text.
            json!({"type": "resource", "resource": {"uri": "f://x", "blob": "AAEC"}}),
            // Both: not a shape the protocol writes.
            json!({"type": "resource", "resource": {"uri": "f://x", "text": "a", "blob": "AA"}}),
            // A link names a resource, it does not hold one.
            json!({"type": "resource_link", "uri": "f://x", "name": "x"}),
            // No uri: some other object that happens to say `resource`.
            json!({"type": "resource", "resource": {"text": "a"}}),
            // A key a resource block does not have.
            json!({"type": "resource", "resource": {"uri": "f://x", "text": "a"}, "id": 3}),
            json!({"type": "resource", "resource": "f://x"}),
            json!({"type": "image", "data": "AA", "mimeType": "image/png"}),
        ];
        for c in cases {
            assert!(!is_text_resource_block(&c), "{c}");
        }
    }
}
