//! Calibration reports: a table for the terminal, JSONL rows (one per
//! metric, `"type": "calibration"`), a markdown summary for a pull request
//! and a self-contained HTML page (confusion matrix and disagreements).

use std::io::{self, Write};

use serde_json::{json, Value};

use super::{ellipsize, printable, rejected_row};
use crate::calibrate::{Agreement, Calibration, GateResult, LeftOut, MetricCalibration, Reason};
use crate::ingest::Rejected;

/// What every calibration report shows besides the figures.
pub struct CalibrationReport<'a> {
    pub calibration: &'a Calibration,
    pub rejected: &'a [Rejected],
    pub gate: &'a GateResult,
    /// Labels read from the file.
    pub labels: usize,
}

fn num(v: Option<f64>) -> Value {
    v.filter(|x| x.is_finite())
        .map_or(Value::Null, |x| json!(x))
}

fn agreement_json(a: &Agreement) -> Value {
    json!({
        "accuracy": num(a.accuracy),
        "kappa": num(a.kappa),
        "pass_agreement": num(a.pass.map(|i| i.value)),
        "fail_agreement": num(a.fail.map(|i| i.value)),
    })
}

/// The JSONL row of one metric's calibration.
pub fn calibration_row(m: &MetricCalibration) -> Value {
    let a = &m.agreement;
    let mut row = json!({
        "type": "calibration",
        "metric": m.metric,
        "n": m.n(),
        "accuracy": num(a.accuracy),
        "kappa": num(a.kappa),
        "pass_agreement": num(a.pass.map(|i| i.value)),
        "pass_agreement_low": num(a.pass.map(|i| i.low)),
        "pass_agreement_high": num(a.pass.map(|i| i.high)),
        "fail_agreement": num(a.fail.map(|i| i.value)),
        "fail_agreement_low": num(a.fail.map(|i| i.low)),
        "fail_agreement_high": num(a.fail.map(|i| i.high)),
        "confusion": a.confusion,
        "disagreements": m.disagreements,
        "excluded": m.excluded.iter().map(|(r, n)| (r.code().to_string(), json!(n))).collect::<serde_json::Map<_, _>>(),
        "threshold": num(m.threshold),
        "best_threshold": m.best.map_or(Value::Null, |(t, b)| {
            let mut v = agreement_json(&b);
            v["threshold"] = json!(t);
            v
        }),
    });
    if !m.raters.is_empty() {
        row["rater_agreement"] = json!(m.raters);
    }
    row
}

fn left_out_row(l: &LeftOut) -> Value {
    json!({
        "type": "label_left_out",
        "case": l.case,
        "trace_id": l.trace_id,
        "metric": l.metric,
        "lines": l.lines,
        "reason": l.reason.code(),
    })
}

/// One row per metric, then the labels left out, the rejected rows and a
/// summary with the gate's verdict.
pub fn write_calibration_jsonl(r: &CalibrationReport, out: &mut dyn Write) -> io::Result<()> {
    for m in &r.calibration.metrics {
        writeln!(out, "{}", calibration_row(m))?;
    }
    for l in &r.calibration.left_out {
        writeln!(out, "{}", left_out_row(l))?;
    }
    for rej in r.rejected {
        writeln!(out, "{}", rejected_row(rej))?;
    }
    writeln!(
        out,
        "{}",
        json!({
            "type": "calibration_summary",
            "labels": r.labels,
            "left_out": r.calibration.left_out.len(),
            "rejected": r.rejected.len(),
            "exit_code": r.gate.code,
            "gate": r.gate.messages,
        })
    )
}

fn fixed(v: Option<f64>) -> String {
    v.filter(|x| x.is_finite())
        .map_or_else(|| "-".to_string(), |x| format!("{x:.3}"))
}

fn interval(i: Option<crate::calibrate::stats::Interval>) -> String {
    i.map_or_else(
        || "-".to_string(),
        |i| format!("{:.3} [{:.3}, {:.3}]", i.value, i.low, i.high),
    )
}

fn verdict(pass: bool) -> &'static str {
    if pass {
        "pass"
    } else {
        "FAIL"
    }
}

