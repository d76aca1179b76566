//! Calls joined across traces (`extract::carry`), as `replay` joins them:
//! serve's completed traces go through one carry in the order they
//! complete. Each batch is extracted and evaluated alone on any scoring
//! thread; then, in turn, the carry reads again a trace that answers a
//! call an earlier trace left open, and holds the traces behind a lone MCP
//! client trace until the trace that counts its call completes, `hold`
//! passes, or the server stops.

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use crate::assemble::{SpanId, Trace, TraceId};
use crate::evaluate::TraceResult;
use crate::extract::carry::{Carry, Left, Open, OpenAsk};

/// What serve makes of a trace: its result and its revision.
pub(crate) type Scored = (TraceResult, u32);

/// A trace scored alone, and what it leaves open for the traces after it.
pub(crate) type First = (Scored, Option<Left>);

/// The one carry of a server and the order batches go through it.
#[derive(Debug)]
pub(crate) struct Joined {
    state: Mutex<State>,
    /// Signalled when a batch has gone through the carry.
    turned: Condvar,
    /// Turns handed out so far (the next one's number).
    issued: AtomicU64,
    /// How long traces held behind a lone MCP client trace wait at most.
    hold: Duration,
}

#[derive(Debug)]
struct State {
    /// The turn whose batch goes through the carry next.
    next: u64,
    /// Turns whose batch never came (its scoring failed): passed over.
    skipped: BTreeSet<u64>,
    carry: Carry<Scored>,
    /// Since when the carry holds traces.
    held_since: Option<Instant>,
}

/// A batch's place in the order of completion; dropped unused (the batch
/// was lost), its turn is passed over.
#[derive(Debug)]
pub(crate) struct Turn {
    n: u64,
    joined: Arc<Joined>,
    used: bool,
}

impl Drop for Turn {
    fn drop(&mut self) {
        if !self.used {
            let mut state = self.joined.lock();
            state.skipped.insert(self.n);
            state.advance();
            drop(state);
            self.joined.turned.notify_all();
        }
    }
}

impl State {
    /// Moves past the turns already passed over.
    fn advance(&mut self) {
        while self.skipped.remove(&self.next) {
            self.next += 1;
        }
    }

    /// Notes when the carry starts (or stops) holding traces.
    fn note_held(&mut self, now: Instant) {
        let holds = self.carry.held_mut().next().is_some();
        self.held_since = match (holds, self.held_since) {
            (false, _) => None,
            (true, since) => Some(since.unwrap_or(now)),
        };
    }
}

