//! The entries a reader in input order keeps for the traces after theirs
//! (`carry::Carry`'s open calls and counted calls), in the order kept, with
//! the entries under each key: a trace's calls are compared only with the
//! kept entries that share a key with them (a tool name, a call id), not
//! with every one kept. Keys are hashes: equal texts give equal keys, and
//! the caller's own tests, run on each entry under a key, tell apart texts
//! whose hashes collide.

use std::collections::VecDeque;
use std::hash::{BuildHasher, Hash};

use foldhash::fast::FixedState;

use crate::assemble::IdMap;

/// A text hashed for `kind` (texts of two kinds may hash alike: the
/// caller's tests tell them apart).
pub(crate) fn key(kind: u64, text: impl Hash) -> u64 {
    FixedState::with_seed(kind).hash_one(text)
}

/// The keys of one entry (at most [`Keys::MAX`]).
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Keys {
    keys: [u64; Keys::MAX],
    len: u8,
}

impl Keys {
    const MAX: usize = 3;

    /// Adds `key` (ignored past [`Keys::MAX`]: the callers give fewer).
    pub(crate) fn add(&mut self, key: u64) {
        if let Some(k) = self.keys.get_mut(usize::from(self.len)) {
            *k = key;
            self.len += 1;
        }
    }

    fn iter(&self) -> impl Iterator<Item = u64> + '_ {
        self.keys[..usize::from(self.len)].iter().copied()
    }
}

/// An entry under a key: its sequence number and its time (see
/// [`Kept::push`]).
type Seq = (u64, u64);

/// The entries under one key, by sequence number, oldest first; most keys
/// (a call id) have one. Many are a deque: entries mostly leave oldest
/// first, and a key shared by every call of a long run (a tool name) would
/// make each removal from the front of a vector move all the others.
#[derive(Debug)]
enum Seqs {
    One(Seq),
    Many(VecDeque<Seq>),
}

impl Seqs {
    fn iter(&self) -> impl DoubleEndedIterator<Item = &Seq> + '_ {
        let (front, back) = match self {
            Seqs::One(s) => (std::slice::from_ref(s), &[][..]),
            Seqs::Many(v) => v.as_slices(),
        };
        front.iter().chain(back)
    }

    fn push(&mut self, seq: Seq) {
        match self {
            Seqs::One(s) => *self = Seqs::Many(VecDeque::from([*s, seq])),
            Seqs::Many(v) => v.push_back(seq),
        }
    }

    /// Removes entry `seq`; true when none is left.
    fn remove(&mut self, seq: u64) -> bool {
        match self {
            Seqs::One(s) => s.0 == seq,
            Seqs::Many(v) => {
                // Sequence numbers grow as entries are pushed.
                if let Ok(i) = v.binary_search_by_key(&seq, |s| s.0) {
                    v.remove(i);
                }
                v.is_empty()
            }
        }
    }
}

#[derive(Debug)]
struct Item<T> {
    seq: u64,
    keys: Keys,
    value: T,
}

/// Entries in the order kept, each with its keys; positions (0: the
/// oldest) are those of [`Kept::iter`].
#[derive(Debug)]
pub(crate) struct Kept<T> {
    items: VecDeque<Item<T>>,
    /// The next entry's sequence number.
    next: u64,
    index: IdMap<u64, Seqs>,
}

impl<T> Default for Kept<T> {
    fn default() -> Self {
        Kept {
            items: VecDeque::new(),
            next: 0,
            index: IdMap::default(),
        }
    }
}

impl<T> Kept<T> {
    pub(crate) fn len(&self) -> usize {
        self.items.len()
    }

