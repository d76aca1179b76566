//! Tool results whose text lost its double quotes on the way to the model
//! (docs/conventions.md, "Quote-stripped results").
//!
//! LlamaIndex.TS (`@llamaindex/core`, 0.12 and the versions run here) writes
//! a tool's output into the tool message with `stringifyJSONToMessageContent`:
//! `JSON.stringify(output, null, 2).replace(/"([^"]*)"/g, "$1")`, which
//! removes the quotes in pairs. A tool returning JSON text (`{"hotel":"Le
//! Phare","stars":3}`) becomes `{\hotel\:\Le Phare\,\stars\:3}`: the text's
//! own quotes were escaped as `\"` by `JSON.stringify` and lost their `"`.
//!
//! Putting a `"` back for every `\` undoes that exactly when the tool's text
//! held no backslash and no control character (which `JSON.stringify`
//! escapes as `\\`, `\n`, `\u0001`), and held an even number of quotes (with
//! an odd number the last quote stays, and the text is left alone here).
//! A text with a backslash may give the same stripped text as a JSON one:
//! `{"a":\}` (no JSON) and `{"a":""}` both become `{\a\:\\}`. So a text is
//! taken as stripped only by the transformation's signature: it opens an
//! object or list, holds a stripped quote (`\`) and no `"` and no control
//! character, and with the quotes put back is a JSON object or list;
//! anything else stays as it is. A tool returning an object (not its JSON
//! text) loses the quotes of its keys and strings alike (`hotel: Le Phare`,
//! `stars: 3`): no reader can tell the string `"3"` from the number there,
//! and such text stays text.

use serde_json::Value;

/// `v` with the quotes LlamaIndex.TS stripped put back, when it is such a
/// text (see the module's doc); anything else as it is.
pub(super) fn restored(v: Value) -> Value {
    match v {
        Value::String(text) if is_stripped(&text) => match restore(&text) {
            Some(x) => x,
            None => Value::String(text),
        },
        other => other,
    }
}

/// The cheap look: the text opens an object or list, holds a stripped quote,
/// and nothing the transformation never leaves (a `"`, a control character).
/// JSON text fails at its first quote, a byte or two in.
fn is_stripped(text: &str) -> bool {
    let b = text.as_bytes();
    matches!(b.first(), Some(b'{' | b'['))
        && memchr::memchr(b'"', b).is_none()
        && memchr::memchr(b'\\', b).is_some()
        && !b.iter().any(|c| *c < 0x20)
}

/// The text with a `"` for every `\`, when that is a JSON object or list.
fn restore(text: &str) -> Option<Value> {
    let quoted = text.replace('\\', "\"");
    serde_json::from_str::<Value>(&quoted)
        .ok()
        .filter(|v| v.is_object() || v.is_array())
}

#[cfg(test)]
mod tests {
    use serde_json::{json, Value};

    use super::restored;

    /// What LlamaIndex.TS's `stringifyJSONToMessageContent` makes of a
    /// tool's text output: `JSON.stringify` of the string, then its quotes
    /// removed in pairs.
    fn stripped(tool_text: &str) -> String {
        let encoded = serde_json::to_string(tool_text).expect("a string encodes");
        let mut out = String::new();
        let mut pending: Option<String> = None;
        for c in encoded.chars() {
            if c == '"' {
                pending = match pending.take() {
                    // A pair closes: the text between stays, quotes go.
                    Some(between) => {
                        out.push_str(&between);
                        None
                    }
                    None => Some(String::new()),
                };
            } else if let Some(p) = pending.as_mut() {
                p.push(c);
            } else {
                out.push(c);
            }
        }
        // An unpaired quote stays, with what follows it.
        if let Some(rest) = pending {
            out.push('"');
            out.push_str(&rest);
        }
        out
    }

    #[test]
    fn json_text_without_backslashes_comes_back_exactly() {
        for v in [
            json!({"room": "Blue Lagoon", "floor": 4, "ok": true, "n": null}),
            json!([{"seat": "12A"}, {"seat": "12B"}]),
            json!({"nested": {"list": [1, 2.5, "x y"]}, "empty": ""}),
        ] {
            let text = stripped(&v.to_string());
            assert!(!text.contains('"'), "{text}");
            assert_eq!(restored(Value::String(text)), v);
        }
    }

    #[test]
    fn what_the_transformation_cannot_have_written_stays_text() {
        for text in [
            // A text with a backslash of its own: no JSON with the quotes
            // put back.
            stripped(r#"{"path": "C:\\temp"}"#),
            // An odd number of quotes: the last one stays.
            stripped(r#"{"a": "b"} ""#),
            // A JSON text spread over lines (its newlines escaped).
            stripped("{\n  \"a\": 1\n}"),
            // Plain text, and a quoted object as any tool may return it.
            "rented".to_string(),
            r#"{"a": 1}"#.to_string(),
            r"{\a\: oops}".to_string(),
        ] {
            let v = Value::String(text.clone());
            assert_eq!(restored(v.clone()), v, "{text}");
        }
        assert_eq!(restored(json!({"a": 1})), json!({"a": 1}));
    }
}
