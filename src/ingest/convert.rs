//! Pieces shared by the converters of other trace formats (Jaeger, Zipkin,
//! the OTel Python console exporter) into OTLP requests: the result and
//! problem types, id and time parsing, attribute building and grouping spans
//! into resource and scope blocks. Pure functions, no I/O.
//!
//! The mappings themselves are described in docs/formats.md.

use std::collections::HashMap;
use std::fmt;

use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::{
    any_value, AnyValue, ArrayValue, InstrumentationScope, KeyValue, KeyValueList,
};
use opentelemetry_proto::tonic::resource::v1::Resource;
use opentelemetry_proto::tonic::trace::v1::{ResourceSpans, ScopeSpans, Span};
use serde_json::{Map, Value};

/// One unit (a span, a trace) a converter left out, and why; the rest of
/// the document is kept.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    /// Where in the document, as a JSON path (`data[0].spans[3]`).
    pub at: String,
    /// Why, naming the span when it has a name.
    pub reason: String,
    /// Spans lost with it.
    pub spans: usize,
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.at.is_empty() {
            f.write_str(&self.reason)
        } else {
            write!(f, "{}: {}", self.at, self.reason)
        }
    }
}

/// Why a whole document could not be converted.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ConvertError(pub String);

/// What a converter gives back: the spans it could convert, as one request,
/// and a problem for each unit it had to leave out.
pub type Converted = Result<(ExportTraceServiceRequest, Vec<Problem>), ConvertError>;

/// The span objects of a document that is one span object or a list of
/// them, each with its JSON path (`[3]`, or empty for a lone object).
pub(crate) fn span_items(
    v: &serde_json::Value,
) -> Result<Vec<(String, &serde_json::Value)>, ConvertError> {
    let items: Vec<(String, &serde_json::Value)> = match v {
        serde_json::Value::Array(items) => items
            .iter()
            .enumerate()
            .map(|(i, s)| (format!("[{i}]"), s))
            .collect(),
        other => vec![(String::new(), other)],
    };
    if items.is_empty() {
        return Err(ConvertError("the list holds no spans".to_string()));
    }
    Ok(items)
}

/// A span-level rejection: `span `name` rejected: why`.
pub(crate) fn span_problem(at: String, name: &str, why: impl fmt::Display) -> Problem {
    let reason = if name.is_empty() {
        format!("span rejected: {why}")
    } else {
        format!("span `{name}` rejected: {why}")
    };
    Problem {
        at,
        reason,
        spans: 1,
    }
}

/// A hex id of at most `len` bytes (`2 * len` digits), left-padded with
/// zeros; an optional `0x` prefix is dropped. Jaeger and Zipkin write 64-bit
/// trace ids as 16 digits, and old Jaeger versions dropped leading zeros
/// (Go's `%x`), so shorter ids are the same id, not a wrong one.
pub(crate) fn hex_id(raw: &str, len: usize, what: &str) -> Result<Vec<u8>, String> {
    let s = raw.trim();
    let s = s
        .strip_prefix("0x")
        .or_else(|| s.strip_prefix("0X"))
        .unwrap_or(s);
    if s.is_empty() {
        return Err(format!("{what} is empty"));
    }
    if s.len() > 2 * len || !s.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(format!(
            "{what} `{raw}` is not a hex id of up to {} digits",
            2 * len
        ));
    }
    let padded = format!("{s:0>width$}", width = 2 * len);
    let mut out = Vec::with_capacity(len);
    for i in (0..padded.len()).step_by(2) {
        let byte = u8::from_str_radix(&padded[i..i + 2], 16)
            .map_err(|_| format!("{what} `{raw}` is not hex"))?;
        out.push(byte);
    }
    if out.iter().all(|&b| b == 0) {
        return Err(format!("{what} `{raw}` is all zeros"));
    }
    Ok(out)
}

/// An id field that may be absent (`None`, `null`, `""`): `Ok(None)` then.
pub(crate) fn optional_id(
    v: Option<&Value>,
    len: usize,
    what: &str,
) -> Result<Option<Vec<u8>>, String> {
    match v {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) if s.trim().is_empty() => Ok(None),
        Some(Value::String(s)) => hex_id(s, len, what).map(Some),
        Some(other) => Err(format!("{what} {other} is not a string")),
    }
}

