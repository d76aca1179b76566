//! One call recorded in two traces: the MCP client's record of a call in a
//! trace of its own (docs/conventions.md, "One call, several spans").
//!
//! An MCP client that is not given the caller's span as context opens a
//! trace of its own for each call (or one per session). Such a trace holds
//! no agent run and no model call, only the client's spans: it is a *lone
//! client trace*, the client's record of a call that the caller's trace
//! records too. Reading the traces in input order ([`super::carry::Carry`]),
//! a lone client trace's call is the record of a call an earlier trace
//! counted when all of these hold: same tool name, equal arguments (both
//! present), the two overlap in time, both ran in the same process (equal
//! resource attributes), and that earlier call has not been matched
//! already. Overlap, not containment: a client may close its span a moment
//! after the caller has sent the result on (a call rebuilt from the
//! conversation ends where the next model request starts), while the next
//! call of the same tool starts only after the model asked for it again. It is then not counted again: the
//! call stays in the caller's trace, and the lone trace notes where it was
//! counted. Two real calls never merge: each earlier call takes one record
//! at most, and a call with other arguments, or outside the earlier call's
//! time, stays a call.

use std::borrow::Cow;
use std::sync::Arc;

use serde_json::Value;

use super::open::{
    Echo, OpenAsk, ASKED_ARGS_FORM, ASKED_SPAN_FORM, BETWEEN_FORM, CONTINUED_FORM, ECHO_FORM,
    HALVES_FORM, PENDING_FORM, SPAN_BETWEEN_FORM, TWICE_FORM,
};
use super::own_records::MCP_METHOD;
use super::requested::Asked;
use super::{conversation, hollow_record, merge, witness_records, Analysis, CallArgs, ToolCall};
use crate::assemble::{SpanId, SpanRecord, Trace};

/// Whether the calls of `a` are all an MCP client's (or server's), in a
/// trace with no agent run and no model call: a lone client trace. A call
/// is an MCP one when its rule says so (its name says `mcp`), or its span
/// does as the MCP conventions write it (`mcp.method.name`) or comes from
/// an instrumentation scope whose name says `mcp`: a vendor no rule names.
fn is_lone<'t>(
    trace: &Trace,
    a: &Analysis,
    span: impl Fn(&ToolCall) -> Option<&'t SpanRecord>,
) -> bool {
    let mcp = |c: &ToolCall| {
        c.convention.contains("mcp")
            || span(c).is_some_and(|s| s.attr_str(MCP_METHOD).is_some() || has_mcp(&s.scope.name))
    };
    // A trace of hollow records only is held as an MCP client's is
    // (`hollow_record::ran_for`).
    let hollow =
        |c: &ToolCall| hollow_record::is_hollow(c, span(c).and_then(super::source::tool_call_id));
    !a.calls.is_empty()
        && a.runs.is_empty()
        && (a.calls.iter().all(|c| c.from.is_none() && mcp(c)) || a.calls.iter().all(hollow))
        && !trace.spans.iter().any(conversation::reads_messages)
}

/// Whether an instrumentation scope's name says `mcp` (any case).
fn has_mcp(name: &str) -> bool {
    name.as_bytes()
        .windows(3)
        .any(|w| w.eq_ignore_ascii_case(b"mcp"))
}

