//! Report: the results of a run as a terminal table, JSONL, JUnit XML or an
//! HTML page.

pub mod baseline;
mod calibration;
mod explain;
mod html;
mod inspect;
mod junit;
pub mod markdown;
mod stored;
mod table;
mod tools;
mod trend_html;

use std::io::{self, Write};

use serde::Serialize;
use serde_json::{json, Value};

use crate::evaluate::{
    case_trials, CaseTrials, Evaluation, MetricResult, Stability, TrialsPass, UnmatchedCase,
    UnmatchedTrace, Verdict,
};
use crate::extract::{CallResult, ToolCall};
use crate::ingest::Rejected;
use crate::score::Unjudged;

pub use calibration::{
    calibration_row, write_calibration_html, write_calibration_jsonl, write_calibration_markdown,
    write_calibration_table, CalibrationReport,
};
pub use explain::{conversation_row, explain_row, write_conversation, write_explain};
pub use html::{write_html, SpanMark, Timeline, Timelines, TIMELINE_SPANS};
pub use inspect::{
    inspect_row, joins_json, write_inspect_row, write_inspect_tree, write_joins, InspectRow,
};
pub use junit::write_junit;
pub use stored::{report_of_rows, StoredRowError};
pub use table::{write_metrics, write_table};
pub use tools::{TokenStats, ToolStats, ToolStatsBuilder};
pub use trend_html::{write_trend_html, TrendRow, TrendRun};

/// Counters for the summary.
#[derive(Debug, Clone, Default, PartialEq, Serialize, serde::Deserialize)]
pub struct Stats {
    pub inputs: usize,
    pub requests: usize,
    pub spans: usize,
    pub duplicate_spans: usize,
    pub traces: usize,
    pub tool_calls: usize,
    /// Log records with span context, held for their spans (`ingest::logs`):
    /// joined, or counted again in `logs_unjoined`.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub log_events: usize,
    /// Log records without span context: not joined to anything.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub logs_without_span: usize,
    /// Log records whose span never came.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub logs_unjoined: usize,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

impl Stats {
    /// The summary's words on log records (empty when none were read).
    pub fn logs_summary(&self) -> String {
        let mut out = String::new();
        if self.log_events > 0 {
            out.push_str(&format!(
                "; {} log record(s) read as span events",
                self.log_events - self.logs_unjoined.min(self.log_events)
            ));
        }
        if self.logs_unjoined > 0 {
            out.push_str(&format!(
                "; {} log record(s) name a span that never came",
                self.logs_unjoined
            ));
        }
        if self.logs_without_span > 0 {
            out.push_str(&format!(
                "; {} log record(s) without span context ignored",
                self.logs_without_span
            ));
        }
        out
    }
}

/// Everything a run produced.
#[derive(Debug, Clone, Default)]
pub struct Report {
    pub evaluations: Vec<Evaluation>,
    pub unmatched_traces: Vec<UnmatchedTrace>,
    pub unmatched_cases: Vec<UnmatchedCase>,
    pub rejected: Vec<Rejected>,
    pub stats: Stats,
    /// Metric names in column order.
    pub metrics: Vec<String>,
    /// Whether a fixture file was given (else traces are listed, not judged).
    pub has_cases: bool,
    /// Ends the summary line (e.g. why no tool call was found at all).
    pub hint: Option<String>,
    /// What the LLM judge cost, when a metric asked one.
    pub judge: Option<crate::judge::JudgeUsage>,
    /// Per-tool calls, errors and latency, by tool name.
    pub tools: Vec<ToolStats>,
    /// Token totals, when any trace reported them.
    pub tokens: Option<TokenStats>,
    /// Span timing by trace, for the HTML report; `Some` asks
    /// `replay::score_traces` to keep it (bounded per trace).
    pub timelines: Option<Timelines>,
    /// What a case of several trials needs to pass (`--trials-pass`).
    pub trials_pass: TrialsPass,
}

/// Exit codes shared by every command.
pub mod exit {
    pub const PASS: u8 = 0;
    pub const FAIL: u8 = 1;
    pub const INPUT: u8 = 2;
}

impl Report {
    pub fn passed(&self) -> usize {
        self.count(Verdict::Pass)
    }

