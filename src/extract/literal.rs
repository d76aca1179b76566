//! Python literals as JSON values: some instrumentations record a tool's
//! arguments as `str(dict)` (`{'city': 'Paris', 'ok': True, 'n': None}`).
//! A container literal (dict, list, tuple) of strings (either quote, the
//! escapes `repr` writes), numbers, `True`, `False` and `None` is read
//! without evaluating anything; anything else (a set, bytes, a call, a name,
//! `inf`, deeper nesting than JSON values get) is no literal, and the text
//! stays text.

use serde_json::{Map, Number, Value};

/// Nesting past this many levels is no literal (as JSON text past it
/// stays text: `canonical::too_deep`).
const MAX_DEPTH: usize = 100;

/// `text` as a JSON value, when it is a Python dict, list or tuple literal
/// (tuples become lists; dict keys that are numbers, `True`, `False` or
/// `None` become their JSON text, as `json.dumps` writes them).
pub(crate) fn parse(text: &str) -> Option<Value> {
    let text = text.trim();
    if !text.starts_with(['{', '[', '(']) {
        return None;
    }
    let mut p = Parser {
        s: text.as_bytes(),
        at: 0,
        reprs: false,
    };
    let v = p.value(0)?;
    p.space();
    // `(1)` is the number 1: a scalar stays text.
    (p.at == p.s.len() && (v.is_object() || v.is_array())).then_some(v)
}

/// The dict, list or tuple literal at the start of `text` (spaces before
/// it allowed, anything after it), and the bytes of `text` up to its end:
/// [`parse`] for a value that text follows, read in one pass.
pub(crate) fn parse_prefix(text: &str) -> Option<(Value, usize)> {
    let start = text.len() - text.trim_start().len();
    if !text[start..].starts_with(['{', '[', '(']) {
        return None;
    }
    let mut p = Parser {
        s: text.as_bytes(),
        at: start,
        reprs: false,
    };
    let v = p.value(0)?;
    (v.is_object() || v.is_array()).then_some((v, p.at))
}

/// The key [`parse_repr`] gives a dataclass's name.
pub(crate) const CLASS_KEY: &str = "__class__";

/// `text` as a JSON value when it is wholly the `repr()` of a dataclass
/// instance (`ChatMessage(_role=<ChatRole.USER: 'user'>, _content=[...])`):
/// keyword fields whose values are literals, enum members (their value) or
/// such instances again, each instance an object with its class name under
/// [`CLASS_KEY`]. Nothing is evaluated; anything else is `None`.
pub(crate) fn parse_repr(text: &str) -> Option<Value> {
    whole_with_reprs(text).filter(|v| v.get(CLASS_KEY).is_some())
}

/// `text` as a JSON value when it is wholly a literal whose values may be
/// such instances and enum members ([`parse_repr`]) at any depth: a dict,
/// list or tuple of them (`{'messages': [ToolMessage(content='x')]}`), or
/// one instance.
pub(crate) fn parse_with_reprs(text: &str) -> Option<Value> {
    whole_with_reprs(text).filter(|v| v.is_object() || v.is_array())
}

/// `text` wholly one literal whose values may be instances and enum members.
fn whole_with_reprs(text: &str) -> Option<Value> {
    let mut p = Parser {
        s: text.trim().as_bytes(),
        at: 0,
        reprs: true,
    };
    let v = p.value(0)?;
    p.space();
    (p.at == p.s.len()).then_some(v)
}

