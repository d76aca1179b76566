//! The JSONL results file (`--output`): one row per evaluation or unmatched
//! trace, appended and flushed after every batch; rejected fixture lines
//! first, unmatched cases and a summary row last.

use std::fs::{File, OpenOptions};
use std::io::{self, BufWriter, Write};
use std::path::Path;
use std::sync::{Mutex, PoisonError};

use serde_json::{json, Value};

use super::{Batch, Output, ServeSummary, Sink};
use crate::ingest::Rejected;
use crate::report::{self, push_row, push_row_with_calls};
use crate::serve::ServeError;

pub struct JsonlSink {
    file: Mutex<BufWriter<File>>,
}

impl JsonlSink {
    /// Opens `path` for appending and writes the rejected fixture lines.
    pub fn open(path: &Path, rejected: &[Rejected]) -> Result<JsonlSink, ServeError> {
        let file = OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .map_err(|source| ServeError::Output {
                path: path.display().to_string(),
                source,
            })?;
        let sink = JsonlSink {
            file: Mutex::new(BufWriter::new(file)),
        };
        let mut rows = Vec::new();
        for r in rejected {
            push_row(&mut rows, &report::rejected_row(r));
        }
        sink.write(&rows)
            .map_err(|source| ServeError::Write { source })?;
        Ok(sink)
    }

    fn write(&self, rows: &[u8]) -> io::Result<()> {
        if rows.is_empty() {
            return Ok(());
        }
        let mut f = self.file.lock().unwrap_or_else(PoisonError::into_inner);
        f.write_all(rows)?;
        f.flush()
    }
}

impl Sink for JsonlSink {
    fn name(&self) -> &'static str {
        "jsonl"
    }

    fn shows_call_results(&self) -> bool {
        true
    }

    fn record(&self, batch: &Batch) -> io::Result<()> {
        // Rows are built here, on the scoring thread, outside the lock.
        let mut rows = Vec::new();
        for o in &batch.outputs {
            match o {
                Output::Evaluation {
                    eval,
                    revision,
                    spans,
                    defaulted,
                    ..
                } => {
                    let mut row = report::evaluation_row(eval);
                    row["revision"] = json!(revision);
                    if let Some(spans) = spans {
                        row["spans"] = json!(spans);
                    }
                    if *defaulted {
                        row["default_expectation"] = json!(true);
                    }
                    push_row_with_calls(&mut rows, &row, &eval.tools_called);
                }
                Output::Unmatched { trace, revision } => {
                    let mut row = report::unmatched_trace_row(trace);
                    row["revision"] = json!(revision);
                    push_row_with_calls(&mut rows, &row, &trace.tools_called);
                }
            }
        }
        self.write(&rows)
    }

    fn finish(&self, summary: &ServeSummary) -> io::Result<()> {
        let mut rows = Vec::new();
        for c in &summary.unmatched_cases {
            push_row(&mut rows, &report::unmatched_case_row(c));
        }
        let metrics: serde_json::Map<String, Value> = summary
            .metrics
            .iter()
            .map(|m| (m.metric.clone(), json!(m)))
            .collect();
        push_row(
            &mut rows,
            &json!({
                "type": "summary",
                "stats": summary.stats,
                "evaluations": summary.evaluations,
                "passed": summary.passed,
                "failed": summary.failed,
                "unmatched_traces": summary.stats.unmatched_traces,
                "unmatched_cases": summary.unmatched_cases.len(),
                "has_cases": summary.has_cases,
                "metrics": metrics,
            }),
        );
        self.write(&rows)
    }
}