/// A required id field.
pub(crate) fn required_id(v: Option<&Value>, len: usize, what: &str) -> Result<Vec<u8>, String> {
    optional_id(v, len, what)?.ok_or_else(|| format!("no {what}"))
}

/// A count of microseconds (a JSON number, or a string of digits), as
/// nanoseconds.
pub(crate) fn micros_to_nanos(v: &Value, what: &str) -> Result<u64, String> {
    let micros = match v {
        Value::Number(n) => n
            .as_u64()
            .or_else(|| {
                n.as_f64()
                    .filter(|f| f.is_finite() && *f >= 0.0)
                    .map(|f| f as u64)
            })
            .ok_or_else(|| format!("{what} {n} is not a non-negative number"))?,
        Value::String(s) => s
            .trim()
            .parse::<u64>()
            .map_err(|_| format!("{what} `{s}` is not a number of microseconds"))?,
        other => return Err(format!("{what} {other} is not a number")),
    };
    micros
        .checked_mul(1000)
        .ok_or_else(|| format!("{what} {micros} is out of range"))
}

/// An RFC 3339 / ISO-8601 UTC time (`2024-05-01T12:00:00.123456Z`; an
/// offset `+02:00` or none, read as UTC) as Unix nanoseconds.
pub(crate) fn iso_to_nanos(s: &str) -> Option<u64> {
    let s = s.trim();
    let b = s.as_bytes();
    let num = |r: std::ops::Range<usize>| -> Option<i64> {
        let part = s.get(r)?;
        if part.bytes().all(|c| c.is_ascii_digit()) {
            part.parse().ok()
        } else {
            None
        }
    };
    if b.len() < 19 || b[4] != b'-' || b[7] != b'-' || b[13] != b':' || b[16] != b':' {
        return None;
    }
    if !matches!(b[10], b'T' | b't' | b' ') {
        return None;
    }
    let (year, month, day) = (num(0..4)?, num(5..7)?, num(8..10)?);
    let (hour, minute, second) = (num(11..13)?, num(14..16)?, num(17..19)?);
    if !(1..=12).contains(&month) || !(1..=31).contains(&day) || hour > 23 || minute > 59 {
        return None;
    }
    // A leap second (`:60`) is kept as the next second.
    if second > 60 {
        return None;
    }
    let mut rest = &s[19..];
    let mut frac_nanos: i64 = 0;
    if let Some(f) = rest.strip_prefix('.').or_else(|| rest.strip_prefix(',')) {
        let digits = f.bytes().take_while(u8::is_ascii_digit).count();
        if digits == 0 {
            return None;
        }
        // Nanoseconds: the first nine digits, right-padded.
        let kept = &f[..digits.min(9)];
        frac_nanos = format!("{kept:0<9}").parse().ok()?;
        rest = &f[digits..];
    }
    let offset_secs: i64 = match rest {
        "" | "Z" | "z" => 0,
        tz => {
            let sign = match tz.as_bytes()[0] {
                b'+' => 1,
                b'-' => -1,
                _ => return None,
            };
            let hm = tz[1..].replace(':', "");
            if hm.len() != 4 || !hm.bytes().all(|c| c.is_ascii_digit()) {
                return None;
            }
            let h: i64 = hm[..2].parse().ok()?;
            let m: i64 = hm[2..].parse().ok()?;
            sign * (h * 3600 + m * 60)
        }
    };
    let days = days_from_civil(year, month, day);
    let secs = days * 86_400 + hour * 3600 + minute * 60 + second - offset_secs;
    if secs < 0 {
        return None;
    }
    u64::try_from(secs)
        .ok()?
        .checked_mul(1_000_000_000)?
        .checked_add(u64::try_from(frac_nanos).ok()?)
}

/// Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's algorithm).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = if y >= 0 { y } else { y - 399 } / 400;
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

