//! A tool span that recorded no arguments, joined to the model's ask by the
//! tool's name, takes the ask's arguments (docs/conventions.md, "The
//! conversation witness").
//!
//! Google ADK 2.x writes `execute_tool <name>` spans with a call id of its
//! own (`adk-<uuid>`) and, content capture or not, no arguments; the
//! model's asks sit in its log records under the ids the instrumentation
//! made for Gemini (`<name>_<n>`). The two id spaces never meet, so the
//! span joins its ask by name, and that join took nothing from the ask: a
//! span that names a call keeps its own record. A span with no arguments
//! at all has no record to keep; what the model asked for is the call's
//! input, as the next request's result under the ask's id is its output
//! (`order::fill_results` takes that one through the same join).
//!
//! Strict, because a name is a weaker key than a call id: the ask's output
//! must be the last model output that asked for calls and ended before the
//! span started (no later turn could have asked for it), and that output
//! asks for the tool once, or as many times as tool spans of the tool were
//! joined to its asks, in the order they started (distinct starts: two
//! calls started at one instant tell no order). Recorded arguments, even
//! empty ones, are never replaced, and an ask without arguments gives none.

use super::{args_of, AskedAt, ToolCall, Trace};
use crate::extract::tool_name::normalized;

/// Gives each call in `calls` that has no arguments the arguments of the
/// ask it was joined to (`joined`: an index into `asked`) under the
/// conditions of the module's text; notes each.
pub(in crate::extract::conversation) fn fill(
    trace: &Trace,
    asked: &[AskedAt],
    joined: &[Option<usize>],
    calls: &mut [ToolCall],
    notes: &mut Vec<String>,
) {
    // Cheap first: most calls have arguments or were joined by call id
    // (which took the ask's arguments already).
    let lacking = |c: &ToolCall, j: &Option<usize>| {
        c.args.is_none() && j.is_some_and(|k| asked.get(k).is_some_and(|a| !a.asked.args.is_null()))
    };
    if !calls.iter().zip(joined).any(|(c, j)| lacking(c, j)) {
        return;
    }
    let outputs = Outputs::of(trace, asked);
    let mut take: Vec<(usize, usize)> = Vec::new();
    for (c, (call, j)) in calls.iter().zip(joined).enumerate() {
        let Some(k) = j.filter(|_| lacking(call, j)) else {
            continue;
        };
        let at = &asked[k];
        if normalized(&at.asked.name) != call.name
            || outputs.before(call.start_time_unix_nano) != Some(at.span)
            || !told_apart(asked, joined, calls, k)
        {
            continue;
        }
        take.push((c, k));
    }
    for (c, k) in take {
        let (call, at) = (&mut calls[c], &asked[k]);
        call.args = args_of(&at.asked.args);
        notes.push(format!(
            "tool span {} recorded no arguments for `{}`: its arguments are the ones the model's output in span {} gave{} (joined by the tool's name)",
            call.span_id,
            call.name,
            trace.spans[at.span].span_id,
            at.asked
                .id
                .as_deref()
                .map(|id| format!(" under call id {id}"))
                .unwrap_or_default()
        ));
    }
}

/// The spans whose outputs asked for calls, by when they ended.
struct Outputs(Vec<(u64, usize)>);

impl Outputs {
    fn of(trace: &Trace, asked: &[AskedAt]) -> Outputs {
        let mut ends: Vec<(u64, usize)> = asked
            .iter()
            .filter_map(|a| Some((trace.spans.get(a.span)?.span.end_time_unix_nano, a.span)))
            .collect();
        ends.sort_unstable();
        ends.dedup();
        Outputs(ends)
    }

    /// The output that ended last at or before `start`; none when two
    /// ended at that same instant (neither is the one before).
    fn before(&self, start: u64) -> Option<usize> {
        let n = self.0.partition_point(|&(end, _)| end <= start);
        let last = self.0.get(n.checked_sub(1)?)?;
        let tied = n >= 2 && self.0[n - 2].0 == last.0;
        (!tied).then_some(last.1)
    }
}

