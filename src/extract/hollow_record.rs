//! A call's hollow second record inside its complete one (docs/conventions.md,
//! "One call, several spans", "A hollow record within the call").
//!
//! A tool server that traces its own side may record each call a second
//! time with nothing but the tool's name: mcp 2.x's Python SDK writes a
//! SERVER span `tools/call {tool}` with `gen_ai.operation.name =
//! execute_tool` and `gen_ai.tool.name`, no arguments, result or call id,
//! while the client's instrumentation records the call in full. The two
//! share no id and do not nest: the server's span is a sibling in another
//! part of the trace, or the root of a trace of its own when the request
//! reaches the server outside the client's context. Only time links them:
//! the server ran the tool within the client's call.
//!
//! A *hollow* record is a call read from a span with no arguments, no
//! result, no error and no call id. It is another record of a *complete*
//! call (read from a span, with arguments, a result or a call id) of the
//! same tool when its span lies wholly within that call's span: the same
//! name, or the complete call's name ending in `__<name>` or `.<name>` (a
//! tool namespaced by its server). In one trace ([`fold_within`]) each
//! complete call takes one hollow record at most, the innermost around it
//! first; across traces the hollow record must be a lone MCP trace's
//! (`super::echo`), in the same process ([`is_record_of`]). A hollow record
//! with no complete call around it stays a call, as does one with a call or
//! agent run within it (its nesting would change).

use std::collections::{HashMap, HashSet};

use serde_json::Value;

use super::open::{Echo, OpenAsk};
use super::{Analysis, CallArgs, CallStatus, ToolCall};
use crate::assemble::{SpanId, Trace, TraceId};

/// Whether `c` names its tool and nothing else of the call, leaving aside
/// its span's call id (asked apart: it needs the span).
fn empty_of_content(c: &ToolCall) -> bool {
    c.from.is_none()
        && matches!(&c.args, CallArgs::None | CallArgs::Value(Value::Null))
        && c.result.is_none()
        && c.status == CallStatus::Ok
        && c.call_id.is_none()
}

/// Whether `c`, with its span's call id `id`, is a hollow record.
pub(crate) fn is_hollow(c: &ToolCall, id: Option<&str>) -> bool {
    empty_of_content(c) && id.is_none()
}

/// The names a complete call of `name` answers to as a hollow record's
/// tool: the name, and each part after a `__` or a `.` in it.
fn tails(name: &str) -> impl Iterator<Item = &str> + '_ {
    let cuts = name
        .match_indices("__")
        .map(|(i, _)| i + 2)
        .chain(name.match_indices('.').map(|(i, _)| i + 1));
    std::iter::once(name).chain(cuts.filter_map(|i| name.get(i..).filter(|t| !t.is_empty())))
}

/// Whether a hollow record of tool `hollow` may record a call of `whole`.
pub(crate) fn same_tool(hollow: &str, whole: &str) -> bool {
    tails(whole).any(|t| t == hollow)
}

/// Takes out of `out` the hollow records that lie within a complete call
/// of the same tool in the trace (see the module's doc), noting each.
pub(crate) fn fold_within(trace: &Trace, out: &mut Analysis) {
    // Most traces have none: nothing is indexed for them.
    if out.calls.len() < 2 || !out.calls.iter().any(empty_of_content) {
        return;
    }
    let at = trace.positions();
    let id = |c: &ToolCall| {
        at.get(c.span_id)
            .and_then(|i| trace.spans.get(i))
            .and_then(super::source::tool_call_id)
    };
    let calls = &out.calls;
    let hollow: Vec<bool> = calls.iter().map(|c| is_hollow(c, id(c))).collect();
    // The complete calls from spans, under each name they answer to.
    let mut whole: HashMap<&str, Vec<usize>> = HashMap::new();
    for (i, c) in calls.iter().enumerate() {
        if !hollow[i] && c.from.is_none() {
            for t in tails(&c.name) {
                whole.entry(t).or_default().push(i);
            }
        }
    }
    if whole.is_empty() {
        return;
    }
    // The calls and runs within another call: those are left alone.
    let holding: HashSet<SpanId> = calls
        .iter()
        .filter_map(|c| c.within)
        .chain(out.runs.iter().filter_map(|r| r.within))
        .collect();
    let mut taken = vec![false; calls.len()];
    let mut gone: Vec<(usize, usize)> = Vec::new();
    for (h, c) in calls.iter().enumerate().filter(|&(h, _)| hollow[h]) {
        if holding.contains(&c.span_id) {
            continue;
        }
        let around = whole.get(c.name.as_str()).and_then(|ks| {
            ks.iter()
                .copied()
                .filter(|&k| !taken[k] && contains(&calls[k], c))
                // The innermost first: the latest start, then the earliest end.
                .max_by_key(|&k| {
                    (
                        calls[k].start_time_unix_nano,
                        u64::MAX - calls[k].end_time_unix_nano,
                    )
                })
        });
        if let Some(k) = around {
            taken[k] = true;
            gone.push((h, k));
        }
    }
    if gone.is_empty() {
        return;
    }
    let kept: HashMap<SpanId, SpanId> = gone
        .iter()
        .map(|&(h, k)| (calls[h].span_id, calls[k].span_id))
        .collect();
    for &(h, k) in &gone {
        out.notes.push(format!(
            "tool call `{}` (span {}) names its tool only (no arguments, result or call id) and ran within the call span {} records: another record of that call, not counted again",
            calls[h].name, calls[h].span_id, calls[k].span_id
        ));
    }
    out.calls.retain(|c| !kept.contains_key(&c.span_id));
}

