//! Calls whose result is in another trace (docs/conventions.md, "The
//! conversation witness", "Each model call its own trace").
//!
//! Without a span around an agent's loop, every model call is a trace of
//! its own, and the result of a call the model asked for is carried by the
//! next request, in the next trace. Most instrumentations repeat the model's
//! turn in that request, so the next trace alone has the call
//! (`conversation::rebuild`). Some keep only the results (OpenLIT's OpenAI
//! integration): the call's name and arguments are in one trace, its result
//! in the next, joined by nothing but the call id.
//!
//! A reader going through the traces in input order ([`Carry`]) joins them,
//! conservatively: the asking trace left the call open (no later request in
//! it), the answering trace has no tool span and carries a result under that
//! id that nothing in it asked for, both ran in the same process (the same
//! resource attributes, `service.instance.id` included), and the request
//! started after the model's answer ended. The call is counted once, in the
//! trace of the request that carries its result (as calls carried by a
//! repeated model turn are); the asking trace lists it as not counted. Only
//! the last [`MAX_OPEN`] open calls are kept.

#[cfg(test)]
mod answer_tests;
#[cfg(test)]
mod ask_ids_tests;
#[cfg(test)]
mod chain_tests;
mod continued;
mod copies;
#[cfg(test)]
mod cross_tests;
pub(crate) mod deferred;
#[cfg(test)]
mod deferred_tests;
#[cfg(test)]
mod echoed_ids_tests;
mod failed;
mod history_asked;
#[cfg(test)]
mod id_between_tests;
mod id_span;
pub(crate) mod later;
#[cfg(test)]
mod later_tests;
mod lone_asked;
mod lone_span;
mod ran_before;
#[cfg(test)]
mod retold_tests;
#[cfg(test)]
mod shown_tests;
#[cfg(test)]
mod twins_tests;
mod unasked;
pub(crate) mod witnessed;
mod wrapped_span;
#[cfg(test)]
mod wrapped_tests;

use std::collections::VecDeque;

use super::kept::{key, Kept, Keys};
use super::merge::same_args;
use super::open::ended_by;
pub use super::open::{Echo, Open, OpenAsk};
use super::open::{ASKED_ARGS_FORM, ASKED_NAME_FORM, HISTORY_FORM};
use super::{attempts, echo, hollow_record, mcp_record_result, pending, twice};
use crate::assemble::Trace;
use crate::extract::conversation::twins::Prints;

/// Open calls kept for the traces after theirs.
pub const MAX_OPEN: usize = 256;

/// Traces held at most behind a lone MCP client trace that waits for the
/// trace counting its call (`extract::echo`).
pub const MAX_HELD: usize = 64;

/// What a trace read on its own leaves open, and the trace itself while it
/// may answer a call an earlier trace left open (it is read again then).
#[derive(Debug)]
pub struct Left {
    open: Box<Open>,
    trace: Option<Trace>,
}

impl Left {
    /// From what reading a trace left open; `trace` gives the trace, kept
    /// only when it holds answers.
    pub fn of(open: Option<Box<Open>>, trace: impl FnOnce() -> Trace) -> Option<Left> {
        open.map(|open| {
            // A call rebuilt from the conversation, or a tool span's call
            // without arguments, may be another record of a call an earlier
            // trace counted under the same call id, and a tool span's call
            // another span of an execution an earlier trace's span records
            // (`twice`); traces without calls are not kept for it (`replay`
            // would copy each).
            // A trace asking for calls nothing in it answers is read again
            // when a later trace counts them (`later`).
            let holds = !open.answers.is_empty()
                || !open.asks.is_empty()
                || !open.unshown.is_empty()
                || !open.retold.is_empty()
                || !open.history.is_empty()
                || open.bare.is_some()
                || !open.lone.is_empty()
                || !open.failed.is_empty()
                || open
                    .calls
                    .iter()
                    .any(|c| c.id.is_some() || !c.from_conversation);
            let trace = holds.then(trace);
            Left { open, trace }
        })
    }

    /// What the trace left open, without the trace.
    pub fn into_open(self) -> Box<Open> {
        self.open
    }
}

/// The open calls of the traces read so far, in input order, and what
/// the traces since a lone MCP client trace gave, held until the trace
/// that counts its call has been read (`T`: what a reader makes of a
/// trace).
#[derive(Debug)]
pub struct Carry<T> {
    /// Under their tool's name ([`NAME`]) and call id ([`ASK_ID`]).
    asks: Kept<OpenAsk>,
    /// The calls of the last traces read (`extract::echo`), under the keys
    /// of [`call_keys`]: every rule matching a call with a kept one asks
    /// for the same name (and most for the same call id), so a call is
    /// compared only with the kept calls under its keys.
    calls: Kept<Echo>,
    held: VecDeque<Held<T>>,
    /// The call records of spans that ran no tool (`witnessed`).
    witnesses: VecDeque<super::open::Witnessed>,
    /// What the carry is done with, for the reader to drop elsewhere
    /// ([`Carry::handing_back`]); `None`: dropped here.
    spent: Option<Spent>,
    /// Whether a lone client trace (or one wanting records) holds every
    /// trace after it until a trace counting calls comes.
    barrier: bool,
    /// What identifies the first requests of the last traces read
    /// (`conversation::twins`).
    prints: Prints,
}

/// What a carry is done with: traces it read a second time (or kept for
/// it), calls it no longer keeps. The reader in input order is one thread
/// that every other may wait for, and a trace's or a call's drop frees
/// each of its parts, so it hands them to another thread to drop.
#[derive(Debug, Default)]
pub struct Spent {
    traces: Vec<Trace>,
    calls: Vec<Echo>,
    asks: Vec<OpenAsk>,
}

impl Spent {
    /// Moves everything of `other` here (into an empty list, the list
    /// itself, not its items one by one).
    pub fn append(&mut self, other: &mut Spent) {
        fn move_all<T>(to: &mut Vec<T>, from: &mut Vec<T>) {
            if to.is_empty() {
                std::mem::swap(to, from);
            } else {
                to.append(from);
            }
        }
        move_all(&mut self.traces, &mut other.traces);
        move_all(&mut self.calls, &mut other.calls);
        move_all(&mut self.asks, &mut other.asks);
    }

