//! An object or list a LlamaIndex.TS tool returned, as its tool message
//! holds it: `JSON.stringify(output, null, 2)` with every pair of double
//! quotes removed (docs/conventions.md, "Quote-stripped results").
//!
//! `{"city": "Paris", "sunny": true}` reaches the model as
//! `{\n  city: Paris,\n  sunny: true\n}`. The layout tells the structure:
//! each item on a line of its own, two spaces deeper per level, a comma
//! after every item but the last, the closing bracket on a line at its
//! opener's depth (an empty object or list stays `{}` or `[]` inline). So
//! an item is last exactly when the next line closes its container, and a
//! comma ending a last item belongs to its value.
//!
//! Read back: `true`, `false`, `null` and JSON numbers as such, any other
//! value as a string. A string the tool returned as `"3"` or `"true"`
//! reads as the number or the boolean: the quotes that told them apart are
//! gone. What the layout does not settle keeps the whole text as it is: a
//! line holding `: ` twice (key or value?), a backslash (`JSON.stringify`
//! escaped something, which the stripping garbles), a `"` left over (an odd
//! number of quotes), a tab or other control character, an indentation or
//! comma out of place, a key twice.

use serde_json::{Map, Value};

/// Deeper than this, the text stays text (no recursion without end).
const MAX_DEPTH: usize = 64;

/// The object or list that `text` was, when it has the layout above.
pub(super) fn read(text: &str) -> Option<Value> {
    let b = text.as_bytes();
    let open = *b.first()?;
    if !matches!(open, b'{' | b'[') || b.get(1) != Some(&b'\n') {
        return None;
    }
    if b.iter()
        .any(|&c| c == b'"' || c == b'\\' || (c < 0x20 && c != b'\n'))
    {
        return None;
    }
    let mut lines = Lines {
        lines: text.split('\n').collect(),
        at: 1,
    };
    let (value, comma) = lines.container(open, 0)?;
    (!comma && lines.at == lines.lines.len()).then_some(value)
}

/// The text's lines and the next one to read.
struct Lines<'a> {
    lines: Vec<&'a str>,
    at: usize,
}

impl<'a> Lines<'a> {
    /// The line `at`, stripped of `depth` levels of indentation.
    fn at_depth(&self, at: usize, depth: usize) -> Option<&'a str> {
        let line = self.lines.get(at)?;
        let body = line.get(depth * 2..)?;
        let indent = line.get(..depth * 2)?;
        (indent.bytes().all(|c| c == b' ') && !body.starts_with(' ')).then_some(body)
    }

    /// Whether line `at` closes a container at `depth` with `close`.
    fn closes(&self, at: usize, depth: usize, close: u8) -> bool {
        self.at_depth(at, depth)
            .is_some_and(|l| l.as_bytes().first() == Some(&close))
    }

    /// The container opened by `open` (`{` or `[`) on the line before
    /// `at`, its items at `depth + 1`, up to its closing line; and whether
    /// that line ends with a comma.
    fn container(&mut self, open: u8, depth: usize) -> Option<(Value, bool)> {
        if depth >= MAX_DEPTH {
            return None;
        }
        let close = if open == b'{' { b'}' } else { b']' };
        let mut object = Map::new();
        let mut list = Vec::new();
        loop {
            if self.closes(self.at, depth, close) {
                let rest = self.at_depth(self.at, depth)?.get(1..)?;
                self.at += 1;
                // An empty container is written inline, never over lines.
                if object.is_empty() && list.is_empty() {
                    return None;
                }
                let comma = match rest {
                    "" => false,
                    "," => true,
                    _ => return None,
                };
                let value = if open == b'{' {
                    Value::Object(object)
                } else {
                    Value::Array(list)
                };
                return Some((value, comma));
            }
            let body = self.at_depth(self.at, depth + 1)?;
            self.at += 1;
            let (key, item) = if open == b'{' {
                let (key, item) = body.split_once(": ")?;
                if item.contains(": ") || object.contains_key(key) {
                    return None;
                }
                (Some(key), item)
            } else {
                (None, body)
            };
            let value = self.item(item, depth + 1, close, depth)?;
            match key {
                Some(k) => {
                    object.insert(k.to_string(), value);
                }
                None => list.push(value),
            }
        }
    }

    /// One item's value from its text `item` (after the key), at `depth`
    /// in a container closed by `close` at `outer`: a comma must end it
    /// unless the next line closes the container.
    fn item(&mut self, item: &str, depth: usize, close: u8, outer: usize) -> Option<Value> {
        let (value, comma) = match item {
            "{" | "[" => self.container(item.as_bytes()[0], depth)?,
            _ => {
                let last = self.closes(self.at, outer, close);
                match (last, item.strip_suffix(',')) {
                    (true, _) => (scalar(item), false),
                    (false, Some(v)) => (scalar(v), true),
                    (false, None) => return None,
                }
            }
        };
        let last = self.closes(self.at, outer, close);
        (comma != last).then_some(value)
    }
}

