//! `--format html`: one self-contained page (no external resource, opens
//! from disk). Summary cards, score histograms and the per-tool table are
//! drawn here (inline SVG, escaped HTML); the case list is built in the
//! browser from the run's data, embedded as JSON with every `<` escaped so
//! no text from a trace can close the script element.

use std::collections::{BTreeMap, HashMap};
use std::fmt::Write as _;
use std::io::{self, Write};

use serde_json::{json, Value};

use super::baseline::Comparison;
use super::Report;
use crate::assemble::{SpanId, Trace, TraceId};
use crate::evaluate::{Evaluation, MetricResult, UnmatchedCase};
use crate::extract::{AgentRun, CallStatus, ToolCall};

/// Spans of one trace kept for its timeline: enough for an agent run with
/// dozens of steps, bounded so a huge trace cannot blow up the page.
pub const TIMELINE_SPANS: usize = 150;

/// A call's arguments are embedded whole up to this many bytes of JSON, else
/// as a shortened text (the page says so).
const MAX_ARGS_BYTES: usize = 2048;

/// Explanations are cut past this many characters.
const MAX_REASON_CHARS: usize = 2000;

const CSS: &str = include_str!("html/report.css");
const JS: &str = include_str!("html/report.js");

/// What a span is, on the timeline.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SpanMark {
    Other,
    Tool,
    Agent,
}

/// One span on a timeline.
#[derive(Debug, Clone, PartialEq)]
pub struct TimelineSpan {
    pub name: String,
    pub start_unix_nano: u64,
    pub end_unix_nano: u64,
    /// Ancestors in the trace (indentation).
    pub depth: usize,
    pub mark: SpanMark,
    pub error: bool,
}

/// The span timing of one trace, for the HTML report.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Timeline {
    /// The first [`TIMELINE_SPANS`] spans by start time.
    pub spans: Vec<TimelineSpan>,
    /// Spans in the trace (more than `spans.len()` when cut).
    pub total: usize,
    /// The user's request (this turn's words), shown with the trace's cases.
    pub request: Option<String>,
}

impl Timeline {
    /// The first spans of `trace`, the calls and agent runs marked.
    pub fn of(trace: &Trace, calls: &[ToolCall], runs: &[AgentRun]) -> Timeline {
        let mut marks: HashMap<SpanId, SpanMark> = HashMap::new();
        for r in runs {
            marks.insert(r.span_id, SpanMark::Agent);
        }
        for c in calls {
            marks.insert(c.span_id, SpanMark::Tool);
        }
        let spans = trace
            .spans
            .iter()
            .enumerate()
            .take(TIMELINE_SPANS)
            .map(|(i, s)| {
                // Parent cycles are broken when assembling; the cap is a guard.
                let mut depth = 0;
                let mut p = trace.parent.get(i).copied().flatten();
                while let Some(j) = p {
                    depth += 1;
                    if depth >= 64 {
                        break;
                    }
                    p = trace.parent.get(j).copied().flatten();
                }
                let span = &s.span;
                TimelineSpan {
                    name: span.name().to_string(),
                    start_unix_nano: span.start_time_unix_nano,
                    end_unix_nano: span.end_time_unix_nano.max(span.start_time_unix_nano),
                    depth,
                    mark: marks.get(&s.span_id).copied().unwrap_or(SpanMark::Other),
                    // OTLP status code 2: error.
                    error: span.status.as_ref().is_some_and(|st| st.code == 2),
                }
            })
            .collect();
        Timeline {
            spans,
            total: trace.spans.len(),
            request: crate::extract::facts::turn_text_of(trace).map(|r| cut(&r, MAX_REASON_CHARS)),
        }
    }
}

/// Timelines by trace, filled by a replay that asks for them.
pub type Timelines = HashMap<TraceId, Timeline>;

pub(crate) fn esc(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// JSON text safe inside `<script type="application/json">`: `<` only
/// occurs in strings there, where `\u003c` means the same.
fn script_json(v: &Value) -> String {
    v.to_string()
        .replace('<', "\\u003c")
        .replace('\u{2028}', "\\u2028")
        .replace('\u{2029}', "\\u2029")
}

fn ms(ns: u64) -> f64 {
    (ns as f64 / 1e3).round() / 1e3
}

fn cut(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        return s.to_string();
    }
    let mut out: String = s.chars().take(max).collect();
    out.push('…');
    out
}

