//! What one trace leaves for the traces after it, read in input order
//! ([`super::carry::Carry`]): calls asked for and not answered, results
//! nothing asked for, and the calls an MCP client's own trace may echo
//! (`super::echo`). Data only, so that the conversation witness, the echo
//! rule and the reader share it without depending on each other.

use std::borrow::Cow;
use std::collections::hash_map::DefaultHasher;
use std::hash::{Hash, Hasher};
use std::sync::Arc;

use opentelemetry_proto::tonic::resource::v1::Resource;
use serde_json::Value;

use super::requested::Asked;
use crate::assemble::{SpanId, SpanRecord, Trace, TraceId};

/// The `form` of a carried entry that says a call of the trace read again
/// was counted in another trace (see `echo::absorb`).
pub(crate) const ECHO_FORM: &str = "mcp-client-echo";

/// The `form` of a carried entry that says a call of the trace read again
/// is another record, under the same call id, of a call another trace
/// counted (see `twice`).
pub(crate) const TWICE_FORM: &str = "call-id-twice";

/// [`TWICE_FORM`], when the two records are the halves of one streamed
/// model call, one trace after the other (see `twice`).
pub(crate) const HALVES_FORM: &str = "call-id-halves";

/// [`TWICE_FORM`], when the trace read continues the conversation of the
/// earlier trace and retells the call it counted (see `carry::continued`;
/// `asked.args`: the call's arguments, to tell which call of the span).
pub(crate) const CONTINUED_FORM: &str = "call-id-continued";

/// [`TWICE_FORM`], when the other record is a tool span without a call id
/// that ran between the model's asking and the request carrying the
/// result (see `twice::ran_between`).
pub(crate) const BETWEEN_FORM: &str = "tool-span-between";

/// The `form` of a carried entry that says a tool span's call without a
/// call id, in the trace read, ran between the model's asking and the
/// request carrying the result, and that another trace counts the call
/// from the conversation (see `twice::between_either`).
pub(crate) const SPAN_BETWEEN_FORM: &str = "conversation-counts-span";

/// The `form` of a carried entry that says a tool span's call, in the trace
/// read, ran a call an earlier trace's model output asked for under the same
/// call id and left open, and that the span names it otherwise (a wrapper
/// class): the request carrying its result counts it (see
/// `twice::runs_ask`).
pub(crate) const ASKED_SPAN_FORM: &str = "span-runs-open-ask";

/// The `form` of a carried entry that says a tool span's call without a call
/// id, in the trace read, ran a call an earlier trace's model output asked
/// for and left open, and wrote that call's one-field arguments as their
/// bare value: the call takes the model's arguments (see
/// `twice::renders_ask`). Not an echo: the call stays counted here; and no
/// ask of this trace (the conversation witness leaves it alone).
pub(crate) const ASKED_ARGS_FORM: &str = "span-writes-asked-args";

/// The `form` of a carried entry that says a tool span's call without a call
/// id, named after the framework's tool class, in the trace read, ran a call
/// an earlier trace's model output asked for with exactly its arguments:
/// the call takes the model's tool name (`asked.args`) and stays counted
/// here (see `extract::attempts`). It asks for nothing.
pub(crate) const ASKED_NAME_FORM: &str = "span-runs-asked-name";

/// The `form` of a carried entry that says a call the trace's first request
/// shows answered in its history, and that no earlier trace asked for or
/// counted, is counted there (`conversation::unseen`).
pub(crate) const HISTORY_FORM: &str = "history-unseen";

/// The `form`s of carried entries that give a tool span's call of the trace
/// read the arguments, the result, or the result of a failed call, that a
/// record in another trace holds (`asked.args`: the value; see
/// `witness_records`). They ask for nothing.
/// The `form` of a carried entry saying that the call at `span_id`, an
/// attempt paused for approval, was run by a call of trace `trace_id`
/// (`extract::pending`).
pub(crate) const PENDING_FORM: &str = "pending-attempt-run";

pub(crate) const WITNESS_ARGS_FORM: &str = "witness-args";
pub(crate) const WITNESS_RESULT_FORM: &str = "witness-result";
pub(crate) const WITNESS_ERROR_FORM: &str = "witness-error";

/// The `form` of a carried entry that gives a call of the trace read,
/// rebuilt from the conversation, the whole answer an MCP client's record
/// of it in another trace holds (`asked.args`: that answer; see
/// `mcp_record_result`). It asks for nothing.
pub(crate) const MCP_RESULT_FORM: &str = "mcp-record-result";

/// The `form` of a carried entry that only notes that a tool span's call
/// and the conversation's calls of other traces were not joined, more than
/// one fitting (`carry::lone_span`). It asks for nothing.
pub(crate) const AMBIGUOUS_FORM: &str = "lone-span-ambiguous";