/// A value written without quotes: the literals and numbers JSON has, an
/// empty object or list, else a string.
fn scalar(v: &str) -> Value {
    match v {
        "true" => Value::Bool(true),
        "false" => Value::Bool(false),
        "null" => Value::Null,
        "{}" => Value::Object(Map::new()),
        "[]" => Value::Array(Vec::new()),
        _ => number(v).unwrap_or_else(|| Value::String(v.to_string())),
    }
}

/// `v` as a JSON number, when it is exactly one (no space around it).
fn number(v: &str) -> Option<Value> {
    let first = v.as_bytes().first()?;
    if !(first.is_ascii_digit() || *first == b'-') || v.ends_with(|c: char| !c.is_ascii_digit()) {
        return None;
    }
    serde_json::from_str::<Value>(v)
        .ok()
        .filter(Value::is_number)
}

#[cfg(test)]
mod tests {
    use serde_json::{json, Value};

    use super::read;

    /// What LlamaIndex.TS makes of an object or list a tool returned: its
    /// pretty JSON with the quotes removed (no value here holds one).
    fn stripped(v: &Value) -> String {
        serde_json::to_string_pretty(v)
            .expect("a value encodes")
            .replace('"', "")
    }

    #[test]
    fn an_object_or_list_comes_back_with_its_scalars_typed() {
        for v in [
            json!({"city": "Lyon", "temp_c": 18, "sunny": true, "note": "light wind"}),
            json!({"name": "Le Grand Bleu", "stars": 4.5, "rooms": [{"kind": "twin", "free": 2}],
                   "tags": ["port", "calm"], "closed": null, "extras": {}, "none": []}),
            json!(["Quai 3", -7, false, ["a, b", "ends with,"], {"k": "v"}]),
            json!({"empty": "", "spaced": "  two spaces", "url": "https://x.test/a?b=1",
                   "id": "A-17", "brace": "{", "colon": "k:v"}),
        ] {
            let text = stripped(&v);
            assert_eq!(read(&text), Some(v.clone()), "{text}");
        }
    }

    #[test]
    fn a_string_of_digits_reads_as_the_number_it_looks_like() {
        // The quotes that told `"3"` from `3` are gone.
        assert_eq!(read("{\n  berth: 3\n}"), Some(json!({"berth": 3})));
        assert_eq!(read("{\n  code: 007\n}"), Some(json!({"code": "007"})));
    }

    #[test]
    fn what_the_layout_does_not_settle_stays_text() {
        for text in [
            // Two `: ` on a line: key or value?
            "{\n  a: b: c\n}",
            // Indentation out of place, a tab, a comma missing, the wrong closer.
            "{\n   a: 1\n}",
            "{\n\ta: 1\n}",
            "{\n  a: 1\n  b: 2\n}",
            "[\n  1\n}",
            // Escapes, a quote left over, a key twice.
            "{\n  a: x\\ny\n}",
            "{\n  a: say \"hi\n}",
            "{\n  a: 1,\n  a: 2\n}",
            // Not closed, something after the close, an empty container
            // over lines, a one-line object, YAML, plain JSON.
            "{\n  a: 1",
            "{\n  a: 1\n}\ntrailer",
            "{\n}",
            "{a: 1}",
            "a: 1\nb: 2",
            "{\n  \"a\": 1\n}",
        ] {
            assert_eq!(read(text), None, "{text:?}");
        }
    }
}
