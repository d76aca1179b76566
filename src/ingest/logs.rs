//! OTLP log records read as span events (docs/conventions.md, "Calls
//! written as log events").
//!
//! The OTel GenAI instrumentations of model clients write a call's
//! messages, tool calls included, as log records ("events") tied to the
//! call's span by trace id and span id, not on the span. A record with both
//! ids becomes an event of that span, in the shape the older GenAI span
//! events had: its name is the record's `event_name` (else its attribute
//! `event.name`), its time the record's (else the time it was observed),
//! its attributes the record's followed by the body's: a map body gives its
//! top-level keys, with values that are not scalars as JSON text; any other
//! body is the attribute `body`. The assembler puts the event on its span
//! (`assemble::Assembler::add_events`). Records without a span id have
//! nothing to join and are only counted.

use crate::value::json_kind;
use opentelemetry_proto::tonic::collector::logs::v1::ExportLogsServiceRequest;
use opentelemetry_proto::tonic::common::v1::{
    any_value, AnyValue, ArrayValue, KeyValue, KeyValueList,
};
use opentelemetry_proto::tonic::logs::v1::LogRecord;
use opentelemetry_proto::tonic::trace::v1::span::Event;
use serde_json::{Map, Number, Value};

use super::span::{find_attr, Id, Val};

/// A log record read as an event of span `span_id` of trace `trace_id`.
#[derive(Debug, Clone, PartialEq)]
pub struct SpanEvent {
    pub trace_id: Id,
    pub span_id: Id,
    pub event: Event,
}

/// The log records of an input (or of a request).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Logs {
    /// Records with a trace id and a span id, as events of that span.
    pub events: Vec<SpanEvent>,
    /// Records without a trace id or span id: nothing to join them to.
    pub without_span: usize,
}

impl Logs {
    /// Whether no record was read.
    pub fn is_empty(&self) -> bool {
        self.events.is_empty() && self.without_span == 0
    }

    /// Moves `other`'s records into these.
    pub fn append(&mut self, other: &mut Logs) {
        self.events.append(&mut other.events);
        self.without_span += std::mem::take(&mut other.without_span);
    }
}

/// The attribute older SDKs name an event in (before `event_name`).
const EVENT_NAME_KEY: &str = "event.name";
/// The attribute a body that is not a map goes to.
const BODY_KEY: &str = "body";

/// Record `r` as a span event; `Ok(None)` when it names no span, an error
/// when an id it has is not of OTLP's length.
pub fn event_of(r: LogRecord) -> Result<Option<SpanEvent>, String> {
    if !names_span(&r) {
        return Ok(None);
    }
    if let Some(why) = bad_ids(&r) {
        return Err(why);
    }
    let name = if r.event_name.is_empty() {
        find_attr(&r.attributes, EVENT_NAME_KEY)
            .and_then(Val::as_str)
            .unwrap_or_default()
            .to_string()
    } else {
        r.event_name
    };
    let mut attributes = r.attributes;
    match r.body.and_then(|b| b.value) {
        None => {}
        Some(any_value::Value::KvlistValue(kv)) => {
            attributes.extend(kv.values.into_iter().map(scalar_or_json))
        }
        Some(other) => attributes.push(scalar_or_json(KeyValue {
            key: BODY_KEY.to_string(),
            value: Some(AnyValue { value: Some(other) }),
            ..Default::default()
        })),
    }
    Ok(Some(SpanEvent {
        trace_id: Id::new(&r.trace_id),
        span_id: Id::new(&r.span_id),
        event: Event {
            time_unix_nano: if r.time_unix_nano != 0 {
                r.time_unix_nano
            } else {
                r.observed_time_unix_nano
            },
            name,
            attributes,
            dropped_attributes_count: r.dropped_attributes_count,
        },
    }))
}

/// Whether record `r` has both a trace id and a span id.
fn names_span(r: &LogRecord) -> bool {
    let empty = |id: &[u8]| id.iter().all(|&b| b == 0);
    !empty(&r.trace_id) && !empty(&r.span_id)
}

