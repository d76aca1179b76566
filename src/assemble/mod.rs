//! Assemble: spans from any number of requests -> whole traces.
//!
//! Spans are grouped by trace id, duplicates (same trace id and span id, as
//! re-sent by retrying exporters) are dropped (the first copy is kept; one
//! whose content differs is named in a warning), the parent/child tree
//! is rebuilt and spans whose parent never arrived are kept as orphans.
//! `session` groups whole traces into conversations.

pub mod session;

use std::collections::hash_map::Entry;
use std::collections::{HashMap, HashSet, VecDeque};
use std::fmt;
use std::sync::Arc;

use opentelemetry_proto::tonic::common::v1::InstrumentationScope;
use opentelemetry_proto::tonic::resource::v1::Resource;
use opentelemetry_proto::tonic::trace::v1::span::Event;

use crate::ingest::logs::SpanEvent;
pub use crate::ingest::span::{find_attr, Val};
use crate::ingest::{Request, Span};

/// A map keyed by ids from the input: foldhash, seeded at random per map
/// (as hashbrown's own default), several times cheaper than SipHash on
/// 8- and 16-byte keys; the assembler and the serve buffer do a few
/// lookups per span.
pub type IdMap<K, V> = HashMap<K, V, foldhash::fast::RandomState>;
/// A set of ids from the input (see [`IdMap`]).
pub type IdSet<K> = HashSet<K, foldhash::fast::RandomState>;

/// A 16-byte trace id, shown as lower-case hex.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TraceId(pub [u8; 16]);

/// An 8-byte span id, shown as lower-case hex.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SpanId(pub [u8; 8]);

/// Lower-case hex of (up to 16 of) `bytes`, in `buf`.
fn hex<'b>(buf: &'b mut [u8; 32], bytes: &[u8]) -> &'b str {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    for (pair, b) in buf.chunks_exact_mut(2).zip(bytes) {
        pair[0] = HEX[usize::from(b >> 4)];
        pair[1] = HEX[usize::from(b & 15)];
    }
    let len = 2 * bytes.len().min(16);
    std::str::from_utf8(&buf[..len]).unwrap_or_default()
}

fn write_hex(f: &mut fmt::Formatter<'_>, bytes: &[u8]) -> fmt::Result {
    // One write of the whole id: a `{:02x}` per byte was a visible part of
    // writing report rows.
    f.write_str(hex(&mut [0u8; 32], bytes))
}

impl TraceId {
    /// The id as lower-case hex text (its `Display`, without the
    /// formatter).
    pub fn to_hex(&self) -> String {
        hex(&mut [0u8; 32], &self.0).to_string()
    }
}

/// A span id serializes as its hex text, written as one string: not
/// through `Display` (serde's `collect_str`), whose formatter machinery
/// was a visible part of writing report rows.
impl serde::Serialize for SpanId {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(hex(&mut [0u8; 32], &self.0))
    }
}

impl fmt::Display for TraceId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write_hex(f, &self.0)
    }
}
impl fmt::Debug for TraceId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write_hex(f, &self.0)
    }
}
impl fmt::Display for SpanId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write_hex(f, &self.0)
    }
}
impl fmt::Debug for SpanId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write_hex(f, &self.0)
    }
}

fn parse_hex<const N: usize>(s: &str) -> Option<[u8; N]> {
    let s = s.trim();
    if s.len() != 2 * N || !s.is_ascii() {
        return None;
    }
    let mut out = [0u8; N];
    for (i, o) in out.iter_mut().enumerate() {
        *o = u8::from_str_radix(&s[2 * i..2 * i + 2], 16).ok()?;
    }
    Some(out)
}

impl std::str::FromStr for TraceId {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        parse_hex(s)
            .map(TraceId)
            .ok_or_else(|| format!("`{s}` is not a trace id (32 hex digits)"))
    }
}

impl std::str::FromStr for SpanId {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        parse_hex(s)
            .map(SpanId)
            .ok_or_else(|| format!("`{s}` is not a span id (16 hex digits)"))
    }
}

/// One span with the resource and scope it came with.
#[derive(Debug, Clone)]
pub struct SpanRecord {
    pub span_id: SpanId,
    /// `None` for a root span.
    pub parent: Option<SpanId>,
    pub span: Span,
    pub resource: Arc<Resource>,
    pub scope: Arc<InstrumentationScope>,
}

impl SpanRecord {
    pub fn attr(&self, key: &str) -> Option<Val<'_>> {
        self.span.attr(key)
    }

    /// A string attribute (other scalar types are not converted).
    pub fn attr_str(&self, key: &str) -> Option<&str> {
        self.span.attr_str(key)
    }
}

/// A reassembled trace.
#[derive(Debug, Clone)]
pub struct Trace {
    pub id: TraceId,
    /// Ordered by start time (ties by span id), so indexes are stable.
    pub spans: Vec<SpanRecord>,
    /// `parent[i]`: index of span `i`'s parent, if it arrived.
    pub parent: Vec<Option<usize>>,
    /// Spans that name a parent that never arrived (e.g. mlflow's dropped roots).
    pub orphans: Vec<usize>,
    /// Duplicates dropped while assembling (exact or not).
    pub duplicates: usize,
    /// Span ids that came again with other content (the first copy is
    /// kept): malformed input, or two spans given one id.
    pub conflicting: Vec<SpanId>,
    /// Parent links dropped to break parent cycles (malformed input).
    pub broken_links: Vec<BrokenLink>,
}

/// Each span's position in a trace's spans, by its id (the last span with
/// it, as a map collected in order keeps). Most traces hold a few spans:
/// those are scanned, which costs less than building a map (one per trace
/// and reader was a visible part of the workers' time).
#[derive(Debug)]
pub enum SpanPositions<'t> {
    Scan(&'t [SpanRecord]),
    Map(IdMap<SpanId, usize>),
}

