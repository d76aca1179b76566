//! A family marker in a namespace written with `:` where others write `.`
//! (docs/conventions.md, "The generic tool-kind rule"). Genkit's own
//! telemetry types each action span `genkit:metadata:subtype` (`tool`,
//! `model`, `flow`, ...) beside `genkit:name`, `genkit:input` and
//! `genkit:output`: the same shape as `acme.span.kind = tool` beside
//! `acme.name`, with another separator. A marker key (`metadata.subtype`)
//! with each `.` written `:`, after a namespace that ends in `:`, is that
//! marker; the rule's `{ns}` sources are then read with `:` for `.` too
//! (`{ns}tool.name` is `genkit:tool:name`), as a writer keeps one separator
//! through its keys. A key that mixes the two (`acme:span.kind`) is no
//! marker: no writer was seen to.

/// The placeholder for a family rule's namespace in its sources' keys
/// (declared here, where it is filled, and used by `extract::rules`).
pub const NS: &str = "{ns}";

/// A dotted family key in its `:` form, with the last 8 bytes of that
/// form as one word (as the rules compare keys: `0` for a shorter key).
pub(crate) type ColonKey = (String, u64);

/// The `:` form of family key `k`, when it has a `.` to write so (a key
/// of one segment, `span_kind`, is matched as it is: see [`ends_ns`]).
pub(crate) fn colon_key(k: &str, tail8: impl Fn(&[u8]) -> u64) -> Option<ColonKey> {
    k.contains('.').then(|| {
        let c = k.replace('.', ":");
        let tail = tail8(c.as_bytes());
        (c, tail)
    })
}

/// Whether the last 8 bytes of a key, as one word, hold a `:`. A dotted
/// marker key's last segment is under 8 bytes (`subtype`), so its `:`
/// form has its last `:` there: keys without one (nearly all) skip the
/// `:` forms with this one test.
pub(crate) fn has_colon(tail: u64) -> bool {
    // The classic "has a zero byte" test after xor with `:` in every byte.
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGHS: u64 = 0x8080_8080_8080_8080;
    let x = tail ^ (ONES * u64::from(b':'));
    x.wrapping_sub(ONES) & !x & HIGHS != 0
}

/// Whether `ns`, before a family key `k` matched as written, is a `:`
/// namespace that may precede it: `k` of one segment (no `.`), as a
/// `:` writer would write it too.
pub(crate) fn ends_ns(ns: &[u8], k: &str) -> bool {
    ns.len() > 1 && ns.ends_with(b":") && !k.contains('.')
}

/// The namespace before `ck`, the `:` form of a family key, in `key`
/// (`genkit:` of `genkit:metadata:subtype`); `key_tail` is `key`'s last 8
/// bytes as one word.
pub(crate) fn namespace<'a>(key: &'a [u8], key_tail: u64, ck: &ColonKey) -> Option<&'a [u8]> {
    let (c, c_tail) = ck;
    if c.len() >= 8 && *c_tail != key_tail {
        return None;
    }
    let ns = key.strip_suffix(c.as_bytes())?;
    (ns.len() > 1 && ns.ends_with(b":")).then_some(ns)
}

/// Source key `k` of a family rule in namespace `ns`: `{ns}` set to `ns`,
/// and, in a `:` namespace, the rest of the key with `:` for `.`.
pub(crate) fn in_namespace(k: &str, ns: &str) -> String {
    match k.strip_prefix(NS) {
        Some(rest) if ns.ends_with(':') => format!("{ns}{}", rest.replace('.', ":")),
        _ => k.replace(NS, ns),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tail8(key: &[u8]) -> u64 {
        key.last_chunk::<8>().map_or(0, |t| u64::from_be_bytes(*t))
    }

    #[test]
    fn a_colon_in_the_last_eight_bytes_is_seen() {
        assert!(has_colon(tail8(b"genkit:metadata:subtype")));
        assert!(has_colon(tail8(b"x:kind:a")));
        assert!(!has_colon(tail8(b"acme.span.kind")));
        assert!(!has_colon(tail8(b"genkit:metadata_subtype")));
        // `;` and `9` are one off `:`: no false hit from a borrow.
        assert!(!has_colon(tail8(b"a;b;c9d9")));
    }

    #[test]
    fn a_dotted_key_is_matched_in_its_colon_form_after_a_colon_namespace() {
        let ck = colon_key("metadata.subtype", tail8).expect("dotted");
        assert_eq!(ck.0, "metadata:subtype");
        let key = b"genkit:metadata:subtype";
        assert_eq!(namespace(key, tail8(key), &ck), Some(&b"genkit:"[..]));
        // Bare, after a dotted namespace, or mixed: no `:` namespace.
        for key in [
            &b"metadata:subtype"[..],
            b"genkit.metadata:subtype",
            b":metadata:subtype",
            b"genkitmetadata:subtype",
        ] {
            assert_eq!(namespace(key, tail8(key), &ck), None, "{key:?}");
        }
        assert!(colon_key("span_kind", tail8).is_none());
    }

    #[test]
    fn a_key_of_one_segment_may_follow_a_colon_namespace() {
        assert!(ends_ns(b"acme:", "span_kind"));
        assert!(!ends_ns(b"acme:", "span.kind"));
        assert!(!ends_ns(b":", "span_kind"));
        assert!(!ends_ns(b"acme.", "span_kind"));
    }

    #[test]
    fn sources_in_a_colon_namespace_keep_its_separator() {
        assert_eq!(in_namespace("{ns}tool.name", "genkit:"), "genkit:tool:name");
        assert_eq!(in_namespace("{ns}input", "genkit:"), "genkit:input");
        assert_eq!(in_namespace("{ns}tool.name", "acme."), "acme.tool.name");
        assert_eq!(in_namespace("tool.name", "genkit:"), "tool.name");
    }
}
