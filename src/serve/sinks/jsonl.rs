//! The JSONL results file (`--output`): one row per evaluation or unmatched
//! trace, appended and flushed after every batch; rejected fixture lines
//! first, unmatched cases and a summary row last.
//!
//! Across crashes and rotation: each batch is one `write` to a file opened
//! with O_APPEND, so a reader sees whole rows, but a process killed in the
//! middle of that write (SIGKILL, the OOM killer) can leave the last row cut
//! short; the next start cuts such a fragment off into a side file and logs
//! it, so the file only ever holds whole rows.
//! SIGHUP reopens the file at its path ([`Reopen`]), as logrotate expects.
//!
//! When the run is saved to the run store, every write is also queued for
//! the store ([`super::store::Feed`]) under the same lock, so the store gets
//! the file's bytes in the file's order; without `--output` the sink writes
//! no file ([`NoFile`]) and only feeds the store.

use std::fs::{File, OpenOptions};
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

use tracing::{error, info, warn};

use serde_json::{json, Value};

use super::store::{Feed, Results};
use super::{Batch, Output, ServeSummary, Sink};
use crate::ingest::Rejected;
use crate::report::baseline;
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

/// No file: serve without `--output` that saves its run keeps the rows for
/// the store only.
pub struct NoFile;

impl RowsFile for NoFile {
    fn append(&mut self, _rows: &[u8]) -> io::Result<()> {
        Ok(())
    }

    fn truncate(&mut self, _len: u64) -> io::Result<()> {
        Ok(())
    }

    fn size(&mut self) -> io::Result<u64> {
        Ok(0)
    }
}

/// The most bytes given to one `write`: Linux writes at most 0x7ffff000
/// per call, so a larger batch is cut, after a row.
const MAX_WRITE: usize = 1 << 30;