/// Whether `inner`'s span lies wholly within `outer`'s.
fn contains(outer: &ToolCall, inner: &ToolCall) -> bool {
    outer.span_id != inner.span_id
        && outer.start_time_unix_nano <= inner.start_time_unix_nano
        && inner.end_time_unix_nano <= outer.end_time_unix_nano
}

/// Whether `hollow`, a lone MCP trace's hollow record (no arguments, no
/// call id), is another record of `earlier`, a call of another trace read
/// from a span with arguments or a call id: the same tool, the same process
/// (equal resource attributes), and `hollow`'s span wholly within
/// `earlier`'s.
pub(crate) fn is_record_of(hollow: &Echo, earlier: &Echo) -> bool {
    let same_process = super::open::same_process(&hollow.resource, &earlier.resource);
    hollow.args.is_null()
        && hollow.id.is_none()
        && !earlier.from_conversation
        && (!earlier.args.is_null() || earlier.id.is_some())
        && hollow.trace_id != earlier.trace_id
        && same_process
        && earlier.start <= hollow.start
        && hollow.end <= earlier.end
        && same_tool(&hollow.name, &earlier.name)
}

/// Whether `hollow`, a hollow record of a trace of hollow records only
/// (held as a lone trace: `super::echo`), is the execution of `counted`, a
/// call a later trace rebuilt from the conversation: the same tool, the same
/// process, the span ended before the request carrying the result started
/// and began after the model's output asked for the call, when the carry
/// knows that output (`Echo::asked`). A tool wrapper that records only the
/// tool's name, each span a trace of its own (Aegis's `tool` decorator over
/// an OpenAI hand loop, whose model calls record no output): only the time
/// order and the name join them. A held trace waits only for the first trace
/// after it that counts calls with arguments (`Carry::settle`), and each
/// counted call takes one record, so a hollow record of an earlier turn is
/// no candidate.
pub(crate) fn ran_for(hollow: &Echo, counted: &Echo) -> bool {
    let same_process = super::open::same_process(&hollow.resource, &counted.resource);
    hollow.args.is_null()
        && hollow.id.is_none()
        && !hollow.from_conversation
        && counted.from_conversation
        && hollow.trace_id != counted.trace_id
        && same_process
        && counted.asked.is_none_or(|t| t <= hollow.start)
        && hollow.end <= super::call_window::answered_at(counted)
        && same_tool(&hollow.name, &counted.name)
}

/// The carried entry saying that `hollow`, a held trace's hollow record,
/// ran the first of `calls` (a later trace's) it is the execution of
/// ([`ran_for`]): that call stays counted, marked as taken.
pub(crate) fn ran_one_of<'c>(hollow: &Echo, calls: &'c mut [Echo]) -> Option<(OpenAsk, &'c Echo)> {
    let c = calls.iter_mut().find(|c| ran_for(hollow, c))?;
    let carried = super::twice::span_counted(hollow, c);
    // No span starts after this: the call takes no other record.
    c.asked = Some(u64::MAX);
    Some((carried, c))
}

