//! Equality, ordering and prefix tests of short byte strings (attribute
//! keys, JSON field names, span names) compared inline, a word at a time.
//!
//! The readers compare such strings hundreds of thousands of times a run;
//! `==` on slices calls libc's `memcmp` through the PLT for each, and that
//! call, with the length dispatch inside it, cost more time than the few
//! words compared (about 4.5% of `inspect`'s CPU, against 1.7% before the
//! readers of issue 37). Longer strings still go to `memcmp`.

/// Above this length the comparisons call `memcmp` (its vector loop wins).
const INLINE_MAX: usize = 64;

/// The 8 bytes of `b` at `at` (`at + 8 <= b.len()`; 0 past the end, which
/// the callers never ask).
#[inline(always)]
fn word_at(b: &[u8], at: usize) -> u64 {
    match b.get(at..).and_then(<[u8]>::first_chunk::<8>) {
        Some(w) => u64::from_le_bytes(*w),
        None => 0,
    }
}

/// The first (up to) 4 bytes of `b` and its last 4, overlapping when short
/// (`4 <= b.len() < 8`).
#[inline(always)]
fn halves(b: &[u8]) -> (u32, u32) {
    let first = b.first_chunk::<4>().map_or(0, |w| u32::from_le_bytes(*w));
    let last = b.last_chunk::<4>().map_or(0, |w| u32::from_le_bytes(*w));
    (first, last)
}

/// Whether `a` and `b` are the same bytes.
#[inline(always)]
pub(crate) fn eq(a: &[u8], b: &[u8]) -> bool {
    let n = a.len();
    if n != b.len() {
        return false;
    }
    if n > INLINE_MAX {
        return a == b;
    }
    if n >= 8 {
        // Whole words, then the last word (overlapping the one before).
        let mut at = 0;
        while at + 8 < n {
            if word_at(a, at) != word_at(b, at) {
                return false;
            }
            at += 8;
        }
        return word_at(a, n - 8) == word_at(b, n - 8);
    }
    if n >= 4 {
        return halves(a) == halves(b);
    }
    a.iter().zip(b).all(|(x, y)| x == y)
}

/// Whether `text` starts with `prefix`.
#[inline(always)]
pub(crate) fn starts_with(text: &[u8], prefix: &[u8]) -> bool {
    text.get(..prefix.len()).is_some_and(|t| eq(t, prefix))
}

/// Whether `text` ends with `suffix`.
#[inline(always)]
pub(crate) fn ends_with(text: &[u8], suffix: &[u8]) -> bool {
    let from = text.len().checked_sub(suffix.len());
    from.and_then(|f| text.get(f..))
        .is_some_and(|t| eq(t, suffix))
}

/// `a` ordered against `b` as `str`'s and `[u8]`'s `Ord` order them
/// (bytes, then length).
#[inline(always)]
pub(crate) fn cmp(a: &[u8], b: &[u8]) -> std::cmp::Ordering {
    let n = a.len().min(b.len());
    if n > INLINE_MAX {
        return a.cmp(b);
    }
    let mut at = 0;
    while at + 8 <= n {
        let (x, y) = (word_at(a, at), word_at(b, at));
        if x != y {
            // The first differing byte decides: big-endian words compare
            // as their bytes do.
            return x.swap_bytes().cmp(&y.swap_bytes());
        }
        at += 8;
    }
    let (ta, tb) = (
        a.get(at..n).unwrap_or_default(),
        b.get(at..n).unwrap_or_default(),
    );
    for (x, y) in ta.iter().zip(tb) {
        if x != y {
            return x.cmp(y);
        }
    }
    a.len().cmp(&b.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every answer is the standard library's, over strings of every
    /// length up to past the inline limit, equal and differing at each
    /// position.
    #[test]
    fn as_the_standard_comparisons() {
        let base: Vec<u8> = (0..80u8).map(|i| b'a' + i % 26).collect();
        for n in 0..base.len() {
            let a = &base[..n];
            let mut others: Vec<Vec<u8>> = vec![a.to_vec(), base[..n.saturating_sub(1)].to_vec()];
            for at in 0..n {
                let mut o = a.to_vec();
                o[at] = b'A';
                others.push(o.clone());
                o[at] = 0xff;
                others.push(o);
            }
            others.push(base[..(n + 1).min(base.len())].to_vec());
            for b in &others {
                assert_eq!(eq(a, b), a == b.as_slice(), "{a:?} {b:?}");
                assert_eq!(cmp(a, b), a.cmp(b.as_slice()), "{a:?} {b:?}");
                assert_eq!(cmp(b, a), b.as_slice().cmp(a), "{a:?} {b:?}");
                assert_eq!(starts_with(a, b), a.starts_with(b), "{a:?} {b:?}");
                assert_eq!(starts_with(b, a), b.starts_with(a), "{a:?} {b:?}");
                assert_eq!(ends_with(a, b), a.ends_with(b), "{a:?} {b:?}");
                assert_eq!(ends_with(b, a), b.ends_with(a), "{a:?} {b:?}");
            }
        }
    }
}
