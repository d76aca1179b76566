//! One call recorded by spans side by side (docs/conventions.md, "One call,
//! several spans"): a framework's tool span next to the one its model SDK
//! writes (VoltAgent's `tool.execution` and the AI SDK's `execute_tool`),
//! or the client's and the server's span of one MCP `tools/call` when the
//! server's span does not hang below the client's.
//!
//! [`super::merge`] merges a call directly inside another; this merges two
//! calls of one trace that are not nested, have the same tool name and
//! belong to one turn (the parent of one is the other's parent or one of
//! its ancestors, a few levels up at most; or both are roots), when:
//! - both carry a tool-call id and the ids are equal (two conventions'
//!   records may then be apart in time: one framework opens its span as
//!   the other's ends); or
//! - they overlap in time, their arguments are equal (or one side has
//!   none) and either they were
//!   found by different conventions, or one is the client's span and the
//!   other the server's (span kinds CLIENT and SERVER) of one request, whose
//!   ids (when both have one) are each side's own, not the model's.
//!
//! A group of records holds at most one per convention and span kind, so
//! two calls of one tool with the same arguments made side by side (the
//! model's parallel calls, ids different) stay two, however many
//! instrumentations record each. The merged call keeps the best arguments,
//! the innermost timing (as [`super::merge`]) and the outermost nesting.

use std::collections::HashMap;

use opentelemetry_proto::tonic::trace::v1::span::SpanKind;

use super::{merge, Analysis, ToolCall};
use crate::assemble::{SpanId, Trace};

/// How many levels up from a call its turn's span is looked for.
const MAX_HOPS: usize = 16;

/// How many later-starting calls of the same name each call is compared
/// with: bounds the work on a trace of many overlapping calls.
const MAX_PEERS: usize = 64;

/// Merges the calls of `out` that record one call side by side (see the
/// module's doc), noting each record not counted again.
pub(crate) fn one_call_side_by_side(trace: &Trace, out: &mut Analysis) {
    let calls = &out.calls;
    if calls.len() < 2 {
        return;
    }
    // Calls by name, then start: same-name overlapping calls are neighbours.
    let mut order: Vec<usize> = (0..calls.len()).collect();
    order.sort_by(|&a, &b| {
        (calls[a].name.as_str(), calls[a].start_time_unix_nano)
            .cmp(&(calls[b].name.as_str(), calls[b].start_time_unix_nano))
    });
    // Same-name pairs that may be records of one call, by the time
    // between them (overlapping first): a record is matched to its nearest
    // counterpart before a farther one with the same id.
    let mut candidates: Vec<(u64, usize, usize)> = Vec::new();
    let mut facts = Facts::new(trace, calls.len());
    for (k, &a) in order.iter().enumerate() {
        for &b in order[k + 1..].iter().take(MAX_PEERS) {
            let (ca, cb) = (&calls[a], &calls[b]);
            if cb.name != ca.name {
                break;
            }
            // Records side by side sit under as many calls; one nested in
            // the other does not (a chain of nested calls of one tool
            // makes no candidates).
            if cb.depth != ca.depth {
                continue;
            }
            let gap = cb
                .start_time_unix_nano
                .saturating_sub(ca.end_time_unix_nano);
            // Apart in time, only two conventions' records of one id.
            let two = ca.convention != cb.convention;
            if (gap == 0 || two) && facts.may_be_one((ca, a), (cb, b), gap == 0, two) {
                candidates.push((gap, a, b));
            }
        }
    }
    if candidates.is_empty() {
        return;
    }
    candidates.sort_unstable();
    let at = trace.positions();
    let pos = |c: &ToolCall| at.get(c.span_id);
    // Each call's group: its first member, and the members of each group.
    let mut root: Vec<usize> = (0..calls.len()).collect();
    let mut members: HashMap<usize, Vec<usize>> = HashMap::new();
    for (gap, a, b) in candidates {
        let (ra, rb) = (root[a], root[b]);
        if ra == rb {
            continue;
        }
        let (Some(ia), Some(ib)) = (pos(&calls[a]), pos(&calls[b])) else {
            continue;
        };
        if !one_turn(trace, ia, ib) || !same_call(trace, (&calls[a], ia), (&calls[b], ib), gap == 0)
        {
            continue;
        }
        let group_a = members.remove(&ra).unwrap_or_else(|| vec![ra]);
        let group_b = members.remove(&rb).unwrap_or_else(|| vec![rb]);
        let clash = group_a.iter().any(|&x| {
            group_b
                .iter()
                .any(|&y| record_of(trace, &at, &calls[x]) == record_of(trace, &at, &calls[y]))
        });
        if clash {
            members.insert(ra, group_a);
            members.insert(rb, group_b);
            continue;
        }
        let mut group = group_a;
        group.extend(group_b);
        for &x in &group {
            root[x] = ra;
        }
        members.insert(ra, group);
    }
    if members.is_empty() {
        return;
    }
    fold((trace, &at), out, &root, members);
}

