//! Which spans the conversation witness reads as model calls
//! (`inspect --explain` says so of a span no rule classifies).

use super::bodies;
use super::{content_events, has_prefix, message_text, FLAT_OUT, INPUT_KEYS, OUTPUT_KEYS};
use crate::assemble::SpanRecord;
use crate::extract::sides::Side;

/// Whether span `s` is a model call whose messages the witness reads: it
/// records the model's output, or a request's messages as JSON, in a known
/// form (flattened input messages alone do not say so: OpenInference
/// writes them on chain spans too).
pub fn reads_messages(s: &SpanRecord) -> bool {
    FLAT_OUT.iter().any(|f| has_prefix(s, f.prefix))
        || OUTPUT_KEYS
            .iter()
            .chain(&INPUT_KEYS)
            .any(|k| message_text(s, k).is_some())
        || (bodies::is_model_call(s)
            && [Side::Input, Side::Output]
                .iter()
                .any(|&side| bodies::bodies_of_model_call(s, side).next().is_some()))
}

/// Whether span `s` records a model's output in a form the witness reads
/// (`twice`: a model call whose request span lacks it is recorded in two
/// halves when streamed).
pub(crate) fn records_output(s: &SpanRecord) -> bool {
    FLAT_OUT.iter().any(|f| has_prefix(s, f.prefix))
        || OUTPUT_KEYS.iter().any(|k| message_text(s, k).is_some())
        || crate::extract::genai_events::has_output(s)
        || content_events::has_output(s)
        || (bodies::is_model_call(s)
            && bodies::bodies_of_model_call(s, Side::Output)
                .next()
                .is_some())
}