    /// The traces, in the order the carry was done with them.
    pub fn into_traces(self) -> Vec<Trace> {
        self.traces
    }
}

/// Whether a request of process `run` that started at `start` answers ask
/// `a` by call id `id`.
fn answered_by(a: &OpenAsk, id: &str, run: u64, start: u64) -> bool {
    a.asked.id.as_deref() == Some(id) && a.run == run && ended_by(a.end_time_unix_nano, start)
}

/// Whether `a` asked for `call` before the call started: the same call
/// id and tool, or the same tool when the call's id was made from its
/// place in the history (`made`: it had none).
fn asked_for(a: &OpenAsk, call: &Echo, id: &str, made: bool) -> bool {
    a.asked.name == call.name
        && (made || a.asked.id.as_deref() == Some(id))
        && a.end_time_unix_nano <= call.start
}

/// The keys' kinds: an ask's tool, a call's tool and id,
/// an ask's call id, and a call's tool by the call's kind (read from a span
/// without or with a call id, or rebuilt from the conversation).
const NAME: u64 = 1;
const CALL_ID: u64 = 2;
const ASK_ID: u64 = 3;
const SPAN_BARE: u64 = 4;
const SPAN_ID: u64 = 5;
const CONVERSATION: u64 = 6;

/// The keys a kept call is found under: its tool and call id; its tool by
/// its kind (the three kinds' together: every kept call of a tool).
fn call_keys(c: &Echo) -> Keys {
    let mut keys = Keys::default();
    if let Some(id) = &c.id {
        keys.add(key(CALL_ID, (c.name.as_str(), id.as_str())));
    }
    // Found by the id its answer uses too (`twice::ids_meet`).
    if let Some(id) = &c.also {
        keys.add(key(CALL_ID, (c.name.as_str(), id.as_str())));
    }
    let kind = match (c.from_conversation, c.id.is_some()) {
        (true, _) => CONVERSATION,
        (false, true) => SPAN_ID,
        (false, false) => SPAN_BARE,
    };
    keys.add(key(kind, c.name.as_str()));
    keys
}

/// The keys a kept open call is found under: its tool and its call id.
fn ask_keys(a: &OpenAsk) -> Keys {
    let mut keys = Keys::default();
    keys.add(key(NAME, a.asked.name.as_str()));
    if let Some(id) = &a.asked.id {
        keys.add(key(ASK_ID, id.as_str()));
    }
    keys
}

/// The earlier of two positions found.
fn earlier(a: Option<usize>, b: Option<usize>) -> Option<usize> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

impl<T> Default for Carry<T> {
    fn default() -> Self {
        Carry {
            asks: Kept::default(),
            calls: Kept::default(),
            held: VecDeque::new(),
            witnesses: VecDeque::new(),
            spent: None,
            barrier: false,
            prints: Prints::default(),
        }
    }
}

/// What a reader made of a trace read after a lone MCP client trace whose
/// calls no trace has counted yet; for the lone trace, the trace and those
/// calls, to read it again when a later trace counts them.
#[derive(Debug)]
struct Held<T> {
    out: T,
    lone: Option<(Trace, Vec<Echo>)>,
    /// What the lone trace was read again with so far: each later read
    /// takes all of it (`echo_held`).
    counted: Vec<OpenAsk>,
    wanting: Option<witnessed::Wanting>,
    /// The trace, while later traces may count what it asked for.
    asking: Option<later::Asking>,
}

impl<T> Carry<T> {
    /// A carry that keeps the traces it is done with for
    /// [`Carry::spent`] rather than dropping them: a trace's drop frees
    /// each span's parts, and the reader in input order is one thread
    /// that every other may wait for, so it hands them to another.
    pub fn handing_back() -> Self {
        Carry {
            spent: Some(Spent::default()),
            ..Carry::default()
        }
    }

    /// Hands `call`, no longer kept, to the reader to drop elsewhere (with
    /// [`Carry::handing_back`]; else drops it).
    fn spend(&mut self, call: Option<Echo>) {
        if let (Some(spent), Some(c)) = (self.spent.as_mut(), call) {
            spent.calls.push(c);
        }
    }

    /// The traces done with since the last call (with
    /// [`Carry::handing_back`]; else none).
    pub fn spent(&mut self) -> Spent {
        self.spent.as_mut().map(std::mem::take).unwrap_or_default()
    }

    /// The open calls that a trace leaving `open` answers (removed from
    /// the carry: each is counted once).
    pub fn take(&mut self, open: Option<&Open>) -> Vec<OpenAsk> {
        let Some(open) = open else {
            return Vec::new();
        };
        let mut out = Vec::new();
        for (id, run, start) in &open.answers {
            let found = self.asks.last_under(key(ASK_ID, id.as_str()), |a| {
                answered_by(a, id, *run, *start)
            });
            if let Some(k) = found.and_then(|k| self.asks.remove(k)) {
                out.push(k);
            }
        }
        if let Some(bare) = open.bare {
            let mut group = self.bare_group(bare);
            // From the back, so the positions before stay right.
            group.reverse();
            let mut taken: Vec<OpenAsk> =
                group.iter().filter_map(|&k| self.asks.remove(k)).collect();
            taken.reverse();
            out.extend(taken);
        }
        // Asks whose failure the trace's request tells in text (`failed`).
        if !open.failed.is_empty() {
            out.extend(self.take_failed(open));
        }
        out
    }

    /// Drops the results without call ids of `open`'s first request when
    /// another record of that same request, read before, answered them
    /// (`conversation::twins`), and keeps the request's print.
    fn drop_twins_answers(&mut self, open: &mut Open) {
        if let Some(p) = open.print {
            if open.bare.is_some() && self.prints.has_twin(&p) {
                open.bare = None;
            }
            self.prints.keep(p);
        }
    }