    /// Failed evaluations and cases that matched no trace.
    pub fn failed(&self) -> usize {
        self.count(Verdict::Fail) + self.unmatched_cases.len()
    }

    /// Evaluations with a metric the judge could not evaluate (some of
    /// them may have failed on another metric).
    pub fn judge_errors(&self) -> usize {
        self.evaluations
            .iter()
            .filter(|e| e.results.iter().any(|r| r.verdict() == Verdict::JudgeError))
            .count()
    }

    /// Evaluations with a metric a dry run did not judge.
    pub fn not_judged(&self) -> usize {
        self.count(Verdict::NotJudged)
    }

    /// Each trace's warnings (`extract::conversation`), once per trace:
    /// (trace id, warning).
    pub fn warnings(&self) -> impl Iterator<Item = (String, &str)> + '_ {
        let mut last: Option<crate::assemble::TraceId> = None;
        let evaluated = self.evaluations.iter().filter(move |e| {
            // A trace's evaluations are next to each other and share them.
            let first = last != Some(e.trace_id);
            last = Some(e.trace_id);
            first
        });
        let evaluated = evaluated.map(|e| (e.trace_id, &e.warnings));
        let unmatched = self
            .unmatched_traces
            .iter()
            .map(|t| (t.trace_id, &t.warnings));
        evaluated
            .chain(unmatched)
            .flat_map(|(id, w)| w.iter().map(move |w| (id.to_string(), w.as_str())))
    }

    fn count(&self, v: Verdict) -> usize {
        self.evaluations.iter().filter(|e| e.verdict() == v).count()
    }

    /// Whether the run could not evaluate everything: input was rejected,
    /// or the judge failed.
    pub fn could_not_evaluate(&self) -> bool {
        !self.rejected.is_empty() || self.judge_errors() > 0
    }

    /// The cases that joined more than one trace, summed up.
    pub fn case_trials(&self) -> Vec<CaseTrials> {
        case_trials(&self.evaluations, self.trials_pass)
    }

    /// Cases that fail the run: a case of several trials counts once, by
    /// `--trials-pass`; any other case by its evaluation.
    pub fn failed_cases(&self) -> usize {
        let trials = self.case_trials();
        let in_trials: std::collections::HashSet<usize> =
            trials.iter().map(|c| c.case_index).collect();
        let single = self
            .evaluations
            .iter()
            .filter(|e| e.verdict() == Verdict::Fail)
            .filter(|e| e.joined_by == "default" || !in_trials.contains(&e.case_index))
            .count();
        single + trials.iter().filter(|c| !c.pass).count() + self.unmatched_cases.len()
    }

    /// 2 if input was rejected or the judge failed (could not evaluate), 1
    /// if a case failed (or matched no trace), else 0.
    pub fn exit_code(&self) -> u8 {
        if self.could_not_evaluate() {
            exit::INPUT
        } else if self.failed_cases() > 0 {
            exit::FAIL
        } else {
            exit::PASS
        }
    }

