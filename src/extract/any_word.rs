//! Whether a text holds any of a few literal words ([`AnyWord`]).

use aho_corasick::packed;
use regex::bytes::Regex;

/// A search for any of a few literal words, built once. A packed (SIMD)
/// searcher's hit is a match: no regex engine runs after it and no cache
/// is fetched from a shared pool per text (readers ask it of most JSON
/// texts of every span, on every worker). Where the CPU has no such
/// search, the alternation of the words as a regex, which finds the same.
pub(crate) struct AnyWord {
    packed: Option<packed::Searcher>,
    regex: Option<Regex>,
    words: Vec<Box<[u8]>>,
}

impl AnyWord {
    pub(crate) fn new<S: AsRef<str>>(words: impl IntoIterator<Item = S>) -> AnyWord {
        let words: Vec<Box<[u8]>> = words
            .into_iter()
            .map(|w| w.as_ref().as_bytes().into())
            .collect();
        let packed = packed::Searcher::new(words.iter());
        let regex = match packed {
            Some(_) => None,
            None => {
                let escaped = words
                    .iter()
                    .map(|w| regex::escape(&String::from_utf8_lossy(w)));
                Regex::new(&escaped.collect::<Vec<_>>().join("|")).ok()
            }
        };
        AnyWord {
            packed,
            regex,
            words,
        }
    }

    /// Whether one of the words is somewhere in `text`.
    pub(crate) fn is_in(&self, text: &[u8]) -> bool {
        match (&self.packed, &self.regex) {
            (Some(p), _) => p.find(text).is_some(),
            (None, Some(re)) => re.is_match(text),
            (None, None) => (self.words.iter()).any(|w| memchr::memmem::find(text, w).is_some()),
        }
    }
}

impl std::fmt::Debug for AnyWord {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let words = self.words.iter().map(|w| String::from_utf8_lossy(w));
        f.debug_list().entries(words).finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The packed search finds what a search per word finds, in short
    /// texts (below the SIMD search's least length) and long ones.
    #[test]
    fn finds_what_each_word_finds() {
        let words = ["\"ws_", "mcp_call", "executableCode", "\"builtin\""];
        let any = AnyWord::new(words);
        let pad = "x".repeat(100);
        for w in words {
            for text in [w.to_string(), format!("[{w}]"), format!("{pad}{w}{pad}")] {
                assert!(any.is_in(text.as_bytes()), "{text}");
            }
        }
        for text in [
            "",
            "\"w",
            "mcp_cal",
            &format!("{pad}\"wsx_{pad}"),
            "\"builtin",
        ] {
            assert!(!any.is_in(text.as_bytes()), "{text}");
        }
    }
}
