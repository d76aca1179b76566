//! Tree walks on hostile shapes (issue 14, items 7 and 11) and agent runs
//! whose tool spans are their siblings (issue 12 §1), through the binary.
//!
//! The big inputs are generated here. Time limits are on the CPU time of the
//! `toolscore` process (read from `/proc`), so a loaded machine does not make
//! them flaky; each limit is several times what the linear code needs in a
//! debug build and far below what the old quadratic or cubic code took.

use std::fmt::Write as _;
use std::fs::{self, File};
use std::process::{ExitStatus, Stdio};
use std::time::Duration;

use serde_json::Value;

use crate::util::{poll_until, ChildGuard, TempDir};

const TRACE: &str = "4bf92f3577b34da6a3ce929d0e0e4736";

/// The output of one bounded run.
struct Run {
    status: ExitStatus,
    stdout: String,
    stderr: String,
}

/// CPU time (user + system) used so far by process `pid`, if `/proc` says.
fn cpu_time(pid: u32) -> Option<Duration> {
    let stat = fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // Fields after the command name, which is in parentheses: state is the
    // first, utime and stime the 12th and 13th (in clock ticks, 100/s on Linux).
    let rest = &stat[stat.rfind(')')? + 1..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let ticks: u64 = fields.get(11)?.parse::<u64>().ok()? + fields.get(12)?.parse::<u64>().ok()?;
    Some(Duration::from_millis(ticks * 10))
}

/// Runs `toolscore args` and fails the test if it uses more than `cpu` of CPU
/// time (or, as a backstop, ten minutes of wall time).
/// A table's warning line: these made-up tool spans hold neither
/// arguments nor a result, which the table warns of (`no_content`).
fn is_warning(line: &str) -> bool {
    line.trim_start().starts_with("warning: ")
}

fn run_bounded(dir: &TempDir, args: &[&str], cpu: Duration) -> Run {
    let out_path = dir.path().join("stdout");
    let err_path = dir.path().join("stderr");
    let mut child = ChildGuard(
        crate::util::bin()
            .args(args)
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .stdin(Stdio::null())
            .stdout(File::create(&out_path).unwrap())
            .stderr(File::create(&err_path).unwrap())
            .spawn()
            .expect("run toolscore"),
    );
    let mut used = Duration::ZERO;
    // `Err`: over the CPU limit (the child is killed when dropped).
    let exit = poll_until(
        &format!("toolscore {args:?} to exit"),
        Duration::from_secs(600),
        || {
            if let Some(status) = child.try_wait().unwrap() {
                return Some(Ok(status));
            }
            used = cpu_time(child.id()).unwrap_or(used);
            (used > cpu).then_some(Err(used))
        },
    );
    let status = exit.unwrap_or_else(|used| {
        panic!(
            "toolscore {args:?} still running after {used:?} of CPU time \
             (limit {cpu:?}): not linear"
        )
    });
    Run {
        status,
        stdout: fs::read_to_string(&out_path).unwrap(),
        stderr: fs::read_to_string(&err_path).unwrap(),
    }
}

fn span_id(k: usize) -> String {
    format!("{:016x}", k + 1)
}

/// One OTLP/JSON span: `attrs` are string attributes.
fn span(
    out: &mut String,
    k: usize,
    parent: Option<usize>,
    (start, end): (u64, u64),
    name: &str,
    attrs: &[(&str, &str)],
) {
    if !out.ends_with('[') {
        out.push(',');
    }
    let _ = write!(out, r#"{{"traceId":"{TRACE}","spanId":"{}","#, span_id(k));
    if let Some(p) = parent {
        let _ = write!(out, r#""parentSpanId":"{}","#, span_id(p));
    }
    let _ = write!(
        out,
        r#""name":{},"kind":1,"startTimeUnixNano":"{start}","endTimeUnixNano":"{end}","attributes":["#,
        Value::from(name)
    );
    for (i, (key, v)) in attrs.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        let _ = write!(
            out,
            r#"{{"key":"{key}","value":{{"stringValue":{}}}}}"#,
            Value::from(*v)
        );
    }
    out.push_str("]}");
}

/// `execute_tool <name>` as OTel GenAI instrumentations write it.
fn tool(out: &mut String, k: usize, parent: Option<usize>, when: (u64, u64), name: &str) {
    span(
        out,
        k,
        parent,
        when,
        &format!("execute_tool {name}"),
        &[
            ("gen_ai.operation.name", "execute_tool"),
            ("gen_ai.tool.name", name),
            ("gen_ai.tool.call.id", &format!("call_{k}")),
            ("gen_ai.tool.type", "function"),
        ],
    );
}

/// As [`tool`], without a call id: such a call's arguments are looked for
/// in later model requests.
fn tool_without_id(out: &mut String, k: usize, parent: Option<usize>, when: (u64, u64)) {
    span(
        out,
        k,
        parent,
        when,
        "execute_tool step",
        &[
            ("gen_ai.operation.name", "execute_tool"),
            ("gen_ai.tool.name", "step"),
            ("gen_ai.tool.type", "function"),
        ],
    );
}

/// `invoke_agent <name>` as OTel GenAI instrumentations write it.
fn agent(out: &mut String, k: usize, parent: Option<usize>, when: (u64, u64), name: &str) {
    span(
        out,
        k,
        parent,
        when,
        &format!("invoke_agent {name}"),
        &[
            ("gen_ai.operation.name", "invoke_agent"),
            ("gen_ai.agent.name", name),
            ("gen_ai.agent.id", &format!("agent-{name}")),
            ("gen_ai.provider.name", "microsoft.agent_framework"),
        ],
    );
}

fn open_doc() -> String {
    String::from(
        r#"{"resourceSpans":[{"resource":{"attributes":[{"key":"service.name","value":{"stringValue":"treewalks"}}]},"scopeSpans":[{"scope":{"name":"agent_framework"},"spans":["#,
    )
}

fn write_doc(dir: &TempDir, name: &str, mut doc: String) -> String {
    doc.push_str("]}]}]}");
    let p = dir.path().join(name);
    fs::write(&p, doc).unwrap();
    p.display().to_string()
}

/// The CPU limit of the big inputs (a 50,000-call chain, a 30,000-level
/// table, a run of 60,000 calls). Linear reading of a 50,000-call chain
/// takes 10 to 13 s of CPU in a debug build on the 2-core CI machine of
/// 2026-12 (6 s for 25,000 calls, 3.8 s for 12,500), and the quadratic
/// walks these tests were written against took about 50 s on a machine
/// twice as fast: the limit sits between the two.
const BIG_INPUT_LIMIT: Duration = Duration::from_secs(40);

/// A chain of `n` nested tool calls: call `k` is the parent of call `k + 1`.
fn chain(dir: &TempDir, n: usize) -> String {
    chain_of(dir, n, true)
}

fn chain_of(dir: &TempDir, n: usize, ids: bool) -> String {
    let mut doc = open_doc();
    for k in 0..n {
        let parent = k.checked_sub(1);
        let when = (1_000 + k as u64, 10_000_000 - k as u64);
        if ids {
            tool(&mut doc, k, parent, when, "step");
        } else {
            tool_without_id(&mut doc, k, parent, when);
        }
    }
    write_doc(dir, "chain.json", doc)
}

fn jsonl(text: &str) -> Vec<Value> {
    text.lines()
        .map(|l| serde_json::from_str(l).expect("JSONL line"))
        .collect()
}

#[test]
fn deep_parent_chain_is_analyzed_in_linear_time() {
    // Every call used to walk its whole ancestor chain: 50,000 nested calls
    // took ~50 s of CPU in a debug build (quadratic) where linear took ~2 s.
    let dir = TempDir::new("chain");
    let n = 50_000;
    let file = chain(&dir, n);
    let run = run_bounded(
        &dir,
        &["replay", &file, "--format", "jsonl", "-q"],
        BIG_INPUT_LIMIT,
    );
    // No expectations: listed, not scored (exit 2).
    assert_eq!(run.status.code(), Some(2), "{}", run.stderr);
    let rows = jsonl(&run.stdout);
    let trace = rows
        .iter()
        .find(|r| r["type"] == "unmatched_trace")
        .expect("trace row");
    let calls = trace["tools_called"].as_array().unwrap();
    assert_eq!(calls.len(), n);
    for k in [0, 1, 31, n / 2, n - 1] {
        assert_eq!(calls[k]["span_id"], span_id(k).as_str());
        assert_eq!(calls[k]["depth"], k, "call {k}");
    }
}

#[test]
fn deep_chain_of_calls_without_ids_is_analyzed_in_linear_time() {
    // Each call without a call id or arguments looked for its arguments in
    // every span of the trace: 50,000 such calls took minutes (quadratic).
    let dir = TempDir::new("chain-no-ids");
    let n = 50_000;
    let file = chain_of(&dir, n, false);
    let run = run_bounded(
        &dir,
        &["inspect", &file, "--format", "jsonl", "-q"],
        BIG_INPUT_LIMIT,
    );
    assert!(run.status.success(), "{:?}: {}", run.status, run.stderr);
    let rows = jsonl(&run.stdout);
    let calls = rows[0]["tools"].as_array().expect("tools");
    assert_eq!(calls.len(), n);
    assert_eq!(calls[n - 1]["depth"], n - 1);
    assert!(calls.iter().all(|c| c["args"].is_null()));
}

#[test]
fn inspect_table_prints_a_very_deep_tree_with_bounded_indentation() {
    // The table used to recurse once per level (stack overflow, SIGABRT, at
    // ~20,000 levels in release builds, fewer in debug) and to indent two
    // spaces per level (output quadratic in the depth).
    let dir = TempDir::new("deep-table");
    let n = 30_000;
    let file = chain(&dir, n);
    let run = run_bounded(&dir, &["inspect", &file, "-q"], BIG_INPUT_LIMIT);
    assert!(
        run.status.success(),
        "{:?}: {}",
        run.status,
        &run.stderr[..run.stderr.len().min(500)]
    );
    // Its calls hold no arguments: the trace's warning says so (`no_content`).
    let lines: Vec<&str> = run.stdout.lines().filter(|l| !is_warning(l)).collect();
    assert_eq!(lines.len(), n + 1, "a header and one line per call");
    assert!(lines[0].starts_with(&format!("trace {TRACE}  ({n} spans, {n} tool calls")));
    // The first levels look as they always did: two spaces per level.
    for (level, line) in lines[1..=33].iter().enumerate() {
        let want = format!(
            "{}step -  [ok; otel-genai; span {}]",
            "  ".repeat(level + 1),
            span_id(level)
        );
        assert_eq!(*line, want, "level {level}");
    }
    // Deeper, the indentation stops at 32 levels and the depth is a number.
    let cap = "  ".repeat(33);
    assert_eq!(
        lines[35],
        format!(
            "{cap}[depth 34] step -  [ok; otel-genai; span {}]",
            span_id(34)
        )
    );
    assert_eq!(
        lines[n],
        format!(
            "{cap}[depth {}] step -  [ok; otel-genai; span {}]",
            n - 1,
            span_id(n - 1)
        )
    );
    let longest = lines.iter().map(|l| l.len()).max().unwrap();
    assert!(longest < 200, "a line of {longest} bytes");
}

#[test]
fn inspect_table_is_linear_in_the_number_of_calls() {
    // One agent run with 60,000 calls: the table scanned every node for the
    // children of every node (quadratic: 100k calls took 28.5 s in release).
    let dir = TempDir::new("flat-table");
    let n = 60_000;
    let mut doc = open_doc();
    agent(&mut doc, 0, None, (1_000, 10_000_000), "planner");
    for k in 1..=n {
        tool(
            &mut doc,
            k,
            Some(0),
            (2_000 + k as u64, 3_000 + k as u64),
            "lookup",
        );
    }
    let file = write_doc(&dir, "flat.json", doc);
    let run = run_bounded(&dir, &["inspect", &file, "-q"], BIG_INPUT_LIMIT);
    assert!(run.status.success(), "{}", run.stderr);
    let lines: Vec<&str> = run.stdout.lines().filter(|l| !is_warning(l)).collect();
    assert_eq!(lines.len(), n + 2);
    assert_eq!(
        lines[1],
        format!("  agent planner  [otel-genai-agent; span {}]", span_id(0))
    );
    for (k, line) in lines[2..].iter().enumerate() {
        assert!(
            line.starts_with("    lookup -  [ok; otel-genai; span ")
                && line.ends_with(&format!("{}]", span_id(k + 1))),
            "line {k}: {line}"
        );
    }
}

/// A `score --cases` line: `called` and `expected` are JSON lists.
fn case(id: &str, called: &str, expected: &str) -> String {
    format!(r#"{{"id":"{id}","tools_called":{called},"expected_tools":{expected}}}"#)
}

fn list(items: impl Iterator<Item = String>) -> String {
    format!("[{}]", items.collect::<Vec<_>>().join(","))
}

#[test]
fn matching_thousands_of_identical_calls_is_fast() {
    // 4,000 calls against 4,000 equal expectations: the augmenting-path
    // assignment took 12 s in release (cubic), ~50 s of CPU in a debug
    // build. Equal pairs are matched first.
    let dir = TempDir::new("match-fast");
    let n = 4_000;
    let names = || (0..n).map(|_| r#""search""#.to_string());
    // Fewer with arguments (still over the exact limit): the order score
    // compares every call with every expectation, which costs more per pair.
    let m = 1_000;
    let with_args = || (0..m).map(|k| format!(r#"{{"name":"fetch","args":{{"page":{k}}}}}"#));
    let cases = [
        case("names", &list(names()), &list(names())),
        // Same arguments in the opposite order: every pair is still found.
        case(
            "args",
            &list(with_args()),
            &list(with_args().collect::<Vec<_>>().into_iter().rev()),
        ),
    ];
    let path = dir.path().join("cases.jsonl");
    fs::write(&path, cases.join("\n")).unwrap();
    let run = run_bounded(
        &dir,
        &["score", "--cases", path.to_str().unwrap()],
        Duration::from_secs(10),
    );
    assert!(run.status.success(), "{}", run.stderr);
    for (row, n) in jsonl(&run.stdout).iter().zip([n, m]) {
        let r = &row["results"]["tool_correctness"];
        assert_eq!(r["details"]["recall"], 1.0, "{}", row["id"]);
        assert_eq!(r["details"]["precision"], 1.0, "{}", row["id"]);
        let reason = r["reason"].as_str().unwrap();
        assert!(
            reason.starts_with(&format!(
                "{n}/{n} expected calls matched, {n}/{n} calls expected"
            )),
            "{reason}"
        );
        assert!(!reason.contains("note"), "{reason}");
    }
}

#[test]
fn past_the_exact_limit_matching_is_greedy_and_says_so() {
    // 600 calls with arguments against 600 expectations of the name only:
    // no pair is identical, so the exact assignment would get 600 x 600;
    // over the limit (500) they are paired greedily, and the reason says so.
    let dir = TempDir::new("match-greedy");
    let n = 600;
    let called = list((0..n).map(|k| format!(r#"{{"name":"fetch","args":{{"page":{k}}}}}"#)));
    let expected = list((0..n).map(|_| r#""fetch""#.to_string()));
    // Under the limit nothing changes: no note.
    let small = list((0..10).map(|k| format!(r#"{{"name":"fetch","args":{{"page":{k}}}}}"#)));
    let small_expected = list((0..10).map(|_| r#""fetch""#.to_string()));
    let path = dir.path().join("cases.jsonl");
    fs::write(
        &path,
        [
            case("big", &called, &expected),
            case("small", &small, &small_expected),
        ]
        .join("\n"),
    )
    .unwrap();
    let run = run_bounded(
        &dir,
        &["score", "--cases", path.to_str().unwrap()],
        Duration::from_secs(10),
    );
    assert!(run.status.success(), "{}", run.stderr);
    let rows = jsonl(&run.stdout);
    let big = &rows[0]["results"]["tool_correctness"];
    assert_eq!(big["score"], 1.0);
    let reason = big["reason"].as_str().unwrap();
    assert!(
        reason.contains("note: 600 calls against 600 expectations of `fetch` were paired greedily"),
        "{reason}"
    );
    assert!(big["details"]["note"].is_string(), "{big}");
    let small = &rows[1]["results"]["tool_correctness"];
    assert_eq!(small["score"], 1.0);
    assert!(
        !small["reason"].as_str().unwrap().contains("note"),
        "{small}"
    );
}

/// A trace whose parent links form cycles: `alpha <-> beta` (with `gamma`
/// under them) and `d -> e -> f -> d`, under or beside a root agent run.
fn cyclic(dir: &TempDir) -> String {
    let mut doc = open_doc();
    agent(&mut doc, 0, None, (100, 10_000), "root");
    tool(&mut doc, 1, Some(0), (200, 300), "top");
    tool(&mut doc, 2, Some(3), (400, 900), "alpha");
    tool(&mut doc, 3, Some(2), (410, 800), "beta");
    tool(&mut doc, 4, Some(2), (500, 600), "gamma");
    tool(&mut doc, 5, Some(7), (1_000, 2_000), "d");
    tool(&mut doc, 6, Some(5), (1_100, 1_900), "e");
    tool(&mut doc, 7, Some(6), (1_200, 1_800), "f");
    write_doc(dir, "cycles.json", doc)
}

#[test]
fn parent_cycles_are_broken_and_every_call_is_kept() {
    let dir = TempDir::new("cycles");
    let file = cyclic(&dir);
    let limit = Duration::from_secs(10);
    // JSONL: every call, with depths from the broken tree: `alpha` and `d`
    // (the earliest of their cycles) became roots.
    let run = run_bounded(&dir, &["inspect", &file, "--format", "jsonl", "-q"], limit);
    assert!(run.status.success(), "{}", run.stderr);
    let rows = jsonl(&run.stdout);
    let depths: Vec<(String, u64)> = rows[0]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (
                c["name"].as_str().unwrap().to_string(),
                c["depth"].as_u64().unwrap(),
            )
        })
        .collect();
    let want: Vec<(String, u64)> = [
        ("top", 0),
        ("alpha", 0),
        ("beta", 1),
        ("gamma", 1),
        ("d", 0),
        ("e", 1),
        ("f", 2),
    ]
    .iter()
    .map(|(n, d)| (n.to_string(), *d))
    .collect();
    assert_eq!(depths, want);
    // The warning names the links that were dropped.
    for (span, parent) in [(2, 3), (5, 7)] {
        let needle = format!("span {} named parent {}", span_id(span), span_id(parent));
        assert!(run.stderr.contains(&needle), "{needle} in {}", run.stderr);
    }
    assert!(run.stderr.contains("parent cycle"), "{}", run.stderr);

    // The table shows every call, nested as in the broken tree.
    let run = run_bounded(&dir, &["inspect", &file, "-q"], limit);
    assert!(run.status.success(), "{}", run.stderr);
    let names: Vec<&str> = run
        .stdout
        .lines()
        .skip(1)
        .filter(|l| !is_warning(l))
        .map(|l| l.trim_start().split(' ').next().unwrap())
        .collect();
    assert_eq!(
        names,
        ["agent", "top", "alpha", "beta", "gamma", "d", "e", "f"],
        "{}",
        run.stdout
    );
    assert!(run.stdout.contains("\n    beta -  ["), "{}", run.stdout);

    // Top-level scoring keeps the calls the cycles hid.
    let run = run_bounded(
        &dir,
        &[
            "replay",
            &file,
            "--scope",
            "top-level",
            "--format",
            "jsonl",
            "-q",
        ],
        limit,
    );
    assert_eq!(run.status.code(), Some(2), "{}", run.stderr);
    let rows = jsonl(&run.stdout);
    let top: Vec<&str> = rows[0]["tools_called"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert_eq!(top, ["top", "alpha", "d"]);
    assert!(run.stderr.contains("parent cycle"), "{}", run.stderr);
}

/// A Microsoft Agent Framework workflow run with streaming agents: each
/// executor span holds its `invoke_agent` span and, as siblings, the
/// `chat` and `execute_tool` spans of that run.
fn workflow(dir: &TempDir) -> String {
    let mut doc = open_doc();
    span(
        &mut doc,
        0,
        None,
        (1_000, 90_000),
        "workflow.run",
        &[("workflow.id", "wf-1"), ("workflow.name", "trip_planner")],
    );
    let executor = |doc: &mut String, k, when, id: &str| {
        span(
            doc,
            k,
            Some(0),
            when,
            &format!("executor.process {id}"),
            &[
                ("executor.id", id),
                ("executor.type", "AgentExecutor"),
                ("message.type", "standard"),
            ],
        );
    };
    let chat = |doc: &mut String, k, parent, when| {
        span(
            doc,
            k,
            Some(parent),
            when,
            "chat gpt-4o",
            &[
                ("gen_ai.operation.name", "chat"),
                ("gen_ai.request.model", "gpt-4o"),
                ("gen_ai.provider.name", "openai"),
            ],
        );
    };
    executor(&mut doc, 1, (2_000, 40_000), "researcher");
    // The chat span starts before the agent span (it is created first).
    chat(&mut doc, 3, 1, (2_100, 5_000));
    agent(&mut doc, 2, Some(1), (2_200, 39_000), "researcher");
    tool(&mut doc, 4, Some(1), (6_000, 7_000), "get_weather");
    tool(&mut doc, 5, Some(1), (7_500, 8_000), "get_weather");
    chat(&mut doc, 6, 1, (8_500, 12_000));
    executor(&mut doc, 7, (41_000, 80_000), "writer");
    agent(&mut doc, 8, Some(7), (41_100, 79_000), "writer");
    chat(&mut doc, 9, 7, (41_200, 50_000));
    tool(&mut doc, 10, Some(7), (51_000, 52_000), "format_answer");
    // Outside every run's time: not attributed.
    tool(&mut doc, 11, Some(7), (79_500, 79_800), "cleanup");
    write_doc(dir, "workflow.json", doc)
}

#[test]
fn tool_spans_beside_their_agent_run_are_attributed_to_it() {
    let dir = TempDir::new("siblings");
    let file = workflow(&dir);
    let limit = Duration::from_secs(10);
    let run = run_bounded(&dir, &["inspect", &file, "--format", "jsonl", "-q"], limit);
    assert!(run.status.success(), "{}", run.stderr);
    let rows = jsonl(&run.stdout);
    let calls: Vec<(&str, Option<&str>)> = rows[0]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| (c["name"].as_str().unwrap(), c["agent"]["name"].as_str()))
        .collect();
    assert_eq!(
        calls,
        [
            ("get_weather", Some("researcher")),
            ("get_weather", Some("researcher")),
            ("format_answer", Some("writer")),
            ("cleanup", None),
        ]
    );
    assert_eq!(rows[0]["tools"][0]["agent"]["span_id"], span_id(2).as_str());
    assert!(rows[0]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .all(|c| c["depth"] == 0));

    // The table nests each call under its run.
    let run = run_bounded(&dir, &["inspect", &file, "-q"], limit);
    assert!(run.status.success(), "{}", run.stderr);
    let lines: Vec<String> = run
        .stdout
        .lines()
        .skip(1)
        .filter(|l| !is_warning(l))
        .map(|l| l.split("  [").next().unwrap().to_string())
        .collect();
    assert_eq!(
        lines,
        [
            "  agent researcher",
            "    get_weather -",
            "    get_weather -",
            "  agent writer",
            "    format_answer -",
            "  cleanup -",
        ],
        "{}",
        run.stdout
    );
}

#[test]
fn a_span_id_reused_with_other_content_is_warned_about_and_the_first_kept() {
    let dir = TempDir::new("dup-ids");
    let mut doc = open_doc();
    agent(&mut doc, 0, None, (100, 10_000), "root");
    // An exporter's retry: the same span twice, silently dropped.
    tool(&mut doc, 1, Some(0), (200, 300), "lookup");
    tool(&mut doc, 1, Some(0), (200, 300), "lookup");
    // One id, two different spans: the first is read, with a warning.
    tool(&mut doc, 2, Some(0), (400, 500), "first");
    tool(&mut doc, 2, Some(0), (400, 500), "second");
    tool(&mut doc, 3, Some(0), (600, 700), "third");
    let file = write_doc(&dir, "dups.json", doc);
    let run = run_bounded(
        &dir,
        &["inspect", &file, "--format", "jsonl"],
        Duration::from_secs(10),
    );
    assert!(run.status.success(), "{}", run.stderr);
    let rows = jsonl(&run.stdout);
    let names: Vec<&str> = rows[0]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["lookup", "first", "third"]);
    let want = format!(
        "toolscore: warning: trace {TRACE}: 1 span(s) came again with the same id and other \
         content; the first copy is kept: {}",
        span_id(2)
    );
    assert!(run.stderr.contains(&want), "{want} in {}", run.stderr);
    // The exact re-send is not named.
    assert!(!run.stderr.contains(&span_id(1)), "{}", run.stderr);
}

#[test]
fn records_of_many_calls_in_another_trace_fill_them_in_linear_time() {
    // Each id-only tool call of a held trace was compared with every record
    // of the next trace, and each entry looked through every call: 16,000
    // calls took ~14 s of CPU in a debug build (quadratic); linear is ~3 s.
    let dir = TempDir::new("records");
    let n = 30_000;
    let mut calls = open_doc();
    agent(&mut calls, n, None, (500, 100_000_000), "desk");
    for k in 0..n {
        let when = (1_000 + 10 * k as u64, 1_005 + 10 * k as u64);
        tool(&mut calls, k, Some(n), when, &format!("probe_{k}"));
    }
    calls.push_str("]}]}]}");
    // The runtime's message delivering the model's request for those
    // calls, as autogen-core writes it, in a trace of its own.
    let records: Vec<Value> = (0..n)
        .map(|k| serde_json::json!({"id": format!("call_{k}"), "name": format!("probe_{k}"), "arguments": {"k": k}}))
        .collect();
    let message = serde_json::json!({"message": {"id": "ev-1", "source": "desk", "content": records, "type": "ToolCallRequestEvent"}});
    let mut delivery = open_doc();
    span(
        &mut delivery,
        n + 1,
        None,
        (200_000_000, 200_001_000),
        "autogen process Manager",
        &[
            ("sender_agent_type", "desk"),
            ("recipient_agent_type", "Manager"),
            ("message", &message.to_string()),
        ],
    );
    delivery.push_str("]}]}]}");
    let delivery = delivery.replace(TRACE, "5ce0a1b2c3d4e5f60718293a4b5c6d7e");
    let file = dir.path().join("records.jsonl");
    fs::write(&file, format!("{calls}\n{delivery}\n")).unwrap();
    let file = file.display().to_string();
    let run = run_bounded(
        &dir,
        &["inspect", &file, "--format", "jsonl", "-q"],
        Duration::from_secs(30),
    );
    assert!(run.status.success(), "{:?}: {}", run.status, run.stderr);
    let rows = jsonl(&run.stdout);
    let calls = rows
        .iter()
        .find(|r| r["trace_id"] == TRACE)
        .and_then(|r| r["tools"].as_array())
        .expect("the calls' trace");
    assert_eq!(calls.len(), n);
    for k in [0, 1, n / 2, n - 1] {
        let c = &calls[k];
        assert_eq!(c["name"], format!("probe_{k}").as_str());
        assert_eq!(c["args"], serde_json::json!({"k": k}), "call {k}");
    }
}