impl<'t> SpanPositions<'t> {
    /// Traces up to this many spans are scanned.
    const SCAN: usize = 32;

    pub fn of(spans: &'t [SpanRecord]) -> SpanPositions<'t> {
        if spans.len() <= Self::SCAN {
            return SpanPositions::Scan(spans);
        }
        SpanPositions::Map(
            spans
                .iter()
                .enumerate()
                .map(|(i, s)| (s.span_id, i))
                .collect(),
        )
    }

    /// The position of the span with id `id`.
    pub fn get(&self, id: SpanId) -> Option<usize> {
        match self {
            SpanPositions::Scan(spans) => spans.iter().rposition(|s| s.span_id == id),
            SpanPositions::Map(m) => m.get(&id).copied(),
        }
    }
}

/// The order of a trace's spans: by start time, ties by span id.
fn start_order(a: &SpanRecord, b: &SpanRecord) -> std::cmp::Ordering {
    a.span
        .start_time_unix_nano
        .cmp(&b.span.start_time_unix_nano)
        .then(a.span_id.cmp(&b.span_id))
}

/// A parent link dropped because it closed a parent cycle (A's parent B,
/// B's parent A, or longer). The span that starts first in the cycle
/// (lowest span id on ties) becomes a root, so the choice does not depend
/// on input order and every span of the cycle is kept.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BrokenLink {
    /// The span made a root.
    pub span: SpanId,
    /// The parent it named.
    pub parent: SpanId,
    /// Number of spans in the cycle.
    pub cycle_len: usize,
}

/// The children of every span of a trace, in index (start) order.
#[derive(Debug, Clone, Default)]
pub struct Children {
    /// `list[first[i]..first[i + 1]]` are the children of span `i`.
    first: Vec<usize>,
    list: Vec<usize>,
}

impl Children {
    pub fn of(&self, i: usize) -> &[usize] {
        match (self.first.get(i), self.first.get(i + 1)) {
            (Some(&a), Some(&b)) => &self.list[a..b],
            _ => &[],
        }
    }
}

impl Trace {
    /// Before span `i` is read in a pass over the spans in order: starts
    /// loading the span a few ahead (and, at the first, the first few).
    /// Spans are cold when a pass begins (decoded on another core, or read
    /// a stage earlier); a hint only.
    #[inline]
    pub fn prefetch_ahead(&self, i: usize) {
        const AHEAD: usize = 3;
        if i == 0 {
            self.spans
                .iter()
                .take(AHEAD)
                .for_each(|s| s.span.prefetch());
        }
        if let Some(next) = self.spans.get(i + AHEAD) {
            next.span.prefetch();
        }
    }

    /// Each span's position in [`Trace::spans`], by its id (see
    /// [`SpanPositions`]: no map for a trace of a few spans).
    pub fn positions(&self) -> SpanPositions<'_> {
        SpanPositions::of(&self.spans)
    }

    /// Each span's position in [`Trace::spans`], by its id, as a map.
    pub fn span_positions(&self) -> IdMap<SpanId, usize> {
        self.spans
            .iter()
            .enumerate()
            .map(|(i, s)| (s.span_id, i))
            .collect()
    }

    /// Builds a trace from its spans (any order).
    pub fn new(id: TraceId, mut spans: Vec<SpanRecord>, duplicates: usize) -> Trace {
        spans.sort_by(start_order);
        let index = SpanPositions::of(&spans);
        let mut orphans = Vec::new();
        let mut parent: Vec<Option<usize>> = spans
            .iter()
            .enumerate()
            .map(|(i, s)| {
                let p = s.parent?;
                let found = index.get(p).filter(|&j| j != i);
                if found.is_none() {
                    orphans.push(i);
                }
                found
            })
            .collect();
        let broken_links = break_cycles(&mut parent)
            .into_iter()
            .map(|(i, p, cycle_len)| BrokenLink {
                span: spans[i].span_id,
                parent: spans[p].span_id,
                cycle_len,
            })
            .collect();
        Trace {
            id,
            spans,
            parent,
            orphans,
            duplicates,
            conflicting: Vec::new(),
            broken_links,
        }
    }

    /// The children of every span.
    pub fn children(&self) -> Children {
        let n = self.parent.len();
        let mut first = vec![0usize; n + 1];
        for p in self.parent.iter().flatten() {
            first[p + 1] += 1;
        }
        for i in 0..n {
            first[i + 1] += first[i];
        }
        let mut next = first.clone();
        let mut list = vec![0usize; first[n]];
        for (i, p) in self.parent.iter().enumerate() {
            if let Some(p) = *p {
                list[next[p]] = i;
                next[p] += 1;
            }
        }
        Children { first, list }
    }

    /// Every span once, parents before their children (roots first, then
    /// level by level). Index order is not enough: in malformed data a child
    /// may start before its parent.
    pub fn top_down(&self, children: &Children) -> Vec<usize> {
        let mut order: Vec<usize> = self.roots().collect();
        let mut next = 0;
        while next < order.len() {
            let i = order[next];
            next += 1;
            order.extend_from_slice(children.of(i));
        }
        if order.len() < self.spans.len() {
            // Only a trace built by hand can still hold a cycle: its spans
            // come last, as if they had no parent.
            let mut seen = vec![false; self.spans.len()];
            order.iter().for_each(|&i| seen[i] = true);
            order.extend((0..self.spans.len()).filter(|&i| !seen[i]));
        }
        order
    }

    /// A one-line warning naming the parent links dropped to break cycles.
    pub fn cycle_warning(&self) -> Option<String> {
        if self.broken_links.is_empty() {
            return None;
        }
        // Hostile input can hold a cycle per pair of spans: name a few.
        const SHOWN: usize = 10;
        let mut links: Vec<String> = self
            .broken_links
            .iter()
            .take(SHOWN)
            .map(|b| {
                format!(
                    "span {} named parent {} in a cycle of {} span(s), so it is read as a root",
                    b.span, b.parent, b.cycle_len
                )
            })
            .collect();
        if self.broken_links.len() > SHOWN {
            links.push(format!("and {} more", self.broken_links.len() - SHOWN));
        }
        Some(format!(
            "trace {}: parent cycle(s) broken: {}",
            self.id,
            links.join("; ")
        ))
    }

    /// A one-line warning naming the span ids that came twice with
    /// different content (the first copy is the one read).
    pub fn conflict_warning(&self) -> Option<String> {
        if self.conflicting.is_empty() {
            return None;
        }
        const SHOWN: usize = 10;
        // A span may come again several times: each id is named once.
        let mut distinct = self.conflicting.clone();
        distinct.sort_unstable();
        distinct.dedup();
        let mut ids: Vec<String> = distinct
            .iter()
            .take(SHOWN)
            .map(ToString::to_string)
            .collect();
        if distinct.len() > SHOWN {
            ids.push(format!("and {} more", distinct.len() - SHOWN));
        }
        Some(format!(
            "trace {}: {} span(s) came again with the same id and other content; \
             the first copy is kept: {}",
            self.id,
            distinct.len(),
            ids.join(", ")
        ))
    }

    /// Indexes of spans with no parent in this trace (true roots and orphans).
    pub fn roots(&self) -> impl Iterator<Item = usize> + '_ {
        self.parent
            .iter()
            .enumerate()
            .filter(|(_, p)| p.is_none())
            .map(|(i, _)| i)
    }

    /// Ancestors of span `i`, nearest first. Stops on cycles.
    pub fn ancestors(&self, i: usize) -> impl Iterator<Item = usize> + '_ {
        let mut cur = self.parent.get(i).copied().flatten();
        let mut steps = 0;
        std::iter::from_fn(move || {
            let at = cur?;
            steps += 1;
            if steps > self.spans.len() {
                return None; // a parent cycle in malformed input
            }
            cur = self.parent[at];
            Some(at)
        })
    }

    /// Does the resource of any span, or any span, carry `key` with `value`?
    pub fn has_attr(&self, key: &str, value: &str) -> bool {
        let mut seen_resources: Vec<*const Resource> = Vec::new();
        for s in &self.spans {
            if s.span.attr(key).is_some_and(|v| value_matches(v, value)) {
                return true;
            }
            let r = Arc::as_ptr(&s.resource);
            if !seen_resources.contains(&r) {
                seen_resources.push(r);
                if find_attr(&s.resource.attributes, key).is_some_and(|v| value_matches(v, value)) {
                    return true;
                }
            }
        }
        false
    }

    /// Earliest span start, for ordering traces.
    pub fn start_time(&self) -> u64 {
        self.spans
            .first()
            .map_or(0, |s| s.span.start_time_unix_nano)
    }
}