/// The `form` of a carried entry that says a call the trace read asked for
/// at `span_id` and left unanswered (a warning of it) is counted in trace
/// `trace_id`, later in the input (`carry::later`). It asks for nothing.
pub(crate) const LATER_FORM: &str = "counted-in-later-trace";

/// The `form` of a trace's own entry for a tool span's call left without a
/// result when its run ended, which a later run of the same process may
/// answer (`carry::deferred`); and of the entry saying that trace
/// `trace_id`, later in the input, counts it (the span's call is not
/// counted again). Neither asks for anything.
pub(crate) const DEFERRED_FORM: &str = "deferred-call";
pub(crate) const DEFERRED_COUNTED_FORM: &str = "deferred-call-counted-later";

/// The `form` of an entry saying that the model output of span `span_id`
/// in the trace read asked for a call that no tool span of that trace
/// shows and a tool span of trace `trace_id` does: the ask's record
/// completed that span's call (`carry::witnessed`). It asks for nothing.
pub(crate) const SHOWN_FORM: &str = "ask-shown-elsewhere";

/// What a record in a span that ran no tool says of one call
/// (`witness_records`): its arguments or its result, under its call id.
#[derive(Debug, Clone, PartialEq)]
pub struct Witnessed {
    pub id: String,
    pub name: Option<String>,
    pub args: Option<Value>,
    pub result: Option<Value>,
    /// Whether the record says the call failed.
    pub error: bool,
    pub trace_id: TraceId,
    pub resource: Option<Arc<Resource>>,
    /// The trace whose call this record was found to repeat
    /// (`witness_records::of_retold`): it completes that trace's call
    /// only. `None`: a record in a span that ran no tool.
    pub of_trace: Option<TraceId>,
    /// For the record of a model's ask that no tool span of its trace
    /// shows (`conversation::joins`): the span of that model output, and
    /// the time its trace covers (it completes a call of a trace
    /// overlapping it only: call ids repeat across runs).
    pub asked_in: Option<(SpanId, (u64, u64))>,
}

/// The time `trace` covers: its spans' first start and last end.
pub(crate) fn window_of(trace: &Trace) -> (u64, u64) {
    let spans = trace.spans.iter().map(|s| &s.span);
    let start = spans.clone().map(|s| s.start_time_unix_nano).min();
    let end = spans.map(|s| s.end_time_unix_nano).max();
    (start.unwrap_or(0), end.unwrap_or(0))
}

/// A call as the traces after its own compare it.
#[derive(Debug, Clone, PartialEq)]
pub struct Echo {
    pub name: String,
    /// `null` when the call has none.
    pub args: Value,
    /// The model's call id: the conversation's, or the tool span's.
    pub id: Option<String>,
    /// For a call rebuilt from the conversation whose turn a later request
    /// echoed under other ids: the id its result answers there
    /// (`Analysis::echoed_ids`), the call's id in other records of it.
    pub also: Option<String>,
    /// Whether the call was rebuilt from the conversation.
    pub from_conversation: bool,
    /// The time its trace covers: its spans' first start and last end.
    pub window: (u64, u64),
    /// Whether its trace recorded a model request and no model output (a
    /// streamed model call's first half: another trace records the output).
    pub outputless: bool,
    pub trace_id: TraceId,
    pub span_id: SpanId,
    pub start: u64,
    pub end: u64,
    /// The process the call's span ran in.
    pub resource: Option<Arc<Resource>>,
    /// For a call rebuilt from the conversation: when the model output
    /// that asked for it ended, once the carry has found that output
    /// (`twice::between_either`); `None` otherwise.
    pub asked: Option<u64>,
    /// For a lone MCP client trace's record of a result alone (no
    /// arguments, no call id): that result (`mcp_record_result`).
    pub result: Option<Value>,
    /// For a call rebuilt from the conversation, or a tool span's call
    /// recording its result alone in a trace of its own: its result
    /// (`answer_key`); `None` otherwise.
    pub answer: Option<Answer>,
    /// Whether the call is an attempt paused for approval, held for the
    /// run after it (`extract::pending`).
    pub pending: bool,
    /// Whether that attempt failed with the framework's pause
    /// (`pending::paused`): its run may carry another call id and name.
    pub paused: bool,
    /// Whether the call has a result (`pending::answered`).
    pub answered: bool,
    /// Whether the call, its span named after the tool class, took the
    /// name of an earlier trace's ask by its arguments (`extract::attempts`):
    /// one run of that call, maybe not the one whose result the model saw.
    pub attempt: bool,
    /// For a tool span's call without a call id whose arguments wrap, or
    /// were taken through a wrapper from, the model's: its result
    /// (`wrapped_args`); `None` otherwise.
    pub wrapped: Option<Wrapped>,
}

