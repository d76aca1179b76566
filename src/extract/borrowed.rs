//! JSON text parsed into a tree that borrows its strings from the text,
//! for the readers that look through a model's output for call objects
//! ([`super::requested::walk`]) and copy out only the calls they find.
//!
//! Parsing into `serde_json::Value` builds a map per object and a string
//! per key and string value; most of a model output's nodes are neither a
//! call nor read, so here a string is copied only when the text escapes
//! it, and an object is a list of its entries. An object's entries are
//! kept as `serde_json::Map` keeps them (sorted by key, the last of a
//! repeated key winning), so a walk sees the same keys in the same order
//! as over the text's `Value`, and [`Json::to_value`] gives that `Value`.
//!
//! The text is read by a parser of its own rather than through serde's
//! visitors: each container is allocated once, at its exact size (its
//! children are gathered on a stack shared by the whole parse), and a
//! string without escapes is only scanned, eight bytes at a time. It
//! accepts exactly what `serde_json` accepts (`serde_json::from_str::<Value>`,
//! nesting limit included): where the text needs `serde_json`'s own reading
//! (a number, a string with a `\u` escape) that token is handed to it.

use std::borrow::Cow;

use serde_json::{Map, Value};

/// A JSON value whose strings borrow from the text it was parsed from.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Json<'a> {
    /// `null`, a boolean or a number, as `serde_json` reads it.
    Scalar(Value),
    Str(Cow<'a, str>),
    Array(Vec<Json<'a>>),
    /// Sorted by key, each key once (see the module's doc).
    Object(Vec<(Cow<'a, str>, Json<'a>)>),
}

impl<'a> Json<'a> {
    /// `text` parsed, or `None` where `serde_json` would fail on it.
    pub(crate) fn parse(text: &'a str) -> Option<Json<'a>> {
        let mut p = Parser {
            text,
            at: 0,
            depth: 0,
            // Enough for most texts' open containers' children.
            items: Vec::with_capacity(16),
            entries: Vec::with_capacity(16),
        };
        let v = p.value()?;
        p.skip_space();
        (p.at == text.len()).then_some(v)
    }

    pub(crate) fn as_str(&self) -> Option<&str> {
        match self {
            Json::Str(s) => Some(s),
            _ => None,
        }
    }

    /// The value of `key`, when this is an object that has it.
    pub(crate) fn get(&self, key: &str) -> Option<&Json<'a>> {
        match self {
            Json::Object(o) => o
                .binary_search_by(|(k, _)| k.as_ref().cmp(key))
                .ok()
                .map(|i| &o[i].1),
            _ => None,
        }
    }

    /// The `serde_json::Value` the same text parses into.
    pub(crate) fn to_value(&self) -> Value {
        match self {
            Json::Scalar(v) => v.clone(),
            Json::Str(s) => Value::String(s.to_string()),
            Json::Array(items) => Value::Array(items.iter().map(Json::to_value).collect()),
            Json::Object(o) => Value::Object(object_to_map(o)),
        }
    }
}

/// An object's entries as the `serde_json::Map` of the same text.
fn object_to_map(o: &[(Cow<'_, str>, Json<'_>)]) -> Map<String, Value> {
    o.iter()
        .map(|(k, v)| (k.to_string(), v.to_value()))
        .collect()
}

/// How many bytes at the start of `bytes` are none of a quote, a
/// backslash or a control character: eight bytes at a time (as
/// `serde_json` scans strings), the rest left to the caller's loop.
fn plain_run(bytes: &[u8]) -> usize {
    const ONES: u64 = u64::from_ne_bytes([1; 8]);
    const HIGH: u64 = ONES << 7;
    let mut n = 0;
    for chunk in bytes.chunks_exact(8) {
        let w = u64::from_le_bytes([
            chunk[0], chunk[1], chunk[2], chunk[3], chunk[4], chunk[5], chunk[6], chunk[7],
        ]);
        let quote = w ^ (ONES * u64::from(b'"'));
        let slash = w ^ (ONES * u64::from(b'\\'));
        // A byte's high bit is set where it is zero (after the `^`), or
        // below 0x20; the lowest such byte is exact (what a borrow marks
        // lies above it).
        let found = (quote.wrapping_sub(ONES) & !quote)
            | (slash.wrapping_sub(ONES) & !slash)
            | (w.wrapping_sub(ONES * 0x20) & !w);
        let found = found & HIGH;
        if found != 0 {
            return n + (found.trailing_zeros() / 8) as usize;
        }
        n += 8;
    }
    n
}

/// `serde_json`'s limit of nested containers: the 128th fails.
const MAX_NESTING: usize = 128;

/// A parse of one text: the position, the containers open, and the
/// children of the open containers (each container's at the stack's top).
struct Parser<'a> {
    text: &'a str,
    at: usize,
    depth: usize,
    items: Vec<Json<'a>>,
    entries: Vec<(Cow<'a, str>, Json<'a>)>,
}

