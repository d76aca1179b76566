//! Replay at scale (docs/architecture.md, "Replay at scale"): the real
//! binary replays a generated Collector file (the test corpus copied with
//! fresh trace and span ids) as JSON lines and as protobuf records, side by
//! side with the floor of "decode every line with serde_json, do nothing
//! else" on one and on two threads. Prints spans/s, the ratio to the floor
//! and the binary's peak RSS.
//!
//! `TOOLSCORE_BENCH_MB` sets the size of the JSON file (default 40; the
//! issue's figures were taken at 300). `TOOLSCORE_BIN` runs another build of
//! the binary (e.g. the shipped fat-LTO one) instead of the bench's own.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use prost::Message;
use regex::bytes::{Captures, Regex};

use toolscore::ingest::{self, Limits};

/// The corpus's Collector lines, copied until `mb` MB, each copy with its
/// own ids (a keyed rewrite of every hex id, so links and parents agree).
fn generate(mb: usize, dir: &Path) -> (PathBuf, PathBuf, usize) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/corpus");
    let mut lines: Vec<Vec<u8>> = Vec::new();
    let mut sources: Vec<PathBuf> = std::fs::read_dir(&root)
        .expect("corpus")
        .filter_map(|e| e.ok().map(|e| e.path().join("traces.jsonl")))
        .filter(|p| p.exists())
        .collect();
    sources.sort();
    for p in sources {
        let text = std::fs::read(p).expect("read corpus");
        lines.extend(
            text.split(|&b| b == b'\n')
                .filter(|l| !l.is_empty())
                .map(<[u8]>::to_vec),
        );
    }
    let ids = Regex::new(r#""(traceId|spanId|parentSpanId)":"([0-9a-f]+)""#).expect("regex");
    let json_path = dir.join("scale.jsonl");
    let pb_path = dir.join("scale.pb");
    let mut json = std::io::BufWriter::new(std::fs::File::create(&json_path).expect("create"));
    let mut pb = std::io::BufWriter::new(std::fs::File::create(&pb_path).expect("create"));
    let (mut written, mut spans, mut copy) = (0usize, 0usize, 0u64);
    while written < mb * 1_000_000 {
        copy += 1;
        for l in &lines {
            let fresh = ids.replace_all(l, |c: &Captures| {
                let old = &c[2];
                // A keyed hash of (copy, id): the same id maps the same way
                // within a copy (parents, links), and copies never collide.
                let mut h = old.iter().fold(0xcbf2_9ce4_8422_2325u64 ^ copy, |h, &b| {
                    (h ^ b as u64).wrapping_mul(0x100_0000_01b3)
                });
                let mut new = Vec::with_capacity(old.len());
                while new.len() < old.len() {
                    h = splitmix(h);
                    new.extend_from_slice(format!("{h:016x}").as_bytes());
                }
                new.truncate(old.len());
                let mut out = b"\"".to_vec();
                out.extend_from_slice(&c[1]);
                out.extend_from_slice(b"\":\"");
                out.extend_from_slice(&new);
                out.push(b'"');
                out
            });
            json.write_all(&fresh).expect("write");
            json.write_all(b"\n").expect("write");
            written += fresh.len() + 1;
            let d = ingest::decode(&fresh, "bench", &Limits::default());
            for r in d.requests {
                spans += ingest::span_count(&r);
                let body = r.to_proto().encode_to_vec();
                pb.write_all(&(body.len() as u32).to_be_bytes())
                    .expect("write");
                pb.write_all(&body).expect("write");
            }
        }
    }
    json.flush().expect("flush");
    pb.flush().expect("flush");
    (json_path, pb_path, spans)
}

