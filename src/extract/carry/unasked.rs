//! A trace of tool spans whose call ids no trace before it knows
//! (docs/conventions.md, "Each model call its own trace").
//!
//! When each model call and each tool call is a trace of its own, an
//! exporter may send a tool's trace before the trace of the model call that
//! asked for it (OpenLIT's LangChain.js integration: the second tool's
//! span comes first in the file). Read in input order, the span's call is
//! then known to nothing yet: no kept model output asked for its id and no
//! kept call carries it. Such a trace (only tool spans' calls, each with a
//! call id: `Open::tool_only`) waits as a lone MCP client trace does
//! (`extract::echo`): a later trace that counts the call from the
//! conversation (`twice::between_either`: the span ran between the model's
//! asking and the request carrying the result, under the same call id)
//! counts it under the model's name with the result the model saw, and the
//! held trace is read again without it. Unmatched, it is released as it
//! was read.

use super::{key, Carry, Open, ASK_ID, CALL_ID};

impl<T> Carry<T> {
    /// Makes the calls of `open` lone when it is a tool-only trace none of
    /// whose call ids a kept model output asked for or a kept call carries.
    pub(super) fn unasked(&self, open: &mut Open) {
        if !open.tool_only || open.calls.is_empty() || !open.lone.is_empty() {
            return;
        }
        let known = open.calls.iter().any(|c| {
            let Some(id) = c.id.as_deref() else {
                return true;
            };
            let asked = |a: &super::OpenAsk| a.asked.id.as_deref() == Some(id);
            let carries = |k: &super::Echo| k.id.as_deref() == Some(id);
            self.asks.any_under(key(ASK_ID, id), asked)
                || self
                    .calls
                    .any_under(key(CALL_ID, (c.name.as_str(), id)), carries)
        });
        if !known {
            open.lone = std::mem::take(&mut open.calls);
        }
    }
}
