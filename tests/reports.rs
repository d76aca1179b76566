//! Reports stay readable by the next tool in the pipeline, whatever a trace
//! holds (issue 28): every JSONL row is strict JSON (serde_json and
//! Python's `json` read it), JUnit XML is well-formed XML 1.0, and
//! `inspect --explain` sends no control or reordering characters to the
//! terminal. Through the real binary.

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};

use serde_json::{json, Value};

use crate::util::{require, toolscore, TempDir};

const TRACE: &str = "4bf92f3577b34da6a3ce929d0e0e4736";

fn nest(levels: usize) -> String {
    format!("{}{}", "[".repeat(levels), "]".repeat(levels))
}

/// Results that are JSON to serde_json's grammar check, not to its parser
/// (nor to Python's, read strictly): lone surrogates, numbers past f64,
/// nesting that a row cannot hold (serde_json reads 128 levels).
fn hostile_results() -> Vec<String> {
    let mut texts: Vec<String> = [
        r#"{"r":"\udbff","big":1e999}"#,
        r#"["\udc00"]"#,
        r#"{"pair":"\ud800\u0041"}"#,
        "-1e999",
        r#"{"n":1.8e308}"#,
    ]
    .map(String::from)
    .into();
    texts.push(nest(101));
    texts.push(nest(126));
    texts
}

/// Results that are valid JSON, hard cases included: written as they are.
fn valid_results() -> Vec<String> {
    let mut texts: Vec<String> = [
        r#"{"ok":[1,2.5,"\ud83d\ude00","\uDBFF\uDFFF"],"tiny":1e-999}"#,
        r#"{"max":1.7976931348623157e308,"n":-0.0e-0}"#,
        r#"{"big_int":123456789012345678901234567890}"#,
    ]
    .map(String::from)
    .into();
    texts.push(nest(100));
    texts
}

fn span(id: u8, name: &str, attrs: &[(&str, &str)]) -> Value {
    json!({
        "traceId": TRACE,
        "spanId": format!("00000000000000{id:02x}"),
        "parentSpanId": if id == 1 { String::new() } else { "0000000000000001".into() },
        "name": name,
        "kind": 1,
        "startTimeUnixNano": (1_000 + u64::from(id)).to_string(),
        "endTimeUnixNano": "5000",
        "attributes": attrs
            .iter()
            .map(|(k, v)| json!({"key": k, "value": {"stringValue": v}}))
            .collect::<Vec<_>>(),
    })
}

/// One OTLP/JSON request of `spans`, written to `dir/name`.
fn write_trace(dir: &Path, name: &str, spans: Vec<Value>) -> String {
    let doc = json!({"resourceSpans": [{"scopeSpans": [{"spans": spans}]}]});
    let path = dir.join(name);
    std::fs::write(&path, doc.to_string()).unwrap();
    path.display().to_string()
}

/// A trace whose tool calls return each of `results`; the last one's
/// arguments nest deeper than a row can hold.
pub(crate) fn results_trace(dir: &Path, results: &[String]) -> String {
    let mut spans = vec![span(
        1,
        "invoke_agent planner",
        &[("gen_ai.operation.name", "invoke_agent")],
    )];
    let deep_args = format!("{{\"q\":{}}}", nest(125));
    for (i, r) in results.iter().enumerate() {
        let args = if i + 1 == results.len() {
            deep_args.as_str()
        } else {
            r#"{"q":1}"#
        };
        spans.push(span(
            i as u8 + 2,
            "execute_tool lookup",
            &[
                ("gen_ai.operation.name", "execute_tool"),
                ("gen_ai.tool.name", "lookup"),
                ("gen_ai.tool.call.arguments", args),
                ("gen_ai.tool.call.result", r),
            ],
        ));
    }
    write_trace(dir, "results.json", spans)
}

/// Every line of `text` read by serde_json.
pub(crate) fn serde_rows(text: &str) -> Vec<Value> {
    text.lines()
        .enumerate()
        .map(|(i, l)| {
            serde_json::from_str(l).unwrap_or_else(|e| panic!("line {}: {e}: {l}", i + 1))
        })
        .collect()
}