/// Makes `parent` acyclic: in each cycle, the member with the lowest index
/// (earliest start, then lowest span id) loses its parent link. Returns
/// `(span, former parent, cycle length)` per broken link. Linear: every span
/// is walked once.
fn break_cycles(parent: &mut [Option<usize>]) -> Vec<(usize, usize, usize)> {
    const NEW: u8 = 0;
    const ON_PATH: u8 = 1;
    const DONE: u8 = 2;
    let mut state = vec![NEW; parent.len()];
    let mut path = Vec::new();
    let mut broken = Vec::new();
    for start in 0..parent.len() {
        let mut cur = Some(start);
        while let Some(c) = cur {
            match state[c] {
                NEW => {
                    state[c] = ON_PATH;
                    path.push(c);
                    cur = parent[c];
                }
                ON_PATH => {
                    // The path closed on itself: `c` and what follows it.
                    let at = path.iter().rposition(|&x| x == c).unwrap_or(0);
                    let cycle = &path[at..];
                    if let Some(&root) = cycle.iter().min() {
                        if let Some(p) = parent[root].take() {
                            broken.push((root, p, cycle.len()));
                        }
                    }
                    break;
                }
                _ => break,
            }
        }
        for &p in &path {
            state[p] = DONE;
        }
        path.clear();
    }
    broken.sort_unstable();
    broken
}

/// Compares an attribute with a fixture's string form. JSON-encoded strings
/// (MLflow writes `"\"value\""`) match their decoded text too.
fn value_matches(v: Val<'_>, want: &str) -> bool {
    match v {
        Val::Str(s) => s == want || serde_json::from_str::<String>(s).is_ok_and(|d| d == want),
        Val::Int(i) => want.parse::<i64>().is_ok_and(|w| w == i),
        Val::Double(d) => want.parse::<f64>().is_ok_and(|w| w == d),
        Val::Bool(b) => want.parse::<bool>().is_ok_and(|w| w == b),
        _ => false,
    }
}

/// How a second copy of a span id relates to the copy kept.
///
/// Some SDKs export a span when it starts (and again on each update) with
/// its end time equal to its start, then once more when it ends: those
/// copies are one span seen while open. The last copy is read whatever
/// order they come in; two different copies of a span that ended are
/// malformed input (the first is kept, with a warning).
enum Update {
    /// The kept copy was sent while open; the new one is the same span
    /// later (possibly ended): it is read instead.
    Replaces,
    /// The new copy was sent while open, the kept one ended: nothing new.
    Stale,
    /// Two spans given one id.
    Conflicts,
}

impl Update {
    fn of(kept: &SpanRecord, parent: Option<SpanId>, new: &Span) -> Update {
        let open = |s: &Span| s.end_time_unix_nano <= s.start_time_unix_nano;
        let one_span = kept.parent == parent
            && kept.span.start_time_unix_nano == new.start_time_unix_nano
            && kept.span.name() == new.name();
        match (one_span, open(&kept.span), open(new)) {
            (true, true, _) => Update::Replaces,
            (true, false, true) => Update::Stale,
            _ => Update::Conflicts,
        }
    }
}