/// A call's result as the carry keeps it, for `answer_key` to compare:
/// equal when equal as JSON values.
#[derive(Debug, Clone)]
pub struct Answer(pub(super) super::CallResult);

impl PartialEq for Answer {
    fn eq(&self, other: &Self) -> bool {
        use super::CallResult;
        match (&self.0, &other.0) {
            (CallResult::Json(a), CallResult::Json(b)) if a == b => true,
            (a, b) => a.to_value() == b.to_value(),
        }
    }
}

/// Whether two records came from one process: equal resource attributes
/// (the same `Arc` when they came in one request). Without a resource on
/// either side, no.
pub(crate) fn same_process(a: &Option<Arc<Resource>>, b: &Option<Arc<Resource>>) -> bool {
    match (a, b) {
        (Some(a), Some(b)) => Arc::ptr_eq(a, b) || a == b,
        _ => false,
    }
}

/// A call a trace's model output asked for (with a call id) and no later
/// request in that trace answered.
#[derive(Debug, Clone, PartialEq)]
pub struct OpenAsk {
    pub(crate) asked: Asked,
    pub(crate) form: &'static str,
    pub trace_id: TraceId,
    pub span_id: SpanId,
    /// When the model's answer ended.
    pub end_time_unix_nano: u64,
    /// The process the model call ran in: its resource attributes, hashed.
    pub run: u64,
}

impl OpenAsk {
    /// That the call `later` records (under its id and name, with `args`)
    /// is the one trace `earlier` counts, said in `form`.
    pub(crate) fn of_echo(later: &Echo, earlier: &Echo, args: Value, form: &'static str) -> Self {
        OpenAsk {
            asked: Asked {
                id: later.id.clone(),
                name: later.name.clone(),
                args,
            },
            form,
            trace_id: earlier.trace_id,
            span_id: later.span_id,
            end_time_unix_nano: earlier.end,
            run: 0,
        }
    }

    /// Whether this says the call at `span_id` of the trace read is another
    /// record of a call trace `trace_id` counts: an MCP client's
    /// (`extract::echo`), or one under the same call id (`extract::twice`).
    pub fn is_echo(&self) -> bool {
        [
            ECHO_FORM,
            TWICE_FORM,
            HALVES_FORM,
            CONTINUED_FORM,
            BETWEEN_FORM,
            SPAN_BETWEEN_FORM,
            ASKED_SPAN_FORM,
            PENDING_FORM,
        ]
        .contains(&self.form)
    }

    /// The call read from a span of the trace read that this entry names:
    /// that span's call of the asked tool (not one from the conversation).
    pub(crate) fn span_call<'a>(
        &self,
        calls: &'a mut [super::ToolCall],
    ) -> Option<&'a mut super::ToolCall> {
        calls
            .iter_mut()
            .find(|c| c.span_id == self.span_id && c.name == self.asked.name && c.from.is_none())
    }
}

/// What a trace without tool spans leaves open: calls asked for and not
/// answered in it, and the call ids of results it carries that nothing in
/// it asked for.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Open {
    pub asks: Vec<OpenAsk>,
    /// (call id, the process of the request that carries it, its start).
    pub answers: Vec<(String, u64, u64)>,
    /// Results without a call id or a tool name that end the trace's
    /// first request, where no model turn of it asked for them: (how
    /// many, the process of the request, its start). The calls they answer
    /// are the last ones an earlier trace left open, by order.
    pub bare: Option<(usize, u64, u64)>,
    /// Calls counted from the history of a request that no output of the
    /// trace asked for (call id, process, request start): an earlier
    /// trace's model output may hold their exact arguments
    /// (`conversation::repeated`).
    pub retold: Vec<(String, u64, u64)>,
    /// The calls a trace counted, for a lone MCP client trace after it
    /// (`extract::echo`).
    pub calls: Vec<Echo>,
    /// The calls of a lone MCP client trace.
    pub lone: Vec<Echo>,
    /// Whether `calls` are all tool spans' calls with call ids, in a trace
    /// without agent runs or model calls whose messages are read (the
    /// carry holds it as a lone trace while no earlier trace knows those
    /// ids: `carry::unasked`).
    pub tool_only: bool,
    /// The calls the trace's first request shows answered in its history
    /// before its last model turn, not counted (`HISTORY_FORM`): the
    /// traces before counted them, unless none of them asked for them.
    pub history: Vec<OpenAsk>,
    /// The call records of spans that ran no tool (`witness_records`).
    pub witnessed: Vec<Witnessed>,
    /// The trace's tool spans' calls with a call id and neither arguments
    /// nor a result, which such records may complete.
    pub wanting: Vec<Echo>,
    /// The calls the model asked for in its text that no tool span of the
    /// trace shows (without a call id): a later trace's may (`carry::later`).
    pub unshown: Vec<OpenAsk>,
    /// The trace's tool spans' calls with a call id and arguments, left
    /// without a result or an error (`DEFERRED_FORM`): a later run may
    /// carry their results (`carry::deferred`).
    pub deferred: Vec<OpenAsk>,
    /// The failures the trace's first request tells in text, after its
    /// last model turn, of calls no model turn of it shows
    /// (`conversation::failed_texts`): an earlier trace's open ask of that
    /// tool with those arguments failed (`carry::failed`).
    pub failed: Vec<Told>,
    /// What identifies the trace's first request, when it carries results:
    /// another trace's record of the same request answered them
    /// (`conversation::twins`).
    pub print: Option<Print>,
}

