//! A run's JSONL report as the store keeps it: cut into parts of
//! [`PART_BYTES`], each an LZ4 block of its own. A row per line cost more
//! than the run's scoring; zlib's fastest level still cost a tenth of the
//! run; LZ4 compresses several times faster (JSONL shrinks about sixfold).
//! The parts are compressed while the report is written ([`PartWriter`]),
//! on a thread of their own: the whole JSONL is never held, and the run's
//! end waits for the last part alone.

use std::io::{self, Write};
use std::sync::mpsc::{sync_channel, SendError, SyncSender};
use std::thread::JoinHandle;

use super::StoreError;

/// The codec name saved with each part.
pub(super) const CODEC: &str = "lz4";

/// JSONL bytes per part (the last may be shorter). A part read back that
/// inflates past this is refused: a store's contents are not trusted.
pub(super) const PART_BYTES: usize = 1 << 20;

/// Whole parts waiting for the compressing thread: a writer faster than
/// it waits rather than holding more.
const QUEUED: usize = 2;

/// A run's JSONL report, compressed into parts, in order.
#[derive(Debug, Clone, Default)]
pub struct Parts {
    pub(super) bodies: Vec<Vec<u8>>,
}

/// Takes a JSONL report as it is written and compresses each whole part
/// on a thread of its own (in the caller's when no thread can be started);
/// [`PartWriter::finish`] gives the parts.
pub struct PartWriter {
    /// The part being filled.
    part: Vec<u8>,
    worker: Option<Worker>,
    /// Parts compressed in the caller's thread (when no thread could be
    /// started), in order.
    done: Vec<Vec<u8>>,
    /// Whether the thread was asked for yet.
    started: bool,
    /// Where the caller's thread compresses.
    scratch: Vec<u8>,
}

struct Worker {
    send: SyncSender<Vec<u8>>,
    thread: JoinHandle<Vec<Vec<u8>>>,
}

impl Worker {
    fn start() -> Option<Worker> {
        let (send, receive) = sync_channel::<Vec<u8>>(QUEUED);
        let thread = std::thread::Builder::new()
            .name("toolscore-lz4".into())
            .spawn(move || {
                let mut scratch = Vec::new();
                receive
                    .into_iter()
                    .map(|p| compress(&p, &mut scratch))
                    .collect()
            })
            .ok()?;
        Some(Worker { send, thread })
    }

    /// The parts it compressed; a panic in it is raised here.
    fn finish(self) -> Vec<Vec<u8>> {
        drop(self.send);
        self.thread
            .join()
            .unwrap_or_else(|e| std::panic::resume_unwind(e))
    }
}

impl Default for PartWriter {
    fn default() -> Self {
        PartWriter::new()
    }
}

impl PartWriter {
    pub fn new() -> PartWriter {
        PartWriter {
            part: Vec::with_capacity(PART_BYTES),
            worker: None,
            done: Vec::new(),
            started: false,
            scratch: Vec::new(),
        }
    }

    /// Hands the full part on and starts the next.
    fn ship(&mut self) {
        let part = std::mem::replace(&mut self.part, Vec::with_capacity(PART_BYTES));
        if !self.started {
            // Only a report of more than a part starts the thread.
            self.started = true;
            self.worker = Worker::start();
        }
        let part = match self.worker.take() {
            Some(w) => match w.send.send(part) {
                Ok(()) => {
                    self.worker = Some(w);
                    return;
                }
                // The thread is gone, which only its panic does (`finish`
                // raises it).
                Err(SendError(part)) => {
                    self.done = w.finish();
                    part
                }
            },
            None => part,
        };
        self.done.push(compress(&part, &mut self.scratch));
    }

    /// The parts of everything written.
    pub fn finish(mut self) -> Parts {
        let mut bodies = std::mem::take(&mut self.done);
        if let Some(w) = self.worker.take() {
            bodies.extend(w.finish());
        }
        if !self.part.is_empty() {
            bodies.push(compress(&self.part, &mut self.scratch));
        }
        Parts { bodies }
    }
}