pub(crate) fn kv(key: &str, value: any_value::Value) -> KeyValue {
    KeyValue {
        key: key.to_string(),
        value: Some(AnyValue { value: Some(value) }),
        ..Default::default()
    }
}

pub(crate) fn str_kv(key: &str, value: &str) -> KeyValue {
    kv(key, any_value::Value::StringValue(value.to_string()))
}

/// A JSON value as an OTLP value: strings, booleans, integers (when they fit
/// an i64), doubles, arrays and objects keep their type; `null` is an empty
/// value.
pub(crate) fn json_to_any(v: &Value) -> AnyValue {
    let value = match v {
        Value::String(s) => Some(any_value::Value::StringValue(s.clone())),
        Value::Bool(b) => Some(any_value::Value::BoolValue(*b)),
        Value::Number(n) => Some(match n.as_i64() {
            Some(i) => any_value::Value::IntValue(i),
            None => any_value::Value::DoubleValue(n.as_f64().unwrap_or(f64::NAN)),
        }),
        Value::Array(a) => Some(any_value::Value::ArrayValue(ArrayValue {
            values: a.iter().map(json_to_any).collect(),
        })),
        Value::Object(m) => Some(any_value::Value::KvlistValue(KeyValueList {
            values: m
                .iter()
                .map(|(k, v)| KeyValue {
                    key: k.clone(),
                    value: Some(json_to_any(v)),
                    ..Default::default()
                })
                .collect(),
        })),
        Value::Null => None,
    };
    AnyValue { value }
}

/// A JSON object, as a value or as its map: what the converters read
/// fields of.
pub(crate) trait Fields {
    fn field(&self, key: &str) -> Option<&Value>;
}

impl Fields for Value {
    fn field(&self, key: &str) -> Option<&Value> {
        self.get(key)
    }
}

impl Fields for Map<String, Value> {
    fn field(&self, key: &str) -> Option<&Value> {
        self.get(key)
    }
}

/// `o[key]` as text; empty when absent or not a string.
pub(crate) fn text_of(o: &impl Fields, key: &str) -> String {
    o.field(key)
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string()
}

/// The items of the list `o[key]`; none when absent or not a list.
pub(crate) fn items<'a>(o: &'a impl Fields, key: &str) -> impl Iterator<Item = &'a Value> {
    o.field(key).and_then(Value::as_array).into_iter().flatten()
}

/// A JSON object's members as attributes (anything else: none).
pub(crate) fn object_attrs(v: Option<&Value>) -> Vec<KeyValue> {
    match v {
        Some(Value::Object(m)) => m
            .iter()
            .map(|(k, v)| KeyValue {
                key: k.clone(),
                value: Some(json_to_any(v)),
                ..Default::default()
            })
            .collect(),
        _ => Vec::new(),
    }
}

/// Removes attribute `key` and returns its value.
pub(crate) fn take_attr(attrs: &mut Vec<KeyValue>, key: &str) -> Option<any_value::Value> {
    let i = attrs.iter().position(|kv| kv.key == key)?;
    attrs.remove(i).value.and_then(|v| v.value)
}

/// The text of a string value, or the JSON-ish text of a scalar.
pub(crate) fn any_text(v: &any_value::Value) -> String {
    match v {
        any_value::Value::StringValue(s) => s.clone(),
        any_value::Value::BoolValue(b) => b.to_string(),
        any_value::Value::IntValue(i) => i.to_string(),
        any_value::Value::DoubleValue(d) => d.to_string(),
        _ => String::new(),
    }
}

/// Collects spans into resource blocks (one per distinct resource key, in
/// first-seen order) and, inside, scope blocks (one per name and version).
#[derive(Default)]
pub(crate) struct Grouper {
    index: HashMap<String, usize>,
    out: Vec<ResourceSpans>,
}

