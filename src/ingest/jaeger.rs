//! Jaeger's JSON trace model (the query API's `/api/traces` and
//! `/api/traces/{id}` responses, and the UI's "Download Results") -> an OTLP
//! request, mapped the way the OpenTelemetry Collector's Jaeger translator
//! maps Jaeger spans to OTLP. See docs/formats.md for the field mapping.
//!
//! Shape: `{"data": [{"traceID", "spans": [{"traceID", "spanID",
//! "operationName", "references": [{"refType", "traceID", "spanID"}],
//! "startTime" (µs), "duration" (µs), "tags": [{"key", "type", "value"}],
//! "logs": [{"timestamp", "fields"}], "processID"}], "processes": {id:
//! {"serviceName", "tags"}}}], "total", "limit", "offset", "errors"}`.
//! A bare trace object, or a JSON array of them, is read too.

use crate::value::json_kind;
use opentelemetry_proto::tonic::common::v1::{any_value, KeyValue};
use opentelemetry_proto::tonic::resource::v1::Resource;
use opentelemetry_proto::tonic::trace::v1::{span, status, Span, Status};
use serde_json::{Map, Value};

use super::convert::{
    any_text, items, json_to_any, kv, micros_to_nanos, optional_id, required_id, span_problem,
    str_kv, take_attr, text_of, ConvertError, Converted, Grouper, Problem,
};

/// Whether a parsed JSON document is Jaeger JSON: a `data` list of traces
/// (or a query error response), a trace object, or a list of trace objects.
pub fn looks_like(v: &Value) -> bool {
    match v {
        Value::Object(o) => match o.get("data") {
            Some(Value::Array(items)) if !items.is_empty() => items.iter().any(is_trace),
            // The query API's envelope around no traces (`"data": []`) or
            // a failed query (`"data": null, "errors": [...]`).
            Some(Value::Array(_) | Value::Null) => {
                o.contains_key("errors") && o.contains_key("total")
            }
            _ => is_trace(v),
        },
        Value::Array(items) => !items.is_empty() && items.iter().all(is_trace),
        _ => false,
    }
}

fn is_trace(v: &Value) -> bool {
    v.as_object().is_some_and(|o| {
        o.get("spans").is_some_and(Value::is_array)
            && (o.contains_key("traceID") || o.contains_key("processes"))
    })
}

/// Converts one Jaeger JSON document. A span that cannot be read is left
/// out with a [`Problem`]; a document with no trace at all is an error.
pub fn to_request(v: &Value) -> Converted {
    let (traces, prefix): (Vec<&Value>, &str) = match v {
        Value::Object(o) => match o.get("data") {
            Some(Value::Array(items)) => (items.iter().collect(), "data"),
            Some(Value::Null) | None if !is_trace(v) => {
                return Err(ConvertError(query_errors(o)));
            }
            Some(other) if !is_trace(v) => {
                return Err(ConvertError(format!(
                    "`data` is {}, not a list of traces",
                    json_kind(other)
                )));
            }
            _ => (vec![v], ""),
        },
        Value::Array(items) => (items.iter().collect(), ""),
        other => {
            return Err(ConvertError(format!(
                "a Jaeger document is an object, not {}",
                json_kind(other)
            )))
        }
    };
    if traces.is_empty() {
        return Err(ConvertError(
            "the response holds no traces (`data` is empty)".to_string(),
        ));
    }
    let mut grouper = Grouper::default();
    let mut problems = Vec::new();
    let mut seen_spans = 0usize;
    for (ti, t) in traces.iter().enumerate() {
        let at = if prefix.is_empty() && traces.len() == 1 && matches!(v, Value::Object(_)) {
            String::new()
        } else {
            format!("{prefix}[{ti}]")
        };
        let Some(o) = t.as_object() else {
            problems.push(Problem {
                at,
                reason: format!("trace is {}, not an object", json_kind(t)),
                spans: 0,
            });
            continue;
        };
        let Some(spans) = o.get("spans").and_then(Value::as_array) else {
            problems.push(Problem {
                at,
                reason: "trace has no `spans` list".to_string(),
                spans: 0,
            });
            continue;
        };
        seen_spans += spans.len();
        let processes = o.get("processes").and_then(Value::as_object);
        let trace_id = o.get("traceID");
        for (si, s) in spans.iter().enumerate() {
            let span_at = if at.is_empty() {
                format!("spans[{si}]")
            } else {
                format!("{at}.spans[{si}]")
            };
            let name = s.get("operationName").and_then(Value::as_str).unwrap_or("");
            match span_of(s, trace_id) {
                Ok((span, scope)) => {
                    // A span may carry its own process (as the UI's model
                    // does); otherwise it names one of the trace's.
                    let (key, process) = match s.get("process") {
                        Some(p @ Value::Object(_)) => (format!("inline:{p}"), Some(p)),
                        _ => {
                            let pid = s.get("processID").and_then(Value::as_str).unwrap_or("");
                            (format!("{ti}:{pid}"), processes.and_then(|ps| ps.get(pid)))
                        }
                    };
                    grouper.push(&key, || (resource_of(process), String::new()), scope, span);
                }
                Err(why) => problems.push(span_problem(span_at, name, why)),
            }
        }
    }
    if seen_spans == 0 && problems.is_empty() {
        return Err(ConvertError(
            "no trace holds any span (every `spans` list is empty)".to_string(),
        ));
    }
    Ok((grouper.finish(), problems))
}

