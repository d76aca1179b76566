//! Zipkin v2 JSON (a list of spans, as `/api/v2/spans` takes and
//! `/api/v2/trace/{id}` returns; `/api/v2/traces` returns a list of such
//! lists) -> an OTLP request, mapped the way the OpenTelemetry Collector's
//! Zipkin v2 translator maps it. See docs/formats.md for the field mapping.
//!
//! Span: `{"traceId", "id", "parentId", "name", "kind", "timestamp" (µs),
//! "duration" (µs), "localEndpoint": {"serviceName", "ipv4", "ipv6",
//! "port"}, "remoteEndpoint": {...}, "annotations": [{"timestamp",
//! "value"}], "tags": {string: string}, "debug", "shared"}`.

use opentelemetry_proto::tonic::common::v1::{any_value, KeyValue};
use opentelemetry_proto::tonic::resource::v1::Resource;
use opentelemetry_proto::tonic::trace::v1::{span, status, Span, Status};
use serde_json::{Map, Value};

use super::convert::{
    items, json_to_any, kv, micros_to_nanos, optional_id, required_id, span_problem, str_kv,
    text_of, ConvertError, Converted, Grouper,
};

/// Whether a parsed JSON document is Zipkin v2 JSON: a non-empty list of
/// span objects with `traceId` and `id`, or a list of such lists.
pub fn looks_like(v: &Value) -> bool {
    let Value::Array(items) = v else {
        return false;
    };
    let is_span = |s: &Value| {
        s.as_object().is_some_and(|o| {
            o.contains_key("traceId") && o.contains_key("id") && !o.contains_key("resourceSpans")
        })
    };
    let mut spans = items
        .iter()
        .flat_map(|i| match i {
            Value::Array(inner) => inner.iter().collect::<Vec<_>>(),
            other => vec![other],
        })
        .peekable();
    spans.peek().is_some() && spans.any(is_span)
}

/// Tag keys that describe the resource in OTel's conventions: the
/// Collector moves them from the span to the resource (OTel SDKs' Zipkin
/// exporters copy resource attributes into every span's tags).
const RESOURCE_PREFIXES: &[&str] = &[
    "service.",
    "telemetry.sdk.",
    "telemetry.auto.",
    "host.",
    "os.",
    "process.",
    "container.",
    "k8s.",
    "cloud.",
    "deployment.",
    "device.",
];

/// Converts one Zipkin v2 document. A span that cannot be read is left out
/// with a [`Problem`](super::convert::Problem).
pub fn to_request(v: &Value) -> Converted {
    let Value::Array(items) = v else {
        return Err(ConvertError(
            "a Zipkin v2 document is a list of spans".to_string(),
        ));
    };
    let mut spans: Vec<(String, &Value)> = Vec::new();
    for (i, item) in items.iter().enumerate() {
        match item {
            Value::Array(inner) => spans.extend(
                inner
                    .iter()
                    .enumerate()
                    .map(|(j, s)| (format!("[{i}][{j}]"), s)),
            ),
            s => spans.push((format!("[{i}]"), s)),
        }
    }
    if spans.is_empty() {
        return Err(ConvertError("the list holds no spans".to_string()));
    }
    let mut grouper = Grouper::default();
    let mut problems = Vec::new();
    for (at, s) in spans {
        let name = s.get("name").and_then(Value::as_str).unwrap_or("");
        match span_of(s) {
            Ok((span, resource, scope)) => {
                let key = resource_key(&resource);
                grouper.push(&key, || (resource, String::new()), scope, span);
            }
            Err(why) => problems.push(span_problem(at, name, why)),
        }
    }
    Ok((grouper.finish(), problems))
}

fn resource_key(r: &Resource) -> String {
    let mut parts: Vec<String> = r
        .attributes
        .iter()
        .map(|kv| format!("{}={:?}", kv.key, kv.value))
        .collect();
    parts.sort();
    parts.join("\u{1f}")
}

