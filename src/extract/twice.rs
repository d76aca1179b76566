//! One call recorded in two traces under its call id (docs/conventions.md,
//! "One call, several spans", "One call id in two traces").
//!
//! Two instrumentations of one process may each open traces of their own
//! for the same model calls: an LLM client's instrumentation writes each
//! model call as a trace while the framework's spans (its tool spans among
//! them) form another (Google ADK under Laminar's LiteLLM integration), or
//! two instrumentations both record every model call, each in its own trace
//! (a framework's and its client's). The calls rebuilt from one conversation
//! then repeat, in another trace, a call another record already shows.
//!
//! Reading the traces in input order ([`super::carry::Carry`]), a call of a
//! trace is the record of a call an earlier trace counted when all of these
//! hold: at least one of the two was rebuilt from the conversation, both
//! have the same call id (the model's) and tool name, their arguments are
//! equal or one of them has none, both ran in the same process (equal
//! resource attributes), and the two traces overlap in time. It is then not
//! counted again (a note names the trace that counts it). Each earlier call
//! takes one record at most, so two calls never merge into one, and the same
//! id in runs one after the other (a scripted model reusing its ids) stays
//! two calls.
//!
//! A tool span's call without a call id of its own that its trace's model
//! output asked for under one (joined by name, in order:
//! `conversation::ask_ids`) goes by that id here (`Echo::also`), so that
//! a model call of another trace replaying it under the id is the same
//! call by the rules above (the OpenAI Agents SDK's function spans beside
//! its client instrumentation's traces of the model calls, under Laminar).
//!
//! A streamed model call may be recorded in two halves, each a trace of its
//! own (Logfire's OpenAI integration: the request's span, then a span of
//! the streamed response), both carrying the request. Two traces one after
//! the other are then one record too when both calls were rebuilt from the
//! conversation, the earlier trace recorded a request and no model output
//! (its output is the later trace's), and no model output of the process
//! asked for that call id between the two ([`adjacent`]): a run of its own
//! reusing the id has its model ask for it again first.
//!
//! A tool span may also be read after the request that carries its result
//! while no model output read so far asked for the call (exports out of
//! order in a file): the span going by the model's own call id and ended
//! before that request is the call's execution ([`ran_before_answer`]).

use super::merge::same_args;
use super::open::{
    resource_key, Echo, OpenAsk, ASKED_ARGS_FORM, ASKED_SPAN_FORM, BETWEEN_FORM, HALVES_FORM,
    SPAN_BETWEEN_FORM, TWICE_FORM,
};
use super::requested::Asked;
use serde_json::Value;

/// What [`same_call`] needs of the two calls' kinds, for a carry that
/// compares a call with many kept ones: both read from spans and one of
/// them with a call id ([`nested`]), or one of them rebuilt from the
/// conversation and `later` with an id (its own, or its trace's ask's:
/// [`ids_meet`]). Two span calls with ids (the
/// usual pair) are never the same call: no further test runs for them.
#[inline]
pub(crate) fn may_be_same(later: &Echo, earlier: &Echo) -> bool {
    if later.from_conversation || earlier.from_conversation {
        // A span's call knows the model's id by its trace's ask
        // (`conversation::ask_ids`).
        later.id.is_some() || later.also.is_some()
    } else {
        later.id.is_none() != earlier.id.is_none()
    }
}

/// Whether `later`, a call of the trace read, is another record of
/// `earlier`, a call an earlier trace counted (see the module's doc).
///
/// Both records name the same tool in every case: the carry compares only
/// kept calls of the same name (`carry::call_keys`) with this.
pub(crate) fn same_call(later: &Echo, earlier: &Echo) -> bool {
    // The cheap tests first: every call a trace reads from its spans is
    // compared with the calls kept from the traces before it.
    if later.trace_id == earlier.trace_id {
        return false;
    }
    let same_process = || super::open::same_process(&later.resource, &earlier.resource);
    let args = || {
        later.args.is_null()
            || earlier.args.is_null()
            || same_args(&later.args, &earlier.args)
            || same_text_args(&later.args, &earlier.args)
    };
    if nested(later, earlier) {
        return args() && same_process();
    }
    let overlap = || later.window.0 <= earlier.window.1 && earlier.window.0 <= later.window.1;
    (later.from_conversation || earlier.from_conversation)
        && ids_meet(later, earlier)
        && later.name == earlier.name
        && args()
        && same_process()
        && (overlap()
            || adjacent(later, earlier).is_some()
            || between_either(later, earlier)
            || ran_before_answer(later, earlier))
}