/// Whether ask `k` is told apart from the other asks of its tool in its
/// output: it is the only one, or each of them was joined to a call and
/// those calls started one after another in the order of the asks.
fn told_apart(asked: &[AskedAt], joined: &[Option<usize>], calls: &[ToolCall], k: usize) -> bool {
    let at = &asked[k];
    let same: Vec<usize> = (0..asked.len())
        .filter(|&q| asked[q].span == at.span && asked[q].asked.name == at.asked.name)
        .collect();
    if same.len() < 2 {
        return true;
    }
    let mut starts = Vec::with_capacity(same.len());
    for q in same {
        let Some(c) = joined.iter().position(|j| *j == Some(q)) else {
            return false;
        };
        starts.push(calls[c].start_time_unix_nano);
    }
    starts.windows(2).all(|w| w[0] < w[1])
}

#[cfg(test)]
mod tests {
    use serde_json::{json, Value};

    use crate::assemble::{SpanRecord, Trace, TraceId};
    use crate::extract::test_support::{genai_asks, genai_chat, genai_user};
    use crate::extract::tests::sp;
    use crate::extract::Analysis;

    fn tool(id: u8, when: (u64, u64), name: &str, args: Option<&str>) -> SpanRecord {
        let own = format!("acme-{id:02x}-9f3c");
        let mut attrs = vec![
            ("acme.step", "tool"),
            ("acme.tool", name),
            ("gen_ai.tool.call.id", own.as_str()),
        ];
        if let Some(a) = args {
            attrs.push(("acme.args", a));
        }
        sp(id, Some(1), when, name, &attrs)
    }

    fn answer(id: &str, v: Value) -> Value {
        json!({"role": "tool", "parts": [{"type": "tool_call_response", "id": id, "response": v}]})
    }

    fn analyze(spans: Vec<SpanRecord>) -> Analysis {
        // The made-up framework's tool spans: a call id of its own, no
        // result (`test_support::acme_tool_extractor`).
        let x = crate::extract::test_support::acme_tool_extractor("");
        let mut all = vec![sp(1, None, (0, 1000), "loop", &[])];
        all.extend(spans);
        x.analyze(&Trace::new(TraceId([5; 16]), all, 0))
    }

    fn args(got: &Analysis) -> Vec<(String, Value)> {
        got.calls
            .iter()
            .map(|c| {
                (
                    c.name.clone(),
                    c.args.value().cloned().unwrap_or(Value::Null),
                )
            })
            .collect()
    }

    /// Two model turns, each asking for one call under an id of the
    /// instrumentation's (`<name>_0`), the tool spans under ids of their
    /// own with no arguments.
    fn two_turns(second_args: Option<&str>) -> Vec<SpanRecord> {
        let a = genai_asks(&[(
            "berth_0",
            "find_berth",
            json!({"harbour": "Tromsø", "length": 12}),
        )]);
        let b = genai_asks(&[("moor_0", "moor", json!({"berth": "B7"}))]);
        let (ra, rb) = (
            answer("berth_0", json!({"berth": "B7"})),
            answer("moor_0", json!("moored")),
        );
        vec![
            genai_chat(2, (10, 20), "chat", json!([genai_user()]), json!([a])),
            tool(3, (21, 25), "find_berth", None),
            genai_chat(
                4,
                (30, 40),
                "chat",
                json!([genai_user(), a, ra]),
                json!([b]),
            ),
            tool(5, (41, 45), "moor", second_args),
            genai_chat(
                6,
                (50, 60),
                "chat",
                json!([genai_user(), a, ra, b, rb]),
                json!([]),
            ),
        ]
    }

    #[test]
    fn a_span_without_arguments_takes_its_asks() {
        let got = analyze(two_turns(None));
        assert_eq!(
            args(&got),
            vec![
                (
                    "find_berth".into(),
                    json!({"harbour": "Tromsø", "length": 12})
                ),
                ("moor".into(), json!({"berth": "B7"}))
            ]
        );
        let results: Vec<Value> = got
            .calls
            .iter()
            .map(|c| c.result.as_ref().map(|r| r.to_value()).unwrap_or_default())
            .collect();
        assert_eq!(results, vec![json!({"berth": "B7"}), json!("moored")]);
        assert!(
            got.notes
                .iter()
                .any(|n| n.contains("recorded no arguments for `moor`")),
            "{:?}",
            got.notes
        );
    }

