//! A GitHub-flavoured Markdown summary of a run, a comparison or a trend,
//! sized for a pull request comment or a job summary: at most
//! [`MAX_CHARS`] characters, table rows left out past that with a count.
//!
//! A run's summary is built from its JSONL rows, so a run replayed now and a
//! run read back from the store give the same text.

use std::fmt::Write as _;
use std::io::{self, Write};

use serde_json::Value;

use super::baseline::{Comparison, Status};

/// GitHub's limit on a comment body (and a job summary is read best under it).
pub const MAX_CHARS: usize = 65_536;

/// Room kept for the line that says what was left out.
const RESERVE: usize = 200;

/// Builds the text within [`MAX_CHARS`], counting the table rows that did
/// not fit.
struct Doc {
    text: String,
    chars: usize,
    left_out: usize,
}

impl Doc {
    fn new() -> Doc {
        Doc {
            text: String::new(),
            chars: 0,
            left_out: 0,
        }
    }

    /// Adds a line that must be there (titles, headers): never cut.
    fn line(&mut self, s: &str) {
        self.text.push_str(s);
        self.text.push('\n');
        self.chars += s.chars().count() + 1;
    }

    /// Adds a table row if it fits, else counts it.
    fn row(&mut self, s: &str) {
        let n = s.chars().count() + 1;
        if self.left_out > 0 || self.chars + n > MAX_CHARS - RESERVE {
            self.left_out += 1;
        } else {
            self.line(s);
        }
    }

    fn finish(mut self, out: &mut dyn Write) -> io::Result<()> {
        if self.left_out > 0 {
            let note = format!(
                "\n_{} more row(s) left out to stay within {MAX_CHARS} characters; the JSONL \
                 report has them all._",
                self.left_out
            );
            self.line(&note);
        }
        out.write_all(self.text.as_bytes())
    }
}

/// Text from a trace or fixture made inert in a table cell: no line breaks,
/// no HTML, no Markdown emphasis or links, pipes escaped; cut to `max`.
fn cell(s: &str, max: usize) -> String {
    let s = super::ellipsize(s, max);
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '|' | '\\' | '`' | '*' | '_' | '[' | ']' | '#' | '~' => {
                out.push('\\');
                out.push(c);
            }
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '&' => out.push_str("&amp;"),
            c => out.push(c),
        }
    }
    out
}

fn score(v: Option<f64>) -> String {
    v.map_or_else(|| "-".into(), |s| format!("{s:.3}"))
}

fn percent(n: usize, of: usize) -> String {
    if of == 0 {
        "-".into()
    } else {
        format!("{:.1}%", n as f64 * 100.0 / of as f64)
    }
}

/// A run's summary from its JSONL report `rows`, with its comparison to a
/// baseline when there is one. `title` names the run.
pub fn write_run(
    title: &str,
    rows: &[Value],
    comparison: Option<&Comparison>,
    out: &mut dyn Write,
) -> io::Result<()> {
    let mut doc = Doc::new();
    let cases: Vec<&Value> = rows
        .iter()
        .filter(|r| matches!(r["type"].as_str(), Some("evaluation" | "unmatched_case")))
        .collect();
    let passed = cases.iter().filter(|r| r["pass"] == true).count();
    let failing: Vec<&&Value> = cases.iter().filter(|r| r["pass"] == false).collect();
    let mark = if failing.is_empty() { "✅" } else { "❌" };
    doc.line(&format!("## {mark} toolscore: {}", cell(title, 200)));
    doc.line("");
    doc.line(&format!(
        "**{passed} of {} case(s) passed ({})**, {} failed.",
        cases.len(),
        percent(passed, cases.len()),
        failing.len()
    ));
    if let Some(s) = rows.iter().find(|r| r["type"] == "summary") {
        let rejected = s["rejected"].as_u64().unwrap_or(0);
        if rejected > 0 {
            doc.line(&format!(
                "\n⚠️ {rejected} input problem(s) rejected: the run could not evaluate everything."
            ));
        }
    }
    if let Some(c) = comparison {
        write_regressions(&mut doc, c);
    }
    if !failing.is_empty() {
        doc.line("");
        doc.line(&format!("### Failing cases ({})", failing.len()));
        doc.line("");
        doc.line("| Case | Trace | Score | Why |");
        doc.line("|---|---|---:|---|");
        for r in failing {
            let trace = r
                .pointer("/session/id")
                .and_then(Value::as_str)
                .map(|s| format!("session {s}"))
                .or_else(|| r["trace_id"].as_str().map(String::from))
                .unwrap_or_else(|| "(no trace)".into());
            doc.row(&format!(
                "| {} | {} | {} | {} |",
                cell(r["case"].as_str().unwrap_or("-"), 80),
                cell(&trace, 40),
                score(r["score"].as_f64()),
                cell(r["explanation"].as_str().unwrap_or(""), 300),
            ));
        }
    }
    write_flaky(&mut doc, rows);
    doc.finish(out)
}