/// One span, its resource and its scope `(name, version)`.
fn span_of(s: &Value) -> Result<(Span, Resource, (String, String)), String> {
    let o = s.as_object().ok_or("not an object")?;
    if o.contains_key("binaryAnnotations") {
        // v1 keeps tags and endpoints elsewhere: read as v2, its tool
        // attributes would be lost without a word.
        return Err("a Zipkin v1 span (`binaryAnnotations`); only Zipkin v2 JSON is read".into());
    }
    let trace_id = required_id(o.get("traceId"), 16, "traceId")?;
    let span_id = required_id(o.get("id"), 8, "id")?;
    let parent = optional_id(o.get("parentId"), 8, "parentId")?
        // A span that names itself as parent is a root (the Collector's rule).
        .filter(|p| *p != span_id)
        .unwrap_or_default();

    let mut tags = Tags::of(o)?;
    let kind = kind_of(o, &mut tags);
    let trace_state = tags.take("w3c.tracestate").unwrap_or_default();
    let status = status_of(&mut tags);
    let scope = scope_of(&mut tags);

    let local = o.get("localEndpoint").and_then(Value::as_object);
    let remote = o.get("remoteEndpoint").and_then(Value::as_object);
    let (resource_attrs, mut attrs) = split_resource(local, tags);
    endpoint_attrs(local, "net.host", None, &mut attrs);
    endpoint_attrs(remote, "net.peer", Some("peer.service"), &mut attrs);
    let (start, end) = times(o, &mut attrs)?;

    let events = items(o, "annotations")
        .map(annotation)
        .collect::<Result<Vec<_>, String>>()?;

    Ok((
        Span {
            trace_id,
            span_id,
            trace_state,
            parent_span_id: parent,
            name: text_of(o, "name"),
            kind: kind as i32,
            start_time_unix_nano: start,
            end_time_unix_nano: end,
            attributes: attrs,
            events,
            status,
            ..Default::default()
        },
        Resource {
            attributes: resource_attrs,
            ..Default::default()
        },
        scope,
    ))
}

/// A span's tags in document order. OTel writers encode span fields
/// (kind, status, scope) as tags: those are taken out as they are read,
/// so that what is left becomes attributes.
struct Tags(Vec<(String, String)>);

impl Tags {
    fn of(o: &Map<String, Value>) -> Result<Self, String> {
        match o.get("tags") {
            Some(Value::Object(m)) => Ok(Tags(
                m.iter()
                    .map(|(k, v)| {
                        let text = match v {
                            Value::String(s) => s.clone(),
                            // Zipkin tags are strings; a sloppy writer's number stays readable.
                            other => other.to_string(),
                        };
                        (k.clone(), text)
                    })
                    .collect(),
            )),
            None | Some(Value::Null) => Ok(Tags(Vec::new())),
            Some(other) => Err(format!("tags {other} is not an object")),
        }
    }

    /// Removes the tag `k` and returns its value.
    fn take(&mut self, k: &str) -> Option<String> {
        let i = self.0.iter().position(|(key, _)| key == k)?;
        Some(self.0.remove(i).1)
    }
}

/// Zipkin's `kind` has no INTERNAL: OTel writers leave it out and tag
/// `span.kind` instead.
fn kind_of(o: &Map<String, Value>, tags: &mut Tags) -> span::SpanKind {
    match o
        .get("kind")
        .and_then(Value::as_str)
        .map(str::to_ascii_uppercase)
    {
        Some(k) if k == "CLIENT" => span::SpanKind::Client,
        Some(k) if k == "SERVER" => span::SpanKind::Server,
        Some(k) if k == "PRODUCER" => span::SpanKind::Producer,
        Some(k) if k == "CONSUMER" => span::SpanKind::Consumer,
        _ => match tags.take("span.kind") {
            Some(k) if k == "internal" => span::SpanKind::Internal,
            _ => span::SpanKind::Unspecified,
        },
    }
}

