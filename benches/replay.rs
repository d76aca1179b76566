//! Replay end to end (decode, assemble, extract, score) on generated agent
//! traces: 100 traces x 20 spans (~1.4 KB per span, JSON tool arguments),
//! split into 10 requests, as protobuf and as OTLP/JSON.

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use prost::Message;

use serde_json::json;

use toolscore::assemble::Trace;
use toolscore::expect::Call;
use toolscore::extract::Extractor;
use toolscore::ingest::Limits;
use toolscore::run::replay;
use toolscore::score::native::{NativeConfig, NativeMetric};
use toolscore::score::Metric;

fn end_to_end(bodies: &[Vec<u8>], extractor: &Extractor, metric: &NativeMetric) -> usize {
    let (traces, rejected) =
        replay::traces_from_bodies(bodies.iter().map(Vec::as_slice), &Limits::default());
    assert!(rejected.is_empty());
    let mut passed = 0;
    for t in &traces {
        let calls: Vec<Call> = extractor
            .extract(t)
            .into_iter()
            .map(|c| Call::new(c.name, c.args.into_value()))
            .collect();
        // Expect the names in order: a realistic fixture without args.
        let expected: Vec<Call> = calls
            .iter()
            .map(|c| Call::new(c.name.clone(), None))
            .collect();
        if metric.score(&calls, &expected).pass == Some(true) {
            passed += 1;
        }
    }
    passed
}

/// Every trace's calls extracted and written as JSONL rows; returns the
/// bytes written.
fn jsonl_rows(traces: &[Trace], extractor: &Extractor) -> usize {
    let row = json!({"type": "unmatched_trace"});
    let mut out = Vec::new();
    for t in traces {
        let calls = extractor.extract(t);
        toolscore::report::push_row_with_calls(&mut out, &row, &calls);
    }
    out.len()
}

fn bench(c: &mut Criterion) {
    let generated = toolscore::fake::agent_traces(100, 8, 10, 7);
    let pb: Vec<Vec<u8>> = generated
        .requests
        .iter()
        .map(|r| r.encode_to_vec())
        .collect();
    let json: Vec<Vec<u8>> = generated
        .requests
        .iter()
        .map(|r| serde_json::to_vec(r).expect("encode json"))
        .collect();
    // As `replay` runs for the table and JUnit reports (results not decoded);
    // the JSONL report also decodes every call's result.
    let extractor = Extractor::default().with_results(false);
    let with_results = Extractor::default();
    let metric = NativeMetric::new(NativeConfig::default());
    let pb_bytes: usize = pb.iter().map(Vec::len).sum();
    eprintln!(
        "payload: {} spans, protobuf {} bytes ({} B/span), JSON {} bytes",
        generated.spans,
        pb_bytes,
        pb_bytes / generated.spans,
        json.iter().map(Vec::len).sum::<usize>()
    );

    let json_bytes = json.iter().map(Vec::len).sum::<usize>() as u64;
    let of = |bytes: u64| Throughput::ElementsAndBytes {
        elements: generated.spans as u64,
        bytes,
    };
    let mut group = c.benchmark_group("replay");
    group.throughput(of(pb_bytes as u64));
    group.bench_function("protobuf_spans", |b| {
        b.iter(|| std::hint::black_box(end_to_end(&pb, &extractor, &metric)))
    });
    group.throughput(of(json_bytes));
    group.bench_function("json_spans", |b| {
        b.iter(|| std::hint::black_box(end_to_end(&json, &extractor, &metric)))
    });
    group.throughput(of(pb_bytes as u64));
    group.bench_function("protobuf_spans_jsonl_report", |b| {
        b.iter(|| std::hint::black_box(end_to_end(&pb, &with_results, &metric)))
    });
    group.finish();

    // The extraction stage alone, against protobuf decode + assembly of the
    // same payload: the tool scan must stay a small fraction of decoding.
    let (traces, _) = replay::traces_from_bodies(pb.iter().map(Vec::as_slice), &Limits::default());
    let mut stages = c.benchmark_group("stages");
    stages.throughput(of(pb_bytes as u64));
    stages.bench_function("decode_assemble_protobuf", |b| {
        b.iter(|| {
            std::hint::black_box(
                replay::traces_from_bodies(pb.iter().map(Vec::as_slice), &Limits::default()).0,
            )
        })
    });
    stages.bench_function("extract", |b| {
        b.iter(|| {
            traces
                .iter()
                .map(|t| std::hint::black_box(extractor.extract(t)).len())
                .sum::<usize>()
        })
    });
    stages.finish();

    // What extract/canonical.rs buys: when nothing reads arguments (serve
    // listing traces without a fixture), they are kept as JSON text in the
    // form serde_json writes, instead of parsed into a value and written
    // back. Same rows either way (report tests).
    let as_text = Extractor::default()
        .with_results(false)
        .with_args_text(true);
    let mut rows = c.benchmark_group("args_rows");
    rows.throughput(of(pb_bytes as u64));
    rows.bench_function("parsed", |b| {
        b.iter(|| std::hint::black_box(jsonl_rows(&traces, &extractor)))
    });
    rows.bench_function("kept_as_text", |b| {
        b.iter(|| std::hint::black_box(jsonl_rows(&traces, &as_text)))
    });
    rows.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
