//! Baselines: a run compared case by case with an earlier run's JSONL
//! report (`replay --baseline`, `diff`), so CI can gate on regressions
//! rather than on every case passing.
//!
//! Each case is paired with its entry in the other run: by case id when the
//! id appears once on each side (a case that now matches a trace it missed
//! before is the same case), otherwise by case id and target (trace id or
//! session). The headline score is compared; a missing score (an error, a
//! case that matched no trace) counts as 0.

use std::collections::HashMap;
use std::io::{self, Write};

use serde::Serialize;
use serde_json::{json, Value};

use super::junit::esc;
use super::Report;
use crate::evaluate::{Evaluation, UnmatchedCase};

/// Scores closer than this are equal (float noise in a JSON round trip).
const EPSILON: f64 = 1e-9;
const NO_TRACE: &str = "(no trace)";

/// One case's result in a run.
#[derive(Debug, Clone, PartialEq)]
pub struct Entry {
    pub case: String,
    /// The trace id, `session <id>`, or `(no trace)`.
    pub target: String,
    pub score: Option<f64>,
    pub pass: bool,
}

#[derive(Debug, thiserror::Error)]
pub enum BaselineError {
    #[error("cannot read report {path}")]
    Read {
        path: String,
        source: std::io::Error,
    },
    #[error("{file}:{line}: {reason}")]
    Bad {
        file: String,
        line: usize,
        reason: String,
    },
    #[error("{0}: not a toolscore JSONL report (no summary row)")]
    NotReport(String),
}

/// How a case moved between two runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    Improved,
    Regressed,
    Unchanged,
    New,
    Gone,
}

impl Status {
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Improved => "improved",
            Status::Regressed => "regressed",
            Status::Unchanged => "unchanged",
            Status::New => "new",
            Status::Gone => "gone",
        }
    }
}

/// One case compared.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    pub case: String,
    pub target: String,
    pub status: Status,
    pub old: Option<Entry>,
    pub new: Option<Entry>,
    /// New score minus old (missing scores as 0); `None` for new and gone.
    pub delta: Option<f64>,
}

/// Two runs compared.
#[derive(Debug, Clone, PartialEq)]
pub struct Comparison {
    pub rows: Vec<Row>,
    /// A regression must exceed this drop in score to count.
    pub tolerance: f64,
}

/// The entries of a report in memory.
pub fn entries_of(report: &Report) -> Vec<Entry> {
    let mut out: Vec<Entry> = report.evaluations.iter().map(entry_of).collect();
    out.extend(report.unmatched_cases.iter().map(unmatched_entry));
    out
}

/// The entry of one evaluation.
pub fn entry_of(e: &Evaluation) -> Entry {
    Entry {
        case: e.case_id.clone(),
        target: match &e.session {
            Some(s) => format!("session {}", s.id),
            None => e.trace_id.to_string(),
        },
        score: e.headline().and_then(|h| h.outcome.score),
        pass: e.passed(),
    }
}

/// The entry of a case that matched no trace.
pub fn unmatched_entry(c: &UnmatchedCase) -> Entry {
    Entry {
        case: c.id().to_string(),
        target: NO_TRACE.into(),
        score: None,
        pass: false,
    }
}

/// Reads the evaluation and unmatched-case rows of a JSONL report file.
pub fn load(path: &std::path::Path) -> Result<Vec<Entry>, BaselineError> {
    let text = std::fs::read_to_string(path).map_err(|source| BaselineError::Read {
        path: path.display().to_string(),
        source,
    })?;
    parse(&text, &path.display().to_string())
}

