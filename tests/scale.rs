//! Replay at scale: streaming reads, early release of complete traces, and
//! memory that does not grow with the input (docs/architecture.md).

use std::io::Write;
use std::process::Stdio;
use std::time::Duration;

use crate::util::{
    poll_every, protojson_agent_span, protojson_tool_span, small_cases, toolscore, ChildGuard,
    TempDir,
};

/// One Collector JSON line holding `spans`.
fn line(spans: &[String]) -> String {
    format!(
        r#"{{"resourceSpans":[{{"resource":{{"attributes":[]}},"scopeSpans":[{{"scope":{{"name":"t"}},"spans":[{}]}}]}}]}}"#,
        spans.join(",")
    )
}

/// Trace 1's root and one call, ~1.5 MiB of other complete traces, then a
/// second call of trace 1 (a span exported late).
fn late_span_file(dir: &TempDir) -> std::path::PathBuf {
    let t1 = [1u8; 16];
    let mut text = String::new();
    text += &line(&[
        protojson_agent_span(&t1, &[1; 8], 1000),
        protojson_tool_span(&t1, &[2; 8], &[1; 8], "first", "{}", 1100),
    ]);
    text.push('\n');
    let mut n = 0u32;
    while text.len() < 1_600_000 {
        n += 1;
        let mut t = [0u8; 16];
        t[..4].copy_from_slice(&n.to_be_bytes());
        t[15] = 9;
        let args = format!("{{\"pad\":\"{}\"}}", "p".repeat(2000));
        text += &line(&[
            protojson_agent_span(&t, &[3; 8], 2000),
            protojson_tool_span(&t, &[4; 8], &[3; 8], "filler", &args, 2100),
        ]);
        text.push('\n');
    }
    text += &line(&[protojson_tool_span(
        &t1, &[5; 8], &[1; 8], "second", "{}", 1200,
    )]);
    text.push('\n');
    let path = dir.path().join("late.jsonl");
    std::fs::write(&path, text).unwrap();
    path
}

fn calls_of_trace_1(stdout: &[u8]) -> Vec<String> {
    let text = String::from_utf8_lossy(stdout);
    text.lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .filter(|row| row["trace_id"] == "01010101010101010101010101010101")
        .flat_map(|row| {
            row["tools"]
                .as_array()
                .unwrap()
                .iter()
                .map(|c| c["name"].as_str().unwrap().to_string())
                .collect::<Vec<_>>()
        })
        .collect()
}

