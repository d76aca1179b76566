//! The trace buffer: spans wait here until their trace has been idle for the
//! decision wait (like the Collector's groupbytrace processor), then leave as
//! whole traces to be scored. Synchronous and clock-injected, so it is tested
//! without a runtime.
//!
//! * Admission is all or nothing per request, decided before anything is
//!   kept: when the caps would be passed the request is refused (the
//!   receivers answer 503 / UNAVAILABLE, which clients retry), so accepted
//!   data is never dropped and memory stays bounded.
//! * Completed traces are remembered (trace id, revision, span ids) for a
//!   while: a re-sent span of a scored trace is a duplicate and is dropped, a
//!   new span of a scored trace starts the next revision of that trace.

use std::collections::{BTreeSet, VecDeque};
use std::time::{Duration, Instant};

use crate::assemble::{Assembler, IdMap, IdSet, SpanId, Trace, TraceId};
use crate::ingest::logs::SpanEvent;
use crate::ingest::Request;

/// Caps and timing of a [`TraceBuffer`].
#[derive(Debug, Clone, Copy)]
pub struct BufferLimits {
    pub decision_wait: Duration,
    pub max_spans: usize,
    pub max_traces: usize,
    /// Completed traces remembered.
    pub remember_completed: usize,
}

/// A trace that left the buffer.
#[derive(Debug)]
pub struct Completed {
    pub trace: Trace,
    /// 1 for the first evaluation of a trace id, 2+ for late spans.
    pub revision: u32,
}

/// What an accepted request did.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Admitted {
    pub spans: usize,
    /// Spans already held or already scored (re-sent by a retrying client).
    pub duplicates: usize,
    pub new_traces: usize,
}

/// What an accepted logs request did.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct AdmittedLogs {
    /// Records held for their spans.
    pub events: usize,
    /// Records of traces already scored and not held again (not joined).
    pub late: usize,
}

/// Why a request was refused; nothing of it was kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refused {
    /// Taking it would pass a cap; retry later.
    Full {
        held_spans: usize,
        held_traces: usize,
    },
    /// The buffer is draining for shutdown.
    Closed,
}

/// Buffer use, for logs and stats.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Usage {
    /// Spans waiting for their trace to complete.
    pub spans: usize,
    pub traces: usize,
    /// Spans taken out and not yet reported scored.
    pub scoring_spans: usize,
    /// Log records whose span never came, in the traces taken so far.
    pub unjoined_log_records: usize,
}

#[derive(Debug)]
struct Remembered {
    revision: u32,
    /// Sorted.
    spans: Vec<SpanId>,
}

/// Recently completed traces, oldest first out.
#[derive(Debug, Default)]
struct CompletedMemory {
    by_id: IdMap<TraceId, Remembered>,
    order: VecDeque<TraceId>,
    /// Span ids held in total; bounded at 64 per remembered trace on average.
    span_ids: usize,
}

impl CompletedMemory {
    fn is_duplicate(&self, t: &TraceId, s: &SpanId) -> bool {
        self.by_id
            .get(t)
            .is_some_and(|r| r.spans.binary_search(s).is_ok())
    }

    fn record(&mut self, trace: &Trace, cap: usize) -> u32 {
        if cap == 0 {
            return 1;
        }
        let ids = trace.spans.iter().map(|s| s.span_id);
        let revision = match self.by_id.get_mut(&trace.id) {
            Some(r) => {
                r.revision += 1;
                self.span_ids -= r.spans.len();
                r.spans.extend(ids);
                r.spans.sort_unstable();
                r.spans.dedup();
                self.span_ids += r.spans.len();
                r.revision
            }
            None => {
                let mut spans: Vec<SpanId> = ids.collect();
                spans.sort_unstable();
                spans.dedup();
                self.span_ids += spans.len();
                self.by_id
                    .insert(trace.id, Remembered { revision: 1, spans });
                self.order.push_back(trace.id);
                1
            }
        };
        let max_ids = cap.saturating_mul(64);
        while self.by_id.len() > cap || (self.span_ids > max_ids && self.by_id.len() > 1) {
            let Some(old) = self.order.pop_front() else {
                break;
            };
            if let Some(r) = self.by_id.remove(&old) {
                self.span_ids -= r.spans.len();
            }
        }
        revision
    }
}

/// How many times a batch's size of ready traces [`TraceBuffer`] orders
/// by first sight to choose a batch from: a bound on the work of a backlog,
/// past which the order is that of completion.
const ORDERED_AHEAD: usize = 16;

