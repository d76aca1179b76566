//! The terminal table.

use std::io::{self, Write};

use super::{ellipsize, Report};

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
        let mut rows = vec![header];
        for e in &report.evaluations {
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
            let detail = e
                .headline()
                .map(|h| h.outcome.reason.clone())
                .unwrap_or_default();
            row.push(ellipsize(&detail, 100));
            rows.push(row);
        }
        for c in &report.unmatched_cases {
            let mut row = vec![
                case_cell(c.id()),
                "(no trace)".to_string(),
                c.joined_by().to_string(),
            ];
            row.extend(report.metrics.iter().map(|_| "-".to_string()));
            row.push("FAIL".to_string());
            row.push(ellipsize(&c.explanation(), 100));
            rows.push(row);
        }
        print_rows(&rows, out)?;
    }
    if !report.unmatched_traces.is_empty() {
        if report.has_cases {
            writeln!(out, "\nTraces that matched no case:")?;
        }
        let mut rows = vec![vec![
            "TRACE".to_string(),
            "SPANS".to_string(),
            "TOOLS CALLED".to_string(),
        ]];
        for t in &report.unmatched_traces {
            let tools: Vec<&str> = t.tools_called.iter().map(|c| c.name.as_str()).collect();
            rows.push(vec![
                t.trace_id.to_string(),
                t.spans.to_string(),
                ellipsize(&tools.join(", "), 100),
            ]);
        }
        print_rows(&rows, out)?;
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

pub(crate) fn print_rows(rows: &[Vec<String>], out: &mut dyn Write) -> io::Result<()> {
    let cols = rows.iter().map(Vec::len).max().unwrap_or(0);
    // Every cell is escaped (a no-op for ordinary text), so a name from a
    // trace can never forge a table line.
    let rows: Vec<Vec<String>> = rows
        .iter()
        .map(|r| r.iter().map(|c| super::printable(c).into_owned()).collect())
        .collect();
    let widths: Vec<usize> = (0..cols)
        .map(|c| {
            rows.iter()
                .filter_map(|r| r.get(c))
                .map(|s| s.chars().count())
                .max()
                .unwrap_or(0)
        })
        .collect();
    for r in &rows {
        let mut line = String::new();
        for (c, cell) in r.iter().enumerate() {
            if c + 1 == r.len() {
                line.push_str(cell);
            } else {
                line.push_str(cell);
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