/// The span ids of a pending trace, each at its index in `spans`. Most
/// traces hold a few spans: a list searched in order costs less than a
/// map's hash and the growth of its table (rehashed at each doubling);
/// past [`SeenIds::FEW`] spans the ids move to a map.
#[derive(Debug)]
enum SeenIds {
    Few(Vec<SpanId>),
    Many(IdMap<SpanId, u32>),
}

impl Default for SeenIds {
    fn default() -> Self {
        SeenIds::Few(Vec::new())
    }
}

impl SeenIds {
    const FEW: usize = 32;

    /// The index of span `id`.
    fn get(&self, id: SpanId) -> Option<usize> {
        match self {
            SeenIds::Few(ids) => ids.iter().position(|&s| s == id),
            SeenIds::Many(map) => map.get(&id).map(|&i| i as usize),
        }
    }

    /// The index of span `id` if it came before; else notes it at `at`
    /// (the next index: ids come in index order) and returns `None`.
    fn get_or_add(&mut self, id: SpanId, at: u32) -> Option<usize> {
        match self {
            SeenIds::Few(ids) => {
                if let Some(i) = ids.iter().position(|&s| s == id) {
                    return Some(i);
                }
                if ids.len() < Self::FEW {
                    ids.push(id);
                    return None;
                }
                let mut map: IdMap<SpanId, u32> =
                    IdMap::with_capacity_and_hasher(2 * Self::FEW, Default::default());
                map.extend(ids.iter().zip(0u32..).map(|(&s, i)| (s, i)));
                map.insert(id, at);
                *self = SeenIds::Many(map);
                None
            }
            SeenIds::Many(map) => match map.entry(id) {
                Entry::Occupied(e) => Some(*e.get() as usize),
                Entry::Vacant(e) => {
                    e.insert(at);
                    None
                }
            },
        }
    }
}

#[derive(Debug, Default)]
struct Pending {
    /// Boxed while pending: a growing `Vec` keeps up to half its slots
    /// spare, and a spare slot of a boxed span is 8 bytes, not ~330.
    #[allow(clippy::vec_box)]
    spans: Vec<Box<SpanRecord>>,
    /// Each span id's index in `spans`, to compare a duplicate with it.
    seen: SeenIds,
    duplicates: usize,
    conflicting: Vec<SpanId>,
    /// Stream position when a span of it last arrived, while it is in the
    /// assembler's queue of traces to look at for early release (`None`:
    /// looked at and not ready; a span arriving queues it again).
    due: Option<u64>,
    /// When it was first seen (the assembler's count of traces), so that
    /// traces are handed out in first-seen order.
    first_seen: u64,
    /// Whether a span without a parent (a root) has arrived.
    rooted: bool,
    /// Log records read as events of its spans, put on them when the
    /// trace is handed out (a record may come before its span).
    events: Vec<(SpanId, Event)>,
}

impl Pending {
    /// Reads `again`, a span that came again (the kept copy at `k`):
    /// true when its content conflicts with the kept copy.
    fn again(&mut self, k: usize, again: SpanRecord) -> bool {
        self.duplicates += 1;
        let Some(kept) = self.spans.get_mut(k) else {
            return false;
        };
        // A retry re-sends the same span: silent. Other content under the
        // same id is worth a warning, unless one copy is the other sent
        // while open.
        let same = kept.parent == again.parent
            && kept.span == again.span
            && (Arc::ptr_eq(&kept.resource, &again.resource) || *kept.resource == *again.resource)
            && (Arc::ptr_eq(&kept.scope, &again.scope) || *kept.scope == *again.scope);
        if same {
            return false;
        }
        match Update::of(kept, again.parent, &again.span) {
            Update::Replaces => **kept = again,
            Update::Stale => {}
            Update::Conflicts => {
                self.conflicting.push(again.span_id);
                return true;
            }
        }
        false
    }

    /// The trace, with the events put on their spans, to be built;
    /// `None` when no span came (only log records). `unjoined` counts the
    /// events whose span never came.
    fn into_unbuilt(mut self, id: TraceId, unjoined: &mut usize) -> Option<Unbuilt> {
        self.attach_events(unjoined);
        if self.spans.is_empty() {
            return None;
        }
        Some(Unbuilt {
            id,
            spans: self.spans,
            duplicates: self.duplicates,
            conflicting: self.conflicting,
        })
    }

    /// Puts each log event on its span, after the span's own events, in
    /// time order (a stable sort: equal times keep their order).
    fn attach_events(&mut self, unjoined: &mut usize) {
        if self.events.is_empty() {
            return;
        }
        let mut touched = Vec::new();
        for (sid, event) in std::mem::take(&mut self.events) {
            let found = self.seen.get(sid);
            match found.and_then(|i| self.spans.get_mut(i).map(|s| (i, s))) {
                Some((i, s)) => {
                    s.span.events.push(event);
                    touched.push(i);
                }
                None => *unjoined += 1,
            }
        }
        touched.sort_unstable();
        touched.dedup();
        for i in touched {
            self.spans[i].span.events.sort_by_key(|e| e.time_unix_nano);
        }
    }
}

/// A trace handed out whole but not yet built: its spans put in order and
/// indexed ([`Unbuilt::build`]), the costly part of handing a trace out,
/// left to the thread that reads the trace rather than the one that
/// assembles every trace in turn.
#[derive(Debug)]
pub struct Unbuilt {
    id: TraceId,
    #[allow(clippy::vec_box)]
    spans: Vec<Box<SpanRecord>>,
    duplicates: usize,
    conflicting: Vec<SpanId>,
}

