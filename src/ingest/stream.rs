//! Streaming decode of trace files: inputs are read in chunks (Collector
//! JSON lines, length-prefixed protobuf records, a gzip stream inflated as it
//! is read), chunks are decoded on worker threads, and the decoded pieces
//! come back in input order. Memory is bounded by the chunks in flight, not
//! by the size of the input (docs/architecture.md, "Replay at scale").
//!
//! Inputs that are one document (a pretty-printed export, a JSON array,
//! one protobuf message, MLflow or Jaeger JSON) cannot be split: they are
//! read whole, as before, and decoded on a worker.

use std::fs::File;
use std::io::{self, BufRead, BufReader, Read, Seek};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use super::files::TraceInput;
use super::projection::KeyFilter;
use super::{decode_lines, decode_records_chunk, decode_with, Decoded, Limits, Position};

/// How inputs are cut and decoded.
#[derive(Debug, Clone, Copy)]
pub struct StreamOptions {
    /// Decoding threads.
    pub threads: usize,
    /// Bytes of whole lines (or records) per chunk handed to a thread.
    pub chunk_bytes: usize,
    /// Longest accepted line of a JSON-lines input, and record of a
    /// protobuf-records input; a longer one is rejected (and skipped
    /// without being held).
    pub max_line_bytes: usize,
}

impl Default for StreamOptions {
    fn default() -> Self {
        StreamOptions {
            threads: std::thread::available_parallelism().map_or(2, |n| n.get()),
            // Small enough that the chunks in flight, decoded, stay a few
            // MiB; large enough that handing them over costs nothing.
            chunk_bytes: 256 << 10,
            max_line_bytes: 256 << 20,
        }
    }
}

/// One decoded chunk, handed out in input order.
#[derive(Debug)]
pub struct DecodedPiece {
    /// Index of the input it came from.
    pub input: usize,
    pub decoded: Decoded,
    /// Decoded bytes of all inputs up to the end of this piece: the clock
    /// of early release (how far the stream has gone past a trace).
    pub position: u64,
    /// On-disk bytes of this input read so far (progress).
    pub disk_bytes: u64,
    /// The last piece of its input.
    pub last: bool,
}

enum Work {
    /// Whole lines, the first numbered `first_line`.
    Lines { first_line: usize, bytes: Vec<u8> },
    /// Whole length-prefixed records, the first numbered `first_record`,
    /// starting at byte `offset` of the input.
    Records {
        first_record: usize,
        offset: u64,
        bytes: Vec<u8>,
    },
    /// A whole input that cannot be split.
    Whole(Vec<u8>),
    /// Something the reader itself rejects.
    Reject(Position, String),
}

struct Job {
    input: usize,
    work: Work,
    position: u64,
    disk_bytes: u64,
    last: bool,
}

/// Decodes every input and calls `each` with the pieces in input order, on
/// the calling thread, while later chunks are read (on a thread of their
/// own) and decoded. Chunks in flight (queued, decoding, or decoded and
/// waiting for their turn) are bounded, so a slow chunk cannot make the
/// others pile up. A panic while decoding is raised here.
pub fn decode_inputs(
    inputs: &[TraceInput],
    limits: &Limits,
    filter: &(dyn KeyFilter + Sync),
    options: &StreamOptions,
    mut each: impl FnMut(DecodedPiece),
) {
    // An input whose every document is an empty export (`{}` lines) gives
    // nothing: named, never a silent success.
    let mut gave = (usize::MAX, false);
    crate::parallel::ordered_map_ahead(
        options.threads,
        |job| decode_job(job, inputs, limits, filter),
        |submit| read_all(inputs, limits, options, submit),
        |mut piece: DecodedPiece| {
            if gave.0 != piece.input {
                gave = (piece.input, false);
            }
            gave.1 |= piece.decoded.holds_anything();
            if piece.last && !gave.1 {
                let source = inputs[piece.input].label();
                let why = "no spans in it: every document is an empty export request";
                piece.decoded.reject(&source, Position::Whole, why);
            }
            each(piece)
        },
    );
}

/// Tests make a decoder panic on inputs of this name (after their first
/// chunk).
#[cfg(test)]
const PANIC_ON: &str = "panic-in-decoder.jsonl";

