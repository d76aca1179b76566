//! CloudWatch's `aws/spans` log group (where X-Ray's OTLP endpoint, and so
//! AWS Bedrock AgentCore through ADOT, stores spans) -> an OTLP request. A
//! record is one span as the AWS exporter writes it; the caller gives one
//! record (a line of a JSON-lines export), a JSON array of them, or
//! concatenated ones. See docs/formats.md for the mapping.
//!
//! Record: `{"resource": {"attributes": {flat}}, "scope": {"name",
//! "version"}, "traceId": "<32 hex>", "spanId": "<16 hex>", "parentSpanId",
//! "flags", "name", "kind": "SERVER", "startTimeUnixNano",
//! "endTimeUnixNano", "durationNano", "attributes": {flat}, "status":
//! {"code": "UNSET" | "OK" | "ERROR", "message"}, "events": [{"name",
//! "timeUnixNano", "attributes": {flat}}]}`: OTLP's span with attributes
//! written as plain JSON objects rather than key/value lists.

use opentelemetry_proto::tonic::resource::v1::Resource;
use opentelemetry_proto::tonic::trace::v1::{span, status, Span, Status};
use serde_json::{Map, Value};

use super::convert::{
    items, object_attrs, optional_id, required_id, span_items, span_problem, text_of, Converted,
    Grouper,
};

/// Whether a parsed JSON document is one `aws/spans` record (or a list of
/// them): `traceId` and `spanId` strings with attributes as a JSON object
/// (OTLP/JSON has key/value lists there, Zipkin has `id`).
pub fn looks_like(v: &Value) -> bool {
    match v {
        Value::Array(items) => !items.is_empty() && items.iter().all(is_record),
        other => is_record(other),
    }
}

fn is_record(v: &Value) -> bool {
    let Some(o) = v.as_object() else {
        return false;
    };
    let flat = |k: &str| o.get(k).is_none_or(Value::is_object);
    o.get("traceId").is_some_and(Value::is_string)
        && o.get("spanId").is_some_and(Value::is_string)
        && !o.contains_key("resourceSpans")
        && flat("attributes")
        && o.get("resource")
            .is_none_or(|r| r.get("attributes").is_none_or(Value::is_object))
        && (o.contains_key("durationNano") || o.contains_key("attributes"))
}

/// Converts one record, or a list of them (a bad record is left out with a
/// [`Problem`](super::convert::Problem)).
pub fn to_request(v: &Value) -> Converted {
    let items = span_items(v)?;
    let mut grouper = Grouper::default();
    let mut problems = Vec::new();
    for (at, s) in items {
        let name = s.get("name").and_then(Value::as_str).unwrap_or("");
        match span_of(s) {
            Ok(span) => {
                let resource = s.get("resource");
                let key = resource.map(Value::to_string).unwrap_or_default();
                let text = |k: &str| {
                    s.get("scope")
                        .and_then(|sc| sc.get(k))
                        .and_then(Value::as_str)
                        .unwrap_or("")
                        .to_string()
                };
                grouper.push(
                    &key,
                    || {
                        let attrs = resource.and_then(|r| r.get("attributes"));
                        (
                            Resource {
                                attributes: object_attrs(attrs),
                                ..Default::default()
                            },
                            String::new(),
                        )
                    },
                    (text("name"), text("version")),
                    span,
                );
            }
            Err(why) => problems.push(span_problem(at, name, why)),
        }
    }
    Ok((grouper.finish(), problems))
}

/// Unix nanoseconds as a JSON number or a string of digits; absent is 0.
fn nanos(o: &Map<String, Value>, k: &str) -> Result<u64, String> {
    match o.get(k) {
        None | Some(Value::Null) => Ok(0),
        Some(Value::Number(n)) => n
            .as_u64()
            .or_else(|| n.as_f64().filter(|f| *f >= 0.0).map(|f| f as u64))
            .ok_or_else(|| format!("{k} {n} is not a time")),
        Some(Value::String(t)) => t
            .trim()
            .parse()
            .map_err(|_| format!("{k} `{t}` is not a number of nanoseconds")),
        Some(other) => Err(format!("{k} {other} is not a time")),
    }
}

fn span_of(s: &Value) -> Result<Span, String> {
    let o = s.as_object().ok_or("not an object")?;
    let trace_id = required_id(o.get("traceId"), 16, "traceId")?;
    let span_id = required_id(o.get("spanId"), 8, "spanId")?;
    let parent = optional_id(o.get("parentSpanId"), 8, "parentSpanId")?.unwrap_or_default();
    let start = nanos(o, "startTimeUnixNano")?;
    let mut end = nanos(o, "endTimeUnixNano")?;
    if end == 0 {
        // Records shown without their end keep the duration.
        end = start.saturating_add(nanos(o, "durationNano")?);
    }
    let kind = match o
        .get("kind")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_ascii_uppercase()
        .trim_start_matches("SPAN_KIND_")
    {
        "INTERNAL" => span::SpanKind::Internal,
        "SERVER" => span::SpanKind::Server,
        "CLIENT" => span::SpanKind::Client,
        "PRODUCER" => span::SpanKind::Producer,
        "CONSUMER" => span::SpanKind::Consumer,
        _ => span::SpanKind::Unspecified,
    };
    let status = o.get("status").and_then(Value::as_object).map(|st| {
        let code = match st.get("code") {
            Some(Value::Number(n)) => match n.as_u64() {
                Some(1) => status::StatusCode::Ok,
                Some(2) => status::StatusCode::Error,
                _ => status::StatusCode::Unset,
            },
            Some(Value::String(c)) => {
                match c.to_ascii_uppercase().trim_start_matches("STATUS_CODE_") {
                    "OK" => status::StatusCode::Ok,
                    "ERROR" => status::StatusCode::Error,
                    _ => status::StatusCode::Unset,
                }
            }
            _ => status::StatusCode::Unset,
        };
        Status {
            code: code as i32,
            message: text_of(st, "message"),
        }
    });
    let events = items(o, "events")
        .enumerate()
        .map(|(i, e)| -> Result<span::Event, String> {
            let e = e
                .as_object()
                .ok_or_else(|| format!("events[{i}] is not an object"))?;
            Ok(span::Event {
                time_unix_nano: nanos(e, "timeUnixNano")?,
                name: text_of(e, "name"),
                attributes: object_attrs(e.get("attributes")),
                ..Default::default()
            })
        })
        .collect::<Result<Vec<_>, String>>()?;
    Ok(Span {
        trace_id,
        span_id,
        parent_span_id: parent,
        name: text_of(o, "name"),
        kind: kind as i32,
        start_time_unix_nano: start,
        end_time_unix_nano: end,
        attributes: object_attrs(o.get("attributes")),
        events,
        status,
        ..Default::default()
    })
}