impl Unbuilt {
    /// Spans in the trace.
    pub fn span_count(&self) -> usize {
        self.spans.len()
    }

    /// The trace, as [`Assembler::release`] hands it out.
    pub fn build(mut self) -> Trace {
        // Put in order while boxed (pointers move, not whole spans), by
        // keys read once: the spans are cold by now, and a comparison that
        // follows two pointers misses the cache twice. `Trace::new` then
        // finds them sorted.
        self.spans
            .sort_by_cached_key(|s| (s.span.start_time_unix_nano, s.span_id));
        let spans = self.spans.into_iter().map(|b| *b).collect();
        let mut trace = Trace::new(self.id, spans, self.duplicates);
        trace.conflicting = self.conflicting;
        trace
    }
}

/// Spans a pending trace has room for when it is first seen (the corpus's
/// traces hold 6 on average).
const SPANS_AHEAD: usize = 8;

/// Collects spans across requests and hands out whole traces.
#[derive(Debug, Default)]
pub struct Assembler {
    traces: IdMap<TraceId, Pending>,
    /// Traces seen: the next one's `first_seen` (output is in first-seen
    /// order, so it is deterministic).
    seen: u64,
    spans: usize,
    duplicates: usize,
    /// Stream position of the spans being added (see `add_at`).
    clock: u64,
    /// Traces handed out by `release`: a span of one arriving later is late.
    released: IdSet<TraceId>,
    /// Held traces by when a span of each last arrived (`Pending::due`),
    /// oldest first: `release` looks only at those that have been quiet
    /// long enough, not at every trace held. Entries of traces that got a
    /// span since, or were taken, are passed over (and cleaned lazily).
    queue: VecDeque<(u64, TraceId)>,
    /// Log events whose span never came, in traces handed out.
    unjoined_events: usize,
    /// Log events held.
    events: usize,
}

/// What one [`Assembler::add_events`] did.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct EventStats {
    /// Events held for their spans.
    pub events: usize,
    /// Events of traces already released, by trace (kept out).
    pub late: Vec<(TraceId, usize)>,
}

/// What one `add` did.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct AddStats {
    pub spans: usize,
    /// Duplicates dropped, exact or not.
    pub duplicates: usize,
    /// Of those, the ones whose content differed from the kept copy.
    pub conflicting: usize,
    /// Spans with ids of the wrong length (normally removed by `ingest`).
    pub invalid: usize,
    /// Spans of traces already released, by trace (kept out).
    pub late: Vec<(TraceId, usize)>,
}

impl Assembler {
    pub fn new() -> Self {
        Self::default()
    }

    /// Moves the spans of `req` into their traces.
    pub fn add(&mut self, req: Request) -> AddStats {
        let mut stats = AddStats::default();
        for rs in req.resource_spans {
            let resource = Arc::new(rs.resource.unwrap_or_default());
            for ss in rs.scope_spans {
                let scope = Arc::new(ss.scope.unwrap_or_default());
                for span in ss.spans {
                    let (Some(tid), Some(sid)) = (span.trace_id.get(), span.span_id.get()) else {
                        stats.invalid += 1;
                        continue;
                    };
                    let parent = span.parent_span_id.get().map(SpanId);
                    let Some(pending) = self.hold(TraceId(tid), &mut stats.late) else {
                        continue;
                    };
                    pending.rooted |= parent.is_none();
                    let at = u32::try_from(pending.spans.len()).unwrap_or(u32::MAX);
                    if let Some(k) = pending.seen.get_or_add(SpanId(sid), at) {
                        stats.duplicates += 1;
                        let again = SpanRecord {
                            span_id: SpanId(sid),
                            parent,
                            span,
                            resource: Arc::clone(&resource),
                            scope: Arc::clone(&scope),
                        };
                        if pending.again(k, again) {
                            stats.conflicting += 1;
                        }
                        continue;
                    }
                    pending.spans.push(Box::new(SpanRecord {
                        span_id: SpanId(sid),
                        parent,
                        span,
                        resource: Arc::clone(&resource),
                        scope: Arc::clone(&scope),
                    }));
                    stats.spans += 1;
                }
            }
        }
        self.spans += stats.spans;
        self.duplicates += stats.duplicates;
        stats
    }

    /// The trace `tid` as it is held, seen now; `None` for a trace already
    /// released, counted in `late` instead. Only replay releases traces
    /// early; serve never pays the lookup.
    fn hold(&mut self, tid: TraceId, late: &mut Vec<(TraceId, usize)>) -> Option<&mut Pending> {
        // A trace held is not released (a released one is never held
        // again): only a trace not held is looked for among those released.
        let pending = match self.traces.entry(tid) {
            Entry::Occupied(e) => e.into_mut(),
            Entry::Vacant(_) if !self.released.is_empty() && self.released.contains(&tid) => {
                match late.iter_mut().find(|(t, _)| *t == tid) {
                    Some((_, n)) => *n += 1,
                    None => late.push((tid, 1)),
                }
                return None;
            }
            Entry::Vacant(e) => {
                self.seen += 1;
                // Room for a typical trace's spans, so that few grow.
                e.insert(Pending {
                    first_seen: self.seen,
                    spans: Vec::with_capacity(SPANS_AHEAD),
                    seen: SeenIds::Few(Vec::with_capacity(SPANS_AHEAD)),
                    ..Pending::default()
                })
            }
        };
        let clock = self.clock;
        if pending.due != Some(clock) {
            pending.due = Some(clock);
            // Positions only grow in a stream; one that went back is put
            // in its place, so that the queue stays in order.
            let at = match self.queue.back() {
                Some(&(last, _)) if last > clock => {
                    self.queue.partition_point(|&(a, _)| a <= clock)
                }
                _ => self.queue.len(),
            };
            self.queue.insert(at, (clock, tid));
        }
        Some(pending)
    }

