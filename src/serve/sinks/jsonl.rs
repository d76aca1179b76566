//! The JSONL results file (`--output`): one row per evaluation or unmatched
//! trace, appended and flushed after every batch; rejected fixture lines
//! first, unmatched cases and a summary row last.

use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::path::Path;
use std::sync::{Arc, Mutex, PoisonError};

use tracing::{error, info};

use serde_json::{json, Value};

use super::{Batch, Output, ServeSummary, Sink};
use crate::ingest::Rejected;
use crate::report::{self, push_row, push_row_with_calls};
use crate::serve::telemetry::ServeStats;
use crate::serve::ServeError;

/// Where the rows go: the results file (a trait so tests can make it fail).
pub trait RowsFile: Send {
    /// Appends all of `rows`, or fails having written any part of them.
    fn append(&mut self, rows: &[u8]) -> io::Result<()>;
    /// Cuts the file back to `len` bytes (a failed append's partial line).
    fn truncate(&mut self, len: u64) -> io::Result<()>;
    /// The file's length now.
    fn size(&mut self) -> io::Result<u64>;
}

impl RowsFile for File {
    fn append(&mut self, rows: &[u8]) -> io::Result<()> {
        self.write_all(rows)?;
        self.flush()
    }

    fn truncate(&mut self, len: u64) -> io::Result<()> {
        self.set_len(len)
    }

    fn size(&mut self) -> io::Result<u64> {
        Ok(self.metadata()?.len())
    }
}

/// The file and the rows it still owes.
struct State<F> {
    file: F,
    /// Length of the file after its last complete write: the file never
    /// keeps a partial line past it.
    committed: u64,
    /// Rows not yet written (kept while the file fails; acknowledged data
    /// is never dropped while the server runs).
    pending: Vec<u8>,
    /// Why the last write failed, while it fails.
    failing: Option<String>,
    /// A partial line could not be cut off: start the next write on a new
    /// line so it is not merged into it.
    newline_first: bool,
}

/// Appends rows to the results file, flushed after every batch. When a
/// write fails (a full disk), the partial line is cut off, the rows are kept
/// and retried, and `ServeStats::output_failing` makes the receivers refuse
/// new data (503 / UNAVAILABLE, retryable) until the file takes them again.
pub struct JsonlSink<F: RowsFile = File> {
    state: Mutex<State<F>>,
    stats: Arc<ServeStats>,
}

impl JsonlSink<File> {
    /// Opens `path` for appending and writes the rejected fixture lines.
    pub fn open(
        path: &Path,
        rejected: &[Rejected],
        stats: Arc<ServeStats>,
    ) -> Result<JsonlSink<File>, ServeError> {
        let bad = |source| ServeError::Output {
            path: path.display().to_string(),
            source,
        };
        let file = OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .map_err(bad)?;
        let sink = JsonlSink::new(file, stats).map_err(bad)?;
        let mut rows = Vec::new();
        for r in rejected {
            push_row(&mut rows, &report::rejected_row(r));
        }
        sink.write(&rows)
            .map_err(|source| ServeError::Write { source })?;
        Ok(sink)
    }
}

impl<F: RowsFile> JsonlSink<F> {
    pub fn new(mut file: F, stats: Arc<ServeStats>) -> io::Result<Self> {
        let committed = file.size()?;
        Ok(JsonlSink {
            state: Mutex::new(State {
                file,
                committed,
                pending: Vec::new(),
                failing: None,
                newline_first: false,
            }),
            stats,
        })
    }

    /// Writes `rows` after any still pending (kept, copied, if they cannot
    /// be written now).
    fn write(&self, rows: &[u8]) -> io::Result<()> {
        let mut st = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        if st.pending.is_empty() && !st.newline_first {
            // Nothing owed: written straight from the caller's buffer, which
            // the scoring threads reuse (a fresh multi-megabyte buffer per
            // batch cost page faults and regrowth copies).
            return match st.file.append(rows) {
                Ok(()) => {
                    self.appended(&mut st, rows.len());
                    Ok(())
                }
                Err(e) => {
                    st.pending.extend_from_slice(rows);
                    Err(self.failed(&mut st, e))
                }
            };
        }
        st.pending.extend_from_slice(rows);
        self.flush(&mut st)
    }

    fn appended(&self, st: &mut State<F>, bytes: usize) {
        st.committed += bytes as u64;
        st.newline_first = false;
        if st.failing.take().is_some() {
            ServeStats::set(&self.stats.output_failing, 0);
            info!("The results file takes rows again; accepting data.");
        }
    }

    /// After a failed append: cuts off what part of the rows was written,
    /// so the file holds whole lines only, and refuses data until it works.
    fn failed(&self, st: &mut State<F>, e: io::Error) -> io::Error {
        let committed = st.committed;
        st.newline_first = st.file.truncate(committed).is_err();
        if st.failing.replace(e.to_string()).is_none() {
            ServeStats::set(&self.stats.output_failing, 1);
            error!(error = %e, pending_bytes = st.pending.len(), "Cannot write the results file; refusing new data (503 / UNAVAILABLE) and retrying until it takes the rows.");
        }
        e
    }

