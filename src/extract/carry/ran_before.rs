//! Calls a trace counts from the conversation only when read again with
//! the asks an earlier trace left open (`Carry::take`), whose execution a
//! tool span of a trace read before recorded (docs/conventions.md, "Each
//! model call its own trace").
//!
//! A LangChain.js hand loop under OpenInference: each model call and each
//! tool call a trace of its own, the tool traces between the model call
//! that asked and the one whose request carries the results. The request
//! repeats the model's turn only as the framework's serialized messages,
//! so the calls are counted there only against the earlier trace's asks,
//! after `twice` compared the trace's first read with the kept calls. Such
//! a call whose tool span ran between the asking and the request
//! (`twice::ran_between`) is that span's record: the trace is read once
//! more, the span's call stays counted in its trace.

use super::{call_keys, key, Carry, Open, OpenAsk, SPAN_BARE};
use crate::extract::open::{ASKED_ARGS_FORM, ASKED_NAME_FORM, HISTORY_FORM};
use crate::extract::twice;

impl<T> Carry<T> {
    /// The carried entries saying that calls `open` (a second read, with
    /// `taken`) counted from the conversation are records of kept tool
    /// spans' calls without call ids; each kept call is matched once.
    pub(super) fn ran_before(&mut self, open: Option<&Open>, taken: &[OpenAsk]) -> Vec<OpenAsk> {
        let Some(open) = open else {
            return Vec::new();
        };
        let asks: Vec<&OpenAsk> = taken
            .iter()
            .filter(|a| {
                !a.is_echo()
                    && a.form != HISTORY_FORM
                    && a.form != ASKED_ARGS_FORM
                    && a.form != ASKED_NAME_FORM
            })
            .collect();
        let mut out = Vec::new();
        for later in open
            .calls
            .iter()
            .filter(|c| c.from_conversation && c.id.is_some())
        {
            let Some(t) = self.asked_in(later, &asks) else {
                continue;
            };
            let bare = key(SPAN_BARE, later.name.as_str());
            // A run of the call before an attempt of it that also fits
            // (`extract::attempts`: a failed run a retry ran again).
            let mut attempts = false;
            let found = self.calls.first_under(bare, |c| {
                let fits = twice::ran_between(later, c, t);
                attempts |= fits && c.attempt;
                fits && !c.attempt
            });
            let found = match (found, attempts) {
                (None, true) => self
                    .calls
                    .first_under(bare, |c| twice::ran_between(later, c, t)),
                (found, _) => found,
            };
            // A span that took the model's arguments through a wrapper
            // joins only alone (`wrapped_span`).
            let found = found.filter(|&k| !self.wrapped_among_others(later, t, k));
            if let Some(c) = found.and_then(|k| self.calls.remove(k)) {
                out.push(twice::carried(later, &c, true));
                self.spend(Some(c));
                // Counted: the traces after see it under the conversation's
                // id too (as `Carry::twice` keeps it).
                self.calls
                    .push(later.clone(), call_keys(later), later.start);
            }
        }
        out
    }
}
