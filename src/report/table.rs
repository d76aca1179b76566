//! The terminal table.

use std::io::{self, Write};

use super::{ellipsize, Report};
use crate::evaluate::{Evaluation, UnmatchedCase};

/// Widest case id shown whole in the table.
const CASE_WIDTH: usize = 32;

/// A case id for the table. A long one keeps its end, where ids that come
/// from files tell cases apart (`…/order_query.test.json#3`).
fn case_cell(id: &str) -> String {
    let id = super::printable(id);
    let n = id.chars().count();
    if n <= CASE_WIDTH {
        return id.into_owned();
    }
    let tail: String = id.chars().skip(n - (CASE_WIDTH - 1)).collect();
    format!("…{tail}")
}

/// Writes one row per evaluation, then unmatched traces/cases, rejections
/// and the summary line.
pub fn write_table(report: &Report, out: &mut dyn Write) -> io::Result<()> {
    if report.has_cases {
        let mut header = vec![
            "CASE".to_string(),
            "TRACE".to_string(),
            "JOINED BY".to_string(),
        ];
        header.extend(report.metrics.iter().cloned());
        header.extend(["PASS".to_string(), "DETAILS".to_string()]);
        let evaluations = report.evaluations.len();
        // A big fixture's rows are made one at a time (twice: to size the
        // columns, then to print), never held together.
        let row = |i: usize| match i.checked_sub(1) {
            None => header.clone(),
            Some(i) if i < evaluations => evaluation_row(report, &report.evaluations[i]),
            Some(i) => report
                .unmatched_cases
                .get(i - evaluations)
                .map(|c| unmatched_case_row(report, c))
                .unwrap_or_default(),
        };
        print_rows_with(1 + evaluations + report.unmatched_cases.len(), row, out)?;
        write_trials(report, out)?;
    }
    if !report.unmatched_traces.is_empty() {
        if report.has_cases {
            writeln!(out, "\nTraces that matched no case:")?;
        }
        let row = |i: usize| match i
            .checked_sub(1)
            .and_then(|i| report.unmatched_traces.get(i))
        {
            None => ["TRACE", "SPANS", "TOOLS CALLED"]
                .map(String::from)
                .to_vec(),
            Some(t) => {
                let tools: Vec<&str> = t.tools_called.iter().map(|c| c.name.as_str()).collect();
                vec![
                    t.trace_id.to_string(),
                    t.spans.to_string(),
                    ellipsize(&tools.join(", "), 100),
                ]
            }
        };
        print_rows_with(1 + report.unmatched_traces.len(), row, out)?;
    }
    let mut warnings = report.warnings().peekable();
    if warnings.peek().is_some() {
        writeln!(out, "\nWarnings:")?;
        for (trace, w) in warnings {
            writeln!(out, "  trace {trace}: {}", super::printable(w))?;
        }
    }
    if !report.rejected.is_empty() {
        writeln!(out, "\nRejected input:")?;
        for r in &report.rejected {
            writeln!(out, "  {}", super::printable(&r.to_string()))?;
        }
    }
    if !report.tools.is_empty() {
        writeln!(out, "\nTools:")?;
        let mut rows = vec![["TOOL", "CALLS", "ERRORS", "P50 MS", "P95 MS"]
            .map(String::from)
            .to_vec()];
        for t in &report.tools {
            rows.push(vec![
                ellipsize(&t.name, 40),
                t.calls.to_string(),
                t.errors.to_string(),
                format!("{:.1}", t.p50_ms),
                format!("{:.1}", t.p95_ms),
            ]);
        }
        print_rows(&rows, out)?;
    }
    if let Some(t) = &report.tokens {
        writeln!(
            out,
            "Tokens: {} in, {} out over {} trace(s) reporting them ({:.0} per trace)",
            t.input_tokens, t.output_tokens, t.traces, t.per_trace
        )?;
    }
    writeln!(out, "\n{}", report.summary_line())
}

fn evaluation_row(report: &Report, e: &Evaluation) -> Vec<String> {
    let mut row = vec![
        case_cell(&e.case_id),
        ellipsize(&e.target_label(), 48),
        e.joined_by.to_string(),
    ];
    for m in &report.metrics {
        let cell = e.results.iter().find(|r| &r.metric == m).map_or_else(
            || "-".to_string(),
            |r| match (r.outcome.score, &r.outcome.error) {
                _ if r.outcome.unjudged.is_some() => r.verdict().label().to_string(),
                (_, Some(_)) => "error".to_string(),
                (Some(s), None) => format!("{s:.3}"),
                (None, None) => "-".to_string(),
            },
        );
        row.push(cell);
    }
    row.push(e.verdict().label().to_string());
    // The headline's reason, or, when another metric decided the verdict,
    // that one's, named.
    let detail = match (e.headline(), e.deciding()) {
        (Some(h), Some(d)) if h.metric != d.metric => format!("{}: {}", d.metric, d.outcome.reason),
        (_, d) => d.map(|d| d.outcome.reason.clone()).unwrap_or_default(),
    };
    row.push(ellipsize(&detail, 100));
    row
}

