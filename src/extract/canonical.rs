//! A JSON text rewritten as `serde_json` writes the `Value` parsed from it
//! (object keys sorted, the last of duplicate keys kept, no whitespace,
//! numbers and string escapes as serde_json prints them), without building
//! the `Value`: string contents are copied, not decoded and re-escaped,
//! unless their escapes differ from serde_json's. For calls whose arguments
//! are only written out, never read (serve without cases), where parsing
//! them into a `Value` and writing it back was most of the cost of a row.

use std::borrow::Cow;

use serde::de::{Deserialize, Deserializer, MapAccess, Visitor};
use serde_json::value::RawValue;

/// Nesting beyond this is left to `serde_json::Value` (whose parser stops
/// at 128 levels): the caller parses such text the usual way.
const MAX_DEPTH: usize = 100;

/// `text` as `serde_json::to_string(&serde_json::from_str::<Value>(text)?)`
/// would write it, or `None` when that is not certain (invalid JSON, deep
/// nesting): the caller then parses the text as usual.
pub(crate) fn canonical(text: &str) -> Option<String> {
    let mut out = String::with_capacity(text.len());
    match first_byte(text)? {
        // Objects and arrays are read whole (and checked to the end) by
        // `write`: no need to find where they end first.
        b'{' | b'[' => write(&mut out, text, 0)?,
        _ => {
            let raw: &RawValue = serde_json::from_str(text).ok()?;
            write(&mut out, raw.get(), 0)?;
        }
    }
    Some(out)
}

/// Writes the JSON text `raw`: one value, with whitespace around it only
/// if it is an object or an array.
fn write(out: &mut String, raw: &str, depth: usize) -> Option<()> {
    if depth > MAX_DEPTH {
        return None;
    }
    match first_byte(raw)? {
        b'{' => {
            let Entries(mut entries) = serde_json::from_str(raw).ok()?;
            // Stable: of equal keys, the last written wins, as in a Map.
            entries.sort_by(|a, b| a.0.cmp(&b.0));
            out.push('{');
            let mut first = true;
            for (i, (k, v)) in entries.iter().enumerate() {
                if entries.get(i + 1).is_some_and(|next| next.0 == *k) {
                    continue;
                }
                if !first {
                    out.push(',');
                }
                first = false;
                match k {
                    // Borrowed: the key had no escapes, so it needs none.
                    Cow::Borrowed(k) => {
                        out.push('"');
                        out.push_str(k);
                        out.push('"');
                    }
                    Cow::Owned(k) => push_json(out, k)?,
                }
                out.push(':');
                write(out, v.get(), depth + 1)?;
            }
            out.push('}');
        }
        b'[' => {
            let items: Vec<&RawValue> = serde_json::from_str(raw).ok()?;
            out.push('[');
            for (i, v) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write(out, v.get(), depth + 1)?;
            }
            out.push(']');
        }
        b'"' => {
            if escapes_as_serde_json(raw) {
                out.push_str(raw);
            } else {
                let s: String = serde_json::from_str(raw).ok()?;
                push_json(out, &s)?;
            }
        }
        b't' | b'f' | b'n' => out.push_str(raw),
        _ => {
            // Digits only: a u64 (JSON has no leading zeros), printed as is.
            if raw.len() <= 19 && raw.bytes().all(|b| b.is_ascii_digit()) {
                out.push_str(raw);
            } else {
                let n: serde_json::Number = serde_json::from_str(raw).ok()?;
                push_json(out, &n)?;
            }
        }
    }
    Some(())
}

/// The first byte of `text` after JSON whitespace.
fn first_byte(text: &str) -> Option<u8> {
    text.bytes()
        .find(|b| !matches!(b, b' ' | b'\t' | b'\n' | b'\r'))
}

fn push_json<T: serde::Serialize + ?Sized>(out: &mut String, v: &T) -> Option<()> {
    out.push_str(&serde_json::to_string(v).ok()?);
    Some(())
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

/// An object's entries in written order, keys borrowed when unescaped.
struct Entries<'a>(Vec<(Cow<'a, str>, &'a RawValue)>);

impl<'de> Deserialize<'de> for Entries<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Entries<'de>;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut m: A) -> Result<Self::Value, A::Error> {
                let mut v = Vec::with_capacity(m.size_hint().unwrap_or(8));
                while let Some((Key(k), val)) = m.next_entry::<Key<'de>, &'de RawValue>()? {
                    v.push((k, val));
                }
                Ok(Entries(v))
            }
        }
        d.deserialize_map(V)
    }
}

struct Key<'a>(Cow<'a, str>);

impl<'de> Deserialize<'de> for Key<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Key<'de>;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a string")
            }
            fn visit_borrowed_str<E>(self, s: &'de str) -> Result<Self::Value, E> {
                Ok(Key(Cow::Borrowed(s)))
            }
            fn visit_str<E>(self, s: &str) -> Result<Self::Value, E> {
                Ok(Key(Cow::Owned(s.to_string())))
            }
            fn visit_string<E>(self, s: String) -> Result<Self::Value, E> {
                Ok(Key(Cow::Owned(s)))
            }
        }
        d.deserialize_str(V)
    }
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
