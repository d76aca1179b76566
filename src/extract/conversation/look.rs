//! The witness's one pass over a span's attribute keys ([`Look`]).

use super::{bodies, flat_events, records, FLAT_IN, FLAT_OUT, INPUT_KEYS, OUTPUT_KEYS};
use crate::assemble::SpanRecord;
use crate::extract::content_events;

/// What one pass over a span's attribute keys tells the witness: whether
/// the span says it is a model call ([`bodies::is_model_call`]), and
/// whether a key of a named form of its output (flattened messages'
/// prefixes, [`OUTPUT_KEYS`]) or, when asked, of its request
/// ([`Look::of_input`]) is there. Every span is asked what the readers
/// below read: most have none of it.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Look {
    pub(super) model_call: bool,
    pub(super) output: bool,
    pub(super) input: bool,
    /// Which of [`FLAT_OUT`]'s prefixes and of [`OUTPUT_KEYS`] start or
    /// are a key of the span (bit `i`: the `i`th), so that the readers
    /// look only for forms that are there.
    pub(super) flat_out: u8,
    pub(super) named_out: u8,
    /// Whether a key is one of a call id's ([`records::is_call_id_key`]).
    pub(super) call_id_key: bool,
    /// Whether an event is an output message flattened one an event
    /// ([`flat_events`]).
    pub(super) flat_out_events: bool,
}

impl Look {
    pub(super) fn of(s: &SpanRecord) -> Look {
        let mut look = Look::default();
        for (i, k) in s.span.attr_keys().enumerate() {
            look.model_call = look.model_call || bodies::model_call_at(s, i, k);
            // The first byte before the prefix: most keys start with none.
            for (j, f) in FLAT_OUT.iter().enumerate() {
                let p = f.prefix.as_bytes();
                look.flat_out |= u8::from(k.first() == p.first() && k.starts_with(p)) << j;
            }
            for (j, m) in OUTPUT_KEYS.iter().enumerate() {
                look.named_out |= u8::from(k == m.0.as_bytes()) << j;
            }
            look.call_id_key = look.call_id_key || records::is_call_id_key(k);
        }
        look.flat_out_events = flat_events::has(s, &FLAT_OUT);
        look.output = look.flat_out != 0 || look.named_out != 0 || look.flat_out_events;
        look
    }

    /// [`Look::of`], with the keys of a request's named forms too.
    pub(super) fn of_input(s: &SpanRecord) -> Look {
        let mut look = Look::of(s);
        look.input = s.span.attr_keys().any(|k| {
            FLAT_IN.iter().any(|f| k.starts_with(f.prefix.as_bytes()))
                || INPUT_KEYS.iter().any(|m| k == m.0.as_bytes())
        });
        look
    }

    /// Whether the span may record a model's output (else [`super::asked_looked`]
    /// finds nothing).
    pub(super) fn may_output(self, s: &SpanRecord) -> bool {
        self.model_call
            || self.output
            || crate::extract::genai_events::has_output(s)
            || content_events::has_output(s)
    }

    /// Whether the span may record a request (else [`super::request_of`] and
    /// [`super::has_any_input`] find nothing).
    pub(super) fn may_input(self, s: &SpanRecord) -> bool {
        self.model_call
            || self.input
            || crate::extract::genai_events::has_request(s)
            || content_events::has_request(s)
            || crate::extract::chat_events::has_request(s)
            || flat_events::has(s, &FLAT_IN)
    }
}