/// Why record `r` is refused: ids that are not of OTLP's length (a record
/// without span context is not refused).
fn bad_ids(r: &LogRecord) -> Option<String> {
    (names_span(r) && (r.trace_id.len() != 16 || r.span_id.len() != 8)).then(|| {
        format!(
            "trace id of {} bytes and span id of {} bytes (must be 16 and 8)",
            r.trace_id.len(),
            r.span_id.len()
        )
    })
}

/// Leaves out of `req` the records [`from_proto`] refuses (what a
/// processor forwards is what it accepted); their number.
pub fn retain_accepted(req: &mut ExportLogsServiceRequest) -> usize {
    let mut left_out = 0;
    for sl in req
        .resource_logs
        .iter_mut()
        .flat_map(|rl| rl.scope_logs.iter_mut())
    {
        let before = sl.log_records.len();
        sl.log_records.retain(|r| bad_ids(r).is_none());
        left_out += before - sl.log_records.len();
    }
    left_out
}

/// The number of log records in `req`.
pub fn record_count(req: &ExportLogsServiceRequest) -> usize {
    req.resource_logs
        .iter()
        .flat_map(|rl| &rl.scope_logs)
        .map(|sl| sl.log_records.len())
        .sum()
}

/// `kv` with a list or map value as its JSON text (how span events carry
/// a message); scalars stay as they are.
fn scalar_or_json(mut kv: KeyValue) -> KeyValue {
    if let Some(v) = &kv.value {
        if matches!(
            v.value,
            Some(any_value::Value::ArrayValue(_) | any_value::Value::KvlistValue(_))
        ) {
            let text = json_of(v).to_string();
            kv.value = Some(AnyValue {
                value: Some(any_value::Value::StringValue(text)),
            });
        }
    }
    kv
}

/// An OTLP value as plain JSON (bytes as hex, as extraction shows them).
fn json_of(v: &AnyValue) -> Value {
    match &v.value {
        None | Some(any_value::Value::StringValueStrindex(_)) => Value::Null,
        Some(any_value::Value::StringValue(s)) => Value::String(s.clone()),
        Some(any_value::Value::BoolValue(b)) => Value::Bool(*b),
        Some(any_value::Value::IntValue(i)) => Value::Number((*i).into()),
        Some(any_value::Value::DoubleValue(d)) => {
            Number::from_f64(*d).map_or(Value::Null, Value::Number)
        }
        Some(any_value::Value::BytesValue(b)) => {
            Value::String(b.iter().map(|x| format!("{x:02x}")).collect())
        }
        Some(any_value::Value::ArrayValue(a)) => {
            Value::Array(a.values.iter().map(json_of).collect())
        }
        Some(any_value::Value::KvlistValue(kv)) => Value::Object(
            kv.values
                .iter()
                .map(|p| (p.key.clone(), p.value.as_ref().map_or(Value::Null, json_of)))
                .collect::<Map<String, Value>>(),
        ),
    }
}

/// The records of a protobuf logs request; the reasons of those left out.
pub fn from_proto(req: ExportLogsServiceRequest) -> (Logs, Vec<String>) {
    let mut logs = Logs::default();
    let mut bad = Vec::new();
    for (i, rl) in req.resource_logs.into_iter().enumerate() {
        for (j, sl) in rl.scope_logs.into_iter().enumerate() {
            for (k, r) in sl.log_records.into_iter().enumerate() {
                match event_of(r) {
                    Ok(Some(e)) => logs.events.push(e),
                    Ok(None) => logs.without_span += 1,
                    Err(why) => bad.push(format!(
                        "log record resourceLogs[{i}].scopeLogs[{j}].logRecords[{k}]: {why}"
                    )),
                }
            }
        }
    }
    (logs, bad)
}