/// Whether `later` (with a call id) and `earlier` go by the same call id,
/// or one of them by the id the other's result answers: a turn echoed
/// under other ids (`conversation::echoed`) keeps the model output's ids
/// (Responses item ids, `fc_...`) while another writer's record of the
/// same model calls goes by the request's (`call_...`).
fn ids_meet(later: &Echo, earlier: &Echo) -> bool {
    let is = |x: &Option<String>, y: &str| x.as_deref() == Some(y);
    let Some(id) = later.id.as_deref() else {
        // A span's call without an id of its own, joined to its trace's
        // ask (`conversation::ask_ids`), meets the conversation's record
        // of that ask by its id.
        return !later.from_conversation
            && earlier.from_conversation
            && later
                .also
                .as_deref()
                .is_some_and(|also| is(&earlier.id, also));
    };
    is(&earlier.id, id)
        || is(&earlier.also, id)
        || later
            .also
            .as_deref()
            .is_some_and(|also| is(&earlier.id, also))
}

/// Whether one of `a` and `b` is the JSON text of an object the other is
/// (a span that wrote its arguments as JSON text: Laminar's function spans
/// of the OpenAI Agents SDK), the conversation's record holding the object.
fn same_text_args(a: &Value, b: &Value) -> bool {
    let one = |text: &Value, whole: &Value| {
        whole.is_object()
            && text
                .as_str()
                .filter(|t| t.trim_start().starts_with('{'))
                .and_then(|t| serde_json::from_str::<Value>(t).ok())
                .is_some_and(|v| crate::value::json_eq(&v, whole))
    };
    one(a, b) || one(b, a)
}

/// Whether two spans starting at `a` and `b` may be two records of one
/// execution ([`nested`]): one opened strictly after the other, within
/// [`NESTED_START_GAP`].
#[inline]
pub(crate) fn may_nest(a: u64, b: u64) -> bool {
    a != b && a.abs_diff(b) <= NESTED_START_GAP
}

/// Whether `later` and `earlier` are two tool spans of one execution in
/// two traces: a framework's own span and an instrumentation's wrapper
/// around the same function, each exporting a trace of its own (Strands'
/// `execute_tool` beside Monocle's tool span). Both read from spans, the
/// same tool, a call id on one of them only, one span runs wholly within
/// the other, opened after it, and both start within [`NESTED_START_GAP`]
/// (the caller checks arguments and process).
fn nested(later: &Echo, earlier: &Echo) -> bool {
    // Opened strictly after the other: one tracer's span opens before it
    // calls into the code the other's wraps. Spans that start at the same
    // instant (made-up timelines, coarse clocks) are not told apart so.
    let within = |a: &Echo, b: &Echo| b.start < a.start && a.end <= b.end;
    let close = later.start.abs_diff(earlier.start) <= NESTED_START_GAP;
    !later.from_conversation
        && !earlier.from_conversation
        // The wrapper knows no call id, the framework's span does: two
        // spans without ids, or with two, are two records of their own.
        && (later.id.is_none() != earlier.id.is_none())
        && close
        && (within(later, earlier) || within(earlier, later))
        && later.name == earlier.name
}

/// Whether `earlier`, a tool span's call, is the execution of `later`, a
/// call rebuilt from the conversation that a model output asked for at
/// `asked` (the end of that output): the same process, the span ran
/// between the model's asking and the request that carries the result
/// (`call_window::answered_at`: `later`'s start, as the carry compares it,
/// `echo::echo_start`; its end for a call asked and answered in one trace,
/// `carry::lone_span`), and either
/// the span has no call id and the same tool and arguments (both
/// recorded), or it has the conversation's call id and arguments none or
/// the same (its name may be a wrapper's). Each model call and each tool
/// step its own trace (Monocle's LangChain `AgentExecutor`; a LangChain.js
/// hand loop under ADOT, whose tool spans carry the model's ids): the
/// tool's trace comes between the two.
pub(crate) fn ran_between(later: &Echo, earlier: &Echo, asked: u64) -> bool {
    let same = match &earlier.id {
        None => {
            later.name == earlier.name
                && !later.args.is_null()
                && same_args(&later.args, &earlier.args)
        }
        Some(id) => {
            // Or by the id of the output that asked for it (`Echo::also`).
            (later.id.as_ref() == Some(id) || later.also.as_ref() == Some(id))
                && (earlier.args.is_null() || same_args(&later.args, &earlier.args))
        }
    };
    later.from_conversation
        && !earlier.from_conversation
        && later.id.is_some()
        && same
        && asked <= earlier.start
        && earlier.end <= super::call_window::answered_at(later)
        && super::open::same_process(&later.resource, &earlier.resource)
        // A span that took the model's arguments through a wrapper
        // (`wrapped_args`): its result, if any, the request's.
        && super::wrapped_args::took_agrees(later, earlier)
}

