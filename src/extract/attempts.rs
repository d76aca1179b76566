//! A tool span named after the framework's tool class, in a trace of its
//! own, that ran a call an earlier trace's model output asked for
//! (docs/conventions.md, "Spans named after a wrapper's method").
//!
//! OpenLLMetry's LangChain.js writes each LangGraph step as a trace of its
//! own and names the tool run after its `ToolMessage`; a run that failed
//! returned none, so its span (`execute_tool DynamicStructuredTool`, no call
//! id) names no tool. A retry middleware then runs the tool again with the
//! same arguments, under the model's call id. Both runs are calls of the
//! model's tool: the failed one is an *attempt* of that call.
//!
//! Reading the traces in input order ([`super::carry::Carry`]), a tool
//! span's call named a placeholder (vocabulary `placeholder_tool_names`),
//! without a call id, takes the name of the one call kept open by an
//! earlier trace's model output with exactly its arguments (a model call
//! recorded by several spans under one call id is one call), asked for
//! in the same process before the span started. It stays a call of its
//! own trace, and the traces after do not take it for the run whose
//! result the model saw ([`Echo::attempt`]): when another span of the
//! same call fits as well, the conversation's record joins that one
//! (`carry::lone_span`).

use serde_json::Value;

use super::merge::same_args;
use super::open::{resource_key, Echo, OpenAsk, ASKED_NAME_FORM};
use super::placeholder_names::is_placeholder;
use super::requested::Asked;
use super::Analysis;
use crate::assemble::{SpanId, Trace};

/// Whether `span` may be an attempt of a kept ask: a tool span's call
/// named a placeholder, without a call id, with arguments. The cheap
/// tests first: most calls have an id or a tool's name.
pub(crate) fn may_be_attempt(span: &Echo) -> bool {
    !span.from_conversation
        && span.id.is_none()
        && !span.args.is_null()
        && is_placeholder(&span.name)
}

/// Whether `span` ([`may_be_attempt`]) ran `ask`: the ask names a tool,
/// ended before the span started, in the span's process, with exactly the
/// span's arguments.
fn fits(span: &Echo, ask: &OpenAsk) -> bool {
    ask.end_time_unix_nano <= span.start
        && !is_placeholder(&ask.asked.name)
        && span
            .resource
            .as_deref()
            .is_some_and(|r| resource_key(r) == ask.run)
        && same_args(&span.args, &ask.asked.args)
}

/// The one ask of `asks` that `span` ran (see the module's doc): asks
/// under one call id and tool are one model call; none when no ask fits or
/// two model calls do (which of them ran is unknown).
pub(crate) fn ask_of<'a>(
    span: &Echo,
    asks: impl Iterator<Item = &'a OpenAsk>,
) -> Option<&'a OpenAsk> {
    let mut found: Option<&OpenAsk> = None;
    for a in asks.filter(|a| fits(span, a)) {
        match found {
            None => found = Some(a),
            Some(f)
                if f.asked.id.is_some()
                    && f.asked.id == a.asked.id
                    && f.asked.name == a.asked.name => {}
            Some(_) => return None,
        }
    }
    found
}

/// The carried entry saying that `span` ran `ask` and takes its name (the
/// span's own name under `asked.name`, the model's as `asked.args`, as
/// `twice::span_of_ask`'s). It asks for nothing.
pub(crate) fn carried(span: &Echo, ask: &OpenAsk) -> OpenAsk {
    OpenAsk {
        asked: Asked {
            id: ask.asked.id.clone(),
            name: span.name.clone(),
            args: Value::String(ask.asked.name.clone()),
        },
        form: ASKED_NAME_FORM,
        trace_id: ask.trace_id,
        span_id: span.span_id,
        end_time_unix_nano: ask.end_time_unix_nano,
        run: 0,
    }
}

/// Names the calls `carried` says ran an earlier trace's ask after the
/// model's tool, noting each; returns their spans.
pub(crate) fn name(trace: &Trace, carried: &[OpenAsk], a: &mut Analysis) -> Vec<SpanId> {
    let mut named = Vec::new();
    for e in carried.iter().filter(|e| e.form == ASKED_NAME_FORM) {
        let Some(tool) = e.asked.args.as_str() else {
            continue;
        };
        let Some(c) = e.span_call(&mut a.calls) else {
            continue;
        };
        let placeholder = std::mem::replace(&mut c.name, tool.to_string());
        if c.span_name.is_none() {
            let own = trace.spans.iter().find(|s| s.span_id == c.span_id);
            let own = own.map(|s| s.span.name().to_string());
            c.span_name = Some(own.unwrap_or_else(|| placeholder.clone()));
        }
        a.notes.push(format!(
            "tool span {} names no tool (`{placeholder}`): it ran the call `{tool}`{} that the model asked for in trace {} with its arguments (and no other call so), after the asking, in the same process: a run of that call (counted here)",
            c.span_id,
            e.asked.id.as_deref().map(|id| format!(" (call id {id})")).unwrap_or_default(),
            e.trace_id
        ));
        named.push(c.span_id);
    }
    named
}

#[cfg(test)]
mod tests;