/// The cases of several trials that both passed and failed (JSONL `case`
/// rows with the verdict `flaky`).
fn write_flaky(doc: &mut Doc, rows: &[Value]) {
    let flaky: Vec<&Value> = rows
        .iter()
        .filter(|r| r["type"] == "case" && r["verdict"] == "flaky")
        .collect();
    if flaky.is_empty() {
        return;
    }
    doc.line("");
    doc.line(&format!("### Flaky cases ({})", flaky.len()));
    doc.line("");
    doc.line("| Case | Passed trials | Pass rate | Case passes |");
    doc.line("|---|---:|---:|---|");
    for r in flaky {
        let n = |k: &str| r[k].as_u64().unwrap_or(0) as usize;
        doc.row(&format!(
            "| {} | {} of {} | {} | {} ({}) |",
            cell(r["case"].as_str().unwrap_or("-"), 80),
            n("passes"),
            n("trials"),
            percent(n("passes"), n("trials")),
            if r["pass"] == true { "yes" } else { "no" },
            cell(r["trials_pass"].as_str().unwrap_or("all"), 20),
        ));
    }
}

fn write_regressions(doc: &mut Doc, c: &Comparison) {
    doc.line("");
    doc.line(&format!(
        "Against the baseline: {} improved, {} regressed ({} beyond tolerance {}), {} \
         unchanged, {} new, {} gone.",
        c.count(Status::Improved),
        c.count(Status::Regressed),
        c.regressions(),
        c.tolerance,
        c.count(Status::Unchanged),
        c.count(Status::New),
        c.count(Status::Gone)
    ));
    let moved: Vec<_> = c
        .rows
        .iter()
        .filter(|r| matches!(r.status, Status::Regressed | Status::Gone))
        .collect();
    if moved.is_empty() {
        return;
    }
    doc.line("");
    doc.line(&format!(
        "### Regressions against the baseline ({})",
        moved.len()
    ));
    doc.line("");
    doc.line("| Case | Target | Status | Before | Now | Δ |");
    doc.line("|---|---|---|---:|---:|---:|");
    for r in moved {
        doc.row(&format!(
            "| {} | {} | {} | {} | {} | {} |",
            cell(&r.case, 80),
            cell(&r.target, 40),
            r.status.as_str(),
            score(r.old.as_ref().and_then(|e| e.score)),
            score(r.new.as_ref().and_then(|e| e.score)),
            r.delta.map_or_else(|| "-".into(), |d| format!("{d:+.3}")),
        ));
    }
}

/// A comparison alone (`diff -f markdown`).
pub fn write_comparison(title: &str, c: &Comparison, out: &mut dyn Write) -> io::Result<()> {
    let mut doc = Doc::new();
    let mark = if c.regressions() > 0 { "❌" } else { "✅" };
    doc.line(&format!("## {mark} toolscore diff: {}", cell(title, 200)));
    write_regressions(&mut doc, c);
    doc.finish(out)
}

/// One case of a trend, as the summary shows it.
pub struct TrendLine<'a> {
    pub case: &'a str,
    pub status: &'a str,
    pub history: String,
    pub pass_rate: Option<f64>,
}

/// A trend: the cases that are not stable passes (flaky first after
/// regressions, as given), with their history.
pub fn write_trend(title: &str, lines: &[TrendLine], out: &mut dyn Write) -> io::Result<()> {
    let mut doc = Doc::new();
    doc.line(&format!("## toolscore trend: {}", cell(title, 200)));
    let mut counts = String::new();
    for status in [
        "regressed",
        "flaky",
        "stable-fail",
        "fixed",
        "new",
        "stable-pass",
    ] {
        let n = lines.iter().filter(|l| l.status == status).count();
        let _ = write!(
            counts,
            "{}{n} {status}",
            if counts.is_empty() { "" } else { ", " }
        );
    }
    doc.line("");
    doc.line(&format!("{} case(s): {counts}.", lines.len()));
    let shown: Vec<&TrendLine> = lines.iter().filter(|l| l.status != "stable-pass").collect();
    if !shown.is_empty() {
        doc.line("");
        doc.line("| Case | Status | History (oldest first) | Pass rate |");
        doc.line("|---|---|---|---:|");
        for l in shown {
            doc.row(&format!(
                "| {} | {} | {} | {} |",
                cell(l.case, 80),
                l.status,
                l.history,
                l.pass_rate
                    .map_or_else(|| "-".into(), |p| format!("{:.1}%", p * 100.0)),
            ));
        }
    }
    doc.finish(out)
}

/// The rows of a JSONL report (lines that are not JSON are skipped: the
/// caller wrote them, or read them back from the store).
pub fn rows_of(jsonl: &[u8]) -> Vec<Value> {
    String::from_utf8_lossy(jsonl)
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn cells_cannot_break_the_table_or_inject_html() {
        assert_eq!(cell("a|b\nc<script>", 100), "a\\|b\\\\nc&lt;script&gt;");
        assert_eq!(
            cell("[x](http://e) **b**", 100),
            "\\[x\\](http://e) \\*\\*b\\*\\*"
        );
    }

    #[test]
    fn a_long_summary_is_cut_with_a_count() {
        let rows: Vec<Value> = (0..5000)
            .map(|i| {
                json!({"type": "evaluation", "case": format!("case-{i}"), "trace_id": "ab",
                       "pass": false, "score": 0.5, "explanation": "x".repeat(100)})
            })
            .collect();
        let mut out = Vec::new();
        write_run("big", &rows, None, &mut out).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert!(text.chars().count() <= MAX_CHARS, "{}", text.len());
        let shown = text.lines().filter(|l| l.starts_with("| case-")).count();
        let note = format!("_{} more row(s) left out", 5000 - shown);
        assert!(text.contains(&note), "{}", &text[text.len() - 300..]);
        assert!(text.contains("**0 of 5000 case(s) passed (0.0%)**"));
    }
}