    /// The positions of the open calls that results without call ids
    /// (`bare`: how many, process, request start) answer by order: the
    /// calls of the last model output that left calls open in that process
    /// before the request, when there are no more of them than results.
    fn bare_group(&self, (count, run, start): (usize, u64, u64)) -> Vec<usize> {
        let before = |a: &OpenAsk| {
            a.run == run
                && a.end_time_unix_nano <= start
                && !a.is_echo()
                && !copies::answered_before(&self.calls, a)
        };
        let last = self
            .asks
            .iter()
            .filter(|a| before(a))
            .max_by_key(|a| a.end_time_unix_nano);
        let Some(last) = last else {
            return Vec::new();
        };
        let (trace_id, span_id) = (last.trace_id, last.span_id);
        let group: Vec<usize> = (0..self.asks.len())
            .filter(|&k| {
                self.asks
                    .get(k)
                    .is_some_and(|a| before(a) && a.trace_id == trace_id && a.span_id == span_id)
            })
            .collect();
        if group.len() > count {
            return Vec::new();
        }
        group
    }

    /// The calls a trace (leaving `open`) shows answered in its first
    /// request's history that no trace kept here asked for (in the same
    /// process) or counted: the model calls that asked for them recorded
    /// no output (`Open::history`).
    fn unseen(&self, open: &Open) -> Vec<OpenAsk> {
        open.history
            .iter()
            .filter(|h| {
                let is_asked = |a: &OpenAsk| a.asked.id == h.asked.id && a.run == h.run;
                let is_counted = |c: &Echo| c.id == h.asked.id && c.name == h.asked.name;
                let name = h.asked.name.as_str();
                let (asked, counted) = match &h.asked.id {
                    Some(id) => (
                        self.asks.any_under(key(ASK_ID, id.as_str()), is_asked),
                        self.calls
                            .any_under(key(CALL_ID, (name, id.as_str())), is_counted),
                    ),
                    None => (
                        self.asks.iter().any(is_asked),
                        self.first_named(name, is_counted).is_some(),
                    ),
                };
                !asked && !counted
            })
            .cloned()
            .collect()
    }

    /// Keeps the calls a trace left open, for the traces after it.
    pub fn keep(&mut self, open: Option<&Open>) {
        if let Some(open) = open {
            self.keep_these(open.asks.iter().cloned(), open.calls.iter().cloned());
        }
    }

    /// [`Carry::keep`], of calls the carry may take rather than copy.
    fn keep_these(
        &mut self,
        asks: impl IntoIterator<Item = OpenAsk>,
        calls: impl IntoIterator<Item = Echo>,
    ) {
        for a in asks {
            // The same ask in two chains' outputs is one call (`copies`).
            if copies::is_copy(&self.asks, &a) {
                if let Some(spent) = self.spent.as_mut() {
                    spent.asks.push(a);
                }
                continue;
            }
            let keys = ask_keys(&a);
            let at = a.end_time_unix_nano;
            self.asks.push(a, keys, at);
        }
        while self.asks.len() > MAX_OPEN {
            let old = self.asks.pop_front();
            if let (Some(spent), Some(a)) = (self.spent.as_mut(), old) {
                spent.asks.push(a);
            }
        }
        for c in calls {
            let keys = call_keys(&c);
            let at = c.start;
            self.calls.push(c, keys, at);
        }
        while self.calls.len() > MAX_OPEN {
            let old = self.calls.pop_front();
            self.spend(old);
        }
    }

    /// The calls of a lone MCP client trace (leaving `open`) that an
    /// earlier trace counted, as carried entries (`extract::echo`); each
    /// earlier call is matched once (removed from the carry).
    fn echoed(&mut self, open: &Open) -> Vec<OpenAsk> {
        let mut out = Vec::new();
        // Attempts paused for approval wait for a later run (`pending`).
        for lone in open.lone.iter().filter(|l| !l.pending) {
            let found = self
                .first_named(&lone.name, |c| echo::same_call(lone, c))
                .or_else(|| self.namespaced(lone));
            if let Some(c) = found.and_then(|k| self.calls.remove(k)) {
                out.push(echo::carried(lone, &c));
                self.spend(Some(c));
                continue;
            }
            // The client's span ran between the model's asking and the
            // request of an earlier trace that counts the call from the
            // conversation (`twice::between_either`).
            let ran = self.first_named(&lone.name, |c| twice::between_either(lone, c));
            if let Some(k) = ran {
                out.extend(self.span_counted(lone, k));
            } else if lone.result.is_some() {
                // A record of the answer alone read after the trace that
                // counts its call (serve's order of completion): not
                // counted again; that trace is out, its result stays.
                let ran = self.first_named(&lone.name, |c| hollow_record::ran_for(lone, c));
                if let Some(c) = ran.and_then(|k| self.calls.get_mut(k)) {
                    out.push(twice::span_counted(lone, c));
                    c.asked = Some(u64::MAX);
                }
            }
        }
        out
    }

    /// The position of the kept call that `lone`, a hollow record, records
    /// under a namespaced name (`hollow_record::same_tool`): not under its
    /// own name's key, so looked for among all.
    fn namespaced(&self, lone: &Echo) -> Option<usize> {
        let hollow = lone.args.is_null() && lone.id.is_none();
        hollow.then(|| self.calls.iter().position(|c| echo::same_call(lone, c)))?
    }

    /// The carried entry saying that `span`, a tool span's call of the trace
    /// read, is the execution of the kept call at `k`, rebuilt from the
    /// conversation; that call stays counted, and is not matched so again.
    fn span_counted(&mut self, span: &Echo, k: usize) -> Option<OpenAsk> {
        let counted = self.calls.get_mut(k)?;
        counted.asked = None;
        Some(twice::span_counted(span, counted))
    }

    /// The position of the first kept call of tool `name` that `is` says
    /// is the one sought (`is` runs only on calls of that name).
    fn first_named(&self, name: &str, mut is: impl FnMut(&Echo) -> bool) -> Option<usize> {
        let mut first = |kind| self.calls.first_under(key(kind, name), &mut is);
        let spans = earlier(first(SPAN_BARE), first(SPAN_ID));
        earlier(spans, first(CONVERSATION))
    }