/// Parses a JSONL report (`source` names it in errors). Rows of other
/// types are skipped; a report must have its summary row, so a truncated
/// or wrong file is not read as "no cases". A revision (serve's row with
/// `revision` 2 or more) replaces its case's earlier entry on the same
/// target, as the run store counts it.
pub fn parse(text: &str, source: &str) -> Result<Vec<Entry>, BaselineError> {
    let mut out: Vec<Entry> = Vec::new();
    // Where each (case, target) is in `out`, from the first revision on (a
    // serve row with `revision` 2 or more, which replaces its pair's
    // earlier row, in its place): a report without one costs nothing.
    let mut at: Option<HashMap<(String, String), usize>> = None;
    let mut summary = false;
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let bad = |reason: String| BaselineError::Bad {
            file: source.to_string(),
            line: i + 1,
            reason,
        };
        let row: Value = serde_json::from_str(line).map_err(|e| bad(format!("not JSON: {e}")))?;
        let text_of = |key: &str| row.get(key).and_then(Value::as_str).map(String::from);
        match row.get("type").and_then(Value::as_str) {
            Some("evaluation") => {
                let case = text_of("case").ok_or_else(|| bad("no `case`".into()))?;
                let target = match row.pointer("/session/id").and_then(Value::as_str) {
                    Some(s) => format!("session {s}"),
                    None => text_of("trace_id").ok_or_else(|| bad("no `trace_id`".into()))?,
                };
                let score = match row.get("score") {
                    None | Some(Value::Null) => None,
                    Some(v) => Some(
                        v.as_f64()
                            .ok_or_else(|| bad(format!("`score` is not a number: {v}")))?,
                    ),
                };
                let pass = row
                    .get("pass")
                    .and_then(Value::as_bool)
                    .ok_or_else(|| bad("no boolean `pass`".into()))?;
                let entry = Entry {
                    case,
                    target,
                    score,
                    pass,
                };
                let revision = row.get("revision").and_then(Value::as_u64);
                if at.is_none() && revision.is_some_and(|r| r > 1) {
                    let index = out.iter().enumerate();
                    at = Some(
                        index
                            .map(|(i, e)| ((e.case.clone(), e.target.clone()), i))
                            .collect(),
                    );
                }
                let Some(at) = at.as_mut() else {
                    out.push(entry);
                    continue;
                };
                let key = (entry.case.clone(), entry.target.clone());
                match at.get(&key) {
                    Some(&i) if revision.is_some_and(|r| r > 1) => out[i] = entry,
                    _ => {
                        at.insert(key, out.len());
                        out.push(entry);
                    }
                }
            }
            Some("unmatched_case") => out.push(Entry {
                case: text_of("case").ok_or_else(|| bad("no `case`".into()))?,
                target: NO_TRACE.into(),
                score: None,
                pass: false,
            }),
            Some("summary") => summary = true,
            Some(_) => {}
            None => return Err(bad("a row without `type`".into())),
        }
    }
    if !summary {
        return Err(BaselineError::NotReport(source.to_string()));
    }
    Ok(out)
}

fn count(entries: &[Entry]) -> HashMap<&str, usize> {
    let mut m: HashMap<&str, usize> = HashMap::new();
    for e in entries {
        *m.entry(e.case.as_str()).or_default() += 1;
    }
    m
}

/// Compares `new` with `old`, in the new run's order, then the gone cases.
pub fn compare(old: &[Entry], new: &[Entry], tolerance: f64) -> Comparison {
    let (old_n, new_n) = (count(old), count(new));
    let unique = |case: &str| old_n.get(case) == Some(&1) && new_n.get(case) == Some(&1);
    let key = |e: &Entry| {
        if unique(&e.case) {
            (e.case.clone(), String::new())
        } else {
            (e.case.clone(), e.target.clone())
        }
    };
    let mut old_by: HashMap<(String, String), &Entry> = old.iter().map(|e| (key(e), e)).collect();
    let mut rows = Vec::new();
    for n in new {
        let row = match old_by.remove(&key(n)) {
            Some(o) => {
                let delta = n.score.unwrap_or(0.0) - o.score.unwrap_or(0.0);
                let status = if delta > EPSILON {
                    Status::Improved
                } else if delta < -EPSILON {
                    Status::Regressed
                } else {
                    Status::Unchanged
                };
                Row {
                    case: n.case.clone(),
                    target: n.target.clone(),
                    status,
                    old: Some(o.clone()),
                    new: Some(n.clone()),
                    delta: Some(delta),
                }
            }
            None => Row {
                case: n.case.clone(),
                target: n.target.clone(),
                status: Status::New,
                old: None,
                new: Some(n.clone()),
                delta: None,
            },
        };
        rows.push(row);
    }
    // Gone: old entries left, in the old run's order.
    for o in old {
        if old_by.remove(&key(o)).is_some() {
            rows.push(Row {
                case: o.case.clone(),
                target: o.target.clone(),
                status: Status::Gone,
                old: Some(o.clone()),
                new: None,
                delta: None,
            });
        }
    }
    Comparison { rows, tolerance }
}

