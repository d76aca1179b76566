//! The real opentelemetry-otlp exporters, with the batch processor, over
//! both transports.

use std::path::{Path, PathBuf};

use serde_json::{json, Value};

use super::{of_type, start};

/// Spans an agent run with the OpenTelemetry SDK; returns its trace id.
fn sdk_agent_run(provider: &opentelemetry_sdk::trace::SdkTracerProvider, conv: &str) -> String {
    use opentelemetry::trace::{Span as _, TraceContextExt, Tracer, TracerProvider as _};
    use opentelemetry::KeyValue as Kv;
    let tracer = provider.tracer("e2e-agent");
    let root = tracer
        .span_builder("invoke_agent planner")
        .with_attributes([
            Kv::new("gen_ai.operation.name", "invoke_agent"),
            Kv::new("test.run", conv.to_string()),
        ])
        .start(&tracer);
    let cx = opentelemetry::Context::current_with_span(root);
    for city in ["Paris", "London"] {
        let mut s = tracer
            .span_builder("execute_tool get_weather")
            .with_attributes([
                Kv::new("gen_ai.operation.name", "execute_tool"),
                Kv::new("gen_ai.tool.name", "get_weather"),
                Kv::new(
                    "gen_ai.tool.call.arguments",
                    json!({ "city": city }).to_string(),
                ),
            ])
            .start_with_context(&tracer, &cx);
        s.end();
    }
    let id = cx.span().span_context().trace_id().to_string();
    cx.span().end();
    id
}

fn exporter_fixture(dir: &Path, conv: &str) -> PathBuf {
    let p = dir.join("expected.jsonl");
    let case = json!({
        "id": conv,
        // Not a session key (`gen_ai.conversation.id` would make a session case).
        "match": {"test.run": conv},
        "expected_tools": [
            {"name": "get_weather", "args": {"city": "Paris"}},
            {"name": "get_weather", "args": {"city": "London"}},
            "format_answer",
        ],
    });
    std::fs::write(&p, case.to_string()).unwrap();
    p
}

/// Two of three expected calls, both made with the right args: recall 2/3,
/// precision 1, F1 0.8.
fn assert_exporter_result(rows: &[Value], trace: &str, conv: &str) {
    let evals = of_type(rows, "evaluation");
    assert_eq!(evals.len(), 1, "{rows:#?}");
    let e = evals[0];
    assert_eq!(e["trace_id"], trace);
    assert_eq!(e["case"], conv);
    assert_eq!(e["revision"], 1);
    assert_eq!(e["spans"], 3);
    assert!((e["score"].as_f64().unwrap() - 0.8).abs() < 1e-9, "{e}");
    assert_eq!(e["pass"], true);
    let called: Vec<&str> = e["tools_called"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert_eq!(called, ["get_weather", "get_weather"]);
}

#[test]
fn otlp_grpc_exporter_with_batch_processor_is_scored() {
    use opentelemetry_otlp::WithExportConfig;
    let conv = "conv-sdk-grpc";
    let srv = start("sdk-grpc", |c, dir| {
        c.expected = Some(exporter_fixture(dir, conv))
    });
    let provider = {
        // tonic's channel runs on the server's runtime; the batch processor's
        // own thread drives the exports.
        let _guard = srv.rt.enter();
        let exporter = opentelemetry_otlp::SpanExporter::builder()
            .with_tonic()
            .with_endpoint(format!("http://{}", srv.grpc))
            .build()
            .unwrap();
        opentelemetry_sdk::trace::SdkTracerProvider::builder()
            .with_batch_exporter(exporter)
            .build()
    };
    let trace = sdk_agent_run(&provider, conv);
    provider.force_flush().unwrap();
    srv.wait_for("the trace to be scored", |s| s.evaluations >= 1);
    provider.shutdown().unwrap();
    assert_exporter_result(&srv.rows(), &trace, conv);
    let (summary, _) = srv.stop();
    assert_eq!((summary.evaluations, summary.passed), (1, 1));
}

#[test]
fn otlp_http_exporter_with_batch_processor_is_scored() {
    use opentelemetry_otlp::WithExportConfig;
    let conv = "conv-sdk-http";
    let srv = start("sdk-http", |c, dir| {
        c.expected = Some(exporter_fixture(dir, conv))
    });
    let exporter = opentelemetry_otlp::SpanExporter::builder()
        .with_http()
        .with_protocol(opentelemetry_otlp::Protocol::HttpBinary)
        .with_endpoint(format!("http://{}/v1/traces", srv.http))
        .build()
        .unwrap();
    let provider = opentelemetry_sdk::trace::SdkTracerProvider::builder()
        .with_batch_exporter(exporter)
        .build();
    let trace = sdk_agent_run(&provider, conv);
    provider.force_flush().unwrap();
    srv.wait_for("the trace to be scored", |s| s.evaluations >= 1);
    provider.shutdown().unwrap();
    assert_exporter_result(&srv.rows(), &trace, conv);
    srv.stop();
}
