//! Where a trace's spans are, by id, for the witness's joins.

use crate::assemble::{IdMap, SpanId, Trace};

/// Each span's position in a trace by its id, as [`Trace::span_positions`]
/// gives it (the last span of a repeated id): a trace of a few spans is
/// searched in place, as building the map would cost more than the few
/// look-ups it serves.
pub(super) struct Positions<'t> {
    trace: &'t Trace,
    map: Option<IdMap<SpanId, usize>>,
}

impl<'t> Positions<'t> {
    /// Traces longer than this get the map.
    const SEARCHED: usize = 32;

    pub(super) fn of(trace: &'t Trace) -> Positions<'t> {
        let map = (trace.spans.len() > Self::SEARCHED).then(|| trace.span_positions());
        Positions { trace, map }
    }

    pub(super) fn get(&self, id: SpanId) -> Option<usize> {
        match &self.map {
            Some(map) => map.get(&id).copied(),
            None => self.trace.spans.iter().rposition(|s| s.span_id == id),
        }
    }
}
