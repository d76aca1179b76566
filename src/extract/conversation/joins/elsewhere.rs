//! Asks no tool span of their trace shows, as records of the calls
//! (docs/conventions.md, "Call records in a runtime's messages").
//!
//! Two instrumentations may write one run as two traces: a framework's
//! own tool spans, with the call ids and no content (Google ADK with its
//! content capture off), and another writer's model spans and some tool
//! spans (LangSmith's, which has none for an agent run as a tool). The
//! model's ask in the second trace, with its arguments and the result the
//! next request carries under its id, is then the record of the first
//! trace's tool span's call: the carry completes that call with it
//! (`carry::witnessed`), as it does with a runtime's message records, and
//! the warning that no tool span shows the ask becomes a note. Read the
//! other way round, the tool span's trace after the ask's, the ask waits
//! for it as an ask nothing answers does (`carry::later`).

use std::sync::Arc;

use super::*;
use crate::extract::open::Witnessed;

/// The records of `asks` (asks of `trace` with a call id that no tool
/// span of it shows): the model's arguments and the result a request
/// carries under the id, where one does.
pub(super) fn records(trace: &Trace, asks: &[&AskedAt]) -> Vec<Witnessed> {
    let asks: Vec<&AskedAt> = asks
        .iter()
        .copied()
        .filter(|at| at.asked.id.as_deref().is_some_and(|id| !is_made(id)))
        .collect();
    if asks.is_empty() {
        return Vec::new();
    }
    let answers = order::answers_to(trace, &asks);
    let window = crate::extract::open::window_of(trace);
    asks.iter()
        .zip(answers)
        .filter_map(|(at, result)| {
            let span = &trace.spans[at.span];
            Some(Witnessed {
                id: at.asked.id.clone()?,
                name: Some(at.asked.name.clone()),
                args: Some(at.asked.args.clone()).filter(|v| !v.is_null()),
                result,
                error: false,
                trace_id: trace.id,
                resource: Some(Arc::clone(&span.resource)),
                of_trace: None,
                asked_in: Some((span.span_id, window)),
            })
        })
        .collect()
}

/// Leaves `asks` (with a real call id) to the traces after `trace`: a
/// later trace's tool span may show them (`carry::later`).
pub(super) fn wait(trace: &Trace, asks: &[&AskedAt], out: &mut Analysis) {
    for at in asks {
        if at.asked.id.as_deref().is_none_or(is_made) {
            continue;
        }
        let s = &trace.spans[at.span];
        let open = out.open.get_or_insert_with(Default::default);
        open.unshown.push(OpenAsk {
            asked: at.asked.clone(),
            form: UNJOINED_FORM,
            trace_id: trace.id,
            span_id: s.span_id,
            // The model span's start: a writer may end it after the call
            // ran (LangSmith's run of a model call ends when its caller
            // is done with the reply).
            end_time_unix_nano: s.span.start_time_unix_nano,
            run: run_key(s),
        });
    }
}

/// The `form` of an ask that no tool span of its trace shows, waiting for
/// a later trace's.
const UNJOINED_FORM: &str = "ask-without-span";