fn decode_job(
    job: Job,
    inputs: &[TraceInput],
    limits: &Limits,
    filter: &(dyn KeyFilter + Sync),
) -> DecodedPiece {
    let source = inputs[job.input].label();
    #[cfg(test)]
    assert!(
        !(source.ends_with(PANIC_ON)
            && matches!(job.work, Work::Lines { first_line, .. } if first_line > 1)),
        "decoder panic injected by a test"
    );
    let mut decoded = Decoded::default();
    match job.work {
        Work::Lines { first_line, bytes } => {
            decode_lines(&bytes, first_line, &source, filter, &mut decoded)
        }
        Work::Records {
            first_record,
            offset,
            bytes,
        } => decode_records_chunk(&bytes, first_record, offset, &source, filter, &mut decoded),
        Work::Whole(bytes) => decoded = decode_with(&bytes, &source, limits, filter),
        Work::Reject(position, reason) => decoded.reject(&source, position, reason),
    }
    DecodedPiece {
        input: job.input,
        decoded,
        position: job.position,
        disk_bytes: job.disk_bytes,
        last: job.last,
    }
}

/// The reading side: cuts each input into jobs, in order.
struct Cutter<'a> {
    /// Hands a job to the decoders; `false` when the consumer is gone.
    submit: &'a mut dyn FnMut(Job) -> bool,
    /// Decoded bytes of the inputs before this one.
    base: u64,
    options: &'a StreamOptions,
}

impl Cutter<'_> {
    /// Sends one job; `false` when the consumer is gone.
    fn send(&mut self, input: usize, work: Work, at: u64, disk: u64, last: bool) -> bool {
        let job = Job {
            input,
            work,
            position: self.base + at,
            disk_bytes: disk,
            last,
        };
        (self.submit)(job)
    }
}

fn read_all(
    inputs: &[TraceInput],
    limits: &Limits,
    options: &StreamOptions,
    submit: &mut dyn FnMut(Job) -> bool,
) {
    let mut cutter = Cutter {
        submit,
        base: 0,
        options,
    };
    for (i, input) in inputs.iter().enumerate() {
        let mut disk = Disk::default();
        let read = open(input, limits, &mut disk).and_then(|r| cut(&mut cutter, i, r, &disk));
        let done = match read {
            Ok(n) => n,
            Err(Stop::Consumer) => return,
            Err(Stop::Io(at, e)) => {
                let reason = match e
                    .get_ref()
                    .and_then(|e| e.downcast_ref::<super::GunzipError>())
                {
                    Some(g) => g.to_string(),
                    None => format!("cannot read: {e}"),
                };
                let position =
                    if at == 0 || e.get_ref().is_some_and(|e| e.is::<super::GunzipError>()) {
                        Position::Whole
                    } else {
                        Position::Byte(at as usize)
                    };
                let disk = disk.bytes();
                if !cutter.send(i, Work::Reject(position, reason), at, disk, true) {
                    return;
                }
                at
            }
        };
        cutter.base += done;
    }
}

enum Stop {
    /// The consumer went away.
    Consumer,
    /// A read failed after `u64` decoded bytes.
    Io(u64, io::Error),
}

type Reader = Box<dyn BufRead + Send>;

/// Opens an input, inflating gzip as it is read (by magic), with the
/// inflated size capped so a gzip bomb costs work up to the cap, not memory.
fn open(input: &TraceInput, limits: &Limits, disk: &mut Disk) -> Result<Reader, Stop> {
    let raw: Box<dyn Read + Send> = match input {
        TraceInput::Stdin => Box::new(io::stdin()),
        TraceInput::File(p) => {
            let file = File::open(p).map_err(|e| Stop::Io(0, e))?;
            // A second handle shares the file's offset: the bytes read.
            disk.offset = file
                .try_clone()
                .ok()
                .filter(|mut f: &File| f.stream_position().is_ok());
            Box::new(file)
        }
        TraceInput::Memory { data, .. } => Box::new(io::Cursor::new(Arc::clone(data))),
    };
    let raw: Box<dyn Read + Send> = match disk.offset {
        Some(_) => raw,
        None => Box::new(Counted {
            inner: raw,
            count: Arc::clone(&disk.count),
        }),
    };
    let mut reader = BufReader::with_capacity(READ_BUFFER, raw);
    let head = reader.fill_buf().map_err(|e| Stop::Io(0, e))?;
    if super::is_gzip(head) {
        let inflate = flate2::bufread::MultiGzDecoder::new(reader);
        let capped = CappedReader {
            inner: inflate,
            left: limits.max_inflated_bytes,
            cap: limits.max_inflated_bytes,
        };
        Ok(Box::new(BufReader::with_capacity(READ_BUFFER, capped)))
    } else {
        Ok(Box::new(reader))
    }
}