/// Python's `json` reading every line of `text`, strictly: a number that
/// is not a finite double or a string with a lone surrogate (which Python
/// reads, but cannot encode as UTF-8) fails. `None` without python3.
pub(crate) fn python_reads(text: &str) -> Option<Result<(), String>> {
    const CHECK: &str = r#"
import json, math, sys
def finite(s):
    f = float(s)
    if not math.isfinite(f):
        raise ValueError("number out of range: " + s[:40])
    return f
for n, line in enumerate(sys.stdin, 1):
    try:
        v = json.loads(line, parse_float=finite, parse_int=lambda s: finite(s) and int(s))
        json.dumps(v, ensure_ascii=False).encode("utf-8")
    except Exception as e:
        sys.exit("line %d: %s" % (n, e))
"#;
    let mut child = Command::new("python3")
        .args(["-c", CHECK])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .ok()?;
    let mut stdin = child.stdin.take()?;
    stdin.write_all(text.as_bytes()).ok()?;
    drop(stdin);
    let out = child.wait_with_output().ok()?;
    Some(if out.status.success() {
        Ok(())
    } else {
        Err(String::from_utf8_lossy(&out.stderr).into_owned())
    })
}

/// The `result` of every call in `rows`, in order.
fn results_of(rows: &[Value]) -> Vec<Value> {
    rows.iter()
        .filter_map(|r| r["tools_called"].as_array())
        .flatten()
        .map(|c| c["result"].clone())
        .collect()
}

/// Issue 28, item 6: a result serde_json's parser refuses is written as a
/// JSON string of its text; valid results stay JSON, as they came.
pub(crate) fn check_results(rows: &[Value]) {
    let results = results_of(rows);
    let (hostile, valid) = (hostile_results(), valid_results());
    assert_eq!(results.len(), hostile.len() + valid.len(), "{results:?}");
    let (got_hostile, got_valid) = results.split_at(hostile.len());
    for (got, text) in got_hostile.iter().zip(&hostile) {
        assert_eq!(got, &json!(text));
    }
    for (got, text) in got_valid.iter().zip(&valid) {
        let want: Value = serde_json::from_str(text).unwrap();
        assert_eq!(got, &want);
    }
    // Arguments too deep for a row are kept as their text.
    let last = rows
        .iter()
        .filter_map(|r| r["tools_called"].as_array())
        .flatten()
        .last()
        .expect("calls");
    assert_eq!(last["args"], json!(format!("{{\"q\":{}}}", nest(125))));
}

pub(crate) fn all_results() -> Vec<String> {
    hostile_results()
        .into_iter()
        .chain(valid_results())
        .collect()
}

