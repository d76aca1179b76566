//! OTLP/JSON decoding alone, on the corpus's Collector JSON lines
//! (tests/data/corpus/*/traces.jsonl) repeated `TOOLSCORE_BENCH_COPIES`
//! times (default 20, ~16 MB): the tolerant decoder (`ingest::otlp_json`)
//! against the serde derives of opentelemetry-proto it replaced, the whole
//! `ingest::decode` of the file (format detection, JSON lines, id checks),
//! and the tolerant decoder on the same requests written as Go's protojson
//! writes them (base64 ids, enum names).

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use serde_json::Value;

use toolscore::ingest::{self, otlp_json, Limits};

fn corpus_lines() -> Vec<Vec<u8>> {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/corpus");
    let mut dirs: Vec<_> = std::fs::read_dir(&root)
        .expect("tests/data/corpus")
        .filter_map(Result::ok)
        .map(|e| e.path().join("traces.jsonl"))
        .filter(|p| p.exists())
        .collect();
    dirs.sort();
    let mut lines = Vec::new();
    for p in dirs {
        let text = std::fs::read(&p).expect("read traces.jsonl");
        lines.extend(
            text.split(|&b| b == b'\n')
                .filter(|l| !l.iter().all(u8::is_ascii_whitespace))
                .map(<[u8]>::to_vec),
        );
    }
    lines
}

/// The same request as Go's protojson writes it.
fn protojson(line: &[u8]) -> Vec<u8> {
    const ABC: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let b64 = |hex: &str| -> String {
        let bytes: Vec<u8> = (0..hex.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).expect("hex id"))
            .collect();
        let mut out = String::new();
        for c in bytes.chunks(3) {
            let n = (u32::from(c[0]) << 16)
                | (u32::from(*c.get(1).unwrap_or(&0)) << 8)
                | u32::from(*c.get(2).unwrap_or(&0));
            for i in 0..4 {
                out.push(if i <= c.len() {
                    ABC[((n >> (18 - 6 * i)) & 63) as usize] as char
                } else {
                    '='
                });
            }
        }
        out
    };
    const KINDS: [&str; 6] = [
        "SPAN_KIND_UNSPECIFIED",
        "SPAN_KIND_INTERNAL",
        "SPAN_KIND_SERVER",
        "SPAN_KIND_CLIENT",
        "SPAN_KIND_PRODUCER",
        "SPAN_KIND_CONSUMER",
    ];
    const CODES: [&str; 3] = ["STATUS_CODE_UNSET", "STATUS_CODE_OK", "STATUS_CODE_ERROR"];
    let mut v: Value = serde_json::from_slice(line).expect("corpus JSON");
    for rs in v["resourceSpans"].as_array_mut().into_iter().flatten() {
        for ss in rs["scopeSpans"].as_array_mut().into_iter().flatten() {
            for s in ss["spans"].as_array_mut().into_iter().flatten() {
                for k in ["traceId", "spanId", "parentSpanId"] {
                    if let Some(h) = s.get(k).and_then(Value::as_str).filter(|h| !h.is_empty()) {
                        s[k] = Value::from(b64(h));
                    }
                }
                if let Some(k) = s.get("kind").and_then(Value::as_u64) {
                    s["kind"] = Value::from(KINDS[k as usize]);
                }
                if let Some(c) = s.pointer("/status/code").and_then(Value::as_u64) {
                    s["status"]["code"] = Value::from(CODES[c as usize]);
                }
            }
        }
    }
    serde_json::to_vec(&v).expect("encode")
}