/// The readers' buffer: the size of the first read `read_to_end` asks for
/// (its reads then double), so that filling a chunk ([`fill`]) reads into
/// the chunk itself once the buffer is drained (a read as large as the
/// buffer bypasses it) instead of copying every byte through it.
const READ_BUFFER: usize = 8 << 10;

/// Bytes of an input read from disk so far (progress): a file's offset,
/// asked of a second handle to it, or else (stdin, memory, a file that
/// cannot seek) a count kept by a wrapper of the reader. A file is read
/// without that wrapper so that filling a chunk reads into it in place: a
/// wrapper cannot pass on `read_buf` (unstable), and std then zeroes each
/// chunk before reading into it.
#[derive(Default)]
struct Disk {
    count: Arc<AtomicU64>,
    offset: Option<File>,
}

impl Disk {
    fn bytes(&self) -> u64 {
        match &self.offset {
            Some(f) => {
                let mut f: &File = f;
                f.stream_position().unwrap_or(0)
            }
            None => self.count.load(Ordering::Relaxed),
        }
    }
}

/// Counts the bytes read from disk.
struct Counted {
    inner: Box<dyn Read + Send>,
    count: Arc<AtomicU64>,
}

impl Read for Counted {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.count.fetch_add(n as u64, Ordering::Relaxed);
        Ok(n)
    }
}

/// Fails once more than `cap` bytes have been read.
struct CappedReader<R> {
    inner: R,
    left: u64,
    cap: u64,
}

impl<R: Read> Read for CappedReader<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self
            .inner
            .read(buf)
            .map_err(|e| io::Error::new(e.kind(), super::GunzipError::Corrupt(e.to_string())))?;
        if n as u64 > self.left {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                super::GunzipError::TooLarge { cap: self.cap },
            ));
        }
        self.left -= n as u64;
        Ok(n)
    }
}

/// Reads one input and sends its jobs; returns the decoded bytes read.
fn cut(cutter: &mut Cutter, input: usize, mut r: Reader, disk: &Disk) -> Result<u64, Stop> {
    let mut at = 0u64;
    let head = r.fill_buf().map_err(|e| Stop::Io(0, e))?;
    if head.starts_with(b"\xEF\xBB\xBF") {
        r.consume(3);
        at += 3;
    }
    let head = r.fill_buf().map_err(|e| Stop::Io(at, e))?;
    let first = match head.first() {
        None => None,
        // A protobuf request starts with 0x0a, which is also a line break:
        // such an input is read whole and told apart by decoding it.
        Some(b'\n') => Some(b'\n'),
        // A protobuf message never starts with 0 (there is no field 0); a
        // length-prefixed record file does, for records under 16 MiB.
        Some(0) => Some(0),
        Some(_) => skip_blank(&mut r, &mut at)?,
    };
    match first {
        None => {
            // Never a silent empty success: the input is named.
            let disk = disk.bytes();
            let work = Work::Reject(Position::Whole, "empty input: no spans in it".into());
            if !cutter.send(input, work, at, disk, true) {
                return Err(Stop::Consumer);
            }
            Ok(at)
        }
        Some(b'{') => cut_json(cutter, input, r, at, disk),
        Some(0) => cut_records(cutter, input, r, at, disk),
        Some(_) => whole(cutter, input, r, Vec::new(), at, disk),
    }
}

/// Skips leading whitespace without holding it (a file of spaces costs no
/// memory); returns the first other byte, not consumed.
fn skip_blank(r: &mut Reader, at: &mut u64) -> Result<Option<u8>, Stop> {
    loop {
        let buf = r.fill_buf().map_err(|e| Stop::Io(*at, e))?;
        if buf.is_empty() {
            return Ok(None);
        }
        match super::non_blank(buf) {
            Some(n) => {
                let b = buf[n];
                r.consume(n);
                *at += n as u64;
                return Ok(Some(b));
            }
            None => {
                let n = buf.len();
                r.consume(n);
                *at += n as u64;
            }
        }
    }
}