/// Status: `otel.status_code` (+ `otel.status_description`), then any
/// `error` tag makes it an error (Zipkin's own convention); the tag is
/// dropped only when it is the bare `true`, else it moves to the end of
/// the tags.
fn status_of(tags: &mut Tags) -> Option<Status> {
    let mut st: Option<Status> = None;
    if let Some(code) = tags.take("otel.status_code") {
        let code = match code.to_ascii_uppercase().trim_start_matches("STATUS_CODE_") {
            "OK" => status::StatusCode::Ok,
            "ERROR" => status::StatusCode::Error,
            _ => status::StatusCode::Unset,
        };
        st = Some(Status {
            code: code as i32,
            message: tags.take("otel.status_description").unwrap_or_default(),
        });
    }
    let kept_error = tags.take("error").and_then(|e| {
        st.get_or_insert_with(Status::default).code = status::StatusCode::Error as i32;
        (e != "true").then_some(e)
    });
    if let Some(e) = kept_error {
        tags.0.push(("error".to_string(), e));
    }
    st
}

/// Scope: `otel.scope.*`, else the older `otel.library.*`; both are
/// written by OTel SDKs, neither stays an attribute.
fn scope_of(tags: &mut Tags) -> (String, String) {
    let scope_name = tags.take("otel.scope.name");
    let scope_version = tags.take("otel.scope.version");
    let lib_name = tags.take("otel.library.name");
    let lib_version = tags.take("otel.library.version");
    match (scope_name, lib_name) {
        (Some(n), _) => (n, scope_version.unwrap_or_default()),
        (None, Some(n)) => (n, lib_version.unwrap_or_default()),
        (None, None) => (String::new(), String::new()),
    }
}

/// The remaining tags -> `(resource attributes, span attributes)`: the
/// local endpoint's service name and the tags under [`RESOURCE_PREFIXES`]
/// describe the resource.
fn split_resource(
    local: Option<&Map<String, Value>>,
    tags: Tags,
) -> (Vec<KeyValue>, Vec<KeyValue>) {
    let mut resource_attrs = Vec::new();
    if let Some(svc) = local
        .and_then(|l| l.get("serviceName"))
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
    {
        resource_attrs.push(str_kv("service.name", svc));
    }
    let mut attrs = Vec::with_capacity(tags.0.len() + 4);
    for (k, v) in tags.0 {
        if k == "service.name" && !resource_attrs.is_empty() {
            continue;
        }
        if RESOURCE_PREFIXES.iter().any(|p| k.starts_with(p)) {
            resource_attrs.push(str_kv(&k, &v));
        } else {
            attrs.push(str_kv(&k, &v));
        }
    }
    (resource_attrs, attrs)
}

/// `(start, end)` in nanoseconds from the µs `timestamp` and `duration`.
fn times(o: &Map<String, Value>, attrs: &mut Vec<KeyValue>) -> Result<(u64, u64), String> {
    let duration = match o.get("duration") {
        None | Some(Value::Null) => 0,
        Some(d) => micros_to_nanos(d, "duration")?,
    };
    let start = match o.get("timestamp") {
        None | Some(Value::Null) => {
            // The Collector's marker for a span written without a start.
            attrs.push(kv(
                "otel.zipkin.absentField.startTime",
                any_value::Value::BoolValue(true),
            ));
            0
        }
        Some(t) => micros_to_nanos(t, "timestamp")?,
    };
    let end = start
        .checked_add(duration)
        .ok_or("timestamp + duration is out of range")?;
    Ok((start, end))
}

fn endpoint_attrs(
    ep: Option<&Map<String, Value>>,
    prefix: &str,
    service_key: Option<&str>,
    attrs: &mut Vec<KeyValue>,
) {
    let Some(ep) = ep else { return };
    if let Some(key) = service_key {
        if let Some(svc) = ep
            .get("serviceName")
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
        {
            attrs.push(str_kv(key, svc));
        }
    }
    for ip in ["ipv4", "ipv6"] {
        if let Some(addr) = ep.get(ip).and_then(Value::as_str).filter(|s| !s.is_empty()) {
            attrs.push(str_kv(&format!("{prefix}.ip"), addr));
        }
    }
    if let Some(port) = ep.get("port").and_then(Value::as_i64).filter(|p| *p > 0) {
        attrs.push(kv(
            &format!("{prefix}.port"),
            any_value::Value::IntValue(port),
        ));
    }
}