    /// The position of the first kept call that `is` says is another
    /// record of `later` (`twice::may_be_same`, `twice::same_call`): only
    /// the kept calls of its tool whose kind and call id allow one call
    /// are asked. A call with an id is one with a call of the same id
    /// (rebuilt from the conversation on one side at least) or, read from
    /// a span, with a span's call without one (`twice::nested`); a span's
    /// call without an id only with a span's call with one. Two spans'
    /// calls are one only when they start close (`twice::may_nest`).
    fn first_same(&self, later: &Echo, mut is: impl FnMut(&Echo) -> bool) -> Option<usize> {
        let name = later.name.as_str();
        let near = |start| twice::may_nest(later.start, start);
        match (&later.id, later.from_conversation) {
            (Some(id), true) => {
                let first = self
                    .calls
                    .first_under(key(CALL_ID, (name, id.as_str())), &mut is);
                // Or by the id its answer uses (`twice::ids_meet`).
                let also = later
                    .also
                    .as_deref()
                    .and_then(|also| self.calls.first_under(key(CALL_ID, (name, also)), &mut is));
                earlier(first, also)
            }
            (Some(id), false) => earlier(
                self.calls
                    .first_under(key(CALL_ID, (name, id.as_str())), &mut is),
                self.calls.first_near(key(SPAN_BARE, name), near, &mut is),
            ),
            (None, true) => None,
            // A span's call joined to its trace's ask of that id
            // (`conversation::ask_ids`): the conversation's record of it.
            (None, false) => earlier(
                later.also.as_deref().and_then(|also| {
                    let conversation = |c: &Echo| c.from_conversation && is(c);
                    self.calls
                        .first_under(key(CALL_ID, (name, also)), conversation)
                }),
                self.calls.first_near(key(SPAN_ID, name), near, &mut is),
            ),
        }
    }

    /// The calls of a trace (leaving `open`) that are other records, under
    /// the same call id, of calls an earlier trace counted, as carried
    /// entries (`extract::twice`); each earlier call is matched once
    /// (removed from the carry).
    fn twice(&mut self, open: &Open) -> Vec<OpenAsk> {
        let mut out = Vec::new();
        let retold = |c: &Echo| open.retold.iter().any(|(id, ..)| c.id.as_ref() == Some(id));
        let mut recounted = Vec::new();

        // Calls read from spans without an id too: one execution may be
        // recorded by two spans, each in its own trace (`twice::nested`).
        for later in open
            .calls
            .iter()
            .filter(|c| c.id.is_some() || !c.from_conversation)
        {
            // Two halves of one streamed call: no output asked for the id
            // between them (a later run reusing it asks again first).
            let asked_between = |(from, to): (u64, u64)| {
                let is = |a: &OpenAsk| {
                    a.asked.id == later.id
                        && from <= a.end_time_unix_nano
                        && a.end_time_unix_nano <= to
                };
                match &later.id {
                    Some(id) => self.asks.any_under(key(ASK_ID, id.as_str()), is),
                    None => self.asks.iter().any(is),
                }
            };
            // When the model's output asked for a call rebuilt from the
            // conversation (`twice::ran_between`).
            // Or by a model output of its own trace (`lone_span`).
            let asked = later
                .from_conversation
                .then(|| later.asked.or_else(|| self.asked_at(later)))
                .flatten();
            let found = self.first_same(later, |c| {
                twice::may_be_same(later, c)
                    && twice::same_call(later, c)
                    && twice::adjacent(later, c).is_none_or(|gap| !asked_between(gap))
            });
            // A retelling of a call an earlier trace of the conversation
            // counted (`continued`): that call stays kept for the traces
            // after, which retell it again.
            if found.is_none() && later.from_conversation && later.id.is_some() {
                if let Some(e) = self.continued(later).and_then(|k| self.calls.get(k)) {
                    out.push(continued::carried(later, e));
                    continue;
                }
            }
            // A tool span that ran the call between its asking and the
            // request with its result (`twice::ran_between`).
            let between = found.is_none().then(|| {
                let bare = key(SPAN_BARE, later.name.as_str());
                match asked {
                    // A span with the call id first (`id_span`).
                    Some(t) => self
                        .running_id_span(later, t)
                        .or_else(|| self.running_span(later, t, &open.calls, &mut out)),
                    // No output kept asked for a call its trace retold
                    // (`twice::ran_unasked`).
                    None if retold(later) => self
                        .calls
                        .last_under(bare, |c| twice::ran_unasked(later, c)),
                    None => None,
                }
            });
            let between = between.flatten();
            if found.is_none() && between.is_none() && !later.from_conversation {
                self.unmatched_span(later, open, &mut out);
                continue;
            }
            if let Some(c) = found.or(between).and_then(|k| self.calls.remove(k)) {
                out.push(twice::carried(later, &c, between.is_some()));
                self.spend(Some(c));
                // Another record of a call under the model's id: the
                // traces after still find that id counted, whichever
                // record counts it (`unseen`; the earlier one, a tool
                // span's, may know the id only as its ask's).
                if found.is_some() && later.from_conversation && later.id.is_some() {
                    recounted.push(later.clone());
                }
                if between.is_some() {
                    // Counted: the traces after see it under the
                    // conversation's id too (`unseen`).
                    self.calls
                        .push(later.clone(), call_keys(later), later.start);
                }
            }
        }
        // Kept after the trace's calls were compared: two records in
        // one trace are never one call here.
        for c in recounted {
            let (keys, at) = (call_keys(&c), c.start);
            self.calls.push(c, keys, at);
        }
        out
    }