/// Whether `earlier`, a tool span's call, is the execution of `later`, a
/// call rebuilt from the conversation under the model's own call id, that
/// its trace retold from a request's history (`Open::retold`) and no model
/// output the carry kept asked for (its model call recorded the
/// request and no output: agentrace's OpenAI patch without a root span,
/// each span a trace of its own): [`ran_between`] without the asking's
/// bound. The carry takes the last such span before the request, the
/// execution nearest the request that carries its result.
pub(crate) fn ran_unasked(later: &Echo, earlier: &Echo) -> bool {
    later
        .id
        .as_deref()
        .is_some_and(|id| !super::conversation::is_made(id))
        && earlier.id.is_none()
        && ran_between(later, earlier, 0)
}

/// Whether one of `a` and `b` is a call rebuilt from the conversation whose
/// asking the carry has found (`Echo::asked`) and the other the tool span
/// that ran it ([`ran_between`]), whichever trace came first in the input:
/// the tool span's trace may be read before or after the trace that counts
/// the call from the conversation (MCP clients whose spans are traces of
/// their own included: Laminar's).
pub(crate) fn between_either(a: &Echo, b: &Echo) -> bool {
    let one = |conv: &Echo, span: &Echo| conv.asked.is_some_and(|t| ran_between(conv, span, t));
    one(a, b) || one(b, a)
}

/// Whether `later`, a tool span's call, ran `earlier`, a call an earlier
/// trace counts from the conversation and no model output read so far
/// asked for (each model call a trace of its own, exported out of order:
/// LangGraph.js under OpenLLMetry-JS, the last model call first): the span
/// goes by the model's own call id (its own, or its result record's:
/// `record_ids`), which stands for the asking's bound in [`ran_between`].
pub(crate) fn ran_before_answer(later: &Echo, earlier: &Echo) -> bool {
    let Some(id) = earlier.id.as_deref() else {
        return false;
    };
    earlier.asked.is_none()
        && !super::conversation::is_made(id)
        && (later.id.as_deref() == Some(id) || later.also.as_deref() == Some(id))
        && ran_between(earlier, later, 0)
}

/// The carried entry saying that `span`, a tool span's call of the trace
/// read, is the execution of `counted`, a call another trace counts from
/// the conversation ([`between_either`]).
pub(crate) fn span_counted(span: &Echo, counted: &Echo) -> OpenAsk {
    OpenAsk {
        asked: Asked {
            // The span's own id, for the note (it joined by that id).
            id: span.id.clone(),
            name: span.name.clone(),
            args: Value::Null,
        },
        form: SPAN_BETWEEN_FORM,
        trace_id: counted.trace_id,
        span_id: span.span_id,
        end_time_unix_nano: counted.end,
        run: 0,
    }
}

/// Whether `span`, a tool span's call with a call id, ran `ask`, a call an
/// earlier trace's model output asked for and left open (no later request
/// in that trace carried its result), though the span names the tool
/// otherwise: the same call id, the span's arguments none or the model's,
/// the same process, and the span started after the model's answer ended.
/// Each model call and each tool execution its own trace, the tool span
/// named after the wrapper class that ran the tool (OpenLIT's LangChain
/// integration: `DynamicStructuredTool`, its result `[object
/// ToolMessage]`): the request carrying the result counts the call under
/// the model's name, with the result the model saw, so the span's call is
/// not counted again. A span of the model's tool name is left to the
/// other joins. A span named after the class in a trace that also records
/// model calls (`tool_only` false: a run resumed in a trace of its own) may
/// hold other arguments than the model's, a human having edited them: the
/// call id says which call it ran (`extract::resumed`).
pub(crate) fn runs_ask(span: &Echo, ask: &OpenAsk, tool_only: bool) -> bool {
    let edited = !tool_only && super::placeholder_names::is_placeholder(&span.name);
    !span.from_conversation
        && span.id.is_some()
        && span.id == ask.asked.id
        && span.name != ask.asked.name
        && ask.end_time_unix_nano <= span.start
        && (span.args.is_null() || edited || same_args(&span.args, &ask.asked.args))
        && in_run_of(span, ask)
}

/// Whether `span` ran in the process whose model output asked for `ask`.
fn in_run_of(span: &Echo, ask: &OpenAsk) -> bool {
    span.resource
        .as_deref()
        .is_some_and(|r| resource_key(r) == ask.run)
}

/// The carried entry saying that `span` ran `ask` ([`runs_ask`]).
pub(crate) fn span_of_ask(span: &Echo, ask: &OpenAsk) -> OpenAsk {
    OpenAsk {
        asked: Asked {
            id: ask.asked.id.clone(),
            name: span.name.clone(),
            // The model's name, for the note.
            args: Value::String(ask.asked.name.clone()),
        },
        form: ASKED_SPAN_FORM,
        trace_id: ask.trace_id,
        span_id: span.span_id,
        end_time_unix_nano: ask.end_time_unix_nano,
        run: 0,
    }
}