/// The terminal table: one block per metric.
pub fn write_calibration_table(r: &CalibrationReport, out: &mut dyn Write) -> io::Result<()> {
    for m in &r.calibration.metrics {
        let a = &m.agreement;
        let c = a.confusion;
        writeln!(
            out,
            "{}: {} labelled evaluation(s)",
            printable(&m.metric),
            m.n()
        )?;
        writeln!(out, "  accuracy        {}", fixed(a.accuracy))?;
        writeln!(out, "  kappa           {}", fixed(a.kappa))?;
        writeln!(
            out,
            "  pass agreement  {}  (human passes: {})",
            interval(a.pass),
            c.human_passes()
        )?;
        writeln!(
            out,
            "  fail agreement  {}  (human failures: {})",
            interval(a.fail),
            c.human_fails()
        )?;
        writeln!(out, "                  human pass  human fail")?;
        writeln!(
            out,
            "  metric pass     {:<10}  {}",
            c.both_pass, c.metric_pass_human_fail
        )?;
        writeln!(
            out,
            "  metric fail     {:<10}  {}",
            c.metric_fail_human_pass, c.both_fail
        )?;
        if let Some(t) = m.threshold {
            write!(out, "  threshold       {t} (kappa {})", fixed(a.kappa))?;
            match m.best {
                Some((bt, b)) => writeln!(
                    out,
                    "; best {bt} (kappa {}, accuracy {})",
                    fixed(b.kappa),
                    fixed(b.accuracy)
                )?,
                None => writeln!(out)?,
            }
        }
        for (reason, n) in &m.excluded {
            writeln!(out, "  left out        {n}: {}", reason.describe())?;
        }
        for p in &m.raters {
            writeln!(
                out,
                "  raters          {} / {}: kappa {} on {}",
                printable(&p.a),
                printable(&p.b),
                fixed(p.kappa),
                p.n
            )?;
        }
        if !m.disagreements.is_empty() {
            writeln!(out, "  disagreements:")?;
            for d in &m.disagreements {
                writeln!(
                    out,
                    "    {} {}: metric {} ({}), human {}: {}{}",
                    ellipsize(&d.case, 40),
                    d.trace_id,
                    verdict(d.metric_pass),
                    fixed(d.score),
                    verdict(d.human_pass),
                    ellipsize(&d.reason, 80),
                    if d.rationale.is_empty() {
                        String::new()
                    } else {
                        format!(" / human: {}", ellipsize(&d.rationale.join(" | "), 80))
                    }
                )?;
            }
        }
        writeln!(out)?;
    }
    write_left_out(&r.calibration.left_out, out)
}

/// The labels that join nothing, and the evaluations whose raters split.
fn write_left_out(left_out: &[LeftOut], out: &mut dyn Write) -> io::Result<()> {
    let label_level: Vec<&LeftOut> = left_out
        .iter()
        .filter(|l| l.reason.joins_nothing())
        .collect();
    if !label_level.is_empty() {
        writeln!(out, "Labels that join nothing:")?;
        for l in label_level {
            writeln!(
                out,
                "  line {}: case {}{}: {}",
                l.lines.first().copied().unwrap_or(0),
                ellipsize(&l.case, 40),
                l.trace_id
                    .as_deref()
                    .map_or(String::new(), |t| format!(" trace {t}")),
                l.reason.describe()
            )?;
        }
    }
    let ties: Vec<&LeftOut> = left_out
        .iter()
        .filter(|l| l.reason == Reason::RaterTie)
        .collect();
    if !ties.is_empty() {
        writeln!(out, "Raters split evenly (left out):")?;
        for l in ties {
            writeln!(
                out,
                "  {} {} ({}), lines {:?}",
                ellipsize(&l.case, 40),
                l.trace_id.as_deref().unwrap_or("-"),
                l.metric.as_deref().unwrap_or("-"),
                l.lines
            )?;
        }
    }
    Ok(())
}

/// Markdown text: pipes and line breaks would break a table cell.
fn md(s: &str) -> String {
    let s = ellipsize(s, 120);
    s.replace('|', "\\|").replace('<', "&lt;")
}

/// A summary for a pull request: one table row per metric, the gate's
/// verdict, then the disagreements.
pub fn write_calibration_markdown(r: &CalibrationReport, out: &mut dyn Write) -> io::Result<()> {
    writeln!(out, "### Calibration against human labels\n")?;
    writeln!(out, "| metric | n | accuracy | kappa | pass agreement (95%) | fail agreement (95%) | threshold | best threshold |")?;
    writeln!(out, "|---|---:|---:|---:|---|---|---:|---:|")?;
    for m in &r.calibration.metrics {
        let a = &m.agreement;
        writeln!(
            out,
            "| `{}` | {} | {} | {} | {} | {} | {} | {} |",
            md(&m.metric),
            m.n(),
            fixed(a.accuracy),
            fixed(a.kappa),
            interval(a.pass),
            interval(a.fail),
            m.threshold.map_or("-".to_string(), |t| t.to_string()),
            m.best.map_or("-".to_string(), |(t, b)| format!(
                "{t} (kappa {})",
                fixed(b.kappa)
            )),
        )?;
    }
    writeln!(out)?;
    let verdict_line = match r.gate.code {
        0 => "**Gate: passed.**".to_string(),
        1 => "**Gate: a metric falls short.**".to_string(),
        _ => "**Gate: too few labels or rejected input.**".to_string(),
    };
    writeln!(out, "{verdict_line}\n")?;
    for msg in &r.gate.messages {
        writeln!(out, "- {}", md(msg))?;
    }
    if !r.rejected.is_empty() {
        writeln!(out, "- {} label row(s) rejected", r.rejected.len())?;
    }
    for m in r
        .calibration
        .metrics
        .iter()
        .filter(|m| !m.disagreements.is_empty())
    {
        writeln!(
            out,
            "\n<details><summary>{} disagreement(s) on <code>{}</code></summary>\n",
            m.disagreements.len(),
            super::html::esc(&m.metric)
        )?;
        writeln!(out, "| case | trace | metric | human | reason |")?;
        writeln!(out, "|---|---|---|---|---|")?;
        for d in &m.disagreements {
            writeln!(
                out,
                "| {} | `{}` | {} ({}) | {} | {} |",
                md(&d.case),
                d.trace_id,
                verdict(d.metric_pass),
                fixed(d.score),
                verdict(d.human_pass),
                md(&d.reason)
            )?;
        }
        writeln!(out, "\n</details>")?;
    }
    Ok(())
}

