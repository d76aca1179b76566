//! The OpenTelemetry Python SDK's span JSON (`ReadableSpan.to_json()`, what
//! `ConsoleSpanExporter` prints: pretty-printed objects, one per span,
//! concatenated) -> an OTLP request. The caller splits concatenated objects;
//! this reads one span object, or a JSON array of them. See
//! docs/formats.md for the field mapping.
//!
//! Span: `{"name", "context": {"trace_id": "0x<32 hex>", "span_id":
//! "0x<16 hex>", "trace_state"}, "kind": "SpanKind.INTERNAL", "parent_id":
//! "0x<16 hex>" | null, "start_time": ISO-8601, "end_time", "status":
//! {"status_code": "UNSET" | "OK" | "ERROR", "description"}, "attributes",
//! "events": [{"name", "timestamp", "attributes"}], "links": [{"context",
//! "attributes"}], "resource": {"attributes", "schema_url"}}`.

use opentelemetry_proto::tonic::common::v1::KeyValue;
use opentelemetry_proto::tonic::resource::v1::Resource;
use opentelemetry_proto::tonic::trace::v1::{span, status, Span, Status};
use serde_json::{Map, Value};

use super::convert::{
    iso_to_nanos, items, object_attrs, optional_id, required_id, span_items, span_problem, text_of,
    Converted, Grouper,
};

/// Whether a parsed JSON document is one span object of the Python SDK (a
/// `context` with a `trace_id`), or a list of them.
pub fn looks_like(v: &Value) -> bool {
    match v {
        Value::Array(items) => !items.is_empty() && items.iter().all(is_span),
        other => is_span(other),
    }
}

fn is_span(v: &Value) -> bool {
    v.get("context")
        .and_then(|c| c.get("trace_id"))
        .is_some_and(Value::is_string)
}

/// Converts one span object, or a list of them (a bad item is left out
/// with a [`Problem`](super::convert::Problem)).
pub fn to_request(v: &Value) -> Converted {
    let items = span_items(v)?;
    let mut grouper = Grouper::default();
    let mut problems = Vec::new();
    for (at, s) in items {
        let name = s.get("name").and_then(Value::as_str).unwrap_or("");
        match span_of(s) {
            Ok(span) => {
                let resource = s.get("resource");
                // Spans of one process share their resource; key it by its text.
                let key = resource.map(Value::to_string).unwrap_or_default();
                grouper.push(
                    &key,
                    || resource_of(resource),
                    (String::new(), String::new()),
                    span,
                );
            }
            Err(why) => problems.push(span_problem(at, name, why)),
        }
    }
    Ok((grouper.finish(), problems))
}

fn span_of(s: &Value) -> Result<Span, String> {
    let o = s.as_object().ok_or("not an object")?;
    let ctx = o
        .get("context")
        .and_then(Value::as_object)
        .ok_or("no `context` object")?;
    let trace_id = required_id(ctx.get("trace_id"), 16, "context.trace_id")?;
    let span_id = required_id(ctx.get("span_id"), 8, "context.span_id")?;
    let parent = optional_id(o.get("parent_id"), 8, "parent_id")?.unwrap_or_default();
    let time = |k: &str| -> Result<u64, String> {
        match o.get(k) {
            None | Some(Value::Null) => Ok(0),
            Some(Value::String(t)) => {
                iso_to_nanos(t).ok_or_else(|| format!("{k} `{t}` is not an ISO-8601 time"))
            }
            // Nanoseconds, as some hand-rolled dumps write them.
            Some(Value::Number(n)) => n.as_u64().ok_or_else(|| format!("{k} {n} is not a time")),
            Some(other) => Err(format!("{k} {other} is not a time")),
        }
    };
    let start = time("start_time")?;
    let end = time("end_time")?;

    let events = items(o, "events")
        .enumerate()
        .map(|(i, e)| event_of(i, e))
        .collect::<Result<Vec<_>, String>>()?;

    let links = items(o, "links")
        .enumerate()
        .map(|(i, l)| link_of(i, l))
        .collect::<Result<Vec<_>, String>>()?;

    Ok(Span {
        trace_id,
        span_id,
        parent_span_id: parent,
        name: text_of(o, "name"),
        kind: kind_of(o) as i32,
        start_time_unix_nano: start,
        end_time_unix_nano: end,
        attributes: object_attrs(o.get("attributes")),
        events,
        links,
        status: status_of(o),
        ..Default::default()
    })
}