fn unmatched_case_row(report: &Report, c: &UnmatchedCase) -> Vec<String> {
    let mut row = vec![
        case_cell(c.id()),
        "(no trace)".to_string(),
        c.joined_by().to_string(),
    ];
    row.extend(report.metrics.iter().map(|_| "-".to_string()));
    row.push("FAIL".to_string());
    row.push(ellipsize(&c.explanation(), 100));
    row
}

pub(crate) fn print_rows(rows: &[Vec<String>], out: &mut dyn Write) -> io::Result<()> {
    print_rows_with(rows.len(), |i| rows[i].clone(), out)
}

/// Prints rows `0..n`, each made by `row(i)`, with columns as wide as their
/// widest cell. Rows are made twice (to size the columns, then to print)
/// and held one at a time. Every cell is escaped (a no-op for ordinary
/// text), so a name from a trace can never forge a table line.
/// Cases that joined several traces: their trials, one row per case.
fn write_trials(report: &Report, out: &mut dyn Write) -> io::Result<()> {
    let trials = report.case_trials();
    if trials.is_empty() {
        return Ok(());
    }
    writeln!(
        out,
        "\nCases of several trials (a case passes with --trials-pass {}):",
        report.trials_pass
    )?;
    let yes = |b: bool| if b { "yes" } else { "no" }.to_string();
    let row = |i: usize| match i.checked_sub(1).and_then(|i| trials.get(i)) {
        None => [
            "CASE",
            "TRIALS",
            "PASSES",
            "PASS RATE",
            "PASS@K",
            "PASS^K",
            "VERDICT",
            "PASS",
        ]
        .map(String::from)
        .to_vec(),
        Some(c) => vec![
            ellipsize(&c.case_id, 60),
            c.trials.to_string(),
            c.passes.to_string(),
            format!("{:.2}", c.pass_rate()),
            yes(c.pass_at_k),
            yes(c.pass_all_k),
            c.verdict.code().to_string(),
            if c.pass { "pass" } else { "FAIL" }.to_string(),
        ],
    };
    print_rows_with(1 + trials.len(), row, out)
}

fn print_rows_with(
    n: usize,
    row: impl Fn(usize) -> Vec<String>,
    out: &mut dyn Write,
) -> io::Result<()> {
    let mut widths: Vec<usize> = Vec::new();
    for i in 0..n {
        for (c, cell) in row(i).iter().enumerate() {
            let w = super::printable(cell).chars().count();
            if c == widths.len() {
                widths.push(0);
            }
            widths[c] = widths[c].max(w);
        }
    }
    let mut line = String::new();
    for i in 0..n {
        let r = row(i);
        line.clear();
        for (c, cell) in r.iter().enumerate() {
            let cell = super::printable(cell);
            line.push_str(&cell);
            if c + 1 < r.len() {
                line.extend(std::iter::repeat_n(
                    ' ',
                    widths[c] - cell.chars().count() + 2,
                ));
            }
        }
        writeln!(out, "{}", line.trim_end())?;
    }
    Ok(())
}

/// The metric catalog (`toolscore metrics`): name, library and version, what it scores.
pub fn write_metrics(
    rows: &[crate::score::registry::MetricInfo],
    out: &mut dyn Write,
) -> io::Result<()> {
    let w = rows.iter().map(|r| r.name.len()).max().unwrap_or(0);
    let lw = rows
        .iter()
        .map(|r| r.library.len() + r.version.len() + 1)
        .max()
        .unwrap_or(0);
    for r in rows {
        let lib = format!("{} {}", r.library, r.version);
        writeln!(out, "{:w$}  {:lw$}  {}", r.name, lib, r.summary)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_case_ids_keep_their_end() {
        assert_eq!(case_cell("short"), "short");
        let id = "tests/fixtures/agents/support/order_query.test.json#3";
        let cell = case_cell(id);
        assert_eq!(cell.chars().count(), CASE_WIDTH);
        assert!(
            cell.starts_with('…') && cell.ends_with("order_query.test.json#3"),
            "{cell}"
        );
    }
}
