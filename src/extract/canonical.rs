//! A JSON text rewritten as `serde_json` writes the `Value` parsed from it
//! (object keys sorted, the last of duplicate keys kept, no whitespace,
//! numbers and string escapes as serde_json prints them), without building
//! the `Value`: string contents are copied, not decoded and re-escaped,
//! unless their escapes differ from serde_json's. For calls whose arguments
//! are only written out, never read (serve without cases), where parsing
//! them into a `Value` and writing it back was most of the cost of a row.

use std::borrow::Cow;

/// Nesting beyond this is left to `serde_json::Value` (whose parser stops
/// at 128 levels): the caller parses such text the usual way.
const MAX_DEPTH: usize = 100;

/// `text` as `serde_json::to_string(&serde_json::from_str::<Value>(text)?)`
/// would write it, or `None` when that is not certain (invalid JSON, deep
/// nesting): the caller then parses the text as usual.
///
/// One pass over the bytes: each value is written as it is read; an
/// object's entries are sorted (and duplicate keys dropped) only when their
/// keys are not already in order, by moving the entries' written bytes.
pub(crate) fn canonical(text: &str) -> Option<String> {
    let mut r = Reader {
        text,
        at: 0,
        entries: Vec::new(),
        scratch: String::new(),
    };
    let mut out = String::with_capacity(text.len());
    r.ws();
    r.value(&mut out, 0)?;
    r.ws();
    (r.at == text.len()).then_some(out)
}

/// An object entry written to the output: its key (decoded) and where the
/// whole `"key":value` sits in the output.
struct Entry<'a> {
    key: Cow<'a, str>,
    start: usize,
    end: usize,
}

struct Reader<'a> {
    text: &'a str,
    at: usize,
    /// The entries of the objects being read, innermost last (one buffer
    /// for every level, so an object costs no allocation of its own).
    entries: Vec<Entry<'a>>,
    /// Where an object's entries wait while they are put in order.
    scratch: String,
}

impl<'a> Reader<'a> {
    fn peek(&self) -> Option<u8> {
        self.text.as_bytes().get(self.at).copied()
    }