/// Whether `span`, a tool span's call without a call id, ran `ask`, a call
/// an earlier trace's model output asked for and left open, and wrote its
/// arguments, an object of one field, as that field's bare value
/// ([`super::merge::bare_field`]): the same tool, the same process, the
/// span started after the model's answer ended. Each model call and each
/// tool call a trace of its own (a LangChain.js loop under OpenInference:
/// `{"town": "Lisbon"}` recorded as `Lisbon`): the span's call takes the
/// model's arguments, so that the request carrying the result finds the
/// same call in it ([`ran_between`]).
pub(crate) fn renders_ask(span: &Echo, ask: &OpenAsk) -> bool {
    !span.from_conversation
        && span.id.is_none()
        && span.name == ask.asked.name
        && ask.end_time_unix_nano <= span.start
        && super::merge::bare_field(&span.args, &ask.asked.args)
        && in_run_of(span, ask)
}

/// The carried entry saying that `span` ran `ask` and takes its arguments
/// ([`renders_ask`]).
pub(crate) fn args_of_ask(span: &Echo, ask: &OpenAsk) -> OpenAsk {
    OpenAsk {
        asked: Asked {
            id: None,
            name: span.name.clone(),
            args: ask.asked.args.clone(),
        },
        form: ASKED_ARGS_FORM,
        trace_id: ask.trace_id,
        span_id: span.span_id,
        end_time_unix_nano: ask.end_time_unix_nano,
        run: 0,
    }
}

/// How far apart in time two spans of one execution start at most (ns): a
/// wrapper around a tool function and the framework's span around the
/// same call open a few calls apart (under a millisecond in the runs
/// seen); calls of their own rarely start so close.
const NESTED_START_GAP: u64 = 20_000_000;

/// When `earlier`'s trace may be the first half of the streamed model call
/// `later`'s trace ends (see the module's doc): the time between the two,
/// in which no model output may have asked for the call id again.
pub(crate) fn adjacent(later: &Echo, earlier: &Echo) -> Option<(u64, u64)> {
    (earlier.outputless
        && earlier.from_conversation
        && later.from_conversation
        && earlier.window.1 <= later.window.0)
        .then_some((earlier.window.1, later.window.0))
}

