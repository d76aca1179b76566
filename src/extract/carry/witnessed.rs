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

use super::{Carry, MAX_OPEN};
use crate::assemble::Trace;
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
        for h in &mut self.held {
            let Some(w) = &mut h.wanting else {
                continue;
            };
            let mut more = false;
            for c in &w.calls {
                for e in witness_records::fills(c, new.iter()) {
                    let known = w
                        .filled
                        .iter()
                        .any(|f| f.span_id == e.span_id && f.form == e.form);
                    if !known {
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