/// `kind`: the Python enum's text (`SpanKind.CLIENT`), or the OTLP name
/// (`SPAN_KIND_CLIENT`) that other dumps write.
fn kind_of(o: &Map<String, Value>) -> span::SpanKind {
    let kind_text = o.get("kind").and_then(Value::as_str).unwrap_or("");
    let kind_text = kind_text.to_ascii_uppercase();
    let kind_text = kind_text
        .trim_start_matches("SPANKIND.")
        .trim_start_matches("SPAN_KIND_");
    match kind_text {
        "INTERNAL" => span::SpanKind::Internal,
        "SERVER" => span::SpanKind::Server,
        "CLIENT" => span::SpanKind::Client,
        "PRODUCER" => span::SpanKind::Producer,
        "CONSUMER" => span::SpanKind::Consumer,
        _ => span::SpanKind::Unspecified,
    }
}

/// `status`: `{"status_code", "description"}`, the code as the Python
/// enum's text or the OTLP name.
fn status_of(o: &Map<String, Value>) -> Option<Status> {
    o.get("status").and_then(Value::as_object).map(|st| {
        let code = st.get("status_code").and_then(Value::as_str).unwrap_or("");
        let code = match code
            .to_ascii_uppercase()
            .trim_start_matches("STATUSCODE.")
            .trim_start_matches("STATUS_CODE_")
        {
            "OK" => status::StatusCode::Ok,
            "ERROR" => status::StatusCode::Error,
            _ => status::StatusCode::Unset,
        };
        Status {
            code: code as i32,
            message: text_of(st, "description"),
        }
    })
}

/// The `i`th event. A timestamp that cannot be read rejects the span,
/// as a span's own times do.
fn event_of(i: usize, e: &Value) -> Result<span::Event, String> {
    let time = match e.get("timestamp") {
        Some(Value::String(t)) => iso_to_nanos(t)
            .ok_or_else(|| format!("events[{i}].timestamp `{t}` is not an ISO-8601 time"))?,
        Some(Value::Number(n)) => n.as_u64().unwrap_or(0),
        _ => 0,
    };
    Ok(span::Event {
        time_unix_nano: time,
        name: text_of(e, "name"),
        attributes: object_attrs(e.get("attributes")),
        ..Default::default()
    })
}

/// The `i`th link: its `context` ids are required.
fn link_of(i: usize, l: &Value) -> Result<span::Link, String> {
    let c = l.get("context");
    let what = |f: &str| format!("links[{i}].context.{f}");
    Ok(span::Link {
        trace_id: required_id(c.and_then(|c| c.get("trace_id")), 16, &what("trace_id"))?,
        span_id: required_id(c.and_then(|c| c.get("span_id")), 8, &what("span_id"))?,
        attributes: object_attrs(l.get("attributes")),
        ..Default::default()
    })
}

/// `{"attributes": {...}, "schema_url": "..."}`; SDK releases before the
/// resource had its own `to_json` wrote the attributes map alone.
fn resource_of(v: Option<&Value>) -> (Resource, String) {
    let Some(Value::Object(m)) = v else {
        return (Resource::default(), String::new());
    };
    let wrapped = matches!(m.get("attributes"), Some(Value::Object(_)))
        && m.keys().all(|k| k == "attributes" || k == "schema_url");
    let (attrs, schema): (Vec<KeyValue>, String) = if wrapped {
        (object_attrs(m.get("attributes")), text_of(m, "schema_url"))
    } else {
        (
            object_attrs(Some(&Value::Object(Map::clone(m)))),
            String::new(),
        )
    };
    (
        Resource {
            attributes: attrs,
            ..Default::default()
        },
        schema,
    )
}

#[cfg(test)]
mod tests {
    use super::super::convert::test_attr as attr;
    use super::*;
    use opentelemetry_proto::tonic::common::v1::any_value;
    use serde_json::json;

