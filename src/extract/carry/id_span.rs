//! A tool span with the model's call id, a trace of its own, run between
//! the model output asking for the call and the request carrying its
//! result, each in a trace of its own (docs/conventions.md, "One call,
//! several spans").
//!
//! When no span context reaches the tool's code (two copies of the
//! tracing API in one process: the AI SDK under Sentry), every span is
//! the root of its own trace: the model call asking for a tool, the tool
//! span (its name, the model's call id, arguments, result), then the model
//! call whose request carries the result. The answering trace rebuilds the
//! call from its conversation under the same call id; it is the tool
//! span's call (`twice::ran_between` with a call id), not a second one.
//!
//! Read in input order, the asking trace is read first and the carry dates
//! the asking (`Carry::asked_at`) before the answering trace takes it. The
//! conversation's copy is matched with the kept tool span's call of its
//! tool and id that ran in that window, in the same process, when only one
//! fits; the span counts the call, with its result or its error. A span's
//! call left without a result that waits for a later run (`deferred`) is
//! left to that join: the request carrying the result counts it there.
//! The other order (the answering trace read before the tool span's) is
//! `twice::between_either` on the span's side.

use super::{key, Carry, CALL_ID};
use crate::extract::open::Echo;
use crate::extract::twice;

impl<T> Carry<T> {
    /// The position of the kept tool span's call, with `later`'s call id,
    /// that ran `later`, a call rebuilt from the conversation that a model
    /// output asked for at `asked` ([`twice::ran_between`]), when exactly
    /// one fits and no held trace waits for it as a deferred call.
    pub(super) fn running_id_span(&self, later: &Echo, asked: u64) -> Option<usize> {
        let id = later.id.as_deref()?;
        let mut fits = self
            .calls
            .under(key(CALL_ID, (later.name.as_str(), id)))
            .filter(|&k| {
                self.calls.get(k).is_some_and(|c| {
                    c.id.is_some() && twice::ran_between(later, c, asked) && !self.defers(c)
                })
            });
        let first = fits.next()?;
        // Two spans of the call id in the window: retries or two records;
        // which one the model saw is not known, so neither is joined.
        fits.next().is_none().then_some(first)
    }

    /// Whether a held trace waits for a later run to answer `span`'s call
    /// (`deferred`).
    fn defers(&self, span: &Echo) -> bool {
        self.held
            .iter()
            .filter_map(|h| h.asking.as_ref())
            .any(|a| a.defers(span))
    }
}
