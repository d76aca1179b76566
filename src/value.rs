//! Value equality rules shared by every metric.
//!
//! Peers disagree on what "same argument" means; each rule lives here once so
//! the native metric and the presets cannot drift apart.

use serde_json::Value;

/// What a JSON value is, in words, for error messages ("a list", "null").
pub fn json_kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "an object",
    }
}

/// JSON equality where numbers compare by value (`1 == 1.0`) and object key
/// order never matters. Booleans are *not* numbers here (unlike Python).
pub fn json_eq(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => number_eq(x, y),
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(p, q)| json_eq(p, q))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .all(|(k, v)| y.get(k).is_some_and(|w| json_eq(v, w)))
        }
        _ => a == b,
    }
}

/// Numeric equality across integer and float representations.
pub fn number_eq(x: &serde_json::Number, y: &serde_json::Number) -> bool {
    if let (Some(a), Some(b)) = (x.as_i64(), y.as_i64()) {
        return a == b;
    }
    if let (Some(a), Some(b)) = (x.as_u64(), y.as_u64()) {
        return a == b;
    }
    match (x.as_f64(), y.as_f64()) {
        (Some(a), Some(b)) => a == b,
        _ => false,
    }
}

// ---------------------------------------------------------------------------
// Python's view of JSON values.
//
// The presets reproduce Python libraries, which compare `json.loads` results
// with Python rules: `1 == 1.0 == True`, dicts equal whatever their key order,
// but `str()` of a dict follows insertion order (ragas) and `json.dumps` tells
// `1` from `1.0` (mlflow). `PyValue` keeps what those rules need: int vs float,
// exact integers and the key order as written.
// ---------------------------------------------------------------------------

/// A JSON value as Python's `json.loads` returns it.
///
/// `Dict` keeps keys in the order they were written (duplicate keys: the last
/// value wins at the first position, like a Python dict). Known gaps, from
/// parsing through `serde_json`: integers beyond 64 bits and `-0` come out as
/// floats (Python keeps them ints).
#[derive(Debug, Clone, PartialEq)]
pub enum PyValue {
    None,
    Bool(bool),
    Int(i128),
    Float(f64),
    Str(String),
    List(Vec<PyValue>),
    Dict(Vec<(String, PyValue)>),
}

impl PyValue {
    /// Converts a `serde_json` value. Object keys come out sorted (that is how
    /// `serde_json::Map` stores them); use [`PyValue::parse`] to keep the order.
    pub fn from_json(v: &Value) -> PyValue {
        match v {
            Value::Null => PyValue::None,
            Value::Bool(b) => PyValue::Bool(*b),
            Value::Number(n) => {
                if let Some(i) = n.as_i64() {
                    PyValue::Int(i128::from(i))
                } else if let Some(u) = n.as_u64() {
                    PyValue::Int(i128::from(u))
                } else {
                    PyValue::Float(n.as_f64().unwrap_or(f64::NAN))
                }
            }
            Value::String(s) => PyValue::Str(s.clone()),
            Value::Array(a) => PyValue::List(a.iter().map(PyValue::from_json).collect()),
            Value::Object(m) => PyValue::Dict(
                m.iter()
                    .map(|(k, v)| (k.clone(), PyValue::from_json(v)))
                    .collect(),
            ),
        }
    }

    /// Parses JSON text keeping the key order (Python `json.loads`).
    pub fn parse(text: &str) -> Result<PyValue, serde_json::Error> {
        serde_json::from_str(text)
    }