impl Row {
    /// Regressed by more than the tolerance.
    pub fn fails(&self, tolerance: f64) -> bool {
        self.status == Status::Regressed && self.delta.is_some_and(|d| -d > tolerance + EPSILON)
    }
}

impl Comparison {
    pub fn count(&self, status: Status) -> usize {
        self.rows.iter().filter(|r| r.status == status).count()
    }

    /// Rows that regressed by more than the tolerance.
    pub fn regressions(&self) -> usize {
        self.rows.iter().filter(|r| r.fails(self.tolerance)).count()
    }

    pub fn summary_line(&self) -> String {
        format!(
            "baseline: {} improved, {} regressed ({} beyond tolerance {}), {} unchanged, {} new, {} gone",
            self.count(Status::Improved),
            self.count(Status::Regressed),
            self.regressions(),
            self.tolerance,
            self.count(Status::Unchanged),
            self.count(Status::New),
            self.count(Status::Gone),
        )
    }
}

fn score_text(s: Option<f64>) -> String {
    s.map_or_else(|| "-".into(), |s| format!("{s:.3}"))
}

fn side(e: &Option<Entry>) -> String {
    match e {
        Some(e) => format!(
            "{} ({})",
            score_text(e.score),
            if e.pass { "pass" } else { "fail" }
        ),
        None => "-".into(),
    }
}

/// The comparison as a table.
pub fn write_table(c: &Comparison, out: &mut dyn Write) -> io::Result<()> {
    let mut rows = vec![["CASE", "TARGET", "STATUS", "OLD", "NEW", "DELTA"]
        .map(String::from)
        .to_vec()];
    for r in &c.rows {
        rows.push(vec![
            super::ellipsize(&r.case, 32),
            super::ellipsize(&r.target, 48),
            r.status.as_str().to_string(),
            side(&r.old),
            side(&r.new),
            r.delta.map_or_else(|| "-".into(), |d| format!("{d:+.3}")),
        ]);
    }
    super::table::print_rows(&rows, out)?;
    writeln!(out, "\n{}", c.summary_line())
}

/// One `"type": "comparison"` row per case, then a `comparison_summary`.
pub fn write_jsonl(c: &Comparison, out: &mut dyn Write) -> io::Result<()> {
    for r in &c.rows {
        let row = json!({
            "type": "comparison",
            "case": r.case,
            "target": r.target,
            "status": r.status,
            "old_score": r.old.as_ref().and_then(|e| e.score),
            "new_score": r.new.as_ref().and_then(|e| e.score),
            "old_pass": r.old.as_ref().map(|e| e.pass),
            "new_pass": r.new.as_ref().map(|e| e.pass),
            "delta": r.delta,
            "beyond_tolerance": r.fails(c.tolerance),
        });
        writeln!(out, "{row}")?;
    }
    let row = json!({
        "type": "comparison_summary",
        "improved": c.count(Status::Improved),
        "regressed": c.count(Status::Regressed),
        "unchanged": c.count(Status::Unchanged),
        "new": c.count(Status::New),
        "gone": c.count(Status::Gone),
        "tolerance": c.tolerance,
        "regressions_beyond_tolerance": c.regressions(),
    });
    writeln!(out, "{row}")
}