/// Whether protobuf `bytes` are a logs request with records in it (a
/// trace request's bytes do not decode as one: a log record's first field
/// is a fixed64 where a span's is bytes).
pub fn decode_proto(bytes: &[u8]) -> Option<ExportLogsServiceRequest> {
    use prost::Message;
    ExportLogsServiceRequest::decode(bytes).ok().filter(|r| {
        r.resource_logs
            .iter()
            .flat_map(|rl| &rl.scope_logs)
            .any(|sl| !sl.log_records.is_empty())
    })
}

/// The records of an OTLP/JSON logs document (one request, or a JSON array
/// of them); the reasons of those left out, each naming its place. Ids are
/// hex or base64, integers numbers or strings, as on spans.
pub fn decode_json(doc: &[u8]) -> Result<(Logs, Vec<String>), serde_json::Error> {
    let v: Value = serde_json::from_slice(doc)?;
    let mut logs = Logs::default();
    let mut bad = Vec::new();
    let requests: Vec<&Value> = match &v {
        Value::Array(list) => list.iter().collect(),
        other => vec![other],
    };
    for (n, req) in requests.into_iter().enumerate() {
        let at = if matches!(v, Value::Array(_)) {
            format!("[{n}].resourceLogs")
        } else {
            "resourceLogs".to_string()
        };
        let each = |v: &Value, key: &str, at: &str, bad: &mut Vec<String>| -> Vec<Value> {
            match v.get(key) {
                None | Some(Value::Null) => Vec::new(),
                Some(Value::Array(list)) => list.clone(),
                Some(other) => {
                    bad.push(format!("{at}.{key}: {} is not a list", json_kind(other)));
                    Vec::new()
                }
            }
        };
        let resource_logs = match req.get("resourceLogs") {
            Some(Value::Array(list)) => list.as_slice(),
            None | Some(Value::Null) => &[],
            Some(other) => {
                bad.push(format!("{at}: {} is not a list", json_kind(other)));
                &[]
            }
        };
        for (i, rl) in resource_logs.iter().enumerate() {
            let at = format!("{at}[{i}]");
            for (j, sl) in each(rl, "scopeLogs", &at, &mut bad).iter().enumerate() {
                let at = format!("{at}.scopeLogs[{j}]");
                for (k, r) in each(sl, "logRecords", &at, &mut bad).iter().enumerate() {
                    match json_record(r).and_then(event_of) {
                        Ok(Some(e)) => logs.events.push(e),
                        Ok(None) => logs.without_span += 1,
                        Err(why) => bad.push(format!("log record {at}.logRecords[{k}]: {why}")),
                    }
                }
            }
        }
    }
    Ok((logs, bad))
}

/// One OTLP/JSON log record, with the fields read here.
fn json_record(r: &Value) -> Result<LogRecord, String> {
    let o = r
        .as_object()
        .ok_or_else(|| format!("{} is not an object", json_kind(r)))?;
    let id = |key: &str, trace: bool| -> Result<Vec<u8>, String> {
        match o.get(key) {
            None | Some(Value::Null) => Ok(Vec::new()),
            Some(Value::String(s)) if s.is_empty() => Ok(Vec::new()),
            Some(Value::String(s)) => super::otlp_json::log_id(s, trace),
            Some(other) => Err(format!("{key} is {}, not a string", json_kind(other))),
        }
    };
    let time = |key: &str| -> Result<u64, String> {
        match o.get(key) {
            None | Some(Value::Null) => Ok(0),
            Some(Value::Number(n)) => n.as_u64().ok_or_else(|| format!("{key} {n} is not a u64")),
            Some(Value::String(s)) => s.parse().map_err(|_| format!("{key} \"{s}\" is not a u64")),
            Some(other) => Err(format!("{key} is {}, not a number", json_kind(other))),
        }
    };
    let attributes = match o.get("attributes") {
        None | Some(Value::Null) => Vec::new(),
        Some(v) => key_values(v, 0).map_err(|e| format!("attributes: {e}"))?,
    };
    let body = match o.get("body") {
        None | Some(Value::Null) => None,
        Some(v) => Some(any_of(v, 0).map_err(|e| format!("body: {e}"))?),
    };
    let event_name = match o.get("eventName") {
        None | Some(Value::Null) => String::new(),
        Some(Value::String(s)) => s.clone(),
        Some(other) => return Err(format!("eventName is {}, not a string", json_kind(other))),
    };
    Ok(LogRecord {
        time_unix_nano: time("timeUnixNano")?,
        observed_time_unix_nano: time("observedTimeUnixNano")?,
        body,
        attributes,
        trace_id: id("traceId", true)?,
        span_id: id("spanId", false)?,
        event_name,
        ..Default::default()
    })
}

