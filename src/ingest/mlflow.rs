//! MLflow's native trace JSON (`Trace.to_json()`, schema 3; the older
//! schema-2 layout too) -> an OTLP `ExportTraceServiceRequest`, so the rest of
//! the pipeline does not know the difference.
//!
//! Schema 3: `{"info": {"trace_id": "tr-<hex>", "trace_metadata", "tags", ...},
//! "data": {"spans": [{"trace_id", "span_id", "parent_span_id" (base64),
//! "name", "start_time_unix_nano", "end_time_unix_nano", "status": {"code":
//! "STATUS_CODE_OK", "message"}, "attributes": {k: JSON-encoded string},
//! "events": [{"name", "time_unix_nano", "attributes"}]}]}}`.
//! Schema 2: spans have `"context": {"trace_id", "span_id"}` (hex, `0x`
//! prefix), `parent_id`, `start_time`/`end_time`, `status_code`,
//! `status_message`.
//!
//! Attribute values are kept as MLflow wrote them (JSON-encoded strings, as
//! over OTLP), so the MLflow convention reads both forms the same way. The
//! trace's metadata (e.g. `mlflow.trace.session`) and tags
//! (`mlflow.traceTag.<key>`) become resource attributes: they are what
//! sessions are grouped by, and MLflow's OTLP export loses them
//! (docs/conventions.md, "Dropped roots").

use super::convert::text_of;
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::{
    any_value, AnyValue, ArrayValue, InstrumentationScope, KeyValue, KeyValueList,
};
use opentelemetry_proto::tonic::resource::v1::Resource;
use opentelemetry_proto::tonic::trace::v1::{
    span, status, ResourceSpans, ScopeSpans, Span, Status,
};
use serde_json::{Map, Value};

/// Cheap test on a JSON document that has no `resourceSpans`: does it look
/// like MLflow trace JSON?
pub fn looks_like(doc: &[u8]) -> bool {
    let has = |needle: &[u8]| doc.windows(needle.len()).any(|w| w == needle);
    has(b"\"spans\"") && has(b"\"data\"") && has(b"\"info\"")
}

/// A converted document, and what was left out of it.
#[derive(Debug, Default)]
pub struct Converted {
    pub request: ExportTraceServiceRequest,
    /// Spans, or whole traces, that could not be read, each with the reason
    /// (naming the trace and the span) and the number of spans lost.
    pub rejected: Vec<(String, usize)>,
}

/// Converts one document: a trace object or a JSON array of them. A bad
/// span is left out alone and a trace that is not one (no `data.spans`
/// list) alone; the rest is kept. Errors only when nothing of the document
/// can be read (not JSON, or a lone object that is not a trace).
pub fn decode(doc: &[u8]) -> Result<Converted, String> {
    let v: Value = serde_json::from_slice(doc).map_err(|e| format!("not JSON: {e}"))?;
    let (traces, array): (Vec<&Value>, bool) = match &v {
        Value::Array(items) => (items.iter().collect(), true),
        obj => (vec![obj], false),
    };
    let mut out = Converted::default();
    for (n, t) in traces.into_iter().enumerate() {
        // Which trace, for people: its place in the array and its id.
        let id = t
            .pointer("/info/trace_id")
            .or_else(|| t.pointer("/info/request_id"))
            .and_then(Value::as_str);
        let label = match (array, id) {
            (true, Some(id)) => format!("trace #{} ({id}): ", n + 1),
            (true, None) => format!("trace #{}: ", n + 1),
            (false, Some(id)) => format!("trace {id}: "),
            (false, None) => String::new(),
        };
        match trace(t) {
            Ok((rs, bad)) => {
                out.rejected
                    .extend(bad.into_iter().map(|e| (format!("{label}{e}"), 1)));
                out.request.resource_spans.push(rs);
            }
            Err(e) if !array => return Err(e),
            Err(e) => {
                let spans = t.pointer("/data/spans").and_then(Value::as_array);
                out.rejected
                    .push((format!("{label}{e}"), spans.map_or(0, Vec::len)));
            }
        }
    }
    Ok(out)
}