/// The message of a query API error response.
fn query_errors(o: &Map<String, Value>) -> String {
    let msgs: Vec<String> = items(o, "errors")
        .map(|e| match e.get("msg").and_then(Value::as_str) {
            Some(m) => m.to_string(),
            None => e.to_string(),
        })
        .collect();
    if msgs.is_empty() {
        "the response holds no traces (no `data` list)".to_string()
    } else {
        format!("the query returned errors, no traces: {}", msgs.join("; "))
    }
}

/// One span and its scope `(name, version)`.
fn span_of(s: &Value, trace_tid: Option<&Value>) -> Result<(Span, (String, String)), String> {
    let o = s.as_object().ok_or("not an object")?;
    let trace_id = required_id(o.get("traceID").or(trace_tid), 16, "traceID")?;
    let span_id = required_id(o.get("spanID"), 8, "spanID")?;
    let (parent, links) = parent_and_links(o, &trace_id)?;

    let start = match o.get("startTime") {
        None | Some(Value::Null) => 0,
        Some(t) => micros_to_nanos(t, "startTime")?,
    };
    let duration = match o.get("duration") {
        None | Some(Value::Null) => 0,
        Some(d) => micros_to_nanos(d, "duration")?,
    };
    let end = start
        .checked_add(duration)
        .ok_or("startTime + duration is out of range")?;

    let mut attrs = tags(o.get("tags"));
    let scope = take_scope(&mut attrs);
    let kind = take_kind(&mut attrs);
    let status = take_status(&mut attrs, kind);
    let trace_state = take_attr(&mut attrs, "w3c.tracestate")
        .map(|v| any_text(&v))
        .unwrap_or_default();

    let events = items(o, "logs")
        .map(event_of)
        .collect::<Result<Vec<_>, String>>()?;

    Ok((
        Span {
            trace_id,
            span_id,
            trace_state,
            parent_span_id: parent,
            name: text_of(o, "operationName"),
            kind: kind as i32,
            start_time_unix_nano: start,
            end_time_unix_nano: end,
            attributes: attrs,
            events,
            links,
            status,
            ..Default::default()
        },
        scope,
    ))
}

/// The parent span id and the links, from the `references`.
/// Parent: the first CHILD_OF reference within the trace, else the first
/// FOLLOWS_FROM one (as Jaeger's own model does), else `parentSpanID`.
/// Every other reference is a link.
fn parent_and_links(
    o: &Map<String, Value>,
    trace_id: &[u8],
) -> Result<(Vec<u8>, Vec<span::Link>), String> {
    let mut refs = Vec::new();
    for (i, r) in items(o, "references").enumerate() {
        let what = |f: &str| format!("references[{i}].{f}");
        let ref_type = r
            .get("refType")
            .and_then(Value::as_str)
            .unwrap_or("CHILD_OF");
        let rt = match r.get("traceID") {
            None | Some(Value::Null) => trace_id.to_vec(),
            t => required_id(t, 16, &what("traceID"))?,
        };
        let rs = required_id(r.get("spanID"), 8, &what("spanID"))?;
        refs.push((ref_type.eq_ignore_ascii_case("FOLLOWS_FROM"), rt, rs));
    }
    let same_trace = |follows: bool| {
        refs.iter()
            .position(|(f, t, _)| *f == follows && *t == trace_id)
    };
    let parent_ref = same_trace(false).or_else(|| same_trace(true));
    let parent = match parent_ref {
        Some(i) => refs[i].2.clone(),
        None => optional_id(o.get("parentSpanID"), 8, "parentSpanID")?.unwrap_or_default(),
    };
    let links = refs
        .iter()
        .enumerate()
        // The CHILD_OF reference that became the parent is not a link too.
        .filter(|(i, (follows, _, _))| *follows || Some(*i) != parent_ref)
        .map(|(_, (follows, t, s))| span::Link {
            trace_id: t.clone(),
            span_id: s.clone(),
            attributes: vec![str_kv(
                "opentracing.ref_type",
                if *follows { "follows_from" } else { "child_of" },
            )],
            ..Default::default()
        })
        .collect();
    Ok((parent, links))
}