/// An annotation -> an event. Its value is the event name, except in the
/// two encodings OTel writers use for named events with attributes: the
/// Collector's `name|{json attributes}|dropped count`, and the OTel Python
/// exporter's `{"name": {attributes}}`.
fn annotation(a: &Value) -> Result<span::Event, String> {
    let time = match a.get("timestamp") {
        None | Some(Value::Null) => 0,
        Some(t) => micros_to_nanos(t, "annotation timestamp")?,
    };
    let value = a.get("value").and_then(Value::as_str).unwrap_or("");
    let mut event = span::Event {
        time_unix_nano: time,
        name: value.to_string(),
        ..Default::default()
    };
    if let Ok(Value::Object(m)) = serde_json::from_str::<Value>(value) {
        if let (1, Some((name, Value::Object(attrs)))) = (m.len(), m.iter().next()) {
            event.name = name.clone();
            event.attributes = event_attrs(attrs);
        }
        return Ok(event);
    }
    let parts: Vec<&str> = value.split('|').collect();
    if parts.len() >= 3 {
        let json = parts[1..parts.len() - 1].join("|");
        let dropped = parts[parts.len() - 1].parse::<u32>();
        if let (Ok(Value::Object(attrs)), Ok(dropped)) =
            (serde_json::from_str::<Value>(&json), dropped)
        {
            event.name = parts[0].to_string();
            event.attributes = event_attrs(&attrs);
            event.dropped_attributes_count = dropped;
        }
    } else if parts.len() == 2 {
        event.name = parts[0].to_string();
    }
    Ok(event)
}

