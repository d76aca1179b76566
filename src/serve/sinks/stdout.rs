//! Lines on stdout for people watching: one per evaluation or unmatched
//! trace, and a per-metric table at shutdown (not with `--quiet`).

use std::io::{self, Write};

use super::{Batch, Output, ServeSummary, Sink};
use crate::evaluate::Evaluation;
use crate::report::ellipsize;

pub struct StdoutSink;

impl Sink for StdoutSink {
    fn reads_call_args(&self) -> bool {
        false
    }

    fn name(&self) -> &'static str {
        "stdout"
    }

    fn record(&self, batch: &Batch) -> io::Result<()> {
        let mut text = String::new();
        for o in &batch.outputs {
            match o {
                Output::Evaluation { eval, revision, .. } => {
                    text.push_str(&evaluation_line(eval, *revision))
                }
                Output::Unmatched { trace, revision } => {
                    let tools: Vec<&str> =
                        trace.tools_called.iter().map(|c| c.name.as_str()).collect();
                    text.push_str(&format!(
                        "----  {}  r{}  (no case)  {} tool call(s): {}\n",
                        trace.trace_id,
                        revision,
                        tools.len(),
                        ellipsize(&tools.join(", "), 100)
                    ));
                }
            }
        }
        print(&text)
    }

    fn finish(&self, summary: &ServeSummary) -> io::Result<()> {
        print(&summary_text(summary))
    }
}

fn print(text: &str) -> io::Result<()> {
    if text.is_empty() {
        return Ok(());
    }
    let mut out = io::stdout().lock();
    out.write_all(text.as_bytes())?;
    out.flush()
}

/// One stdout line: verdict, trace, revision, case, every metric's score, why.
fn evaluation_line(e: &Evaluation, revision: u32) -> String {
    let scores: Vec<String> = e
        .results
        .iter()
        .map(|r| match (r.outcome.score, &r.outcome.error) {
            (_, Some(_)) => format!("{}=error", r.metric),
            (Some(s), None) => format!("{}={s:.3}", r.metric),
            (None, None) => format!("{}=-", r.metric),
        })
        .collect();
    let why = e
        .headline()
        .map(|h| {
            h.outcome
                .error
                .clone()
                .unwrap_or_else(|| h.outcome.reason.clone())
        })
        .unwrap_or_default();
    let subject = match &e.session {
        Some(s) => format!(
            "session {} ({} traces)",
            ellipsize(&s.id, 32),
            s.trace_ids.len()
        ),
        None => e.trace_id.to_string(),
    };
    format!(
        "{}  {}  r{}  {}  {}  {}\n",
        e.verdict().label(),
        subject,
        revision,
        ellipsize(&e.case_id, 32),
        scores.join(" "),
        ellipsize(&why, 100)
    )
}

/// The summary's words on log records (empty when none came).
fn logs_text(st: &crate::serve::telemetry::StatsSnapshot) -> String {
    let mut out = String::new();
    let parts = [
        (st.log_records, "log record(s) taken as span events"),
        (
            st.log_records_unjoined,
            "of them naming a span that never came",
        ),
        (
            st.log_records_without_span,
            "log record(s) without span context ignored",
        ),
        (
            st.log_records_late,
            "log record(s) late (their trace already scored)",
        ),
    ];
    for (n, what) in parts.into_iter().filter(|(n, _)| *n > 0) {
        out.push_str(&format!("; {n} {what}"));
    }
    out
}

fn summary_text(s: &ServeSummary) -> String {
    let st = &s.stats;
    let mut out = format!(
        "\n{} span(s), {} trace(s) scored ({} re-score(s)), {} evaluation(s): {} passed, {} failed; {} trace(s) matched no case",
        st.spans, st.traces_scored, st.rescored, s.evaluations, s.passed, s.failed, st.unmatched_traces
    );
    if !s.unmatched_cases.is_empty() {
        out.push_str(&format!(
            "; {} case(s) matched no trace",
            s.unmatched_cases.len()
        ));
    }
    out.push_str(&logs_text(st));
    out.push('\n');
    if !s.metrics.is_empty() && s.evaluations > 0 {
        let w = s
            .metrics
            .iter()
            .map(|m| m.metric.len())
            .max()
            .unwrap_or(6)
            .max(6);
        out.push_str(&format!(
            "{:w$}  {:>5}  {:>6}  {:>6}  {:>6}  {:>10}\n",
            "METRIC", "EVALS", "PASSED", "FAILED", "ERRORS", "MEAN SCORE"
        ));
        for m in &s.metrics {
            let mean = m.mean_score.map_or("-".to_string(), |v| format!("{v:.3}"));
            out.push_str(&format!(
                "{:w$}  {:>5}  {:>6}  {:>6}  {:>6}  {:>10}\n",
                m.metric,
                m.evaluations,
                m.passed,
                m.evaluations.saturating_sub(m.passed + m.not_judged),
                m.errors,
                mean
            ));
        }
    }
    out
}
