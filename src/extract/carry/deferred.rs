//! A call deferred to the caller and answered in a later run
//! (docs/conventions.md, "One call, several spans": a call deferred to
//! the caller).
//!
//! A framework may end a run at a tool call whose result it leaves to its
//! caller (pydantic-ai's deferred tools: the tool raises `CallDeferred`,
//! the run's output lists the call; an approval the caller gives), and the
//! caller starts another run, a trace of its own in the same process, with
//! the result. The first run's tool span holds the call id and the
//! arguments and no result; the next run has no tool span, its request
//! carries the call and its result under that id, and the conversation
//! witness counts the call there. One call, recorded twice.
//!
//! OpenAI Agents' approvals do the same without call ids: the interrupted
//! run's tool spans hold the arguments and no result, the resumed run (a
//! trace of its own) records each call again, with its result.
//!
//! A tool span's call with arguments that its trace leaves without a
//! result and without an error is *deferred*: nothing in its run answered
//! it. Reading in input order, the carry holds its trace as it
//! holds an asking trace (`later`, at most `MAX_HELD` traces; `serve`
//! lets it go at the end of each batch) until a later trace of the same
//! process counts a call that answers it: the same tool, a result, started
//! after the span ended, and the same call id (arguments none or the same)
//! or, neither having a call id, the same arguments. Each later call
//! answers one deferred call at most. The
//! call is then counted there, where its result is (as a call asked for in
//! one trace and answered in the next is), and the span's call, read
//! again, is not counted ([`absorb`], with a note).

use crate::extract::conversation::is_made;
use crate::extract::merge::same_args;
use crate::extract::open::{resource_key, Echo, OpenAsk, DEFERRED_COUNTED_FORM, DEFERRED_FORM};
use crate::extract::requested::Asked;
use crate::extract::{Analysis, CallStatus};

/// The deferred calls among `calls`, the calls a trace (read as `a`)
/// leaves to the traces after it (see the module's doc).
pub(crate) fn of(a: &Analysis, calls: &[Echo]) -> Vec<OpenAsk> {
    let open = |e: &Echo| {
        !e.from_conversation
            && !e.answered
            && !e.args.is_null()
            && e.id.as_deref().is_none_or(|id| !is_made(id))
            && e.resource.is_some()
    };
    // Most calls have a result: no list is made for them.
    if !calls.iter().any(open) {
        return Vec::new();
    }
    let failed = |e: &Echo| {
        a.calls
            .iter()
            .any(|c| c.span_id == e.span_id && c.name == e.name && c.status == CallStatus::Error)
    };
    calls
        .iter()
        .filter(|e| open(e) && !failed(e))
        .filter_map(|e| {
            Some(OpenAsk {
                asked: Asked {
                    id: e.id.clone(),
                    name: e.name.clone(),
                    args: e.args.clone(),
                },
                form: DEFERRED_FORM,
                trace_id: e.trace_id,
                span_id: e.span_id,
                end_time_unix_nano: e.end,
                run: resource_key(e.resource.as_deref()?),
            })
        })
        .collect()
}

/// Whether `c`, a call a later trace counted, answers `w`, a deferred
/// call (see the module's doc).
pub(crate) fn answers(w: &OpenAsk, c: &Echo) -> bool {
    // Under the call id when the span has one; else by the arguments.
    let same = match &w.asked.id {
        Some(id) => {
            c.id.as_deref() == Some(id.as_str())
                && (c.args.is_null() || same_args(&c.args, &w.asked.args))
        }
        // Without ids on either side: a later call that has one is an ask
        // the model made, which the carry's other joins place (`twice`).
        None => c.id.is_none() && !c.args.is_null() && same_args(&c.args, &w.asked.args),
    };
    c.answered
        && c.trace_id != w.trace_id
        && c.name == w.asked.name
        && same
        && w.end_time_unix_nano <= c.start
        && c.resource
            .as_deref()
            .is_some_and(|r| resource_key(r) == w.run)
}

/// Takes out of `a` the deferred calls `carried` says a later trace
/// counts, noting each.
pub(crate) fn absorb(carried: &[OpenAsk], a: &mut Analysis) {
    for e in carried.iter().filter(|e| e.form == DEFERRED_COUNTED_FORM) {
        let Some(k) = a.calls.iter().position(|c| {
            c.span_id == e.span_id
                && c.name == e.asked.name
                && c.from.is_none()
                && c.result.is_none()
        }) else {
            continue;
        };
        let c = a.calls.remove(k);
        a.notes.push(format!(
            "tool call `{}` (span {}{}) has no result: its run ended there, and trace {}, later (the same process), answers it ({}) and counts it: not counted again",
            c.name,
            c.span_id,
            e.asked.id.as_deref().map(|i| format!(", call id {i}")).unwrap_or_default(),
            e.trace_id,
            if e.asked.id.is_some() { "same tool and call id" } else { "same tool and arguments" },
        ));
    }
}