/// The calls of `a` that have arguments, a call id or a result another
/// trace may compare (`answer_key`) as echoes, and whether the trace is a
/// lone client trace.
pub(crate) fn echoes_of(trace: &Trace, a: &Analysis) -> (Vec<Echo>, bool) {
    if a.calls.is_empty() {
        return (Vec::new(), false);
    }
    // One index, not a walk per call: a trace may hold thousands of calls.
    let index = trace.positions();
    let span = |c: &ToolCall| index.get(c.span_id).and_then(|i| trace.spans.get(i));
    let window = super::open::window_of(trace);
    // Only a call rebuilt from the conversation is compared so (`twice`).
    let outputless = a.calls.iter().any(|c| c.from.is_some())
        && !trace.spans.iter().any(conversation::records_output);
    let lone = is_lone(trace, a, span);
    // Attempts paused for approval are held as a lone trace's calls are.
    let pending = !lone && super::pending::attempts(a);
    let echoes = a
        .calls
        .iter()
        .filter_map(|c| {
            let s = span(c);
            let id = match c.from {
                Some(_) => c.call_id.clone(),
                // A span's own id, else one its record gave
                // (`placeholder_names`).
                None => s
                    .and_then(super::source::tool_call_id)
                    .map(str::to_string)
                    .or_else(|| c.call_id.clone()),
            };
            let args = c
                .args
                .parsed()
                .filter(|v| !v.is_null())
                .map(Cow::into_owned)
                .or_else(|| lone.then(|| super::no_args::unsent(c, s)).flatten());
            // A lone trace's hollow record is matched by time
            // (`hollow_record`).
            // and so is a record of the answer alone (`mcp_record_result`).
            let answer = lone && args.is_none() && super::mcp_record_result::answers_only(c);
            // Only the trace's attempts wait for a run: its other calls
            // are counted as they are (`pending`).
            let attempt = pending && super::pending::is_attempt(c);
            let held = lone || attempt;
            // A tool span's record of the result alone, its trace's one
            // span (`answer_key`).
            let key = super::answer_key::answer_of(trace, c, args.as_ref(), id.is_some());
            if args.is_none()
                && id.is_none()
                && !(held && hollow_record::is_hollow(c, None))
                && !answer
                && key.is_none()
            {
                return None;
            }
            Some(Echo {
                name: c.name.clone(),
                args: args.unwrap_or(Value::Null),
                also: answered_as(a, c, id.as_deref()).or_else(|| joined_as(a, c, id.as_deref())),
                id,
                from_conversation: c.from.is_some(),
                window,
                outputless,
                trace_id: trace.id,
                span_id: c.span_id,
                start: echo_start(c, s),
                end: c.end_time_unix_nano,
                resource: s.map(|s| Arc::clone(&s.resource)),
                asked: super::call_window::asked_here(c, s),
                result: answer
                    .then(|| c.result.as_ref().map(super::CallResult::to_value))
                    .flatten(),
                answer: key,
                pending: attempt,
                paused: attempt && super::pending::paused(c),
                answered: super::pending::answered(c),
                attempt: false,
                wrapped: None,
            })
        })
        .collect();
    (echoes, lone)
}

/// The id the result of `c` (call id `id`), a call rebuilt from the
/// conversation, answers when a later request of its trace echoed its turn
/// under other ids (`Analysis::echoed_ids`).
fn answered_as(a: &Analysis, c: &ToolCall, id: Option<&str>) -> Option<String> {
    let id = id.filter(|_| c.from.is_some() && !a.echoed_ids.is_empty())?;
    let (_, answer) = a.echoed_ids.iter().find(|(own, _)| own == id)?;
    Some(answer.clone())
}

/// The call id of `c`, a tool span's call without one (`id`), that the
/// witness joined to its trace's ask under that id (`Analysis::joined_ids`),
/// or the id a later request of the trace echoes that ask under
/// (`Analysis::echoed_ids`): the model's output kept the Responses item
/// id, the history the call id, which other traces replay.
fn joined_as(a: &Analysis, c: &ToolCall, id: Option<&str>) -> Option<String> {
    if id.is_some() || c.from.is_some() || a.joined_ids.is_empty() {
        return None;
    }
    let (_, id) = a.joined_ids.iter().find(|(s, _)| *s == c.span_id)?;
    let echoed = a.echoed_ids.iter().find(|(own, _)| own == id);
    Some(echoed.map_or(id, |(_, answer)| answer).clone())
}

/// When the traces after compare call `c` (on span `s`) as starting: a
/// call counted from the conversation on the request that carries its
/// result (the model asked for it in another trace) is compared from that
/// request's start, though it starts when the model's answer asking for it
/// ended (`conversation::asked_time`): the joins across traces were made
/// for that time.
fn echo_start(c: &ToolCall, s: Option<&SpanRecord>) -> u64 {
    match (c.from, s) {
        (Some(_), Some(s)) if s.span.start_time_unix_nano == c.end_time_unix_nano => {
            c.end_time_unix_nano
        }
        _ => c.start_time_unix_nano,
    }
}