/// Reads the rest of an input and sends it as one job.
fn whole(
    cutter: &mut Cutter,
    input: usize,
    mut r: Reader,
    mut bytes: Vec<u8>,
    at: u64,
    disk: &Disk,
) -> Result<u64, Stop> {
    r.read_to_end(&mut bytes)
        .map_err(|e| Stop::Io(at + bytes.len() as u64, e))?;
    let at = at + bytes.len() as u64;
    let disk = disk.bytes();
    if !cutter.send(input, Work::Whole(bytes), at, disk, true) {
        return Err(Stop::Consumer);
    }
    Ok(at)
}

/// Blanks kept of a run outside strings in one JSON document; the rest are
/// dropped as they are read, so a document padded with a gigabyte of spaces
/// costs no more memory than JSON lines of it (whose blank lines are
/// skipped). JSON's meaning does not change; only positions in the error
/// of such a document do.
const KEPT_BLANKS: usize = 4096;

/// Where the reading of a JSON document is, for [`compact`].
#[derive(Default)]
struct Blanks {
    in_string: bool,
    escaped: bool,
    /// Length of the current run of blanks outside strings.
    run: usize,
    /// Bytes dropped so far (positions count the bytes read).
    dropped: u64,
}

fn json_blank(c: u8) -> bool {
    (c == b' ') | (c == b'\n') | (c == b'\r') | (c == b'\t')
}

/// The length of the run of JSON blanks starting `bytes`, a block at a time.
fn blank_run(bytes: &[u8]) -> usize {
    const BLOCK: usize = 32;
    let mut at = 0;
    for block in bytes.chunks_exact(BLOCK) {
        if !block.iter().fold(true, |all, &c| all & json_blank(c)) {
            break;
        }
        at += BLOCK;
    }
    at + bytes[at..].iter().take_while(|&&c| json_blank(c)).count()
}

/// Appends `src` to `dst` without the blanks beyond [`KEPT_BLANKS`] of a
/// run outside strings.
fn compact(dst: &mut Vec<u8>, src: &[u8], st: &mut Blanks) {
    let mut i = 0;
    while i < src.len() {
        if st.in_string {
            if st.escaped {
                st.escaped = false;
                dst.push(src[i]);
                i += 1;
                continue;
            }
            match memchr::memchr2(b'"', b'\\', &src[i..]) {
                None => {
                    dst.extend_from_slice(&src[i..]);
                    i = src.len();
                }
                Some(n) => {
                    let j = i + n;
                    dst.extend_from_slice(&src[i..=j]);
                    st.in_string = src[j] != b'"';
                    st.escaped = src[j] == b'\\';
                    i = j + 1;
                }
            }
            continue;
        }
        let n = blank_run(&src[i..]);
        if n > 0 {
            let keep = n.min(KEPT_BLANKS.saturating_sub(st.run));
            dst.extend_from_slice(&src[i..i + keep]);
            st.dropped += (n - keep) as u64;
            st.run = st.run.saturating_add(n);
            i += n;
            continue;
        }
        st.run = 0;
        st.in_string = src[i] == b'"';
        dst.push(src[i]);
        i += 1;
    }
}

/// [`fill`] through [`compact`]: `true` when the input ended.
fn fill_json(r: &mut Reader, buf: &mut Vec<u8>, want: usize, st: &mut Blanks) -> io::Result<bool> {
    let mut raw = Vec::with_capacity(want.min(1 << 20));
    let mut left = want;
    while left > 0 {
        raw.clear();
        let step = left.min(1 << 20);
        let ended = fill(r, &mut raw, step)?;
        compact(buf, &raw, st);
        left -= step;
        if ended {
            return Ok(true);
        }
    }
    Ok(false)
}

/// [`whole`] for one JSON document: long runs of blanks are not held.
fn whole_json(
    cutter: &mut Cutter,
    input: usize,
    mut r: Reader,
    mut bytes: Vec<u8>,
    mut blanks: Blanks,
    mut at: u64,
    disk: &Disk,
) -> Result<u64, Stop> {
    loop {
        let ended = fill_json(&mut r, &mut bytes, 1 << 20, &mut blanks)
            .map_err(|e| Stop::Io(at + bytes.len() as u64 + blanks.dropped, e))?;
        if ended {
            break;
        }
    }
    at += bytes.len() as u64 + blanks.dropped;
    let disk = disk.bytes();
    if !cutter.send(input, Work::Whole(bytes), at, disk, true) {
        return Err(Stop::Consumer);
    }
    Ok(at)
}