impl<'a> Parser<'a> {
    fn peek(&self) -> Option<u8> {
        self.text.as_bytes().get(self.at).copied()
    }

    /// JSON's whitespace, as `serde_json` skips it.
    fn skip_space(&mut self) {
        while let Some(b' ' | b'\n' | b'\t' | b'\r') = self.peek() {
            self.at += 1;
        }
    }

    fn value(&mut self) -> Option<Json<'a>> {
        self.skip_space();
        match self.peek()? {
            b'"' => self.string().map(Json::Str),
            b'[' => self.nested(Parser::array),
            b'{' => self.nested(Parser::object),
            b't' => self.word("true", Value::Bool(true)),
            b'f' => self.word("false", Value::Bool(false)),
            b'n' => self.word("null", Value::Null),
            b'-' | b'0'..=b'9' => self.number(),
            _ => None,
        }
    }

    fn nested(&mut self, read: fn(&mut Self) -> Option<Json<'a>>) -> Option<Json<'a>> {
        self.depth += 1;
        if self.depth >= MAX_NESTING {
            return None;
        }
        let v = read(self);
        self.depth -= 1;
        v
    }

    fn word(&mut self, word: &str, v: Value) -> Option<Json<'a>> {
        let end = self.at + word.len();
        (self.text.as_bytes().get(self.at..end)? == word.as_bytes()).then(|| {
            self.at = end;
            Json::Scalar(v)
        })
    }

    /// A number: its bytes handed to `serde_json` (which reads its value,
    /// range and form); bytes that may follow a number end it.
    fn number(&mut self) -> Option<Json<'a>> {
        let start = self.at;
        let bytes = self.text.as_bytes();
        while let Some(b'0'..=b'9' | b'-' | b'+' | b'.' | b'e' | b'E') = bytes.get(self.at) {
            self.at += 1;
        }
        let v: Value = serde_json::from_str(self.text.get(start..self.at)?).ok()?;
        Some(Json::Scalar(v))
    }

    /// A string (at its opening quote): borrowed from the text, or, when
    /// escaped, read by `serde_json`.
    fn string(&mut self) -> Option<Cow<'a, str>> {
        let bytes = self.text.as_bytes();
        let start = self.at + 1;
        let mut i = start + plain_run(bytes.get(start..)?);
        loop {
            match *bytes.get(i)? {
                b'"' => break,
                b'\\' => return self.escaped(),
                // Control characters must be escaped.
                0..=0x1f => return None,
                _ => i += 1,
            }
        }
        self.at = i + 1;
        self.text.get(start..i).map(Cow::Borrowed)
    }

    /// An escaped string (at its opening quote), as `serde_json` reads it:
    /// the one-letter escapes here; a string with a `\\u` escape (whose
    /// surrogates `serde_json` checks) is handed to `serde_json`.
    fn escaped(&mut self) -> Option<Cow<'a, str>> {
        let bytes = self.text.as_bytes();
        let start = self.at + 1;
        let mut out: Vec<u8> = Vec::with_capacity(32);
        let mut i = start;
        loop {
            let run = plain_run(bytes.get(i..)?);
            out.extend_from_slice(bytes.get(i..i + run)?);
            i += run;
            let b = *bytes.get(i)?;
            match b {
                b'"' => break,
                b'\\' => {
                    let unescaped = match *bytes.get(i + 1)? {
                        e @ (b'"' | b'\\' | b'/') => e,
                        b'b' => 0x08,
                        b'f' => 0x0c,
                        b'n' => b'\n',
                        b'r' => b'\r',
                        b't' => b'\t',
                        b'u' => return self.escaped_by_serde(),
                        _ => return None,
                    };
                    out.push(unescaped);
                    i += 2;
                }
                // Control characters must be escaped.
                0..=0x1f => return None,
                _ => {
                    out.push(b);
                    i += 1;
                }
            }
        }
        self.at = i + 1;
        // Bytes of the text (whole characters) and ASCII escapes.
        String::from_utf8(out).ok().map(Cow::Owned)
    }

    /// [`Parser::escaped`] read by `serde_json` itself.
    fn escaped_by_serde(&mut self) -> Option<Cow<'a, str>> {
        let bytes = self.text.as_bytes();
        let mut i = self.at + 1;
        loop {
            match *bytes.get(i)? {
                b'"' => break,
                b'\\' => i += 2,
                _ => i += 1,
            }
        }
        let s: String = serde_json::from_str(self.text.get(self.at..=i)?).ok()?;
        self.at = i + 1;
        Some(Cow::Owned(s))
    }

    /// An array (at its `[`): its items gathered on the stack, then moved
    /// into a list of their exact number.
    fn array(&mut self) -> Option<Json<'a>> {
        self.at += 1;
        let base = self.items.len();
        self.skip_space();
        if self.peek()? == b']' {
            self.at += 1;
            return Some(Json::Array(Vec::new()));
        }
        let ok = loop {
            let Some(v) = self.value() else {
                break false;
            };
            self.items.push(v);
            self.skip_space();
            match self.peek() {
                Some(b',') => self.at += 1,
                Some(b']') => {
                    self.at += 1;
                    break true;
                }
                _ => break false,
            }
        };
        let items: Vec<Json<'a>> = self.items.drain(base..).collect();
        ok.then_some(Json::Array(items))
    }

    /// An object (at its `{`): as [`Parser::array`], its entries sorted by
    /// key and each key kept once, as `serde_json::Map` keeps them.
    fn object(&mut self) -> Option<Json<'a>> {
        self.at += 1;
        let base = self.entries.len();
        self.skip_space();
        if self.peek()? == b'}' {
            self.at += 1;
            return Some(Json::Object(Vec::new()));
        }
        let ok = loop {
            let Some(entry) = self.entry() else {
                break false;
            };
            self.entries.push(entry);
            self.skip_space();
            match self.peek() {
                Some(b',') => self.at += 1,
                Some(b'}') => {
                    self.at += 1;
                    break true;
                }
                _ => break false,
            }
        };
        if !ok {
            self.entries.truncate(base);
            return None;
        }
        let new = &mut self.entries[base..];
        // A stable sort keeps a repeated key's entries in text order.
        if !new.is_sorted_by(|a, b| a.0 < b.0) {
            new.sort_by(|a, b| a.0.cmp(&b.0));
        }
        let mut entries: Vec<(Cow<'a, str>, Json<'a>)> = self.entries.drain(base..).collect();
        // `later` is dropped when its key is `kept`'s: its value goes first
        // (the last of a repeated key wins).
        entries.dedup_by(|later, kept| {
            let same = later.0 == kept.0;
            if same {
                std::mem::swap(later, kept);
            }
            same
        });
        Some(Json::Object(entries))
    }

    /// One `"key": value` of an object.
    fn entry(&mut self) -> Option<(Cow<'a, str>, Json<'a>)> {
        self.skip_space();
        if self.peek()? != b'"' {
            return None;
        }
        let key = self.string()?;
        self.skip_space();
        if self.peek()? != b':' {
            return None;
        }
        self.at += 1;
        Some((key, self.value()?))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The tree gives back the `Value` of the same text, repeated keys,
    /// escapes, numbers and nesting included, and fails where it fails.
    #[test]
    fn gives_the_value_serde_json_reads() {
        let texts = [
            r#"{"b": 1, "a": [true, null, -3, 2.5], "b": {"x\"y": "\u00e9t\u00e9"}, "b": 3}"#,
            r#"{"n": 1e400}"#,
            r#"[{"type": "tool_call", "id": "c1", "name": "f", "arguments": {"k": "v"}}]"#,
            r#""plain""#,
            "18446744073709551615",
            r#"{"z": {}, "y": [], "x": "", "z": 0}"#,
        ];
        for t in texts {
            let want: Result<Value, _> = serde_json::from_str(t);
            let got = Json::parse(t).map(|j| j.to_value());
            assert_eq!(got, want.ok(), "{t}");
        }
        for bad in [r#"{"a": 1"#, "[1, 2] x", "", "{'a': 1}"] {
            assert!(serde_json::from_str::<Value>(bad).is_err());
            assert_eq!(Json::parse(bad), None, "{bad}");
        }
        let j = Json::parse(r#"{"k": 1, "k": "last", "a": "x"}"#);
        let j = j.as_ref();
        assert_eq!(
            j.and_then(|j| j.get("k")).and_then(Json::as_str),
            Some("last")
        );
        assert_eq!(j.and_then(|j| j.get("none")), None);
        // Strings without escapes are borrowed, not copied.
        let text = r#"{"key": "value"}"#;
        match Json::parse(text) {
            Some(Json::Object(o)) => {
                assert!(matches!(o[0].0, Cow::Borrowed(_)));
                assert!(matches!(o[0].1, Json::Str(Cow::Borrowed(_))));
            }
            other => panic!("{other:?}"),
        }
    }

    /// The parser accepts what `serde_json` accepts and reads the same
    /// value: texts of every kind of token, then each cut short and each
    /// with one byte taken out or changed.
    #[test]
    fn accepts_and_reads_what_serde_json_does() {
        let same = |t: &str| {
            let want: Option<Value> = serde_json::from_str(t).ok();
            assert_eq!(Json::parse(t).map(|j| j.to_value()), want, "{t:?}");
        };
        let texts = [
            r#"{"choices": [{"message": {"role": "assistant", "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "get_weather", "arguments": "{\"city\": \"Paris\"}"}}]}}], "usage": {"total": 12, "cost": 0.5e-3}}"#,
            r#"[{"role": "model", "parts": [{"function_call": {"id": "g1", "args": {"v": -5, "w": [1.5, 2E+3, 0, -0, 1e-400]}, "name": "e"}}]}]"#,
            " \t\r\n[true, false, null, \"\\u00e9\\ud83d\\ude00\\n\\/\\b\\f\\r\\t\"] \n",
            r#"{"a": {"b": {"c": []}}, "a": 1, "\u0061": 2, "": {}}"#,
            r#"["\ud800", "\udc00x", "\u12", "\x", "caf\u00e9"]"#,
            r#"[01, 1.e5, .5, 1e, -, +1, 18446744073709551616, -9223372036854775809, 1e308, 2e308]"#,
            "[\"tab\there\", \"nl\nin\"]",
            r#"{"k" 1}"#,
            r#"{1: 2}"#,
            "[1 2]",
            "nul",
            "tru",
            "\"unterminated",
            "[\"\u{e9}t\u{e9}\", {\"\u{1f600}\": \"\u{1f600}\"}]",
            r#"["\ud800"]"#,
            r#"["\udc00"]"#,
            r#"["\ud800\udc00", "\ud800\u0041", "\ud800x"]"#,
            r#"{"arguments": "{\"city\": \"Par\\\"is\", \"n\": \"a\/b\\\\c\\td\"}", "x\ty": "\b\f\n\r"}"#,
            "[\"caf\u{e9}\\n\u{1f600}\\\"\"]",
        ];
        for t in texts {
            same(t);
            let bytes = t.as_bytes();
            for i in 0..bytes.len() {
                for cut in [&bytes[..i], &[&bytes[..i], &bytes[i + 1..]].concat()[..]] {
                    if let Ok(t) = std::str::from_utf8(cut) {
                        same(t);
                    }
                }
                for b in [b'"', b'\\', b',', b']', b'}', b' ', 0x01, b'9'] {
                    let mut changed = bytes.to_vec();
                    changed[i] = b;
                    if let Ok(t) = std::str::from_utf8(&changed) {
                        same(t);
                    }
                }
            }
        }
        // serde_json's nesting limit: 127 containers, not 128.
        for n in [126, 127, 128, 129] {
            same(&format!("{}{}", "[".repeat(n), "]".repeat(n)));
            same(&format!("{}1{}", "{\"a\":".repeat(n), "}".repeat(n)));
        }
    }
}
