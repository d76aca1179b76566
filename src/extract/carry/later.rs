//! Asks a later trace counts (docs/conventions.md, "Each model call its
//! own trace").
//!
//! A trace whose model output asked for calls that nothing in it answers
//! (no later request carries their results, or, for calls written in the
//! model's text, no tool span shows them) warns of each. When each model
//! call is a trace of its own, a later trace of the same process counts
//! them: its request carries their results ([`Carry::take`],
//! [`Carry::retold`]), or its tool span shows the call (the same tool,
//! call id or arguments, started after the asking ended). Reading in input
//! order, the carry holds such an asking trace (as it holds a lone MCP
//! client trace, at most [`MAX_HELD`] traces) until later traces count all
//! its asks, and reads it again with a [`LATER_FORM`] entry for each ask
//! counted: its warning becomes a note saying where the call is counted.
//! An ask no later trace counts before the trace is let go (the window,
//! the end of the input, or `serve`, which delays no trace for this: at the
//! end of each batch) keeps its warning.
//!
//! A trace whose tool span's call its run left without a result waits so
//! too, for a later run answering it (`deferred`): the call is then counted
//! there, and the span's call, read again, is not.

use super::{Carry, Held, MAX_HELD};
use crate::assemble::{Trace, TraceId};
use crate::extract::conversation::{
    id_text, is_made, unanswered_warning, unjoined_warning, unshown_warning,
};
use crate::extract::open::{
    resource_key, Echo, Open, OpenAsk, DEFERRED_COUNTED_FORM, DEFERRED_FORM, LATER_FORM,
};
use crate::extract::Analysis;

/// Turns the warning of each ask `carried` says a later trace counts
/// ([`LATER_FORM`]) into a note naming that trace.
pub(crate) fn note(carried: &[OpenAsk], a: &mut Analysis) {
    for e in carried.iter().filter(|e| e.form == LATER_FORM) {
        let name = e.asked.name.as_str();
        let id = id_text(&e.asked);
        // Asks in the model's text have no call id (`Open::unshown`); an
        // ask a request here answers may lack only a tool span
        // (`joins::elsewhere`).
        let (what, tries) = match &e.asked.id {
            Some(_) => (
                format!("`{name}`{id} in span {}", e.span_id),
                vec![
                    (
                        unanswered_warning(name, &id, e.span_id, true),
                        "nothing in this trace answers it",
                    ),
                    (
                        unjoined_warning(&e.asked, e.span_id),
                        "no tool span of this trace shows it",
                    ),
                ],
            ),
            None => (
                format!("`{name}` in its text in span {}", e.span_id),
                vec![(
                    unshown_warning(name, e.span_id),
                    "nothing in this trace answers it",
                )],
            ),
        };
        let found = tries
            .into_iter()
            .find_map(|(w, why)| Some((a.warnings.iter().position(|x| *x == w)?, why)));
        let Some((k, why)) = found else {
            continue;
        };
        a.warnings.remove(k);
        a.notes.push(format!(
            "the model asked for {what}; {why}: trace {}, later (the same process), counts that call",
            e.trace_id
        ));
    }
}

/// A trace held until later traces count the calls it asked for and left
/// unanswered.
#[derive(Debug)]
pub(super) struct Asking {
    trace: Trace,
    /// The carried entries the trace's last reading had.
    read_with: Vec<OpenAsk>,
    /// Its asks no later trace has counted yet.
    waiting: Vec<OpenAsk>,
    /// Its asks counted later, as [`LATER_FORM`] entries.
    counted: Vec<OpenAsk>,
}

impl Asking {
    /// Whether the trace still waits for a later trace.
    pub(super) fn waits(&self) -> bool {
        !self.waiting.is_empty()
    }

    /// Whether the trace waits for a later run to answer `span`'s call, a
    /// tool span's call its run left without a result (`deferred`).
    pub(super) fn defers(&self, span: &Echo) -> bool {
        self.waiting.iter().any(|w| {
            w.form == DEFERRED_FORM && w.trace_id == span.trace_id && w.span_id == span.span_id
        })
    }
}