/// Reads into `buf` until it holds `want` more bytes or the input ends
/// (`true` when it ended).
fn fill(r: &mut Reader, buf: &mut Vec<u8>, want: usize) -> io::Result<bool> {
    let before = buf.len();
    r.take(want as u64).read_to_end(buf)?;
    Ok(buf.len() - before < want)
}

/// A JSON input: Collector JSON lines are cut into chunks of whole lines
/// when the first line is a complete document and more follows; any other
/// JSON (one document over many lines, concatenated documents, a malformed
/// first line) is read whole, as the layout rules of `decode` say.
fn cut_json(
    cutter: &mut Cutter,
    input: usize,
    mut r: Reader,
    mut at: u64,
    disk: &Disk,
) -> Result<u64, Stop> {
    let chunk = cutter.options.chunk_bytes.max(1);
    let max_line = cutter.options.max_line_bytes;
    let mut buf = Vec::with_capacity(chunk + 4096);
    let mut eof = false;
    let mut blanks = Blanks::default();
    let mut scanned = 0;
    // Only new bytes are searched: rescanning made a long first line
    // quadratic.
    let first_end = loop {
        if let Some(n) = memchr::memchr(b'\n', &buf[scanned..]) {
            break Some(scanned + n);
        }
        scanned = buf.len();
        if eof || buf.len() > max_line {
            break None;
        }
        eof = fill_json(&mut r, &mut buf, chunk, &mut blanks).map_err(|e| Stop::Io(at, e))?;
    };
    let complete = first_end
        .is_some_and(|n| serde_json::from_slice::<serde::de::IgnoredAny>(&buf[..n]).is_ok());
    // Lines only if something other than blanks follows the first line.
    let more = complete && {
        let mut n = first_end.unwrap_or(0);
        loop {
            if super::non_blank(&buf[n..]).is_some() {
                break true;
            }
            n = buf.len();
            if eof || buf.len() > max_line {
                break false;
            }
            eof = fill(&mut r, &mut buf, chunk).map_err(|e| Stop::Io(at, e))?;
        }
    };
    if !more {
        return whole_json(cutter, input, r, buf, blanks, at, disk);
    }
    at += blanks.dropped;
    let mut line = 1usize;
    loop {
        if !eof && buf.len() < chunk {
            let want = chunk - buf.len();
            eof = fill(&mut r, &mut buf, want).map_err(|e| Stop::Io(at + buf.len() as u64, e))?;
        }
        // Whole lines go; the tail waits for the rest of its line.
        let cut_at = if eof {
            buf.len()
        } else if let Some(n) = memchr::memrchr(b'\n', &buf) {
            n + 1
        } else if buf.len() <= max_line {
            eof = fill(&mut r, &mut buf, chunk).map_err(|e| Stop::Io(at + buf.len() as u64, e))?;
            continue;
        } else {
            let reason = format!("line longer than {max_line} bytes: skipped");
            let (skipped, ended) = skip_line(&mut r).map_err(|e| Stop::Io(at, e))?;
            at += (buf.len() + skipped) as u64;
            buf.clear();
            eof = ended;
            let disk = disk.bytes();
            if !cutter.send(
                input,
                Work::Reject(Position::Line(line), reason),
                at,
                disk,
                eof,
            ) {
                return Err(Stop::Consumer);
            }
            line += 1;
            if eof {
                return Ok(at);
            }
            continue;
        };
        // The tail starts the next chunk in a buffer of the chunk's size, so
        // reading the rest of the chunk into it does not grow it step by
        // step (each step a copy).
        let mut rest = Vec::with_capacity(chunk.max(buf.len() - cut_at) + 4096);
        rest.extend_from_slice(&buf[cut_at..]);
        buf.truncate(cut_at);
        let bytes = std::mem::replace(&mut buf, rest);
        at += bytes.len() as u64;
        let lines_in = memchr::memchr_iter(b'\n', &bytes).count();
        let disk = disk.bytes();
        let work = Work::Lines {
            first_line: line,
            bytes,
        };
        if !cutter.send(input, work, at, disk, eof) {
            return Err(Stop::Consumer);
        }
        line += lines_in;
        if eof {
            return Ok(at);
        }
    }
}

