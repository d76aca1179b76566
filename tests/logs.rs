//! Calls written as OTel log events, read from files (docs/conventions.md,
//! "Calls written as log events"): the OTel GenAI instrumentation of the
//! OpenAI client (Python, default conventions) writes the messages as log
//! records tied to its `chat` spans. The pair in tests/data/firstsight was
//! shaped from a real run; here it is read with its records in another
//! file, before or after the spans, gzip or protobuf, and with records that
//! name nothing, a span that never came, or a bad id.

use std::fs;
use std::io::Write;
use std::path::Path;

use opentelemetry_proto::tonic::collector::logs::v1::ExportLogsServiceRequest;
use opentelemetry_proto::tonic::common::v1::{any_value, AnyValue, KeyValue};
use opentelemetry_proto::tonic::logs::v1::{LogRecord, ResourceLogs, ScopeLogs};
use prost::Message;
use serde_json::{json, Value};

use crate::util::{data, json_rows, toolscore, TempDir};

const SPANS: &str = "firstsight/py-openai-otel-genai.jsonl";
const LOGS: &str = "firstsight/py-openai-otel-genai.logs.jsonl";

/// The calls `inspect` reports for `paths`, as (name, arguments).
fn calls(paths: &[&Path]) -> Vec<(String, Value)> {
    let mut args = vec!["inspect", "--format", "jsonl", "-q"];
    let paths: Vec<String> = paths.iter().map(|p| p.display().to_string()).collect();
    args.extend(paths.iter().map(String::as_str));
    let out = toolscore(&args);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    json_rows(&out.stdout)
        .iter()
        .flat_map(|r| r["tools"].as_array().cloned().unwrap_or_default())
        .map(|c| {
            (
                c["name"].as_str().unwrap_or("").to_string(),
                c["args"].clone(),
            )
        })
        .collect()
}

fn want() -> Vec<(String, Value)> {
    vec![
        ("find_hotel".into(), json!({"town": "Lyon"})),
        (
            "rent_bike".into(),
            json!({"station": "Part-Dieu", "hours": 3}),
        ),
    ]
}

/// An OTLP/JSON value as protobuf (the shapes the capture holds).
fn any(v: &Value) -> AnyValue {
    use any_value::Value as V;
    let (kind, inner) = v.as_object().and_then(|o| o.iter().next()).unwrap();
    let value = match kind.as_str() {
        "stringValue" => V::StringValue(inner.as_str().unwrap().into()),
        "intValue" => V::IntValue(inner.as_str().unwrap().parse().unwrap()),
        "arrayValue" => V::ArrayValue(opentelemetry_proto::tonic::common::v1::ArrayValue {
            values: inner["values"]
                .as_array()
                .unwrap()
                .iter()
                .map(any)
                .collect(),
        }),
        "kvlistValue" => V::KvlistValue(opentelemetry_proto::tonic::common::v1::KeyValueList {
            values: key_values(&inner["values"]),
        }),
        other => panic!("{other}"),
    };
    AnyValue { value: Some(value) }
}

fn key_values(list: &Value) -> Vec<KeyValue> {
    list.as_array()
        .unwrap()
        .iter()
        .map(|kv| KeyValue {
            key: kv["key"].as_str().unwrap().into(),
            value: Some(any(&kv["value"])),
            ..Default::default()
        })
        .collect()
}