/// Whether `lone`, a lone client trace's call, is the record of `earlier`.
///
/// The carry compares only kept calls of the same name with this
/// (`carry::name_key`).
pub(crate) fn same_call(lone: &Echo, earlier: &Echo) -> bool {
    if lone.args.is_null() && lone.id.is_none() {
        return hollow_record::is_record_of(lone, earlier);
    }
    let same_process = super::open::same_process(&lone.resource, &earlier.resource);
    lone.trace_id != earlier.trace_id
        && same_process
        && lone.name == earlier.name
        && !lone.args.is_null()
        && super::merge::same_args(&lone.args, &earlier.args)
        && lone.start <= earlier.end
        && earlier.start <= lone.end
}

/// The carried entry saying that `lone` was counted as `earlier`.
pub(crate) fn carried(lone: &Echo, earlier: &Echo) -> OpenAsk {
    OpenAsk {
        asked: Asked {
            id: None,
            name: lone.name.clone(),
            args: Value::Null,
        },
        form: ECHO_FORM,
        trace_id: earlier.trace_id,
        span_id: lone.span_id,
        end_time_unix_nano: earlier.end,
        run: 0,
    }
}

/// Takes out of `a` the calls that `carried` says another trace counted,
/// noting each.
pub(crate) fn absorb(carried: &[OpenAsk], a: &mut Analysis) {
    for e in carried.iter().filter(|e| e.is_echo()) {
        let halves = e.form == HALVES_FORM;
        let continued = e.form == CONTINUED_FORM;
        let between = e.form == BETWEEN_FORM;
        let span_between = e.form == SPAN_BETWEEN_FORM;
        let asked_span = e.form == ASKED_SPAN_FORM;
        let pending = e.form == PENDING_FORM;
        let twice = e.form == TWICE_FORM
            || halves
            || continued
            || between
            || span_between
            || asked_span
            || pending;
        // A retold call names its arguments: which of the span's calls of
        // that tool it is (`carry::continued`).
        let same_args = |c: &ToolCall| {
            !continued
                || c.args
                    .value()
                    .is_some_and(|v| merge::same_args(v, &e.asked.args))
        };
        let Some(k) = a.calls.iter().position(|c| {
            c.span_id == e.span_id && (!twice || c.name == e.asked.name) && same_args(c)
        }) else {
            continue;
        };
        let c = a.calls.remove(k);
        a.notes.push(if pending {
            super::pending::note(&c, e)
        } else if asked_span {
            format!(
                "tool call `{}` (span {}) ran call {} that the model asked for as `{}` in trace {} and left open (same call id and arguments, same process, after the asking): the request carrying its result counts it under the model's name, not counted again",
                c.name,
                c.span_id,
                e.asked.id.as_deref().unwrap_or_default(),
                e.asked.args.as_str().unwrap_or_default(),
                e.trace_id
            )
        } else if span_between {
            format!(
                "tool call `{}` (span {}) ran after the model asked for it and before the request of trace {} that carries its result, which counts it from the conversation ({}, same process): not counted again",
                c.name,
                c.span_id,
                e.trace_id,
                match &e.asked.id {
                    Some(id) => format!("same call id {id}"),
                    // `hollow_record::ran_for`: only the name and the time.
                    None if hollow_record::is_hollow(&c, None) => {
                        "same tool, the span naming its tool only".to_string()
                    }
                    None if super::mcp_record_result::answers_only(&c)
                        || super::answer_key::answer_only(&c) =>
                    {
                        "same tool, the span recording its tool and answer only".to_string()
                    }
                    None if super::wrapped_args::wraps(
                        &c.args.parsed().unwrap_or_default(),
                        &e.asked.args,
                    ) =>
                    {
                        "same tool, the span's arguments the model's wrapped under its one parameter, its result, if any, the same".to_string()
                    }
                    None => "same tool and arguments".to_string(),
                }
            )
        } else if between {
            format!(
                "tool call `{}` (span {}) is the conversation's record of the call a tool span of trace {} shows ({}, same process, run after the model asked for it and before this request): not counted again",
                c.name,
                c.span_id,
                e.trace_id,
                match e.asked.args.as_str() {
                    Some(id) => format!("same tool and call id {id}"),
                    None => "same tool and arguments".to_string(),
                }
            )
        } else if twice {
            format!(
                "tool call `{}` (span {}) is another record of the call trace {} counts (same call id{} and tool, same process, {}): not counted again",
                c.name,
                c.span_id,
                e.trace_id,
                twice_id(e),
                if halves {
                    "that trace the first half of this streamed model call, recording its request and no output"
                } else if continued {
                    "this trace retelling that conversation: a model output asked for the call before that trace counted it, and none since"
                } else {
                    "the traces overlapping in time"
                }
            )
        } else if hollow_record::is_hollow(&c, None) {
            hollow_record::echo_note(&c, e.trace_id)
        } else {
            format!(
                "tool call `{}` (span {}) is the MCP client's record of the call trace {} counts (same name and arguments, at the same time, same process): not counted again",
                c.name, c.span_id, e.trace_id
            )
        });
    }
}