/// Arguments as embedded: the value, or a shortened text of it when large.
fn args_json(args: Option<&Value>) -> Value {
    match args {
        None => Value::Null,
        Some(v) => {
            let text = v.to_string();
            if text.len() <= MAX_ARGS_BYTES {
                v.clone()
            } else {
                json!({ "$truncated": cut(&text, MAX_ARGS_BYTES / 2) })
            }
        }
    }
}

fn result_json(r: &MetricResult) -> Value {
    json!([
        r.metric,
        r.outcome.score,
        r.passed(),
        cut(&r.outcome.reason, MAX_REASON_CHARS),
        r.outcome.error,
        r.threshold,
    ])
}

fn case_json(e: &Evaluation) -> Value {
    let base = e
        .tools_called
        .iter()
        .map(|c| c.start_time_unix_nano)
        .min()
        .unwrap_or(0);
    let called: Vec<Value> = e
        .tools_called
        .iter()
        .map(|c| {
            json!([
                c.name,
                args_json(c.args.value()),
                c.status == CallStatus::Error,
                c.error_message,
                ms(c.start_time_unix_nano.saturating_sub(base)),
                ms(c.end_time_unix_nano.saturating_sub(c.start_time_unix_nano)),
                c.agent.as_ref().map(|a| a.name.as_str()),
            ])
        })
        .collect();
    let expected: Vec<Value> = e
        .expected
        .iter()
        .map(|c| json!([c.name, args_json(c.args.as_ref())]))
        .collect();
    let traces: Vec<String> = match &e.session {
        Some(s) => s.trace_ids.iter().map(ToString::to_string).collect(),
        None => vec![e.trace_id.to_string()],
    };
    let mut v = json!({
        "case": e.case_id,
        "pass": e.passed(),
        // A judge error or a dry run is not a failure of the agent.
        "verdict": e.verdict().code(),
        "results": e.results.iter().map(result_json).collect::<Vec<_>>(),
        "expected": expected,
        "called": called,
    });
    // A trace's case: its id says it all (the script derives the rest).
    match &e.session {
        None => v["trace"] = json!(e.trace_id.to_string()),
        Some(_) => {
            v["target"] = json!(e.target_label());
            v["traces"] = json!(traces);
        }
    }
    v
}

fn timeline_json(t: &Timeline) -> Value {
    let t0 = t.spans.iter().map(|s| s.start_unix_nano).min().unwrap_or(0);
    let spans: Vec<Value> = t
        .spans
        .iter()
        .map(|s| {
            let mark = match s.mark {
                SpanMark::Other => "",
                SpanMark::Tool => "t",
                SpanMark::Agent => "a",
            };
            json!([
                s.name,
                ms(s.start_unix_nano - t0.min(s.start_unix_nano)),
                ms(s.end_unix_nano - s.start_unix_nano),
                s.depth,
                mark,
                u8::from(s.error),
            ])
        })
        .collect();
    json!({ "total": t.total, "spans": spans })
}

/// Per tool: how often it was expected, missing, unexpected or called with
/// wrong arguments, over the evaluations.
#[derive(Default)]
struct ToolCounts {
    called: usize,
    expected: usize,
    missing: usize,
    unexpected: usize,
    wrong_args: usize,
}

fn names_in(v: Option<&Value>) -> Vec<&str> {
    match v {
        Some(Value::Array(a)) => a
            .iter()
            .filter_map(|x| match x {
                Value::String(s) => Some(s.as_str()),
                // wrong_args entries: {name, expected, called}
                Value::Object(o) => o.get("name").and_then(Value::as_str),
                _ => None,
            })
            .collect(),
        _ => Vec::new(),
    }
}