/// One trace, and the reasons for the spans of it that were left out.
fn trace(t: &Value) -> Result<(ResourceSpans, Vec<String>), String> {
    let spans = t
        .pointer("/data/spans")
        .and_then(Value::as_array)
        .ok_or("no `data.spans` list: not MLflow trace JSON")?;
    let info = t.get("info").and_then(Value::as_object);
    // The trace id for spans that lack one: `info.trace_id` = `tr-<32 hex>`
    // (schema 3) or `info.request_id` (schema 2).
    let info_tid = info
        .and_then(|i| i.get("trace_id").or_else(|| i.get("request_id")))
        .and_then(Value::as_str)
        .and_then(|s| hex(s.trim_start_matches("tr-")))
        .filter(|b| b.len() == 16);
    let mut resource = vec![kv(
        "telemetry.sdk.name",
        any_value::Value::StringValue("mlflow".to_string()),
    )];
    if let Some(info) = info {
        for (k, v) in info
            .get("trace_metadata")
            .or_else(|| info.get("request_metadata"))
            .and_then(Value::as_object)
            .into_iter()
            .flatten()
        {
            resource.push(kv(k, json_to_any(v)));
        }
        for (k, v) in info
            .get("tags")
            .and_then(Value::as_object)
            .into_iter()
            .flatten()
        {
            resource.push(kv(&format!("mlflow.traceTag.{k}"), json_to_any(v)));
        }
    }
    let mut out = Vec::with_capacity(spans.len());
    let mut bad = Vec::new();
    for (i, s) in spans.iter().enumerate() {
        match span_of(s, info_tid.as_deref()) {
            Ok(span) => out.push(span),
            Err(e) => {
                // Name the span by its id as written, else its name.
                let what = s
                    .get("span_id")
                    .or_else(|| s.pointer("/context/span_id"))
                    .or_else(|| s.get("name"))
                    .and_then(Value::as_str)
                    .map(|v| format!("`{v}`"));
                bad.push(match what {
                    Some(w) => format!("span #{} {w} left out: {e}", i + 1),
                    None => format!("span #{} left out: {e}", i + 1),
                });
            }
        }
    }
    Ok((
        ResourceSpans {
            resource: Some(Resource {
                attributes: resource,
                ..Default::default()
            }),
            scope_spans: vec![ScopeSpans {
                scope: Some(InstrumentationScope {
                    name: "mlflow.tracing".to_string(),
                    ..Default::default()
                }),
                spans: out,
                ..Default::default()
            }],
            ..Default::default()
        },
        bad,
    ))
}

fn span_of(s: &Value, info_tid: Option<&[u8]>) -> Result<Span, String> {
    let o = s.as_object().ok_or("not an object")?;
    let ctx = o.get("context").and_then(Value::as_object);
    let field = |v3: &str, v2: &str| o.get(v3).or_else(|| ctx.and_then(|c| c.get(v2)));
    let id = |v: Option<&Value>, what: &str, len: usize| -> Result<Vec<u8>, String> {
        match v {
            None | Some(Value::Null) => Ok(Vec::new()),
            Some(Value::String(s)) if s.is_empty() => Ok(Vec::new()),
            Some(Value::String(s)) => decode_id(s, len).ok_or_else(|| format!("bad {what} `{s}`")),
            Some(other) => Err(format!("bad {what} {other}")),
        }
    };
    let mut trace_id = id(field("trace_id", "trace_id"), "trace id", 16)?;
    if trace_id.is_empty() {
        trace_id = info_tid.map(<[u8]>::to_vec).unwrap_or_default();
    }
    let span_id = id(field("span_id", "span_id"), "span id", 8)?;
    let parent = id(
        o.get("parent_span_id").or_else(|| o.get("parent_id")),
        "parent span id",
        8,
    )?;
    let time = |a: &str, b: &str| o.get(a).or_else(|| o.get(b)).map_or(Ok(0), nanos);
    let (code, message) = match o.get("status") {
        Some(Value::Object(st)) => (
            st.get("code").and_then(Value::as_str).unwrap_or(""),
            st.get("message").and_then(Value::as_str).unwrap_or(""),
        ),
        _ => (
            o.get("status_code").and_then(Value::as_str).unwrap_or(""),
            o.get("status_message")
                .and_then(Value::as_str)
                .unwrap_or(""),
        ),
    };
    let code = match code.trim_start_matches("STATUS_CODE_") {
        "OK" => status::StatusCode::Ok,
        "ERROR" => status::StatusCode::Error,
        _ => status::StatusCode::Unset,
    };
    let events = match o.get("events") {
        Some(Value::Array(evs)) => evs
            .iter()
            .map(|e| span::Event {
                name: text_of(e, "name"),
                time_unix_nano: e
                    .get("time_unix_nano")
                    .or_else(|| e.get("timestamp"))
                    .map_or(Ok(0), nanos)
                    .unwrap_or(0),
                attributes: attrs(e.get("attributes")),
                ..Default::default()
            })
            .collect(),
        _ => Vec::new(),
    };
    Ok(Span {
        trace_id,
        span_id,
        parent_span_id: parent,
        name: text_of(o, "name"),
        kind: span::SpanKind::Internal as i32,
        start_time_unix_nano: time("start_time_unix_nano", "start_time")?,
        end_time_unix_nano: time("end_time_unix_nano", "end_time")?,
        attributes: attrs(o.get("attributes")),
        events,
        status: Some(Status {
            code: code as i32,
            message: message.to_string(),
        }),
        ..Default::default()
    })
}