/// `text` as the keyword fields Python's `repr()` writes for a pydantic
/// model (`content='x' name='y' n=3`): `name=literal` pairs one space apart,
/// in order, each value a literal (a string, number, `True`, `False`,
/// `None`, dict, list or tuple); `None` for anything else.
pub(crate) fn keyword_fields(text: &str) -> Option<Vec<(String, Value)>> {
    let mut p = Parser {
        s: text.trim().as_bytes(),
        at: 0,
        reprs: false,
    };
    let mut out = Vec::new();
    loop {
        let start = p.at;
        while p
            .peek()
            .is_some_and(|c| c.is_ascii_alphanumeric() || c == b'_')
        {
            p.at += 1;
        }
        let name = std::str::from_utf8(&p.s[start..p.at]).ok()?;
        if name.is_empty()
            || name.starts_with(|c: char| c.is_ascii_digit())
            || p.peek() != Some(b'=')
        {
            return None;
        }
        p.at += 1;
        if matches!(p.peek(), Some(b' ' | b'\t' | b'\n' | b'\r')) {
            return None;
        }
        out.push((name.to_string(), p.value(0)?));
        match p.peek() {
            None => return Some(out),
            Some(b' ') => p.at += 1,
            Some(_) => return None,
        }
    }
}

/// The fields of `text`, in order, when it is wholly pydantic's `str()` of
/// a model (`type='image' url='data:...' detail=None`): [`keyword_fields`]
/// with at least two fields, no name twice. One `name=value` is too little
/// to tell from prose; `None` for anything else.
pub(crate) fn model_str(text: &str) -> Option<Vec<(String, Value)>> {
    let fields = keyword_fields(text)?;
    let mut names: Vec<&str> = fields.iter().map(|(k, _)| k.as_str()).collect();
    names.sort_unstable();
    names.dedup();
    (fields.len() >= 2 && names.len() == fields.len()).then_some(fields)
}

struct Parser<'a> {
    s: &'a [u8],
    at: usize,
    /// Also reads a dataclass's `repr()` (`Name(field=value, ...)`) and an
    /// enum member's (`<Role.USER: 'user'>`): [`parse_repr`].
    reprs: bool,
}

