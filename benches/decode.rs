//! Protobuf decoding alone: prost's generated `Message::decode` against the
//! hand-driven decoder (`ingest::otlp_proto`) keeping every attribute, and
//! the same decoder with a projection keeping 10 span attribute keys (what
//! the extraction rules read; resource attributes kept).
//!
//! Payload: `toolscore::fake::agent_traces` (agent, chat, tool and HTTP
//! spans, JSON tool arguments and results) with a `llm.input_messages`
//! prompt (~900 B) on every chat span, as OpenInference writes it: what a
//! projection drops is the HTTP, network, usage and logfire attributes and
//! the prompts. Spans/s on one thread, and the ratios, are printed before
//! criterion runs.
//!
//! Run: `cargo bench --bench decode` (`-- --quick` for a shorter run).

use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::{any_value, AnyValue, KeyValue};
use prost::Message;

use toolscore::ingest::otlp_proto;
use toolscore::ingest::projection::KeepAll;

#[path = "support/ten_keys.rs"]
mod ten_keys;
use ten_keys::{TenKeys, KEPT};

fn prompt(n: usize) -> String {
    let mut s = String::from("[");
    let mut i = 0;
    while s.len() < n {
        if i > 0 {
            s.push(',');
        }
        s.push_str(&format!(
            r#"{{"message.role":"user","message.content":"Turn {i}: what is the weather in Zürich, and open a ticket if it rains? \"quoted\"\n"}}"#
        ));
        i += 1;
    }
    s.push(']');
    s
}

fn payload() -> (Vec<Vec<u8>>, usize) {
    let g = toolscore::fake::agent_traces(200, 8, 40, 7);
    let mut reqs: Vec<ExportTraceServiceRequest> = g.requests;
    let p = prompt(900);
    for r in &mut reqs {
        for rs in &mut r.resource_spans {
            for ss in &mut rs.scope_spans {
                for s in &mut ss.spans {
                    if s.name.starts_with("chat") {
                        s.attributes.push(KeyValue {
                            key: "llm.input_messages".into(),
                            value: Some(AnyValue {
                                value: Some(any_value::Value::StringValue(p.clone())),
                            }),
                            ..Default::default()
                        });
                    }
                }
            }
        }
    }
    (reqs.iter().map(Message::encode_to_vec).collect(), g.spans)
}

fn pb_spans(r: &ExportTraceServiceRequest) -> usize {
    r.resource_spans
        .iter()
        .flat_map(|rs| &rs.scope_spans)
        .map(|ss| ss.spans.len())
        .sum()
}

fn spans_in(r: &toolscore::ingest::Request) -> usize {
    toolscore::ingest::span_count(r)
}

/// Median rate of `runs` passes over every body.
fn rate(bodies: &[Vec<u8>], spans: usize, f: &dyn Fn(&[u8]) -> usize) -> f64 {
    let mut rates = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(3);
    while rates.len() < 5 || (Instant::now() < deadline && rates.len() < 50) {
        let start = Instant::now();
        let mut n = 0;
        for b in bodies {
            n += f(b);
        }
        assert_eq!(n, spans);
        rates.push(spans as f64 / start.elapsed().as_secs_f64());
    }
    rates.sort_by(f64::total_cmp);
    rates[rates.len() / 2]
}

fn bench(c: &mut Criterion) {
    let (bodies, spans) = payload();
    let bytes: usize = bodies.iter().map(Vec::len).sum();
    let prost = |b: &[u8]| pb_spans(&ExportTraceServiceRequest::decode(b).expect("prost"));
    let ours = |b: &[u8]| spans_in(&otlp_proto::decode_with(b, &KeepAll).expect("ours"));
    let projected = |b: &[u8]| spans_in(&otlp_proto::decode_with(b, &TenKeys).expect("projected"));
    // Same result with everything kept.
    for b in &bodies {
        assert!(
            ExportTraceServiceRequest::decode(b.as_slice()).expect("prost")
                == otlp_proto::decode(b).expect("ours").to_proto()
        );
    }
    let kept_bytes: usize = bodies
        .iter()
        .map(|b| {
            otlp_proto::decode_with(b, &TenKeys)
                .expect("projected")
                .to_proto()
                .encoded_len()
        })
        .sum();
    let (p, o, j) = (
        rate(&bodies, spans, &prost),
        rate(&bodies, spans, &ours),
        rate(&bodies, spans, &projected),
    );
    eprintln!(
        "payload: {spans} spans in {} requests, {bytes} bytes ({} B/span); the projection keeps \
         {kept_bytes} bytes ({:.0}%)",
        bodies.len(),
        bytes / spans,
        100.0 * kept_bytes as f64 / bytes as f64
    );
    eprintln!(
        "decode, one thread: prost {p:.0} spans/s; ours, every attribute {o:.0} spans/s ({:.2}x \
         prost); ours, projection of {} keys {j:.0} spans/s ({:.2}x prost, {:.2}x ours)",
        o / p,
        KEPT.len(),
        j / p,
        j / o
    );
    let mut group = c.benchmark_group("decode_protobuf");
    // Spans/s and bytes/s of protobuf read.
    group.throughput(Throughput::ElementsAndBytes {
        elements: spans as u64,
        bytes: bytes as u64,
    });
    group.bench_function("prost", |b| {
        b.iter(|| bodies.iter().map(|x| prost(x)).sum::<usize>())
    });
    group.bench_function("ours_keep_all", |b| {
        b.iter(|| bodies.iter().map(|x| ours(x)).sum::<usize>())
    });
    group.bench_function("ours_projection", |b| {
        b.iter(|| bodies.iter().map(|x| projected(x)).sum::<usize>())
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