/// Jaeger has no kind field: OpenTracing writers tag `span.kind`, which
/// is the kind, not an attribute.
fn take_kind(attrs: &mut Vec<KeyValue>) -> span::SpanKind {
    match take_attr(attrs, "span.kind").map(|v| any_text(&v)) {
        None => span::SpanKind::Unspecified,
        Some(k) => match k.as_str() {
            "client" => span::SpanKind::Client,
            "server" => span::SpanKind::Server,
            "producer" => span::SpanKind::Producer,
            "consumer" => span::SpanKind::Consumer,
            "internal" => span::SpanKind::Internal,
            _ => span::SpanKind::Unspecified,
        },
    }
}

/// A log -> an event, named by its `event` field (OpenTracing's
/// convention), the other fields its attributes.
fn event_of(l: &Value) -> Result<span::Event, String> {
    let time = match l.get("timestamp") {
        None | Some(Value::Null) => 0,
        Some(t) => micros_to_nanos(t, "log timestamp")?,
    };
    let mut attributes = tags(l.get("fields"));
    let name = take_attr(&mut attributes, "event")
        .map(|v| any_text(&v))
        .unwrap_or_default();
    Ok(span::Event {
        time_unix_nano: time,
        name,
        attributes,
        ..Default::default()
    })
}

/// Typed tags `[{"key", "type", "value"}]` -> attributes. `binary` values
/// are base64 text in Jaeger JSON and stay text (as the Collector writes
/// them); a value that does not fit its declared type, or an unknown type,
/// keeps the JSON value's own type.
fn tags(v: Option<&Value>) -> Vec<KeyValue> {
    let Some(items) = v.and_then(Value::as_array) else {
        return Vec::new();
    };
    items
        .iter()
        .filter_map(|t| {
            let key = t.get("key").and_then(Value::as_str)?;
            let value = t.get("value").unwrap_or(&Value::Null);
            let ty = t.get("type").and_then(Value::as_str).unwrap_or("");
            let typed = match (ty.to_ascii_lowercase().as_str(), value) {
                ("string" | "binary", Value::String(s)) => {
                    Some(any_value::Value::StringValue(s.clone()))
                }
                ("string", other) => Some(any_value::Value::StringValue(other.to_string())),
                ("bool", Value::Bool(b)) => Some(any_value::Value::BoolValue(*b)),
                ("bool", Value::String(s)) => s.parse().ok().map(any_value::Value::BoolValue),
                ("int64", Value::Number(n)) => n.as_i64().map(any_value::Value::IntValue),
                ("int64", Value::String(s)) => s.parse().ok().map(any_value::Value::IntValue),
                ("float64", Value::Number(n)) => n.as_f64().map(any_value::Value::DoubleValue),
                ("float64", Value::String(s)) => s.parse().ok().map(any_value::Value::DoubleValue),
                _ => None,
            };
            let value = match typed {
                Some(t) => Some(t),
                None => json_to_any(value).value,
            };
            Some(KeyValue {
                key: key.to_string(),
                value: Some(opentelemetry_proto::tonic::common::v1::AnyValue { value }),
                ..Default::default()
            })
        })
        .collect()
}

/// `otel.scope.name` / `otel.scope.version` (or the older
/// `otel.library.*`) tags are the scope, not attributes.
fn take_scope(attrs: &mut Vec<KeyValue>) -> (String, String) {
    for (name_key, version_key) in [
        ("otel.scope.name", "otel.scope.version"),
        ("otel.library.name", "otel.library.version"),
    ] {
        if let Some(name) = take_attr(attrs, name_key) {
            let version = take_attr(attrs, version_key)
                .map(|v| any_text(&v))
                .unwrap_or_default();
            return (any_text(&name), version);
        }
    }
    (String::new(), String::new())
}

