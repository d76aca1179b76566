//! `--html FILE`: the HTML report of `replay --format html`, written once at
//! shutdown from the latest result of each trace/case (a re-score replaces
//! the earlier one). A long run keeps only the newest [`MAX_RESULTS`]
//! results (the page says how many were left out); serve keeps no span
//! timing, so each case's timeline shows its tool calls.

use std::collections::{BTreeMap, HashMap};
use std::fs::File;
use std::io::{self, BufWriter};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, PoisonError};

use super::{Batch, Output, ServeSummary, Sink};
use crate::assemble::TraceId;
use crate::evaluate::{Evaluation, UnmatchedTrace};
use crate::ingest::Rejected;
use crate::report::{self, Report, Stats, ToolStatsBuilder};
use crate::serve::ServeError;

/// Results held for the page: bounded memory on a server that runs for days.
pub const MAX_RESULTS: usize = 10_000;

/// What a result is the latest of.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum Key {
    /// A trace (or a session's first trace) and a case.
    Case(TraceId, Option<String>, usize),
    Unmatched(TraceId),
}

enum Kept {
    Eval(Evaluation),
    Unmatched(UnmatchedTrace),
}

#[derive(Default)]
struct Held {
    /// By arrival; the sequence number orders them.
    by_seq: BTreeMap<u64, (Key, Kept)>,
    seq_of: HashMap<Key, u64>,
    next: u64,
    /// Results left out past [`MAX_RESULTS`].
    dropped: u64,
}

impl Held {
    fn put(&mut self, key: Key, kept: Kept) {
        if let Some(old) = self.seq_of.remove(&key) {
            self.by_seq.remove(&old);
        }
        self.next += 1;
        self.seq_of.insert(key.clone(), self.next);
        self.by_seq.insert(self.next, (key, kept));
        while self.by_seq.len() > MAX_RESULTS {
            if let Some((_, (k, _))) = self.by_seq.pop_first() {
                self.seq_of.remove(&k);
                self.dropped += 1;
            }
        }
    }

    fn forget(&mut self, key: &Key) {
        if let Some(old) = self.seq_of.remove(key) {
            self.by_seq.remove(&old);
        }
    }
}

pub struct HtmlSink {
    path: PathBuf,
    rejected: Vec<Rejected>,
    held: Mutex<Held>,
}

impl HtmlSink {
    /// Checks now that `path` can be written, so a bad path fails at start,
    /// not after hours of scoring.
    pub fn open(path: &Path, rejected: &[Rejected]) -> Result<HtmlSink, ServeError> {
        // Until shutdown, the file says when it will be written.
        std::fs::write(
            path,
            "<!DOCTYPE html><html lang=\"en\"><meta charset=\"utf-8\"><title>toolscore report</title>\
             <p>toolscore serve writes this report when it shuts down.</p></html>\n",
        )
        .map_err(|source| ServeError::Output {
            path: path.display().to_string(),
            source,
        })?;
        Ok(HtmlSink {
            path: path.to_path_buf(),
            rejected: rejected.to_vec(),
            held: Mutex::new(Held::default()),
        })
    }

    fn report(&self, summary: &ServeSummary) -> Report {
        let held = std::mem::take(&mut *self.held.lock().unwrap_or_else(PoisonError::into_inner));
        let mut report = Report {
            unmatched_cases: summary.unmatched_cases.clone(),
            rejected: self.rejected.clone(),
            metrics: summary.metrics.iter().map(|m| m.metric.clone()).collect(),
            has_cases: summary.has_cases,
            judge: summary.judge.clone(),
            stats: Stats {
                requests: summary.stats.requests as usize,
                spans: summary.stats.spans as usize,
                duplicate_spans: summary.stats.duplicate_spans as usize,
                traces: (summary.stats.traces_scored - summary.stats.rescored) as usize,
                ..Stats::default()
            },
            ..Report::default()
        };
        let mut tools = ToolStatsBuilder::default();
        for (_, (_, kept)) in held.by_seq {
            match kept {
                Kept::Eval(e) => {
                    tools.add(&e.tools_called, (None, None));
                    report.stats.tool_calls += e.tools_called.len();
                    report.evaluations.push(e);
                }
                Kept::Unmatched(t) => {
                    tools.add(&t.tools_called, (None, None));
                    report.stats.tool_calls += t.tools_called.len();
                    report.unmatched_traces.push(t);
                }
            }
        }
        (report.tools, _) = tools.finish();
        if held.dropped > 0 {
            report.hint = Some(format!(
                "this page shows the latest {MAX_RESULTS} results; {} earlier ones are left out",
                held.dropped
            ));
        }
        report
    }
}

impl Sink for HtmlSink {
    fn name(&self) -> &'static str {
        "html"
    }

    fn record(&self, batch: &Batch) -> io::Result<()> {
        let mut held = self.held.lock().unwrap_or_else(PoisonError::into_inner);
        for o in &batch.outputs {
            match o {
                Output::Evaluation { eval, .. } => {
                    // A trace that matched no case at first may match later.
                    held.forget(&Key::Unmatched(eval.trace_id));
                    let session = eval.session.as_ref().map(|s| s.id.clone());
                    let key = Key::Case(eval.trace_id, session, eval.case_index);
                    held.put(key, Kept::Eval(eval.clone()));
                }
                Output::Unmatched { trace, .. } => {
                    held.put(
                        Key::Unmatched(trace.trace_id),
                        Kept::Unmatched(trace.clone()),
                    );
                }
            }
        }
        Ok(())
    }

    fn finish(&self, summary: &ServeSummary) -> io::Result<()> {
        let report = self.report(summary);
        // Written beside and renamed: a reader never sees half a page.
        let tmp = self.path.with_extension("html.tmp");
        let mut out = BufWriter::new(File::create(&tmp)?);
        report::write_html(&report, None, &mut out)?;
        out.into_inner().map_err(|e| e.into_error())?.sync_all()?;
        std::fs::rename(&tmp, &self.path)
    }
}
