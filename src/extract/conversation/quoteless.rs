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
//! So in the stripped text a quote of the tool's text is a lone `\` and a
//! backslash of it is `\\` (`JSON.stringify`'s escape, which lost nothing):
//! the JSON escape `\n` inside a string of the tool's text reads `\\n`,
//! an escaped quote `\"` reads `\\\`. The text is rebuilt by following the
//! JSON it was: outside a string a `\` opens one; inside, `\\` starts an
//! escape (a string's closing quote is never followed by another quote or
//! backslash) and a lone `\` closes it, which only `,` `:` `]` `}`, a space
//! or the end may follow. One case stays open: after the `\\` that starts
//! an escape, `\\` again is an escaped backslash, or an escaped quote and
//! the next `\`; the escaped quote is tried first, the other reading when
//! the text cannot be JSON so ([`MAX_TRIES`]).
//!
//! The text is taken as stripped only by the transformation's signature: it
//! opens an object or list, holds a stripped quote (`\`) and no `"` and no
//! control character (`JSON.stringify` escapes those; a `"` is left only
//! when the quotes were odd in number), and rebuilt it is a JSON object or
//! list; anything else stays as it is. A JSON text spread over lines (its
//! newlines escaped, so `\n` after a closing quote) is not rebuilt. A tool
//! returning an object (not its JSON text) loses the quotes of its keys and
//! strings alike (`hotel: Le Phare`, `stars: 3`): its layout tells the
//! structure back ([`pretty`]), though not the string `"3"` from the number.

mod pretty;

use serde_json::Value;