/// The call id a [`TWICE_FORM`] entry's note names: the one both records
/// share, the id this trace's result answers when that is not the call's
/// own (`twice::carried`).
fn twice_id(e: &OpenAsk) -> String {
    let own = e.asked.id.as_deref().unwrap_or_default();
    match e.asked.args.as_str() {
        // A span's call without an id, known by its trace's ask
        // (`conversation::ask_ids`).
        Some(asked) if e.form == TWICE_FORM && own.is_empty() => {
            format!(" {asked} (its trace's model output asked for it, or a later request echoed it, under that id)")
        }
        Some(answer) if e.form == TWICE_FORM => {
            format!(" {answer} (the id its result answers here, for the model output's {own})")
        }
        _ if own.is_empty() => String::new(),
        _ => format!(" {own}"),
    }
}

/// Gives the calls `carried` says wrote an asked call's arguments as a bare
/// value (`twice::renders_ask`), or wrapped them (`wrapped_args`), the
/// model's arguments, noting each; returns the spans of the wrapped ones.
fn asked_args(carried: &[OpenAsk], a: &mut Analysis) -> Vec<SpanId> {
    let mut took = Vec::new();
    for e in carried.iter().filter(|e| e.form == ASKED_ARGS_FORM) {
        let Some(c) = e.span_call(&mut a.calls) else {
            continue;
        };
        let wrapper = c
            .args
            .parsed()
            .filter(|v| super::wrapped_args::wraps(v, &e.asked.args))
            .map(std::borrow::Cow::into_owned);
        if let Some(wrapper) = wrapper {
            a.notes.push(super::wrapped_args::took_note(c, &wrapper, e));
            c.args = CallArgs::Value(e.asked.args.clone());
            took.push(c.span_id);
            continue;
        }
        let Some(bare) = c
            .args
            .parsed()
            .filter(|v| merge::bare_field(v, &e.asked.args))
        else {
            continue;
        };
        a.notes.push(format!(
            "tool call `{}` (span {}) writes the arguments {} the model asked for in trace {} as {}: the model's are taken",
            c.name, c.span_id, e.asked.args, e.trace_id, bare
        ));
        c.args = CallArgs::Value(e.asked.args.clone());
    }
    took
}