    fn flush(&self, st: &mut State<F>) -> io::Result<()> {
        if st.pending.is_empty() {
            return Ok(());
        }
        if st.newline_first {
            st.pending.insert(0, b'\n');
        }
        let State { file, pending, .. } = &mut *st;
        match file.append(pending) {
            Ok(()) => {
                let n = st.pending.len();
                st.pending.clear();
                self.appended(st, n);
                Ok(())
            }
            Err(e) => {
                if st.newline_first {
                    st.pending.remove(0);
                }
                Err(self.failed(st, e))
            }
        }
    }
}

impl<F: RowsFile + 'static> Sink for JsonlSink<F> {
    fn name(&self) -> &'static str {
        "jsonl"
    }

    fn shows_call_results(&self) -> bool {
        true
    }

    fn reads_call_args(&self) -> bool {
        false
    }

    fn record(&self, batch: &Batch) -> io::Result<()> {
        // Rows are built here, on the scoring thread, outside the lock, in
        // the thread's buffer (its capacity kept from batch to batch).
        thread_local! {
            static ROWS: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
        }
        /// Larger buffers are not kept for the next batch.
        const KEEP: usize = 32 << 20;
        ROWS.with_borrow_mut(|rows| {
            rows.clear();
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
                        push_row_with_calls(rows, &row, &eval.tools_called);
                    }
                    Output::Unmatched { trace, revision } => {
                        let mut row = report::unmatched_trace_row(trace);
                        row["revision"] = json!(revision);
                        push_row_with_calls(rows, &row, &trace.tools_called);
                    }
                }
            }
            // A failure keeps the rows for the next try: not lost, not an
            // error of this batch.
            let _ = self.write(rows);
            if rows.capacity() > KEEP {
                *rows = Vec::new();
            }
        });
        Ok(())
    }

    fn retry(&self) {
        let mut st = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        if st.failing.is_some() {
            let _ = self.flush(&mut st);
        }
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
                "judge": summary.judge,
                "metrics": metrics,
            }),
        );
        self.write(&rows).inspect_err(|_| {
            // The last try: what is still pending is lost, and counted.
            let st = self.state.lock().unwrap_or_else(PoisonError::into_inner);
            let lost = st.pending.iter().filter(|&&b| b == b'\n').count() as u64;
            ServeStats::add(&self.stats.results_lost, lost);
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A file that fails its next `fail` appends after writing half of them.
    #[derive(Default)]
    struct Flaky {
        data: Arc<Mutex<Vec<u8>>>,
        fail: Arc<std::sync::atomic::AtomicUsize>,
    }

    impl RowsFile for Flaky {
        fn append(&mut self, rows: &[u8]) -> io::Result<()> {
            use std::sync::atomic::Ordering;
            let mut data = self.data.lock().unwrap();
            if self.fail.load(Ordering::Relaxed) > 0 {
                self.fail.fetch_sub(1, Ordering::Relaxed);
                data.extend_from_slice(&rows[..rows.len() / 2]);
                return Err(io::Error::other("No space left on device"));
            }
            data.extend_from_slice(rows);
            Ok(())
        }

        fn truncate(&mut self, len: u64) -> io::Result<()> {
            self.data.lock().unwrap().truncate(len as usize);
            Ok(())
        }

        fn size(&mut self) -> io::Result<u64> {
            Ok(self.data.lock().unwrap().len() as u64)
        }
    }

    #[test]
    fn a_failing_file_keeps_whole_lines_and_every_row() {
        use std::sync::atomic::Ordering;
        let file = Flaky::default();
        let (data, fail) = (Arc::clone(&file.data), Arc::clone(&file.fail));
        let stats = Arc::new(ServeStats::default());
        let sink = JsonlSink::new(file, Arc::clone(&stats)).unwrap();
        sink.write(b"{\"n\":1}\n").unwrap();
        fail.store(2, Ordering::Relaxed);
        assert!(sink.write(b"{\"n\":2}\n{\"n\":3}\n").is_err());
        assert_eq!(stats.output_failing.load(Ordering::Relaxed), 1);
        // The partial line was cut off.
        assert_eq!(&*data.lock().unwrap(), b"{\"n\":1}\n");
        sink.retry();
        assert_eq!(stats.output_failing.load(Ordering::Relaxed), 1);
        // Space is back: everything owed arrives, in order, whole.
        sink.write(b"{\"n\":4}\n").unwrap();
        assert_eq!(stats.output_failing.load(Ordering::Relaxed), 0);
        assert_eq!(
            String::from_utf8(data.lock().unwrap().clone()).unwrap(),
            "{\"n\":1}\n{\"n\":2}\n{\"n\":3}\n{\"n\":4}\n"
        );
    }
}