#[cfg(test)]
mod tests {
    use super::super::{decode, Format, Limits};
    use super::*;

    const TRACE: &str = "6861d2b1a3c44e7f9b0d5e2f1a3c4b5d";

    fn record(span: &str, parent: &str, name: &str, attrs: &str) -> String {
        format!(
            r#"{{"resource":{{"attributes":{{"service.name":"weather_agent.DEFAULT","cloud.platform":"aws_bedrock_agentcore"}}}},"scope":{{"name":"strands.telemetry.tracer","version":""}},"traceId":"{TRACE}","spanId":"{span}","parentSpanId":"{parent}","flags":256,"name":"{name}","kind":"INTERNAL","startTimeUnixNano":1750000000000000000,"endTimeUnixNano":1750000000500000000,"durationNano":500000000,"attributes":{attrs},"status":{{"code":"UNSET"}}}}"#
        )
    }

    #[test]
    fn records_one_per_line_become_spans_with_flat_attributes() {
        let agent = record(
            "1a2b3c4d5e6f7a8b",
            "",
            "invoke_agent weather",
            r#"{"gen_ai.operation.name":"invoke_agent","gen_ai.agent.name":"weather"}"#,
        );
        let tool = record(
            "2b3c4d5e6f7a8b9c",
            "1a2b3c4d5e6f7a8b",
            "execute_tool get_forecast",
            r#"{"gen_ai.operation.name":"execute_tool","gen_ai.tool.name":"get_forecast","gen_ai.tool.call.arguments":"{\"city\": \"Oslo\", \"days\": 2}","gen_ai.tool.status":"success","gen_ai.usage.total_tokens":[1,2]}"#,
        );
        let d = decode(
            format!("{agent}\n{tool}\n").as_bytes(),
            "spans.jsonl",
            &Limits::default(),
        );
        assert!(d.rejected.is_empty(), "{:?}", d.rejected);
        assert_eq!(d.requests.len(), 2);
        let spans: Vec<_> = d
            .requests
            .iter()
            .flat_map(|r| &r.resource_spans)
            .flat_map(|rs| &rs.scope_spans)
            .flat_map(|ss| &ss.spans)
            .map(crate::ingest::Span::to_proto)
            .collect();
        assert_eq!(spans.len(), 2);
        assert_eq!(spans[1].name, "execute_tool get_forecast");
        assert_eq!(spans[1].parent_span_id, spans[0].span_id);
        assert_eq!(spans[1].kind, span::SpanKind::Internal as i32);
        assert_eq!(
            spans[1].end_time_unix_nano - spans[1].start_time_unix_nano,
            500_000_000
        );
        assert!(spans[1]
            .attributes
            .iter()
            .any(|kv| kv.key == "gen_ai.tool.call.arguments"));
        let rs = &d.requests[0].resource_spans[0];
        assert_eq!(
            rs.scope_spans[0].scope.as_ref().map(|s| s.name.as_str()),
            Some("strands.telemetry.tracer")
        );
    }

    #[test]
    fn an_array_of_records_a_bad_one_and_the_duration_alone() {
        let good = record("2b3c4d5e6f7a8b9c", "", "a", "{}")
            .replace(",\"endTimeUnixNano\":1750000000500000000", "");
        let bad = record("xyz", "", "b", "{}");
        let doc = format!("[{good},{bad}]");
        let v: Value = serde_json::from_str(&doc).unwrap();
        assert!(looks_like(&v));
        let (req, problems) = to_request(&v).unwrap();
        assert_eq!(problems.len(), 1, "{problems:?}");
        assert!(
            problems[0].to_string().contains("span `b` rejected"),
            "{problems:?}"
        );
        let s = &req.resource_spans[0].scope_spans[0].spans[0];
        assert_eq!(s.end_time_unix_nano, 1_750_000_000_500_000_000);
        let d = decode(doc.as_bytes(), "spans.json", &Limits::default());
        assert_eq!(d.format, Some(Format::AwsSpansJson));
        // OTLP/JSON spans (attributes as a list) and Zipkin are not records.
        let otlp: Value = serde_json::from_str(
            r#"{"traceId":"ab","spanId":"cd","attributes":[{"key":"k","value":{}}]}"#,
        )
        .unwrap();
        assert!(!looks_like(&otlp));
        let zipkin: Value = serde_json::from_str(r#"[{"traceId":"ab","id":"cd"}]"#).unwrap();
        assert!(!looks_like(&zipkin));
    }
}
