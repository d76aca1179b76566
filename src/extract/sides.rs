//! Which side of a model call a key names (`mlflow.spanInputs`: what went
//! in; `gen_ai.response.tool_calls`: what came out), by its words: shared
//! by the conversation witness's bodies under any key
//! (`conversation/bodies.rs`) and a span's input/output read from its span
//! events (`event_side.rs`).

use std::cell::RefCell;
use std::collections::HashMap;

use foldhash::fast::RandomState;

/// Words of a key that say it holds what went into the model call.
pub(crate) const INPUT_WORDS: [&str; 5] = ["input", "inputs", "request", "prompt", "prompts"];
/// Words of a key that say it holds what came out of it.
pub(crate) const OUTPUT_WORDS: [&str; 5] =
    ["output", "outputs", "response", "completion", "completions"];
/// Both sides' words: the keys an event attribute that says a side may
/// have bare (projection at decode).
pub(crate) const SIDE_WORDS: [&[&str]; 2] = [&INPUT_WORDS, &OUTPUT_WORDS];

/// Which side of a model call an attribute holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Side {
    Input,
    Output,
}

/// The side of a model call attribute `key` holds, by its words
/// (`mlflow.spanInputs`: input; `gen_ai.response.tool_calls`: output);
/// `None` when it names neither side, or both.
///
/// The witness asks this of every JSON attribute of a model call several
/// times (once per side and reader), and spans repeat the same keys: each
/// thread remembers the answers for up to [`MAX_REMEMBERED`] keys.
pub(crate) fn side_of(key: &str) -> Option<Side> {
    thread_local! {
        static SEEN: RefCell<HashMap<Box<str>, Option<Side>, RandomState>> =
            RefCell::new(HashMap::default());
    }
    SEEN.with(|seen| {
        if let Some(&side) = seen.borrow().get(key) {
            return side;
        }
        let side = side_by_words(key);
        let mut seen = seen.borrow_mut();
        if seen.len() < MAX_REMEMBERED {
            seen.insert(key.into(), side);
        }
        side
    })
}

/// Keys whose side a thread remembers ([`side_of`]): the keys seen first,
/// so that a trace of made-up keys costs memory once.
const MAX_REMEMBERED: usize = 1024;

/// [`side_of`], worked out from the key's words.
fn side_by_words(key: &str) -> Option<Side> {
    let (mut input, mut output) = (false, false);
    // Most words have no list word's length and first letter: two byte
    // compares say so before any word is compared whole.
    let is = |words: &[&str], w: &str, first: u8| {
        words.iter().any(|x| {
            x.len() == w.len() && x.as_bytes().first() == Some(&first) && x.eq_ignore_ascii_case(w)
        })
    };
    for_each_word(key, |word| {
        let first = word.as_bytes().first().map_or(0, u8::to_ascii_lowercase);
        input |= is(&INPUT_WORDS, word, first);
        output |= is(&OUTPUT_WORDS, word, first);
    });
    match (input, output) {
        (true, false) => Some(Side::Input),
        (false, true) => Some(Side::Output),
        _ => None,
    }
}

/// What a byte is to [`for_each_word`]: a separator, a lowercase letter
/// or digit, or an uppercase letter.
const SEPARATOR: u8 = 0;
const LOWER: u8 = 1;
const UPPER: u8 = 2;
const BYTE_CLASS: [u8; 256] = {
    let mut t = [SEPARATOR; 256];
    let mut i = 0;
    while i < 256 {
        let c = i as u8;
        if c.is_ascii_uppercase() {
            t[i] = UPPER;
        } else if c.is_ascii_lowercase() || c.is_ascii_digit() {
            t[i] = LOWER;
        }
        i += 1;
    }
    t
};

/// Calls `f` with each word of a key (compared without regard to case):
/// split at punctuation and where a lowercase letter meets an uppercase
/// one (`spanInputs`: `span`, `Inputs`). Slices of `key`: this runs on
/// every attribute of a model call and every span event, so nothing is
/// allocated, and the key is read as bytes (a word is ASCII letters and
/// digits: every other byte, those of a character beyond ASCII among them,
/// separates words, so every slice starts and ends at a character
/// boundary).
pub(crate) fn for_each_word<'k>(key: &'k str, mut f: impl FnMut(&'k str)) {
    let mut start: Option<usize> = None;
    let mut prev_lower = false;
    for (i, &c) in key.as_bytes().iter().enumerate() {
        let class = BYTE_CLASS[usize::from(c)];
        if class == SEPARATOR {
            if let Some(w) = start.take().and_then(|s| key.get(s..i)) {
                f(w);
            }
            prev_lower = false;
            continue;
        }
        match start {
            Some(s) if class == UPPER && prev_lower => {
                if let Some(w) = key.get(s..i) {
                    f(w);
                }
                start = Some(i);
            }
            Some(_) => {}
            None => start = Some(i),
        }
        prev_lower = class == LOWER;
    }
    if let Some(w) = start.and_then(|s| key.get(s..)) {
        f(w);
    }
}

/// The texts of side `side` in `s`'s events: of each event whose name says
/// the side ([`side_of`]), the first string attribute whose key says it too
/// and of which `take` (given the key and the text) keeps a text.
pub(crate) fn event_texts<'s>(
    s: &'s crate::assemble::SpanRecord,
    side: Side,
    take: impl Fn(&str, &'s str) -> Option<&'s str> + 's,
) -> impl Iterator<Item = &'s str> + 's {
    s.span
        .events
        .iter()
        .filter(move |e| side_of(&e.name) == Some(side))
        .filter_map(move |e| {
            e.attributes.iter().find_map(|kv| {
                if side_of(&kv.key) != Some(side) {
                    return None;
                }
                let crate::assemble::Val::Str(t) =
                    kv.value.as_ref().map(crate::assemble::Val::of)?
                else {
                    return None;
                };
                take(&kv.key, t)
            })
        })
}