fn tool_counts(report: &Report) -> BTreeMap<String, ToolCounts> {
    let mut out: BTreeMap<String, ToolCounts> = BTreeMap::new();
    for t in &report.tools {
        out.entry(t.name.clone()).or_default().called = t.calls;
    }
    for e in &report.evaluations {
        for c in e.expected.iter() {
            out.entry(c.name.clone()).or_default().expected += 1;
        }
        // The native metric names its missing, unexpected and wrong-argument
        // calls (docs/scoring.md); without it, count by name.
        let native = e.results.iter().find_map(|r| {
            r.outcome
                .details
                .as_ref()
                .filter(|d| d.get("missing").is_some())
        });
        if let Some(d) = native {
            for n in names_in(d.get("missing")) {
                out.entry(n.to_string()).or_default().missing += 1;
            }
            for n in names_in(d.get("unexpected")) {
                out.entry(n.to_string()).or_default().unexpected += 1;
            }
            for n in names_in(d.get("wrong_args")) {
                out.entry(n.to_string()).or_default().wrong_args += 1;
            }
        } else {
            let mut diff: HashMap<&str, i64> = HashMap::new();
            for c in e.expected.iter() {
                *diff.entry(&c.name).or_default() += 1;
            }
            for c in e.tools_called.iter() {
                *diff.entry(&c.name).or_default() -= 1;
            }
            for (n, d) in diff {
                let t = out.entry(n.to_string()).or_default();
                if d > 0 {
                    t.missing += d as usize;
                } else {
                    t.unexpected += d.unsigned_abs() as usize;
                }
            }
        }
    }
    out
}

fn card(out: &mut String, label: &str, value: &str, note: &str, class: &str) {
    let _ = write!(
        out,
        "<div class=\"card {class}\"><div class=\"label\">{}</div><div class=\"value\">{}</div><div class=\"note\">{}</div></div>",
        esc(label),
        esc(value),
        esc(note)
    );
}

fn pct(n: usize, of: usize) -> String {
    if of == 0 {
        "–".into()
    } else {
        format!("{:.0}%", 100.0 * n as f64 / of as f64)
    }
}

fn cards(report: &Report) -> String {
    let mut out = String::from("<section class=\"cards\">");
    let cases = report.evaluations.len() + report.unmatched_cases.len();
    let failed = report.failed();
    card(
        &mut out,
        "Cases",
        &cases.to_string(),
        &format!("{} passed, {} failed", cases - failed, failed),
        if failed > 0 { "bad" } else { "good" },
    );
    for m in &report.metrics {
        let (mut n, mut ok) = (0, 0);
        for r in report
            .evaluations
            .iter()
            .flat_map(|e| &e.results)
            .filter(|r| &r.metric == m)
        {
            n += 1;
            ok += usize::from(r.passed());
        }
        card(
            &mut out,
            m,
            &pct(ok, n),
            &format!("{ok} of {n} passed"),
            if ok < n { "warn" } else { "good" },
        );
    }
    let s = &report.stats;
    card(
        &mut out,
        "Traces",
        &s.traces.to_string(),
        &format!(
            "{} spans, {} tool calls, {} matched no case",
            s.spans,
            s.tool_calls,
            report.unmatched_traces.len()
        ),
        "",
    );
    card(
        &mut out,
        "Rejected inputs",
        &report.rejected.len().to_string(),
        if report.rejected.is_empty() {
            "all input read"
        } else {
            "see the list below"
        },
        if report.rejected.is_empty() {
            "good"
        } else {
            "bad"
        },
    );
    out.push_str("</section>");
    out
}