/// The Collector's order: `error = true` wins (message from
/// `otel.status_description`, else `http.status_message`); else
/// `otel.status_code`; else an HTTP status code.
fn take_status(attrs: &mut Vec<KeyValue>, kind: span::SpanKind) -> Option<Status> {
    let is_true = |v: &any_value::Value| match v {
        any_value::Value::BoolValue(b) => *b,
        any_value::Value::StringValue(s) => s.eq_ignore_ascii_case("true"),
        _ => false,
    };
    let get = |attrs: &Vec<KeyValue>, k: &str| {
        attrs
            .iter()
            .find(|kv| kv.key == k)
            .and_then(|kv| kv.value.as_ref())
            .and_then(|v| v.value.clone())
    };
    let mut found: Option<(status::StatusCode, String)> = None;
    if get(attrs, "error").is_some_and(|v| is_true(&v)) {
        take_attr(attrs, "error");
        let msg = take_attr(attrs, "otel.status_description")
            .or_else(|| get(attrs, "http.status_message"))
            .map(|v| any_text(&v))
            .unwrap_or_default();
        found = Some((status::StatusCode::Error, msg));
    }
    if let Some(code) = take_attr(attrs, "otel.status_code") {
        if found.is_none() {
            let code = match any_text(&code)
                .to_ascii_uppercase()
                .trim_start_matches("STATUS_CODE_")
            {
                "OK" => status::StatusCode::Ok,
                "ERROR" => status::StatusCode::Error,
                _ => status::StatusCode::Unset,
            };
            let msg = take_attr(attrs, "otel.status_description")
                .map(|v| any_text(&v))
                .unwrap_or_default();
            found = Some((code, msg));
        }
    } else if found.is_none() {
        if let Some(http) = get(attrs, "http.status_code") {
            let n = match &http {
                any_value::Value::IntValue(i) => Some(*i),
                any_value::Value::StringValue(s) => s.trim().parse().ok(),
                _ => None,
            };
            let code = match n {
                Some(400..=499) if kind == span::SpanKind::Server => status::StatusCode::Unset,
                Some(100..=398) => status::StatusCode::Unset,
                Some(_) => status::StatusCode::Error,
                None => status::StatusCode::Unset,
            };
            if code != status::StatusCode::Unset {
                let msg = get(attrs, "http.status_message")
                    .map(|v| any_text(&v))
                    .unwrap_or_default();
                found = Some((code, msg));
            }
        }
    }
    found.map(|(code, message)| Status {
        code: code as i32,
        message,
    })
}

/// A process -> a resource: `serviceName` is `service.name`, the tags are
/// attributes; `hostname` becomes `host.name` and `jaeger.version`
/// `opencensus.exporterversion`, as the Collector does.
fn resource_of(process: Option<&Value>) -> Resource {
    let Some(p) = process else {
        return Resource::default();
    };
    let mut attrs = Vec::new();
    let service = p.get("serviceName").and_then(Value::as_str).unwrap_or("");
    // The Collector's marker for "no service name" when it wrote the span.
    if !service.is_empty() && service != "OTLPResourceNoServiceName" {
        attrs.push(str_kv("service.name", service));
    }
    attrs.extend(tags(p.get("tags")));
    let has = |attrs: &Vec<KeyValue>, k: &str| attrs.iter().any(|kv| kv.key == k);
    if has(&attrs, "hostname") && !has(&attrs, "host.name") {
        if let Some(v) = take_attr(&mut attrs, "hostname") {
            attrs.push(kv("host.name", v));
        }
    }
    if has(&attrs, "jaeger.version") && !has(&attrs, "opencensus.exporterversion") {
        if let Some(v) = take_attr(&mut attrs, "jaeger.version") {
            attrs.push(str_kv(
                "opencensus.exporterversion",
                &format!("Jaeger-{}", any_text(&v)),
            ));
        }
    }
    Resource {
        attributes: attrs,
        ..Default::default()
    }
}

#[cfg(test)]
mod tests {
    use super::super::convert::test_attr as attr;
    use super::*;
    use serde_json::json;