/// What [`same_call`] reads of a call's span besides the arguments: its
/// position, kind and tool-call id.
type Fact<'t> = Option<(usize, i32, Option<&'t str>)>;

/// Each call's [`Fact`], read once when first needed: a run of many
/// overlapping calls of one tool compares each with [`MAX_PEERS`] others.
struct Facts<'t> {
    trace: &'t Trace,
    at: Option<crate::assemble::SpanPositions<'t>>,
    of: Vec<Option<Fact<'t>>>,
}

impl<'t> Facts<'t> {
    fn new(trace: &'t Trace, calls: usize) -> Self {
        Facts {
            trace,
            at: None,
            of: vec![None; calls],
        }
    }

    fn get(&mut self, c: &ToolCall, i: usize) -> Fact<'t> {
        if let Some(Some(f)) = self.of.get(i) {
            return *f;
        }
        let trace = self.trace;
        let at = self.at.get_or_insert_with(|| trace.positions());
        let fact = at.get(c.span_id).map(|p| {
            let s = &trace.spans[p];
            (p, s.span.kind, super::source::tool_call_id(s))
        });
        if let Some(slot) = self.of.get_mut(i) {
            *slot = Some(fact);
        }
        fact
    }

    /// Whether calls `a` and `b` may record one call: [`same_call`]'s
    /// test without the arguments, which leaves out most pairs of a run
    /// of one tool's calls by one convention before they are sorted.
    fn may_be_one(
        &mut self,
        (a, ia): (&ToolCall, usize),
        (b, ib): (&ToolCall, usize),
        overlap: bool,
        two_conventions: bool,
    ) -> bool {
        let (Some((_, ka, xa)), Some((_, kb, xb))) = (self.get(a, ia), self.get(b, ib)) else {
            return false;
        };
        match (xa, xb) {
            (Some(x), Some(y)) if x == y => true,
            _ if !overlap => false,
            (Some(_), Some(_)) => rpc((ka, kb)),
            _ => two_conventions || rpc((ka, kb)),
        }
    }
}

/// Whether two spans' kinds are a client's and a server's.
fn rpc(kinds: (i32, i32)) -> bool {
    let (client, server) = (SpanKind::Client as i32, SpanKind::Server as i32);
    kinds == (client, server) || kinds == (server, client)
}

/// What a group may hold once: a record's convention and span kind.
fn record_of<'c>(
    trace: &Trace,
    at: &crate::assemble::SpanPositions<'_>,
    c: &'c ToolCall,
) -> (&'c str, i32) {
    let kind = at.get(c.span_id).map_or(0, |i| trace.spans[i].span.kind);
    (c.convention.as_str(), kind)
}