fn nanos(v: &Value) -> Result<u64, String> {
    match v {
        Value::Number(n) => n
            .as_u64()
            .or_else(|| n.as_f64().filter(|f| *f >= 0.0).map(|f| f as u64))
            .ok_or_else(|| format!("bad time {n}")),
        Value::String(s) => s.trim().parse().map_err(|_| format!("bad time `{s}`")),
        Value::Null => Ok(0),
        other => Err(format!("bad time {other}")),
    }
}

fn kv(key: &str, value: any_value::Value) -> KeyValue {
    KeyValue {
        key: key.to_string(),
        value: Some(AnyValue { value: Some(value) }),
        ..Default::default()
    }
}

fn attrs(v: Option<&Value>) -> Vec<KeyValue> {
    match v {
        Some(Value::Object(m)) => m.iter().map(|(k, v)| kv(k, json_to_any(v))).collect(),
        _ => Vec::new(),
    }
}

fn json_to_any(v: &Value) -> any_value::Value {
    match v {
        Value::String(s) => any_value::Value::StringValue(s.clone()),
        Value::Bool(b) => any_value::Value::BoolValue(*b),
        Value::Number(n) => match n.as_i64() {
            Some(i) => any_value::Value::IntValue(i),
            None => any_value::Value::DoubleValue(n.as_f64().unwrap_or(0.0)),
        },
        Value::Array(a) => any_value::Value::ArrayValue(ArrayValue {
            values: a
                .iter()
                .map(|x| AnyValue {
                    value: Some(json_to_any(x)),
                })
                .collect(),
        }),
        Value::Object(m) => any_value::Value::KvlistValue(KeyValueList { values: obj_kvs(m) }),
        Value::Null => any_value::Value::StringValue("null".to_string()),
    }
}

fn obj_kvs(m: &Map<String, Value>) -> Vec<KeyValue> {
    m.iter().map(|(k, v)| kv(k, json_to_any(v))).collect()
}

/// An id in any of MLflow's spellings: base64 (schema 3), hex with or
/// without `0x` (schema 2).
fn decode_id(s: &str, len: usize) -> Option<Vec<u8>> {
    let t = s.trim();
    let h = t.strip_prefix("0x").unwrap_or(t);
    if h.len() == 2 * len {
        if let Some(b) = hex(h) {
            return Some(b);
        }
    }
    base64(t).filter(|b| b.len() == len)
}

fn hex(s: &str) -> Option<Vec<u8>> {
    if !s.len().is_multiple_of(2) || !s.is_ascii() {
        return None;
    }
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).ok())
        .collect()
}

/// Standard or URL-safe base64, padding optional.
fn base64(s: &str) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(s.len() * 3 / 4);
    let mut acc: u32 = 0;
    let mut bits = 0;
    for c in s.bytes().filter(|&c| c != b'=') {
        let v = match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' | b'-' => 62,
            b'/' | b'_' => 63,
            _ => return None,
        };
        acc = (acc << 6) | u32::from(v);
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_in_every_spelling() {
        assert_eq!(
            decode_id("rQHE5ZXJHUs=", 8),
            Some(vec![0xad, 0x01, 0xc4, 0xe5, 0x95, 0xc9, 0x1d, 0x4b])
        );
        assert_eq!(
            decode_id("0xad01c4e595c91d4b", 8),
            decode_id("rQHE5ZXJHUs=", 8)
        );
        assert_eq!(
            decode_id("5Q8/cGSpf/9LAm3Qw6nkzA==", 16).map(|b| b[0]),
            Some(0xe5)
        );
        assert_eq!(decode_id("not base64!", 8), None);
    }

    #[test]
    fn schema_2_layout() {
        let doc = br#"{"info": {"request_id": "tr-0123456789abcdef0123456789abcdef"},
          "data": {"spans": [{"name": "get_weather",
            "context": {"span_id": "0x00000000000000aa", "trace_id": "0x0123456789abcdef0123456789abcdef"},
            "parent_id": null, "start_time": 5, "end_time": 9, "status_code": "ERROR",
            "status_message": "boom", "attributes": {"mlflow.spanType": "\"TOOL\""}, "events": []}]}}"#;
        assert!(looks_like(doc));
        let req = decode(doc).unwrap().request;
        let s = &req.resource_spans[0].scope_spans[0].spans[0];
        assert_eq!(s.trace_id.len(), 16);
        assert_eq!(s.span_id[7], 0xaa);
        assert_eq!(s.status.as_ref().map(|st| st.code), Some(2));
        assert_eq!(s.start_time_unix_nano, 5);
    }
}
