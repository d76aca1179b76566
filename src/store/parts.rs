//! A run's JSONL report as the store keeps it: cut into parts of
//! [`PART_BYTES`], each an LZ4 block of its own. A row per line cost more
//! than the run's scoring; zlib's fastest level still cost a tenth of the
//! run; LZ4 compresses several times faster (JSONL shrinks about sixfold),
//! and the cutting lets both cores compress.

use super::StoreError;

/// The codec name saved with each part.
pub(super) const CODEC: &str = "lz4";

/// JSONL bytes per part (the last may be shorter). A part read back that
/// inflates past this is refused: a store's contents are not trusted.
pub(super) const PART_BYTES: usize = 1 << 20;

/// `jsonl` cut into parts and compressed, in order, on up to as many
/// threads as there are cores.
pub(super) fn compress(jsonl: &[u8]) -> Vec<Vec<u8>> {
    let chunks: Vec<&[u8]> = jsonl.chunks(PART_BYTES).collect();
    let threads = std::thread::available_parallelism()
        .map_or(1, usize::from)
        .clamp(1, 4)
        .min(chunks.len().max(1));
    let one = |chunk: &[u8]| lz4_flex::block::compress(chunk);
    if threads <= 1 {
        return chunks.iter().map(|c| one(c)).collect();
    }
    let mut out: Vec<Vec<u8>> = vec![Vec::new(); chunks.len()];
    std::thread::scope(|s| {
        let workers: Vec<_> = (0..threads)
            .map(|w| {
                let chunks = &chunks;
                s.spawn(move || {
                    (w..chunks.len())
                        .step_by(threads)
                        .map(|i| (i, one(chunks[i])))
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        for worker in workers {
            // A panic in a worker is raised here.
            let done = worker
                .join()
                .unwrap_or_else(|e| std::panic::resume_unwind(e));
            for (i, body) in done {
                out[i] = body;
            }
        }
    });
    out
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

    #[test]
    fn parts_give_the_bytes_back() {
        let text: Vec<u8> = (0..(3 * PART_BYTES / 40))
            .flat_map(|i| format!("{{\"case\":\"c{i}\",\"pass\":true}}\n").into_bytes())
            .collect();
        for jsonl in [&text[..], b"", b"{}\n", &text[..PART_BYTES]] {
            let parts = compress(jsonl);
            assert_eq!(parts.len(), jsonl.len().div_ceil(PART_BYTES));
            let mut back = Vec::new();
            for (n, p) in parts.iter().enumerate() {
                inflate_into("s", "r", n as i64, CODEC, p, &mut back).unwrap();
            }
            assert!(back == jsonl);
        }
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