    /// One line for people.
    pub fn summary_line(&self) -> String {
        let s = &self.stats;
        let mut out = format!(
            "{} input(s), {} request(s), {} span(s), {} trace(s), {} tool call(s)",
            s.inputs, s.requests, s.spans, s.traces, s.tool_calls
        );
        if self.has_cases {
            out.push_str(&format!(
                "; {} evaluation(s): {} passed, {} failed",
                self.evaluations.len(),
                self.passed(),
                self.count(Verdict::Fail)
            ));
            if self.judge_errors() > 0 {
                out.push_str(&format!(
                    ", {} with judge errors (not evaluated, exit 2)",
                    self.judge_errors()
                ));
            }
            if self.not_judged() > 0 {
                out.push_str(&format!(", {} not judged (dry run)", self.not_judged()));
            }
            if !self.unmatched_cases.is_empty() {
                out.push_str(&format!(
                    "; {} case(s) matched no trace",
                    self.unmatched_cases.len()
                ));
            }
            if !self.unmatched_traces.is_empty() {
                out.push_str(&format!(
                    "; {} trace(s) matched no case",
                    self.unmatched_traces.len()
                ));
            }
            let trials = self.case_trials();
            if !trials.is_empty() {
                let count = |s: Stability| trials.iter().filter(|c| c.verdict == s).count();
                out.push_str(&format!(
                    "; {} case(s) of several trials: {} failed (--trials-pass {}), {} flaky",
                    trials.len(),
                    trials.iter().filter(|c| !c.pass).count(),
                    self.trials_pass,
                    count(Stability::Flaky)
                ));
            }
        }
        if s.duplicate_spans > 0 {
            out.push_str(&format!(
                "; {} duplicate span(s) dropped",
                s.duplicate_spans
            ));
        }
        out.push_str(&s.logs_summary());
        if !self.rejected.is_empty() {
            out.push_str(&format!(
                "; {} input problem(s) rejected",
                self.rejected.len()
            ));
        }
        let warnings = self.warnings().count();
        if warnings > 0 {
            out.push_str(&format!("; {warnings} warning(s)"));
        }
        if let Some(hint) = &self.hint {
            out.push_str(&format!("; {hint}"));
        }
        if let Some(j) = &self.judge {
            out.push_str(&format!(
                "; judge: {} request(s), {} retried, {} cached, {} deduplicated, {} failed, {} prompt + {} completion tokens",
                j.requests, j.retries, j.cache_hits, j.deduplicated, j.errors, j.prompt_tokens, j.completion_tokens
            ));
            for (model, m) in &j.models {
                if let Some(cost) = m.cost {
                    out.push_str(&format!(" ({model}: cost {cost:.4})"));
                }
            }
        }
        out
    }
}

fn outcome_json(r: &MetricResult) -> Value {
    let mut v = json!({
        "score": r.outcome.score,
        "pass": r.passed(),
        "threshold": r.threshold,
        "reason": r.outcome.reason,
        "error": r.outcome.error,
    });
    // No verdict: neither a pass nor a failure.
    if let Some(u) = r.outcome.unjudged {
        v["pass"] = Value::Null;
        v["unjudged"] = json!(u);
    }
    // A judged metric's tokens and cache use.
    if let Some(j) = r.outcome.details.as_ref().and_then(|d| d.get("judge")) {
        v["judge"] = j.clone();
    }
    v
}

/// The JSONL row of one evaluation (`"type": "evaluation"`), without its
/// `tools_called` (see [`push_row_with_calls`]).
pub fn evaluation_row(e: &Evaluation) -> Value {
    let mut row = json!({
        "type": "evaluation",
        "trace_id": e.trace_id.to_string(),
        "case": e.case_id,
        "joined_by": e.joined_by,
        "pass": e.passed(),
    });
    let obj = row.as_object_mut().expect("object literal");
    match e.verdict() {
        Verdict::JudgeError => {
            obj.insert("pass".into(), Value::Null);
            obj.insert("unjudged".into(), json!(Unjudged::JudgeError));
        }
        Verdict::NotJudged => {
            obj.insert("pass".into(), Value::Null);
            obj.insert("unjudged".into(), json!(Unjudged::NotJudged));
        }
        Verdict::Pass | Verdict::Fail => {}
    }
    if let Some(s) = &e.session {
        obj.insert(
            "session".into(),
            json!({
                "id": s.id,
                "trace_ids": s.trace_ids.iter().map(ToString::to_string).collect::<Vec<_>>(),
            }),
        );
    }
    if let Some(h) = e.headline() {
        obj.insert("metric".into(), json!(h.metric));
        obj.insert("score".into(), json!(h.outcome.score));
        obj.insert("threshold".into(), json!(h.threshold));
        // The native metric's components sit at the top level.
        if let Some(Value::Object(d)) = &h.outcome.details {
            for (k, v) in d {
                obj.insert(k.clone(), v.clone());
            }
        }
        obj.insert("explanation".into(), json!(h.outcome.reason));
        if let Some(err) = &h.outcome.error {
            obj.insert("error".into(), json!(err));
        }
    }
    if !e.warnings.is_empty() {
        obj.insert("warnings".into(), json!(&e.warnings[..]));
    }
    obj.insert(
        "expected_tools".into(),
        serde_json::to_value(&e.expected[..]).unwrap_or(Value::Null),
    );
    let metrics: serde_json::Map<String, Value> = e
        .results
        .iter()
        .map(|r| (r.metric.clone(), outcome_json(r)))
        .collect();
    obj.insert("metrics".into(), Value::Object(metrics));
    row
}