/// The note of a lone trace's hollow record `c` that trace `counted`
/// counts.
pub(crate) fn echo_note(c: &ToolCall, counted: TraceId) -> String {
    format!(
        "tool call `{}` (span {}) names its tool only (no arguments, result or call id) and ran within a call of that tool trace {} counts, in the same process: another record of that call, not counted again",
        c.name, c.span_id, counted
    )
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use opentelemetry_proto::tonic::common::v1::InstrumentationScope;
    use opentelemetry_proto::tonic::trace::v1::span::SpanKind;

    use super::{same_tool, tails};
    use crate::assemble::{SpanRecord, Trace, TraceId};
    use crate::extract::test_support::read_in_order;
    use crate::extract::tests::sp;
    use crate::extract::Extractor;

    #[test]
    fn a_namespaced_name_answers_to_its_tool() {
        assert!(same_tool("book_room", "book_room"));
        assert!(same_tool("book_room", "mcp__desk__book_room"));
        assert!(same_tool("book_room", "desk.book_room"));
        assert!(same_tool("desk.book_room", "acme.desk.book_room"));
        assert!(!same_tool("book_room", "rebook_room"));
        assert!(!same_tool("book_room", "book_room_x"));
        assert!(!same_tool("", "desk."));
        assert_eq!(tails("a__b.c").collect::<Vec<_>>(), ["a__b.c", "b.c", "c"]);
    }

    /// A made-up client's complete tool span (OTel GenAI attributes, as
    /// the server's: one convention, so no other join takes the two for
    /// one call) for tool `name`.
    fn whole(id: u8, parent: Option<u8>, when: (u64, u64), name: &str) -> SpanRecord {
        sp(
            id,
            parent,
            when,
            &format!("execute_tool {name}"),
            &[
                ("gen_ai.operation.name", "execute_tool"),
                ("gen_ai.tool.name", name),
                ("gen_ai.tool.call.arguments", r#"{"room": 12}"#),
                ("gen_ai.tool.call.result", "booked"),
            ],
        )
    }

    /// A made-up tool server's own record of a `tools/call`: the tool's
    /// name only (OTel GenAI attributes, the MCP conventions' method).
    fn server(id: u8, parent: Option<u8>, when: (u64, u64), tool: &str) -> SpanRecord {
        let mut s = sp(
            id,
            parent,
            when,
            &format!("tools/call {tool}"),
            &[
                ("gen_ai.operation.name", "execute_tool"),
                ("gen_ai.tool.name", tool),
                ("mcp.method.name", "tools/call"),
            ],
        );
        s.span.kind = SpanKind::Server as i32;
        s.scope = Arc::new(InstrumentationScope {
            name: "acme-tool-server".into(),
            ..Default::default()
        });
        s
    }

    fn agent(id: u8, parent: Option<u8>, when: (u64, u64)) -> SpanRecord {
        sp(
            id,
            parent,
            when,
            "invoke_agent desk",
            &[
                ("gen_ai.operation.name", "invoke_agent"),
                ("gen_ai.agent.name", "desk"),
            ],
        )
    }

    fn names(t: &Trace) -> Vec<String> {
        let a = Extractor::default().analyze(t);
        a.calls.iter().map(|c| c.name.clone()).collect()
    }

    #[test]
    fn a_hollow_record_in_another_branch_of_the_trace_is_the_call_around_it() {
        // The server's span under the agent, the client's tool span under
        // a turn span below it: not side by side, one within the other.
        let spans = vec![
            agent(1, None, (0, 1000)),
            sp(2, Some(1), (100, 900), "turn", &[]),
            whole(3, Some(2), (200, 400), "mcp__desk__book_room"),
            server(4, Some(1), (250, 300), "book_room"),
        ];
        let t = Trace::new(TraceId([1; 16]), spans, 0);
        let a = Extractor::default().analyze(&t);
        assert_eq!(a.calls.len(), 1, "{:?}", a.calls);
        assert_eq!(a.calls[0].args.value().unwrap()["room"], 12);
        assert!(a.notes.iter().any(|n| n.contains("names its tool only")));
    }

    #[test]
    fn a_hollow_record_outside_any_call_or_of_another_tool_stays_a_call() {
        let outside = vec![
            agent(1, None, (0, 1000)),
            whole(3, Some(1), (200, 400), "book_room"),
            server(4, Some(1), (390, 450), "book_room"),
        ];
        let t = Trace::new(TraceId([1; 16]), outside, 0);
        assert_eq!(names(&t), ["book_room", "book_room"]);
        let other = vec![
            agent(1, None, (0, 1000)),
            whole(3, Some(1), (200, 400), "book_room"),
            server(4, Some(1), (250, 300), "cancel_room"),
        ];
        let t = Trace::new(TraceId([1; 16]), other, 0);
        assert_eq!(names(&t), ["book_room", "cancel_room"]);
    }

    #[test]
    fn each_complete_call_takes_one_hollow_record() {
        let spans = vec![
            agent(1, None, (0, 1000)),
            whole(3, Some(1), (200, 400), "book_room"),
            server(4, Some(1), (250, 300), "book_room"),
            server(5, Some(1), (310, 350), "book_room"),
        ];
        let t = Trace::new(TraceId([1; 16]), spans, 0);
        assert_eq!(names(&t).len(), 2);
    }

    #[test]
    fn a_lone_hollow_trace_is_the_record_of_the_call_around_it() {
        let lone = |trace: u8, when| {
            Trace::new(
                TraceId([trace; 16]),
                vec![server(9, None, when, "book_room")],
                0,
            )
        };
        let caller = Trace::new(
            TraceId([1; 16]),
            vec![
                agent(1, None, (0, 1000)),
                whole(3, Some(1), (200, 400), "mcp__desk__book_room"),
            ],
            0,
        );
        // Read before the caller (held) or after it.
        let got = read_in_order(vec![lone(2, (250, 300)), caller.clone()]);
        assert_eq!(
            got.iter().map(|a| a.calls.len()).collect::<Vec<_>>(),
            [0, 1]
        );
        assert!(
            got[0].notes[0].contains("not counted again"),
            "{:?}",
            got[0].notes
        );
        let got = read_in_order(vec![caller.clone(), lone(2, (250, 300))]);
        assert_eq!(
            got.iter().map(|a| a.calls.len()).collect::<Vec<_>>(),
            [1, 0]
        );
        // Outside the call's time, or a second hollow record: a call.
        let got = read_in_order(vec![caller.clone(), lone(2, (390, 450))]);
        assert_eq!(got[1].calls.len(), 1);
        let got = read_in_order(vec![caller, lone(2, (250, 300)), lone(3, (310, 350))]);
        assert_eq!(
            got.iter().map(|a| a.calls.len()).collect::<Vec<_>>(),
            [1, 0, 1]
        );
    }

    /// A made-up vendor's hand loop, each span a trace of its own: a
    /// tool span naming its tool only, and the model call whose request
    /// repeats the turn asking for `book_room` with its result.
    fn hollow_trace(trace: u8, when: (u64, u64), process: &str, tool: &str) -> Trace {
        let s = sp(
            9,
            None,
            when,
            tool,
            &[
                ("gen_ai.operation.name", "execute_tool"),
                ("gen_ai.tool.name", tool),
                ("acme.span.type", "tool"),
            ],
        );
        let s = crate::extract::test_support::in_process(s, process);
        Trace::new(TraceId([trace; 16]), vec![s], 0)
    }

    fn request_trace(trace: u8, when: (u64, u64), process: &str, id: &str) -> Trace {
        request_for(trace, when, process, id, "book_room")
    }

    fn request_for(trace: u8, when: (u64, u64), process: &str, id: &str, tool: &str) -> Trace {
        let input = serde_json::json!([
            {"role": "user", "content": "book room 12"},
            {"role": "assistant", "content": null, "tool_calls": [
                {"id": id, "type": "function", "function": {"name": tool, "arguments": "{\"room\": 12}"}}
            ]},
            {"role": "tool", "tool_call_id": id, "content": "booked"}
        ]);
        let s = sp(
            1,
            None,
            when,
            "acme.chat.create",
            &[
                ("gen_ai.operation.name", "chat"),
                ("gen_ai.input.messages", &input.to_string()),
                ("gen_ai.output.messages", "Room 12 is booked."),
            ],
        );
        let s = crate::extract::test_support::in_process(s, process);
        Trace::new(TraceId([trace; 16]), vec![s], 0)
    }

    fn counts(got: &[crate::extract::Analysis]) -> Vec<usize> {
        got.iter().map(|a| a.calls.len()).collect()
    }

    #[test]
    fn a_hollow_trace_before_the_request_is_the_conversations_call() {
        let got = read_in_order(vec![
            hollow_trace(2, (100, 200), "p1", "book_room"),
            request_trace(3, (300, 400), "p1", "k1"),
        ]);
        assert_eq!(counts(&got), [0, 1]);
        assert_eq!(got[1].calls[0].args.value().unwrap()["room"], 12);
        assert!(got[0].notes.iter().any(|n| n.contains("not counted again")));
        // Another process, another tool, or after the request started:
        // the hollow record stays a call.
        for hollow in [
            hollow_trace(2, (100, 200), "p2", "book_room"),
            hollow_trace(2, (100, 200), "p1", "cancel_room"),
            hollow_trace(2, (320, 380), "p1", "book_room"),
        ] {
            let got = read_in_order(vec![hollow, request_trace(3, (300, 400), "p1", "k1")]);
            assert_eq!(counts(&got), [1, 1]);
        }
        // Two hollow records, one call: the first takes it.
        let got = read_in_order(vec![
            hollow_trace(2, (100, 200), "p1", "book_room"),
            hollow_trace(4, (210, 250), "p1", "book_room"),
            request_trace(3, (300, 400), "p1", "k1"),
        ]);
        assert_eq!(counts(&got), [0, 1, 1]);
    }

    #[test]
    fn a_hollow_record_of_an_earlier_turn_is_no_candidate() {
        // A trace counting calls with arguments in between (of another
        // tool) releases it: the later request's call does not take it.
        let got = read_in_order(vec![
            hollow_trace(2, (100, 200), "p1", "book_room"),
            request_for(5, (210, 220), "p1", "k0", "cancel_room"),
            request_trace(3, (300, 400), "p1", "k1"),
        ]);
        assert_eq!(counts(&got), [1, 1, 1]);
    }
}