    /// Back to a `serde_json` value (key order is lost, big integers become floats).
    pub fn to_json(&self) -> Value {
        match self {
            PyValue::None => Value::Null,
            PyValue::Bool(b) => Value::Bool(*b),
            PyValue::Int(i) => {
                if let Ok(v) = i64::try_from(*i) {
                    Value::from(v)
                } else if let Ok(v) = u64::try_from(*i) {
                    Value::from(v)
                } else {
                    serde_json::Number::from_f64(*i as f64).map_or(Value::Null, Value::Number)
                }
            }
            PyValue::Float(f) => {
                serde_json::Number::from_f64(*f).map_or(Value::Null, Value::Number)
            }
            PyValue::Str(s) => Value::String(s.clone()),
            PyValue::List(a) => Value::Array(a.iter().map(PyValue::to_json).collect()),
            PyValue::Dict(d) => {
                Value::Object(d.iter().map(|(k, v)| (k.clone(), v.to_json())).collect())
            }
        }
    }

    /// Python's `type(v).__name__`.
    pub fn type_name(&self) -> &'static str {
        match self {
            PyValue::None => "NoneType",
            PyValue::Bool(_) => "bool",
            PyValue::Int(_) => "int",
            PyValue::Float(_) => "float",
            PyValue::Str(_) => "str",
            PyValue::List(_) => "list",
            PyValue::Dict(_) => "dict",
        }
    }

    /// The entries if this is a dict.
    pub fn as_dict(&self) -> Option<&[(String, PyValue)]> {
        match self {
            PyValue::Dict(d) => Some(d),
            _ => None,
        }
    }

    /// `d.get(key)` on a dict; `None` for other types.
    pub fn get(&self, key: &str) -> Option<&PyValue> {
        self.as_dict()?
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v)
    }

    /// Python truthiness (`bool(v)`).
    pub fn is_truthy(&self) -> bool {
        match self {
            PyValue::None => false,
            PyValue::Bool(b) => *b,
            PyValue::Int(i) => *i != 0,
            PyValue::Float(f) => *f != 0.0,
            PyValue::Str(s) => !s.is_empty(),
            PyValue::List(a) => !a.is_empty(),
            PyValue::Dict(d) => !d.is_empty(),
        }
    }
}

impl<'de> serde::Deserialize<'de> for PyValue {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<PyValue, D::Error> {
        d.deserialize_any(PyValueVisitor)
    }
}

struct PyValueVisitor;

impl<'de> serde::de::Visitor<'de> for PyValueVisitor {
    type Value = PyValue;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_bool<E>(self, v: bool) -> Result<PyValue, E> {
        Ok(PyValue::Bool(v))
    }
    fn visit_i64<E>(self, v: i64) -> Result<PyValue, E> {
        Ok(PyValue::Int(i128::from(v)))
    }
    fn visit_u64<E>(self, v: u64) -> Result<PyValue, E> {
        Ok(PyValue::Int(i128::from(v)))
    }
    fn visit_i128<E>(self, v: i128) -> Result<PyValue, E> {
        Ok(PyValue::Int(v))
    }
    fn visit_f64<E>(self, v: f64) -> Result<PyValue, E> {
        Ok(PyValue::Float(v))
    }
    fn visit_str<E>(self, v: &str) -> Result<PyValue, E> {
        Ok(PyValue::Str(v.to_owned()))
    }
    fn visit_string<E>(self, v: String) -> Result<PyValue, E> {
        Ok(PyValue::Str(v))
    }
    fn visit_unit<E>(self) -> Result<PyValue, E> {
        Ok(PyValue::None)
    }
    fn visit_none<E>(self) -> Result<PyValue, E> {
        Ok(PyValue::None)
    }
    fn visit_some<D: serde::Deserializer<'de>>(self, d: D) -> Result<PyValue, D::Error> {
        serde::Deserialize::deserialize(d)
    }
    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<PyValue, A::Error> {
        let mut items = Vec::new();
        while let Some(v) = seq.next_element()? {
            items.push(v);
        }
        Ok(PyValue::List(items))
    }
    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<PyValue, A::Error> {
        let mut entries: Vec<(String, PyValue)> = Vec::new();
        while let Some((k, v)) = map.next_entry::<String, PyValue>()? {
            // A repeated key keeps its first position and takes the last value.
            match entries.iter_mut().find(|(old, _)| *old == k) {
                Some(slot) => slot.1 = v,
                None => entries.push((k, v)),
            }
        }
        Ok(PyValue::Dict(entries))
    }
}