/// The JSONL row of a case of several trials (`"type": "case"`).
pub fn case_row(c: &CaseTrials, rule: TrialsPass) -> Value {
    json!({
        "type": "case",
        "case": c.case_id,
        "pass": c.pass,
        "trials_pass": rule.to_string(),
        "trials": c.trials,
        "passes": c.passes,
        "pass_rate": c.pass_rate(),
        "pass_at_k": c.pass_at_k,
        "pass_all_k": c.pass_all_k,
        "verdict": c.verdict.code(),
    })
}

/// The JSONL row of a case that matched no trace (it fails).
pub fn unmatched_case_row(case: &UnmatchedCase) -> Value {
    let expected = case.expected();
    json!({
        "type": "unmatched_case",
        "trace_id": null,
        "case": case.id(),
        "pass": false,
        "joined_by": case.joined_by(),
        "looked_for": case.looked_for(),
        "expected_tools": &expected[..],
        "explanation": case.explanation_of(&expected),
    })
}

/// The JSONL row of a trace that no case matched (`"type": "unmatched_trace"`),
/// without its `tools_called` (see [`push_row_with_calls`]).
pub fn unmatched_trace_row(t: &UnmatchedTrace) -> Value {
    let mut row = json!({
        "type": "unmatched_trace",
        "trace_id": t.trace_id.to_string(),
        "case": null,
        "spans": t.spans,
    });
    if !t.warnings.is_empty() {
        row["warnings"] = json!(&t.warnings[..]);
    }
    row
}

const TOOLS_CALLED: &str = "tools_called";

/// Appends one JSONL line: `row` (an object) with `calls` serialized straight
/// into it as `tools_called`. The calls carry arguments and results (often
/// kilobytes of JSON each): turning them into a `Value` first would copy all
/// of it, and that copy costs as much as extraction itself.
pub fn push_row_with_calls(out: &mut Vec<u8>, row: &Value, calls: &[ToolCall]) {
    let start = out.len();
    // Writing to a Vec cannot fail.
    let _ = serde_json::to_writer(&mut *out, row);
    if out.len() < start + 2 || out.last() != Some(&b'}') {
        // Not an object: written as is.
        out.push(b'\n');
        return;
    }
    out.pop();
    if out.len() > start + 1 {
        out.push(b',');
    }
    let _ = serde_json::to_writer(&mut *out, TOOLS_CALLED);
    out.push(b':');
    push_calls(out, calls);
    out.extend_from_slice(b"}\n");
}

/// Appends `calls` as a JSON array, each as serde_json writes a
/// [`ToolCall`] ([`write_call`]).
fn push_calls(out: &mut Vec<u8>, calls: &[ToolCall]) {
    out.push(b'[');
    for (i, c) in calls.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        write_call(out, c);
    }
    out.push(b']');
}