impl Joined {
    pub fn new(hold: Duration) -> Arc<Joined> {
        Arc::new(Joined {
            state: Mutex::new(State {
                next: 0,
                skipped: BTreeSet::new(),
                carry: Carry::handing_back(),
                held_since: None,
            }),
            turned: Condvar::new(),
            issued: AtomicU64::new(0),
            hold,
        })
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The next batch's turn: batches are handed their turns in the order
    /// they complete.
    pub fn turn(self: &Arc<Self>) -> Turn {
        Turn {
            n: self.issued.fetch_add(1, Ordering::SeqCst),
            joined: Arc::clone(self),
            used: false,
        }
    }

    /// Waits for `turn`, then puts a batch's traces, each scored alone
    /// (`firsts`, in completion order), through the carry; `again` scores
    /// a trace once more with the calls earlier traces left open. Returns
    /// what is due, in order (traces held before come out here when this
    /// batch lets them go).
    pub fn settle(
        &self,
        mut turn: Turn,
        firsts: Vec<First>,
        again: impl Fn(&Trace, &[OpenAsk], u32) -> (Scored, Option<Box<Open>>),
    ) -> Vec<Scored> {
        let mut state = self.lock();
        while state.next != turn.n {
            state = self
                .turned
                .wait(state)
                .unwrap_or_else(PoisonError::into_inner);
        }
        let mut due = Vec::with_capacity(firsts.len());
        for (first, left) in firsts {
            // A trace read again keeps its revision: the trace itself, or
            // one held (a lone client trace the trace read counts).
            let mut revisions: Vec<(Key, u32)> = vec![(key_of(&first.0), first.1)];
            revisions.extend(state.carry.held_mut().map(|(r, n)| (key_of(r), *n)));
            let revision = |t: &Trace| {
                let root = t.roots().next().map(|i| t.spans[i].span_id);
                let k = (t.id, t.spans.len(), root);
                revisions
                    .iter()
                    .find(|(held, _)| *held == k)
                    .map_or(1, |(_, n)| *n)
            };
            state.carry.settle_into(
                first,
                left,
                |t, carried| again(t, carried, revision(t)),
                &mut due,
            );
        }
        // A trace whose asks a later trace may count waits for no batch
        // after this one (`carry::later`).
        state.carry.let_asks_go(&mut due);
        state.note_held(Instant::now());
        let spent = state.carry.spent();
        state.next += 1;
        state.advance();
        turn.used = true;
        drop(state);
        self.turned.notify_all();
        // Dropped here, outside the lock: a trace's drop frees each span.
        drop(spent);
        due
    }

    /// When the traces the carry holds are to be let go, if it holds any.
    pub fn next_release(&self) -> Option<Instant> {
        self.lock().held_since.map(|t| t + self.hold)
    }

    /// The traces held for `hold` by `now` (every one held when `all`),
    /// as they are: the trace counting the lone client's call did not come
    /// in time.
    pub fn release(&self, now: Instant, all: bool) -> Vec<Scored> {
        let mut state = self.lock();
        let due = state.held_since.is_some_and(|t| t + self.hold <= now);
        if !(due || all) {
            return Vec::new();
        }
        let out = state.carry.finish();
        state.held_since = None;
        out
    }

    /// Waits until every batch handed a turn has gone through the carry
    /// (or was lost), then lets every held trace go (shutdown).
    pub fn finish(&self) -> Vec<Scored> {
        let mut state = self.lock();
        while state.next < self.issued.load(Ordering::SeqCst) {
            state = self
                .turned
                .wait(state)
                .unwrap_or_else(PoisonError::into_inner);
        }
        drop(state);
        self.release(Instant::now(), true)
    }
}

/// A trace told apart from a later revision of it (other spans): its id,
/// span count and root span.
type Key = (TraceId, usize, Option<SpanId>);

fn key_of(r: &TraceResult) -> Key {
    (r.trace_id, r.spans, r.root)
}

#[cfg(test)]
mod tests {
    use std::sync::mpsc;

    use super::*;

    /// Runs `f` on a thread; `None` when it has not returned within 10 s.
    fn within<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> Option<T> {
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            let _ = tx.send(f());
        });
        rx.recv_timeout(Duration::from_secs(10)).ok()
    }

    #[test]
    fn a_lost_batch_s_turn_is_passed_over() {
        let joined = Joined::new(Duration::from_secs(60));
        let (lost, next, last) = (joined.turn(), joined.turn(), joined.turn());
        // The batch after a lost one goes through; so does shutdown, once
        // every turn taken has been used or dropped.
        drop(lost);
        let j = Arc::clone(&joined);
        let settled = within(move || j.settle(next, Vec::new(), |_, _, _| unreachable!()));
        assert_eq!(settled.map(|d| d.len()), Some(0));
        let j = Arc::clone(&joined);
        let finish = std::thread::spawn(move || j.finish().len());
        drop(last);
        assert_eq!(within(move || finish.join().ok()).flatten(), Some(0));
    }

    #[test]
    fn nothing_held_is_nothing_to_release() {
        let joined = Joined::new(Duration::ZERO);
        assert_eq!(joined.next_release(), None);
        assert!(joined.release(Instant::now(), false).is_empty());
    }
}