/// Skips the rest of an over-long line; returns the bytes skipped and
/// whether the input ended.
fn skip_line(r: &mut Reader) -> io::Result<(usize, bool)> {
    let mut skipped = 0;
    loop {
        let buf = r.fill_buf()?;
        if buf.is_empty() {
            return Ok((skipped, true));
        }
        if let Some(n) = memchr::memchr(b'\n', buf) {
            r.consume(n + 1);
            return Ok((skipped + n + 1, false));
        }
        let n = buf.len();
        r.consume(n);
        skipped += n;
    }
}

/// The Collector's `format: proto` file: 4-byte big-endian length, then
/// the message; cut into chunks of whole records. Broken framing rejects
/// the rest of the input from that byte, keeping the records before it; a
/// record longer than a JSON line may be is rejected and skipped, and the
/// records after it are read.
fn cut_records(
    cutter: &mut Cutter,
    input: usize,
    mut r: Reader,
    mut at: u64,
    disk: &Disk,
) -> Result<u64, Stop> {
    let chunk = cutter.options.chunk_bytes.max(1);
    let max_record = cutter.options.max_line_bytes as u64;
    let mut bytes = Vec::with_capacity(chunk + 4096);
    let (mut record, mut first_record, mut offset) = (1usize, 1usize, at);
    loop {
        let (end, problem) = match next_record(&mut r, &mut bytes, at, record, max_record)? {
            Found::Record(n) => {
                at += n;
                record += 1;
                (false, None)
            }
            Found::End => (true, None),
            Found::Rejected {
                reason,
                skipped,
                ends,
            } => (ends, Some((reason, skipped))),
        };
        if bytes.len() < chunk && !end && problem.is_none() {
            continue;
        }
        let disk_now = disk.bytes();
        let last = end && problem.is_none();
        if !bytes.is_empty() || last {
            let work = Work::Records {
                first_record,
                offset,
                // A full-size buffer for the next chunk (see cut_json).
                bytes: std::mem::replace(&mut bytes, Vec::with_capacity(chunk + 4096)),
            };
            if !cutter.send(input, work, at, disk_now, last) {
                return Err(Stop::Consumer);
            }
        }
        if let Some((reason, skipped)) = problem {
            at += skipped;
            let work = Work::Reject(Position::Record(record), reason);
            if !cutter.send(input, work, at, disk_now, end) {
                return Err(Stop::Consumer);
            }
            record += 1;
        }
        first_record = record;
        offset = at;
        if end {
            return Ok(at);
        }
    }
}

/// What [`next_record`] found.
enum Found {
    /// A whole record of `u64` bytes (with its header), added to the chunk.
    Record(u64),
    /// The end of the input, between records.
    End,
    /// A record that is rejected: `skipped` bytes of it were read (none when
    /// its framing is broken); `ends` when nothing after it is read.
    Rejected {
        reason: String,
        skipped: u64,
        ends: bool,
    },
}

/// Reads record `record`, at byte `at`, into `bytes`: whole, or skipped
/// without being held when it is longer than `max_record`.
fn next_record(
    r: &mut Reader,
    bytes: &mut Vec<u8>,
    at: u64,
    record: usize,
    max_record: u64,
) -> Result<Found, Stop> {
    let mut header = [0u8; super::RECORD_HEADER];
    let got = read_up_to(r, &mut header).map_err(|e| Stop::Io(at, e))?;
    let broken = |reason| Found::Rejected {
        reason,
        skipped: 0,
        ends: true,
    };
    if got == 0 {
        return Ok(Found::End);
    }
    let len = match super::record_length(&header[..got]) {
        Some(len) => len,
        None => return Ok(broken(format!("truncated record header at byte {at}"))),
    };
    if len > max_record {
        let skipped = io::copy(&mut r.take(len), &mut io::sink()).map_err(|e| Stop::Io(at, e))?;
        return Ok(Found::Rejected {
            reason: format!(
                "record longer than {max_record} bytes at byte {at} ({len} bytes): skipped"
            ),
            skipped: super::RECORD_HEADER as u64 + skipped,
            ends: skipped < len,
        });
    }
    let start = bytes.len();
    bytes.extend_from_slice(&header);
    let n = r
        .take(len)
        .read_to_end(bytes)
        .map_err(|e| Stop::Io(at, e))?;
    if (n as u64) < len {
        bytes.truncate(start);
        return Ok(broken(format!(
            "truncated record {record} at byte {at}: {n} of {len} bytes"
        )));
    }
    Ok(Found::Record(super::RECORD_HEADER as u64 + len))
}