/// The asks of a trace (leaving `open`) that wait for a later trace.
pub(super) fn waiting(open: &Open) -> Vec<OpenAsk> {
    let mut out: Vec<OpenAsk> = open.asks.iter().filter(|a| !a.is_echo()).cloned().collect();
    out.extend(open.unshown.iter().cloned());
    out.extend(open.deferred.iter().cloned());
    out
}

/// Holds `trace` for `waiting` (read last with `read_with`), or hands it
/// back when it waits for nothing.
pub(super) fn hold(
    trace: Option<Trace>,
    waiting: Vec<OpenAsk>,
    read_with: impl FnOnce() -> Vec<OpenAsk>,
    asking: &mut Option<Asking>,
) -> Option<Trace> {
    match trace {
        Some(trace) if !waiting.is_empty() => {
            *asking = Some(Asking {
                trace,
                read_with: read_with(),
                waiting,
                counted: Vec::new(),
            });
            None
        }
        t => t,
    }
}

/// Whether carried entry `c` is ask `w` (taken or retold from the carry).
fn same_ask(c: &OpenAsk, w: &OpenAsk) -> bool {
    !c.is_echo()
        && c.trace_id == w.trace_id
        && c.span_id == w.span_id
        && c.asked.id == w.asked.id
        && c.asked.name == w.asked.name
}

/// Whether `c`, a call a later trace counted, is ask `w`: the same tool,
/// the same process, started after the asking ended; the same call id
/// where both have one, else the same arguments.
fn shows(w: &OpenAsk, c: &Echo) -> bool {
    if w.form == DEFERRED_FORM {
        return super::deferred::answers(w, c);
    }
    fn real(id: Option<&str>) -> Option<&str> {
        id.filter(|id| !is_made(id))
    }
    let same = match (real(w.asked.id.as_deref()), real(c.id.as_deref())) {
        (Some(a), Some(b)) => a == b,
        _ => !c.args.is_null() && c.args == w.asked.args,
    };
    c.trace_id != w.trace_id
        && c.name == w.asked.name
        && w.end_time_unix_nano <= c.start
        && c.resource
            .as_deref()
            .is_some_and(|r| resource_key(r) == w.run)
        && same
}

/// Whether `c`, a call a later trace rebuilt from its conversation, is ask
/// `w` under another call id: both ids real and different, the same tool,
/// process and (non-null) arguments, started after the asking ended.
fn renamed(w: &OpenAsk, c: &Echo) -> bool {
    let real = |id: &Option<String>| id.as_deref().is_some_and(|id| !is_made(id));
    // A deferred call is answered under its own id only (`deferred`).
    w.form != DEFERRED_FORM
        && real(&w.asked.id)
        && real(&c.id)
        && w.asked.id != c.id
        && c.trace_id != w.trace_id
        && c.name == w.asked.name
        && !c.args.is_null()
        && c.args == w.asked.args
        && w.end_time_unix_nano <= c.start
        && c.resource
            .as_deref()
            .is_some_and(|r| resource_key(r) == w.run)
}

/// The entry saying ask `w` is counted in trace `by`.
fn counted_in(w: &OpenAsk, by: TraceId) -> OpenAsk {
    OpenAsk {
        form: if w.form == DEFERRED_FORM {
            DEFERRED_COUNTED_FORM
        } else {
            LATER_FORM
        },
        trace_id: by,
        ..w.clone()
    }
}