    /// Holds log records read as span events (`ingest::logs`) until their
    /// trace is handed out, when each goes on its span. A record may come
    /// before its span, in another input: it keeps its trace held as a span
    /// would. Records of a released trace are late.
    pub fn add_events(&mut self, events: Vec<SpanEvent>, position: u64) -> EventStats {
        self.clock = position;
        let mut stats = EventStats::default();
        for e in events {
            let (Some(tid), Some(sid)) = (e.trace_id.get(), e.span_id.get()) else {
                continue; // `ingest::logs` lets only OTLP-length ids through
            };
            let Some(pending) = self.hold(TraceId(tid), &mut stats.late) else {
                continue;
            };
            pending.events.push((SpanId(sid), e.event));
            stats.events += 1;
        }
        self.events += stats.events;
        stats
    }

    /// Log events held (waiting for their trace to be handed out).
    pub fn event_count(&self) -> usize {
        self.events
    }

    /// Log events whose span never came, in the traces handed out so far.
    pub fn unjoined_events(&self) -> usize {
        self.unjoined_events
    }

    /// [`Assembler::add`] for spans read at `position` of an input stream
    /// (decoded bytes so far), the clock of [`Assembler::release`].
    pub fn add_at(&mut self, req: Request, position: u64) -> AddStats {
        self.clock = position;
        self.add(req)
    }

    /// Hands out, in first-seen order, the traces that have a root and
    /// received no span in the last `window` bytes of the stream: complete,
    /// as far as a file written by an exporter can tell (a root ends, and is
    /// exported, last). Their ids are remembered so that a span arriving
    /// later is reported as late rather than scored as a new trace
    /// (docs/architecture.md, "Replay at scale").
    pub fn release(&mut self, position: u64, window: u64) -> Vec<Trace> {
        let ready = self.release_unbuilt(position, window);
        ready.into_iter().map(Unbuilt::build).collect()
    }

    /// [`Assembler::release`], the traces not yet built.
    pub fn release_unbuilt(&mut self, position: u64, window: u64) -> Vec<Unbuilt> {
        // Only the traces quiet for `window` are looked at (a lookup per
        // held trace at each release cost several times more); those with
        // a root go, in first-seen order, the others wait for a span.
        let mut ids: Vec<(u64, TraceId)> = Vec::new();
        while let Some(&(at, id)) = self.queue.front() {
            if position.saturating_sub(at) < window {
                break;
            }
            self.queue.pop_front();
            let Some(p) = self.traces.get_mut(&id) else {
                continue;
            };
            if p.due != Some(at) {
                continue;
            }
            p.due = None;
            if p.rooted {
                ids.push((p.first_seen, id));
            }
        }
        if ids.is_empty() {
            return Vec::new();
        }
        ids.sort_unstable_by_key(|&(seen, _)| seen);
        let mut out = Vec::with_capacity(ids.len());
        for (_, id) in ids {
            if let Some(t) = self.take_unbuilt(&id) {
                self.released.insert(id);
                out.push(t);
            }
        }
        out
    }

    /// Number of traces held.
    pub fn len(&self) -> usize {
        self.traces.len()
    }

    pub fn is_empty(&self) -> bool {
        self.traces.is_empty()
    }

    /// Spans held in total.
    pub fn span_count(&self) -> usize {
        self.spans
    }

    /// Removes and returns one trace (`None` also when only log records
    /// of it came: they are counted as unjoined).
    pub fn take(&mut self, id: &TraceId) -> Option<Trace> {
        self.take_unbuilt(id).map(Unbuilt::build)
    }

    fn take_unbuilt(&mut self, id: &TraceId) -> Option<Unbuilt> {
        let p = self.traces.remove(id)?;
        // The queue is cleaned lazily: a `retain` on every take would make
        // taking each trace of a long-running buffer (serve) quadratic.
        if self.queue.len() > 2 * self.traces.len() + 64 {
            let traces = &self.traces;
            self.queue
                .retain(|(at, t)| traces.get(t).is_some_and(|p| p.due == Some(*at)));
        }
        self.spans -= p.spans.len();
        self.events -= p.events.len();
        p.into_unbuilt(*id, &mut self.unjoined_events)
    }

    /// Every trace, in first-seen order.
    pub fn finish(self) -> Vec<Trace> {
        self.finish_counted().0
    }

    /// [`Assembler::finish`], and the log events whose span never came (in
    /// these traces and those handed out before).
    pub fn finish_counted(self) -> (Vec<Trace>, usize) {
        let (traces, unjoined) = self.finish_unbuilt();
        (traces.into_iter().map(Unbuilt::build).collect(), unjoined)
    }