fn splitmix(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// Runs the release binary once: wall time and peak RSS (KiB, the child's
/// own `VmHWM`, polled until it exits: the kernel's rusage of a child also
/// counts the bench's pages, shared with the child until its exec).
fn run(args: &[&str]) -> (Duration, u64) {
    let start = Instant::now();
    let bin =
        std::env::var("TOOLSCORE_BIN").unwrap_or_else(|_| env!("CARGO_BIN_EXE_toolscore").into());
    let mut child = Command::new(bin)
        .args(args)
        // No run store: figures stay comparable, and the checkout gets none.
        .env("TOOLSCORE_STORE", "off")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn toolscore");
    let status_file = format!("/proc/{}/status", child.id());
    let mut peak = 0;
    let status = loop {
        if let Ok(text) = std::fs::read_to_string(&status_file) {
            let hwm = text
                .lines()
                .find_map(|l| l.strip_prefix("VmHWM:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok());
            peak = peak.max(hwm.unwrap_or(0));
        }
        if let Some(status) = child.try_wait().expect("wait") {
            break status;
        }
        if start.elapsed() > Duration::from_secs(600) {
            let _ = child.kill();
            panic!("toolscore {args:?} still running after 600 s");
        }
        // The poll interval while the child runs (sampling its peak).
        std::thread::sleep(Duration::from_millis(2));
    };
    assert!(status.success(), "toolscore {args:?} failed");
    (start.elapsed(), peak)
}

/// The floor: every line through serde_json into a `Value`, nothing else.
fn floor(bytes: &[u8], threads: usize) -> usize {
    let lines: Vec<&[u8]> = bytes
        .split(|&b| b == b'\n')
        .filter(|l| !l.is_empty())
        .collect();
    let per = lines.len().div_ceil(threads);
    std::thread::scope(|s| {
        let handles: Vec<_> = lines
            .chunks(per.max(1))
            .map(|part| {
                s.spawn(move || {
                    part.iter()
                        .filter(|l| serde_json::from_slice::<serde_json::Value>(l).is_ok())
                        .count()
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap_or(0)).sum()
    })
}

fn bench(c: &mut Criterion) {
    let mb: usize = std::env::var("TOOLSCORE_BENCH_MB")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(40);
    let dir = std::env::temp_dir().join(format!("toolscore-scale-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("mkdir");
    let (json, pb, spans) = generate(mb, &dir);
    let (json_s, pb_s) = (json.to_string_lossy(), pb.to_string_lossy());
    let bytes = std::fs::read(&json).expect("read");

    let mut g = c.benchmark_group("scale");
    let file_bytes = |p: &std::path::Path| std::fs::metadata(p).map_or(0, |m| m.len());
    let of = |bytes: u64| Throughput::ElementsAndBytes {
        elements: spans as u64,
        bytes,
    };
    g.sample_size(10).throughput(of(file_bytes(&json)));
    let mut peak = [0u64; 2];
    g.bench_function("inspect_jsonl", |b| {
        b.iter_custom(|n| {
            (0..n)
                .map(|_| {
                    let (t, rss) = run(&["inspect", &json_s, "--format", "jsonl", "-q"]);
                    peak[0] = peak[0].max(rss);
                    t
                })
                .sum()
        })
    });
    g.throughput(of(file_bytes(&pb)));
    g.bench_function("inspect_protobuf_records", |b| {
        b.iter_custom(|n| {
            (0..n)
                .map(|_| {
                    let (t, rss) = run(&["inspect", &pb_s, "--format", "jsonl", "-q"]);
                    peak[1] = peak[1].max(rss);
                    t
                })
                .sum()
        })
    });
    g.throughput(of(file_bytes(&json)));
    g.bench_function("floor_serde_json_1_thread", |b| b.iter(|| floor(&bytes, 1)));
    g.bench_function("floor_serde_json_2_threads", |b| {
        b.iter(|| floor(&bytes, 2))
    });
    g.finish();
    drop(bytes);

    // One timed run each, side by side, for the printed ratios.
    let best = |f: &dyn Fn() -> Duration| (0..3).map(|_| f()).min().unwrap_or_default();
    let t_json = best(&|| run(&["inspect", &json_s, "--format", "jsonl", "-q"]).0);
    let t_pb = best(&|| run(&["inspect", &pb_s, "--format", "jsonl", "-q"]).0);
    let text = std::fs::read(&json).expect("read");
    let t_floor = best(&|| {
        let s = Instant::now();
        floor(&text, 2);
        s.elapsed()
    });
    let per_s = |t: Duration| spans as f64 / t.as_secs_f64();
    eprintln!(
        "scale: {mb} MB of JSON lines, {spans} spans\n\
         inspect JSON lines:      {:>9.0} spans/s ({:.3} s), peak RSS {} MiB\n\
         inspect protobuf records:{:>9.0} spans/s ({:.3} s), peak RSS {} MiB\n\
         floor, serde_json 2 thr: {:>9.0} spans/s ({:.3} s)\n\
         ratio to the floor:      JSON {:.2}x, protobuf {:.2}x",
        per_s(t_json),
        t_json.as_secs_f64(),
        peak[0] / 1024,
        per_s(t_pb),
        t_pb.as_secs_f64(),
        peak[1] / 1024,
        per_s(t_floor),
        t_floor.as_secs_f64(),
        t_floor.as_secs_f64() / t_json.as_secs_f64(),
        t_floor.as_secs_f64() / t_pb.as_secs_f64(),
    );
    let _ = std::fs::remove_dir_all(&dir);
}

criterion_group!(benches, bench);
criterion_main!(benches);