/// After a trace is read: takes out the calls `carried` says another trace
/// counted, and leaves the remaining calls to the traces after it.
pub(crate) fn settle(trace: &Trace, carried: &[OpenAsk], a: &mut Analysis) {
    super::carry::later::note(carried, a);
    super::carry::witnessed::note(carried, a);
    super::carry::deferred::absorb(carried, a);
    let took = asked_args(carried, a);
    let attempts = super::attempts::name(trace, carried, a);
    super::mcp_record_result::fill(carried, a);
    let kept = super::resumed::keep(trace, carried, a);
    // Read before `absorb` drops them (`witness_records::of_retold`).
    let retold = witness_records::of_retold(trace, &kept, a);
    absorb(&kept, a);
    super::call_window::note_ambiguous(carried, a);
    let mut witnessed = witness_records::of(trace, a);
    witnessed.extend(retold);
    witnessed.append(&mut a.asked_records);
    if !witnessed.is_empty() {
        a.open.get_or_insert_with(Default::default).witnessed = witnessed;
    }
    let (mut calls, lone) = echoes_of(trace, a);
    super::wrapped_args::mark(&mut calls, trace, a, &took);
    for c in calls.iter_mut().filter(|c| attempts.contains(&c.span_id)) {
        c.attempt = true;
    }
    // Attempts paused for approval are also held as a lone trace's calls
    // are, for a later run (`pending`), unless records in later traces may
    // complete them (`wanting`).
    let mut attempts = Vec::new();
    if calls.iter().any(|c| c.pending) {
        if witness_records::wanting(a, &calls).is_empty() {
            attempts = calls.iter().filter(|c| c.pending).cloned().collect();
        }
        calls.retain(|c| !c.args.is_null() || c.id.is_some());
        calls.iter_mut().for_each(|c| {
            c.pending = false;
            c.paused = false;
        });
    }
    if lone {
        // A client's record is matched by its arguments; a hollow one
        // (neither arguments nor id) by time.
        calls.retain(|c| !c.args.is_null() || c.id.is_none());
    }
    if calls.is_empty() && attempts.is_empty() {
        return;
    }
    // Calls a later run may answer (`carry::deferred`).
    let deferred = if lone {
        Vec::new()
    } else {
        super::carry::deferred::of(a, &calls)
    };
    let only = !lone && tool_only(trace, a, &calls);
    let wanting = witness_records::wanting(a, &calls);
    let open = a.open.get_or_insert_with(Default::default);
    if lone {
        open.lone = calls;
    } else {
        open.wanting = wanting;
        open.tool_only = only;
        open.deferred = deferred;
        open.calls = calls;
        open.lone = attempts;
    }
}

