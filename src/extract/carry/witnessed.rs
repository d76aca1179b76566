//! Tool spans' calls completed by records of them in other traces
//! (`extract::witness_records`; docs/conventions.md, "Call records in a
//! runtime's messages").
//!
//! A trace whose tool spans' calls have a call id and neither arguments nor
//! a result waits, as a lone MCP client trace does, while no trace after it
//! counts calls with arguments: each record of one of those calls (same
//! call id, tool and process) read meanwhile reads it again with what the
//! records say. Records read before it are kept here (the last
//! [`MAX_OPEN`]) and complete it at once.

use std::collections::{HashMap, HashSet};

use super::{Carry, MAX_OPEN};
use crate::assemble::{SpanId, Trace};
use serde_json::Value;

use crate::extract::conversation::{id_text, unjoined_warning};
use crate::extract::open::{Echo, Open, OpenAsk, Witnessed, SHOWN_FORM};
use crate::extract::requested::Asked;
use crate::extract::{witness_records, Analysis};

/// A held trace's calls that records may complete, and the entries that
/// completed them so far.
#[derive(Debug)]
pub(super) struct Wanting {
    pub(super) trace: Trace,
    pub(super) calls: Vec<Echo>,
    pub(super) filled: Vec<OpenAsk>,
}

impl Wanting {
    /// Trace `trace` waiting for records of `calls`, none met yet.
    pub(super) fn of(trace: Trace, calls: Vec<Echo>) -> Wanting {
        Wanting {
            trace,
            calls,
            filled: Vec::new(),
        }
    }
}

impl<T> Carry<T> {
    /// The entries completing `open`'s calls from the records kept here.
    pub(super) fn witnessed(&self, open: &Open) -> Vec<OpenAsk> {
        if self.witnesses.is_empty() {
            return Vec::new();
        }
        open.wanting
            .iter()
            .flat_map(|c| witness_records::fills(c, self.witnesses.iter()))
            .collect()
    }

    /// Keeps the records `new` (of the trace read), reading again each held
    /// trace whose calls they complete. Returns, for the trace read, a
    /// [`SHOWN_FORM`] entry for each of its asks whose record completed a
    /// call.
    pub(super) fn witness(
        &mut self,
        new: Vec<Witnessed>,
        again: &mut impl FnMut(&Trace, &[OpenAsk]) -> (T, Option<Box<Open>>),
    ) -> Vec<OpenAsk> {
        let mut shown = Vec::new();
        if new.is_empty() {
            return shown;
        }
        // By call id, in order: a held trace may want thousands of calls and
        // a trace may hold thousands of records (each call looks only at
        // the records of its id, not at every record).
        let mut by_id: HashMap<&str, Vec<&Witnessed>> = HashMap::new();
        for w in &new {
            by_id.entry(w.id.as_str()).or_default().push(w);
        }
        for h in &mut self.held {
            let Some(w) = &mut h.wanting else {
                continue;
            };
            let mut known: HashSet<(SpanId, &'static str)> =
                w.filled.iter().map(|f| (f.span_id, f.form)).collect();
            let mut more = false;
            for c in &w.calls {
                let Some(records) = c.id.as_deref().and_then(|id| by_id.get(id)) else {
                    continue;
                };
                for e in witness_records::fills(c, records.iter().copied()) {
                    if known.insert((e.span_id, e.form)) {
                        shown.extend(shown_ask(&w.trace, c, &e, records));
                        w.filled.push(e);
                        more = true;
                    }
                }
            }
            if more {
                h.out = again(&w.trace, &w.filled).0;
            }
        }
        self.witnesses.extend(new);
        while self.witnesses.len() > MAX_OPEN {
            self.witnesses.pop_front();
        }
        shown.dedup_by(|a, b| a.span_id == b.span_id && a.asked == b.asked);
        shown
    }
}

/// The [`SHOWN_FORM`] entry for the ask whose record (among `records`)
/// gave `e`, completing `call` of held trace `held`; none for a record
/// of another kind.
fn shown_ask(held: &Trace, call: &Echo, e: &OpenAsk, records: &[&Witnessed]) -> Option<OpenAsk> {
    let r = records.iter().find(|r| {
        r.trace_id == e.trace_id && r.asked_in.is_some() && r.name.as_deref() == Some(&call.name)
    })?;
    Some(OpenAsk {
        asked: Asked {
            id: call.id.clone(),
            name: call.name.clone(),
            args: Value::Null,
        },
        form: SHOWN_FORM,
        trace_id: held.id,
        span_id: r.asked_in?.0,
        end_time_unix_nano: u64::MAX,
        run: 0,
    })
}

/// Whether `shown`, a [`SHOWN_FORM`] entry, is about ask `w` of the
/// trace read.
pub(super) fn shows(shown: &OpenAsk, w: &OpenAsk) -> bool {
    shown.span_id == w.span_id && shown.asked.id == w.asked.id && shown.asked.name == w.asked.name
}

/// Turns the warning that no tool span shows an ask, for each ask
/// `carried` says another trace's tool span shows ([`SHOWN_FORM`]), into
/// a note naming that trace.
pub(crate) fn note(carried: &[OpenAsk], a: &mut Analysis) {
    for e in carried.iter().filter(|e| e.form == SHOWN_FORM) {
        let warning = unjoined_warning(&e.asked, e.span_id);
        let Some(k) = a.warnings.iter().position(|w| *w == warning) else {
            continue;
        };
        a.warnings.remove(k);
        a.notes.push(format!(
            "the model asked for `{}`{} in span {}; no tool span of this trace shows that call, a tool span of trace {} does (same call id and tool, same process, recording neither arguments nor a result): the ask's arguments and the result a request here carries are that call's",
            e.asked.name,
            id_text(&e.asked),
            e.span_id,
            e.trace_id
        ));
    }
}