/// Python `a == b` on `json.loads` values: `1 == 1.0 == True`, dicts compare
/// whatever their key order, lists element by element.
pub fn py_eq(a: &PyValue, b: &PyValue) -> bool {
    use PyValue as P;
    match (a, b) {
        (P::None, P::None) => true,
        (P::Str(x), P::Str(y)) => x == y,
        (P::List(x), P::List(y)) => x.len() == y.len() && x.iter().zip(y).all(|(p, q)| py_eq(p, q)),
        (P::Dict(x), P::Dict(y)) => {
            x.len() == y.len()
                && x.iter()
                    .all(|(k, v)| y.iter().any(|(k2, w)| k == k2 && py_eq(v, w)))
        }
        _ => match (py_number(a), py_number(b)) {
            (Some(x), Some(y)) => x.eq(&y),
            _ => false,
        },
    }
}

/// A number as Python compares it (bool is an int).
#[derive(Clone, Copy)]
enum PyNum {
    Int(i128),
    Float(f64),
}

fn py_number(v: &PyValue) -> Option<PyNum> {
    match v {
        PyValue::Bool(b) => Some(PyNum::Int(i128::from(*b))),
        PyValue::Int(i) => Some(PyNum::Int(*i)),
        PyValue::Float(f) => Some(PyNum::Float(*f)),
        _ => None,
    }
}

impl PyNum {
    fn eq(&self, other: &PyNum) -> bool {
        match (*self, *other) {
            (PyNum::Int(x), PyNum::Int(y)) => x == y,
            (PyNum::Float(x), PyNum::Float(y)) => x == y,
            // Python compares int with float exactly, not through a float cast.
            (PyNum::Int(i), PyNum::Float(f)) | (PyNum::Float(f), PyNum::Int(i)) => {
                f.is_finite() && f.fract() == 0.0 && f.abs() < 1.7e38 && f as i128 == i
            }
        }
    }
}

/// Python `repr(v)`.
pub fn py_repr(v: &PyValue) -> String {
    let mut out = String::new();
    write_repr(&mut out, v);
    out
}

/// Python `str(v)`: a string as is, anything else as its repr.
pub fn py_str(v: &PyValue) -> String {
    match v {
        PyValue::Str(s) => s.clone(),
        other => py_repr(other),
    }
}

fn write_repr(out: &mut String, v: &PyValue) {
    match v {
        PyValue::None => out.push_str("None"),
        PyValue::Bool(true) => out.push_str("True"),
        PyValue::Bool(false) => out.push_str("False"),
        PyValue::Int(i) => out.push_str(&i.to_string()),
        PyValue::Float(f) => out.push_str(&py_float_repr(*f)),
        PyValue::Str(s) => push_str_repr(out, s),
        PyValue::List(items) => {
            out.push('[');
            for (n, item) in items.iter().enumerate() {
                if n > 0 {
                    out.push_str(", ");
                }
                write_repr(out, item);
            }
            out.push(']');
        }
        PyValue::Dict(entries) => {
            out.push('{');
            for (n, (k, item)) in entries.iter().enumerate() {
                if n > 0 {
                    out.push_str(", ");
                }
                push_str_repr(out, k);
                out.push_str(": ");
                write_repr(out, item);
            }
            out.push('}');
        }
    }
}

/// Python `repr(s)` of a string: single quotes unless the text has a single
/// quote and no double quote; non-printable characters escaped.
pub fn py_str_repr(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    push_str_repr(&mut out, s);
    out
}

