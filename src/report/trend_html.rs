//! `trend -f html`: one self-contained page (no script, nothing loaded from
//! anywhere) with the pass rate over the window's runs as an inline SVG
//! line, and a grid of runs x cases, flaky cases first.

use std::fmt::Write as _;
use std::io::{self, Write};

use super::html::esc;

/// One run of the window, oldest first.
pub struct TrendRun<'a> {
    pub id: &'a str,
    pub started: &'a str,
    pub commit: Option<&'a str>,
    pub cases: u64,
    pub passed: u64,
}

/// One case over the window: its status and, per run, `Some(pass)` or
/// `None` where the case was not in the run.
pub struct TrendRow<'a> {
    pub case: &'a str,
    pub status: &'a str,
    pub points: Vec<Option<bool>>,
}

const STYLE: &str = "body{font:14px system-ui,sans-serif;margin:24px;color:#222}\
h1{font-size:20px}h2{font-size:16px;margin-top:28px}\
svg{max-width:900px;width:100%;height:auto;border:1px solid #ddd}\
.line{fill:none;stroke:#2563eb;stroke-width:2}.dot{fill:#2563eb}\
.axis{stroke:#999}.tick{font-size:10px;fill:#666}\
table{border-collapse:collapse}th,td{border:1px solid #ddd;padding:2px 6px;text-align:center}\
td.case{text-align:left;max-width:320px;overflow:hidden;text-overflow:ellipsis;white-space:nowrap}\
td.pass{background:#dcfce7;color:#166534}td.fail{background:#fee2e2;color:#991b1b}\
td.absent{color:#999}tr.flaky td.status{font-weight:bold;color:#b45309}";

/// Writes the page: `title` says which runs these are; `rows` in the
/// trend's order (worst first), of which flaky cases are drawn first.
pub fn write_trend_html(
    title: &str,
    runs: &[TrendRun],
    rows: &[TrendRow],
    out: &mut dyn Write,
) -> io::Result<()> {
    let mut page = String::with_capacity(16 * 1024 + rows.len() * runs.len() * 40);
    page.push_str("<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\">");
    page.push_str("<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'\">");
    let _ = write!(
        page,
        "<title>toolscore trend</title><style>{STYLE}</style></head><body><h1>toolscore trend</h1><p class=\"summary\">{}</p>",
        esc(title)
    );
    page.push_str("<h2>Pass rate over runs</h2>");
    page.push_str(&pass_rate_chart(runs));
    page.push_str("<h2>Cases</h2><table id=\"grid\"><thead><tr><th>Case</th><th>Status</th>");
    for (i, r) in runs.iter().enumerate() {
        let _ = write!(
            page,
            "<th data-run=\"{0}\" title=\"{0} started {1}{2}\">{3}</th>",
            esc(r.id),
            esc(r.started),
            r.commit
                .map_or(String::new(), |c| format!(", commit {}", esc(c))),
            i + 1
        );
    }
    page.push_str("</tr></thead><tbody>");
    // Flaky first (what the page is for), then the trend's order.
    let ordered = rows
        .iter()
        .filter(|r| r.status == "flaky")
        .chain(rows.iter().filter(|r| r.status != "flaky"));
    for row in ordered {
        let _ = write!(
            page,
            "<tr class=\"{0}\" data-case=\"{1}\"><td class=\"case\" title=\"{1}\">{1}</td><td class=\"status\">{0}</td>",
            esc(row.status),
            esc(row.case)
        );
        for (i, p) in row.points.iter().enumerate() {
            let (class, mark) = match p {
                Some(true) => ("pass", "✓"),
                Some(false) => ("fail", "✗"),
                None => ("absent", "·"),
            };
            let run = runs.get(i).map_or("", |r| r.id);
            let _ = write!(
                page,
                "<td class=\"{class}\" data-run=\"{}\">{mark}</td>",
                esc(run)
            );
        }
        page.push_str("</tr>");
    }
    page.push_str("</tbody></table>");
    if rows.is_empty() {
        page.push_str("<p>No case in these runs.</p>");
    }
    page.push_str("</body></html>\n");
    out.write_all(page.as_bytes())
}

/// The runs' pass rates (passed / cases, as `runs` lists them) as a line.
fn pass_rate_chart(runs: &[TrendRun]) -> String {
    let (w, h, pad) = (640.0, 200.0, 32.0);
    let mut svg = format!(
        "<svg id=\"pass-rate\" viewBox=\"0 0 {w} {h}\" role=\"img\" aria-label=\"pass rate over runs\">"
    );
    let _ = write!(
        svg,
        "<line class=\"axis\" x1=\"{pad}\" y1=\"{0}\" x2=\"{1}\" y2=\"{0}\"/><line class=\"axis\" x1=\"{pad}\" y1=\"{pad}\" x2=\"{pad}\" y2=\"{0}\"/>",
        h - pad,
        w - pad
    );
    for (y, label) in [(h - pad, "0%"), ((h) / 2.0, "50%"), (pad, "100%")] {
        let _ = write!(
            svg,
            "<text class=\"tick\" x=\"2\" y=\"{:.1}\">{label}</text>",
            y + 3.0
        );
    }
    let n = runs.len();
    let x = |i: usize| {
        if n <= 1 {
            w / 2.0
        } else {
            pad + (w - 2.0 * pad) * i as f64 / (n - 1) as f64
        }
    };
    let points: Vec<(f64, f64, f64, &TrendRun)> = runs
        .iter()
        .enumerate()
        .filter(|(_, r)| r.cases > 0)
        .map(|(i, r)| {
            let rate = r.passed as f64 / r.cases as f64;
            (x(i), h - pad - (h - 2.0 * pad) * rate, rate, r)
        })
        .collect();
    if points.len() > 1 {
        let path: Vec<String> = points
            .iter()
            .map(|(x, y, _, _)| format!("{x:.1},{y:.1}"))
            .collect();
        let _ = write!(
            svg,
            "<polyline class=\"line\" points=\"{}\"/>",
            path.join(" ")
        );
    }
    for (x, y, rate, r) in &points {
        let _ = write!(
            svg,
            "<circle class=\"dot\" cx=\"{x:.1}\" cy=\"{y:.1}\" r=\"4\" data-run=\"{0}\" data-rate=\"{rate}\"><title>{0}: {1} of {2} passed ({3:.1}%)</title></circle>",
            esc(r.id),
            r.passed,
            r.cases,
            rate * 100.0
        );
    }
    svg.push_str("</svg>");
    svg
}