impl<T> Carry<T> {
    /// The held asking traces whose asks trace `by` (reading it gave
    /// `carried`, leaving `open`) counts: each is read again with those
    /// asks noted as counted there.
    pub(super) fn count_later(
        &mut self,
        by: Option<TraceId>,
        carried: &[OpenAsk],
        open: Option<&Open>,
        again: &mut impl FnMut(&Trace, &[OpenAsk]) -> (T, Option<Box<Open>>),
    ) {
        let calls = open.map_or(&[][..], |o| o.calls.as_slice());
        let waits = |h: &Held<T>| h.asking.as_ref().is_some_and(Asking::waits);
        if (calls.is_empty() && (by.is_none() || carried.is_empty()))
            || !self.held.iter().any(waits)
        {
            return;
        }
        // (held trace, entry) of each ask counted; the calls that showed one.
        let mut more: Vec<(usize, OpenAsk)> = Vec::new();
        let mut used = vec![false; calls.len()];
        for (i, h) in self.held.iter_mut().enumerate() {
            let Some(asking) = h.asking.as_mut().filter(|a| a.waits()) else {
                continue;
            };
            asking.waiting.retain(|w| {
                let taken = by.filter(|_| carried.iter().any(|c| same_ask(c, w)));
                let mut shown = || {
                    // A later call answers one deferred call at most.
                    let free = |k: usize| w.form != DEFERRED_FORM || !used[k];
                    let k = (0..calls.len()).find(|&k| free(k) && shows(w, &calls[k]))?;
                    used[k] = true;
                    Some(calls[k].trace_id)
                };
                let found = taken.or_else(&mut shown);
                if let Some(t) = found {
                    more.push((i, counted_in(w, t)));
                }
                found.is_none()
            });
        }
        self.renamed(calls, &mut used, &mut more);
        for (i, h) in self.held.iter_mut().enumerate() {
            let Some(asking) = h.asking.as_mut() else {
                continue;
            };
            let before = asking.counted.len();
            asking
                .counted
                .extend(more.iter().filter(|(k, _)| *k == i).map(|(_, e)| e.clone()));
            if asking.counted.len() > before {
                let with = [asking.read_with.as_slice(), &asking.counted].concat();
                h.out = again(&asking.trace, &with).0;
            }
        }
    }

    /// The asks `calls` (a later trace's, those not `used` yet) count under
    /// another call id: a call rebuilt from the conversation whose id no
    /// ask had, of exactly one waiting ask's tool and arguments, which no
    /// other of those calls fits ([`renamed`]: an instrumentation that
    /// writes an output item's id in place of its call id).
    fn renamed(&mut self, calls: &[Echo], used: &mut [bool], more: &mut Vec<(usize, OpenAsk)>) {
        let free = |k: usize, used: &[bool]| !used[k] && calls[k].from_conversation;
        for k in 0..calls.len() {
            if !free(k, used) {
                continue;
            }
            let c = &calls[k];
            let mut fits = Vec::new();
            for (i, h) in self.held.iter().enumerate() {
                let waiting = h.asking.as_ref().map_or(&[][..], |a| a.waiting.as_slice());
                let at = waiting.iter().enumerate().filter(|(_, w)| renamed(w, c));
                fits.extend(at.map(|(j, _)| (i, j)));
            }
            let [(i, j)] = fits[..] else {
                continue;
            };
            let Some(asking) = self.held.get_mut(i).and_then(|h| h.asking.as_mut()) else {
                continue;
            };
            let w = &asking.waiting[j];
            let others =
                (0..calls.len()).filter(|&o| o != k && free(o, used) && renamed(w, &calls[o]));
            if others.count() > 0 {
                continue;
            }
            let w = asking.waiting.remove(j);
            used[k] = true;
            more.push((i, counted_in(&w, c.trace_id)));
        }
    }

    /// Lets go of the asking traces held (their asks not counted later keep
    /// their warnings), and of what is due behind them: `serve` delays no
    /// trace for a later one (at the end of each batch).
    pub fn let_asks_go(&mut self, due: &mut Vec<T>) {
        for h in &mut self.held {
            if let Some(a) = h.asking.as_mut() {
                a.waiting.clear();
            }
        }
        self.release(due);
    }

    /// Moves what is due from the front of the held traces to `due`: every
    /// held trace past [`MAX_HELD`]; else, unless a lone client trace
    /// holds them all, those before the first that waits for a later trace.
    pub(super) fn release(&mut self, due: &mut Vec<T>) {
        let all = self.held.len() > MAX_HELD;
        if all {
            self.barrier = false;
        } else if self.barrier {
            return;
        }
        while let Some(h) = self.held.pop_front() {
            if !all && h.asking.as_ref().is_some_and(Asking::waits) {
                self.held.push_front(h);
                break;
            }
            if let (Some(spent), Some(a)) = (self.spent.as_mut(), h.asking) {
                spent.traces.push(a.trace);
            }
            due.push(h.out);
        }
    }

    /// A counting trace has come (`Carry::settle_into`): the lone client
    /// traces held stop waiting, as if let go (what they hold is not
    /// matched again).
    pub(super) fn lift_barrier(&mut self) {
        self.barrier = false;
        for h in &mut self.held {
            h.lone = None;
            h.wanting = None;
        }
    }
}