/// Ten bins over 0..=1 (scores outside are put in the end bins).
fn histogram(report: &Report, metric: &str) -> String {
    let mut bins = [0usize; 10];
    let (mut errors, mut thresholds) = (0, Vec::new());
    for r in report
        .evaluations
        .iter()
        .flat_map(|e| &e.results)
        .filter(|r| r.metric == metric)
    {
        match r.outcome.score {
            Some(s) if s.is_finite() => {
                let i = ((s * 10.0).floor().max(0.0) as usize).min(9);
                bins[i] += 1;
            }
            _ => errors += 1,
        }
        if let Some(t) = r.threshold {
            if !thresholds.contains(&t) {
                thresholds.push(t);
            }
        }
    }
    let max = bins.iter().copied().max().unwrap_or(0).max(1);
    let (w, h, pad) = (320.0, 130.0, 22.0);
    let bw = (w - 2.0 * pad) / 10.0;
    let mut svg = format!(
        "<svg class=\"hist\" viewBox=\"0 0 {w} {h}\" role=\"img\" aria-label=\"score histogram of {}\">",
        esc(metric)
    );
    for (i, &n) in bins.iter().enumerate() {
        let bh = (h - 2.0 * pad) * n as f64 / max as f64;
        let x = pad + i as f64 * bw;
        let y = h - pad - bh;
        let _ = write!(
            svg,
            "<rect x=\"{:.1}\" y=\"{y:.1}\" width=\"{:.1}\" height=\"{bh:.1}\"><title>{:.1}–{:.1}: {n}</title></rect>",
            x + 1.0,
            bw - 2.0,
            i as f64 / 10.0,
            (i + 1) as f64 / 10.0
        );
        if n > 0 {
            let _ = write!(
                svg,
                "<text class=\"n\" x=\"{:.1}\" y=\"{:.1}\">{n}</text>",
                x + bw / 2.0,
                y - 3.0
            );
        }
    }
    let _ = write!(
        svg,
        "<line class=\"axis\" x1=\"{pad}\" y1=\"{0}\" x2=\"{1}\" y2=\"{0}\"/>",
        h - pad,
        w - pad
    );
    for (x, label) in [(pad, "0"), (w / 2.0, "0.5"), (w - pad, "1")] {
        let _ = write!(
            svg,
            "<text class=\"tick\" x=\"{x}\" y=\"{}\">{label}</text>",
            h - 6.0
        );
    }
    if let [t] = thresholds[..] {
        let x = pad + (w - 2.0 * pad) * t.clamp(0.0, 1.0);
        let _ = write!(
            svg,
            "<line class=\"threshold\" x1=\"{x:.1}\" y1=\"{}\" x2=\"{x:.1}\" y2=\"{}\"><title>threshold {t}</title></line>",
            pad - 8.0,
            h - pad
        );
    }
    svg.push_str("</svg>");
    let note = if errors > 0 {
        format!("{errors} without a score (error)")
    } else {
        String::new()
    };
    format!(
        "<figure class=\"histogram\"><figcaption>{}</figcaption>{svg}<div class=\"note\">{}</div></figure>",
        esc(metric),
        esc(&note)
    )
}

fn tools_table(report: &Report) -> String {
    let counts = tool_counts(report);
    let latency: HashMap<&str, (usize, f64, f64)> = report
        .tools
        .iter()
        .map(|t| (t.name.as_str(), (t.errors, t.p50_ms, t.p95_ms)))
        .collect();
    let mut out = String::from(
        "<table id=\"tools\" class=\"sortable\"><thead><tr>\
         <th data-type=\"text\">Tool</th><th>Called</th><th>Expected</th><th>Missing</th>\
         <th>Unexpected</th><th>Wrong args</th><th>Errors</th><th>p50 ms</th><th>p95 ms</th>\
         </tr></thead><tbody>",
    );
    for (name, c) in &counts {
        let (errors, p50, p95) = latency.get(name.as_str()).copied().unwrap_or_default();
        let num = |n: usize, bad: bool| {
            let class = if bad && n > 0 { " class=\"bad\"" } else { "" };
            format!("<td data-v=\"{n}\"{class}>{n}</td>")
        };
        // A tool never called has no latency: a dash, sorted first.
        let ms = |v: f64| match c.called {
            0 => "<td data-v=\"-1\">-</td>".to_string(),
            _ => format!("<td data-v=\"{v}\">{v:.1}</td>"),
        };
        let _ = write!(
            out,
            "<tr><td data-v=\"{0}\" class=\"name\">{0}</td>{1}{2}{3}{4}{5}{6}{7}{8}</tr>",
            esc(name),
            num(c.called, false),
            num(c.expected, false),
            num(c.missing, true),
            num(c.unexpected, true),
            num(c.wrong_args, true),
            num(errors, true),
            ms(p50),
            ms(p95),
        );
    }
    out.push_str("</tbody></table>");
    if counts.is_empty() {
        out.push_str("<p class=\"note\">No tool call and no expected tool.</p>");
    }
    out
}

/// The traces' warnings (`extract::conversation`).
fn warning_list(report: &Report) -> String {
    let warnings: Vec<(String, &str)> = report.warnings().collect();
    if warnings.is_empty() {
        return String::new();
    }
    let mut out = format!(
        "<details class=\"rejected\" open><summary>{} warning(s)</summary><ul>",
        warnings.len()
    );
    for (trace, w) in &warnings {
        let _ = write!(out, "<li>trace {}: {}</li>", esc(trace), esc(w));
    }
    out.push_str("</ul></details>");
    out
}

