//! A span a generic marker types `tool` that is no call (docs/conventions.md,
//! "The generic tool-kind rule"): a vendor's processor may stamp its tool
//! type on a framework's own step spans (HoneyHive types Strands'
//! `execute_event_loop_cycle` spans `honeyhive_event_type = tool`), and the
//! generic rule alone would count each such step as a call.
//!
//! A span the generic rule reads is a container, and no call, when it holds
//! nothing of a call's own (no arguments, no result, no call id of the
//! model's) and below it are what a step of an agent's loop holds: a model
//! call (a span that says so, as the conversation witness tells it), or a
//! tool span a named convention reads (a stronger reading than a generic
//! marker's). A tool that runs a sub-agent or calls a model keeps its call:
//! it has arguments or a result.

use super::{source, wrappers::value_of, Classified, Role};
use crate::extract::conversation;

/// Takes the call role off every generic-rule span of `spans` that is a
/// container (see the module's doc), before nesting is worked out: what it
/// holds then sits where it would without it.
pub(super) fn demote(spans: &mut Classified<'_>) {
    if spans.generic.is_empty() {
        return;
    }
    let trace = spans.trace;
    let bare: Vec<usize> = spans
        .generic
        .iter()
        .filter(|&(&i, rule)| {
            let s = &trace.spans[i];
            spans.role[i] == Role::Call
                && source::tool_call_id(s).is_none()
                && !rule.args.iter().any(|src| value_of(src, s).is_some())
                && !rule.result.iter().any(|src| value_of(src, s).is_some())
        })
        .map(|(&i, _)| i)
        .collect();
    if bare.is_empty() {
        return;
    }
    let children = trace.children();
    let holds_a_step = |i: usize| {
        let mut stack: Vec<usize> = children.of(i).to_vec();
        // Each span once at most, whatever the parent links say.
        let mut budget = trace.spans.len();
        while let Some(j) = stack.pop() {
            if budget == 0 {
                break;
            }
            budget -= 1;
            let named_call = spans.role[j] == Role::Call && !spans.generic.contains_key(&j);
            if named_call || conversation::is_model_call(&trace.spans[j]) {
                return true;
            }
            stack.extend_from_slice(children.of(j));
        }
        false
    };
    let containers: Vec<usize> = bare.into_iter().filter(|&i| holds_a_step(i)).collect();
    for i in containers {
        spans.role[i] = Role::None;
    }
}