    /// The entries, oldest first.
    pub(crate) fn iter(&self) -> impl DoubleEndedIterator<Item = &T> + '_ {
        self.items.iter().map(|i| &i.value)
    }

    pub(crate) fn get(&self, at: usize) -> Option<&T> {
        self.items.get(at).map(|i| &i.value)
    }

    pub(crate) fn get_mut(&mut self, at: usize) -> Option<&mut T> {
        self.items.get_mut(at).map(|i| &mut i.value)
    }

    /// Keeps `value` (the newest) under `keys`, at time `at` (the index
    /// keeps it, so that [`Kept::first_near`] passes over entries far in
    /// time without reading them).
    pub(crate) fn push(&mut self, value: T, keys: Keys, at: u64) {
        let seq = self.next;
        self.next += 1;
        for k in keys.iter() {
            match self.index.entry(k) {
                std::collections::hash_map::Entry::Occupied(mut e) => e.get_mut().push((seq, at)),
                std::collections::hash_map::Entry::Vacant(e) => {
                    e.insert(Seqs::One((seq, at)));
                }
            }
        }
        self.items.push_back(Item { seq, keys, value });
    }

    /// Takes out the entry at `at`.
    pub(crate) fn remove(&mut self, at: usize) -> Option<T> {
        let item = self.items.remove(at)?;
        self.unindex(&item);
        Some(item.value)
    }

    /// Takes out the oldest entry.
    pub(crate) fn pop_front(&mut self) -> Option<T> {
        let item = self.items.pop_front()?;
        self.unindex(&item);
        Some(item.value)
    }

    fn unindex(&mut self, item: &Item<T>) {
        for k in item.keys.iter() {
            if let std::collections::hash_map::Entry::Occupied(mut e) = self.index.entry(k) {
                if e.get_mut().remove(item.seq) {
                    e.remove();
                }
            }
        }
    }

    /// The positions of the entries under `key`, oldest first.
    pub(crate) fn under(&self, key: u64) -> impl DoubleEndedIterator<Item = usize> + '_ {
        self.seqs(key).filter_map(|s| self.position(s.0))
    }

    fn seqs(&self, key: u64) -> impl DoubleEndedIterator<Item = &Seq> + '_ {
        self.index.get(&key).into_iter().flat_map(Seqs::iter)
    }

    /// The position of entry `seq`.
    fn position(&self, seq: u64) -> Option<usize> {
        self.items.binary_search_by_key(&seq, |i| i.seq).ok()
    }

    /// [`Kept::first_under`], of the entries whose time `near` accepts.
    pub(crate) fn first_near(
        &self,
        key: u64,
        near: impl Fn(u64) -> bool,
        mut is: impl FnMut(&T) -> bool,
    ) -> Option<usize> {
        self.seqs(key)
            .filter(|s| near(s.1))
            .filter_map(|s| self.position(s.0))
            .find(|&at| self.items.get(at).is_some_and(|i| is(&i.value)))
    }

    /// The position of the oldest entry under `key` that `is` says is the
    /// one sought.
    pub(crate) fn first_under(&self, key: u64, mut is: impl FnMut(&T) -> bool) -> Option<usize> {
        self.under(key)
            .find(|&at| self.items.get(at).is_some_and(|i| is(&i.value)))
    }

    /// The position of the newest entry under `key` that `is` says is the
    /// one sought.
    pub(crate) fn last_under(&self, key: u64, mut is: impl FnMut(&T) -> bool) -> Option<usize> {
        self.under(key)
            .rev()
            .find(|&at| self.items.get(at).is_some_and(|i| is(&i.value)))
    }

    /// Whether an entry under `key` is one `is` says is sought.
    pub(crate) fn any_under(&self, key: u64, is: impl FnMut(&T) -> bool) -> bool {
        self.first_under(key, is).is_some()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keys(ks: &[u64]) -> Keys {
        let mut k = Keys::default();
        ks.iter().for_each(|&x| k.add(x));
        k
    }

    #[test]
    fn entries_under_a_key_come_in_the_order_kept_after_removals() {
        let mut kept = Kept::default();
        for (v, ks) in [(10, &[1, 2][..]), (11, &[2]), (12, &[1]), (13, &[2, 3])] {
            kept.push(v, keys(ks), v as u64);
        }
        let under = |kept: &Kept<i32>, k| -> Vec<i32> {
            kept.under(k)
                .filter_map(|at| kept.get(at).copied())
                .collect()
        };
        assert_eq!(under(&kept, 2), [10, 11, 13]);
        assert_eq!(kept.remove(1), Some(11));
        assert_eq!(under(&kept, 2), [10, 13]);
        assert_eq!(kept.pop_front(), Some(10));
        assert_eq!(under(&kept, 1), [12]);
        assert_eq!(under(&kept, 2), [13]);
        assert!(under(&kept, 9).is_empty());
        assert_eq!(kept.first_under(2, |&v| v > 0), Some(1));
        assert_eq!(kept.first_near(2, |t| t != 12, |_| true), Some(1));
        assert_eq!(kept.first_near(1, |t| t != 12, |_| true), None);
        assert_eq!(kept.last_under(1, |&v| v == 12), Some(0));
        assert!(!kept.any_under(3, |&v| v == 12));
        assert_eq!(kept.iter().copied().collect::<Vec<_>>(), [12, 13]);
        // A key whose last entry went is gone from the index.
        kept.pop_front();
        kept.pop_front();
        assert!(kept.index.is_empty());
        assert_eq!(kept.len(), 0);
    }
}
