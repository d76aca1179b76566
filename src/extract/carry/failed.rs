//! Open asks that failed, told by a later trace's request in text
//! (docs/conventions.md, "The conversation witness", "A failed call told in
//! text").
//!
//! A framework that drops a failed step from its history (smolagents) sends
//! the next request no result under the call's id, only a text saying the
//! tool raised (`conversation::failed_texts`). When each model call is a
//! trace of its own, that request is in the next trace: a failure its first
//! request tells (after its last model turn) answers the latest ask kept
//! here of that tool with equal arguments, from the same process, whose
//! model output ended before the request (the last model output before it,
//! as for a bare result: an older ask of the same call was never answered,
//! and the request tells the retry's failure). Each ask is answered once
//! (taken from the carry), each told failure answers one ask.

use super::{ended_by, key, Carry, NAME};
use crate::extract::conversation::failed_texts::tells_asked;
use crate::extract::open::{Open, OpenAsk, Told};

/// Whether kept ask `a` is the call failure `t` tells of.
fn told_of(a: &OpenAsk, t: &Told) -> bool {
    !a.is_echo()
        && a.asked.id.is_some()
        && a.run == t.run
        && ended_by(a.end_time_unix_nano, t.start)
        && tells_asked(&t.name, &t.args, &a.asked.name, &a.asked.args)
}

impl<T> Carry<T> {
    /// The positions of the kept asks the failures `open` tells answer,
    /// each at most once, in the order told.
    pub(super) fn failed(&self, open: &Open) -> Vec<usize> {
        let mut out: Vec<usize> = Vec::new();
        for t in &open.failed {
            let free = self
                .asks
                .under(key(NAME, t.name.as_str()))
                .filter(|k| !out.contains(k));
            // The latest to end; of equal ends, the first kept.
            let mut found: Option<(usize, u64)> = None;
            for k in free {
                let Some(a) = self.asks.get(k).filter(|a| told_of(a, t)) else {
                    continue;
                };
                if found.is_none_or(|(_, end)| a.end_time_unix_nano > end) {
                    found = Some((k, a.end_time_unix_nano));
                }
            }
            let found = found.map(|(k, _)| k);
            out.extend(found);
        }
        out
    }

    /// The kept asks the failures `open` tells answer, taken out.
    pub(super) fn take_failed(&mut self, open: &Open) -> Vec<OpenAsk> {
        let mut at = self.failed(open);
        // From the back, so the positions before stay right.
        at.sort_unstable_by(|a, b| b.cmp(a));
        let mut taken: Vec<OpenAsk> = at.iter().filter_map(|&k| self.asks.remove(k)).collect();
        taken.reverse();
        taken
    }
}