impl Write for PartWriter {
    fn write(&mut self, mut buf: &[u8]) -> io::Result<usize> {
        let n = buf.len();
        while !buf.is_empty() {
            let room = PART_BYTES - self.part.len();
            let (now, rest) = buf.split_at(room.min(buf.len()));
            self.part.extend_from_slice(now);
            buf = rest;
            if self.part.len() == PART_BYTES {
                self.ship();
            }
        }
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// `part` as an LZ4 block, its size exact: compressing into a buffer of
/// the largest size a block can take and keeping that buffer would hold
/// about a part's bytes per part.
fn compress(part: &[u8], scratch: &mut Vec<u8>) -> Vec<u8> {
    scratch.resize(lz4_flex::block::get_maximum_output_size(part.len()), 0);
    match lz4_flex::block::compress_into(part, scratch) {
        Ok(n) => scratch[..n].to_vec(),
        // Not with a buffer of the largest size.
        Err(_) => lz4_flex::block::compress(part),
    }
}

/// Appends part `n` of run `run`, inflated, to `out`.
pub(super) fn inflate_into(
    store: &str,
    run: &str,
    n: i64,
    codec: &str,
    body: &[u8],
    out: &mut Vec<u8>,
) -> Result<(), StoreError> {
    let corrupt = |reason: String| StoreError::Corrupt {
        store: store.to_string(),
        reason: format!("run {run}, report part {n}: {reason}"),
    };
    if codec != CODEC {
        return Err(corrupt(format!(
            "codec `{codec}` is not one this toolscore reads ({CODEC})"
        )));
    }
    // Never more than a part's bytes: a block that would inflate past them
    // is refused, whatever it claims.
    let before = out.len();
    out.resize(before + PART_BYTES, 0);
    match lz4_flex::block::decompress_into(body, &mut out[before..]) {
        Ok(n) => {
            out.truncate(before + n);
            Ok(())
        }
        Err(e) => {
            out.truncate(before);
            Err(corrupt(format!(
                "cannot be inflated within {PART_BYTES} bytes: {e}"
            )))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `jsonl` written in pieces of `step` bytes.
    fn parts_of(jsonl: &[u8], step: usize) -> Parts {
        let mut w = PartWriter::new();
        for piece in jsonl.chunks(step) {
            w.write_all(piece).unwrap();
        }
        w.finish()
    }

    fn inflated(parts: &Parts) -> Vec<u8> {
        let mut back = Vec::new();
        for (n, p) in parts.bodies.iter().enumerate() {
            inflate_into("s", "r", n as i64, CODEC, p, &mut back).unwrap();
        }
        back
    }

    #[test]
    fn parts_give_the_bytes_back() {
        let text: Vec<u8> = (0..(3 * PART_BYTES / 40))
            .flat_map(|i| format!("{{\"case\":\"c{i}\",\"pass\":true}}\n").into_bytes())
            .collect();
        // Rows of the sizes JSONL reports have, and pieces longer than a
        // part.
        for jsonl in [
            &text[..],
            b"",
            b"{}\n",
            &text[..PART_BYTES],
            &text[..PART_BYTES + 1],
        ] {
            for step in [1_000, 4_093, PART_BYTES + 7] {
                let parts = parts_of(jsonl, step);
                assert_eq!(parts.bodies.len(), jsonl.len().div_ceil(PART_BYTES));
                assert!(inflated(&parts) == jsonl, "{} bytes by {step}", jsonl.len());
                // Each part but the last is whole.
                for (n, body) in parts.bodies.iter().enumerate() {
                    let size = lz4_flex::block::decompress(body, PART_BYTES).unwrap().len();
                    let whole = n + 1 < parts.bodies.len();
                    assert!(!whole || size == PART_BYTES, "part {n}: {size} bytes");
                }
            }
        }
    }

    #[test]
    fn without_a_thread_the_caller_compresses_the_same_parts() {
        let jsonl: Vec<u8> = (0..(5 * PART_BYTES / 30))
            .flat_map(|i| format!("{{\"row\":{i},\"x\":\"{}\"}}\n", i % 97).into_bytes())
            .collect();
        // As when no thread could be started.
        let mut w = PartWriter {
            started: true,
            ..PartWriter::new()
        };
        w.write_all(&jsonl).unwrap();
        assert!(w.worker.is_none() && w.done.len() == jsonl.len() / PART_BYTES);
        let alone = w.finish();
        assert!(alone.bodies == parts_of(&jsonl, 4_096).bodies);
        assert!(inflated(&alone) == jsonl);
    }

    #[test]
    fn bad_parts_are_refused() {
        let mut out = Vec::new();
        let e = inflate_into("s", "r", 0, "lz9", b"", &mut out).unwrap_err();
        assert!(e.to_string().contains("codec `lz9`"), "{e}");
        let e = inflate_into("s", "r", 0, CODEC, b"\xff\xff\xff", &mut out).unwrap_err();
        assert!(e.to_string().contains("cannot be inflated"), "{e}");
        // A bomb: more than a part's bytes once inflated.
        let bomb = lz4_flex::block::compress(&vec![b'x'; PART_BYTES + 10]);
        let e = inflate_into("s", "r", 3, CODEC, &bomb, &mut out).unwrap_err();
        assert!(
            e.to_string().contains("part 3: cannot be inflated within"),
            "{e}"
        );
        assert!(out.is_empty());
    }
}
