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
use crate::extract::open::{Echo, Open, OpenAsk, Witnessed};
use crate::extract::witness_records;

/// A held trace's calls that records may complete, and the entries that
/// completed them so far.
#[derive(Debug)]
pub(super) struct Wanting {
    pub(super) trace: Trace,
    pub(super) calls: Vec<Echo>,
    pub(super) filled: Vec<OpenAsk>,
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
    /// trace whose calls they complete.
    pub(super) fn witness(
        &mut self,
        new: Vec<Witnessed>,
        again: &mut impl FnMut(&Trace, &[OpenAsk]) -> (T, Option<Box<Open>>),
    ) {
        if new.is_empty() {
            return;
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
    }
}