/// Whether `calls`, all of `a`'s, are tool spans' calls with call ids in a
/// trace without agent runs or model calls whose messages are read.
fn tool_only(trace: &Trace, a: &Analysis, calls: &[Echo]) -> bool {
    a.runs.is_empty()
        && calls.len() == a.calls.len()
        && calls.iter().all(|c| !c.from_conversation && c.id.is_some())
        && !trace.spans.iter().any(conversation::reads_messages)
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use opentelemetry_proto::tonic::common::v1::InstrumentationScope;

    use crate::assemble::{Trace, TraceId};
    use crate::extract::test_support::read_in_order;
    use crate::extract::tests::sp;

    /// A made-up vendor's agent trace: an agent run with one tool span
    /// (`acme.span.kind = tool`) over `when`.
    fn caller(trace: u8, when: (u64, u64), args: &str) -> Trace {
        let spans = vec![
            sp(
                1,
                None,
                (when.0 - 5, when.1 + 5),
                "invoke_agent desk",
                &[
                    ("gen_ai.operation.name", "invoke_agent"),
                    ("gen_ai.agent.name", "desk"),
                ],
            ),
            sp(
                2,
                Some(1),
                when,
                "book_room",
                &[("acme.span.kind", "tool"), ("acme.input", args)],
            ),
        ];
        Trace::new(TraceId([trace; 16]), spans, 0)
    }

    /// An MCP client's `{tool}.tool` span as the root of a trace of its own.
    fn client(trace: u8, when: (u64, u64), args: &str) -> Trace {
        let input = format!("{{\"tool_name\": \"book_room\", \"arguments\": {args}}}");
        let mut s = sp(
            9,
            None,
            when,
            "book_room.tool",
            &[
                ("traceloop.span.kind", "tool"),
                ("traceloop.entity.input", &input),
            ],
        );
        s.scope = Arc::new(InstrumentationScope {
            name: "acme.instrumentation.mcp".into(),
            ..Default::default()
        });
        Trace::new(TraceId([trace; 16]), vec![s], 0)
    }

    const ARGS: &str = r#"{"room": 12}"#;

    #[test]
    fn the_clients_trace_of_a_call_counted_before_counts_nothing() {
        let got = read_in_order(vec![caller(1, (10, 50), ARGS), client(2, (20, 40), ARGS)]);
        assert_eq!(got[0].calls.len(), 1);
        assert!(got[1].calls.is_empty(), "{:?}", got[1].calls);
        let note = &got[1].notes[0];
        assert!(
            note.contains("MCP client's record of the call trace 0101"),
            "{note}"
        );
    }

    /// A made-up vendor's MCP client span (OTel GenAI attributes and the
    /// MCP conventions' `mcp.method.name`, no rule naming MCP) as the root
    /// of a trace of its own.
    fn genai_client(trace: u8, when: (u64, u64), args: &str, method: &str) -> Trace {
        let s = sp(
            9,
            None,
            when,
            "tools/call book_room",
            &[
                ("gen_ai.operation.name", "execute_tool"),
                ("gen_ai.tool.name", "book_room"),
                ("gen_ai.tool.call.arguments", args),
                (method, "tools/call"),
            ],
        );
        Trace::new(TraceId([trace; 16]), vec![s], 0)
    }

    #[test]
    fn an_mcp_client_span_no_rule_names_is_a_client_record_too() {
        let got = read_in_order(vec![
            caller(1, (10, 50), ARGS),
            genai_client(2, (20, 40), ARGS, "mcp.method.name"),
        ]);
        assert!(got[1].calls.is_empty(), "{:?}", got[1].calls);
        // Without the MCP attribute it is a call of its own.
        let got = read_in_order(vec![
            caller(1, (10, 50), ARGS),
            genai_client(2, (20, 40), ARGS, "acme.method"),
        ]);
        assert_eq!(got[1].calls.len(), 1);
    }

    #[test]
    fn a_client_span_closed_after_the_caller_s_is_still_its_record() {
        // The client's span ends a moment after the caller's call.
        let got = read_in_order(vec![caller(1, (10, 50), ARGS), client(2, (20, 52), ARGS)]);
        assert!(got[1].calls.is_empty(), "{:?}", got[1].calls);
    }

    #[test]
    fn other_arguments_another_time_or_a_second_record_stay_calls() {
        let other = read_in_order(vec![
            caller(1, (10, 50), ARGS),
            client(2, (20, 40), r#"{"room": 13}"#),
        ]);
        assert_eq!(other[1].calls.len(), 1);
        let outside = read_in_order(vec![caller(1, (10, 50), ARGS), client(2, (55, 60), ARGS)]);
        assert_eq!(outside[1].calls.len(), 1);
        // Each earlier call takes one record at most.
        let twice = read_in_order(vec![
            caller(1, (10, 50), ARGS),
            client(2, (20, 30), ARGS),
            client(3, (32, 40), ARGS),
        ]);
        assert!(twice[1].calls.is_empty());
        assert_eq!(twice[2].calls.len(), 1);
    }

    #[test]
    fn a_client_trace_read_first_waits_for_the_caller() {
        // Held (with the trace after it) until the caller's trace comes,
        // then read again; the output keeps the input's order.
        let got = read_in_order(vec![
            client(2, (20, 40), ARGS),
            client(3, (60, 70), r#"{"room": 14}"#),
            caller(1, (10, 50), ARGS),
        ]);
        let ids: Vec<u8> = got.iter().map(|a| a.calls.len() as u8).collect();
        assert_eq!(ids, [0, 1, 1]);
        assert!(
            got[0].notes[0].contains("not counted again"),
            "{:?}",
            got[0].notes
        );
        // No caller comes: every held trace is given at the end, as read.
        let alone = read_in_order(vec![client(2, (20, 40), ARGS), client(3, (60, 70), ARGS)]);
        assert_eq!(
            alone.iter().map(|a| a.calls.len()).collect::<Vec<_>>(),
            [1, 1]
        );
    }
}
