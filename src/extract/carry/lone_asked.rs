//! A lone MCP client trace read before the model asked for its call in a
//! trace that does not answer it (docs/conventions.md, "One call, several
//! spans").
//!
//! A held lone client trace waits for the first later trace that counts
//! calls (`Carry::settle_into`). When each model call is a trace of its
//! own, that trace may count an earlier call and ask for this one, whose
//! result only the trace after it carries (acceldata-aio-tracer's MCP
//! client chains beside its OpenAI spans: the second tool's client trace
//! comes before the model call asking for it, which answers the first
//! tool). The lone trace then keeps waiting while an ask kept here, not
//! answered yet, asked for its call: the same tool, the same process, the
//! asking ended before the call started, and the arguments equal or
//! missing on one side. The trace answering that ask takes it as any
//! counting trace does; the window ([`super::MAX_HELD`]) or the input's end
//! lets it go.

use super::{key, Carry, NAME};
use crate::extract::merge::same_args;
use crate::extract::open::{resource_key, Echo, OpenAsk};

/// Whether ask `a`, of process `run`, asked for lone call `l` before it ran.
fn asked_before(a: &OpenAsk, l: &Echo, run: u64) -> bool {
    !a.is_echo()
        && a.run == run
        && a.end_time_unix_nano <= l.start
        && (a.asked.args.is_null() || l.args.is_null() || same_args(&l.args, &a.asked.args))
}

impl<T> Carry<T> {
    /// Whether a held lone client trace has a call that an open ask kept
    /// here asked for: it waits for the trace answering that ask.
    pub(super) fn awaits_ask(&self) -> bool {
        self.held
            .iter()
            .filter_map(|h| h.lone.as_ref())
            .flat_map(|(_, lone)| lone.iter())
            .any(|l| !l.pending && self.asked_open(l))
    }

    /// Whether an open ask kept here asked for `l` ([`asked_before`]).
    fn asked_open(&self, l: &Echo) -> bool {
        // Only the asks of its tool are looked at: the process is hashed
        // for those alone.
        let name = key(NAME, l.name.as_str());
        if !self
            .asks
            .any_under(name, |a| a.end_time_unix_nano <= l.start)
        {
            return false;
        }
        let Some(run) = l.resource.as_deref().map(resource_key) else {
            return false;
        };
        self.asks.any_under(name, |a| asked_before(a, l, run))
    }
}