/// Spans grouped by trace, each trace with the time its last span arrived.
#[derive(Debug)]
pub struct TraceBuffer {
    limits: BufferLimits,
    assembler: Assembler,
    /// Each held trace's last arrival and when it was first seen.
    last_seen: IdMap<TraceId, (Instant, u64)>,
    /// `(last arrival, first seen, trace)`, oldest first: the next trace to
    /// complete. Traces taken together go in the order they first came, as
    /// `replay` reads them (the joins across traces go in this order:
    /// `joined`).
    idle_since: BTreeSet<(Instant, u64, TraceId)>,
    /// Traces seen so far, for the next one's place.
    seen: u64,
    completed: CompletedMemory,
    scoring_spans: usize,
    closed: bool,
}

impl TraceBuffer {
    pub fn new(limits: BufferLimits) -> Self {
        TraceBuffer {
            limits,
            assembler: Assembler::new(),
            last_seen: IdMap::default(),
            idle_since: BTreeSet::new(),
            seen: 0,
            completed: CompletedMemory::default(),
            scoring_spans: 0,
            closed: false,
        }
    }

    pub fn limits(&self) -> &BufferLimits {
        &self.limits
    }

    pub fn usage(&self) -> Usage {
        Usage {
            spans: self.assembler.span_count() + self.assembler.event_count(),
            traces: self.assembler.len(),
            scoring_spans: self.scoring_spans,
            unjoined_log_records: self.assembler.unjoined_events(),
        }
    }

    /// Nothing waiting and nothing being scored.
    pub fn is_idle(&self) -> bool {
        self.assembler.is_empty() && self.scoring_spans == 0
    }

    /// Takes the spans of `req` (ids already validated), or refuses all of them.
    pub fn admit(&mut self, mut req: Request, now: Instant) -> Result<Admitted, Refused> {
        if self.closed {
            return Err(Refused::Closed);
        }
        let mut out = Admitted::default();
        let mut touched: IdSet<TraceId> = IdSet::default();
        let mut order = Vec::new();
        for rs in &mut req.resource_spans {
            for ss in &mut rs.scope_spans {
                ss.spans.retain(|s| {
                    let (Some(t), Some(id)) = (s.trace_id.get(), s.span_id.get()) else {
                        return false; // the assembler would drop it too
                    };
                    let (t, id) = (TraceId(t), SpanId(id));
                    if self.completed.is_duplicate(&t, &id) {
                        out.duplicates += 1;
                        return false;
                    }
                    if touched.insert(t) {
                        order.push(t);
                    }
                    out.spans += 1;
                    true
                });
            }
        }
        out.new_traces = touched
            .iter()
            .filter(|t| !self.last_seen.contains_key(t))
            .count();
        let held_spans = self.held_spans();
        let held_traces = self.assembler.len();
        let over_spans = held_spans > 0 && held_spans + out.spans > self.limits.max_spans;
        let over_traces = out.new_traces > 0
            && held_traces > 0
            && held_traces + out.new_traces > self.limits.max_traces;
        if over_spans || over_traces {
            return Err(Refused::Full {
                held_spans,
                held_traces,
            });
        }
        let added = self.assembler.add(req);
        out.duplicates += added.duplicates;
        out.spans = added.spans;
        self.touch(order, now);
        Ok(out)
    }

    /// Takes log records read as span events (`ingest::logs`), or refuses
    /// all of them, under the caps spans have (a record counts as a span):
    /// each waits in its trace, which it keeps open for the decision wait as
    /// a span would, and goes on its span when the trace is taken. A record
    /// of a trace already scored and not held again is late: counted, not
    /// kept (a late span starts a new revision; a record alone does not).
    pub fn admit_logs(
        &mut self,
        events: Vec<SpanEvent>,
        now: Instant,
    ) -> Result<AdmittedLogs, Refused> {
        if self.closed {
            return Err(Refused::Closed);
        }
        let mut out = AdmittedLogs::default();
        let mut touched: IdSet<TraceId> = IdSet::default();
        let mut order = Vec::new();
        let events: Vec<SpanEvent> = events
            .into_iter()
            .filter(|e| {
                let Some(t) = e.trace_id.get().map(TraceId) else {
                    return false; // `ingest::logs` lets only OTLP-length ids through
                };
                if !self.last_seen.contains_key(&t) && self.completed.by_id.contains_key(&t) {
                    out.late += 1;
                    return false;
                }
                if touched.insert(t) {
                    order.push(t);
                }
                true
            })
            .collect();
        let new_traces = touched
            .iter()
            .filter(|t| !self.last_seen.contains_key(t))
            .count();
        let held_spans = self.held_spans();
        let held_traces = self.assembler.len();
        let over_spans = held_spans > 0 && held_spans + events.len() > self.limits.max_spans;
        let over_traces =
            new_traces > 0 && held_traces > 0 && held_traces + new_traces > self.limits.max_traces;
        if over_spans || over_traces {
            return Err(Refused::Full {
                held_spans,
                held_traces,
            });
        }
        out.events = self.assembler.add_events(events, 0).events;
        self.touch(order, now);
        Ok(out)
    }

