//! A tool span without a call id, a trace of its own, whose arguments wrap
//! the model's in a one-key object (`extract::wrapped_args`), joined with
//! the ask or the conversation's call of another trace (docs/conventions.md,
//! "One call, several spans").
//!
//! Read after the asking trace, the span takes the arguments of the open
//! ask of the last model output before it that it may have run
//! ([`Carry::wrapping_ask`]); read after the answering trace, it is the
//! execution of the one conversation call it may have run
//! ([`Carry::counting_wrapped`]). Two fitting there joins nothing: which of
//! them the span ran is not known.

use super::{key, Carry, CONVERSATION, NAME, SPAN_BARE};
use crate::extract::open::{Echo, OpenAsk, SPAN_BETWEEN_FORM};
use crate::extract::requested::Asked;
use crate::extract::wrapped_args;

impl<T> Carry<T> {
    /// The open ask that `span`, a tool span's call without a call id, ran
    /// and wrote the arguments of otherwise: as their one field's bare
    /// value (`twice::renders_ask`: the last such ask), or wrapped
    /// ([`Carry::wrapping_ask`]).
    pub(super) fn rendering_ask(&self, span: &Echo) -> Option<&OpenAsk> {
        if span.id.is_some() {
            return None;
        }
        let bare = self.asks.last_under(key(NAME, span.name.as_str()), |a| {
            crate::extract::twice::renders_ask(span, a)
        });
        match bare {
            Some(k) => self.asks.get(k),
            None => self.wrapping_ask(span),
        }
    }

    /// The open ask that `span`, a tool span's call without a call id, ran
    /// with the model's arguments wrapped (`wrapped_args::wraps_ask`): of
    /// the asks that fit, the one whose model output ended last before the
    /// span started, when that output asked for no other that fits.
    ///
    /// An older fitting ask left open (a run aborted before its tool ran,
    /// an evaluation repeated in one process) is not the one a later span
    /// ran: the agent runs the calls of the model output it got last. Two
    /// fitting asks of that last output (or of two outputs ending at the
    /// same time) join nothing: which of them the span ran is not known.
    pub(super) fn wrapping_ask(&self, span: &Echo) -> Option<&OpenAsk> {
        // Cheap first: only a span `wrapped_args::mark` found may wrap.
        if span.id.is_some() || span.wrapped.as_ref().is_none_or(|w| w.took_args) {
            return None;
        }
        let fits = self
            .asks
            .under(key(NAME, span.name.as_str()))
            .filter_map(|k| self.asks.get(k))
            .filter(|a| !a.is_echo() && wrapped_args::wraps_ask(span, a));
        let mut last: Option<&OpenAsk> = None;
        let mut tied = false;
        for a in fits {
            match last.map(|l| a.end_time_unix_nano.cmp(&l.end_time_unix_nano)) {
                Some(std::cmp::Ordering::Less) => {}
                Some(std::cmp::Ordering::Equal) => tied = true,
                None | Some(std::cmp::Ordering::Greater) => {
                    last = Some(a);
                    tied = false;
                }
            }
        }
        last.filter(|_| !tied)
    }

    /// The carried entry saying that `span`, a tool span's call without a
    /// call id read after the trace that counts its call from the
    /// conversation, ran that call with the model's arguments wrapped
    /// (`wrapped_args::ran_wrapped`), when exactly one kept call fits; that
    /// call stays counted and is not matched so again (the entry goes to
    /// `out`, and `true`). Two fitting: none, and a note in `out`.
    pub(super) fn counting_wrapped(&mut self, span: &Echo, out: &mut Vec<OpenAsk>) -> bool {
        self.counting_wrapped_entry(span, out)
            .map(|e| out.push(e))
            .is_some()
    }

    fn counting_wrapped_entry(&mut self, span: &Echo, notes: &mut Vec<OpenAsk>) -> Option<OpenAsk> {
        if span.wrapped.as_ref().is_none_or(|w| w.took_args) {
            return None;
        }
        let mut fits = self
            .calls
            .under(key(CONVERSATION, span.name.as_str()))
            .filter(|&k| {
                self.calls
                    .get(k)
                    .is_some_and(|c| wrapped_args::ran_wrapped(c, span))
            });
        let first = fits.next()?;
        let second = fits.next();
        drop(fits);
        if let Some(second) = second {
            let traces =
                [first, second].map(|k| self.calls.get(k).map_or(span.trace_id, |c| c.trace_id));
            notes.push(super::lone_span::ambiguous(span, traces));
            return None;
        }
        let counted = self.calls.get_mut(first)?;
        counted.asked = None;
        Some(OpenAsk {
            asked: Asked {
                id: None,
                name: span.name.clone(),
                // The model's arguments, for the note.
                args: counted.args.clone(),
            },
            form: SPAN_BETWEEN_FORM,
            trace_id: counted.trace_id,
            span_id: span.span_id,
            end_time_unix_nano: counted.end,
            run: 0,
        })
    }

    /// Whether the kept call at `k`, that ran `later` (asked at `asked`),
    /// took the model's arguments through a wrapper while another kept
    /// span's call without a call id ran it too: two records in one window,
    /// which one the model saw is not known (`Carry::ran_before` takes the
    /// first of spans with the model's own arguments).
    pub(super) fn wrapped_among_others(&self, later: &Echo, asked: u64, k: usize) -> bool {
        let took = |c: &Echo| c.wrapped.as_ref().is_some_and(|w| w.took_args);
        if !self.calls.get(k).is_some_and(took) {
            return false;
        }
        self.calls
            .under(key(SPAN_BARE, later.name.as_str()))
            .filter(|&o| o != k)
            .filter_map(|o| self.calls.get(o))
            .any(|c| crate::extract::twice::ran_between(later, c, asked))
    }
}