    fn ws(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t' | b'\n' | b'\r')) {
            self.at += 1;
        }
    }

    fn eat(&mut self, b: u8) -> Option<()> {
        (self.peek()? == b).then(|| self.at += 1)
    }

    fn value(&mut self, out: &mut String, depth: usize) -> Option<()> {
        match self.peek()? {
            b'{' => self.object(out, depth + 1),
            b'[' => self.array(out, depth + 1),
            b'"' => {
                let (raw, escaped) = self.string()?;
                push_string(out, raw, escaped)
            }
            b't' => self.literal(out, "true"),
            b'f' => self.literal(out, "false"),
            b'n' => self.literal(out, "null"),
            _ => self.number(out),
        }
    }

    fn literal(&mut self, out: &mut String, word: &str) -> Option<()> {
        self.text[self.at..].starts_with(word).then(|| {
            self.at += word.len();
            out.push_str(word);
        })
    }

    fn array(&mut self, out: &mut String, depth: usize) -> Option<()> {
        if depth > MAX_DEPTH {
            return None;
        }
        self.eat(b'[')?;
        out.push('[');
        self.ws();
        if self.eat(b']').is_some() {
            out.push(']');
            return Some(());
        }
        loop {
            self.ws();
            self.value(out, depth)?;
            self.ws();
            match self.peek()? {
                b',' => out.push(','),
                b']' => break,
                _ => return None,
            }
            self.at += 1;
        }
        self.at += 1;
        out.push(']');
        Some(())
    }

    fn object(&mut self, out: &mut String, depth: usize) -> Option<()> {
        if depth > MAX_DEPTH {
            return None;
        }
        self.eat(b'{')?;
        out.push('{');
        let open = out.len();
        let base = self.entries.len();
        self.ws();
        if self.eat(b'}').is_some() {
            out.push('}');
            return Some(());
        }
        // Keys in strictly increasing order so far: the entries need no move.
        let mut sorted = true;
        loop {
            self.ws();
            if self.peek()? != b'"' {
                return None;
            }
            let (raw, escaped) = self.string()?;
            let key: Cow<'a, str> = if escaped {
                Cow::Owned(serde_json::from_str::<String>(raw).ok()?)
            } else {
                Cow::Borrowed(&raw[1..raw.len() - 1])
            };
            if let Some(last) = self.entries[base..].last() {
                sorted &= last.key < key;
                out.push(',');
            }
            let start = out.len();
            push_string(out, raw, escaped)?;
            self.ws();
            self.eat(b':')?;
            out.push(':');
            self.ws();
            self.value(out, depth)?;
            self.entries.push(Entry {
                key,
                start,
                end: out.len(),
            });
            self.ws();
            match self.peek()? {
                b',' => {}
                b'}' => break,
                _ => return None,
            }
            self.at += 1;
        }
        self.at += 1;
        if !sorted {
            reorder(out, open, &mut self.entries[base..], &mut self.scratch);
        }
        self.entries.truncate(base);
        out.push('}');
        Some(())
    }

    /// A string literal, quotes included, and whether it has escapes; its
    /// escapes are checked only as far as finding its end needs (the
    /// writer checks or decodes them).
    fn string(&mut self) -> Option<(&'a str, bool)> {
        let b = self.text.as_bytes();
        let start = self.at;
        let mut i = start + 1;
        let mut escaped = false;
        // Byte by byte: most strings here are a few words, shorter than
        // what a vectorised search pays to set up.
        loop {
            match *b.get(i)? {
                b'"' => break,
                b'\\' => {
                    escaped = true;
                    i += 2;
                }
                // Control characters are not allowed raw in a JSON string.
                c if c < 0x20 => return None,
                _ => i += 1,
            }
        }
        self.at = i + 1;
        Some((&self.text[start..=i], escaped))
    }

    fn number(&mut self, out: &mut String) -> Option<()> {
        let b = self.text.as_bytes();
        let start = self.at;
        let mut i = start;
        while i < b.len() && matches!(b[i], b'0'..=b'9' | b'-' | b'+' | b'.' | b'e' | b'E') {
            i += 1;
        }
        let raw = &self.text[start..i];
        self.at = i;
        // Digits only, no leading zero, under 20 of them: a u64, which
        // serde_json prints as written.
        let plain = !raw.is_empty()
            && raw.len() <= 19
            && raw.bytes().all(|c| c.is_ascii_digit())
            && (raw.len() == 1 || !raw.starts_with('0'));
        if plain {
            out.push_str(raw);
        } else {
            let n: serde_json::Number = serde_json::from_str(raw).ok()?;
            out.push_str(&n.to_string());
        }
        Some(())
    }
}

/// Writes the string literal `raw` (quotes included, `escaped` if it has
/// escapes) as serde_json writes its value: as is when its escapes are
/// serde_json's, else decoded and escaped again.
fn push_string(out: &mut String, raw: &str, escaped: bool) -> Option<()> {
    if !escaped || escapes_as_serde_json(raw) {
        out.push_str(raw);
    } else {
        let s: String = serde_json::from_str(raw).ok()?;
        out.push_str(&serde_json::to_string(&s).ok()?);
    }
    Some(())
}

/// Puts the object entries written after `open` in key order, the last of
/// equal keys kept (as a map does), comma-separated; `scratch` holds the
/// entries' bytes meanwhile.
fn reorder(out: &mut String, open: usize, entries: &mut [Entry], scratch: &mut String) {
    scratch.clear();
    scratch.push_str(&out[open..]);
    // Ties in written order, so of equal keys the last written stays last.
    entries.sort_unstable_by(|a, b| a.key.cmp(&b.key).then(a.start.cmp(&b.start)));
    out.truncate(open);
    for (i, e) in entries.iter().enumerate() {
        if entries.get(i + 1).is_some_and(|next| next.key == e.key) {
            continue;
        }
        if out.len() > open {
            out.push(',');
        }
        out.push_str(&scratch[e.start - open..e.end - open]);
    }
}