    /// What a tool span's call of the trace read (leaving `open`) that is
    /// no other record of a kept call may still be, as carried entries
    /// added to `out`: the run of a call an earlier trace counts from the
    /// conversation, of an ask left open, or of an asked call under its
    /// tool class.
    fn unmatched_span(&mut self, later: &Echo, open: &Open, out: &mut Vec<OpenAsk>) {
        // A tool span read after the trace that counts its call
        // from the conversation (`twice::between_either`: a span's
        // call without an id, a call rebuilt from the conversation).
        let ran = later.id.is_none().then(|| self.counting_call(later, out));
        if let Some(k) = ran.flatten() {
            out.extend(self.span_counted(later, k));
            return;
        }
        // Or with the model's arguments wrapped (`wrapped_span`).
        if self.counting_wrapped(later, out) {
            return;
        }
        // A span of another name running a call an earlier trace
        // left open under its id (`twice::runs_ask`).
        let open_ask = later.id.as_deref().and_then(|id| {
            let k = self.asks.last_under(key(ASK_ID, id), |a| {
                twice::runs_ask(later, a, open.tool_only)
            })?;
            self.asks.get(k)
        });
        out.extend(open_ask.map(|a| twice::span_of_ask(later, a)));
        // A span writing the asked call's arguments as a bare value
        // (`twice::renders_ask`) or wrapped (`wrapped_span`).
        let rendered = self.rendering_ask(later);
        out.extend(rendered.map(|a| twice::args_of_ask(later, a)));
        // A span named after the tool class running an asked call
        // with its arguments (`extract::attempts`).
        // Not an attempt paused for approval (held for its run:
        // `pending`).
        let paused = |l: &Echo| l.pending && l.span_id == later.span_id;
        if attempts::may_be_attempt(later) && !open.lone.iter().any(paused) {
            let ask = attempts::ask_of(later, self.asks.iter());
            out.extend(ask.map(|a| attempts::carried(later, a)));
        }
    }

    /// The model outputs' calls kept here that a trace (leaving `open`)
    /// retold from a request's history: the same call id (the same tool,
    /// for a call retold without one), asked in the same process before
    /// the request. Left here, as the calls' records (a
    /// later trace's history repeats them).
    fn retold(&self, open: &Open) -> Vec<OpenAsk> {
        let mut out = Vec::new();
        for (id, run, start) in &open.retold {
            // A call the history retold without an id is known by its tool.
            let tool = super::conversation::named_tool(id);
            let is = |a: &OpenAsk| {
                let same = match tool {
                    Some(t) => a.asked.name == t,
                    None => a.asked.id.as_deref() == Some(id.as_str()),
                };
                same && a.run == *run && ended_by(a.end_time_unix_nano, *start)
            };
            let found = match tool {
                Some(t) => self.asks.last_under(key(NAME, t), is),
                None => self.asks.last_under(key(ASK_ID, id.as_str()), is),
            };
            out.extend(found.and_then(|k| self.asks.get(k)).cloned());
        }
        out
    }

    /// The end of the last model output kept here that asked for `call`
    /// before the call started: one with the same call id and tool, or the
    /// same tool when the call's id was made from its place in the history
    /// (it had none).
    fn asked_at(&self, call: &Echo) -> Option<u64> {
        self.asked_in(call, &[])
    }

    /// [`Carry::asked_at`], of the model outputs kept here and `also`.
    fn asked_in(&self, call: &Echo, also: &[&OpenAsk]) -> Option<u64> {
        let id = call.id.as_deref()?;
        let made = super::conversation::is_made(id);
        let is = |a: &&OpenAsk| asked_for(a, call, id, made);
        // A made id asks by the tool alone.
        let under = if made {
            key(NAME, call.name.as_str())
        } else {
            key(ASK_ID, id)
        };
        let kept = self.asks.under(under).filter_map(|k| self.asks.get(k));
        kept.chain(also.iter().copied())
            .filter(is)
            .map(|a| a.end_time_unix_nano)
            .max()
    }

    /// Dates the asking of the calls a trace rebuilt from the conversation
    /// (`Echo::asked`, for [`twice::between_either`]), from the model
    /// outputs kept here and those the trace took from here (`taken`).
    fn date_asks(&self, calls: &mut [Echo], taken: &[OpenAsk]) {
        let taken: Vec<&OpenAsk> = taken
            .iter()
            .filter(|a| {
                !a.is_echo()
                    && a.form != HISTORY_FORM
                    && a.form != ASKED_ARGS_FORM
                    && a.form != ASKED_NAME_FORM
            })
            .collect();
        for c in calls.iter_mut().filter(|c| c.from_conversation) {
            c.asked = c.asked.or_else(|| self.asked_in(c, &taken));
            if c.also.is_none() {
                c.also = self.asking_id(c, &taken);
            }
        }
    }

    /// For a call rebuilt from a history that drops call ids (its id made:
    /// Monocle's records of Semantic Kernel's model calls), the id of the
    /// one model output that asked for it: the last output before it asking
    /// for its tool with equal arguments, under an id of the model's. A
    /// tool span of another trace going by that id is then its execution
    /// (`twice::ids_meet`, `twice::ran_between`). None when two such
    /// outputs ended last together (one turn asking twice alike).
    fn asking_id(&self, call: &Echo, also: &[&OpenAsk]) -> Option<String> {
        let made = super::conversation::is_made(call.id.as_deref()?);
        if !made || call.args.is_null() {
            return None;
        }
        let kept = self
            .asks
            .under(key(NAME, call.name.as_str()))
            .filter_map(|k| self.asks.get(k));
        let mut last: Option<&OpenAsk> = None;
        let mut tied = false;
        for a in kept.chain(also.iter().copied()).filter(|a| {
            // A made id: the output asked for the tool, whatever its id.
            asked_for(a, call, "", made)
                && a.asked
                    .id
                    .as_deref()
                    .is_some_and(|id| !super::conversation::is_made(id))
                && same_args(&a.asked.args, &call.args)
        }) {
            match last {
                Some(l) if l.end_time_unix_nano > a.end_time_unix_nano => {}
                Some(l) if l.end_time_unix_nano == a.end_time_unix_nano => {
                    tied |= l.asked.id != a.asked.id;
                }
                _ => {
                    last = Some(a);
                    tied = false;
                }
            }
        }
        last.filter(|_| !tied).and_then(|a| a.asked.id.clone())
    }