#[test]
fn jsonl_rows_are_strict_json_whatever_a_result_holds() {
    let dir = TempDir::new("strict-jsonl");
    let trace = results_trace(dir.path(), &all_results());
    let out = toolscore(&["replay", &trace, "-f", "jsonl", "-q"]);
    // No expectations: the trace is listed and the run exits 2.
    assert_eq!(
        out.status.code(),
        Some(2),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    let rows = serde_rows(&text);
    check_results(&rows);
    if let Some(read) = require("python3", "reads the report", python_reads(&text)) {
        read.unwrap();
    }
    // The next run's baseline gate reads it back.
    let report = dir.path().join("report.jsonl");
    std::fs::write(&report, &text).unwrap();
    let report = report.to_str().unwrap();
    let out = toolscore(&["diff", report, report, "-f", "jsonl"]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // `inspect` rows too.
    let out = toolscore(&["inspect", &trace, "-f", "jsonl", "-q"]);
    let text = String::from_utf8(out.stdout).unwrap();
    let rows = serde_rows(&text);
    assert!(!rows.is_empty());
}

/// Every character XML 1.0 forbids in a document (C0 controls but tab,
/// LF and CR; U+FFFE, U+FFFF).
const NOT_XML: &[char] = &['\u{1}', '\u{1b}', '\u{8}', '\u{1f}', '\u{fffe}', '\u{ffff}'];

fn hostile(base: &str) -> String {
    let mut s = base.to_string();
    for c in NOT_XML {
        s.push(*c);
        s.push('x');
    }
    s
}

/// Parses `xml` as XML 1.0 and returns all its text and attribute values.
fn xml_text(xml: &str) -> String {
    let doc = roxmltree::Document::parse(xml).unwrap_or_else(|e| panic!("{e}:\n{xml}"));
    let mut all = String::new();
    for n in doc.descendants() {
        if let Some(t) = n.text() {
            all.push_str(t);
        }
        for a in n.attributes() {
            all.push_str(a.value());
        }
    }
    all
}

/// Issue 28, item 7: names, case ids, arguments and file names with
/// characters XML 1.0 forbids still make a well-formed report (U+FFFE and
/// U+FFFF replaced with U+FFFD, controls dropped or shown as `?`), in
/// `replay -f junit` and `diff -f junit`.
#[test]
fn junit_is_well_formed_xml_whatever_names_hold() {
    let dir = TempDir::new("junit-chars");
    let tool = hostile("get_weather");
    let args = json!({ "city": hostile("Paris") }).to_string();
    let trace = write_trace(
        dir.path(),
        "trace.json",
        vec![
            span(
                1,
                "invoke_agent planner",
                &[("gen_ai.operation.name", "invoke_agent")],
            ),
            span(
                2,
                "execute_tool t",
                &[
                    ("gen_ai.operation.name", "execute_tool"),
                    ("gen_ai.tool.name", &tool),
                    ("gen_ai.tool.call.arguments", &args),
                ],
            ),
        ],
    );
    let case = hostile("case");
    let fixture = dir.path().join("expected.jsonl");
    let lines = [
        json!({"id": case, "trace_id": TRACE,
               "expected_tools": [{"name": tool, "args": {"city": hostile("London")}}]}),
        json!({"id": hostile("nothing"), "trace_id": "ffffffffffffffffffffffffffffffff",
               "expected_tools": ["x"]}),
    ];
    let text: Vec<String> = lines.iter().map(Value::to_string).collect();
    std::fs::write(&fixture, text.join("\n")).unwrap();
    let bad = dir.path().join(hostile("bad"));
    std::fs::write(&bad, "not json at all").unwrap();
    let out = toolscore(&[
        "replay",
        &trace,
        bad.to_str().unwrap(),
        "--expected",
        fixture.to_str().unwrap(),
        "-f",
        "junit",
        "-q",
    ]);
    assert_eq!(out.status.code(), Some(2), "rejected input: exit 2");
    let xml = String::from_utf8(out.stdout).unwrap();
    let all = xml_text(&xml);
    // The text is still there: U+FFFE and U+FFFF replaced, the controls
    // dropped (quoted arguments are JSON, whose escapes stay).
    for name in ["get_weather", "case", "nothing", "bad"] {
        let kept = format!("{name}x");
        assert!(all.contains(&kept), "{kept} in {xml}");
    }
    assert!(all.contains("x\u{fffd}x\u{fffd}x ("), "{xml}");
    assert!(all.contains("London\\u0001x"), "{xml}");
    assert!(all.contains("\\u001fx\u{fffd}x\u{fffd}x"), "{xml}");

    // `diff -f junit`, from reports whose case ids and targets hold them.
    let report = |score: f64| {
        [
            json!({"type": "evaluation", "case": hostile("c1"), "trace_id": hostile("t1"),
                   "score": score, "pass": score >= 0.5}),
            json!({"type": "unmatched_case", "case": hostile("c2")}),
            json!({"type": "summary"}),
        ]
        .iter()
        .map(|r| format!("{r}\n"))
        .collect::<String>()
    };
    let (old, new) = (dir.path().join("old.jsonl"), dir.path().join("new.jsonl"));
    std::fs::write(&old, report(1.0)).unwrap();
    std::fs::write(&new, report(0.0)).unwrap();
    let out = toolscore(&[
        "diff",
        old.to_str().unwrap(),
        new.to_str().unwrap(),
        "-f",
        "junit",
    ]);
    assert_eq!(out.status.code(), Some(1), "a regression: exit 1");
    let xml = String::from_utf8(out.stdout).unwrap();
    let all = xml_text(&xml);
    assert!(all.contains("c1?x?x?x?x\u{fffd}x\u{fffd}x"), "{xml}");
    assert!(all.contains("t1?x?x?x?x\u{fffd}x\u{fffd}x"), "{xml}");
}

/// What must never reach a terminal from a trace: ESC (and with it CSI),
/// BEL, CR, LF, C1's CSI, bidi overrides and isolates, the Unicode line
/// and paragraph separators.
const NOT_FOR_TERMINALS: &[char] = &[
    '\u{1b}', '\u{7}', '\r', '\n', '\u{9b}', '\u{202e}', '\u{2066}', '\u{2028}', '\u{2029}',
];

/// Issue 28, item 8: `inspect --explain` prints span, tool and agent names
/// escaped, as the other tables do.
#[test]
fn explain_escapes_names_for_the_terminal() {
    let dir = TempDir::new("explain-escapes");
    let evil = |base: &str| {
        format!("{base}\u{1b}[31mRED\u{7}\r\n\u{9b}2J\u{202e}rtl\u{2066}\u{2028}\u{2029}end")
    };
    let trace = write_trace(
        dir.path(),
        "trace.json",
        vec![
            span(
                1,
                &evil("invoke_agent "),
                &[
                    ("gen_ai.operation.name", "invoke_agent"),
                    ("gen_ai.agent.name", &evil("agent")),
                ],
            ),
            span(
                2,
                &evil("execute_tool "),
                &[
                    ("gen_ai.operation.name", "execute_tool"),
                    ("gen_ai.tool.name", &evil("tool")),
                ],
            ),
            // Near misses quote attribute values.
            span(
                3,
                &evil("chat "),
                &[("gen_ai.operation.name", &evil("execute_tol"))],
            ),
        ],
    );
    let out = toolscore(&["inspect", &trace, "--explain", "-q"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    for line in text.lines() {
        assert!(!line.contains(NOT_FOR_TERMINALS), "{line:?}");
    }
    for c in NOT_FOR_TERMINALS
        .iter()
        .filter(|c| !matches!(c, '\n' | '\r'))
    {
        assert!(!text.contains(*c), "{c:?} in {text:?}");
    }
    // One line per span (3), the trace's line and a near miss: nothing forged.
    assert!(
        text.contains(
            "\\u{1b}[31mRED\\u{7}\\r\\n\\u{9b}2J\\u{202e}rtl\\u{2066}\\u{2028}\\u{2029}end"
        ),
        "{text}"
    );
    assert!(text.contains("tool call `tool\\u{1b}"), "{text}");
    assert!(text.contains("agent run `agent\\u{1b}"), "{text}");
}

/// A call whose failure is stated by a record in its result (Agno's
/// outcome record, Netra's marked span, a failed LangChain `ToolMessage`)
/// is failed in every output format, not only in those that print results
/// (results are read only for JSONL output or a judge).
#[test]
fn a_failure_read_from_a_result_record_scores_the_same_in_every_format() {
    let dir = TempDir::new("record-status");
    for fixture in [
        "py-agno-toolerr-netra",
        "py-agno-toolerr-openllmetry",
        "py-langgraph-toolerr-traceloop",
    ] {
        let file = crate::util::data(&format!("firstsight/{fixture}.jsonl"))
            .display()
            .to_string();
        let rows = crate::util::json_rows(
            &toolscore(&["inspect", "--format", "jsonl", "-q", &file]).stdout,
        );
        let cases: String = rows
            .iter()
            .filter_map(|r| r["trace_id"].as_str())
            .enumerate()
            .map(|(i, t)| {
                format!(
                    "{}\n",
                    json!({"id": format!("c{i}"), "trace_id": t, "expected_tools": []})
                )
            })
            .collect();
        let expected = dir.path().join(format!("{fixture}.cases.jsonl"));
        std::fs::write(&expected, cases).expect("cases written");
        let expected = expected.display().to_string();
        for format in ["jsonl", "table", "junit", "html"] {
            let out_file = dir.path().join(format!("{fixture}.{format}"));
            let out_path = out_file.display().to_string();
            let out = toolscore(&[
                "replay",
                "-q",
                &file,
                "--expected",
                &expected,
                "--metric",
                "tool_efficiency",
                "--format",
                format,
                "--output",
                &out_path,
            ]);
            assert!(
                out.status.code().is_some(),
                "{fixture} {format}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            let written = std::fs::read_to_string(&out_file).unwrap_or_default();
            // The failed call counts: one call of three in error.
            assert!(
                written.contains("error rate 1/3"),
                "{fixture} {format}: {written}"
            );
        }
    }
}