/// JUnit XML: one test case per compared case; a regression beyond the
/// tolerance is a failure.
pub fn write_junit(c: &Comparison, out: &mut dyn Write) -> io::Result<()> {
    writeln!(out, r#"<?xml version="1.0" encoding="UTF-8"?>"#)?;
    writeln!(
        out,
        r#"<testsuites name="toolscore diff" tests="{}" failures="{}">"#,
        c.rows.len(),
        c.regressions()
    )?;
    writeln!(
        out,
        r#"  <testsuite name="baseline" tests="{}" failures="{}">"#,
        c.rows.len(),
        c.regressions()
    )?;
    for r in &c.rows {
        let detail = format!(
            "{}: {} -> {}{}",
            r.status.as_str(),
            side(&r.old),
            side(&r.new),
            r.delta.map_or_else(String::new, |d| format!(" ({d:+.3})"))
        );
        write!(
            out,
            r#"    <testcase name="{}" classname="{}""#,
            esc(&r.case),
            esc(&r.target)
        )?;
        if r.fails(c.tolerance) {
            writeln!(out, ">")?;
            writeln!(
                out,
                r#"      <failure message="{}">{}</failure>"#,
                esc(&detail),
                esc(&detail)
            )?;
            writeln!(out, "    </testcase>")?;
        } else {
            writeln!(out, ">")?;
            writeln!(out, "      <system-out>{}</system-out>", esc(&detail))?;
            writeln!(out, "    </testcase>")?;
        }
    }
    writeln!(out, "  </testsuite>")?;
    writeln!(out, "</testsuites>")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn e(case: &str, target: &str, score: Option<f64>) -> Entry {
        Entry {
            case: case.into(),
            target: target.into(),
            score,
            pass: score.is_some_and(|s| s >= 0.5),
        }
    }

    #[test]
    fn statuses_and_tolerance() {
        let old = [
            e("a", "t1", Some(1.0)),
            e("b", "t2", Some(0.5)),
            e("c", "t3", Some(0.8)),
            e("gone", "t4", Some(1.0)),
            e("m", "x", Some(1.0)),
            e("m", "y", Some(1.0)),
            e("late", NO_TRACE, None),
        ];
        let new = [
            e("a", "t1", Some(0.9)),
            e("b", "t2", Some(0.75)),
            e("c", "t3", Some(0.8)),
            e("fresh", "t5", Some(0.1)),
            e("m", "y", Some(0.5)),
            e("m", "z", Some(1.0)),
            e("late", "t6", Some(1.0)),
        ];
        let c = compare(&old, &new, 0.1);
        let got: Vec<(&str, &str, Status)> = c
            .rows
            .iter()
            .map(|r| (r.case.as_str(), r.target.as_str(), r.status))
            .collect();
        assert_eq!(
            got,
            vec![
                ("a", "t1", Status::Regressed),
                ("b", "t2", Status::Improved),
                ("c", "t3", Status::Unchanged),
                ("fresh", "t5", Status::New),
                ("m", "y", Status::Regressed),
                ("m", "z", Status::New),
                ("late", "t6", Status::Improved),
                ("gone", "t4", Status::Gone),
                ("m", "x", Status::Gone),
            ]
        );
        // a dropped 0.1 (not beyond 0.1), m/y dropped 0.5.
        assert_eq!(c.regressions(), 1);
        assert_eq!(compare(&old, &new, 0.0).regressions(), 2);
    }

    #[test]
    fn parse_needs_a_summary_and_names_bad_lines() {
        let ok = "{\"type\":\"evaluation\",\"case\":\"a\",\"trace_id\":\"t\",\"score\":0.5,\"pass\":true}\n{\"type\":\"unmatched_case\",\"case\":\"b\",\"pass\":false}\n{\"type\":\"summary\"}\n";
        let entries = parse(ok, "r.jsonl").unwrap();
        assert_eq!(entries.len(), 2);
        assert_eq!(entries[1].target, NO_TRACE);
        assert!(matches!(
            parse("{\"type\":\"evaluation\"}\n", "r.jsonl"),
            Err(BaselineError::Bad { line: 1, .. })
        ));
        assert!(matches!(
            parse("", "r.jsonl"),
            Err(BaselineError::NotReport(_))
        ));
        let err = parse("{}\nnope\n", "r.jsonl").unwrap_err().to_string();
        assert!(err.starts_with("r.jsonl:1:"), "{err}");
    }
}