    fn doc() -> Value {
        json!({"data": [{
            "traceID": "5b8efff798038103d269b633813fc60c",
            "spans": [
                {"traceID": "5b8efff798038103d269b633813fc60c", "spanID": "eee19b7ec3c1b174",
                 "operationName": "invoke_agent weather", "references": [],
                 "startTime": 1714564800000000u64, "duration": 2500000, "processID": "p1",
                 "tags": [{"key": "span.kind", "type": "string", "value": "server"}]},
                {"traceID": "5b8efff798038103d269b633813fc60c", "spanID": "eee19b7ec3c1b175",
                 "operationName": "execute_tool get_weather",
                 "references": [
                    {"refType": "CHILD_OF", "traceID": "5b8efff798038103d269b633813fc60c", "spanID": "eee19b7ec3c1b174"},
                    {"refType": "FOLLOWS_FROM", "traceID": "5b8efff798038103d269b633813fc60c", "spanID": "00000000000000aa"}],
                 "startTime": 1714564800100000u64, "duration": 1500, "processID": "p1",
                 "tags": [
                    {"key": "otel.scope.name", "type": "string", "value": "opentelemetry.instrumentation.openai_agents"},
                    {"key": "otel.scope.version", "type": "string", "value": "0.1.0"},
                    {"key": "span.kind", "type": "string", "value": "internal"},
                    {"key": "gen_ai.tool.call.arguments", "type": "string", "value": "{\"city\": \"Paris\"}"},
                    {"key": "retry", "type": "int64", "value": 2},
                    {"key": "temperature", "type": "float64", "value": 0.5},
                    {"key": "cached", "type": "bool", "value": false},
                    {"key": "blob", "type": "binary", "value": "AAEC"},
                    {"key": "error", "type": "bool", "value": true},
                    {"key": "otel.status_code", "type": "string", "value": "ERROR"},
                    {"key": "otel.status_description", "type": "string", "value": "city not found"}],
                 "logs": [{"timestamp": 1714564800100500u64, "fields": [
                    {"key": "event", "type": "string", "value": "exception"},
                    {"key": "exception.message", "type": "string", "value": "boom"}]}]}
            ],
            "processes": {"p1": {"serviceName": "weather-agent", "tags": [
                {"key": "telemetry.sdk.language", "type": "string", "value": "python"},
                {"key": "hostname", "type": "string", "value": "box-1"}]}}
        }], "total": 0, "limit": 0, "offset": 0, "errors": null})
    }

    #[test]
    fn maps_like_the_collector() {
        let v = doc();
        assert!(looks_like(&v));
        let (req, problems) = to_request(&v).unwrap();
        assert!(problems.is_empty(), "{problems:?}");
        assert_eq!(req.resource_spans.len(), 1);
        let rs = &req.resource_spans[0];
        let res = &rs.resource.as_ref().unwrap().attributes;
        assert_eq!(
            attr(res, "service.name"),
            Some(&any_value::Value::StringValue("weather-agent".into()))
        );
        assert!(attr(res, "host.name").is_some() && attr(res, "hostname").is_none());
        // Two scopes: the empty one and the tool's.
        assert_eq!(rs.scope_spans.len(), 2);
        let root = &rs.scope_spans[0].spans[0];
        assert_eq!(root.kind, span::SpanKind::Server as i32);
        assert!(root.parent_span_id.is_empty());
        assert_eq!(root.start_time_unix_nano, 1_714_564_800_000_000_000);
        assert_eq!(root.end_time_unix_nano, 1_714_564_802_500_000_000);
        assert!(root.status.is_none());

        let ss = &rs.scope_spans[1];
        let scope = ss.scope.as_ref().unwrap();
        assert_eq!(
            (scope.name.as_str(), scope.version.as_str()),
            ("opentelemetry.instrumentation.openai_agents", "0.1.0")
        );
        let tool = &ss.spans[0];
        assert_eq!(tool.parent_span_id, root.span_id);
        assert_eq!(tool.kind, span::SpanKind::Internal as i32);
        let st = tool.status.as_ref().unwrap();
        assert_eq!(st.code, status::StatusCode::Error as i32);
        assert_eq!(st.message, "city not found");
        for k in [
            "span.kind",
            "error",
            "otel.status_code",
            "otel.status_description",
            "otel.scope.name",
        ] {
            assert!(attr(&tool.attributes, k).is_none(), "{k} kept");
        }
        assert_eq!(
            attr(&tool.attributes, "retry"),
            Some(&any_value::Value::IntValue(2))
        );
        assert_eq!(
            attr(&tool.attributes, "temperature"),
            Some(&any_value::Value::DoubleValue(0.5))
        );
        assert_eq!(
            attr(&tool.attributes, "cached"),
            Some(&any_value::Value::BoolValue(false))
        );
        assert_eq!(
            attr(&tool.attributes, "blob"),
            Some(&any_value::Value::StringValue("AAEC".into()))
        );
        // The FOLLOWS_FROM reference is a link; the parent is not.
        assert_eq!(tool.links.len(), 1);
        assert_eq!(tool.links[0].span_id[7], 0xaa);
        assert_eq!(tool.events[0].name, "exception");
        assert_eq!(tool.events[0].time_unix_nano, 1_714_564_800_100_500_000);
        assert_eq!(tool.events[0].attributes.len(), 1);
    }