fn rejected_list(report: &Report) -> String {
    if report.rejected.is_empty() {
        return String::new();
    }
    let mut out = format!(
        "<details class=\"rejected\"><summary>{} rejected input(s)</summary><ul>",
        report.rejected.len()
    );
    for r in &report.rejected {
        let _ = write!(out, "<li>{}</li>", esc(&r.to_string()));
    }
    out.push_str("</ul></details>");
    out
}

/// A case that no trace matched, as the page's script reads it.
fn unmatched_case_json(c: &UnmatchedCase) -> Value {
    let calls = c.expected();
    let expected: Vec<Value> = calls
        .iter()
        .map(|x| json!([x.name, args_json(x.args.as_ref())]))
        .collect();
    json!({
        "case": c.id(),
        "target": "no trace",
        "traces": [],
        "pass": false,
        "results": [],
        "reason": c.explanation_of(&calls),
        "expected": expected,
        "called": [],
    })
}

/// Writes the data the page's script renders the case list from: one JSON
/// object (keys in order, as `serde_json` writes a map), its case list
/// written a case at a time so that a report of a million cases is never
/// held whole. Failures come first (what a reader opens the page for), in
/// report order, then passes.
fn write_page_data(
    report: &Report,
    timelines: Option<&Timelines>,
    comparison: Option<&Comparison>,
    out: &mut dyn Write,
) -> io::Result<()> {
    let by_case: HashMap<&str, Value> = comparison.map_or_else(HashMap::new, |c| {
        c.rows
            .iter()
            .map(|r| (r.case.as_str(), json!([r.status.as_str(), r.delta])))
            .collect()
    });
    let finish = |mut v: Value| {
        let id = v["case"].as_str().unwrap_or_default().to_string();
        if let Some(b) = by_case.get(id.as_str()) {
            v["baseline"] = b.clone();
        }
        v
    };
    let evaluation = |e: &Evaluation| {
        let mut v = case_json(e);
        if let Some(r) = timelines
            .and_then(|t| t.get(&e.trace_id))
            .and_then(|t| t.request.as_deref())
        {
            v["request"] = json!(r);
        }
        finish(v)
    };
    let baseline = json!(comparison.map(Comparison::summary_line));
    write!(out, "{{\"baseline\":{},\"cases\":[", script_json(&baseline))?;
    let mut first = true;
    let mut item = |v: &Value, out: &mut dyn Write| -> io::Result<()> {
        let sep = if std::mem::take(&mut first) { "" } else { "," };
        write!(out, "{sep}{}", script_json(v))
    };
    // `pass` of a case's data is `Evaluation::passed`.
    for e in report.evaluations.iter().filter(|e| !e.passed()) {
        item(&evaluation(e), out)?;
    }
    for c in &report.unmatched_cases {
        item(&finish(unmatched_case_json(c)), out)?;
    }
    for e in report.evaluations.iter().filter(|e| e.passed()) {
        item(&evaluation(e), out)?;
    }
    let mut tl = serde_json::Map::new();
    if let Some(timelines) = timelines {
        let wanted = report.evaluations.iter().flat_map(|e| match &e.session {
            Some(s) => s.trace_ids.clone(),
            None => vec![e.trace_id],
        });
        for id in wanted {
            if let Some(t) = timelines.get(&id) {
                tl.entry(id.to_string()).or_insert_with(|| timeline_json(t));
            }
        }
    }
    let unmatched: Vec<Value> = report
        .unmatched_traces
        .iter()
        .map(|t| {
            json!([
                t.trace_id.to_string(),
                t.spans,
                t.tools_called
                    .iter()
                    .map(|c| c.name.as_str())
                    .collect::<Vec<_>>(),
            ])
        })
        .collect();
    let rest = json!({
        "has_timelines": timelines.is_some(),
        "metrics": report.metrics,
        "timeline_spans": TIMELINE_SPANS,
        "timelines": tl,
        "unmatched_traces": unmatched,
    });
    // The rest of the object, after the case list: `{` becomes `,`.
    let rest = script_json(&rest);
    write!(out, "],{}", rest.strip_prefix('{').unwrap_or(&rest))
}

