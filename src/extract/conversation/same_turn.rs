//! The call-id join's last pass: one call the model asked for that no tool
//! span shows, and one tool span's call that no model output asked for, in
//! the same turn, are one call recorded under another name.
//!
//! A framework that runs a call itself may record it under its own name and
//! arguments, without the call id: the OpenAI Agents SDK runs the model's
//! `transfer_to_<agent>` (call id, `{}`) as a handoff, and OpenInference
//! writes it as a tool span `handoff_to_<agent>` with `{"from_agent": ...}`.
//! The turn of an ask runs from the end of the model output that asked for
//! it to the start of the first later request carrying its result (by call
//! id): the call ran in it. Two real calls are never merged: the ask must
//! have a call id and a result that came back, the span none of its own,
//! and each must be the only one left unjoined in that turn (the span the
//! only unjoined call in the ask's turn, the ask the only unjoined one
//! whose turn holds the span). The call takes the model's name and
//! arguments; the span's name is kept as `span_name`, its result stays.
//! A model-side name that is an output item's type (`computer_call`) names
//! no function: the span's name and arguments stay (`item_names`).

use super::{call_id, request_of, AskedAt, OpenAsk, Positions};
use crate::assemble::{SpanId, Trace};
use crate::extract::{Analysis, Ctx, ToolCall};

/// An ask's turn: when its model output ended, and when the request
/// carrying its result started.
type Turn = (u64, u64);

/// Joins the lone unjoined call of a turn to the lone unjoined ask of it
/// (see the module's text), marking both in `used` and `joined`; a note
/// says so for each. A call inside a joined call of its tool, or one
/// another trace counts (`carried`), is no loose call: `check` warns of
/// neither. The two must be of one agent run (`seen`): an ask of a run
/// without tool spans is rebuilt from the conversation instead.
pub(super) fn join(
    trace: &Trace,
    seen: &[Ctx],
    asked: &[AskedAt],
    carried: &[OpenAsk],
    used: &mut [bool],
    joined: &mut [Option<usize>],
    out: &mut Analysis,
) {
    let calls = &mut out.calls;
    let open: Vec<usize> = (0..asked.len()).filter(|&k| !used[k]).collect();
    if open.is_empty() {
        return;
    }
    let echo = |c: &ToolCall| {
        let inside_joined = c.within.is_some_and(|w| {
            calls
                .iter()
                .zip(joined.iter())
                .any(|(j, k)| k.is_some() && j.span_id == w && j.name == c.name)
        });
        inside_joined
            || carried
                .iter()
                .any(|e| e.is_echo() && e.span_id == c.span_id)
    };
    let loose: Vec<usize> = (0..calls.len())
        .filter(|&c| joined[c].is_none() && !echo(&calls[c]))
        .collect();
    if loose.is_empty() {
        return;
    }
    let turns: Vec<(usize, Turn)> = open
        .iter()
        .filter_map(|&k| Some((k, turn_of(trace, &asked[k])?)))
        .collect();
    let within = |c: usize, (from, to): Turn| {
        let call = &calls[c];
        from <= call.start_time_unix_nano && call.end_time_unix_nano <= to
    };
    let index = Positions::of(trace);
    let mut pairs = Vec::new();
    for &(k, turn) in &turns {
        let mut inside = loose.iter().copied().filter(|&c| within(c, turn));
        let (Some(c), None) = (inside.next(), inside.next()) else {
            continue;
        };
        let holders = turns.iter().filter(|(_, t)| within(c, *t)).count();
        let run: Option<SpanId> = seen
            .get(asked[k].span)
            .and_then(|x| x.agent)
            .map(|r| trace.spans[r].span_id);
        let same_run = calls[c].agent.as_ref().map(|a| a.span_id) == run;
        let own_id = index
            .get(calls[c].span_id)
            .and_then(|i| call_id(&trace.spans[i]));
        if holders == 1 && own_id.is_none() && same_run {
            pairs.push((k, c));
        }
    }
    for (k, c) in pairs {
        let a = &asked[k].asked;
        let call = &mut out.calls[c];
        // An output item's type in the function name's place names no
        // function: the span's name and arguments are the call's.
        let item = super::item_names::is_item_type(&a.name);
        out.notes.push(format!(
            "tool span {} (`{}`) is the only call of its turn no model output asked for, and `{}`{} the only call of it no tool span shows: one call, under {}",
            call.span_id,
            call.name,
            a.name,
            super::id_text(a),
            if item {
                "the span's name and arguments (the model's name is an output item's type)"
            } else {
                "the model's name and arguments"
            }
        ));
        if !item {
            call.args = super::args_of(&a.args);
        }
        super::take_from_model(call, a);
        used[k] = true;
        joined[c] = Some(k);
    }
}

/// The turn of `at`: from the end of the model output that asked for it to
/// the start of the first request after it that carries its result by call
/// id; `None` without a call id or such a request.
fn turn_of(trace: &Trace, at: &AskedAt) -> Option<Turn> {
    let id = at.asked.id.as_deref()?;
    let from = trace.spans.get(at.span)?.span.end_time_unix_nano;
    trace
        .spans
        .iter()
        .map(|s| (s, s.span.start_time_unix_nano))
        .filter(|(_, start)| *start >= from)
        .filter(|(s, _)| {
            request_of(s)
                .answers
                .iter()
                .any(|r| r.id.as_deref() == Some(id))
        })
        .map(|(_, start)| start)
        .min()
        .map(|to| (from, to))
}