fn read_up_to(r: &mut Reader, buf: &mut [u8]) -> io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match r.read(&mut buf[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(n)
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;
    use std::io::Write;
    use std::path::PathBuf;

    use super::*;
    use crate::ingest::projection::KeepAll;
    use crate::ingest::{decode, Request};

    fn corpus(rel: &str) -> PathBuf {
        PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("tests/data/corpus")
            .join(rel)
    }

    fn temp(name: &str, bytes: &[u8]) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("toolscore-stream-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join(name);
        std::fs::write(&p, bytes).unwrap();
        p
    }

    fn span_ids(reqs: &[Request]) -> BTreeSet<Vec<u8>> {
        reqs.iter()
            .flat_map(|r| &r.resource_spans)
            .flat_map(|rs| &rs.scope_spans)
            .flat_map(|ss| &ss.spans)
            .map(|s| s.span_id.as_bytes().to_vec())
            .collect()
    }

    /// Streams `path` with small chunks; returns the pieces' requests and
    /// rejections, checking the pieces come in order with growing positions.
    fn stream(
        path: &std::path::Path,
        chunk: usize,
        limits: Limits,
    ) -> (Vec<Request>, Vec<Rejected>) {
        let options = StreamOptions {
            threads: 2,
            chunk_bytes: chunk,
            max_line_bytes: 1 << 20,
        };
        let (mut reqs, mut rejected, mut last_pos) = (Vec::new(), Vec::new(), 0);
        let inputs = [TraceInput::File(path.to_path_buf())];
        decode_inputs(&inputs, &limits, &KeepAll, &options, |p| {
            assert!(p.position >= last_pos);
            last_pos = p.position;
            reqs.extend(p.decoded.requests);
            rejected.extend(p.decoded.rejected);
        });
        (reqs, rejected)
    }

    use crate::ingest::Rejected;

    #[test]
    fn json_lines_in_small_chunks_decode_as_the_whole_file() {
        let path = corpus("strands/traces.jsonl");
        let whole = decode(&std::fs::read(&path).unwrap(), "x", &Limits::default());
        assert!(whole.rejected.is_empty());
        // Chunks smaller than a line, of a few lines, and larger than the file.
        for chunk in [100, 5_000, 10 << 20] {
            let (reqs, rejected) = stream(&path, chunk, Limits::default());
            assert!(rejected.is_empty(), "{rejected:?}");
            assert_eq!(reqs.len(), whole.requests.len(), "chunk {chunk}");
            assert_eq!(span_ids(&reqs), span_ids(&whole.requests));
            assert_eq!(reqs, whole.requests, "same requests in the same order");
        }
    }

    #[test]
    fn gzip_streams_and_its_cap_rejects_the_input() {
        let text = std::fs::read(corpus("galtea/traces.jsonl")).unwrap();
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        gz.write_all(&text).unwrap();
        let path = temp("galtea.jsonl.gz", &gz.finish().unwrap());
        let (reqs, rejected) = stream(&path, 4096, Limits::default());
        assert!(rejected.is_empty());
        let whole = decode(&text, "x", &Limits::default());
        assert_eq!(reqs, whole.requests);

        // A bomb: 8 MiB of spaces under a 1 MiB cap is rejected, whole.
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
        gz.write_all(&vec![b' '; 8 << 20]).unwrap();
        let path = temp("bomb.json.gz", &gz.finish().unwrap());
        let limits = Limits {
            max_inflated_bytes: 1 << 20,
        };
        let (reqs, rejected) = stream(&path, 4096, limits);
        assert!(reqs.is_empty());
        assert_eq!(rejected.len(), 1, "{rejected:?}");
        assert_eq!(rejected[0].position, Position::Whole);
        assert!(rejected[0]
            .reason
            .contains("inflates to more than 1048576 bytes"));
    }

    #[test]
    fn a_bad_span_id_and_an_overlong_line_are_rejected_with_their_lines() {
        let good = std::fs::read_to_string(corpus("galtea/traces.jsonl")).unwrap();
        let lines: Vec<&str> = good.lines().take(3).collect();
        let bad_id = lines[1].replacen("\"spanId\":\"", "\"spanId\":\"ab", 1);
        let long = format!(
            "{{\"resourceSpans\":[],\"pad\":\"{}\"}}",
            "x".repeat(2 << 20)
        );
        let text = format!("{}\n\n{bad_id}\n{long}\n{}\n", lines[0], lines[2]);
        let path = temp("lines.jsonl", text.as_bytes());
        let (reqs, rejected) = stream(&path, 1000, Limits::default());
        let reasons: Vec<String> = rejected
            .iter()
            .map(|r| format!("{}{}", r.position, r.reason))
            .collect();
        assert_eq!(rejected.len(), 2, "{reasons:?}");
        assert_eq!(rejected[0].position, Position::Line(3), "{reasons:?}");
        assert!(
            rejected[0].reason.contains("span id of 9 bytes"),
            "{reasons:?}"
        );
        assert_eq!(rejected[1].position, Position::Line(4), "{reasons:?}");
        assert!(rejected[1].reason.contains("longer than"), "{reasons:?}");
        // Everything else is kept: lines 1, 3 (but the bad span) and 5.
        let all = decode(good.as_bytes(), "x", &Limits::default()).requests;
        let expected = span_ids(&all[..3]).len() - 1;
        assert_eq!(span_ids(&reqs).len(), expected);
    }

    #[test]
    fn an_empty_or_blank_input_says_so() {
        for (name, bytes) in [("empty.json", &b""[..]), ("blank.json", b"  \n\t\n ")] {
            let (reqs, rejected) = stream(&temp(name, bytes), 4096, Limits::default());
            assert!(reqs.is_empty());
            assert_eq!(rejected.len(), 1, "{name}: {rejected:?}");
            assert!(rejected[0].reason.contains("empty input"), "{rejected:?}");
        }
    }

    /// A decoder that panics (the test hook, from the second chunk on) must
    /// not leave the reader waiting for its piece: the panic reaches the
    /// caller, once the reader and the other decoders have stopped.
    #[test]
    fn a_panic_in_a_decoder_reaches_the_caller_instead_of_hanging() {
        let lines = std::fs::read_to_string(corpus("galtea/traces.jsonl")).unwrap();
        // Many more chunks than are ever in flight.
        let path = temp(PANIC_ON, lines.repeat(20).as_bytes());
        let (done_tx, done) = std::sync::mpsc::channel::<()>();
        let run = std::thread::spawn(move || {
            // Dropped when the call returns or unwinds: that ends the wait.
            let _done = done_tx;
            stream(&path, 1000, Limits::default())
        });
        let ended = done.recv_timeout(std::time::Duration::from_secs(30));
        assert!(
            !matches!(ended, Err(std::sync::mpsc::RecvTimeoutError::Timeout)),
            "still running after 30 s: hung"
        );
        let panic = run
            .join()
            .expect_err("the decoder's panic reaches the caller");
        let message = (panic.downcast_ref::<&str>().copied())
            .or_else(|| panic.downcast_ref::<String>().map(String::as_str));
        assert_eq!(message, Some("decoder panic injected by a test"));
    }

    #[test]
    fn protobuf_records_stream_and_a_truncated_tail_is_rejected_alone() {
        let mut file = Vec::new();
        let mut whole = Vec::new();
        for n in 1..=6 {
            let pb = std::fs::read(corpus(&format!("strands/otlp/req-{n:04}.pb"))).unwrap();
            file.extend_from_slice(&(pb.len() as u32).to_be_bytes());
            file.extend_from_slice(&pb);
            whole.push(Request::from(
                <opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest as prost::Message>::decode(pb.as_slice()).unwrap(),
            ));
        }
        let path = temp("records.pb", &file);
        let (reqs, rejected) = stream(&path, 2000, Limits::default());
        assert!(rejected.is_empty(), "{rejected:?}");
        assert_eq!(reqs, whole);
        // Cut the last record short: the five before it are kept.
        let path = temp("records-cut.pb", &file[..file.len() - 10]);
        let (reqs, rejected) = stream(&path, 2000, Limits::default());
        assert_eq!(reqs, whole[..5]);
        assert_eq!(rejected.len(), 1, "{rejected:?}");
        assert_eq!(rejected[0].position, Position::Record(6));
        assert!(rejected[0].reason.contains("truncated record 6"));
    }
}
