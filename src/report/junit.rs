//! JUnit XML for CI systems: one testcase per (case, trace).

use std::io::{self, Write};

use super::Report;

pub(crate) fn esc(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for ch in s.chars() {
        match ch {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            // XML 1.0 forbids most control characters even escaped.
            c if (c as u32) < 0x20 && !matches!(c, '\t' | '\n' | '\r') => out.push('?'),
            c => out.push(c),
        }
    }
    out
}

pub fn write_junit(report: &Report, out: &mut dyn Write) -> io::Result<()> {
    let tests = report.evaluations.len() + report.unmatched_cases.len() + report.rejected.len();
    let failures = report.failed();
    let errors = report.rejected.len();
    writeln!(out, r#"<?xml version="1.0" encoding="UTF-8"?>"#)?;
    writeln!(
        out,
        r#"<testsuites name="traceval" tests="{tests}" failures="{failures}" errors="{errors}">"#
    )?;
    writeln!(
        out,
        r#"  <testsuite name="traceval" tests="{tests}" failures="{failures}" errors="{errors}">"#
    )?;
    for e in &report.evaluations {
        writeln!(
            out,
            r#"    <testcase classname="traceval" name="{} ({})">"#,
            esc(&e.case_id),
            esc(&e.target_label())
        )?;
        writeln!(out, "      <properties>")?;
        for r in &e.results {
            let score = r
                .outcome
                .score
                .map_or_else(|| "error".to_string(), |s| s.to_string());
            writeln!(
                out,
                r#"        <property name="score.{}" value="{}"/>"#,
                esc(&r.metric),
                score
            )?;
        }
        writeln!(out, "      </properties>")?;
        if !e.passed() {
            let failing: Vec<String> = e
                .results
                .iter()
                .filter(|r| !r.passed())
                .map(|r| {
                    let score = r
                        .outcome
                        .score
                        .map_or_else(|| "error".to_string(), |s| format!("{s:.3}"));
                    let thr = r.threshold.map(|t| format!(" < {t}")).unwrap_or_default();
                    format!("{}: {}{}: {}", r.metric, score, thr, r.outcome.reason)
                })
                .collect();
            let message = failing.first().cloned().unwrap_or_default();
            writeln!(
                out,
                r#"      <failure message="{}">{}</failure>"#,
                esc(&super::ellipsize(&message, 200)),
                esc(&failing.join("\n"))
            )?;
        }
        writeln!(out, "    </testcase>")?;
    }
    for c in &report.unmatched_cases {
        writeln!(
            out,
            r#"    <testcase classname="traceval" name="{}">"#,
            esc(c)
        )?;
        writeln!(
            out,
            r#"      <failure message="no trace matched this case"/>"#
        )?;
        writeln!(out, "    </testcase>")?;
    }
    for r in &report.rejected {
        writeln!(
            out,
            r#"    <testcase classname="traceval.input" name="{}">"#,
            esc(&r.source)
        )?;
        writeln!(out, r#"      <error message="{}"/>"#, esc(&r.to_string()))?;
        writeln!(out, "    </testcase>")?;
    }
    writeln!(out, "  </testsuite>")?;
    writeln!(out, "</testsuites>")
}