/// Replaces each group of `out.calls` by one merged call.
fn fold(
    (trace, at): (&Trace, &crate::assemble::SpanPositions<'_>),
    out: &mut Analysis,
    root: &[usize],
    members: HashMap<usize, Vec<usize>>,
) {
    let calls = &out.calls;
    let mut kept: HashMap<SpanId, SpanId> = HashMap::new();
    let mut merged: HashMap<usize, ToolCall> = HashMap::new();
    // By group root (the calls' order), so the notes come out the same
    // every run: a map's own order changes from run to run.
    let mut members: Vec<(usize, Vec<usize>)> = members.into_iter().collect();
    members.sort_unstable_by_key(|(r, _)| *r);
    for (r, mut group) in members {
        // The outermost first, then by start.
        group.sort_by_key(|&i| (calls[i].depth, calls[i].start_time_unix_nano, i));
        let mut one = merge::merge(calls, &group);
        super::tool_side::keep_tool_result(trace, at, calls, &group, &mut one);
        for &i in &group {
            let c = &calls[i];
            kept.insert(c.span_id, one.span_id);
            if c.span_id != one.span_id {
                out.notes.push(format!(
                    "tool call `{}` (span {}) is another record of the call span {} shows (side by side in one turn): not counted again",
                    c.name, c.span_id, one.span_id
                ));
            }
        }
        merged.insert(r, one);
    }
    merge::keep_groups(&mut out.calls, root, merged);
    // What was within a record is within the call kept.
    for c in &mut out.calls {
        c.within = c.within.map(|w| kept.get(&w).copied().unwrap_or(w));
    }
    for r in &mut out.runs {
        r.within = r.within.map(|w| kept.get(&w).copied().unwrap_or(w));
    }
}

/// Whether spans `a` and `b` are not nested and belong to one turn: the
/// parent of one is the other's parent or one of its ancestors (at most
/// [`MAX_HOPS`] up), or both are roots.
fn one_turn(trace: &Trace, a: usize, b: usize) -> bool {
    let parent = |i: usize| trace.parent.get(i).copied().flatten();
    match (parent(a), parent(b)) {
        (None, None) => true,
        (pa, pb) => {
            pa.is_some_and(|p| climbs_to(trace, b, p, a))
                || pb.is_some_and(|p| climbs_to(trace, a, p, b))
        }
    }
}

/// Whether `target` is among the first [`MAX_HOPS`] ancestors of `from`,
/// and reached before `avoid` (a span above which `from` is nested).
fn climbs_to(trace: &Trace, from: usize, target: usize, avoid: usize) -> bool {
    let mut at = from;
    for _ in 0..MAX_HOPS {
        match trace.parent.get(at).copied().flatten() {
            Some(p) if p == avoid => return false,
            Some(p) if p == target => return true,
            Some(p) => at = p,
            None => return false,
        }
    }
    false
}

/// Whether `a` and `b` (each with its span's position) record one call
/// (see the module's doc; their names are known to agree): apart in time
/// (`overlap` false), only under one call id.
fn same_call(trace: &Trace, a: (&ToolCall, usize), b: (&ToolCall, usize), overlap: bool) -> bool {
    let ((a, ia), (b, ib)) = (a, b);
    let (sa, sb) = (&trace.spans[ia], &trace.spans[ib]);
    let rpc = rpc((sa.span.kind, sb.span.kind));
    let id = super::source::tool_call_id;
    match (id(sa), id(sb)) {
        (Some(x), Some(y)) if x == y => true,
        _ if !overlap => false,
        (Some(_), Some(_)) => rpc && merge::args_agree(&a.args, &b.args),
        _ => merge::args_agree(&a.args, &b.args) && (rpc || a.convention != b.convention),
    }
}

#[cfg(test)]
mod tests {
    use opentelemetry_proto::tonic::trace::v1::span::SpanKind;

    use crate::assemble::{SpanRecord, Trace, TraceId};
    use crate::extract::tests::sp;
    use crate::extract::Extractor;

    /// A record of a call: span id, call id, arguments, start.
    type Rec<'a> = (u8, &'a str, &'a str, u64);

    /// A made-up SDK's agent turn with tool spans (`gen_ai.*`) below it,
    /// and a framework's own tool spans (`span.type = tool`) beside the
    /// turn, under the framework's agent span.
    fn turn(sdk: &[Rec], framework: &[Rec]) -> Trace {
        let mut spans = vec![
            sp(1, None, (0, 1000), "desk", &[]),
            sp(
                2,
                Some(1),
                (10, 990),
                "invoke_agent desk",
                &[("gen_ai.operation.name", "invoke_agent")],
            ),
        ];
        for &(id, call, args, t) in sdk {
            spans.push(sp(
                id,
                Some(2),
                (t, t + 50),
                "execute_tool book_room",
                &[
                    ("gen_ai.operation.name", "execute_tool"),
                    ("gen_ai.tool.name", "book_room"),
                    ("gen_ai.tool.call.id", call),
                    ("gen_ai.tool.call.arguments", args),
                ],
            ));
        }
        for &(id, call, args, t) in framework {
            let mut attrs = vec![
                ("span.type", "tool"),
                ("tool.name", "book_room"),
                ("input", args),
            ];
            if !call.is_empty() {
                attrs.push(("tool.call.id", call));
            }
            spans.push(sp(id, Some(1), (t + 1, t + 40), "run:book_room", &attrs));
        }
        Trace::new(TraceId([1; 16]), spans, 0)
    }

    const ARGS: &str = r#"{"room": 12}"#;

    #[test]
    fn two_records_of_one_call_id_side_by_side_are_one_call() {
        let t = turn(&[(10, "c1", ARGS, 100)], &[(20, "c1", ARGS, 100)]);
        let a = Extractor::default().analyze(&t);
        assert_eq!(a.calls.len(), 1, "{:?}", a.calls);
        // The innermost timing: the framework's span, inside the SDK's.
        assert_eq!(a.calls[0].start_time_unix_nano, 101);
        assert!(a.notes.iter().any(|n| n.contains("another record")));
        // Two calls in turn, each recorded twice: two calls.
        let t = turn(
            &[(10, "c1", ARGS, 100), (11, "c2", ARGS, 200)],
            &[(20, "c1", ARGS, 100), (21, "c2", ARGS, 200)],
        );
        let a = Extractor::default().analyze(&t);
        assert_eq!(a.calls.len(), 2);
        // One note a record not counted, in the calls' order, every run.
        let noted: Vec<&String> = a
            .notes
            .iter()
            .filter(|n| n.contains("another record"))
            .collect();
        assert_eq!(noted.len(), 2, "{:?}", a.notes);
        // c1's records are spans 10 and 20 (0a.., 14..), c2's 11 and 21.
        let first = |n: &str| n.contains("0a0a0a0a0a0a0a0a") || n.contains("1414141414141414");
        assert!(first(noted[0]) && !first(noted[1]), "{noted:?}");
        for _ in 0..16 {
            assert_eq!(Extractor::default().analyze(&t).notes, a.notes);
        }
        // The framework's span opens as the SDK's ends: one id, one call.
        let t = turn(&[(10, "c1", ARGS, 100)], &[(20, "c1", ARGS, 160)]);
        assert_eq!(Extractor::default().analyze(&t).calls.len(), 1);
        // A scripted model reusing its id in turn: each record matched to
        // its nearest counterpart, two calls.
        let t = turn(
            &[(10, "c1", ARGS, 100), (11, "c1", ARGS, 300)],
            &[(20, "c1", ARGS, 160), (21, "c1", ARGS, 300)],
        );
        let two = Extractor::default().analyze(&t).calls;
        let starts: Vec<u64> = two.iter().map(|c| c.start_time_unix_nano).collect();
        assert_eq!(starts, [161, 301]);
    }

    #[test]
    fn parallel_calls_with_the_same_arguments_stay_two() {
        // Two calls at once (ids differ), each recorded by both: two.
        let t = turn(
            &[(10, "c1", ARGS, 100), (11, "c2", ARGS, 100)],
            &[(20, "c1", ARGS, 100), (21, "c2", ARGS, 100)],
        );
        assert_eq!(Extractor::default().analyze(&t).calls.len(), 2);
        // Recorded by one convention only, without ids: two.
        let t = turn(&[], &[(20, "", ARGS, 100), (21, "", ARGS, 100)]);
        assert_eq!(Extractor::default().analyze(&t).calls.len(), 2);
        // Recorded by both, ids on one side only: one record each, two.
        let t = turn(
            &[(10, "c1", ARGS, 100), (11, "c2", ARGS, 100)],
            &[(20, "", ARGS, 100), (21, "", ARGS, 100)],
        );
        assert_eq!(Extractor::default().analyze(&t).calls.len(), 2);
    }

    /// One MCP request's client and server spans (kinds CLIENT, SERVER),
    /// side by side under one parent, each with an id of its own.
    fn rpc(server_args: &str, kinds: (SpanKind, SpanKind)) -> Trace {
        let side = |id: u8, when, call: &str, args: &str, kind: SpanKind| -> SpanRecord {
            let mut s = sp(
                id,
                Some(1),
                when,
                "tools/call book_room",
                &[
                    ("gen_ai.operation.name", "execute_tool"),
                    ("gen_ai.tool.name", "book_room"),
                    ("gen_ai.tool.call.id", call),
                    ("gen_ai.tool.call.arguments", args),
                ],
            );
            s.span.kind = kind as i32;
            s
        };
        let spans = vec![
            sp(1, None, (0, 1000), "session", &[]),
            side(2, (100, 200), "u-1", ARGS, kinds.0),
            side(3, (110, 190), "u-2", server_args, kinds.1),
        ];
        Trace::new(TraceId([2; 16]), spans, 0)
    }

    #[test]
    fn an_mcp_request_s_client_and_server_spans_are_one_call() {
        let x = Extractor::default();
        let one = x.analyze(&rpc(ARGS, (SpanKind::Client, SpanKind::Server)));
        assert_eq!(one.calls.len(), 1, "{:?}", one.calls);
        assert_eq!(one.calls[0].start_time_unix_nano, 110);
        // Other arguments, or not a client and a server: two calls.
        let other = x.analyze(&rpc(
            r#"{"room": 13}"#,
            (SpanKind::Client, SpanKind::Server),
        ));
        assert_eq!(other.calls.len(), 2);
        let internal = x.analyze(&rpc(ARGS, (SpanKind::Internal, SpanKind::Internal)));
        assert_eq!(internal.calls.len(), 2);
    }
}