impl Parser<'_> {
    fn peek(&self) -> Option<u8> {
        self.s.get(self.at).copied()
    }

    fn space(&mut self) {
        while self
            .peek()
            .is_some_and(|c| matches!(c, b' ' | b'\t' | b'\n' | b'\r'))
        {
            self.at += 1;
        }
    }

    fn eat(&mut self, c: u8) -> bool {
        self.space();
        let here = self.peek() == Some(c);
        if here {
            self.at += 1;
        }
        here
    }

    fn value(&mut self, depth: usize) -> Option<Value> {
        // `depth` containers are open around this value.
        if depth >= MAX_DEPTH {
            return None;
        }
        self.space();
        match self.peek()? {
            b'{' => self.dict(depth),
            b'[' => self
                .sequence(b']', depth)
                .map(|(items, _)| Value::Array(items)),
            b'(' => {
                // `(x)` is x; `(x,)`, `()` and `(x, y)` are tuples.
                let (mut items, tuple) = self.sequence(b')', depth)?;
                Some(match (tuple, items.len()) {
                    (false, 1) => items.pop()?,
                    _ => Value::Array(items),
                })
            }
            b'\'' | b'"' => self.string().map(Value::String),
            b'u' | b'U' if matches!(self.s.get(self.at + 1), Some(b'\'' | b'"')) => {
                self.at += 1;
                self.string().map(Value::String)
            }
            b'<' if self.reprs => self.member(depth),
            c if self.reprs && (c.is_ascii_alphabetic() || c == b'_') => self.instance(depth),
            _ => self.scalar(),
        }
    }

    /// An identifier at the cursor (letters, digits, `_`, and `.` after the
    /// first character).
    fn ident(&mut self) -> Option<&str> {
        let start = self.at;
        while self.peek().is_some_and(|c| {
            c.is_ascii_alphanumeric() || c == b'_' || (c == b'.' && self.at > start)
        }) {
            self.at += 1;
        }
        let word = std::str::from_utf8(&self.s[start..self.at]).ok()?;
        (!word.is_empty() && !word.starts_with(|c: char| c.is_ascii_digit())).then_some(word)
    }

    /// `Name(field=value, ...)` -> `{"__class__": "Name", "field": value,
    /// ...}`; `True`, `False`, `None` as ever. Positional values are no
    /// dataclass repr.
    fn instance(&mut self, depth: usize) -> Option<Value> {
        let start = self.at;
        let class = self.ident()?.to_string();
        if matches!(class.as_str(), "True" | "False" | "None") || self.peek() != Some(b'(') {
            self.at = start;
            return self.scalar();
        }
        self.at += 1;
        let mut map = Map::new();
        map.insert(CLASS_KEY.to_string(), Value::String(class));
        loop {
            if self.eat(b')') {
                return Some(Value::Object(map));
            }
            self.space();
            let field = self.ident()?.to_string();
            if field.contains('.') || !self.eat(b'=') {
                return None;
            }
            let value = self.value(depth + 1)?;
            map.insert(field, value);
            if !self.eat(b',') {
                return self.eat(b')').then_some(Value::Object(map));
            }
        }
    }

    /// `<Enum.MEMBER: value>` -> the value.
    fn member(&mut self, depth: usize) -> Option<Value> {
        self.at += 1;
        self.ident()?;
        if !self.eat(b':') {
            return None;
        }
        let value = self.value(depth + 1)?;
        self.eat(b'>').then_some(value)
    }

    /// Items up to `close`; whether a comma was seen (a one-item tuple).
    fn sequence(&mut self, close: u8, depth: usize) -> Option<(Vec<Value>, bool)> {
        self.at += 1;
        let mut items = Vec::new();
        let mut comma = false;
        loop {
            if self.eat(close) {
                break;
            }
            items.push(self.value(depth + 1)?);
            if self.eat(b',') {
                comma = true;
            } else if self.eat(close) {
                break;
            } else {
                return None;
            }
        }
        let tuple = comma || items.len() != 1;
        Some((items, tuple))
    }

    fn dict(&mut self, depth: usize) -> Option<Value> {
        self.at += 1;
        let mut map = Map::new();
        loop {
            if self.eat(b'}') {
                return Some(Value::Object(map));
            }
            let key = match self.value(depth + 1)? {
                Value::String(k) => k,
                Value::Number(n) => n.to_string(),
                Value::Bool(b) => b.to_string(),
                Value::Null => "null".to_string(),
                // A list or dict is no key (a tuple is, but not in JSON).
                _ => return None,
            };
            if !self.eat(b':') {
                return None; // a set, or no literal at all
            }
            let value = self.value(depth + 1)?;
            map.insert(key, value);
            if !self.eat(b',') {
                return self.eat(b'}').then_some(Value::Object(map));
            }
        }
    }

    /// A number, `True`, `False` or `None`.
    fn scalar(&mut self) -> Option<Value> {
        let start = self.at;
        while self
            .peek()
            .is_some_and(|c| c.is_ascii_alphanumeric() || matches!(c, b'.' | b'+' | b'-' | b'_'))
        {
            // A sign only leads the number or its exponent.
            if matches!(self.peek(), Some(b'+' | b'-'))
                && self.at > start
                && !matches!(self.s[self.at - 1], b'e' | b'E')
            {
                break;
            }
            self.at += 1;
        }
        let word = std::str::from_utf8(&self.s[start..self.at]).ok()?;
        match word {
            "True" => return Some(Value::Bool(true)),
            "False" => return Some(Value::Bool(false)),
            "None" => return Some(Value::Null),
            _ => {}
        }
        let digits = word.trim_start_matches(['+', '-']);
        if !digits.starts_with(|c: char| c.is_ascii_digit() || c == '.')
            || !digits
                .bytes()
                .all(|c| c.is_ascii_digit() || matches!(c, b'.' | b'e' | b'E' | b'+' | b'-'))
        {
            return None; // a name, `inf`, hex, underscores, complex
        }
        let word = word.strip_prefix('+').unwrap_or(word);
        if !word.contains(['.', 'e', 'E']) {
            if let Ok(i) = word.parse::<i64>() {
                return Some(Value::Number(i.into()));
            }
            // Past 64 bits: no JSON number keeps it exactly.
            return word.parse::<u64>().ok().map(|u| Value::Number(u.into()));
        }
        let f: f64 = word.parse().ok()?;
        Number::from_f64(f).map(Value::Number)
    }

    /// A quoted string at the cursor, with Python's escapes.
    fn string(&mut self) -> Option<String> {
        let quote = self.peek()?;
        self.at += 1;
        // `'''` or `"""`: repr never writes them; no literal here.
        if self.s.get(self.at..self.at + 2) == Some(&[quote, quote]) {
            return None;
        }
        let mut out = Vec::new();
        loop {
            let c = self.peek()?;
            self.at += 1;
            match c {
                c if c == quote => break,
                b'\n' => return None,
                b'\\' => self.escape(&mut out)?,
                c => out.push(c),
            }
        }
        String::from_utf8(out).ok()
    }

    fn escape(&mut self, out: &mut Vec<u8>) -> Option<()> {
        let c = self.peek()?;
        self.at += 1;
        let simple = match c {
            b'\n' => return Some(()), // a line continued
            b'\\' => b'\\',
            b'\'' => b'\'',
            b'"' => b'"',
            b'n' => b'\n',
            b'r' => b'\r',
            b't' => b'\t',
            b'a' => 0x07,
            b'b' => 0x08,
            b'f' => 0x0c,
            b'v' => 0x0b,
            b'0'..=b'7' => {
                let mut n = u32::from(c - b'0');
                for _ in 0..2 {
                    match self.peek() {
                        Some(d @ b'0'..=b'7') => {
                            n = n * 8 + u32::from(d - b'0');
                            self.at += 1;
                        }
                        _ => break,
                    }
                }
                return push_char(out, n);
            }
            b'x' => return self.hex(2).and_then(|n| push_char(out, n)),
            b'u' => return self.hex(4).and_then(|n| push_char(out, n)),
            b'U' => return self.hex(8).and_then(|n| push_char(out, n)),
            // `\N{name}` needs Unicode's name table: no literal here.
            b'N' => return None,
            // Python keeps an unknown escape as written.
            other => {
                out.push(b'\\');
                out.push(other);
                return Some(());
            }
        };
        out.push(simple);
        Some(())
    }

    fn hex(&mut self, n: usize) -> Option<u32> {
        let digits = self.s.get(self.at..self.at + n)?;
        let text = std::str::from_utf8(digits).ok()?;
        if !text.bytes().all(|c| c.is_ascii_hexdigit()) {
            return None;
        }
        self.at += n;
        u32::from_str_radix(text, 16).ok()
    }
}