/// `v` with the quotes LlamaIndex.TS stripped put back, when it is such a
/// text (see the module's doc), or the object or list a tool returned
/// written so ([`pretty`]); anything else as it is.
pub(super) fn restored(v: Value) -> Value {
    match v {
        Value::String(text) if is_stripped(&text) => match restore(&text) {
            Some(x) => x,
            None => Value::String(text),
        },
        Value::String(text) => match pretty::read(&text) {
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

/// How many readings of one text are tried at most (each ambiguous escape
/// gives two; almost every text has none).
const MAX_TRIES: usize = 16;

/// A reading left to try: where in the stripped text it resumes (inside a
/// string of the tool's text, or at the start), how much of the rebuilt
/// text it keeps, and the text it puts after that.
struct Alternative {
    at: usize,
    in_string: bool,
    kept: usize,
    put: &'static str,
}

/// The tool's text rebuilt from the stripped `text`, when that is a JSON
/// object or list (see the module's doc).
fn restore(text: &str) -> Option<Value> {
    let b = text.as_bytes();
    let mut out = String::with_capacity(text.len() + 16);
    let mut pending: Vec<Alternative> = Vec::new();
    let mut resume = Alternative {
        at: 0,
        in_string: false,
        kept: 0,
        put: "",
    };
    for _ in 0..MAX_TRIES {
        out.truncate(resume.kept);
        out.push_str(resume.put);
        if let Some(v) = rebuild(
            text,
            b,
            (resume.at, resume.in_string),
            &mut out,
            &mut pending,
        )
        .and_then(|()| serde_json::from_str::<Value>(&out).ok())
        .filter(|v| v.is_object() || v.is_array())
        {
            return Some(v);
        }
        resume = pending.pop()?;
    }
    None
}

/// Rebuilds `text` (its bytes `b`) into `out` from byte `at`, inside a
/// string of the tool's text or not. `None`: this reading cannot be JSON.
/// An ambiguous escape pushes its other reading onto `pending`.
fn rebuild(
    text: &str,
    b: &[u8],
    (mut at, mut in_string): (usize, bool),
    out: &mut String,
    pending: &mut Vec<Alternative>,
) -> Option<()> {
    while let Some(i) = memchr::memchr(b'\\', &b[at..]).map(|i| at + i) {
        // `\` is ASCII, so the text splits on a character boundary.
        out.push_str(text.get(at..i)?);
        at = i + 1;
        if !in_string {
            out.push('"');
            in_string = true;
        } else if b.get(at) != Some(&b'\\') {
            // A lone `\`: the string closes.
            out.push('"');
            in_string = false;
            let next = b[at..].iter().find(|c| **c != b' ');
            if !matches!(next, None | Some(b',' | b':' | b']' | b'}')) {
                return None;
            }
        } else {
            // `\\`: the tool's backslash, starting an escape.
            out.push('\\');
            at += 1;
            match (b.get(at), b.get(at + 1)) {
                (Some(b'\\'), Some(b'\\')) => {
                    // An escaped quote, the next `\` read on; or an
                    // escaped backslash (tried when the first fails).
                    pending.push(Alternative {
                        at: at + 2,
                        in_string: true,
                        kept: out.len(),
                        put: "\\",
                    });
                    out.push('"');
                    at += 1;
                }
                (Some(b'\\'), _) => {
                    out.push('"');
                    at += 1;
                }
                (Some(c), _) if b"/bfnrtu".contains(c) => {}
                _ => return None,
            }
        }
    }
    out.push_str(text.get(at..)?);
    (!in_string).then_some(())
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
    fn json_text_with_escapes_comes_back() {
        for v in [
            // A newline in a string (the JSON escape `\n` in the tool's text).
            json!({"label": "Café Hafen\nTor 3 – ミナト", "chars": 12}),
            // Quotes and backslashes of the tool's strings, and `\u` escapes
            // (Python's `json.dumps` writes every non-ASCII character so).
            json!({"quote": "say \"ahoy\"", "path": "D:\\logs\\x", "n": 2}),
            // (An even number of quotes in all: an odd last one stays.)
            json!(["\"", "\\", "", "a, b", "tab\there", "\""]),
            json!({"empty": "", "after": "x\ny", "end": "\\"}),
            json!({"k\"e\"y": {"inner": ["\"\"", "a\\b", "\\\\"]}}),
        ] {
            for tool_text in [v.to_string(), python_dumps(&v)] {
                let text = stripped(&tool_text);
                assert!(!text.contains('"'), "{text}");
                assert_eq!(restored(Value::String(text)), v, "{tool_text}");
            }
        }
    }

    #[test]
    fn an_escaped_quote_is_read_before_an_escaped_backslash() {
        // `\\` then `\"` and `\"` then `\\` strip alike; the first reading
        // that is JSON is taken.
        let text = stripped(r#"["\\\"", "\"\\"]"#);
        assert_eq!(stripped(r#"["\"\\", "\"\\"]"#), text);
        assert_eq!(restored(Value::String(text)), json!(["\"\\", "\"\\"]));
    }

    /// Python's `json.dumps`: `", "` and `": "` between items, non-ASCII
    /// escaped as `\u`.
    fn python_dumps(v: &Value) -> String {
        let mut out = String::new();
        for c in serde_json::to_string(v).expect("a value encodes").chars() {
            match c {
                c if !c.is_ascii() => out.push_str(&format!("\\u{:04x}", u32::from(c))),
                c => out.push(c),
            }
        }
        // Separators outside strings only: the strings here hold none
        // (and no character past the Basic Multilingual Plane).
        out.replace("\",\"", "\", \"").replace("\":", "\": ")
    }

    #[test]
    fn what_the_transformation_cannot_have_written_stays_text() {
        for text in [
            // An odd number of quotes: the last one stays.
            stripped(r#"{"a": "b"} ""#),
            // A JSON text spread over lines (its newlines escaped).
            stripped("{\n  \"a\": 1\n}"),
            // A backslash of the tool's text before no JSON escape letter.
            r"{\a\:\C:\\q\}".to_string(),
            // A string closing before a letter, and one never closed.
            r"{\a\b\:1}".to_string(),
            r"{\a\:\x}".to_string(),
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