    /// Spans and log records held: waiting, or taken and being scored.
    fn held_spans(&self) -> usize {
        self.assembler.span_count() + self.assembler.event_count() + self.scoring_spans
    }

    /// When the next trace completes, if any is held.
    pub fn next_completion(&self) -> Option<Instant> {
        self.idle_since
            .first()
            .map(|(at, ..)| *at + self.limits.decision_wait)
    }

    /// Removes up to `max` traces idle for the decision wait at `now`. Their
    /// spans count as held until [`TraceBuffer::scored`] is called.
    pub fn take_complete(&mut self, now: Instant, max: usize) -> Vec<Completed> {
        let due = self.ready(Some(now), max);
        self.take_first_seen(due, max)
    }

    /// Removes up to `max` traces whatever their age (shutdown).
    pub fn take_any(&mut self, max: usize) -> Vec<Completed> {
        let all = self.ready(None, max);
        self.take_first_seen(all, max)
    }

    /// The entries of `idle_since` a batch of `max` is chosen from: those
    /// idle for the decision wait at `now` (all, with no `now`), at most
    /// [`ORDERED_AHEAD`] batches' worth.
    fn ready(&self, now: Option<Instant>, max: usize) -> Vec<(Instant, u64, TraceId)> {
        let wait = self.limits.decision_wait;
        let due = |(at, ..): &&(Instant, u64, TraceId)| now.is_none_or(|now| *at + wait <= now);
        (self.idle_since.iter().take_while(due))
            .take(max.saturating_mul(ORDERED_AHEAD))
            .copied()
            .collect()
    }

    /// Takes up to `max` of `ready` (entries of `idle_since`), those first
    /// seen first, in that order: as replay hands out the traces ready
    /// together ([`crate::assemble::Assembler::release`]). By last arrival
    /// instead, a trace whose root comes last (the agent's, its tool spans
    /// sent early) would be read after the traces that came while it was
    /// open, and the joins across traces (`joined`) give its calls to other
    /// traces than replay does.
    fn take_first_seen(
        &mut self,
        mut ready: Vec<(Instant, u64, TraceId)>,
        max: usize,
    ) -> Vec<Completed> {
        ready.sort_unstable_by_key(|&(_, first, _)| first);
        ready.truncate(max);
        let mut out = Vec::with_capacity(ready.len());
        for entry in ready {
            self.idle_since.remove(&entry);
            if let Some(c) = self.take(entry.2) {
                out.push(c);
            }
        }
        out
    }

    /// Notes that spans (or records) of `traces`, in the order they first
    /// appear in a request, arrived at `now`.
    fn touch(&mut self, traces: impl IntoIterator<Item = TraceId>, now: Instant) {
        for t in traces {
            let first = match self.last_seen.get(&t) {
                Some(&(old, first)) => {
                    self.idle_since.remove(&(old, first, t));
                    first
                }
                None => {
                    self.seen += 1;
                    self.seen
                }
            };
            self.last_seen.insert(t, (now, first));
            self.idle_since.insert((now, first, t));
        }
    }

    fn take(&mut self, id: TraceId) -> Option<Completed> {
        self.last_seen.remove(&id);
        let trace = self.assembler.take(&id)?;
        self.scoring_spans += trace.spans.len();
        let revision = self
            .completed
            .record(&trace, self.limits.remember_completed);
        Some(Completed { trace, revision })
    }

    /// Reports `spans` taken spans as scored: they no longer count as held.
    pub fn scored(&mut self, spans: usize) {
        self.scoring_spans = self.scoring_spans.saturating_sub(spans);
    }