    /// Folds in a trace read on its own in input order: `first` is what
    /// that read gave and `left` what it left; when the trace answers a call
    /// kept here, or is a lone MCP client trace whose calls an earlier trace
    /// counted, `again` reads it once more with those calls and its result
    /// replaces `first`. Keeps what the trace finally leaves open. Returns
    /// what is due, in input order: nothing while a lone client trace read
    /// before waits for the trace that counts its calls (that trace, or
    /// [`MAX_HELD`] traces, or [`Carry::finish`] releases them).
    pub fn settle(
        &mut self,
        first: T,
        left: Option<Left>,
        again: impl FnMut(&Trace, &[OpenAsk]) -> (T, Option<Box<Open>>),
    ) -> Vec<T> {
        let mut due = Vec::new();
        self.settle_into(first, left, again, &mut due);
        due
    }

    /// [`Carry::settle`], adding what is due to `due` (a reader settling
    /// a batch of traces makes one list, not one per trace).
    pub fn settle_into(
        &mut self,
        first: T,
        left: Option<Left>,
        mut again: impl FnMut(&Trace, &[OpenAsk]) -> (T, Option<Box<Open>>),
        due: &mut Vec<T>,
    ) {
        // The model outputs' calls this trace took from here.
        let mut taken = Vec::new();
        let (mut out, mut open, trace) = match left {
            None => (first, None, None),
            Some(Left { mut open, trace }) => {
                self.drop_twins_answers(&mut open);
                self.unasked(&mut open);
                let answers = self.answers(Some(&open));
                let retold = self.retold(&open);
                let mut unseen = self.unseen(&open);
                unseen.extend(self.history_asked(&open, trace.as_ref()));
                let mut echoed = self.echoed(&open);
                if trace.is_some() {
                    echoed.extend(self.twice(&open));
                    echoed.extend(self.witnessed(&open));
                }
                match trace {
                    Some(t)
                        if answers
                            || !echoed.is_empty()
                            || !unseen.is_empty()
                            || !retold.is_empty() =>
                    {
                        let mut carried = if answers {
                            self.take(Some(&open))
                        } else {
                            Vec::new()
                        };
                        carried.extend(retold);
                        carried.extend(echoed);
                        carried.extend(unseen);
                        let (mut out, mut open) = again(&t, &carried);
                        // Calls only that read counted, run by earlier spans.
                        let ran = self.ran_before(open.as_deref(), &carried);
                        if !ran.is_empty() {
                            carried.extend(ran);
                            (out, open) = again(&t, &carried);
                        }
                        taken = carried;
                        (out, open, Some(t))
                    }
                    t => (first, Some(open), t),
                }
            }
        };
        // Calls with arguments, as the lone client traces held compare them
        // (a call with only a call id is kept for `twice`, not for them).
        // A trace holding attempts paused for approval waits for their run.
        let counted = open.as_ref().is_some_and(|o| {
            !o.lone.iter().any(|l| l.pending) && o.calls.iter().any(|c| !c.args.is_null())
        });
        let mut wants = Vec::new();
        // Answers held MCP records give this trace's calls
        // (`mcp_record_result`).
        let mut answered = Vec::new();
        let by = trace.as_ref().map(|t| t.id);
        self.count_later(by, &taken, open.as_deref(), &mut again);
        let mut waiting = open.as_deref().map(later::waiting).unwrap_or_default();
        if let Some(o) = open.as_deref_mut() {
            let shown = self.witness(std::mem::take(&mut o.witnessed), &mut again);
            // An ask an earlier trace's tool span shows waits for no later one.
            waiting.retain(|w| !shown.iter().any(|s| witnessed::shows(s, w)));
            wants = std::mem::take(&mut o.wanting);
            self.date_asks(&mut o.calls, &taken);
            answered = self.echo_held(&mut o.calls, &mut again);
            answered.extend(shown);
            // Only the lone calls are read below: the rest moves here.
            let (asks, calls) = (std::mem::take(&mut o.asks), std::mem::take(&mut o.calls));
            self.keep_these(asks, calls);
        }
        if let (false, Some(t)) = (answered.is_empty(), trace.as_ref()) {
            taken.extend(answered);
            out = again(t, &taken).0;
        }
        let mut asking = None;
        let (lone, wanting) = match (open.map(|o| o.lone), trace) {
            (Some(lone), Some(t)) if !lone.is_empty() => (Some((t, lone)), None),
            // Calls records in later traces may complete (`witnessed`).
            (_, Some(t)) if !wants.is_empty() && taken.is_empty() => {
                (None, Some(witnessed::Wanting::of(t, wants)))
            }
            (_, t) => {
                let t = later::hold(t, waiting, || taken, &mut asking);
                if let (Some(spent), Some(t)) = (self.spent.as_mut(), t) {
                    spent.traces.push(t);
                }
                (None, None)
            }
        };
        if self.held.is_empty() && lone.is_none() && wanting.is_none() && asking.is_none() {
            due.push(out);
            return;
        }
        self.barrier |= lone.is_some() || wanting.is_some();
        self.held.push_back(Held {
            out,
            lone,
            counted: Vec::new(),
            wanting,
            asking,
        });
        if counted && !self.awaits_answer() && !self.awaits_ask() {
            self.lift_barrier();
        }
        self.release(due);
    }

    /// What a reader made of the traces held (not yet due), to change in
    /// place: a reader whose results borrow from a batch makes them its
    /// own before the batch goes.
    pub fn held_mut(&mut self) -> impl Iterator<Item = &mut T> {
        self.held.iter_mut().map(|h| &mut h.out)
    }