/// Writes `c` as serde_json writes it, but for its JSON text: arguments
/// kept as text ([`ToolCall::args_json`]) go in `args`' place, as if they
/// had been parsed into `args`, and a result's JSON text is copied in as
/// it is, with no second check (serde_json would check it again).
pub(crate) fn write_call(out: &mut Vec<u8>, c: &ToolCall) {
    // Every field named: a field added to `ToolCall` does not compile here
    // until it is written (or said to be skipped, as serde skips it).
    let ToolCall {
        name,
        args,
        result,
        status,
        error_message,
        error_type,
        span_id,
        start_time_unix_nano,
        depth,
        agent,
        retriever,
        convention,
        from,
        span_name,
        mcp_server,
        within: _,
        end_time_unix_nano: _,
        call_id: _,
    } = c;
    out.extend_from_slice(b"{\"name\":");
    json(out, name);
    out.extend_from_slice(b",\"args\":");
    args.write_json(out);
    match result {
        Some(CallResult::Json(text)) => {
            out.extend_from_slice(b",\"result\":");
            out.extend_from_slice(text.as_bytes());
        }
        Some(CallResult::Value(v)) => {
            out.extend_from_slice(b",\"result\":");
            json(out, v);
        }
        None => {}
    }
    out.extend_from_slice(b",\"status\":");
    json(out, status);
    if let Some(m) = error_message {
        out.extend_from_slice(b",\"error_message\":");
        json(out, m);
    }
    if let Some(t) = error_type {
        out.extend_from_slice(b",\"error_type\":");
        json(out, t);
    }
    // Writing to a Vec cannot fail.
    let _ = write!(
        out,
        ",\"span_id\":\"{span_id}\",\"start_time_unix_nano\":{start_time_unix_nano},\"depth\":{depth}"
    );
    if let Some(a) = agent {
        out.extend_from_slice(b",\"agent\":");
        json(out, a);
    }
    if *retriever {
        out.extend_from_slice(b",\"retriever\":true");
    }
    out.extend_from_slice(b",\"convention\":");
    json(out, convention);
    if let Some(f) = from {
        out.extend_from_slice(b",\"from\":");
        json(out, f);
    }
    if let Some(n) = span_name {
        out.extend_from_slice(b",\"span_name\":");
        json(out, n);
    }
    if let Some(m) = mcp_server {
        out.extend_from_slice(b",\"mcp_server\":");
        json(out, m);
    }
    out.push(b'}');
}

/// `v` as serde_json writes it.
fn json<T: Serialize + ?Sized>(out: &mut Vec<u8>, v: &T) {
    // Writing to a Vec cannot fail.
    let _ = serde_json::to_writer(out, v);
}

/// Appends one JSONL line.
pub fn push_row(out: &mut Vec<u8>, row: &Value) {
    // Writing to a Vec cannot fail.
    let _ = serde_json::to_writer(&mut *out, row);
    out.push(b'\n');
}

/// The JSONL row of an input problem (`"type": "rejected"`).
pub fn rejected_row(r: &Rejected) -> Value {
    json!({
        "type": "rejected",
        "source": r.source,
        "position": r.position.to_string().trim_start_matches([':', ' ']),
        "reason": r.reason,
    })
}

/// One row of the JSONL report: the object, and the calls that go in its
/// `tools_called` (written straight from the calls, see
/// [`push_row_with_calls`]).
#[derive(Debug)]
pub struct Row<'a> {
    pub value: Value,
    pub calls: Option<&'a [ToolCall]>,
}

/// The report's rows in the JSONL report's order: evaluations, cases of
/// several trials, unmatched traces, unmatched cases, rejected inputs, the
/// summary. A program that embeds the library reads these rather than
/// parsing [`write_jsonl`]'s text.
pub fn rows(report: &Report) -> impl Iterator<Item = Row<'_>> + '_ {
    let plain = |value| Row { value, calls: None };
    let evaluations = report.evaluations.iter().map(|e| Row {
        value: evaluation_row(e),
        calls: Some(&e.tools_called[..]),
    });
    let cases = report
        .case_trials()
        .into_iter()
        .map(move |c| plain(case_row(&c, report.trials_pass)));
    let unmatched_traces = report.unmatched_traces.iter().map(|t| Row {
        value: unmatched_trace_row(t),
        calls: Some(&t.tools_called[..]),
    });
    let unmatched_cases = report
        .unmatched_cases
        .iter()
        .map(move |c| plain(unmatched_case_row(c)));
    let rejected = report.rejected.iter().map(move |r| plain(rejected_row(r)));
    evaluations
        .chain(cases)
        .chain(unmatched_traces)
        .chain(unmatched_cases)
        .chain(rejected)
        // Last: the counts of everything above.
        .chain(std::iter::once_with(move || plain(summary_row(report))))
}

/// The JSONL row of the run's counts (`"type": "summary"`).
pub fn summary_row(report: &Report) -> Value {
    let mut row = json!({
        "type": "summary",
        "stats": report.stats,
        "evaluations": report.evaluations.len(),
        "passed": report.passed(),
        "failed": report.failed(),
        "unmatched_traces": report.unmatched_traces.len(),
        "unmatched_cases": report.unmatched_cases.len(),
        "rejected": report.rejected.len(),
        "exit_code": report.exit_code(),
        "tools": report.tools,
        "tokens": report.tokens,
    });
    if let Some(j) = &report.judge {
        row["judge"] = json!(j);
        row["judge_errors"] = json!(report.judge_errors());
        row["not_judged"] = json!(report.not_judged());
    }
    row
}