    #[test]
    fn recorded_arguments_stay() {
        // Even empty ones, and even when they differ from the ask.
        let got = analyze(two_turns(Some("{}")));
        assert_eq!(args(&got)[1], ("moor".into(), json!({})));
        let got = analyze(two_turns(Some("{\"berth\":\"C1\"}")));
        assert_eq!(args(&got)[1], ("moor".into(), json!({"berth": "C1"})));
    }

    #[test]
    fn an_ask_of_another_name_gives_nothing() {
        let a = genai_asks(&[("berth_0", "find_berth", json!({"harbour": "Bodø"}))]);
        let spans = vec![
            genai_chat(2, (10, 20), "chat", json!([genai_user()]), json!([a])),
            tool(3, (21, 25), "moor", None),
        ];
        let got = analyze(spans);
        assert_eq!(args(&got), vec![("moor".into(), Value::Null)]);
    }

    #[test]
    fn an_ask_of_an_earlier_turn_gives_nothing() {
        // The span runs after a later output that asked for other calls:
        // the earlier ask it joins by name is no longer the one before it.
        let a = genai_asks(&[("moor_0", "moor", json!({"berth": "A1"}))]);
        let b = genai_asks(&[("berth_0", "find_berth", json!({"harbour": "Bodø"}))]);
        let spans = vec![
            genai_chat(2, (10, 20), "chat", json!([genai_user()]), json!([a])),
            genai_chat(3, (30, 40), "chat", json!([genai_user()]), json!([b])),
            tool(4, (41, 45), "find_berth", Some("{\"harbour\":\"Bodø\"}")),
            tool(5, (46, 49), "moor", None),
        ];
        let got = analyze(spans);
        assert_eq!(args(&got)[1], ("moor".into(), Value::Null));
    }

    /// One output asking for `moor` twice, two tool spans of it starting
    /// at `starts`.
    fn twice(starts: (u64, u64)) -> Vec<(String, Value)> {
        let a = genai_asks(&[
            ("moor_0", "moor", json!({"berth": "A1"})),
            ("moor_1", "moor", json!({"berth": "A2"})),
        ]);
        let spans = vec![
            genai_chat(2, (10, 20), "chat", json!([genai_user()]), json!([a])),
            tool(3, (starts.0, starts.0 + 3), "moor", None),
            tool(4, (starts.1, starts.1 + 3), "moor", None),
        ];
        args(&analyze(spans))
    }

    #[test]
    fn two_asks_of_one_tool_pair_in_the_order_the_spans_started() {
        assert_eq!(
            twice((21, 26)),
            vec![
                ("moor".into(), json!({"berth": "A1"})),
                ("moor".into(), json!({"berth": "A2"}))
            ]
        );
    }

    #[test]
    fn two_asks_of_one_tool_without_an_order_give_nothing() {
        // Started at one instant: no order tells which ran which.
        assert_eq!(
            twice((21, 21)),
            vec![("moor".into(), Value::Null), ("moor".into(), Value::Null)]
        );
        // One span for two asks: which one it ran is unknown.
        let a = genai_asks(&[
            ("moor_0", "moor", json!({"berth": "A1"})),
            ("moor_1", "moor", json!({"berth": "A2"})),
        ]);
        let spans = vec![
            genai_chat(2, (10, 20), "chat", json!([genai_user()]), json!([a])),
            tool(3, (21, 24), "moor", None),
        ];
        assert_eq!(args(&analyze(spans)), vec![("moor".into(), Value::Null)]);
    }

    #[test]
    fn a_span_started_before_the_output_ended_gives_nothing() {
        let a = genai_asks(&[("moor_0", "moor", json!({"berth": "A1"}))]);
        let spans = vec![
            genai_chat(2, (10, 20), "chat", json!([genai_user()]), json!([a])),
            tool(3, (15, 18), "moor", None),
        ];
        assert_eq!(args(&analyze(spans)), vec![("moor".into(), Value::Null)]);
    }
}