    /// The held lone client traces whose calls are among `calls` (a
    /// trace read after them) are read again with those calls counted
    /// there; each of `calls` is matched once (taken out). A held tool
    /// span under the model's name and call id, with arguments and a
    /// result, counts its call instead, and the entry returned says so to
    /// `calls`' trace. A held trace with calls left keeps waiting for them
    /// (`awaits_ask` lets it go when no open ask asked for them). Returns
    /// the entries for `calls`' trace: those and the answers records of an
    /// answer alone give.
    fn echo_held(
        &mut self,
        calls: &mut Vec<Echo>,
        again: &mut impl FnMut(&Trace, &[OpenAsk]) -> (T, Option<Box<Open>>),
    ) -> Vec<OpenAsk> {
        let mut answered = Vec::new();
        let mut used = Vec::new();
        for k in 0..self.held.len() {
            let Some((t, lone)) = self.held.get_mut(k).and_then(|h| h.lone.take()) else {
                continue;
            };
            let mut carried = pending::ran(&lone, calls, &mut used);
            let before = lone.len();
            let mut left = Vec::new();
            for l in lone {
                if l.pending {
                    left.push(l);
                } else if let Some(k) = calls.iter().position(|c| echo::same_call(&l, c)) {
                    carried.push(echo::carried(&l, &calls.remove(k)));
                } else if let Some(c) = calls.iter_mut().find(|c| twice::between_either(&l, c)) {
                    let whole = !l.args.is_null() && l.answered;
                    if whole && l.id.is_some() && l.id == c.id && l.name == c.name {
                        // A tool span under the model's own name and call
                        // id, with arguments and a result, read first: it
                        // counts the call, as when its trace is read after
                        // the asking one (`id_span`); this trace's copy is
                        // its record.
                        answered.push(twice::carried(c, &l, false));
                    } else {
                        // The client's span ran between the model's asking
                        // and this trace's request, which counts the call
                        // from the conversation: the call stays counted here.
                        carried.push(twice::span_counted(&l, c));
                    }
                    c.asked = None;
                } else if let Some((e, c)) = hollow_record::ran_one_of(&l, calls) {
                    carried.push(e);
                    answered.extend(mcp_record_result::entry(&l, c));
                } else {
                    left.push(l);
                }
            }
            let matched = !carried.is_empty() || left.len() < before;
            let Some(h) = self.held.get_mut(k) else {
                continue;
            };
            if !carried.is_empty() {
                h.counted.extend(carried);
                h.out = again(&t, &h.counted).0;
            }
            if matched {
                // Its other calls wait on while an open ask asked for
                // them (`awaits_ask`): a later trace may count them.
                left.retain(|l| !l.pending);
            }
            h.lone = (!left.is_empty()).then_some((t, left));
        }
        answered
    }

    /// Whether a held lone trace has a record of an answer alone that no
    /// trace has counted yet (`mcp_record_result`): it waits for the next
    /// trace that counts calls, as another trace's answer (a log record)
    /// may complete that turn's trace after the record's.
    fn awaits_answer(&self) -> bool {
        let answer = |(_, lone): &(Trace, Vec<Echo>)| lone.iter().any(|l| l.result.is_some());
        self.held
            .iter()
            .any(|h| h.lone.as_ref().is_some_and(answer))
    }

    /// What is held, in input order (at the end of the input).
    pub fn finish(&mut self) -> Vec<T> {
        self.barrier = false;
        self.held.drain(..).map(|h| h.out).collect()
    }

    /// Whether a trace leaving `open` answers a call kept here (and is to
    /// be read again with those calls).
    pub fn answers(&self, open: Option<&Open>) -> bool {
        open.is_some_and(|open| {
            let bare = open.bare.is_some_and(|b| !self.bare_group(b).is_empty());
            let failed = !open.failed.is_empty() && !self.failed(open).is_empty();
            bare || failed
                || open.answers.iter().any(|(id, run, start)| {
                    self.asks.any_under(key(ASK_ID, id.as_str()), |a| {
                        answered_by(a, id, *run, *start)
                    })
                })
        })
    }
}

#[cfg(test)]
mod tests {
    use serde_json::{json, Value};

    use super::*;
    use crate::assemble::{SpanId, TraceId};
    use crate::extract::requested::Asked;
    use crate::extract::test_support::model_call;
    use crate::extract::{Analysis, Extractor};

    /// Reads `traces` in order as `inspect` and `replay` do.
    fn read(traces: &[Trace]) -> Vec<Analysis> {
        let x = Extractor::default();
        let mut carry = Carry::<()>::default();
        traces
            .iter()
            .map(|t| {
                let mut a = x.analyze(t);
                if carry.answers(a.open.as_deref()) {
                    let carried = carry.take(a.open.as_deref());
                    a = x.analyze_carried(t, &carried);
                }
                carry.keep(a.open.as_deref());
                a
            })
            .collect()
    }

    fn calls(a: &Analysis) -> Vec<(&str, Option<&Value>)> {
        a.calls
            .iter()
            .map(|c| (c.name.as_str(), c.args.value()))
            .collect()
    }

    #[test]
    fn a_result_in_the_next_trace_joins_the_call_by_id() {
        let town = json!({"town": "Lyon"});
        let read = read(&[
            model_call(1, (0, 10), "p1", &[], &[("k1", "find_hotel", town.clone())]),
            model_call(2, (20, 30), "p1", &[("k1", "{\"stars\": 3}")], &[]),
        ]);
        // Listed where it was asked for, counted where its result is.
        assert!(read[0].calls.is_empty());
        assert!(read[0].warnings[0].contains("`find_hotel` (call id k1)"));
        assert_eq!(calls(&read[1]), [("find_hotel", Some(&town))]);
        let call = &read[1].calls[0];
        assert_eq!(
            call.from,
            Some(crate::extract::conversation::FROM_CONVERSATION)
        );
        assert_eq!(
            call.result.as_ref().map(|r| r.to_value()),
            Some(json!({"stars": 3}))
        );
        assert!(
            read[1].notes[0].contains("asked for in trace"),
            "{:?}",
            read[1].notes
        );
        assert!(read[1]
            .open
            .as_ref()
            .is_none_or(|o| o.asks.is_empty() && o.answers.is_empty()));
    }