/// Writes the whole page. Without `report.timelines` (span timing not
/// kept), a case's timeline shows its tool calls alone.
/// The cases that ran several trials, one row each (none: nothing).
fn trials_table(report: &Report) -> String {
    let trials = report.case_trials();
    if trials.is_empty() {
        return String::new();
    }
    let mut out = format!(
        "<h2>Trials</h2><p class=\"hint\">Cases that joined several traces; a case passes \
         with --trials-pass {}.</p><table id=\"trials\" class=\"sortable\"><thead><tr>\
         <th data-type=\"text\">Case</th><th>Trials</th><th>Passes</th><th>Pass rate</th>\
         <th data-type=\"text\">pass@k</th><th data-type=\"text\">pass^k</th>\
         <th data-type=\"text\">Verdict</th><th data-type=\"text\">Pass</th></tr></thead><tbody>",
        esc(&report.trials_pass.to_string())
    );
    let yes = |b: bool| if b { "yes" } else { "no" };
    for c in &trials {
        let class = if c.pass { "good" } else { "bad" };
        let _ = write!(
            out,
            "<tr><td data-v=\"{0}\" class=\"name\">{0}</td><td data-v=\"{1}\">{1}</td>\
             <td data-v=\"{2}\">{2}</td><td data-v=\"{3}\">{4}</td><td data-v=\"{5}\">{5}</td>\
             <td data-v=\"{6}\">{6}</td><td data-v=\"{7}\">{7}</td>\
             <td data-v=\"{8}\" class=\"{9}\">{8}</td></tr>",
            esc(&c.case_id),
            c.trials,
            c.passes,
            c.pass_rate(),
            pct(c.passes, c.trials),
            yes(c.pass_at_k),
            yes(c.pass_all_k),
            c.verdict.code(),
            if c.pass { "pass" } else { "FAIL" },
            class,
        );
    }
    out.push_str("</tbody></table>");
    out
}

pub fn write_html(
    report: &Report,
    comparison: Option<&Comparison>,
    out: &mut dyn Write,
) -> io::Result<()> {
    let mut page = String::with_capacity(64 * 1024);
    page.push_str("<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\">");
    page.push_str("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">");
    // Nothing is loaded from anywhere; inline style and script only.
    page.push_str("<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:\">");
    page.push_str("<title>toolscore report</title><style>");
    page.push_str(CSS);
    page.push_str("</style></head><body><header><h1>toolscore report</h1><p class=\"summary\">");
    page.push_str(&esc(&report.summary_line()));
    if let Some(c) = comparison {
        page.push_str("</p><p class=\"summary baseline\">");
        page.push_str(&esc(&c.summary_line()));
    }
    page.push_str("</p></header><main>");
    page.push_str(&cards(report));
    page.push_str(&rejected_list(report));
    page.push_str(&warning_list(report));
    if !report.metrics.is_empty() && !report.evaluations.is_empty() {
        page.push_str("<h2>Scores</h2><section class=\"histograms\">");
        for m in &report.metrics {
            page.push_str(&histogram(report, m));
        }
        page.push_str("</section>");
    }
    page.push_str("<h2>Tools</h2><p class=\"hint\">Click a column to sort.</p>");
    page.push_str(&tools_table(report));
    page.push_str(&trials_table(report));
    page.push_str(
        "<h2>Cases</h2><div class=\"filters\">\
         <label><input type=\"checkbox\" id=\"f-failed\"> failed only</label>\
         <label>metric <select id=\"f-metric\"><option value=\"\">any</option></select></label>\
         <label class=\"grow\"><input type=\"search\" id=\"f-text\" placeholder=\"filter by case, trace, tool or explanation\"></label>\
         <span id=\"f-count\"></span></div>\
         <div id=\"cases\"></div><div id=\"unmatched\"></div>",
    );
    page.push_str("</main><script type=\"application/json\" id=\"data\">");
    out.write_all(page.as_bytes())?;
    write_page_data(report, report.timelines.as_ref(), comparison, out)?;
    out.write_all(b"</script><script>")?;
    out.write_all(JS.as_bytes())?;
    out.write_all(b"</script></body></html>\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn script_json_cannot_close_the_script() {
        let v = json!({"name": "</script><script>alert(1)</script>\u{2028}"});
        let s = script_json(&v);
        assert!(!s.contains('<'), "{s}");
        let back: Value = serde_json::from_str(&s).unwrap();
        assert_eq!(back, v);
    }

    #[test]
    fn html_text_is_escaped() {
        assert_eq!(esc("<b a=\"x\">&'"), "&lt;b a=&quot;x&quot;&gt;&amp;&#39;");
    }
}