/// Appends Python `repr(s)` to `out`.
pub fn push_str_repr(out: &mut String, s: &str) {
    let has_single = s.contains('\'');
    let quote = if has_single && !s.contains('"') {
        '"'
    } else {
        '\''
    };
    // Fast path: printable ASCII without quotes or backslashes.
    if !has_single && s.bytes().all(|b| (0x20..0x7f).contains(&b) && b != b'\\') {
        out.push(quote);
        out.push_str(s);
        out.push(quote);
        return;
    }
    out.push(quote);
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\t' => out.push_str("\\t"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            c if c == quote => {
                out.push('\\');
                out.push(c);
            }
            c if (c as u32) < 0x20 || c as u32 == 0x7f => {
                out.push_str(&format!("\\x{:02x}", c as u32));
            }
            c if (c as u32) < 0x7f || py_isprintable(c) => out.push(c),
            c => {
                let n = c as u32;
                if n <= 0xff {
                    out.push_str(&format!("\\x{n:02x}"));
                } else if n <= 0xffff {
                    out.push_str(&format!("\\u{n:04x}"));
                } else {
                    out.push_str(&format!("\\U{n:08x}"));
                }
            }
        }
    }
    out.push(quote);
}

/// Python's `str.isprintable()` for one non-ASCII character. Python uses the
/// Unicode database (not printable: Cc, Cf, Co, Cn, Zl, Zp, Zs); this covers
/// every assigned Cc/Cf/Zs/Zl/Zp/Co range and the noncharacters, but not the
/// unassigned code points of Cn.
fn py_isprintable(c: char) -> bool {
    const NOT_PRINTABLE: &[(u32, u32)] = &[
        (0x80, 0xa0),
        (0xad, 0xad),
        (0x600, 0x605),
        (0x61c, 0x61c),
        (0x6dd, 0x6dd),
        (0x70f, 0x70f),
        (0x890, 0x891),
        (0x8e2, 0x8e2),
        (0x1680, 0x1680),
        (0x180e, 0x180e),
        (0x2000, 0x200f),
        (0x2028, 0x202f),
        (0x205f, 0x2064),
        (0x2066, 0x206f),
        (0x3000, 0x3000),
        (0xd800, 0xf8ff),
        (0xfdd0, 0xfdef),
        (0xfeff, 0xfeff),
        (0xfff9, 0xfffb),
        (0x110bd, 0x110bd),
        (0x110cd, 0x110cd),
        (0x13430, 0x1343f),
        (0x1bca0, 0x1bca3),
        (0x1d173, 0x1d17a),
        (0xe0001, 0xe0001),
        (0xe0020, 0xe007f),
        (0xf0000, 0x10ffff),
    ];
    let n = c as u32;
    if n & 0xfffe == 0xfffe {
        return false; // U+xFFFE and U+xFFFF are noncharacters in every plane
    }
    !NOT_PRINTABLE.iter().any(|&(lo, hi)| (lo..=hi).contains(&n))
}