/// Whether the escapes of the JSON string literal `raw` are the ones
/// serde_json writes: `\"`, `\\`, `\b`, `\f`, `\n`, `\r`, `\t`, and
/// `\u00xx` (lowercase) for the other control characters. (Other bytes
/// serde_json writes as they are, and valid JSON has no raw control
/// characters in strings.)
fn escapes_as_serde_json(raw: &str) -> bool {
    let b = raw.as_bytes();
    let mut i = match memchr::memchr(b'\\', b) {
        None => return true,
        Some(i) => i,
    };
    while i < b.len() {
        if b[i] != b'\\' {
            i += 1;
            continue;
        }
        match b.get(i + 1) {
            Some(b'"' | b'\\' | b'b' | b'f' | b'n' | b'r' | b't') => i += 2,
            Some(b'u') => {
                let hex = b.get(i + 2..i + 6);
                let ok = hex.is_some_and(|h| {
                    h[0] == b'0'
                        && h[1] == b'0'
                        && matches!(h[2], b'0' | b'1')
                        && matches!(h[3], b'0'..=b'9' | b'a'..=b'f')
                        // These five have their short escapes.
                        && !matches!((h[2], h[3]), (b'0', b'8' | b'9' | b'a' | b'c' | b'd'))
                });
                if !ok {
                    return false;
                }
                i += 6;
            }
            _ => return false,
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;

    fn via_value(text: &str) -> Option<String> {
        serde_json::from_str::<Value>(text)
            .ok()
            .map(|v| v.to_string())
    }

    #[test]
    fn writes_what_serde_json_writes_of_the_value() {
        let cases = [
            r#"{"k1":"a","k10":"b","k2":"c"}"#,
            r#" { "b" : 1 , "a" : [ 1 , 2.50 , -0 , -3 , 1e3 , 1E-2 , 18446744073709551616 ] } "#,
            r#"{"a":1,"a":2,"b":{"z":null,"y":true,"x":false}}"#,
            r#"{"t":"tab\there \"q\" back\\slash \n\r\b\f","u":"\u00e9\u0001\u001F\u0008\/"}"#,
            r#"{"\u0061b":1,"aa":2,"a\"b":3}"#,
            r#"["Zürich 東京", {}, [], "", 0, 12345678901234567890, 99999999999999999999]"#,
            r#""a string""#,
            r#""esc \u00e9""#,
            "123",
            "-1.0",
            "true",
            "null",
            r#"{"s":"\ud83d\ude00"}"#,
        ];
        for text in cases {
            assert_eq!(canonical(text), via_value(text), "{text}");
        }
    }

    /// Random JSON text in many spellings: whitespace, duplicate and
    /// escaped keys, every number form, escapes serde_json writes and
    /// ones it does not.
    fn random_json(rng: &mut crate::fake::Rng, depth: u32, out: &mut String) {
        const WS: [&str; 4] = ["", " ", "\n\t", "\r "];
        let ws = |rng: &mut crate::fake::Rng| WS[rng.below(4) as usize];
        const ATOMS: [&str; 22] = [
            "0",
            "-0",
            "7",
            "-12",
            "1.0",
            "1.50",
            "-0.0",
            "1e3",
            "1E+2",
            "2.5e-3",
            "-1e0",
            "18446744073709551615",
            "18446744073709551616",
            "-9223372036854775808",
            "-9223372036854775809",
            "123456789012345678901234567890",
            "0.1",
            "true",
            "false",
            "null",
            "3.141592653589793238",
            "1e308",
        ];
        const STRINGS: [&str; 12] = [
            r#""""#,
            r#""plain""#,
            r#""Zürich 東京""#,
            r#""tab\tnl\n""#,
            r#""q\"b\\""#,
            r#""\u00e9""#,
            r#""\u0041\/""#,
            r#""\u001f\u0008""#,
            r#""\u001F""#,
            r#""\ud83d\ude00""#,
            r#""\b\f\r""#,
            r#""x\u2028y""#,
        ];
        const KEYS: [&str; 8] = [
            r#""a""#,
            r#""b""#,
            r#""\u0061""#,
            r#""k10""#,
            r#""k2""#,
            r#""é""#,
            r#""a\"""#,
            r#""""#,
        ];
        out.push_str(ws(rng));
        match rng.below(if depth > 3 { 2 } else { 4 }) {
            0 => out.push_str(ATOMS[rng.below(ATOMS.len() as u64) as usize]),
            1 => out.push_str(STRINGS[rng.below(STRINGS.len() as u64) as usize]),
            2 => {
                out.push('[');
                for i in 0..rng.below(4) {
                    if i > 0 {
                        out.push(',');
                    }
                    random_json(rng, depth + 1, out);
                }
                out.push_str(ws(rng));
                out.push(']');
            }
            _ => {
                out.push('{');
                for i in 0..rng.below(6) {
                    if i > 0 {
                        out.push(',');
                    }
                    out.push_str(ws(rng));
                    out.push_str(KEYS[rng.below(KEYS.len() as u64) as usize]);
                    out.push_str(ws(rng));
                    out.push(':');
                    random_json(rng, depth + 1, out);
                }
                out.push_str(ws(rng));
                out.push('}');
            }
        }
        out.push_str(ws(rng));
    }

    #[test]
    fn random_json_is_written_as_serde_json_writes_its_value() {
        let mut rng = crate::fake::Rng::new(11);
        let (mut taken, mut text) = (0, String::new());
        for _ in 0..20_000 {
            text.clear();
            random_json(&mut rng, 0, &mut text);
            let expected = via_value(&text);
            assert_eq!(canonical(&text), expected, "{text}");
            taken += usize::from(expected.is_some());
        }
        // Every spelling is valid JSON: none was declined.
        assert_eq!(taken, 20_000);
    }

    /// Broken spellings (bytes cut, doubled or replaced): when serde_json
    /// parses the text, the same text comes out or `None` (not sure); when it
    /// does not, `None`.
    #[test]
    fn broken_json_is_declined_or_written_as_serde_json_writes_it() {
        const BYTES: &[u8] = b"{}[]\",:\\ \t\n\x01e.-+0129ntfxu";
        let mut rng = crate::fake::Rng::new(5);
        let (mut text, mut same) = (String::new(), 0);
        for _ in 0..20_000 {
            text.clear();
            random_json(&mut rng, 0, &mut text);
            let mut bytes = text.clone().into_bytes();
            for _ in 0..1 + rng.below(3) {
                let at = rng.below(bytes.len() as u64 + 1) as usize;
                let b = BYTES[rng.below(BYTES.len() as u64) as usize];
                match rng.below(3) {
                    0 if at < bytes.len() => {
                        bytes.remove(at);
                    }
                    1 if at < bytes.len() => bytes[at] = b,
                    _ => bytes.insert(at, b),
                }
            }
            // Only ASCII was put in, but a cut may split a character.
            let Ok(broken) = String::from_utf8(bytes) else {
                continue;
            };
            match (canonical(&broken), via_value(&broken)) {
                (Some(ours), Some(theirs)) => {
                    assert_eq!(ours, theirs, "{broken}");
                    same += 1;
                }
                (Some(ours), None) => panic!("{broken:?} is not JSON, yet gave {ours}"),
                (None, _) => {}
            }
        }
        assert!(same > 1000, "{same}");
    }

    #[test]
    fn declines_what_a_value_would_not_parse_or_nests_deeply() {
        for text in [
            "{",
            "{\"a\":1} x",
            "not json",
            r#"{"s":"\ud800"}"#,
            "1e400",
            "",
        ] {
            assert_eq!(canonical(text), None, "{text}");
            assert_eq!(via_value(text), None, "{text}");
        }
        let deep = format!("{}{}", "[".repeat(120), "]".repeat(120));
        assert_eq!(canonical(&deep), None);
    }
}
