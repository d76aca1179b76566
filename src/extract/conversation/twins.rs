//! One model request recorded twice, each record a trace of its own
//! (docs/conventions.md, "The conversation witness", "One request, two
//! records").
//!
//! A framework's instrumentation and the model client's may both record
//! every model call (Laminar under LangChain.js: the LangChain `chat` span
//! and the OpenAI client's `chat` span, each its own trace). The client's
//! record carries the request's results under their call ids; the
//! framework's the same results without ids, after a model turn that lost
//! its calls. Read after the client's record, the framework's paired its
//! results by order with another record of the same asks (a chain output's
//! copy of the model's answer) and counted each call a second time.
//!
//! A record's request is known by its [`Print`]: the contents of the
//! results its first request carries, in order, hashed once per trace
//! (whichever writer: ids, names and the model turns' form left out). Two
//! records of one process whose prints are equal and whose spans overlap
//! in time are one request: its results answered once, by the record read
//! first. The carry keeps the prints of the last traces in a table by
//! hash, so a trace is compared only with the records of its own print.
//! Two requests of one conversation may carry the same results (a second
//! user turn before any new call, a retry), but one follows the other: they
//! do not overlap in time. In the other order (the record without ids read
//! first), `carry::copies::answered_before` keeps the asks the other record
//! answered from results without ids.

use std::collections::{HashMap, VecDeque};
use std::hash::{BuildHasher, Hash, Hasher};

use foldhash::fast::FixedState;
use serde_json::Value;

use super::Request;
use crate::assemble::Trace;
use crate::extract::open::{run_key, Print};

/// The seed of the prints' hash (any fixed number).
const SEED: u64 = 0x7477_696e;

/// The print of the first request of `trace` (`inputs`: which spans
/// record one; `requests`: one per span), when it carries results.
pub(super) fn print_of(trace: &Trace, inputs: &[bool], requests: &[Request]) -> Option<Print> {
    let start = |i: usize| trace.spans[i].span.start_time_unix_nano;
    let first = (0..trace.spans.len())
        .filter(|&i| inputs.get(i).copied().unwrap_or(false))
        .min_by_key(|&i| (start(i), i))?;
    let r = requests.get(first)?;
    if r.answers.is_empty() {
        return None;
    }
    let mut h = FixedState::with_seed(SEED).build_hasher();
    r.answers.len().hash(&mut h);
    for a in &r.answers {
        hash_content(a.content.as_ref(), &mut h);
    }
    let s = &trace.spans[first];
    Some(Print {
        hash: h.finish(),
        run: run_key(s),
        start: s.span.start_time_unix_nano,
        end: s.span.end_time_unix_nano,
    })
}

/// Hashes a result's content as its value: a JSON object's or list's text
/// as the value it holds (one writer keeps the text, another the value).
fn hash_content(content: Option<&Value>, h: &mut impl Hasher) {
    match content {
        None => 0u8.hash(h),
        Some(Value::String(t)) => {
            let t = t.trim();
            let parsed = (t.starts_with('{') || t.starts_with('['))
                .then(|| serde_json::from_str::<Value>(t).ok())
                .flatten();
            match parsed {
                Some(v) => v.to_string().hash(h),
                None => Value::String(t.to_string()).to_string().hash(h),
            }
        }
        Some(v) => v.to_string().hash(h),
    }
}

/// The prints of the last traces read (at most [`Prints::MAX`]), by hash.
#[derive(Debug, Default)]
pub struct Prints {
    by_hash: HashMap<u64, Vec<Print>>,
    order: VecDeque<u64>,
}

impl Prints {
    const MAX: usize = 256;

    /// Whether a print kept here records the same request as `p`.
    pub fn has_twin(&self, p: &Print) -> bool {
        self.by_hash
            .get(&p.hash)
            .is_some_and(|list| list.iter().any(|q| q.same_request(p)))
    }

    /// Keeps `p` for the traces after it (the oldest let go past
    /// [`Prints::MAX`]).
    pub fn keep(&mut self, p: Print) {
        self.by_hash.entry(p.hash).or_default().push(p);
        self.order.push_back(p.hash);
        while self.order.len() > Self::MAX {
            let Some(old) = self.order.pop_front() else {
                break;
            };
            if let Some(list) = self.by_hash.get_mut(&old) {
                // Kept in order: the oldest of its hash is first.
                if !list.is_empty() {
                    list.remove(0);
                }
                if list.is_empty() {
                    self.by_hash.remove(&old);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn print(hash: u64, run: u64, when: (u64, u64)) -> Print {
        Print {
            hash,
            run,
            start: when.0,
            end: when.1,
        }
    }

    #[test]
    fn a_twin_has_the_same_results_process_and_time() {
        let mut kept = Prints::default();
        kept.keep(print(5, 1, (10, 20)));
        assert!(kept.has_twin(&print(5, 1, (9, 21))));
        assert!(kept.has_twin(&print(5, 1, (15, 30))));
        // Near misses: after it (a retry, a later turn), another process,
        // other results.
        assert!(!kept.has_twin(&print(5, 1, (20, 30))));
        assert!(!kept.has_twin(&print(5, 2, (10, 20))));
        assert!(!kept.has_twin(&print(6, 1, (10, 20))));
    }

    #[test]
    fn only_the_last_prints_are_kept() {
        let mut kept = Prints::default();
        for i in 0..=Prints::MAX as u64 {
            kept.keep(print(i % 3, 1, (i * 10, i * 10 + 5)));
        }
        assert!(!kept.has_twin(&print(0, 1, (0, 5))));
        let last = Prints::MAX as u64;
        assert!(kept.has_twin(&print(last % 3, 1, (last * 10, last * 10 + 5))));
        assert_eq!(kept.order.len(), Prints::MAX);
        let listed: usize = kept.by_hash.values().map(Vec::len).sum();
        assert_eq!(listed, Prints::MAX);
    }

    #[test]
    fn a_json_text_hashes_as_its_value() {
        let hash = |v: &Value| {
            let mut h = FixedState::with_seed(SEED).build_hasher();
            hash_content(Some(v), &mut h);
            h.finish()
        };
        let text = Value::String("{\"a\": 1, \"b\": [2]}".into());
        assert_eq!(hash(&text), hash(&serde_json::json!({"b": [2], "a": 1})));
        assert_ne!(hash(&text), hash(&Value::String("{\"a\": 2}".into())));
    }
}