    #[test]
    fn short_trace_ids_and_status_codes() {
        let v = json!({"data": [{"traceID": "d269b633813fc60c", "spans": [
            {"spanID": "b174", "operationName": "a", "startTime": 1, "duration": 1,
             "tags": [{"key": "otel.status_code", "type": "string", "value": "OK"},
                      {"key": "otel.library.name", "type": "string", "value": "lib"}],
             "references": [], "processID": "p1"},
            {"spanID": "b175", "operationName": "b", "startTime": 1, "duration": 1,
             "parentSpanID": "b174", "processID": "p1",
             "tags": [{"key": "http.status_code", "type": "int64", "value": 503}]}],
            "processes": {"p1": {"serviceName": "svc"}}}]});
        let (req, problems) = to_request(&v).unwrap();
        assert!(problems.is_empty());
        let spans: Vec<&Span> = req.resource_spans[0]
            .scope_spans
            .iter()
            .flat_map(|ss| &ss.spans)
            .collect();
        // A 64-bit trace id is the low half of the 128-bit one.
        assert_eq!(
            spans[0].trace_id,
            [
                vec![0u8; 8],
                vec![0xd2, 0x69, 0xb6, 0x33, 0x81, 0x3f, 0xc6, 0x0c]
            ]
            .concat()
        );
        assert_eq!(spans[0].span_id, vec![0, 0, 0, 0, 0, 0, 0xb1, 0x74]);
        assert_eq!(
            spans[0].status.as_ref().map(|s| s.code),
            Some(status::StatusCode::Ok as i32)
        );
        assert_eq!(
            req.resource_spans[0].scope_spans[0]
                .scope
                .as_ref()
                .unwrap()
                .name,
            "lib"
        );
        assert_eq!(spans[1].parent_span_id, spans[0].span_id);
        assert_eq!(
            spans[1].status.as_ref().map(|s| s.code),
            Some(status::StatusCode::Error as i32)
        );
    }

    #[test]
    fn a_bad_span_is_rejected_alone() {
        let v = json!({"data": [{"traceID": "5b8efff798038103d269b633813fc60c", "spans": [
            {"spanID": "not-hex", "operationName": "get_weather", "startTime": 1, "duration": 1},
            {"spanID": "eee19b7ec3c1b174", "operationName": "ok", "startTime": 1, "duration": 1}],
            "processes": {}}]});
        let (req, problems) = to_request(&v).unwrap();
        assert_eq!(super::super::span_count(&req.clone().into()), 1);
        assert_eq!(problems.len(), 1);
        let p = problems[0].to_string();
        assert!(p.contains("data[0].spans[0]"), "{p}");
        assert!(
            p.contains("`get_weather`") && p.contains("spanID `not-hex`"),
            "{p}"
        );
    }

    #[test]
    fn empty_and_error_responses_are_errors() {
        let empty = json!({"data": [], "total": 0, "limit": 0, "offset": 0, "errors": null});
        assert!(to_request(&empty).unwrap_err().0.contains("no traces"));
        let failed = json!({"data": null, "total": 0, "limit": 0, "offset": 0,
            "errors": [{"code": 400, "msg": "trace ID is required"}]});
        assert!(looks_like(&failed));
        assert!(to_request(&failed)
            .unwrap_err()
            .0
            .contains("trace ID is required"));
        let no_spans = json!({"data": [{"traceID": "ab", "spans": [], "processes": {}}]});
        assert!(to_request(&no_spans)
            .unwrap_err()
            .0
            .contains("no trace holds any span"));
        // A bare trace object and an array of them.
        let bare = json!({"traceID": "ab", "spans": [{"spanID": "1", "startTime": 1, "duration": 1}], "processes": {}});
        assert!(looks_like(&bare));
        assert_eq!(
            super::super::span_count(&to_request(&bare).unwrap().0.into()),
            1
        );
        assert!(looks_like(&json!([bare])));
        // Not Jaeger: MLflow's `data` is an object; Zipkin is a span list.
        assert!(!looks_like(&json!({"info": {}, "data": {"spans": []}})));
        assert!(!looks_like(&json!([{"traceId": "ab", "id": "1"}])));
    }
}