/// Pushes code point `n` as UTF-8; a lone surrogate (which a Python string
/// may hold, and a JSON value may not) is no literal.
fn push_char(out: &mut Vec<u8>, n: u32) -> Option<()> {
    let c = char::from_u32(n)?;
    let mut buf = [0u8; 4];
    out.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
    Some(())
}

#[cfg(test)]
mod tests {
    use super::{model_str, parse, parse_repr};
    use serde_json::{json, Value};

    #[test]
    fn a_models_str_is_an_object_and_near_misses_stay_text() {
        assert_eq!(
            model_str("kind='chart' src='data:x' id=None n=-2 tags=['a', (1,)]")
                .map(|f| Value::Object(f.into_iter().collect())),
            Some(
                json!({"kind": "chart", "src": "data:x", "id": null, "n": -2, "tags": ["a", [1]]})
            )
        );
        for no in [
            "k='v'",
            "a=1 and b",
            "x = 1",
            "k='v' trailing",
            "a=1 a=2",
            "a=1 b=two",
            "a=1, b=2",
            "a=1  b=2",
            "Note(a=1, b=2)",
            "the sum a=1 b=2",
            "a=1 b='x",
        ] {
            assert_eq!(model_str(no), None, "{no}");
        }
    }

    #[test]
    fn a_dataclass_repr_is_read_without_evaluating() {
        assert_eq!(
            parse_repr(
                "Note(kind=<Kind.MEMO: 'memo'>, tags=['a', None], at=Pos(x=1, y=-2.5), ok=True)"
            ),
            Some(
                json!({"__class__": "Note", "kind": "memo", "tags": ["a", null],
                "at": {"__class__": "Pos", "x": 1, "y": -2.5}, "ok": true})
            )
        );
        assert_eq!(parse_repr("Empty()"), Some(json!({"__class__": "Empty"})));
        for no in [
            "Note('positional')",
            "Note(x=os.system('rm'))",
            "Note(x=1) trailing",
            "Note(x=<Kind.MEMO 'memo'>)",
            "{'not': 'an instance'}",
            "Note(a.b=1)",
        ] {
            assert_eq!(parse_repr(no), None, "{no}");
        }
        // Plain literals stay as they were read.
        assert_eq!(parse("[Note(x=1)]"), None);
    }

