//! All 43 oracle-mode presets on 1000 cases (the oracle's 65 cases, cycled and
//! perturbed). The Python libraries need 28-73 s per 1000 cases for all 43
//! modes (tests/data/oracle); the target here is under 50 ms, single thread.

use std::hint::black_box;
use std::time::Instant;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};

use toolscore::expect::Call;
use toolscore::run::cases::{self, CallCase};
use toolscore::score::native::NativeConfig;
use toolscore::score::{registry, Metric, MetricOptions};

const ORACLE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/oracle");

fn oracle_cases() -> Vec<CallCase> {
    let text = std::fs::read_to_string(format!("{ORACLE}/cases.jsonl")).expect("read cases");
    text.lines()
        .map(|l| cases::parse_case(l).expect("oracle case"))
        .collect()
}

fn oracle_modes() -> Vec<String> {
    let text = std::fs::read_to_string(format!("{ORACLE}/expected.meta.json")).expect("read meta");
    let meta: serde_json::Value = serde_json::from_str(&text).expect("meta");
    meta["modes"]
        .as_array()
        .expect("modes")
        .iter()
        .map(|m| m.as_str().expect("mode").to_string())
        .collect()
}

/// Round `r` of the cycle: the case as is, or with the called list rotated,
/// truncated, or given an extra call, so that the inputs are not all repeats.
fn perturb(case: &CallCase, round: usize) -> CallCase {
    let mut c = case.clone();
    c.id = format!("{}#{round}", case.id);
    match round % 4 {
        1 if c.tools_called.len() > 1 => c.tools_called.rotate_left(1),
        2 => {
            c.tools_called.pop();
        }
        3 => c
            .tools_called
            .push(Call::new(format!("extra{round}"), None)),
        _ => {}
    }
    c
}

fn thousand_cases() -> Vec<CallCase> {
    let base = oracle_cases();
    (0..1000)
        .map(|i| perturb(&base[i % base.len()], i / base.len()))
        .collect()
}

fn score_all(metrics: &[Box<dyn Metric>], cases: &[CallCase]) -> usize {
    let mut passed = 0;
    for case in cases {
        for m in metrics {
            let o = m.score(
                black_box(&case.tools_called),
                black_box(&case.expected_tools),
            );
            passed += usize::from(o.pass == Some(true));
        }
    }
    passed
}

fn bench(c: &mut Criterion) {
    let modes = oracle_modes();
    assert_eq!(modes.len(), 43);
    let metrics: Vec<Box<dyn Metric>> = modes
        .iter()
        .map(|n| registry::lookup(n, &MetricOptions::default(), &NativeConfig::default(), None))
        .collect::<Result<_, _>>()
        .expect("presets");
    let cases = thousand_cases();

    let start = Instant::now();
    let passed = score_all(&metrics, &cases);
    eprintln!(
        "one pass: 43 presets x {} cases = {} scores in {:?} ({} pass)",
        cases.len(),
        43 * cases.len(),
        start.elapsed(),
        passed
    );

    // Where the time goes, slowest presets first.
    let mut per: Vec<(std::time::Duration, &str)> = metrics
        .iter()
        .map(|m| {
            let start = Instant::now();
            score_all(std::slice::from_ref(m), &cases);
            (start.elapsed(), m.name())
        })
        .collect();
    per.sort_by(|a, b| b.cmp(a));
    for (t, name) in per.iter().take(8) {
        eprintln!("  {t:>10.2?}  {name}");
    }

    let mut group = c.benchmark_group("presets");
    group.throughput(Throughput::Elements((metrics.len() * cases.len()) as u64));
    group.bench_function("43_presets_x_1000_cases", |b| {
        b.iter(|| score_all(&metrics, &cases))
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
