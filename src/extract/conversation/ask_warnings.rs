//! The warnings of asks nothing in their trace answers: the witness
//! writes them, and `carry::later` turns them into notes when a later
//! trace counts the call (docs/conventions.md, "Each model call its own
//! trace"). One wording for both sides, declared here.

use crate::assemble::SpanId;
use crate::extract::requested::Asked;

/// The warning of a call the model asked for (`id_text`: its call id as
/// the warning shows it) in `span`, that no later request of its trace
/// answers; `next_trace`: no later model request is in the trace at all.
pub(crate) fn unanswered_warning(
    name: &str,
    id_text: &str,
    span: SpanId,
    next_trace: bool,
) -> String {
    format!(
        "the model asked for `{name}`{id_text} in span {span} and no later request in this trace carries its result: listed, not counted{}",
        if next_trace {
            " (a trace that holds the next model request counts it)"
        } else {
            ""
        }
    )
}

/// The warning of call `a` the model asked for in `span` that no tool
/// span of the trace shows.
pub(crate) fn unjoined_warning(a: &Asked, span: SpanId) -> String {
    format!(
        "the model asked for `{}`{} in span {span} and no tool span shows that call",
        a.name,
        id_text(a)
    )
}

/// The warning of a call the model asked for in its text in `span` that
/// no tool span of the trace shows.
pub(crate) fn unshown_warning(name: &str, span: SpanId) -> String {
    format!(
        "the model asked for `{name}` in its text in span {span} and no tool span shows that call"
    )
}

/// A call id as the warnings show it (none for an id made here).
pub(crate) fn id_text(a: &Asked) -> String {
    a.id.as_deref()
        .filter(|id| !super::idless::is_made(id))
        .map_or_else(String::new, |id| format!(" (call id {id})"))
}