fn hex(s: &str) -> Vec<u8> {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

/// The pair's log records as one protobuf `ExportLogsServiceRequest`.
fn logs_protobuf() -> Vec<u8> {
    let doc: Value = serde_json::from_str(&fs::read_to_string(data(LOGS)).unwrap()).unwrap();
    let records = doc["resourceLogs"][0]["scopeLogs"][0]["logRecords"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| LogRecord {
            observed_time_unix_nano: r["observedTimeUnixNano"].as_str().unwrap().parse().unwrap(),
            trace_id: hex(r["traceId"].as_str().unwrap()),
            span_id: hex(r["spanId"].as_str().unwrap()),
            event_name: r["eventName"].as_str().unwrap().into(),
            attributes: key_values(&r["attributes"]),
            body: Some(any(&r["body"])),
            ..Default::default()
        })
        .collect();
    ExportLogsServiceRequest {
        resource_logs: vec![ResourceLogs {
            scope_logs: vec![ScopeLogs {
                log_records: records,
                ..Default::default()
            }],
            ..Default::default()
        }],
    }
    .encode_to_vec()
}

#[test]
fn log_records_join_their_spans_from_any_file_in_any_order_and_encoding() {
    let (spans, logs) = (data(SPANS), data(LOGS));
    assert_eq!(calls(&[&spans]), [], "the spans alone hold no call");
    assert_eq!(calls(&[&spans, &logs]), want());
    assert_eq!(
        calls(&[&logs, &spans]),
        want(),
        "records before their spans"
    );
    let dir = TempDir::new("logs-files");
    let gz = dir.path().join("logs.jsonl.gz");
    let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    enc.write_all(&fs::read(&logs).unwrap()).unwrap();
    fs::write(&gz, enc.finish().unwrap()).unwrap();
    assert_eq!(calls(&[&spans, &gz]), want(), "gzip");
    let pb = dir.path().join("logs.pb");
    fs::write(&pb, logs_protobuf()).unwrap();
    assert_eq!(calls(&[&pb, &spans]), want(), "protobuf");
    // One directory holding both is read as one input.
    fs::copy(&spans, dir.path().join("spans.jsonl")).unwrap();
    fs::remove_file(&gz).unwrap();
    fs::remove_file(&pb).unwrap();
    fs::copy(&logs, dir.path().join("logs.jsonl")).unwrap();
    assert_eq!(calls(&[dir.path()]), want(), "a directory");
}

/// A record without span context is counted and ignored; one naming a
/// span that never came is counted and reported; one with a bad id is
/// rejected alone, with its place; one after its trace was scored is late.
#[test]
fn records_that_join_nothing_are_counted_and_bad_ones_rejected_alone() {
    let dir = TempDir::new("logs-odd");
    let mut doc: Value = serde_json::from_str(&fs::read_to_string(data(LOGS)).unwrap()).unwrap();
    let records = doc["resourceLogs"][0]["scopeLogs"][0]["logRecords"]
        .as_array_mut()
        .unwrap();
    let n = records.len();
    records.push(json!({"eventName": "gen_ai.user.message", "body": {"stringValue": "no span"}}));
    records.push(json!({"traceId": "f10e0000000000000000000000000001",
        "spanId": "c10e0000000000ff", "eventName": "gen_ai.user.message"}));
    records.push(json!({"traceId": "f10e", "spanId": "c10e000000000001"}));
    let logs = dir.path().join("logs.jsonl");
    fs::write(&logs, format!("{doc}\n")).unwrap();
    let spans = data(SPANS).display().to_string();
    let logs = logs.display().to_string();
    let out = toolscore(&["replay", "-f", "jsonl", &spans, &logs]);
    let rows = json_rows(&out.stdout);
    let summary = rows
        .iter()
        .find(|r| r["type"] == "summary")
        .expect("summary");
    let stats = &summary["stats"];
    assert_eq!(stats["log_events"], n + 1, "{summary}");
    assert_eq!(stats["logs_unjoined"], 1, "{summary}");
    assert_eq!(stats["logs_without_span"], 1, "{summary}");
    let rejected: Vec<&Value> = rows.iter().filter(|r| r["type"] == "rejected").collect();
    assert_eq!(rejected.len(), 1, "{rows:#?}");
    let reason = rejected[0]["reason"].as_str().unwrap();
    assert!(
        reason.contains("logRecords[") && reason.contains("trace id"),
        "{reason}"
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("1 log record(s) name a span that never came")
            && stderr.contains("1 log record(s) without span context ignored"),
        "{stderr}"
    );
    // With no hold window, the traces are scored as soon as their spans
    // are read: the records after them are late, each trace's rejected.
    let out = toolscore(&[
        "replay",
        "-f",
        "jsonl",
        "--hold-window-mib",
        "0",
        &spans,
        &data(LOGS).display().to_string(),
    ]);
    let late: Vec<Value> = json_rows(&out.stdout)
        .into_iter()
        .filter(|r| r["type"] == "rejected")
        .collect();
    assert_eq!(late.len(), 2, "{late:#?}");
    assert!(late.iter().all(|r| r["reason"]
        .as_str()
        .unwrap()
        .contains("came after the trace was scored")));
}

/// `bytes` as one record of the Collector's `format: proto` file.
fn framed(bytes: &[u8]) -> Vec<u8> {
    let mut out = (bytes.len() as u32).to_be_bytes().to_vec();
    out.extend_from_slice(bytes);
    out
}

/// The pair's log records as length-prefixed protobuf records (the
/// Collector's file exporter with `format: proto`), one request per record
/// but the first, which holds two: read as a single protobuf request is.
/// A bad record is rejected alone, naming its file, number and byte; a
/// truncated last one too, the records before it kept.
#[test]
fn length_prefixed_protobuf_log_records_are_read_and_a_bad_frame_rejected_alone() {
    let dir = TempDir::new("logs-records");
    let whole = ExportLogsServiceRequest::decode(logs_protobuf().as_slice()).unwrap();
    let records = &whole.resource_logs[0].scope_logs[0].log_records;
    assert!(records.len() >= 3, "{}", records.len());
    let request = |part: &[LogRecord]| {
        ExportLogsServiceRequest {
            resource_logs: vec![ResourceLogs {
                scope_logs: vec![ScopeLogs {
                    log_records: part.to_vec(),
                    ..Default::default()
                }],
                ..Default::default()
            }],
        }
        .encode_to_vec()
    };
    let mut file = framed(&request(&records[..2]));
    for r in &records[2..] {
        file.extend(framed(&request(std::slice::from_ref(r))));
    }
    let spans = data(SPANS);
    let pb = dir.path().join("logs.pb");
    fs::write(&pb, &file).unwrap();
    assert_eq!(calls(&[&spans, &pb]), want(), "records after their spans");
    assert_eq!(calls(&[&pb, &spans]), want(), "records before their spans");

    // A record that is not protobuf between two good ones: rejected alone.
    let bad_at = framed(&request(&records[..2])).len();
    let mut with_bad = framed(&request(&records[..2]));
    with_bad.extend(framed(&[0xff; 10]));
    for r in &records[2..] {
        with_bad.extend(framed(&request(std::slice::from_ref(r))));
    }
    let bad = dir.path().join("bad.pb");
    fs::write(&bad, &with_bad).unwrap();
    // `inspect`: the calls it read, and what it said it rejected.
    let rejected = |paths: &[&Path]| -> (Vec<String>, Vec<(String, Value)>) {
        let mut args = vec!["inspect".to_string(), "--format".into(), "jsonl".into()];
        args.extend(paths.iter().map(|p| p.display().to_string()));
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let out = toolscore(&args);
        assert_eq!(out.status.code(), Some(2), "a rejection is an exit 2");
        let said = String::from_utf8_lossy(&out.stderr)
            .lines()
            .filter(|l| l.starts_with("toolscore: rejected:"))
            .map(String::from)
            .collect();
        let calls = json_rows(&out.stdout)
            .iter()
            .flat_map(|r| r["tools"].as_array().cloned().unwrap_or_default())
            .map(|c| {
                (
                    c["name"].as_str().unwrap_or("").to_string(),
                    c["args"].clone(),
                )
            })
            .collect();
        (said, calls)
    };
    let (rows, got) = rejected(&[&spans, &bad]);
    assert_eq!(got, want(), "the other records are read");
    assert_eq!(rows.len(), 1, "{rows:#?}");
    let text = &rows[0];
    assert!(
        text.contains("bad.pb")
            && text.contains("record 2")
            && text.contains(&format!("bad protobuf record at byte {bad_at}")),
        "{text}"
    );

    // A last record cut short: rejected from its byte, the others kept.
    let cut_at = file.len() - framed(&request(std::slice::from_ref(records.last().unwrap()))).len();
    let cut = dir.path().join("cut.pb");
    fs::write(&cut, &file[..file.len() - 3]).unwrap();
    let (rows, got) = rejected(&[&spans, &cut]);
    assert_eq!(rows.len(), 1, "{rows:#?}");
    let text = &rows[0];
    assert!(
        text.contains("cut.pb") && text.contains(&format!("at byte {cut_at}")),
        "{text}"
    );
    let events = |paths: &[&Path]| {
        let mut args = vec!["replay".to_string(), "-f".into(), "jsonl".into()];
        args.extend(paths.iter().map(|p| p.display().to_string()));
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let rows = json_rows(&toolscore(&args).stdout);
        let summary = rows.iter().find(|r| r["type"] == "summary").cloned();
        summary.expect("summary")["stats"]["log_events"].clone()
    };
    assert_eq!(events(&[&spans, &bad]), json!(records.len()), "{got:?}");
    assert_eq!(events(&[&spans, &cut]), json!(records.len() - 1));
}