/// The carried entry saying that `later` was counted as `earlier`
/// (`between`: matched by [`ran_between`]).
pub(crate) fn carried(later: &Echo, earlier: &Echo, between: bool) -> OpenAsk {
    // Matched as the tool span run between the asking and the request, the
    // traces apart in time (a span with the conversation's call id).
    let overlap = later.window.0 <= earlier.window.1 && earlier.window.0 <= later.window.1;
    let ran = !overlap && (between_either(later, earlier) || ran_before_answer(later, earlier));
    if ran && !later.from_conversation {
        return span_counted(later, earlier);
    }
    let form = match adjacent(later, earlier) {
        _ if between || ran => BETWEEN_FORM,
        Some(_) => HALVES_FORM,
        None => TWICE_FORM,
    };
    // A span matched by the call id (`carry::id_span`) names it, for the
    // note: its arguments may be none.
    let id = match &earlier.id {
        Some(id) if between || ran => Value::String(id.clone()),
        // Met by the id `later`'s result answers (`ids_meet`): that id,
        // for the note.
        Some(id) if form == TWICE_FORM && later.also.as_ref() == Some(id) => {
            Value::String(id.clone())
        }
        _ => Value::Null,
    };
    OpenAsk::of_echo(later, earlier, id, form)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use crate::assemble::{Trace, TraceId};
    use crate::extract::test_support::{in_process, read_in_order};
    use crate::extract::tests::sp;
    use crate::extract::Analysis;

    /// A made-up vendor's model call as a trace of its own: its request
    /// carries `result` for call `id` after the model's turn asking for
    /// it; its output asks for nothing more.
    fn model_call(trace: u8, when: (u64, u64), process: &str, id: &str) -> Trace {
        let input = json!([
            {"role": "user", "content": "book room 12"},
            {"role": "assistant", "tool_calls": [{"id": id, "type": "function",
                "function": {"name": "book_room", "arguments": "{\"room\": 12}"}}]},
            {"role": "tool", "tool_call_id": id, "content": "booked"},
        ])
        .to_string();
        let output = json!([{"role": "assistant", "content": "done"}]).to_string();
        let s = sp(
            1,
            None,
            when,
            "acme.chat",
            &[
                ("gen_ai.operation.name", "chat"),
                ("gen_ai.input.messages", &input),
                ("gen_ai.output.messages", &output),
            ],
        );
        Trace::new(TraceId([trace; 16]), vec![in_process(s, process)], 0)
    }

    /// A made-up framework's run with one tool span naming the call id but
    /// not the arguments.
    fn framework(trace: u8, when: (u64, u64), process: &str, id: &str) -> Trace {
        let run = sp(
            1,
            None,
            when,
            "invoke_agent desk",
            &[
                ("gen_ai.operation.name", "invoke_agent"),
                ("gen_ai.agent.name", "desk"),
            ],
        );
        let tool = sp(
            2,
            Some(1),
            (when.0 + 10, when.0 + 20),
            "execute_tool book_room",
            &[
                ("gen_ai.operation.name", "execute_tool"),
                ("gen_ai.tool.name", "book_room"),
                ("gen_ai.tool.call.id", id),
            ],
        );
        let spans = vec![in_process(run, process), in_process(tool, process)];
        Trace::new(TraceId([trace; 16]), spans, 0)
    }

    /// A made-up vendor's streamed model call in two halves, each a trace:
    /// the request's span (no output), then the response's (the request
    /// again and the output); the request carries `id`'s result.
    fn halves(traces: (u8, u8), at: u64, process: &str, id: &str) -> [Trace; 2] {
        let full = model_call(traces.1, (at + 20, at + 20), process, id);
        let input = full.spans[0]
            .attr_str("gen_ai.input.messages")
            .unwrap_or("");
        let request = sp(
            1,
            None,
            (at, at + 10),
            "acme.chat",
            &[
                ("gen_ai.operation.name", "chat"),
                ("gen_ai.input.messages", input),
            ],
        );
        let request = in_process(request, process);
        [Trace::new(TraceId([traces.0; 16]), vec![request], 0), full]
    }

    #[test]
    fn the_two_halves_of_a_streamed_model_call_count_it_once() {
        let got = read_in_order(halves((1, 2), 30, "p", "call_7").into());
        assert_eq!(counts(&got), [1, 0]);
        assert!(
            got[1].notes.iter().any(|n| n.contains("first half")),
            "{:?}",
            got[1].notes
        );
        // Two complete model calls one after the other stay two calls.
        let [_, a] = halves((1, 2), 30, "p", "call_7");
        let [_, b] = halves((3, 4), 60, "p", "call_7");
        assert_eq!(counts(&read_in_order(vec![a, b])), [1, 1]);
        // Another process, or the model asking for the id again between
        // the halves (a run of its own reusing it), is no half.
        let [first, _] = halves((1, 2), 30, "p", "call_7");
        let [_, other] = halves((3, 4), 30, "q", "call_7");
        assert_eq!(counts(&read_in_order(vec![first, other])), [1, 1]);
        let [first, _] = halves((1, 2), 30, "p", "call_7");
        let [_, later] = halves((3, 4), 60, "p", "call_7");
        let asking = sp(
            1,
            None,
            (45, 50),
            "acme.chat",
            &[
                ("gen_ai.operation.name", "chat"),
                (
                    "gen_ai.output.messages",
                    &json!([{"role": "assistant", "tool_calls": [{"id": "call_7",
                        "type": "function", "function": {"name": "book_room",
                        "arguments": "{\"room\": 12}"}}]}])
                    .to_string(),
                ),
            ],
        );
        let asking = Trace::new(TraceId([9; 16]), vec![in_process(asking, "p")], 0);
        assert_eq!(
            counts(&read_in_order(vec![first, asking, later])),
            [1, 0, 1]
        );
    }

    /// A made-up vendor's tool span alone in its trace, with the model's
    /// call id when `id` is given.
    fn lone_tool(trace: u8, when: (u64, u64), process: &str, id: Option<&str>) -> Trace {
        let mut attrs = vec![
            ("gen_ai.operation.name", "execute_tool"),
            ("gen_ai.tool.name", "book_room"),
            ("gen_ai.tool.call.arguments", "{\"room\": 12}"),
        ];
        attrs.extend(id.map(|id| ("gen_ai.tool.call.id", id)));
        let s = sp(1, None, when, "execute_tool book_room", &attrs);
        Trace::new(TraceId([trace; 16]), vec![in_process(s, process)], 0)
    }

    #[test]
    fn a_tool_span_read_after_the_request_carrying_its_result_goes_by_the_call_id() {
        // The answering model call exported first, no asking read yet: the
        // tool span of the model's call id that ran before it is its call.
        let got = read_in_order(vec![
            model_call(1, (100, 110), "p", "call_7"),
            lone_tool(2, (50, 60), "p", Some("call_7")),
        ]);
        assert_eq!(counts(&got), [1, 0]);
        assert!(
            got[1].notes.iter().any(|n| n.contains("not counted again")),
            "{:?}",
            got[1].notes
        );
        // Run after the request, in another process, or without the id
        // (nothing bounds when the model asked): a call of its own.
        for (when, process, id) in [
            ((120, 130), "p", Some("call_7")),
            ((50, 60), "q", Some("call_7")),
            ((50, 60), "p", Some("call_8")),
            ((50, 60), "p", None),
        ] {
            let got = read_in_order(vec![
                model_call(1, (100, 110), "p", "call_7"),
                lone_tool(2, when, process, id),
            ]);
            assert_eq!(counts(&got), [1, 1], "{when:?} {process} {id:?}");
        }
    }

    fn counts(got: &[Analysis]) -> Vec<usize> {
        got.iter().map(|a| a.calls.len()).collect()
    }

    #[test]
    fn a_conversation_call_and_a_tool_span_of_one_id_in_two_traces_count_once() {
        // The model call inside the framework's run, in either order.
        let got = read_in_order(vec![
            model_call(1, (30, 40), "p", "call_7"),
            framework(2, (0, 100), "p", "call_7"),
        ]);
        assert_eq!(counts(&got), [1, 0]);
        assert_eq!(got[0].calls[0].args.value(), Some(&json!({"room": 12})));
        assert!(
            got[1].notes.iter().any(|n| n.contains("not counted again")),
            "{:?}",
            got[1].notes
        );
        let got = read_in_order(vec![
            framework(2, (0, 100), "p", "call_7"),
            model_call(1, (30, 40), "p", "call_7"),
        ]);
        assert_eq!(counts(&got), [1, 0]);
    }

    #[test]
    fn arguments_written_as_json_text_meet_the_object_they_encode() {
        use super::same_text_args;
        let object = json!({"desk": 4, "floor": "B"});
        assert!(same_text_args(
            &json!("{\"floor\": \"B\", \"desk\": 4}"),
            &object
        ));
        assert!(same_text_args(
            &object,
            &json!(" {\"desk\":4,\"floor\":\"B\"}")
        ));
        // Other values, text that is no object, two texts: no.
        assert!(!same_text_args(
            &json!("{\"desk\": 5, \"floor\": \"B\"}"),
            &object
        ));
        assert!(!same_text_args(&json!("desk 4"), &object));
        assert!(!same_text_args(&json!("[4]"), &json!([4])));
    }

    #[test]
    fn two_instrumentations_of_one_model_call_count_it_once() {
        let got = read_in_order(vec![
            model_call(1, (30, 40), "p", "call_7"),
            model_call(2, (29, 41), "p", "call_7"),
        ]);
        assert_eq!(counts(&got), [1, 0]);
    }

    #[test]
    fn another_id_process_or_time_stays_a_call() {
        let other_id = read_in_order(vec![
            model_call(1, (30, 40), "p", "call_7"),
            framework(2, (0, 100), "p", "call_8"),
        ]);
        assert_eq!(counts(&other_id), [1, 1]);
        let other_process = read_in_order(vec![
            model_call(1, (30, 40), "p", "call_7"),
            model_call(2, (30, 40), "q", "call_7"),
        ]);
        assert_eq!(counts(&other_process), [1, 1]);
        // A scripted model giving every run the same ids: runs one after
        // the other are calls of their own.
        let later_run = read_in_order(vec![
            model_call(1, (30, 40), "p", "call_7"),
            model_call(2, (50, 60), "p", "call_7"),
        ]);
        assert_eq!(counts(&later_run), [1, 1]);
    }

    /// A made-up instrumentation's wrapper span around a tool function, in
    /// a trace of its own: the arguments, no call id.
    fn wrapper(trace: u8, when: (u64, u64), process: &str, args: &str) -> Trace {
        let s = sp(
            1,
            None,
            when,
            "acme.Tool.run",
            &[
                ("acme.span.kind", "tool"),
                ("acme.tool.name", "book_room"),
                ("acme.input", args),
            ],
        );
        Trace::new(TraceId([trace; 16]), vec![in_process(s, process)], 0)
    }

    #[test]
    fn two_tool_spans_of_one_execution_in_two_traces_count_once() {
        // The framework's span (call id, no arguments) runs within the
        // wrapper's, in either order; the call keeps the first trace's.
        let got = read_in_order(vec![
            wrapper(1, (105, 125), "p", r#"{"room": 12}"#),
            framework(2, (100, 200), "p", "call_7"),
        ]);
        assert_eq!(counts(&got), [1, 0]);
        assert_eq!(got[0].calls[0].args.value(), Some(&json!({"room": 12})));
        let got = read_in_order(vec![
            framework(2, (100, 200), "p", "call_7"),
            wrapper(1, (105, 125), "p", r#"{"room": 12}"#),
        ]);
        assert_eq!(counts(&got), [1, 0]);
        // Not within each other, or another process: two.
        for (when, process) in [((120, 150), "p"), ((110, 130), "q")] {
            let got = read_in_order(vec![
                framework(2, (105, 125), "p", "call_7"),
                wrapper(1, when, process, r#"{"room": 12}"#),
            ]);
            assert_eq!(counts(&got), [1, 1], "{when:?} {process}");
        }
        // Opened at the same instant: not told apart from two calls.
        let got = read_in_order(vec![
            wrapper(1, (105, 125), "p", r#"{"room": 12}"#),
            framework(2, (95, 200), "p", "call_7"),
        ]);
        assert_eq!(counts(&got), [1, 1]);
        // Two spans without a call id (or with two) are two records, even
        // within each other with the same arguments.
        let got = read_in_order(vec![
            wrapper(1, (105, 125), "p", r#"{"room": 12}"#),
            wrapper(2, (106, 124), "p", r#"{"room": 12}"#),
        ]);
        assert_eq!(counts(&got), [1, 1]);
    }

    /// A made-up vendor's model call, a trace of its own, whose output
    /// asks for `book_room` under call `id`.
    fn asking(trace: u8, when: (u64, u64), process: &str, id: &str) -> Trace {
        let output = json!([{"role": "assistant", "tool_calls": [{"id": id, "type": "function",
            "function": {"name": "book_room", "arguments": "{\"room\": 12}"}}]}]);
        let s = sp(
            1,
            None,
            when,
            "acme.chat",
            &[
                ("gen_ai.operation.name", "chat"),
                (
                    "gen_ai.input.messages",
                    &json!([{"role": "user", "content": "book room 12"}]).to_string(),
                ),
                ("gen_ai.output.messages", &output.to_string()),
            ],
        );
        Trace::new(TraceId([trace; 16]), vec![in_process(s, process)], 0)
    }

    /// [`model_call`] whose history lost the ids of the call and its result.
    fn answered_without_ids(trace: u8, when: (u64, u64), process: &str) -> Trace {
        let input = json!([
            {"role": "user", "content": "book room 12"},
            {"role": "assistant", "tool_calls": [{"type": "function",
                "function": {"name": "book_room", "arguments": "{\"room\": 12}"}}]},
            {"role": "tool", "content": "booked"},
        ]);
        let output = json!([{"role": "assistant", "content": "done"}]);
        let s = sp(
            1,
            None,
            when,
            "acme.chat",
            &[
                ("gen_ai.operation.name", "chat"),
                ("gen_ai.input.messages", &input.to_string()),
                ("gen_ai.output.messages", &output.to_string()),
            ],
        );
        Trace::new(TraceId([trace; 16]), vec![in_process(s, process)], 0)
    }

    /// The asking trace, the tool span's trace and the answering trace, in
    /// input order with the tool span's second or last.
    fn between_in_order(
        asking_t: Trace,
        tool: Trace,
        answered: Trace,
        tool_last: bool,
    ) -> Vec<Analysis> {
        read_in_order(if tool_last {
            vec![asking_t, answered, tool]
        } else {
            vec![asking_t, tool, answered]
        })
    }

    #[test]
    fn a_tool_span_without_id_between_the_asking_and_the_answering_trace_is_the_call() {
        // Each model call and each tool step a trace of its own: the tool
        // span (no call id) runs after the model asked and before the
        // request carrying the result, which retells the call with or
        // without its id. Read in either order (an exporter may send the
        // tool span's trace last), the call is counted once, where the
        // conversation counts it.
        let room = r#"{"room": 12}"#;
        for (tool_last, note) in [
            (false, "conversation's record"),
            (true, "ran after the model"),
        ] {
            for answered in [
                model_call(3, (40, 50), "p", "call_7"),
                answered_without_ids(3, (40, 50), "p"),
            ] {
                let got = between_in_order(
                    asking(1, (0, 10), "p", "call_7"),
                    wrapper(2, (20, 30), "p", room),
                    answered,
                    tool_last,
                );
                // The third trace read holds the note either way: the
                // answering one, or the tool span's read after it.
                assert_eq!(counts(&got), [0, 1, 0], "tool last: {tool_last}");
                let notes = &got[2].notes;
                assert!(notes.iter().any(|n| n.contains(note)), "{notes:?}");
            }
            // Before the model asked, other arguments, another process: two.
            for (when, args, process) in [
                ((5, 8), room, "p"),
                ((20, 30), r#"{"room": 14}"#, "p"),
                ((20, 30), room, "q"),
            ] {
                let got = between_in_order(
                    asking(1, (0, 10), "p", "call_7"),
                    wrapper(2, when, process, args),
                    model_call(3, (40, 50), "p", "call_7"),
                    tool_last,
                );
                assert_eq!(
                    counts(&got),
                    [0, 1, 1],
                    "{when:?} {args} {process} {tool_last}"
                );
            }
        }
    }

    #[test]
    fn a_tool_span_writing_a_one_field_object_as_its_value_is_the_call() {
        // The tool span records `{"room": 12}` as the bare value (text or
        // number): the same arguments, and the call shows the model's.
        // Another value, or another process, stays a call of its own.
        let room = json!({"room": 12});
        for (args, process, want, shown) in [
            ("12", "p", [0, 1, 0], room.clone()),
            ("\"12\"", "p", [0, 1, 0], room.clone()),
            ("12", "q", [0, 1, 1], json!(12)),
            ("13", "p", [0, 1, 1], json!(13)),
        ] {
            let got = between_in_order(
                asking(1, (0, 10), "p", "call_7"),
                wrapper(2, (20, 30), process, args),
                model_call(3, (40, 50), "p", "call_7"),
                false,
            );
            assert_eq!(counts(&got), want, "{args} {process}");
            assert_eq!(
                got[1].calls[0].args.value(),
                Some(&shown),
                "{args} {process}"
            );
        }
    }

    /// A made-up framework's tool span, a trace of its own, named after the
    /// wrapper class that ran the tool, with the model's call id.
    fn class_named(trace: u8, when: (u64, u64), process: &str, id: &str, args: &str) -> Trace {
        let s = sp(
            1,
            None,
            when,
            "execute_tool AcmeStructuredTool",
            &[
                ("acme.span.kind", "tool"),
                ("acme.tool.name", "AcmeStructuredTool"),
                ("acme.input", args),
                ("acme.output", "[object AcmeMessage]"),
                ("gen_ai.tool.call.id", id),
            ],
        );
        Trace::new(TraceId([trace; 16]), vec![in_process(s, process)], 0)
    }

    #[test]
    fn a_class_named_tool_span_of_an_open_call_id_is_the_call() {
        // Each model call and each tool span a trace of its own; the tool
        // span names the wrapper class, not the tool, and has the model's
        // call id: the request carrying the result counts the call, under
        // the model's name and with the result the model saw.
        let room = r#"{"room": 12}"#;
        for answered in [
            model_call(3, (40, 50), "p", "call_7"),
            answered_without_ids(3, (40, 50), "p"),
        ] {
            let got = read_in_order(vec![
                asking(1, (0, 10), "p", "call_7"),
                class_named(2, (20, 30), "p", "call_7", room),
                answered,
            ]);
            assert_eq!(counts(&got), [0, 0, 1]);
            assert_eq!(got[2].calls[0].name, "book_room");
            let result = got[2].calls[0].result.as_ref().map(|r| r.to_value());
            assert_eq!(result, Some(json!("booked")));
            let notes = &got[1].notes;
            assert!(
                notes.iter().any(|n| n.contains("asked for as `book_room`")),
                "{notes:?}"
            );
        }
        // Another call id, other arguments, another process, or run before
        // the model asked: the span's call is a call of its own.
        for (id, when, args, process) in [
            ("call_8", (20, 30), room, "p"),
            ("call_7", (20, 30), r#"{"room": 14}"#, "p"),
            ("call_7", (20, 30), room, "q"),
            ("call_7", (5, 8), room, "p"),
        ] {
            let got = read_in_order(vec![
                asking(1, (0, 10), "p", "call_7"),
                class_named(2, when, process, id, args),
                model_call(3, (40, 50), "p", "call_7"),
            ]);
            assert_eq!(counts(&got), [0, 1, 1], "{id} {when:?} {args} {process}");
        }
    }

    /// A made-up MCP client's span of a tool call, a trace of its own (no
    /// model call, no agent run): the arguments, no call id.
    fn mcp_client(trace: u8, when: (u64, u64), process: &str, args: &str) -> Trace {
        let s = sp(
            1,
            None,
            when,
            "book_room.tool",
            &[
                ("mcp.method.name", "tools/call"),
                ("acme.span.kind", "tool"),
                ("acme.tool.name", "book_room"),
                ("acme.input", args),
            ],
        );
        Trace::new(TraceId([trace; 16]), vec![in_process(s, process)], 0)
    }

    #[test]
    fn an_mcp_clients_trace_between_the_asking_and_the_answering_trace_is_the_call() {
        // Every span a trace of its own, the client's span without a call
        // id: one call, counted from the conversation, in either order.
        let room = r#"{"room": 12}"#;
        let got = read_in_order(vec![
            asking(1, (0, 10), "p", "call_7"),
            mcp_client(2, (20, 30), "p", room),
            model_call(3, (40, 50), "p", "call_7"),
        ]);
        assert_eq!(counts(&got), [0, 0, 1]);
        assert!(
            got[1]
                .notes
                .iter()
                .any(|n| n.contains("ran after the model")),
            "{:?}",
            got[1].notes
        );
        let got = read_in_order(vec![
            asking(1, (0, 10), "p", "call_7"),
            model_call(3, (40, 50), "p", "call_7"),
            mcp_client(2, (20, 30), "p", room),
        ]);
        assert_eq!(counts(&got), [0, 1, 0]);
        // Before the model asked, other arguments, another process: two.
        for (when, args, process) in [
            ((5, 8), room, "p"),
            ((20, 30), r#"{"room": 14}"#, "p"),
            ((20, 30), room, "q"),
        ] {
            let got = read_in_order(vec![
                asking(1, (0, 10), "p", "call_7"),
                mcp_client(2, when, process, args),
                model_call(3, (40, 50), "p", "call_7"),
            ]);
            assert_eq!(
                counts(&got).iter().sum::<usize>(),
                2,
                "{when:?} {args} {process}"
            );
        }
    }
}