impl Grouper {
    /// Adds `span` under the resource known by `key` (built by `resource`
    /// the first time the key is seen) and the scope `(name, version)`.
    pub(crate) fn push(
        &mut self,
        key: &str,
        resource: impl FnOnce() -> (Resource, String),
        scope: (String, String),
        span: Span,
    ) {
        let i = match self.index.get(key) {
            Some(&i) => i,
            None => {
                let (resource, schema_url) = resource();
                self.out.push(ResourceSpans {
                    resource: Some(resource),
                    scope_spans: Vec::new(),
                    schema_url,
                });
                self.index.insert(key.to_string(), self.out.len() - 1);
                self.out.len() - 1
            }
        };
        let rs = &mut self.out[i];
        let found = rs.scope_spans.iter().position(|ss| {
            ss.scope
                .as_ref()
                .is_some_and(|s| s.name == scope.0 && s.version == scope.1)
        });
        let ss = match found {
            Some(j) => &mut rs.scope_spans[j],
            None => {
                rs.scope_spans.push(ScopeSpans {
                    scope: Some(InstrumentationScope {
                        name: scope.0,
                        version: scope.1,
                        ..Default::default()
                    }),
                    ..Default::default()
                });
                let last = rs.scope_spans.len() - 1;
                &mut rs.scope_spans[last]
            }
        };
        ss.spans.push(span);
    }

    pub(crate) fn finish(self) -> ExportTraceServiceRequest {
        ExportTraceServiceRequest {
            resource_spans: self.out,
        }
    }
}

/// A span attribute's value, for the converters' tests.
#[cfg(test)]
pub(super) fn test_attr<'a>(
    attrs: &'a [opentelemetry_proto::tonic::common::v1::KeyValue],
    k: &str,
) -> Option<&'a opentelemetry_proto::tonic::common::v1::any_value::Value> {
    attrs
        .iter()
        .find(|kv| kv.key == k)
        .and_then(|kv| kv.value.as_ref())
        .and_then(|v| v.value.as_ref())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hex_ids_are_left_padded_and_checked() {
        assert_eq!(
            hex_id("00000000000000aa", 16, "trace id").unwrap(),
            [vec![0u8; 15], vec![0xaa]].concat()
        );
        // Go's `%x` dropped leading zeros: the same id.
        assert_eq!(
            hex_id("aa", 8, "span id").unwrap(),
            hex_id("00000000000000aa", 8, "span id").unwrap()
        );
        assert_eq!(hex_id("0x00f067aa0ba902b7", 8, "x").unwrap()[1], 0xf0);
        assert!(hex_id("0123456789abcdef0", 8, "span id")
            .unwrap_err()
            .contains("up to 16 digits"));
        assert!(hex_id("zz", 8, "span id").is_err());
        assert!(hex_id("0000", 8, "span id")
            .unwrap_err()
            .contains("all zeros"));
        assert!(hex_id("", 8, "span id").unwrap_err().contains("empty"));
    }

    #[test]
    fn iso_times() {
        assert_eq!(iso_to_nanos("1970-01-01T00:00:00Z"), Some(0));
        assert_eq!(
            iso_to_nanos("2024-05-01T12:00:00.123456Z"),
            Some(1_714_564_800_123_456_000)
        );
        assert_eq!(
            iso_to_nanos("2024-05-01T14:00:00.123456789+02:00"),
            Some(1_714_564_800_123_456_789)
        );
        // Leap day, and no zone (read as UTC).
        assert_eq!(
            iso_to_nanos("2024-02-29T00:00:00"),
            Some(1_709_164_800_000_000_000)
        );
        assert_eq!(iso_to_nanos("2024-13-01T00:00:00Z"), None);
        assert_eq!(iso_to_nanos("yesterday"), None);
        assert_eq!(iso_to_nanos("1969-12-31T23:59:59Z"), None);
    }

    #[test]
    fn micros() {
        assert_eq!(
            micros_to_nanos(&serde_json::json!(1_714_564_800_123_456u64), "t"),
            Ok(1_714_564_800_123_456_000)
        );
        assert_eq!(micros_to_nanos(&serde_json::json!("12"), "t"), Ok(12_000));
        assert!(micros_to_nanos(&serde_json::json!(-1), "t").is_err());
        assert!(micros_to_nanos(&serde_json::json!(u64::MAX), "t").is_err());
    }
}