    /// [`Assembler::finish_counted`], the traces not yet built.
    pub fn finish_unbuilt(self) -> (Vec<Unbuilt>, usize) {
        let mut unjoined = self.unjoined_events;
        let mut held: Vec<(TraceId, Pending)> = self.traces.into_iter().collect();
        held.sort_unstable_by_key(|(_, p)| p.first_seen);
        let traces = held
            .into_iter()
            .filter_map(|(id, p)| p.into_unbuilt(id, &mut unjoined))
            .collect();
        (traces, unjoined)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_print_as_lowercase_hex() {
        let mut t = [0u8; 16];
        t[0] = 0x0f;
        t[15] = 0xa0;
        assert_eq!(TraceId(t).to_string(), "0f0000000000000000000000000000a0");
        assert_eq!(
            SpanId([0xde, 0xad, 0xbe, 0xef, 0, 1, 2, 0xff]).to_string(),
            "deadbeef000102ff"
        );
        assert_eq!(format!("{:?}", SpanId([0xab; 8])), "abababababababab");
    }
    use crate::ingest::str_kv;
    use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
    use opentelemetry_proto::tonic::trace::v1::{ResourceSpans, ScopeSpans, Span};

    fn span(t: u8, s: u8, parent: Option<u8>, start: u64) -> Span {
        Span {
            trace_id: vec![t; 16],
            span_id: vec![s; 8],
            parent_span_id: parent.map(|p| vec![p; 8]).unwrap_or_default(),
            name: format!("s{s}"),
            start_time_unix_nano: start,
            ..Default::default()
        }
    }

    fn req(spans: Vec<Span>) -> Request {
        ExportTraceServiceRequest {
            resource_spans: vec![ResourceSpans {
                scope_spans: vec![ScopeSpans {
                    spans,
                    ..Default::default()
                }],
                ..Default::default()
            }],
        }
        .into()
    }

    #[test]
    fn split_out_of_order_duplicates_and_orphans() {
        let mut a = Assembler::new();
        a.add(req(vec![span(1, 3, Some(2), 30), span(2, 9, Some(7), 5)]));
        let st = a.add(req(vec![span(1, 2, Some(1), 20), span(1, 3, Some(2), 30)]));
        assert_eq!(st.duplicates, 1);
        a.add(req(vec![span(1, 1, None, 10)]));
        let traces = a.finish();
        assert_eq!(traces.len(), 2);
        let t = &traces[0];
        assert_eq!(
            t.spans
                .iter()
                .map(|s| s.span.start_time_unix_nano)
                .collect::<Vec<_>>(),
            vec![10, 20, 30]
        );
        assert_eq!(t.parent, vec![None, Some(0), Some(1)]);
        assert_eq!(t.duplicates, 1);
        assert!(t.orphans.is_empty());
        assert_eq!(traces[1].orphans, vec![0]);
        assert_eq!(t.ancestors(2).collect::<Vec<_>>(), vec![1, 0]);
    }

    fn event(t: u8, s: u8, time: u64, name: &str) -> SpanEvent {
        SpanEvent {
            trace_id: crate::ingest::span::Id::new(&[t; 16]),
            span_id: crate::ingest::span::Id::new(&[s; 8]),
            event: Event {
                time_unix_nano: time,
                name: name.into(),
                ..Default::default()
            },
        }
    }

    #[test]
    fn log_events_wait_for_their_spans_and_those_of_no_span_are_counted() {
        let mut a = Assembler::new();
        // Before their spans; one names a span that never comes, one a
        // trace of which no span comes.
        let events = vec![
            event(1, 2, 25, "after"),
            event(1, 2, 15, "before"),
            event(1, 9, 0, "no span"),
            event(3, 1, 0, "no trace"),
        ];
        assert_eq!(a.add_events(events, 0).events, 4);
        let mut own = span(1, 2, Some(1), 20);
        own.events.push(Event {
            time_unix_nano: 20,
            name: "own".into(),
            ..Default::default()
        });
        a.add(req(vec![span(1, 1, None, 10), own]));
        assert_eq!(a.event_count(), 4);
        let (traces, unjoined) = a.finish_counted();
        assert_eq!(traces.len(), 1, "records alone make no trace");
        assert_eq!(unjoined, 2);
        let names: Vec<&str> = traces[0].spans[1]
            .span
            .events
            .iter()
            .map(|e| e.name.as_str())
            .collect();
        assert_eq!(names, ["before", "own", "after"], "in time order");
        // A record of a trace handed out is late.
        let mut a = Assembler::new();
        a.add_at(req(vec![span(1, 1, None, 10)]), 0);
        assert_eq!(a.release(100, 10).len(), 1);
        let late = a.add_events(vec![event(1, 1, 0, "late")], 200);
        assert_eq!((late.events, late.late), (0, vec![(TraceId([1; 16]), 1)]));
    }

    #[test]
    fn traces_quiet_for_the_window_with_a_root_go_in_first_seen_order() {
        let ids = |ts: Vec<Trace>| ts.iter().map(|t| t.id.0[0]).collect::<Vec<u8>>();
        let mut a = Assembler::new();
        // Trace 2 is seen first and again at 8; trace 3 has no root yet.
        a.add_at(req(vec![span(2, 1, None, 10)]), 0);
        a.add_at(req(vec![span(1, 1, None, 10), span(3, 2, Some(1), 10)]), 5);
        a.add_at(req(vec![span(2, 2, Some(1), 20)]), 8);
        assert!(a.release(9, 10).is_empty());
        assert_eq!(ids(a.release(15, 10)), [1]);
        assert_eq!(ids(a.release(18, 10)), [2]);
        // Its root makes trace 3 wait for the window again.
        a.add_at(req(vec![span(3, 1, None, 5)]), 18);
        assert!(a.release(20, 10).is_empty());
        assert_eq!(ids(a.release(28, 10)), [3]);
        assert!(a.is_empty());
        // Ready together, they go in the order first seen.
        let mut a = Assembler::new();
        a.add_at(req(vec![span(2, 1, None, 10)]), 0);
        a.add_at(req(vec![span(1, 1, None, 10)]), 5);
        a.add_at(req(vec![span(2, 2, Some(1), 20)]), 6);
        assert_eq!(ids(a.release(100, 10)), [2, 1]);
    }

    #[test]
    fn duplicates_are_found_in_traces_of_many_spans() {
        let mut a = Assembler::new();
        let many: Vec<Span> = (1..=40)
            .map(|s| span(1, s, Some(1), u64::from(s)))
            .collect();
        a.add(req(many));
        let st = a.add(req(vec![span(1, 3, Some(1), 3), span(1, 39, Some(1), 39)]));
        assert_eq!((st.spans, st.duplicates), (0, 2));
        let t = &a.finish()[0];
        assert_eq!((t.spans.len(), t.duplicates), (40, 2));
    }

    #[test]
    fn duplicates_with_other_content_are_counted_apart() {
        let mut a = Assembler::new();
        a.add(req(vec![span(1, 1, None, 10), span(1, 2, Some(1), 20)]));
        // A retry of span 2 (exact), and span 1 again with another name.
        let mut other = span(1, 1, None, 10);
        other.name = "renamed".into();
        let st = a.add(req(vec![
            span(1, 2, Some(1), 20),
            other,
            span(1, 1, None, 10),
        ]));
        assert_eq!((st.spans, st.duplicates, st.conflicting), (0, 3, 1));
        let t = &a.finish()[0];
        assert_eq!(t.duplicates, 3);
        assert_eq!(t.conflicting, vec![SpanId([1; 8])]);
        assert_eq!(t.spans[0].span.name(), "s1", "the first copy is kept");
        let w = t.conflict_warning().unwrap();
        assert!(
            w.contains("1 span(s)") && w.contains("0101010101010101"),
            "{w}"
        );
    }

    #[test]
    fn a_span_sent_while_open_is_read_as_it_ended() {
        let open = |update: &str| {
            let mut s = span(1, 2, Some(1), 20);
            s.end_time_unix_nano = 20;
            s.attributes = vec![str_kv("update", update)];
            s
        };
        let mut ended = span(1, 2, Some(1), 20);
        ended.end_time_unix_nano = 25;
        ended.attributes = vec![str_kv("update", "2"), str_kv("output", "done")];
        // Sent at start, updated, ended; and the same copies out of order.
        for order in [
            vec![open("0"), open("1"), ended.clone()],
            vec![ended.clone(), open("1"), open("0")],
        ] {
            let mut a = Assembler::new();
            a.add(req(vec![span(1, 1, None, 10)]));
            let st = a.add(req(order));
            assert_eq!((st.spans, st.duplicates, st.conflicting), (1, 2, 0));
            let t = &a.finish()[0];
            assert!(t.conflict_warning().is_none());
            assert_eq!(t.spans[1].span.end_time_unix_nano, 25);
            assert_eq!(t.spans[1].span.attr_str("output"), Some("done"));
        }
        // Two ended copies that differ are still two spans given one id.
        let mut a = Assembler::new();
        let mut other = ended.clone();
        other.end_time_unix_nano = 30;
        let mut third = ended.clone();
        third.end_time_unix_nano = 35;
        a.add(req(vec![span(1, 1, None, 10), ended, other, third]));
        let t = &a.finish()[0];
        assert_eq!(t.conflicting, vec![SpanId([2; 8]); 2]);
        let w = t.conflict_warning().unwrap_or_default();
        assert!(w.contains(": 1 span(s)"), "each id named once: {w}");
        assert_eq!(t.spans[1].span.end_time_unix_nano, 25, "the first is kept");
    }

    #[test]
    fn parent_cycles_are_broken_at_the_earliest_span() {
        // 2 <-> 3 (a 2-cycle), 5 -> 6 -> 7 -> 5 with 8 hanging below 7,
        // and 4 under 2. Given in two orders: the result must not change.
        let spans = vec![
            span(1, 1, None, 10),
            span(1, 2, Some(3), 30),
            span(1, 3, Some(2), 20),
            span(1, 4, Some(2), 40),
            span(1, 5, Some(7), 50),
            span(1, 6, Some(5), 60),
            span(1, 7, Some(6), 45),
            span(1, 8, Some(7), 80),
        ];
        let mut reversed = spans.clone();
        reversed.reverse();
        for order in [spans, reversed] {
            let mut a = Assembler::new();
            a.add(req(order));
            let t = a.finish().remove(0);
            let ids = |i: usize| t.spans[i].span_id;
            // By start: 1, 3, 2, 4, 7, 5, 6, 8.
            assert_eq!(
                t.parent,
                vec![
                    None,
                    None,
                    Some(1),
                    Some(2),
                    None,
                    Some(4),
                    Some(5),
                    Some(4)
                ]
            );
            assert_eq!(
                t.broken_links,
                vec![
                    BrokenLink {
                        span: ids(1),
                        parent: SpanId([2; 8]),
                        cycle_len: 2
                    },
                    BrokenLink {
                        span: ids(4),
                        parent: SpanId([6; 8]),
                        cycle_len: 3
                    },
                ]
            );
            assert!(t.orphans.is_empty());
            let warning = t.cycle_warning().unwrap();
            assert!(warning.contains(&SpanId([3; 8]).to_string()), "{warning}");
            assert!(warning.contains(&SpanId([6; 8]).to_string()), "{warning}");
            let order = t.top_down(&t.children());
            assert_eq!(order.len(), t.spans.len());
            let pos = |i: usize| order.iter().position(|&x| x == i).unwrap();
            for (i, p) in t.parent.iter().enumerate() {
                if let Some(p) = p {
                    assert!(pos(*p) < pos(i), "parent {p} after child {i}");
                }
            }
        }
    }

    #[test]
    fn top_down_puts_parents_first_even_when_children_start_earlier() {
        let mut a = Assembler::new();
        // 3 starts before its parent 2, which starts before its parent 1.
        a.add(req(vec![
            span(1, 1, None, 30),
            span(1, 2, Some(1), 20),
            span(1, 3, Some(2), 10),
        ]));
        let t = a.finish().remove(0);
        assert!(t.broken_links.is_empty());
        assert!(t.cycle_warning().is_none());
        assert_eq!(t.top_down(&t.children()), vec![2, 1, 0]);
        assert_eq!(t.children().of(2), &[1]);
        assert_eq!(t.children().of(0), &[] as &[usize]);
    }

    #[test]
    fn hex_ids() {
        let t: TraceId = "0123456789ABCDEF0123456789abcdef".parse().unwrap();
        assert_eq!(t.to_string(), "0123456789abcdef0123456789abcdef");
        assert!("0123".parse::<TraceId>().is_err());
    }
}
