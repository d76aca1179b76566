//! Repeated trials: a case whose `match` joins the traces of a scenario run
//! several times (tests/data/trials: `book` 3 of 5 trials pass, `weather` 3
//! of 3, `refund` a single trace joined by id).

use serde_json::Value;

use crate::util::{data, json_rows, toolscore};

fn replay(format: &str, extra: &[&str]) -> std::process::Output {
    let traces = data("trials/traces.jsonl");
    let expected = data("trials/expected.jsonl");
    let mut args = vec![
        "replay",
        "-q",
        traces.to_str().unwrap(),
        "-e",
        expected.to_str().unwrap(),
        "-f",
        format,
    ];
    args.extend_from_slice(extra);
    toolscore(&args)
}

fn case_row<'a>(rows: &'a [Value], case: &str) -> &'a Value {
    rows.iter()
        .find(|r| r["type"] == "case" && r["case"] == case)
        .unwrap_or_else(|| panic!("no case row for {case}"))
}

/// Hand-computed: book passed trials 1, 3 and 5 of 5 (pass rate 0.6, pass@k
/// true, pass^k false, flaky); weather 3 of 3. The per-trace rows stay and
/// agree with the case rows; the single-trial case has no case row.
#[test]
fn a_case_of_several_traces_gets_its_trial_figures() {
    let out = replay("jsonl", &[]);
    assert_eq!(
        out.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let rows = json_rows(&out.stdout);
    let evals: Vec<&Value> = rows.iter().filter(|r| r["type"] == "evaluation").collect();
    assert_eq!(evals.len(), 9);
    let book_passes: Vec<bool> = evals
        .iter()
        .filter(|r| r["case"] == "book")
        .map(|r| r["pass"] == true)
        .collect();
    assert_eq!(book_passes, [true, false, true, false, true]);

    let book = case_row(&rows, "book");
    assert_eq!(book["trials"], 5);
    assert_eq!(book["passes"], 3);
    assert_eq!(book["pass_rate"], 0.6);
    assert_eq!(book["pass_at_k"], true);
    assert_eq!(book["pass_all_k"], false);
    assert_eq!(book["verdict"], "flaky");
    assert_eq!(book["pass"], false, "the default (all) fails 3 of 5");
    assert_eq!(book["trials_pass"], "all");

    let weather = case_row(&rows, "weather");
    assert_eq!(weather["trials"], 3);
    assert_eq!(weather["passes"], 3);
    assert_eq!(weather["pass_rate"], 1.0);
    assert_eq!(weather["pass_at_k"], true);
    assert_eq!(weather["pass_all_k"], true);
    assert_eq!(weather["verdict"], "stable-pass");
    assert_eq!(weather["pass"], true);

    let cases = rows.iter().filter(|r| r["type"] == "case").count();
    assert_eq!(cases, 2, "refund ran once: no case row");
    let summary = rows.iter().find(|r| r["type"] == "summary").unwrap();
    assert_eq!(summary["exit_code"], 1);
}

/// What a case's pass means decides the exit code: 3 of 5 fails `all` and
/// `rate:0.8`, passes `any` and `rate:0.6`.
#[test]
fn trials_pass_decides_the_exit_code() {
    for (rule, code, pass) in [
        ("all", 1, false),
        ("any", 0, true),
        ("rate:0.6", 0, true),
        ("rate:0.8", 1, false),
    ] {
        let out = replay("jsonl", &["--trials-pass", rule]);
        assert_eq!(
            out.status.code(),
            Some(code),
            "--trials-pass {rule}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let rows = json_rows(&out.stdout);
        assert_eq!(case_row(&rows, "book")["pass"], pass, "{rule}");
        assert_eq!(case_row(&rows, "book")["trials_pass"], rule);
        // The per-trace rows do not change with the rule.
        let failed = rows
            .iter()
            .filter(|r| r["type"] == "evaluation" && r["pass"] == false)
            .count();
        assert_eq!(failed, 2, "{rule}");
    }
    for bad in ["rate:1.5", "most", "rate:x"] {
        let out = replay("jsonl", &["--trials-pass", bad]);
        assert_eq!(out.status.code(), Some(2), "{bad}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("--trials-pass"), "{bad}: {err}");
        assert!(out.stdout.is_empty(), "{bad}: no report on a usage error");
    }
}

/// JUnit: one test case per case of several trials, failing by
/// --trials-pass, its figures in the suite's properties (the schema strict
/// readers check allows none in a testcase) and in its output; the
/// single-trial case keeps its per-trace test case.
#[test]
fn junit_has_one_test_case_per_case_of_trials() {
    let out = replay("junit", &[]);
    assert_eq!(out.status.code(), Some(1));
    let xml = String::from_utf8(out.stdout).unwrap();
    if let Err(problems) = crate::junit::check_schema(&xml) {
        panic!("{problems:?}\n{xml}");
    }
    assert_eq!(xml.matches("<testcase ").count(), 3, "{xml}");
    assert!(xml.contains("tests=\"3\""), "{xml}");
    assert!(xml.contains("failures=\"1\""), "{xml}");
    assert!(
        !xml.contains("name=\"book ("),
        "no per-trace book cases: {xml}"
    );
    assert!(xml.contains("name=\"refund ("), "{xml}");
    for p in [
        r#"<property name="book: trials" value="5"/>"#,
        r#"<property name="book: passes" value="3"/>"#,
        r#"<property name="book: pass_rate" value="0.6"/>"#,
        r#"<property name="book: pass_at_k" value="true"/>"#,
        r#"<property name="book: pass_all_k" value="false"/>"#,
        r#"<property name="book: verdict" value="flaky"/>"#,
        r#"<property name="weather: verdict" value="stable-pass"/>"#,
    ] {
        assert!(xml.contains(p), "{p} in {xml}");
    }
    let book = &xml[xml.find("name=\"book\"").expect("a book test case")..];
    let book = &book[..book.find("</testcase>").unwrap()];
    assert!(book.contains("3 of 5 trial(s) passed"), "{book}");
    assert!(book.contains("trials 5, passes 3, pass rate 0.6"), "{book}");

    let out = replay("junit", &["--trials-pass", "any"]);
    assert_eq!(out.status.code(), Some(0));
    let xml = String::from_utf8(out.stdout).unwrap();
    assert!(xml.contains("failures=\"0\""), "{xml}");
}

/// The table, the HTML page and the markdown summary show the trials.
#[test]
fn table_html_and_markdown_show_the_trials() {
    let out = replay("table", &[]);
    let text = String::from_utf8(out.stdout).unwrap();
    let book = text
        .lines()
        .find(|l| l.starts_with("book ") && l.contains("flaky"))
        .unwrap_or_else(|| panic!("{text}"));
    let cells: Vec<&str> = book.split_whitespace().collect();
    assert_eq!(
        cells,
        ["book", "5", "3", "0.60", "yes", "no", "flaky", "FAIL"]
    );
    assert!(text.contains("2 case(s) of several trials: 1 failed (--trials-pass all), 1 flaky"));

    let html = String::from_utf8(replay("html", &[]).stdout).unwrap();
    assert!(html.contains("<h2>Trials</h2>"));
    assert!(html.contains(r#"<td data-v="flaky">flaky</td>"#), "html");

    let md = String::from_utf8(replay("markdown", &[]).stdout).unwrap();
    assert!(md.contains("### Flaky cases (1)"), "{md}");
    assert!(md.contains("| book | 3 of 5 | 60.0% | no (all) |"), "{md}");
    assert!(!md.contains("| weather | 3 of 3"), "{md}");
}