    /// Refuses every later request (shutdown); what is held can still be taken.
    pub fn close(&mut self) {
        self.closed = true;
    }

    pub fn is_closed(&self) -> bool {
        self.closed
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
    use opentelemetry_proto::tonic::trace::v1::{ResourceSpans, ScopeSpans, Span};

    fn req(spans: &[(u8, u8)]) -> Request {
        ExportTraceServiceRequest {
            resource_spans: vec![ResourceSpans {
                scope_spans: vec![ScopeSpans {
                    spans: spans
                        .iter()
                        .map(|&(t, s)| Span {
                            trace_id: vec![t; 16],
                            span_id: vec![s; 8],
                            name: format!("s{s}"),
                            ..Default::default()
                        })
                        .collect(),
                    ..Default::default()
                }],
                ..Default::default()
            }],
        }
        .into()
    }

    fn limits(max_spans: usize, max_traces: usize) -> BufferLimits {
        BufferLimits {
            decision_wait: Duration::from_millis(100),
            max_spans,
            max_traces,
            remember_completed: 100,
        }
    }

    const MS: Duration = Duration::from_millis(1);

    #[test]
    fn completes_after_idle_wait_and_late_spans_make_revisions() {
        let t0 = Instant::now();
        let mut b = TraceBuffer::new(limits(100, 10));
        b.admit(req(&[(1, 1), (2, 1)]), t0).unwrap();
        b.admit(req(&[(1, 2)]), t0 + 50 * MS).unwrap();
        assert_eq!(b.next_completion(), Some(t0 + 100 * MS));
        assert!(b.take_complete(t0 + 99 * MS, 10).is_empty());
        let first = b.take_complete(t0 + 120 * MS, 10);
        assert_eq!(first.len(), 1);
        assert_eq!(first[0].trace.id, TraceId([2; 16]));
        let second = b.take_complete(t0 + 150 * MS, 10);
        assert_eq!(second[0].trace.spans.len(), 2);
        assert_eq!(second[0].revision, 1);
        assert_eq!(b.usage().scoring_spans, 3);
        b.scored(3);
        // A re-sent span is a duplicate; a new one starts revision 2.
        let a = b.admit(req(&[(1, 2), (1, 3)]), t0 + 200 * MS).unwrap();
        assert_eq!((a.spans, a.duplicates, a.new_traces), (1, 1, 1));
        let late = b.take_complete(t0 + 300 * MS, 10);
        assert_eq!(late[0].revision, 2);
        assert_eq!(late[0].trace.spans.len(), 1);
        // Only duplicates: nothing is held.
        b.scored(1);
        let a = b.admit(req(&[(1, 1)]), t0 + 400 * MS).unwrap();
        assert_eq!((a.spans, a.duplicates), (0, 1));
        assert!(b.is_idle());
    }

    #[test]
    fn traces_taken_together_go_in_the_order_first_seen() {
        // Trace 1's first span comes first and its last after trace 2's:
        // replay reads trace 1 first, and so does a batch that takes both.
        let t0 = Instant::now();
        let ids = |done: Vec<Completed>| done.iter().map(|c| c.trace.id.0[0]).collect::<Vec<_>>();
        let mut b = TraceBuffer::new(limits(100, 10));
        b.admit(req(&[(1, 1)]), t0).unwrap();
        b.admit(req(&[(2, 1)]), t0 + 10 * MS).unwrap();
        b.admit(req(&[(1, 2)]), t0 + 20 * MS).unwrap();
        assert_eq!(ids(b.take_complete(t0 + 200 * MS, 10)), [1, 2]);
        // Due one after the other, they go as they come due.
        b.admit(req(&[(3, 1)]), t0).unwrap();
        b.admit(req(&[(4, 1)]), t0 + 10 * MS).unwrap();
        b.admit(req(&[(3, 2)]), t0 + 20 * MS).unwrap();
        assert_eq!(ids(b.take_complete(t0 + 115 * MS, 10)), [4]);
        assert_eq!(ids(b.take_complete(t0 + 125 * MS, 10)), [3]);
        // At shutdown, a batch at a time: the first seen of those left.
        for t in [5, 6, 7] {
            b.admit(req(&[(t, 1)]), t0).unwrap();
        }
        b.admit(req(&[(5, 2)]), t0 + 20 * MS).unwrap();
        assert_eq!(ids(b.take_any(2)), [5, 6]);
        assert_eq!(ids(b.take_any(2)), [7]);
    }

    fn records(list: &[(u8, u8)]) -> Vec<SpanEvent> {
        list.iter()
            .map(|&(t, s)| SpanEvent {
                trace_id: crate::ingest::span::Id::new(&[t; 16]),
                span_id: crate::ingest::span::Id::new(&[s; 8]),
                event: Default::default(),
            })
            .collect()
    }

    #[test]
    fn log_records_wait_with_their_trace_under_the_span_caps() {
        let t0 = Instant::now();
        let mut b = TraceBuffer::new(limits(4, 10));
        // Records before their spans hold the trace, counted as spans.
        assert_eq!(
            b.admit_logs(records(&[(1, 1), (1, 2)]), t0).unwrap().events,
            2
        );
        assert_eq!((b.usage().spans, b.usage().traces), (2, 1));
        assert!(matches!(
            b.admit(req(&[(1, 1), (1, 2), (1, 3)]), t0),
            Err(Refused::Full { .. })
        ));
        b.admit(req(&[(1, 1)]), t0 + 50 * MS).unwrap();
        // The last arrival, span or record, starts the decision wait.
        b.admit_logs(records(&[(1, 1)]), t0 + 60 * MS).unwrap();
        assert_eq!(b.next_completion(), Some(t0 + 160 * MS));
        assert!(b.take_complete(t0 + 150 * MS, 10).is_empty());
        let done = b.take_complete(t0 + 160 * MS, 10);
        assert_eq!(done[0].trace.spans[0].span.events.len(), 2);
        assert_eq!(b.usage().unjoined_log_records, 1, "span 2 never came");
        b.scored(1);
        // A record of a scored trace is late, and starts no revision.
        let late = b.admit_logs(records(&[(1, 1)]), t0 + 200 * MS).unwrap();
        assert_eq!((late.events, late.late), (0, 1));
        assert!(b.is_idle());
    }

    #[test]
    fn refuses_whole_requests_over_the_caps_then_recovers() {
        let t0 = Instant::now();
        let mut b = TraceBuffer::new(limits(3, 2));
        // Bigger than the cap but the buffer is empty: taken (it can never fit otherwise).
        b.admit(req(&[(1, 1), (1, 2), (1, 3), (1, 4)]), t0).unwrap();
        assert_eq!(
            b.admit(req(&[(2, 1)]), t0),
            Err(Refused::Full {
                held_spans: 4,
                held_traces: 1
            })
        );
        assert_eq!(b.usage().spans, 4);
        let done = b.take_complete(t0 + 100 * MS, 10);
        assert_eq!(done.len(), 1);
        // Taken but not scored still counts.
        assert!(b.admit(req(&[(2, 1)]), t0 + 100 * MS).is_err());
        b.scored(4);
        assert!(b.admit(req(&[(2, 1)]), t0 + 100 * MS).is_ok());
        assert!(b.admit(req(&[(3, 1)]), t0 + 100 * MS).is_ok());
        // Trace cap: a third trace is refused, spans of held traces are not.
        assert!(matches!(
            b.admit(req(&[(4, 1)]), t0 + 100 * MS),
            Err(Refused::Full { .. })
        ));
        assert!(b.admit(req(&[(3, 2)]), t0 + 100 * MS).is_ok());
    }

    #[test]
    fn close_refuses_and_take_any_drains() {
        let t0 = Instant::now();
        let mut b = TraceBuffer::new(limits(100, 100));
        b.admit(req(&[(1, 1), (2, 1), (3, 1)]), t0).unwrap();
        b.close();
        assert_eq!(b.admit(req(&[(4, 1)]), t0), Err(Refused::Closed));
        assert_eq!(b.take_any(2).len(), 2);
        assert_eq!(b.take_any(2).len(), 1);
        assert_eq!(b.usage().traces, 0);
    }

    #[test]
    fn completed_memory_is_bounded() {
        let t0 = Instant::now();
        let mut b = TraceBuffer::new(BufferLimits {
            remember_completed: 2,
            ..limits(100, 100)
        });
        for t in 1..=3 {
            b.admit(req(&[(t, 1)]), t0).unwrap();
        }
        b.take_any(10);
        assert_eq!(b.completed.by_id.len(), 2);
        // Trace 1 was forgotten: its re-sent span starts over at revision 1.
        b.admit(req(&[(1, 1)]), t0).unwrap();
        assert_eq!(b.take_any(10)[0].revision, 1);
    }
}
