//! The keys that say what kind of span a span is (docs/conventions.md,
//! "The conversation witness", "Bodies under any key"): every key of every
//! span is asked whether it ends like one, so the test looks at the last
//! four bytes first.

/// How the key of an attribute that says what kind of span it is ends
/// (matched without regard to case).
pub(super) const KIND_ENDINGS: [&str; 7] = [
    "span.kind",
    "span_kind",
    "spantype",
    "span.type",
    "span_type",
    "observation.type",
    "operation.name",
];

/// The last dot-separated part of the one ending of [`KIND_ENDINGS`] that
/// the generic tool-kind rule's projection does not keep already, the
/// one key of the `operation.name` ending read, and the requested model
/// ([`super::requested_model`]) (projection at decode).
pub(crate) const KIND_TAILS: [&str; 1] = ["spanType"];
pub(crate) const KIND_KEYS: [&str; 2] = ["gen_ai.operation.name", "gen_ai.request.model"];

/// Whether `key`'s last four bytes are one of [`KIND_WORDS`] (the first
/// test of [`kind_like`]).
#[inline]
pub(super) fn kind_word(key: &[u8]) -> bool {
    key.last_chunk::<4>().is_some_and(|last| {
        let last = u32::from_le_bytes(*last) | 0x2020_2020;
        KIND_WORDS.iter().any(|w| last == u32::from_le_bytes(*w))
    })
}

/// Whether `key` ends as one of [`KIND_ENDINGS`]: each ends in one of
/// [`KIND_WORDS`], which one look at the last four bytes tells.
pub(super) fn kind_like(key: &[u8]) -> bool {
    let Some(last) = key.last_chunk::<4>() else {
        return false;
    };
    // Lowercase as ASCII letters: a byte that is no letter may come out as
    // one, but none of a word's letters can come out as anything else.
    let last = u32::from_le_bytes(*last) | 0x2020_2020;
    if !KIND_WORDS.iter().any(|w| last == u32::from_le_bytes(*w)) {
        return false;
    }
    KIND_ENDINGS.iter().any(|e| {
        let e = e.as_bytes();
        // The endings of the word found first, then the whole ending.
        e.last_chunk::<4>()
            .is_some_and(|w| u32::from_le_bytes(*w) == last)
            && key.len() >= e.len()
            && key[key.len() - e.len()..].eq_ignore_ascii_case(e)
    })
}

/// The last four letters of every one of [`KIND_ENDINGS`], lowercase.
const KIND_WORDS: [[u8; 4]; 3] = [*b"kind", *b"type", *b"name"];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_quick_looks_see_every_ending() {
        // `kind_like` reads on only for keys ending in one of `KIND_WORDS`.
        for e in KIND_ENDINGS {
            assert!(KIND_WORDS.iter().any(|w| e.as_bytes().ends_with(w)), "{e}");
            assert!(kind_like(e.as_bytes()) && kind_like(format!("acme.{e}").as_bytes()));
            assert!(kind_like(e.to_uppercase().as_bytes()), "{e}");
        }
        assert!(!kind_like(b"acme.kind.x") && !kind_like(b"ind") && !kind_like(b"span.name"));
        assert!(kind_like(b"acme.SPAN.KIND") && kind_like(b"x.spanType"));
        assert!(!kind_like(b"acme.span.kin\xc4") && !kind_like(b"span.kind\x00"));
    }
}