/// Nesting of values deeper than this is refused (serde_json's own limit
/// is 128, so this is rarely what stops).
const MAX_DEPTH: usize = 64;

/// A JSON list of `{"key", "value"}` objects.
fn key_values(v: &Value, depth: usize) -> Result<Vec<KeyValue>, String> {
    let list = v
        .as_array()
        .ok_or_else(|| format!("{} is not a list", json_kind(v)))?;
    list.iter()
        .map(|kv| {
            let key = kv
                .get("key")
                .and_then(Value::as_str)
                .ok_or("an entry has no string `key`")?;
            let value = match kv.get("value") {
                None | Some(Value::Null) => None,
                Some(v) => Some(any_of(v, depth + 1).map_err(|e| format!("`{key}`: {e}"))?),
            };
            Ok(KeyValue {
                key: key.to_string(),
                value,
                ..Default::default()
            })
        })
        .collect()
}

/// An OTLP/JSON `AnyValue` (`{"stringValue": ...}`, `{"kvlistValue":
/// {"values": [...]}}`, ...); `{}` is an empty value.
fn any_of(v: &Value, depth: usize) -> Result<AnyValue, String> {
    use any_value::Value as V;
    if depth > MAX_DEPTH {
        return Err(format!("values nested deeper than {MAX_DEPTH}"));
    }
    let o = v
        .as_object()
        .ok_or_else(|| format!("{} is not an OTLP value object", json_kind(v)))?;
    let Some((key, inner)) = o.iter().next() else {
        return Ok(AnyValue { value: None });
    };
    let value = match (key.as_str(), inner) {
        ("stringValue", Value::String(s)) => V::StringValue(s.clone()),
        ("boolValue", Value::Bool(b)) => V::BoolValue(*b),
        ("intValue", Value::Number(n)) if n.as_i64().is_some() => {
            V::IntValue(n.as_i64().unwrap_or_default())
        }
        ("intValue", Value::String(s)) => V::IntValue(
            s.parse()
                .map_err(|_| format!("intValue \"{s}\" is not an integer"))?,
        ),
        ("doubleValue", Value::Number(n)) => V::DoubleValue(n.as_f64().unwrap_or(f64::NAN)),
        ("doubleValue", Value::String(s)) => V::DoubleValue(match s.as_str() {
            "NaN" => f64::NAN,
            "Infinity" => f64::INFINITY,
            "-Infinity" => f64::NEG_INFINITY,
            other => other
                .parse()
                .map_err(|_| format!("doubleValue \"{s}\" is not a number"))?,
        }),
        ("bytesValue", Value::String(s)) => V::BytesValue(
            super::otlp_json::base64(s.as_bytes())
                .ok_or_else(|| format!("bytesValue \"{s}\" is not base64"))?,
        ),
        ("arrayValue", a) => V::ArrayValue(ArrayValue {
            values: match a.get("values") {
                None | Some(Value::Null) => Vec::new(),
                Some(Value::Array(list)) => list
                    .iter()
                    .map(|x| any_of(x, depth + 1))
                    .collect::<Result<_, _>>()?,
                Some(other) => return Err(format!("arrayValue.values is {}", json_kind(other))),
            },
        }),
        ("kvlistValue", kv) => V::KvlistValue(KeyValueList {
            values: match kv.get("values") {
                None | Some(Value::Null) => Vec::new(),
                Some(list) => key_values(list, depth + 1)?,
            },
        }),
        (other, inner) => {
            return Err(format!(
                "`{other}` holding {} is not an OTLP value",
                json_kind(inner)
            ))
        }
    };
    Ok(AnyValue { value: Some(value) })
}