fn event_attrs(m: &Map<String, Value>) -> Vec<KeyValue> {
    m.iter()
        .map(|(k, v)| KeyValue {
            key: k.clone(),
            value: Some(json_to_any(v)),
            ..Default::default()
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::super::convert::test_attr as attr;
    use super::*;
    use serde_json::json;

    fn doc() -> Value {
        json!([
            {"traceId": "5b8efff798038103d269b633813fc60c", "id": "eee19b7ec3c1b174",
             "name": "invoke_agent travel", "kind": "SERVER",
             "timestamp": 1714564800000000u64, "duration": 2000000,
             "localEndpoint": {"serviceName": "travel-agent", "ipv4": "10.0.0.5", "port": 8080},
             "tags": {"otel.status_code": "OK", "telemetry.sdk.language": "python",
                      "service.version": "1.2.0"}},
            {"traceId": "5b8efff798038103d269b633813fc60c", "id": "eee19b7ec3c1b175",
             "parentId": "eee19b7ec3c1b174", "name": "execute_tool search_flights",
             "timestamp": 1714564800100000u64, "duration": 1500,
             "localEndpoint": {"serviceName": "travel-agent"},
             "remoteEndpoint": {"serviceName": "flights-api", "port": 443},
             "annotations": [
                {"timestamp": 1714564800100200u64, "value": "{\"gen_ai.tool.message\": {\"content\": \"{}\"}}"},
                {"timestamp": 1714564800100300u64, "value": "retry|{\"attempt\":2}|0"},
                {"timestamp": 1714564800100400u64, "value": "cache miss"}],
             "tags": {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "search_flights",
                      "otel.scope.name": "opentelemetry.instrumentation.openai_agents",
                      "otel.scope.version": "0.1.0",
                      "otel.library.name": "opentelemetry.instrumentation.openai_agents",
                      "otel.library.version": "0.1.0",
                      "otel.status_code": "ERROR", "error": "no flights on that day",
                      "telemetry.sdk.language": "python", "service.version": "1.2.0"}}
        ])
    }

    #[test]
    fn maps_like_the_collector() {
        let v = doc();
        assert!(looks_like(&v));
        let (req, problems) = to_request(&v).unwrap();
        assert!(problems.is_empty(), "{problems:?}");
        assert_eq!(req.resource_spans.len(), 1, "same service, same resource");
        let rs = &req.resource_spans[0];
        let res = &rs.resource.as_ref().unwrap().attributes;
        assert_eq!(
            attr(res, "service.name"),
            Some(&any_value::Value::StringValue("travel-agent".into()))
        );
        assert!(attr(res, "telemetry.sdk.language").is_some());
        let root = &rs.scope_spans[0].spans[0];
        assert_eq!(root.kind, span::SpanKind::Server as i32);
        assert_eq!(root.start_time_unix_nano, 1_714_564_800_000_000_000);
        assert_eq!(root.end_time_unix_nano, 1_714_564_802_000_000_000);
        assert_eq!(root.status.as_ref().map(|s| s.code), Some(1));
        assert_eq!(
            attr(&root.attributes, "net.host.port"),
            Some(&any_value::Value::IntValue(8080))
        );
        assert!(attr(&root.attributes, "telemetry.sdk.language").is_none());

        let ss = &rs.scope_spans[1];
        assert_eq!(
            ss.scope
                .as_ref()
                .map(|s| (s.name.as_str(), s.version.as_str())),
            Some(("opentelemetry.instrumentation.openai_agents", "0.1.0"))
        );
        let tool = &ss.spans[0];
        assert_eq!(tool.parent_span_id, root.span_id);
        assert_eq!(tool.kind, span::SpanKind::Unspecified as i32);
        assert_eq!(tool.status.as_ref().map(|s| s.code), Some(2));
        // The error tag carries the message, so it stays.
        assert_eq!(
            attr(&tool.attributes, "error"),
            Some(&any_value::Value::StringValue(
                "no flights on that day".into()
            ))
        );
        assert_eq!(
            attr(&tool.attributes, "peer.service"),
            Some(&any_value::Value::StringValue("flights-api".into()))
        );
        for k in ["otel.status_code", "otel.scope.name", "otel.library.name"] {
            assert!(attr(&tool.attributes, k).is_none(), "{k} kept");
        }
        let names: Vec<&str> = tool.events.iter().map(|e| e.name.as_str()).collect();
        assert_eq!(names, ["gen_ai.tool.message", "retry", "cache miss"]);
        assert_eq!(tool.events[0].attributes[0].key, "content");
        assert_eq!(
            attr(&tool.events[1].attributes, "attempt"),
            Some(&any_value::Value::IntValue(2))
        );
        assert_eq!(tool.events[0].time_unix_nano, 1_714_564_800_100_200_000);
    }

    #[test]
    fn bad_spans_are_rejected_alone_and_lists_of_traces_read() {
        let v = json!([[
            {"traceId": "5b8efff798038103d269b633813fc60c", "id": "xyz", "name": "get_weather"},
            {"traceId": "d269b633813fc60c", "id": "b175", "parentId": "b175",
             "name": "ok", "tags": {"span.kind": "internal", "error": "true"}}
        ]]);
        assert!(looks_like(&v));
        let (req, problems) = to_request(&v).unwrap();
        assert_eq!(problems.len(), 1);
        let p = problems[0].to_string();
        assert!(p.starts_with("[0][0]: span `get_weather` rejected"), "{p}");
        let s = &req.resource_spans[0].scope_spans[0].spans[0];
        assert_eq!(s.trace_id[..8], [0u8; 8]);
        assert!(s.parent_span_id.is_empty(), "self-parent is a root");
        assert_eq!(s.kind, span::SpanKind::Internal as i32);
        assert_eq!(s.status.as_ref().map(|s| s.code), Some(2));
        assert!(attr(&s.attributes, "error").is_none());
        // No timestamp: start 0 and the Collector's marker.
        assert_eq!(
            attr(&s.attributes, "otel.zipkin.absentField.startTime"),
            Some(&any_value::Value::BoolValue(true))
        );
    }

    #[test]
    fn detection() {
        assert!(!looks_like(&json!([])));
        assert!(!looks_like(&json!({"traceId": "ab", "id": "1"})));
        assert!(!looks_like(&json!([{"resourceSpans": []}])));
        assert!(!looks_like(&json!([{"traceID": "ab", "spans": []}])));
        assert!(to_request(&json!([[]])).unwrap_err().0.contains("no spans"));
        let v1 = json!([{"traceId": "ab", "id": "1", "name": "get", "annotations": [],
            "binaryAnnotations": [{"key": "tool", "value": "x"}]}]);
        let (_, problems) = to_request(&v1).unwrap();
        assert!(problems[0].reason.contains("Zipkin v1"), "{problems:?}");
    }
}