const CSS: &str = "body{font:14px/1.4 system-ui,sans-serif;margin:1.5em;color:#222}\
table{border-collapse:collapse;margin:.5em 0}td,th{border:1px solid #bbb;padding:.25em .6em;text-align:left}\
th{background:#f0f0f0}.num{text-align:right}.agree{background:#e3f4e3}.disagree{background:#fbe3e3}\
section{margin-bottom:2em}.gate{font-weight:bold}";

/// A self-contained page: per metric its figures, confusion matrix and
/// disagreements. No script; nothing loaded from anywhere.
pub fn write_calibration_html(r: &CalibrationReport, out: &mut dyn Write) -> io::Result<()> {
    use super::html::esc;
    let mut p = String::with_capacity(16 * 1024);
    p.push_str("<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\">");
    p.push_str("<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'\">");
    p.push_str("<title>toolscore calibration</title><style>");
    p.push_str(CSS);
    p.push_str("</style></head><body><h1>Calibration against human labels</h1>");
    p.push_str(&format!(
        "<p class=\"gate\" id=\"gate\">exit {}: {}</p>",
        r.gate.code,
        match r.gate.code {
            0 => "every metric meets its bounds",
            1 => "a metric falls short",
            _ => "too few labels or rejected input",
        }
    ));
    if !r.gate.messages.is_empty() {
        p.push_str("<ul>");
        for msg in &r.gate.messages {
            p.push_str(&format!("<li>{}</li>", esc(msg)));
        }
        p.push_str("</ul>");
    }
    for m in &r.calibration.metrics {
        let a = &m.agreement;
        let c = a.confusion;
        p.push_str(&format!(
            "<section class=\"metric\" data-metric=\"{0}\"><h2>{0}</h2><p>{1} labelled evaluation(s); accuracy {2}; kappa {3}; \
             pass agreement {4}; fail agreement {5}</p>",
            esc(&m.metric),
            m.n(),
            fixed(a.accuracy),
            fixed(a.kappa),
            interval(a.pass),
            interval(a.fail)
        ));
        p.push_str(&format!(
            "<table class=\"confusion\"><tr><th></th><th>human pass</th><th>human fail</th></tr>\
             <tr><th>metric pass</th><td class=\"num agree\">{}</td><td class=\"num disagree\">{}</td></tr>\
             <tr><th>metric fail</th><td class=\"num disagree\">{}</td><td class=\"num agree\">{}</td></tr></table>",
            c.both_pass, c.metric_pass_human_fail, c.metric_fail_human_pass, c.both_fail
        ));
        if let Some(t) = m.threshold {
            p.push_str(&format!("<p>threshold {t}"));
            if let Some((bt, b)) = m.best {
                p.push_str(&format!(
                    "; best {bt} (kappa {}, accuracy {})",
                    fixed(b.kappa),
                    fixed(b.accuracy)
                ));
            }
            p.push_str("</p>");
        }
        if !m.disagreements.is_empty() {
            p.push_str("<table class=\"disagreements\"><tr><th>case</th><th>trace</th><th>metric</th><th>human</th><th>reason</th><th>human rationale</th></tr>");
            for d in &m.disagreements {
                p.push_str(&format!(
                    "<tr><td>{}</td><td>{}</td><td>{} ({})</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                    esc(&d.case),
                    esc(&d.trace_id),
                    verdict(d.metric_pass),
                    fixed(d.score),
                    verdict(d.human_pass),
                    esc(&d.reason),
                    esc(&d.rationale.join(" | "))
                ));
            }
            p.push_str("</table>");
        }
        p.push_str("</section>");
    }
    p.push_str("</body></html>\n");
    out.write_all(p.as_bytes())
}