    fn tool_span() -> Value {
        json!({
            "name": "execute_tool get_weather",
            "context": {"trace_id": "0x5b8efff798038103d269b633813fc60c",
                        "span_id": "0xeee19b7ec3c1b175", "trace_state": "[]"},
            "kind": "SpanKind.CLIENT",
            "parent_id": "0xeee19b7ec3c1b174",
            "start_time": "2024-05-01T12:00:00.100000Z",
            "end_time": "2024-05-01T12:00:00.101500Z",
            "status": {"status_code": "ERROR", "description": "ValueError: no such city"},
            "attributes": {"gen_ai.tool.name": "get_weather", "retries": 2, "score": 0.5,
                           "cached": false, "tags": ["a", "b"]},
            "events": [{"name": "exception", "timestamp": "2024-05-01T12:00:00.101000Z",
                        "attributes": {"exception.type": "ValueError"}}],
            "links": [{"context": {"trace_id": "0x0000000000000000000000000000abcd",
                                   "span_id": "0x00000000000000aa", "trace_state": "[]"},
                       "attributes": {"kind": "retry"}}],
            "resource": {"attributes": {"service.name": "weather-agent",
                                        "telemetry.sdk.language": "python"},
                         "schema_url": "https://opentelemetry.io/schemas/1.21.0"}
        })
    }

    #[test]
    fn maps_every_field() {
        let v = tool_span();
        assert!(looks_like(&v));
        let (req, problems) = to_request(&v).unwrap();
        assert!(problems.is_empty());
        let rs = &req.resource_spans[0];
        assert_eq!(rs.schema_url, "https://opentelemetry.io/schemas/1.21.0");
        assert_eq!(
            attr(&rs.resource.as_ref().unwrap().attributes, "service.name"),
            Some(&any_value::Value::StringValue("weather-agent".into()))
        );
        let s = &rs.scope_spans[0].spans[0];
        assert_eq!(s.trace_id[0], 0x5b);
        assert_eq!(s.span_id[7], 0x75);
        assert_eq!(s.parent_span_id[7], 0x74);
        assert_eq!(s.kind, span::SpanKind::Client as i32);
        assert_eq!(s.start_time_unix_nano, 1_714_564_800_100_000_000);
        assert_eq!(s.end_time_unix_nano, 1_714_564_800_101_500_000);
        let st = s.status.as_ref().unwrap();
        assert_eq!(
            (st.code, st.message.as_str()),
            (2, "ValueError: no such city")
        );
        assert_eq!(
            attr(&s.attributes, "retries"),
            Some(&any_value::Value::IntValue(2))
        );
        assert_eq!(
            attr(&s.attributes, "score"),
            Some(&any_value::Value::DoubleValue(0.5))
        );
        assert_eq!(
            attr(&s.attributes, "cached"),
            Some(&any_value::Value::BoolValue(false))
        );
        assert!(matches!(
            attr(&s.attributes, "tags"),
            Some(any_value::Value::ArrayValue(a)) if a.values.len() == 2
        ));
        assert_eq!(s.events[0].name, "exception");
        assert_eq!(s.events[0].time_unix_nano, 1_714_564_800_101_000_000);
        assert_eq!(s.links[0].span_id[7], 0xaa);
    }

    #[test]
    fn root_span_old_resource_and_bad_items() {
        let mut root = tool_span();
        root["parent_id"] = Value::Null;
        root["kind"] = json!("SpanKind.INTERNAL");
        root["status"] = json!({"status_code": "UNSET"});
        root["resource"] = json!({"service.name": "old-sdk"});
        let mut bad = tool_span();
        bad["context"]["span_id"] = json!("0xnothex");
        let mut bad_time = tool_span();
        bad_time["start_time"] = json!("yesterday");
        let v = json!([root, bad, bad_time]);
        assert!(looks_like(&v));
        let (req, problems) = to_request(&v).unwrap();
        assert_eq!(super::super::span_count(&req.clone().into()), 1);
        let s = &req.resource_spans[0].scope_spans[0].spans[0];
        assert!(s.parent_span_id.is_empty());
        assert_eq!(s.kind, span::SpanKind::Internal as i32);
        assert_eq!(s.status.as_ref().map(|s| s.code), Some(0));
        assert_eq!(
            attr(
                &req.resource_spans[0].resource.as_ref().unwrap().attributes,
                "service.name"
            ),
            Some(&any_value::Value::StringValue("old-sdk".into()))
        );
        assert_eq!(problems.len(), 2);
        assert!(problems[0]
            .to_string()
            .starts_with("[1]: span `execute_tool get_weather` rejected"));
        assert!(problems[0].reason.contains("0xnothex"));
        assert!(problems[1].reason.contains("start_time `yesterday`"));
    }

    #[test]
    fn detection() {
        assert!(!looks_like(&json!({"name": "x"})));
        assert!(!looks_like(&json!([])));
        assert!(!looks_like(
            &json!({"info": {}, "data": {"spans": [{"context": {"trace_id": "0x1"}}]}})
        ));
    }
}
