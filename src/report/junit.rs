//! JUnit XML for CI systems: one testcase per (case, trace), written with
//! quick-junit. The output keeps to the JUnit schema CI systems validate
//! against (docs/formats.md, "JUnit XML").

use std::borrow::Cow;
use std::io::{self, Write};

use quick_junit::{NonSuccessKind, Report as Junit, TestCase, TestCaseStatus, TestSuite};

use super::{ellipsize, Report};
use crate::evaluate::{MetricResult, Verdict};

const SUITE: &str = "toolscore";

fn score_text(r: &MetricResult) -> String {
    r.outcome
        .score
        .map_or_else(|| "error".to_string(), |s| format!("{s:.3}"))
}

/// `s` without U+FFFE and U+FFFF, which XML 1.0 forbids even escaped
/// (one in a name from a trace makes the whole report not well-formed, and
/// CI systems reject it): each is replaced with U+FFFD. The other
/// characters it forbids are the C0 controls but tab, LF and CR (no
/// surrogate can be in a Rust string): quick-junit drops those itself.
fn xml_text(s: &str) -> Cow<'_, str> {
    if !s.contains(['\u{fffe}', '\u{ffff}']) {
        return Cow::Borrowed(s);
    }
    Cow::Owned(s.replace(['\u{fffe}', '\u{ffff}'], "\u{fffd}"))
}

/// Text for XML made by hand (the baseline comparison): escaped, and the
/// characters XML 1.0 forbids even escaped replaced: the C0 controls with
/// `?`, U+FFFE and U+FFFF with U+FFFD ([`xml_text`]).
pub(crate) fn esc(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for ch in xml_text(s).chars() {
        match ch {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            c if (c as u32) < 0x20 && !matches!(c, '\t' | '\n' | '\r') => out.push('?'),
            c => out.push(c),
        }
    }
    out
}

/// A failing metric, as the failure text shows it.
fn failure_line(r: &MetricResult) -> String {
    let thr = r.threshold.map(|t| format!(" < {t}")).unwrap_or_default();
    format!(
        "{}: {}{}: {}",
        r.metric,
        score_text(r),
        thr,
        r.outcome.reason
    )
}

/// Every metric's verdict, for the testcase's output. The schema has no
/// `<properties>` inside `<testcase>`, so scores are written as text.
fn scores_text(results: &[MetricResult]) -> String {
    let lines: Vec<String> = results
        .iter()
        .map(|r| {
            let verdict = r.verdict().label();
            let thr = r
                .threshold
                .map(|t| format!(", threshold {t}"))
                .unwrap_or_default();
            let why = r.outcome.error.as_deref().unwrap_or(&r.outcome.reason);
            format!("{}: {} ({verdict}{thr}): {why}", r.metric, score_text(r))
        })
        .collect();
    lines.join("\n")
}

fn failure(message: &str, description: Option<String>) -> TestCaseStatus {
    let mut status = TestCaseStatus::non_success(NonSuccessKind::Failure);
    status.set_message(xml_text(&ellipsize(message, 200)));
    if let Some(d) = description {
        status.set_description(xml_text(&d));
    }
    status
}

fn suite(report: &Report) -> TestSuite {
    let mut suite = TestSuite::new(SUITE);
    for e in &report.evaluations {
        let lines = |v: Verdict| -> Vec<String> {
            e.results
                .iter()
                .filter(|r| r.verdict() == v)
                .map(failure_line)
                .collect()
        };
        let status = match e.verdict() {
            Verdict::Pass => TestCaseStatus::success(),
            Verdict::Fail => {
                let failing = lines(Verdict::Fail);
                let message = failing.first().cloned().unwrap_or_default();
                failure(&message, Some(failing.join("\n")))
            }
            // Not the agent's failure: the judge could not evaluate, which
            // CI systems show apart from failures.
            Verdict::JudgeError => {
                let errors = lines(Verdict::JudgeError);
                let mut status = TestCaseStatus::non_success(NonSuccessKind::Error);
                status.set_type("judge error");
                status.set_message(ellipsize(errors.first().map_or("", String::as_str), 200));
                status.set_description(errors.join("\n"));
                status
            }
            Verdict::NotJudged => {
                let mut status = TestCaseStatus::skipped();
                status.set_message("not judged (--judge-dry-run)");
                status
            }
        };
        let name = format!("{} ({})", e.case_id, e.target_label());
        let mut case = TestCase::new(xml_text(&name), status);
        case.set_classname(SUITE);
        case.set_system_out(xml_text(&scores_text(&e.results)));
        suite.add_test_case(case);
    }
    for c in &report.unmatched_cases {
        let mut case = TestCase::new(xml_text(c.id()), failure(&c.explanation(), None));
        case.set_classname(SUITE);
        suite.add_test_case(case);
    }
    for r in &report.rejected {
        let mut status = TestCaseStatus::non_success(NonSuccessKind::Error);
        status.set_message(xml_text(&r.to_string()));
        let mut case = TestCase::new(xml_text(&r.source), status);
        case.set_classname("toolscore.input");
        suite.add_test_case(case);
    }
    suite
}

pub fn write_junit(report: &Report, out: &mut dyn Write) -> io::Result<()> {
    let mut junit = Junit::new(SUITE);
    junit.add_test_suite(suite(report));
    let mut xml = Vec::new();
    junit.serialize(&mut xml).map_err(io::Error::other)?;
    out.write_all(&drop_root_skipped(xml))
}

/// quick-junit always writes a `skipped` count on `<testsuites>`, which the
/// schema does not define (only `<testsuite>` has one) and which Jenkins'
/// xUnit plugin rejects. The root's count (judged metrics a dry run
/// skipped, or `0`) is dropped; the suite keeps its own.
fn drop_root_skipped(xml: Vec<u8>) -> Vec<u8> {
    const ATTR: &[u8] = b" skipped=\"";
    let Some(root) = find(&xml, b"<testsuites") else {
        return xml;
    };
    let Some(end) = find(&xml[root..], b">").map(|e| root + e) else {
        return xml;
    };
    let Some(at) = find(&xml[root..end], ATTR).map(|a| root + a) else {
        return xml;
    };
    match find(&xml[at + ATTR.len()..end], b"\"") {
        Some(close) => [&xml[..at], &xml[at + ATTR.len() + close + 1..]].concat(),
        None => xml,
    }
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn root_skipped_is_dropped_and_the_suites_kept() {
        let mut junit = Junit::new(SUITE);
        junit.add_test_suite(TestSuite::new(SUITE));
        let mut xml = Vec::new();
        junit.serialize(&mut xml).unwrap();
        let before = String::from_utf8(xml.clone()).unwrap();
        assert_eq!(before.matches(r#"skipped="0""#).count(), 2, "{before}");
        let after = String::from_utf8(drop_root_skipped(xml)).unwrap();
        let root = after
            .lines()
            .find(|l| l.starts_with("<testsuites"))
            .unwrap();
        assert!(!root.contains("skipped"), "{after}");
        let suite = after.lines().find(|l| l.contains("<testsuite ")).unwrap();
        assert!(suite.contains(r#"skipped="0""#), "{after}");
    }
}
