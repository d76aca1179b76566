//! The rules' key table: the attribute keys rule conditions read, each
//! given a slot, so a span's values of them are found in one pass.

use super::{canonical, rules};
use crate::assemble::Val;
use crate::ingest::Span;

/// Attribute keys used by rule conditions, bucketed by length so that
/// finding the interesting attributes of a span costs about one length check
/// per attribute; within a bucket, keys are told apart by their last bytes
/// (namespaced keys share their first ones) before any string comparison.
#[derive(Debug, Clone, Default)]
pub(super) struct KeyTable {
    pub(super) keys: Vec<String>,
    by_len: Vec<Vec<(u64, usize)>>, // len -> [(tail of the key, slot)]
}

/// The last (up to) 8 bytes of `key`, as one word.
fn tail(key: &[u8]) -> u64 {
    canonical::word(&key[key.len().saturating_sub(8)..])
}

impl rules::Slots for KeyTable {
    fn slot(&mut self, key: &str) -> usize {
        if let Some(i) = self.keys.iter().position(|k| k == key) {
            return i;
        }
        let slot = self.keys.len();
        self.keys.push(key.to_string());
        if self.by_len.len() <= key.len() {
            self.by_len.resize(key.len() + 1, Vec::new());
        }
        self.by_len[key.len()].push((tail(key.as_bytes()), slot));
        slot
    }
}

impl KeyTable {
    /// Fills `slots` with the span's values of the table's keys; returns the
    /// bit set of the first 64 slots with a value (an attribute without
    /// one holds no condition: `holds`). An empty value (an `AnyValue`
    /// with no member set, as OpenInference's Vercel processor writes a
    /// kind it could not tell) is no value: such a key is absent to every
    /// condition, as it is to every source (`source::any_text`).
    pub(super) fn fill<'a>(&self, span: &'a Span, slots: &mut [Option<Val<'a>>]) -> u64 {
        slots.iter_mut().for_each(|s| *s = None);
        let mut present = 0u64;
        for (i, key) in span.attr_keys().enumerate() {
            let Some(bucket) = self.by_len.get(key.len()).filter(|b| !b.is_empty()) else {
                continue;
            };
            let t = tail(key);
            for &(key_tail, slot) in bucket {
                if key_tail == t
                    && slots[slot].is_none()
                    && crate::short_bytes::eq(self.keys[slot].as_bytes(), key)
                {
                    slots[slot] = span.attr_value(i).filter(|v| !matches!(v, Val::Empty));
                    if slot < 64 && slots[slot].is_some() {
                        present |= 1 << slot;
                    }
                }
            }
        }
        present
    }
}