    #[test]
    fn another_process_or_an_earlier_request_is_no_join() {
        let ask = || model_call(1, (0, 10), "p1", &[], &[("k1", "f", json!({"a": 1}))]);
        // The same call id from another process.
        let other = read(&[ask(), model_call(2, (20, 30), "p2", &[("k1", "x")], &[])]);
        assert!(other[1].calls.is_empty());
        // A request that started before the model asked.
        let before = read(&[ask(), model_call(2, (5, 30), "p1", &[("k1", "x")], &[])]);
        assert!(before[1].calls.is_empty());
        // Each open call is counted once.
        let twice = read(&[
            ask(),
            model_call(2, (20, 30), "p1", &[("k1", "x")], &[]),
            model_call(3, (40, 50), "p1", &[("k1", "x")], &[]),
        ]);
        assert_eq!(twice[1].calls.len(), 1);
        assert!(twice[2].calls.is_empty());
    }

    #[test]
    fn a_request_start_in_whole_milliseconds_joins_an_ask_ending_within_it() {
        const MS: u64 = 1_000_000;
        let ask = |end| model_call(1, (MS, end), "p1", &[], &[("k1", "f", json!({"a": 1}))]);
        let answer = |start| model_call(2, (start, start + 5 * MS), "p1", &[("k1", "x")], &[]);
        // The request's start truncated to its millisecond, the ask's end not.
        let truncated = read(&[ask(7 * MS + 362_925), answer(7 * MS)]);
        assert_eq!(truncated[1].calls.len(), 1);
        // A start with nanoseconds is exact: an ask ending after it is no join,
        // nor is one ending a millisecond or more after a truncated start.
        let exact = read(&[ask(7 * MS + 362_925), answer(7 * MS + 1)]);
        assert!(exact[1].calls.is_empty());
        let later = read(&[ask(8 * MS), answer(7 * MS)]);
        assert!(later[1].calls.is_empty());
    }

    #[test]
    fn results_without_ids_in_the_next_trace_answer_the_last_open_calls_by_order() {
        let brest = json!({"port": "Brest"});
        let cork = json!({"port": "Cork"});
        // The history lost the model's turns and the results their ids
        // (`""` is no id): each request repeats the results before it.
        let read_in = |second: &str| {
            read(&[
                model_call(1, (0, 10), "p1", &[], &[("k1", "tide", brest.clone())]),
                model_call(
                    2,
                    (20, 30),
                    second,
                    &[("", "06:12")],
                    &[("k2", "tide", cork.clone())],
                ),
                model_call(3, (40, 50), second, &[("", "06:12"), ("", "07:40")], &[]),
            ])
        };
        let same = read_in("p1");
        assert_eq!(calls(&same[1]), [("tide", Some(&brest))]);
        assert_eq!(calls(&same[2]), [("tide", Some(&cork))]);
        let results: Vec<Value> = same[1..]
            .iter()
            .flat_map(|a| &a.calls)
            .filter_map(|c| c.result.as_ref().map(|r| r.to_value()))
            .collect();
        assert_eq!(results, [json!("06:12"), json!("07:40")]);
        assert!(same[2].notes.iter().any(|n| n.contains("paired by order")));
        // Another process's results answer nothing of the first process;
        // its own next request answers its own call.
        let other = read_in("p2");
        assert!(other[1].calls.is_empty());
        assert_eq!(calls(&other[2]), [("tide", Some(&cork))]);
        // More calls left open than results: nothing is paired.
        let more = read(&[
            model_call(
                1,
                (0, 10),
                "p1",
                &[],
                &[("k1", "tide", brest.clone()), ("k2", "tide", cork.clone())],
            ),
            model_call(2, (20, 30), "p1", &[("", "06:12")], &[]),
        ]);
        assert!(more.iter().all(|a| a.calls.is_empty()));
    }

    #[test]
    fn only_the_last_open_calls_are_kept() {
        let mut carry = Carry::<()>::default();
        let open = |id: usize| Open {
            asks: vec![OpenAsk {
                asked: Asked {
                    id: Some(format!("k{id}")),
                    name: "f".into(),
                    args: Value::Null,
                },
                form: "test",
                trace_id: TraceId([0; 16]),
                span_id: SpanId([0; 8]),
                end_time_unix_nano: 0,
                run: 7,
            }],
            ..Open::default()
        };
        for id in 0..=MAX_OPEN {
            carry.keep(Some(&open(id)));
        }
        let answer = |id: &str| Open {
            answers: vec![(id.to_string(), 7, 1)],
            ..Open::default()
        };
        assert!(!carry.answers(Some(&answer("k0"))));
        assert!(carry.answers(Some(&answer(&format!("k{MAX_OPEN}")))));
    }

    #[test]
    fn a_carry_handing_back_keeps_the_traces_it_is_done_with() {
        let x = Extractor::default();
        let town = json!({"town": "Lyon"});
        let traces = [
            model_call(1, (0, 10), "p1", &[], &[("k1", "find_hotel", town)]),
            model_call(2, (20, 30), "p1", &[("k1", "{\"stars\": 3}")], &[]),
        ];
        for hand_back in [false, true] {
            let mut carry = if hand_back {
                Carry::<usize>::handing_back()
            } else {
                Carry::default()
            };
            let (mut counted, mut spent) = (Vec::new(), Vec::new());
            for t in &traces {
                let mut a = x.analyze(t);
                let left = Left::of(a.open.take(), || t.clone());
                counted.extend(carry.settle(a.calls.len(), left, |t, carried| {
                    let mut a = x.analyze_carried(t, carried);
                    (a.calls.len(), a.open.take())
                }));
                spent.extend(carry.spent().into_traces().into_iter().map(|t| t.id));
            }
            // The second trace, read again with the first one's call, and
            // the first, held until then (`later`), are handed back once
            // the carry is done with them.
            assert_eq!(counted, [0, 1]);
            let want = if hand_back {
                vec![TraceId([2; 16]), TraceId([1; 16])]
            } else {
                Vec::new()
            };
            assert_eq!(spent, want);
        }
    }
}