/// A failure a request's text tells of a call (`Open::failed`): the tool,
/// its arguments, and the request's process and start.
#[derive(Debug, Clone, PartialEq)]
pub struct Told {
    pub name: String,
    pub args: Value,
    pub run: u64,
    pub start: u64,
}

impl Open {
    /// Whether the traces after this one have nothing to take from it.
    pub fn is_empty(&self) -> bool {
        self.asks.is_empty()
            && self.answers.is_empty()
            && self.retold.is_empty()
            && self.bare.is_none()
            && self.calls.is_empty()
            && self.lone.is_empty()
            && self.history.is_empty()
            && self.witnessed.is_empty()
            && self.wanting.is_empty()
            && self.unshown.is_empty()
            && self.deferred.is_empty()
            && self.failed.is_empty()
    }
}

/// The carried entries the conversation witness reads: all but
/// [`ASKED_ARGS_FORM`]'s, which ask for nothing.
pub(crate) fn for_witness(carried: &[OpenAsk]) -> Cow<'_, [OpenAsk]> {
    let none = |c: &OpenAsk| {
        [
            ASKED_ARGS_FORM,
            ASKED_NAME_FORM,
            WITNESS_ARGS_FORM,
            WITNESS_RESULT_FORM,
            WITNESS_ERROR_FORM,
            MCP_RESULT_FORM,
            AMBIGUOUS_FORM,
            LATER_FORM,
            DEFERRED_FORM,
            DEFERRED_COUNTED_FORM,
            SHOWN_FORM,
        ]
        .contains(&c.form)
    };
    if carried.iter().any(none) {
        Cow::Owned(carried.iter().filter(|c| !none(c)).cloned().collect())
    } else {
        Cow::Borrowed(carried)
    }
}

/// What identifies a trace's first request (`conversation::twins`): its results' contents, its
/// process and its span's time.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Print {
    pub(crate) hash: u64,
    pub(crate) run: u64,
    pub(crate) start: u64,
    pub(crate) end: u64,
}

impl Print {
    /// Whether `other` records the same request: the same results, the
    /// same process, the two spans overlapping in time.
    pub(crate) fn same_request(&self, other: &Print) -> bool {
        self.hash == other.hash
            && self.run == other.run
            && self.start < other.end
            && other.start < self.end
    }
}

/// The process a span ran in: its resource attributes, hashed.
pub(crate) fn run_key(s: &SpanRecord) -> u64 {
    resource_key(&s.resource)
}

/// [`run_key`] of a process's resource.
pub(crate) fn resource_key(resource: &Resource) -> u64 {
    let mut h = DefaultHasher::new();
    for kv in &resource.attributes {
        kv.key.hash(&mut h);
        // Attribute values are protobuf messages (no `Hash`): their
        // encoding names them.
        format!("{:?}", kv.value).hash(&mut h);
    }
    h.finish()
}

/// A span's call whose arguments may wrap the model's (`super::wrapped_args`): its result's digest, for the answering request's to agree with.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Wrapped {
    /// A 64-bit digest of the span's result ([`super::wrapped_args::digest`]), when it has one:
    /// only equality is asked of it, and the carry may keep many such
    /// spans, so not the result itself.
    pub result: Option<u64>,
    /// Whether the span took the model's arguments from an ask already
    /// (read between the asking and the answering trace); else its own
    /// arguments are the wrapper.
    pub took_args: bool,
}

/// Whether an ask that ended at `end` ended before a request that started
/// at `start`. A start in whole milliseconds may be a clock's truncation
/// (Langfuse's JavaScript SDK writes start times from a `Date`, end times
/// in nanoseconds): an end within that millisecond counts as before it.
pub(crate) fn ended_by(end: u64, start: u64) -> bool {
    const MS: u64 = 1_000_000;
    end <= start || (start.is_multiple_of(MS) && end < start.saturating_add(MS))
}