impl RowsFile for File {
    /// One `write` per batch: a batch is never split across calls (unless
    /// over 1 GiB, `MAX_WRITE`), and a short write is a failure, whose part the
    /// sink cuts off, not a reason to write the rest in a second call.
    fn append(&mut self, rows: &[u8]) -> io::Result<()> {
        let mut rest = rows;
        while !rest.is_empty() {
            let chunk = match rest.get(..MAX_WRITE) {
                None => rest,
                Some(head) => match memchr::memrchr(b'\n', head) {
                    Some(end) => &head[..=end],
                    None => head,
                },
            };
            match self.write(chunk) {
                Ok(n) if n == chunk.len() => rest = &rest[n..],
                Ok(n) => {
                    return Err(io::Error::new(
                        io::ErrorKind::WriteZero,
                        format!("wrote {n} of {} bytes", chunk.len()),
                    ))
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }

    fn truncate(&mut self, len: u64) -> io::Result<()> {
        self.set_len(len)
    }

    fn size(&mut self) -> io::Result<u64> {
        Ok(self.metadata()?.len())
    }
}

/// Appends `rows`; when that fails, cuts off what part of them was written,
/// so the file keeps whole lines. The length to cut back to is taken just
/// before the write: the file may have been cut under us (copytruncate),
/// and going back to an older, longer length would pad it with NUL bytes.
/// The error says whether a partial line may remain (the cut failed).
fn append_whole<F: RowsFile>(file: &mut F, rows: &[u8]) -> Result<(), (io::Error, bool)> {
    let before = file.size();
    let Err(e) = file.append(rows) else {
        return Ok(());
    };
    let partial = match (before, file.size()) {
        (Ok(before), Ok(now)) if now > before => file.truncate(before).is_err(),
        (Ok(_), Ok(_)) => false,
        _ => true,
    };
    Err((e, partial))
}

/// The file and the rows it still owes.
struct State<F> {
    file: F,
    /// Rows not yet written (kept while the file fails; acknowledged data
    /// is never dropped while the server runs).
    pending: Vec<u8>,
    /// Why the last write failed, while it fails.
    failing: Option<String>,
    /// The file may end in a partial line: start the next write on a new
    /// line so it is not merged into it.
    newline_first: bool,
}

/// Appends rows to the results file, flushed after every batch. When a
/// write fails (a full disk), the partial line is cut off, the rows are kept
/// and retried, and `ServeStats::output_failing` makes the receivers refuse
/// new data (503 / UNAVAILABLE, retryable) until the file takes them again.
pub struct JsonlSink<F: RowsFile = File> {
    state: Arc<Mutex<State<F>>>,
    stats: Arc<ServeStats>,
    /// The run store's copy of every write.
    store: Option<Feed>,
}

/// Reopens the results file at its path (SIGHUP, after log rotation moved
/// it): rows written so far stay in the old file, the next ones (and any
/// still owed) go to the file now at the path, created if need be.
#[derive(Clone)]
pub struct Reopen {
    path: PathBuf,
    state: Arc<Mutex<State<File>>>,
}

impl Reopen {
    /// On failure (the directory is gone, no permission) the file open
    /// stays in use, and the failure is logged.
    pub fn reopen(&self) {
        match open_rows_file(&self.path) {
            Ok(file) => {
                let mut st = self.state.lock().unwrap_or_else(PoisonError::into_inner);
                st.file = file;
                // A new file: nothing of ours to end.
                st.newline_first = false;
                info!(file = %self.path.display(), "Reopened the results file.");
            }
            Err(e) => {
                error!(file = %self.path.display(), error = %e, "Cannot reopen the results file; still writing to the one open.");
            }
        }
    }
}

/// Opens the results file for appending: O_APPEND, so every write lands at
/// the end, also after the file was cut under us (copytruncate). A file
/// that ends in part of a line (a crash mid-write) is cut back to its last
/// newline, so it holds only whole rows; the fragment is moved to a side
/// file (`FILE.torn-<unix time>`) and logged with its length.
fn open_rows_file(path: &Path) -> io::Result<File> {
    let mut options = OpenOptions::new();
    options.create(true).append(true);
    // Read too, to look at the end; a file we may only write is taken as is.
    let mut file = match options.clone().read(true).open(path) {
        Err(e) if e.kind() == io::ErrorKind::PermissionDenied => return options.open(path),
        opened => opened?,
    };
    if let Some(fragment) = fragment_len(&mut file)? {
        cut_fragment(path, &mut file, fragment)?;
    }
    Ok(file)
}

/// Moves the last `fragment` bytes of `file` to a new side file next to
/// it, then cuts them off. The copy comes first: a crash between the two
/// leaves the fragment in place for the next start to move. When no side
/// file can be made (a read-only directory) the fragment, which is no row
/// anyone can read, is dropped all the same, and the log says so.
fn cut_fragment(path: &Path, file: &mut File, fragment: u64) -> io::Result<()> {
    let keep = file.metadata()?.len() - fragment;
    let saved = save_fragment(path, file, keep);
    file.set_len(keep)?;
    match saved {
        Ok(side) => warn!(
            file = %path.display(),
            fragment_bytes = fragment,
            moved_to = %side.display(),
            "The results file ended in a partial line (a crash mid-write?); it was cut back to its last whole row and the fragment moved aside."
        ),
        Err(e) => error!(
            file = %path.display(),
            fragment_bytes = fragment,
            error = %e,
            "The results file ended in a partial line (a crash mid-write?); it was cut back to its last whole row, and the fragment, which could not be saved aside, dropped."
        ),
    }
    Ok(())
}

/// Copies `file` from `from` to its end into `FILE.torn-<unix time>`
/// (`-2`, `-3`, ... after it when that name is taken), a file made anew.
fn save_fragment(path: &Path, file: &mut File, from: u64) -> io::Result<PathBuf> {
    let time = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let mut name = path.as_os_str().to_owned();
    name.push(format!(".torn-{time}"));
    let base = PathBuf::from(name);
    let mut side = base.clone();
    let mut out = None;
    for n in 2..100 {
        match OpenOptions::new().write(true).create_new(true).open(&side) {
            Ok(f) => {
                out = Some(f);
                break;
            }
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
                let mut name = base.as_os_str().to_owned();
                name.push(format!("-{n}"));
                side = PathBuf::from(name);
            }
            Err(e) => return Err(e),
        }
    }
    let mut out = out.ok_or_else(|| {
        io::Error::new(
            io::ErrorKind::AlreadyExists,
            "every side file name is taken",
        )
    })?;
    file.seek(SeekFrom::Start(from))?;
    io::copy(file, &mut out)?;
    out.sync_all()?;
    Ok(side)
}

/// The length of the part of a line at the end of `file`; `None` when it
/// ends with a newline, is empty or is not a regular file.
fn fragment_len(file: &mut File) -> io::Result<Option<u64>> {
    let meta = file.metadata()?;
    let end = meta.len();
    if !meta.is_file() || end == 0 {
        return Ok(None);
    }
    let mut buf = vec![0u8; (64 << 10).min(end as usize)];
    let mut upto = end;
    loop {
        let from = upto.saturating_sub(buf.len() as u64);
        let chunk = &mut buf[..(upto - from) as usize];
        file.seek(SeekFrom::Start(from))?;
        file.read_exact(chunk)?;
        if upto == end && chunk.last() == Some(&b'\n') {
            return Ok(None);
        }
        if let Some(at) = memchr::memrchr(b'\n', chunk) {
            return Ok(Some(end - (from + at as u64 + 1)));
        }
        if from == 0 {
            return Ok(Some(end));
        }
        upto = from;
    }
}

impl JsonlSink<File> {
    /// Opens `path` for appending and writes the rejected fixture lines
    /// (to `store` too, when the run is saved).
    pub fn open(
        path: &Path,
        rejected: &[Rejected],
        stats: Arc<ServeStats>,
        store: Option<Feed>,
    ) -> Result<(JsonlSink<File>, Reopen), ServeError> {
        let file = open_rows_file(path).map_err(|source| ServeError::Output {
            path: path.display().to_string(),
            source,
        })?;
        let sink = JsonlSink::new(file, stats).with_store(store);
        sink.write_rejected(rejected)?;
        let reopen = Reopen {
            path: path.to_path_buf(),
            state: Arc::clone(&sink.state),
        };
        Ok((sink, reopen))
    }
}

impl JsonlSink<NoFile> {
    /// The rows for the run store only (no `--output`).
    pub fn store_only(
        rejected: &[Rejected],
        stats: Arc<ServeStats>,
        store: Feed,
    ) -> Result<JsonlSink<NoFile>, ServeError> {
        let sink = JsonlSink::new(NoFile, stats).with_store(Some(store));
        sink.write_rejected(rejected)?;
        Ok(sink)
    }
}

impl<F: RowsFile> JsonlSink<F> {
    pub fn new(file: F, stats: Arc<ServeStats>) -> Self {
        JsonlSink {
            state: Arc::new(Mutex::new(State {
                file,
                pending: Vec::new(),
                failing: None,
                newline_first: false,
            })),
            stats,
            store: None,
        }
    }

    /// Copies every write to the run store.
    pub fn with_store(mut self, store: Option<Feed>) -> Self {
        self.store = store;
        self
    }

    /// The fixture's rejected lines, first in the file.
    fn write_rejected(&self, rejected: &[Rejected]) -> Result<(), ServeError> {
        let mut rows = Vec::new();
        for r in rejected {
            push_row(&mut rows, &report::rejected_row(r));
        }
        self.write(&rows, Results::default())
            .map_err(|source| ServeError::Write { source })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State<F>> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Writes `rows` after any still pending (kept, copied, if they cannot
    /// be written now), and queues them for the run store with `results`,
    /// their case results.
    fn write(&self, rows: &[u8], results: Results) -> io::Result<()> {
        // Copied outside the lock, queued under it after the file's write
        // (or, while the file fails, after they are owed to it): the store
        // gets the rows in the file's order, never ahead of the file.
        let copy = self
            .store
            .as_ref()
            .filter(|_| !rows.is_empty())
            .map(|feed| (feed, rows.to_vec()));
        let mut st = self.lock();
        let written = self.write_locked(&mut st, rows);
        if let Some((feed, copy)) = copy {
            feed.send(copy, results);
        }
        written
    }

    fn write_locked(&self, st: &mut State<F>, rows: &[u8]) -> io::Result<()> {
        if st.pending.is_empty() && !st.newline_first {
            // Nothing owed: written straight from the caller's buffer, which
            // the scoring threads reuse (a fresh multi-megabyte buffer per
            // batch cost page faults and regrowth copies).
            return match append_whole(&mut st.file, rows) {
                Ok(()) => {
                    self.appended(st);
                    Ok(())
                }
                Err((e, partial)) => {
                    st.pending.extend_from_slice(rows);
                    Err(self.failed(st, e, partial))
                }
            };
        }
        st.pending.extend_from_slice(rows);
        self.flush(st)
    }

    fn appended(&self, st: &mut State<F>) {
        st.newline_first = false;
        if st.failing.take().is_some() {
            ServeStats::set(&self.stats.output_failing, 0);
            info!("The results file takes rows again; accepting data.");
        }
    }

    /// After a failed append (its part already cut off, unless `partial`):
    /// refuses data until the file takes the rows.
    fn failed(&self, st: &mut State<F>, e: io::Error, partial: bool) -> io::Error {
        st.newline_first |= partial;
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
        match append_whole(file, pending) {
            Ok(()) => {
                st.pending.clear();
                self.appended(st);
                Ok(())
            }
            Err((e, partial)) => {
                if st.newline_first {
                    st.pending.remove(0);
                }
                Err(self.failed(st, e, partial))
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
            let mut results = Results::default();
            for o in &batch.outputs {
                match o {
                    Output::Evaluation {
                        eval,
                        revision,
                        spans,
                        defaulted,
                        ..
                    } => {
                        if self.store.is_some() {
                            results.push(baseline::entry_of(eval), *revision > 1);
                        }
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
            let _ = self.write(rows, results);
            if rows.capacity() > KEEP {
                *rows = Vec::new();
            }
        });
        Ok(())
    }

    fn retry(&self) {
        let mut st = self.lock();
        if st.failing.is_some() {
            let _ = self.flush(&mut st);
        }
    }

    fn finish(&self, summary: &ServeSummary) -> io::Result<()> {
        // Whole rows, a megabyte at a time: a big fixture's unmatched cases
        // are not held as one buffer.
        const PART: usize = 1 << 20;
        let mut rows = Vec::new();
        let mut results = Results::default();
        for c in &summary.unmatched_cases {
            push_row(&mut rows, &report::unmatched_case_row(c));
            if self.store.is_some() {
                results.push(baseline::unmatched_entry(c), false);
            }
            if rows.len() >= PART {
                // A failure keeps them pending for the next write.
                let _ = self.write(&rows, std::mem::take(&mut results));
                rows.clear();
            }
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
        self.write(&rows, results).inspect_err(|_| {
            // The last try: what is still pending is lost, and counted.
            let st = self.lock();
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

        /// As `set_len` does: longer pads with NUL bytes.
        fn truncate(&mut self, len: u64) -> io::Result<()> {
            self.data.lock().unwrap().resize(len as usize, 0);
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
        let sink = JsonlSink::new(file, Arc::clone(&stats));
        sink.write(b"{\"n\":1}\n", Results::default()).unwrap();
        fail.store(2, Ordering::Relaxed);
        assert!(sink
            .write(b"{\"n\":2}\n{\"n\":3}\n", Results::default())
            .is_err());
        assert_eq!(stats.output_failing.load(Ordering::Relaxed), 1);
        // The partial line was cut off.
        assert_eq!(&*data.lock().unwrap(), b"{\"n\":1}\n");
        sink.retry();
        assert_eq!(stats.output_failing.load(Ordering::Relaxed), 1);
        // Space is back: everything owed arrives, in order, whole.
        sink.write(b"{\"n\":4}\n", Results::default()).unwrap();
        assert_eq!(stats.output_failing.load(Ordering::Relaxed), 0);
        assert_eq!(
            String::from_utf8(data.lock().unwrap().clone()).unwrap(),
            "{\"n\":1}\n{\"n\":2}\n{\"n\":3}\n{\"n\":4}\n"
        );
    }

    /// copytruncate: the file is cut to 0 under the sink, then a write
    /// fails part way. The part is cut off back to the length before that
    /// write, not to the length the sink had written before the cut (which
    /// would pad the file with NUL bytes).
    #[test]
    fn a_file_cut_under_the_sink_is_never_padded() {
        use std::sync::atomic::Ordering;
        let file = Flaky::default();
        let (data, fail) = (Arc::clone(&file.data), Arc::clone(&file.fail));
        let sink = JsonlSink::new(file, Arc::new(ServeStats::default()));
        sink.write(&b"{\"n\":1}\n".repeat(100), Results::default())
            .unwrap();
        data.lock().unwrap().clear();
        sink.write(b"{\"n\":2}\n", Results::default()).unwrap();
        fail.store(1, Ordering::Relaxed);
        assert!(sink
            .write(b"{\"n\":3}\n{\"n\":4}\n", Results::default())
            .is_err());
        assert_eq!(&*data.lock().unwrap(), b"{\"n\":2}\n");
        sink.retry();
        assert_eq!(
            String::from_utf8(data.lock().unwrap().clone()).unwrap(),
            "{\"n\":2}\n{\"n\":3}\n{\"n\":4}\n"
        );
    }

    /// What a crash left at the end of a file: the part after the last
    /// newline, found however far back that is; opening cuts it off into a
    /// side file.
    #[test]
    fn a_partial_last_line_is_measured_and_moved_aside() {
        let long = "x".repeat(200_000);
        for (i, (text, want)) in [
            (String::new(), None),
            ("{}\n".to_string(), None),
            ("{}\n{\"a\"".to_string(), Some(4)),
            (format!("{{}}\n{long}"), Some(200_000)),
            (long.clone(), Some(200_000)),
        ]
        .into_iter()
        .enumerate()
        {
            let dir =
                std::env::temp_dir().join(format!("toolscore-frag-{}-{i}", std::process::id()));
            let _ = std::fs::remove_dir_all(&dir);
            std::fs::create_dir_all(&dir).unwrap();
            let path = dir.join("rows.jsonl");
            std::fs::write(&path, &text).unwrap();
            let mut file = File::open(&path).unwrap();
            assert_eq!(fragment_len(&mut file).unwrap(), want, "{}", text.len());
            open_rows_file(&path).unwrap();
            let after = std::fs::read_to_string(&path).unwrap();
            let cut = text.len() - want.unwrap_or(0) as usize;
            assert!(after == text[..cut], "{}", after.len());
            let sides: Vec<_> = std::fs::read_dir(&dir)
                .unwrap()
                .map(|e| e.unwrap().path())
                .filter(|p| p != &path)
                .collect();
            match want {
                None => assert!(sides.is_empty(), "{sides:?}"),
                Some(_) => {
                    assert_eq!(sides.len(), 1, "{sides:?}");
                    let name = sides[0].file_name().unwrap().to_str().unwrap();
                    assert!(name.starts_with("rows.jsonl.torn-"), "{name}");
                    assert_eq!(std::fs::read_to_string(&sides[0]).unwrap(), text[cut..]);
                }
            }
            let _ = std::fs::remove_dir_all(&dir);
        }
    }
}