    fn nest(n: usize) -> String {
        format!("{}{}", "[".repeat(n), "]".repeat(n))
    }

    #[test]
    fn python_literals_read_as_json() {
        for (text, want) in [
            (
                "{'city': 'Paris', 'ok': True, 'n': None}",
                json!({"city": "Paris", "ok": true, "n": null}),
            ),
            (
                r#"{"it's": 'say "hi"', 'b': False}"#,
                json!({"it's": "say \"hi\"", "b": false}),
            ),
            (
                "[1, -2, 3.5, 1e3, -0.25, +7]",
                json!([1, -2, 3.5, 1000.0, -0.25, 7]),
            ),
            ("(1, 'a')", json!([1, "a"])),
            ("((1,), (), ([2],))", json!([[1], [], [[2]]])),
            ("{'t': (1)}", json!({"t": 1})),
            (
                "{1: 'one', True: 't', None: 'n', 2.5: 'f'}",
                json!({"1": "one", "true": "t", "null": "n", "2.5": "f"}),
            ),
            (
                r"{'esc': 'a\nb\t\\ \' \x41\u00e9\U0001F600 \101 \d'}",
                json!({"esc": "a\nb\t\\ ' Aé😀 A \\d"}),
            ),
            (
                "{'nested': {'list': [{'a': [1, {'b': None}]}]},}",
                json!({"nested": {"list": [{"a": [1, {"b": null}]}]}}),
            ),
            (" {\n 'multi':\n  'line' } ", json!({"multi": "line"})),
            ("{u'k': U\"v\"}", json!({"k": "v"})),
            ("{}", json!({})),
            ("[]", json!([])),
            (
                nest(100).as_str(),
                serde_json::from_str(&nest(100)).unwrap(),
            ),
            (
                "{'big': 18446744073709551615}",
                json!({"big": 18446744073709551615u64}),
            ),
        ] {
            assert_eq!(parse(text), Some(want), "{text}");
        }
    }

    #[test]
    fn anything_else_is_no_literal() {
        let deep = nest(101);
        for text in [
            "Paris",
            "'Paris'",
            "42",
            "{1, 2}",
            "{'a': 1",
            "{'a': 1}}",
            "{'a' 1}",
            "[1 2]",
            "{'a': inf}",
            "{'a': nan}",
            "{'a': float('inf')}",
            "{'a': b'bytes'}",
            "{'a': os.system('x')}",
            "{'a': x}",
            "{'a': 0x10}",
            "{'a': 1_000}",
            "{'a': 1j}",
            "{'a': '''x'''}",
            "{'a': 'unterminated}",
            "{'a': '\\N{BULLET}'}",
            "{'a': '\\ud800'}",
            "{'a': 99999999999999999999999}",
            "{(1, 2): 'tuple key'}",
            "{'a': 1} trailing",
            "{'a': 'x' 'y'}",
            "(1, 2",
            "[1,,2]",
            &deep,
        ] {
            assert_eq!(parse(text), None, "{text}");
        }
    }
}