/// Python `repr(f)` of a float: the shortest text that reads back to the same
/// value, in exponent form below 1e-4 and from 1e16 on (`1e+16`, `1.5e-05`).
pub fn py_float_repr(f: f64) -> String {
    if f.is_nan() {
        return "nan".into();
    }
    if f.is_infinite() {
        return if f > 0.0 { "inf".into() } else { "-inf".into() };
    }
    // Rust's `{:e}` gives the same shortest round-trip digits as Python.
    let sci = format!("{f:e}");
    let (mantissa, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let (neg, mantissa) = match mantissa.strip_prefix('-') {
        Some(m) => (true, m),
        None => (false, mantissa),
    };
    let digits: String = mantissa.chars().filter(|c| *c != '.').collect();
    let mut out = String::new();
    if neg {
        out.push('-');
    }
    if !(-4..16).contains(&exp) {
        out.push_str(&digits[..1]);
        if digits.len() > 1 {
            out.push('.');
            out.push_str(&digits[1..]);
        }
        out.push('e');
        out.push(if exp < 0 { '-' } else { '+' });
        out.push_str(&format!("{:02}", exp.unsigned_abs()));
    } else if exp >= 0 {
        let int_len = exp as usize + 1;
        if digits.len() <= int_len {
            out.push_str(&digits);
            out.push_str(&"0".repeat(int_len - digits.len()));
            out.push_str(".0");
        } else {
            out.push_str(&digits[..int_len]);
            out.push('.');
            out.push_str(&digits[int_len..]);
        }
    } else {
        out.push_str("0.");
        out.push_str(&"0".repeat(exp.unsigned_abs() as usize - 1));
        out.push_str(&digits);
    }
    out
}

/// Options of Python's `json.dumps` that the presets need.
#[derive(Debug, Clone, Copy, Default)]
pub struct DumpsOptions {
    pub sort_keys: bool,
    pub indent: Option<usize>,
    /// Python's default is `ensure_ascii=True`: non-ASCII as `\uXXXX`.
    pub keep_unicode: bool,
}

/// Python `json.dumps(v, ...)` with the default separators (`", "`, `": "`;
/// `","` when indenting).
pub fn py_json_dumps(v: &PyValue, opts: DumpsOptions) -> String {
    let mut out = String::new();
    write_json(&mut out, v, opts, 0);
    out
}

fn write_json(out: &mut String, v: &PyValue, opts: DumpsOptions, level: usize) {
    let DumpsOptions {
        sort_keys,
        indent,
        keep_unicode,
    } = opts;
    let newline = |out: &mut String, level: usize| {
        if let Some(n) = indent {
            out.push('\n');
            out.push_str(&" ".repeat(n * level));
        }
    };
    let sep = if indent.is_some() { "," } else { ", " };
    match v {
        PyValue::None => out.push_str("null"),
        PyValue::Bool(true) => out.push_str("true"),
        PyValue::Bool(false) => out.push_str("false"),
        PyValue::Int(i) => out.push_str(&i.to_string()),
        PyValue::Float(f) => out.push_str(&match f {
            f if f.is_nan() => "NaN".to_string(),
            f if f.is_infinite() => if *f > 0.0 { "Infinity" } else { "-Infinity" }.to_string(),
            f => py_float_repr(*f),
        }),
        PyValue::Str(s) => write_json_str(out, s, keep_unicode),
        PyValue::List(items) if items.is_empty() => out.push_str("[]"),
        PyValue::List(items) => {
            out.push('[');
            for (n, item) in items.iter().enumerate() {
                if n > 0 {
                    out.push_str(sep);
                }
                newline(out, level + 1);
                write_json(out, item, opts, level + 1);
            }
            newline(out, level);
            out.push(']');
        }
        PyValue::Dict(entries) if entries.is_empty() => out.push_str("{}"),
        PyValue::Dict(entries) => {
            let mut refs: Vec<&(String, PyValue)> = entries.iter().collect();
            if sort_keys {
                refs.sort_by(|a, b| a.0.cmp(&b.0));
            }
            out.push('{');
            for (n, (k, item)) in refs.into_iter().enumerate() {
                if n > 0 {
                    out.push_str(sep);
                }
                newline(out, level + 1);
                write_json_str(out, k, keep_unicode);
                out.push_str(": ");
                write_json(out, item, opts, level + 1);
            }
            newline(out, level);
            out.push('}');
        }
    }
}

/// A JSON string literal as Python's `json.dumps` writes it.
fn write_json_str(out: &mut String, s: &str, keep_unicode: bool) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            ' '..='~' => out.push(c),
            c if keep_unicode && c as u32 >= 0x20 => out.push(c),
            c => {
                let mut units = [0u16; 2];
                for unit in c.encode_utf16(&mut units) {
                    out.push_str(&format!("\\u{unit:04x}"));
                }
            }
        }
    }
    out.push('"');
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn numbers_compare_by_value() {
        assert!(json_eq(&json!(1), &json!(1.0)));
        assert!(json_eq(&json!({"a": [1, 2.0]}), &json!({"a": [1.0, 2]})));
        assert!(!json_eq(&json!(1), &json!("1")));
        assert!(!json_eq(&json!(true), &json!(1)));
    }

    fn py(text: &str) -> PyValue {
        PyValue::parse(text).expect("json")
    }

    #[test]
    fn python_equality() {
        assert!(py_eq(&py("1"), &py("1.0")));
        assert!(py_eq(&py("true"), &py("1")));
        assert!(py_eq(&py("false"), &py("0.0")));
        assert!(py_eq(
            &py(r#"{"a": [1, {"b": true}], "c": 2}"#),
            &py(r#"{"c": 2.0, "a": [1.0, {"b": 1}]}"#)
        ));
        assert!(!py_eq(&py("5"), &py(r#""5""#)));
        assert!(!py_eq(&py("null"), &py(r#""""#)));
        assert!(!py_eq(&py("[1, 2]"), &py("[2, 1]")));
        // Exact int/float comparison, as in Python: 2**53 + 1 != 2.0**53.
        assert!(!py_eq(&py("9007199254740993"), &py("9007199254740992.0")));
        assert!(py_eq(
            &py("12345678901234567890"),
            &py("12345678901234567890")
        ));
    }

    #[test]
    fn parse_keeps_key_order_and_last_duplicate() {
        assert_eq!(
            py_repr(&py(r#"{"b": 1, "a": {"d": 2, "c": 3}}"#)),
            "{'b': 1, 'a': {'d': 2, 'c': 3}}"
        );
        assert_eq!(
            py_repr(&py(r#"{"a": 1, "b": 2, "a": 3}"#)),
            "{'a': 3, 'b': 2}"
        );
        // serde_json's map sorts keys.
        assert_eq!(
            py_repr(&PyValue::from_json(&json!({"b": 1, "a": 2}))),
            "{'a': 2, 'b': 1}"
        );
    }

    #[test]
    fn python_repr_and_str() {
        assert_eq!(
            py_repr(&py(
                r#"[null, true, 1.0, "it's", "a\"b", "x\ny", "\u00e9\u00a0"]"#
            )),
            r#"[None, True, 1.0, "it's", 'a"b', 'x\ny', 'é\xa0']"#
        );
        assert_eq!(py_str(&py(r#""plain""#)), "plain");
        assert_eq!(py_str(&py("0.30000000000000004")), "0.30000000000000004");
        assert_eq!(py_str_repr("both ' and \""), r#"'both \' and "'"#);
    }

    #[test]
    fn python_float_repr() {
        let cases = [
            (1.0, "1.0"),
            (-0.0, "-0.0"),
            (0.1, "0.1"),
            (1e16, "1e+16"),
            (1e15, "1000000000000000.0"),
            (123.456, "123.456"),
            (0.0001, "0.0001"),
            (0.00001, "1e-05"),
            (1.5e-7, "1.5e-07"),
            (1e22, "1e+22"),
            (1.7976931348623157e308, "1.7976931348623157e+308"),
            (5e-324, "5e-324"),
            (f64::INFINITY, "inf"),
        ];
        for (f, want) in cases {
            assert_eq!(py_float_repr(f), want, "{f:e}");
        }
    }

    #[test]
    fn python_json_dumps() {
        let v = py(r#"{"b": [1, 1.0, true, null], "a": {"é": "\u2603\ud83d\ude00\n"}}"#);
        let sorted = DumpsOptions {
            sort_keys: true,
            ..DumpsOptions::default()
        };
        assert_eq!(
            py_json_dumps(&v, sorted),
            r#"{"a": {"\u00e9": "\u2603\ud83d\ude00\n"}, "b": [1, 1.0, true, null]}"#
        );
        let pretty = DumpsOptions {
            indent: Some(2),
            keep_unicode: true,
            ..DumpsOptions::default()
        };
        assert_eq!(
            py_json_dumps(&py(r#"{"k": [1, {}], "e": []}"#), pretty),
            "{\n  \"k\": [\n    1,\n    {}\n  ],\n  \"e\": []\n}"
        );
    }
}