#[test]
fn a_trace_is_held_while_its_spans_may_still_come_and_a_late_span_is_reported() {
    let dir = TempDir::new("late");
    let path = late_span_file(&dir);
    let path = path.to_str().unwrap();

    // The default window (8 MiB) covers the late span: one trace, two calls.
    let out = toolscore(&["inspect", path, "--format", "jsonl", "-q"]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(calls_of_trace_1(&out.stdout), ["first", "second"]);

    // A window of 0 releases trace 1 at once: its late span is rejected
    // with the trace id and what to do, never scored as a new trace.
    let out = toolscore(&[
        "inspect",
        path,
        "--format",
        "jsonl",
        "-q",
        "--hold-window-mib",
        "0",
    ]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert_eq!(calls_of_trace_1(&out.stdout), ["first"]);
    assert!(
        stderr.contains("1 span(s) of trace 01010101010101010101010101010101 came after")
            && stderr.contains("--hold-window-mib"),
        "{stderr}"
    );

    // `all` holds every trace to the end, as replay did before streaming.
    let out = toolscore(&[
        "inspect",
        path,
        "--format",
        "jsonl",
        "-q",
        "--hold-window-mib",
        "all",
    ]);
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(calls_of_trace_1(&out.stdout), ["first", "second"]);
}

/// Runs the binary and returns (exit code, stderr, peak RSS in KiB). The
/// peak is the child's own `VmHWM`, polled until it exits: the kernel's
/// rusage of a child also counts this (large) test process's pages, shared
/// with the child between its spawn and its exec.
fn run_measured(args: &[&str]) -> (Option<i32>, String, u64) {
    let mut child = ChildGuard(
        crate::util::bin()
            .args(args)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap(),
    );
    let mut pipe = child.stderr.take().unwrap();
    let reader = std::thread::spawn(move || {
        let mut text = String::new();
        std::io::Read::read_to_string(&mut pipe, &mut text).unwrap();
        text
    });
    let status_file = format!("/proc/{}/status", child.id());
    let mut peak = 0;
    // Every 2 ms: the interval of the peak reading, not of a wait.
    let status = poll_every(
        Duration::from_millis(2),
        &format!("toolscore {args:?} to exit"),
        Duration::from_secs(60),
        || {
            if let Ok(text) = std::fs::read_to_string(&status_file) {
                let hwm = text
                    .lines()
                    .find_map(|l| l.strip_prefix("VmHWM:"))
                    .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok());
                peak = peak.max(hwm.unwrap_or(0));
            }
            child.try_wait().unwrap()
        },
    );
    (status.code(), reader.join().unwrap(), peak)
}

#[test]
fn a_gzip_bomb_is_rejected_without_holding_what_it_inflates_to() {
    // 96 MiB of spaces as 96 gzip members of 1 MiB each (~100 KB on disk),
    // over a 64 MiB cap: inflated as it is read, so memory stays flat.
    let dir = TempDir::new("bomb");
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
    gz.write_all(&vec![b' '; 1 << 20]).unwrap();
    let member = gz.finish().unwrap();
    let path = dir.path().join("bomb.json.gz");
    std::fs::write(&path, member.repeat(96)).unwrap();
    let path = path.to_str().unwrap();

    let (code, stderr, rss_kib) =
        run_measured(&["inspect", path, "--max-inflated-mib", "64", "-q"]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(
        stderr.contains("inflates to more than 67108864 bytes"),
        "{stderr}"
    );
    assert!(rss_kib > 0, "no VmHWM read");
    // Held, the input would take at least the 64 MiB cap; the process
    // itself (rules, buffers, threads) peaks near 40 MiB, so the bound sits
    // between the two rather than at the process's own size.
    assert!(
        rss_kib < 56 * 1024,
        "peak RSS {rss_kib} KiB: the inflated input was held"
    );
}

/// A fixture costs at most 4x its size in memory (docs/formats.md, fixture
/// memory): 200,000 small cases (about 16 MB, as short as cases get, so the
/// per-case cost weighs most), none joined, every one reported, in the
/// default table and in the HTML report (the one that cost most). Measured
/// as what the run adds over the same run with a one-case fixture: 3.2x
/// for both in a release build; 19x (table) and 39x (HTML) before.
#[test]
fn a_big_fixture_costs_at_most_four_times_its_size() {
    let dir = TempDir::new("bigfixture");
    let traces = concat!(env!("CARGO_MANIFEST_DIR"), "/sample-traces/pydantic-ai");
    let text = small_cases(200_000);
    let big = dir.path().join("big.jsonl");
    std::fs::write(&big, &text).unwrap();
    let one = dir.path().join("one.jsonl");
    std::fs::write(&one, text.lines().next().unwrap()).unwrap();
    let out = dir.path().join("out");
    let run = |fixture: &std::path::Path, format: &str| {
        let (code, stderr, rss_kib) = run_measured(&[
            "replay",
            traces,
            "-e",
            fixture.to_str().unwrap(),
            "-q",
            "-f",
            format,
            "-o",
            out.to_str().unwrap(),
        ]);
        assert_eq!(code, Some(1), "unmatched cases fail: {stderr}");
        assert!(rss_kib > 0, "no VmHWM read");
        (rss_kib * 1024, std::fs::read_to_string(&out).unwrap())
    };
    let (base, _) = run(&one, "table");
    let size = text.len() as u64;
    for (format, row) in [("table", "(no trace)"), ("html", r#""target":"no trace""#)] {
        let (peak, report) = run(&big, format);
        assert_eq!(
            report.matches(row).count(),
            200_000,
            "every case in the {format}"
        );
        let added = peak.saturating_sub(base);
        assert!(
            added <= 4 * size,
            "{format}: a {size}-byte fixture added {added} bytes of memory ({:.1}x)",
            added as f64 / size as f64
        );
    }
}

/// Projection at decode changes nothing that is shown: every corpus file,
/// as JSON lines and as protobuf requests, gives the same inspect rows
/// with the projection that `inspect` uses as with every attribute kept.
#[test]
fn projection_keeps_everything_inspect_shows() {
    use toolscore::assemble::session;
    use toolscore::extract::Extractor;
    use toolscore::ingest::projection::{KeepAll, KeyFilter};
    use toolscore::run::replay::{stream_traces, ReadOptions};

    let extractor = Extractor::default();
    let keys = session::default_keys();
    let projection = extractor.projection(keys.iter().cloned());
    let rows = |path: &std::path::Path, filter: &(dyn KeyFilter + Sync)| {
        let mut rows = Vec::new();
        let (rejected, _) = stream_traces(
            &[toolscore::ingest::files::Source::Path(path.to_path_buf())],
            &ReadOptions::default(),
            filter,
            |_| {},
            |traces| {
                traces
                    .iter()
                    .map(|t| {
                        let a = extractor.analyze(t);
                        let s = session::session_of(t, &keys);
                        let attrs: usize = t.spans.iter().map(|s| s.span.attr_count()).sum();
                        // What inspect shows, and the token counts the
                        // JSONL report adds.
                        let row = format!(
                            "{} {:?}",
                            toolscore::report::inspect_row(t, &a, s.as_ref(), None),
                            toolscore::extract::facts::token_usage(t)
                        );
                        (row, attrs)
                    })
                    .collect::<Vec<_>>()
            },
            |batch, _| rows.extend(batch),
        );
        assert!(rejected.is_empty(), "{rejected:?}");
        rows.into_iter().unzip::<_, _, Vec<_>, Vec<_>>()
    };
    let corpus = crate::util::data("corpus");
    let (mut compared, mut kept, mut decoded) = (0, 0, 0);
    for entry in std::fs::read_dir(&corpus).unwrap() {
        let dir = entry.unwrap().path();
        for input in [dir.join("traces.jsonl"), dir.join("otlp")] {
            if !input.exists() {
                continue;
            }
            let (all, attrs_all) = rows(&input, &KeepAll);
            assert!(!all.is_empty(), "{}", input.display());
            let (projected, attrs_projected) = rows(&input, &projection);
            assert_eq!(projected, all, "{}", input.display());
            compared += all.len();
            kept += attrs_projected.iter().sum::<usize>();
            decoded += attrs_all.iter().sum::<usize>();
        }
    }
    assert!(compared > 100, "{compared} rows compared");
    // The projection does leave attributes out.
    assert!(
        kept < decoded * 3 / 4,
        "{kept} of {decoded} span attributes kept"
    );
}