#[cfg(test)]
mod tests {
    use super::*;

    const RECORD: &str = r#"{"resourceLogs":[{"scopeLogs":[{"logRecords":[
      {"traceId":"0af7651916cd43dd8448eb211c80319c","spanId":"b7ad6b7169203331",
       "observedTimeUnixNano":"1700000000000000001","eventName":"gen_ai.choice",
       "attributes":[{"key":"gen_ai.system","value":{"stringValue":"openai"}}],
       "body":{"kvlistValue":{"values":[
         {"key":"index","value":{"intValue":"0"}},
         {"key":"message","value":{"kvlistValue":{"values":[
           {"key":"role","value":{"stringValue":"assistant"}},
           {"key":"tool_calls","value":{"arrayValue":{"values":[{"kvlistValue":{"values":[
             {"key":"id","value":{"stringValue":"call_1"}}]}}]}}}]}}}]}}},
      {"body":{"stringValue":"no span"}},
      {"traceId":"0af7651916cd43dd8448eb211c80319c","spanId":"b7ad6b7169203331",
       "timeUnixNano":5,"attributes":[{"key":"event.name","value":{"stringValue":"x"}}],
       "body":{"stringValue":"plain"}},
      {"traceId":"0af7","spanId":"b7ad6b7169203331"}
    ]}]}]}"#;

    #[test]
    fn records_become_span_events_with_their_body_flattened() {
        let (logs, bad) = decode_json(RECORD.as_bytes()).unwrap();
        assert_eq!(logs.without_span, 1);
        assert_eq!(bad.len(), 1, "{bad:?}");
        assert!(
            bad[0].contains("logRecords[3]") && bad[0].contains("trace id"),
            "{bad:?}"
        );
        let [choice, plain] = logs.events.as_slice() else {
            panic!("{:?}", logs.events)
        };
        assert_eq!(choice.event.name, "gen_ai.choice");
        assert_eq!(choice.event.time_unix_nano, 1_700_000_000_000_000_001);
        assert_eq!(format!("{:?}", choice.span_id), "b7ad6b7169203331");
        let attr = |e: &Event, k: &str| find_attr(&e.attributes, k).map(|v| format!("{v:?}"));
        assert_eq!(attr(&choice.event, "index").as_deref(), Some("Int(0)"));
        let message = find_attr(&choice.event.attributes, "message")
            .and_then(Val::as_str)
            .unwrap();
        let message: Value = serde_json::from_str(message).unwrap();
        assert_eq!(message["tool_calls"][0]["id"], "call_1");
        assert_eq!(plain.event.name, "x", "named by `event.name`");
        assert_eq!(plain.event.time_unix_nano, 5);
        assert_eq!(
            find_attr(&plain.event.attributes, "body").and_then(Val::as_str),
            Some("plain")
        );
    }

    #[test]
    fn protobuf_logs_read_alike_and_trace_requests_are_not_logs() {
        use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
        use opentelemetry_proto::tonic::logs::v1::{ResourceLogs, ScopeLogs};
        use prost::Message;
        let record = LogRecord {
            trace_id: vec![1; 16],
            span_id: vec![2; 8],
            event_name: "gen_ai.tool.message".into(),
            ..Default::default()
        };
        let req = ExportLogsServiceRequest {
            resource_logs: vec![ResourceLogs {
                scope_logs: vec![ScopeLogs {
                    log_records: vec![record],
                    ..Default::default()
                }],
                ..Default::default()
            }],
        };
        let bytes = req.encode_to_vec();
        let (logs, bad) = from_proto(decode_proto(&bytes).unwrap());
        assert!(bad.is_empty());
        assert_eq!(logs.events[0].event.name, "gen_ai.tool.message");
        let spans = ExportTraceServiceRequest::default().encode_to_vec();
        assert!(decode_proto(&spans).is_none());
    }
}