/// One JSON object per evaluation (then unmatched traces, unmatched cases,
/// rejected inputs and a summary), each with a `type` field: [`rows`] as
/// text.
pub fn write_jsonl(report: &Report, out: &mut dyn Write) -> io::Result<()> {
    let mut buf = Vec::new();
    for row in rows(report) {
        buf.clear();
        match row.calls {
            Some(calls) => push_row_with_calls(&mut buf, &row.value, calls),
            None => push_row(&mut buf, &row.value),
        }
        out.write_all(&buf)?;
    }
    Ok(())
}

/// Shortens text for one table cell, with control characters escaped.
pub(crate) fn ellipsize(s: &str, max: usize) -> String {
    let s = printable(s);
    if s.chars().count() <= max {
        return s.into_owned();
    }
    let mut out: String = s.chars().take(max.saturating_sub(1)).collect();
    out.push('…');
    out
}

/// Whether `c` must not reach a terminal as is: control characters (escape
/// sequences, line breaks that would forge table lines), the Unicode line
/// and paragraph separators, and the marks that reorder text on screen.
fn unprintable(c: char) -> bool {
    c.is_control()
        || matches!(c, '\u{200b}'..='\u{200f}' | '\u{2028}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

/// Text from a trace or a fixture (tool, agent, case names...), made safe
/// for a terminal: control and reordering characters are shown escaped
/// (`\n`, `\u{1b}`). Machine formats (JSON, JUnit) keep the text exact.
pub fn printable(s: &str) -> std::borrow::Cow<'_, str> {
    if !s.chars().any(unprintable) {
        return std::borrow::Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        match c {
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if unprintable(c) => out.push_str(&format!("\\u{{{:x}}}", c as u32)),
            c => out.push(c),
        }
    }
    std::borrow::Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::extract::CallArgs;
    use std::sync::Arc;

    /// Rows of the traces of `requests`, extracted with arguments as
    /// values or as JSON text.
    fn rows_of(
        requests: Vec<opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest>,
        args_text: bool,
    ) -> (Vec<u8>, usize) {
        let mut asm = crate::assemble::Assembler::new();
        for r in requests {
            asm.add(r.into());
        }
        let x = crate::extract::Extractor::default().with_args_text(args_text);
        let (mut out, mut as_text) = (Vec::new(), 0);
        for t in asm.finish() {
            let calls: Arc<[ToolCall]> = x.extract(&t).into();
            as_text += calls
                .iter()
                .filter(|c| matches!(c.args, CallArgs::Text(_)))
                .count();
            let trace = UnmatchedTrace {
                trace_id: t.id,
                spans: t.spans.len(),
                tools_called: calls,
                warnings: Arc::new([]),
            };
            push_row_with_calls(&mut out, &unmatched_trace_row(&trace), &trace.tools_called);
        }
        (out, as_text)
    }

    #[test]
    fn arguments_kept_as_text_write_the_same_rows() {
        use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
        use opentelemetry_proto::tonic::common::v1::{any_value, AnyValue, KeyValue};
        use opentelemetry_proto::tonic::trace::v1::{ResourceSpans, ScopeSpans, Span};
        let mut requests = crate::fake::agent_traces(20, 4, 2, 5).requests;
        let kv = |k: &str, v: &str| KeyValue {
            key: k.into(),
            value: Some(AnyValue {
                value: Some(any_value::Value::StringValue(v.into())),
            }),
            ..Default::default()
        };
        // Arguments that are not in serde_json's form, or not JSON, or
        // positional (named from the request), or nested deep.
        let args = [
            r#" { "b" : 1.50, "a" : "\u00e9\/", "a" : [1e3, -0] } "#.to_string(),
            r#"{"args": [1, 2]}"#.into(),
            r#"["positional"]"#.into(),
            "not json {".into(),
            r#""just a string""#.into(),
            format!("{}{}", "[".repeat(110), "]".repeat(110)),
            format!("{{\"k\":{}{}}}", "[".repeat(130), "]".repeat(130)),
        ];
        let spans = args
            .iter()
            .enumerate()
            .map(|(i, a)| Span {
                trace_id: vec![9; 16],
                span_id: vec![1, 2, 3, 4, 5, 6, 7, i as u8 + 1],
                name: "execute_tool t".into(),
                start_time_unix_nano: 1000 + i as u64,
                end_time_unix_nano: 2000,
                attributes: vec![
                    kv("gen_ai.operation.name", "execute_tool"),
                    kv("gen_ai.tool.name", "t"),
                    kv("gen_ai.tool.call.arguments", a),
                ],
                ..Default::default()
            })
            .collect();
        requests.push(ExportTraceServiceRequest {
            resource_spans: vec![ResourceSpans {
                scope_spans: vec![ScopeSpans {
                    spans,
                    ..Default::default()
                }],
                ..Default::default()
            }],
        });
        let (parsed, none) = rows_of(requests.clone(), false);
        let (text, as_text) = rows_of(requests, true);
        assert!(parsed.len() > 10_000);
        // The fake traces' 80 calls and the first above (the others may
        // be named from the request, or are not JSON, or nest deep).
        assert_eq!((none, as_text), (0, 81));
        assert_eq!(
            String::from_utf8(text).unwrap(),
            String::from_utf8(parsed).unwrap()
        );
    }

    #[test]
    fn calls_are_written_as_serde_json_writes_them() {
        use crate::assemble::SpanId;
        use crate::extract::{AgentRef, CallStatus};
        let base = ToolCall {
            name: "get \"weather\"\u{1}".into(),
            args: CallArgs::Value(json!({"b": 1, "a": [1.5, "é\n"]})),
            result: None,
            status: CallStatus::Ok,
            error_message: None,
            error_type: None,
            span_id: SpanId([0xab, 0, 1, 2, 3, 4, 5, 0xff]),
            start_time_unix_nano: 1_700_000_000_000_000_001,
            depth: 2,
            agent: None,
            retriever: false,
            convention: "otel-genai".into(),
            from: None,
            span_name: None,
            mcp_server: None,
            within: Some(SpanId([1; 8])),
            end_time_unix_nano: 5,
            call_id: None,
        };
        let mut calls = vec![base.clone()];
        let mut c = base.clone();
        c.args = CallArgs::None;
        c.result = Some(CallResult::Json(r#"{"z": [1, 2.50], "a":"\u00e9"}"#.into()));
        c.status = CallStatus::Error;
        c.error_message = Some("boom".into());
        c.error_type = Some("ValueError".into());
        c.agent = Some(AgentRef {
            span_id: SpanId([2; 8]),
            name: "planner".into(),
        });
        c.retriever = true;
        c.from = Some("conversation");
        c.span_name = Some("Dynamic\"Tool".into());
        calls.push(c);
        let mut c = base.clone();
        c.result = Some(CallResult::Value(json!("plain text")));
        calls.push(c);
        for c in &calls {
            let mut ours = Vec::new();
            write_call(&mut ours, c);
            let theirs = serde_json::to_vec(c).unwrap();
            assert_eq!(String::from_utf8(ours), String::from_utf8(theirs));
        }
        // Arguments kept as text: as if parsed into `args`.
        let mut text = base.clone();
        text.args = CallArgs::Text(r#"{"a":[1.5,"é\n"],"b":1}"#.into());
        let (mut ours, theirs) = (Vec::new(), serde_json::to_vec(&base).unwrap());
        write_call(&mut ours, &text);
        assert_eq!(String::from_utf8(ours), String::from_utf8(theirs.clone()));
        // The derived form writes them the same way.
        assert_eq!(serde_json::to_vec(&text).unwrap(), theirs);
    }

    #[test]
    fn names_cannot_forge_terminal_lines() {
        assert_eq!(printable("get_weather"), "get_weather");
        assert_eq!(
            printable("x\n\u{1b}[32mFORGED  pass\u{202e}"),
            "x\\n\\u{1b}[32mFORGED  pass\\u{202e}"
        );
        assert_eq!(ellipsize("a\tb", 10), "a\\tb");
        assert_eq!(printable("a\u{2028}b\u{2029}"), "a\\u{2028}b\\u{2029}");
    }
}