fn bench(c: &mut Criterion) {
    let copies: usize = std::env::var("TOOLSCORE_BENCH_COPIES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(20);
    let base = corpus_lines();
    let lines: Vec<Vec<u8>> = (0..copies).flat_map(|_| base.iter().cloned()).collect();
    let file: Vec<u8> = lines.join(&b'\n');
    let go_lines: Vec<Vec<u8>> = {
        let go_base: Vec<Vec<u8>> = base.iter().map(|l| protojson(l)).collect();
        (0..copies).flat_map(|_| go_base.iter().cloned()).collect()
    };
    let spans: usize = lines
        .iter()
        .map(|l| {
            let r: ExportTraceServiceRequest = serde_json::from_slice(l).expect("corpus line");
            ingest::span_count(&r.into())
        })
        .sum();
    // Same requests either way, before anything is timed.
    for (l, g) in lines.iter().zip(&go_lines).take(base.len()) {
        let old: ExportTraceServiceRequest = serde_json::from_slice(l).expect("old");
        let old = ingest::Request::from(old);
        assert_eq!(otlp_json::decode(l).expect("new").into_request().0, old);
        assert_eq!(otlp_json::decode(g).expect("go").into_request().0, old);
    }
    eprintln!(
        "input: {} lines, {spans} spans, {:.1} MB ({} copies of the corpus); protojson form {:.1} MB",
        lines.len(),
        file.len() as f64 / 1e6,
        copies,
        go_lines.iter().map(Vec::len).sum::<usize>() as f64 / 1e6
    );

    let mut g = c.benchmark_group("otlp_json");
    g.sample_size(10);
    let json_bytes = lines.iter().map(|l| l.len() + 1).sum::<usize>() as u64;
    let go_bytes = go_lines.iter().map(|l| l.len() + 1).sum::<usize>() as u64;
    let per_line = |bytes| Throughput::ElementsAndBytes {
        elements: spans as u64,
        bytes,
    };
    g.throughput(per_line(json_bytes));
    g.bench_function("serde_derive", |b| {
        b.iter(|| {
            lines
                .iter()
                .map(|l| {
                    let r: ExportTraceServiceRequest = serde_json::from_slice(l).expect("decodes");
                    std::hint::black_box(r).resource_spans.len()
                })
                .sum::<usize>()
        })
    });
    g.bench_function("tolerant", |b| {
        b.iter(|| {
            lines
                .iter()
                .map(|l| std::hint::black_box(otlp_json::decode(l).expect("decodes")).spans())
                .sum::<usize>()
        })
    });
    g.throughput(per_line(go_bytes));
    g.bench_function("tolerant_protojson_input", |b| {
        b.iter(|| {
            go_lines
                .iter()
                .map(|l| std::hint::black_box(otlp_json::decode(l).expect("decodes")).spans())
                .sum::<usize>()
        })
    });
    g.throughput(per_line(json_bytes));
    g.bench_function("ingest_decode_file", |b| {
        b.iter(|| {
            let d = ingest::decode(&file, "bench.jsonl", &Limits::default());
            assert!(d.rejected.is_empty());
            std::hint::black_box(d.requests.len())
        })
    });
    g.finish();
    paired(&lines, spans);
}

/// The two decoders alternated pass by pass over `lines`, compared per pass.
fn paired(lines: &[Vec<u8>], spans: usize) {
    // On a shared machine the load drifts between criterion's sequential
    // groups; alternate the two decoders pass by pass and compare per pass.
    let rounds: usize = std::env::var("TOOLSCORE_BENCH_ROUNDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(15);
    let time = |f: &dyn Fn() -> usize| {
        let t = std::time::Instant::now();
        std::hint::black_box(f());
        t.elapsed().as_secs_f64()
    };
    let old = || {
        lines
            .iter()
            .map(|l| {
                let r: ExportTraceServiceRequest = serde_json::from_slice(l).expect("decodes");
                std::hint::black_box(r).resource_spans.len()
            })
            .sum::<usize>()
    };
    let new = || {
        lines
            .iter()
            .map(|l| std::hint::black_box(otlp_json::decode(l).expect("decodes")).spans())
            .sum::<usize>()
    };
    let (mut t_old, mut t_new, mut ratios) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..rounds {
        let (a, b) = (time(&old), time(&new));
        t_old.push(a);
        t_new.push(b);
        ratios.push(b / a);
    }
    let median = |v: &mut Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    let (mo, mn, mr) = (median(&mut t_old), median(&mut t_new), median(&mut ratios));
    let spans_per_s = |t: f64| spans as f64 / t / 1e3;
    eprintln!(
        "paired, {rounds} alternating passes (median): serde_derive {:.1} ms ({:.0}K spans/s), \
         tolerant {:.1} ms ({:.0}K spans/s); tolerant/serde_derive time ratio {mr:.2} \
         (min {:.2}, max {:.2})",
        mo * 1e3,
        spans_per_s(mo),
        mn * 1e3,
        spans_per_s(mn),
        ratios[0],
        ratios[ratios.len() - 1],
    );
}

criterion_group!(benches, bench);
criterion_main!(benches);
