//! The witness's joins: each tool span's call to the model's ask for it,
//! the warnings for what only one side shows, and parallel calls put in
//! the model's order.

use super::*;

mod elsewhere;
mod merged;
mod named_args;
mod same_args;

/// Joins each tool span's call to the model's request for it, warns of
/// what only one side shows, and lists parallel calls in the model's
/// order. Returns the calls asked for in an agent run that has no tool
/// span at all, or whose blank tool span stands for them
/// ([`blank_spans`]): those are rebuilt from the conversation; and the
/// asks paired with blank spans.
pub(super) fn join_and_check(
    x: &Extractor,
    trace: &Trace,
    seen: &[Ctx],
    asked: &[AskedAt],
    carried: &[OpenAsk],
    out: &mut Analysis,
) -> (Vec<AskedAt>, Vec<blank_spans::Pair>) {
    let (mut used, mut joined, own) = join(trace, asked, &mut out.calls);
    same_turn::join(trace, seen, asked, carried, &mut used, &mut joined, out);
    // The model's ids of spans' calls joined without one (`ask_ids`).
    let ids = ask_ids::of_joined(asked, &joined, &own, &out.calls);
    if ids.iter().any(|(_, id)| twin_asks::is_item(id)) {
        // Asks joined by name under Responses item ids that a later
        // request echoes under the call ids: other records of those calls
        // use the request's ids (`echo`). Only then: reading every request
        // is dear, and an ask under its call id needs no other.
        let inputs: Vec<bool> = trace.spans.iter().map(has_any_input).collect();
        let mut requests = requests_of(trace, &inputs);
        let echoed = echoed::pair_noting(trace, asked, &mut requests, &mut Vec::new());
        out.echoed_ids.extend(echoed);
    }
    out.joined_ids.extend(ids);
    // A span joined by name that recorded no arguments: the ask's.
    named_args::fill(trace, asked, &joined, &mut out.calls, &mut out.notes);
    if x.results {
        order::fill_results(trace, asked, &joined, &mut out.calls, &mut out.notes);
        wrapped_results::unwrap_agreeing(trace, asked, &joined, &mut out.calls, &mut out.notes);
    }
    // Only when an ask is left: most traces' asks are all joined.
    let blank = if used.contains(&false) {
        blank_spans::pair(trace, asked, |k| !used[k], &out.calls)
    } else {
        Vec::new()
    };
    let toolless = check(trace, seen, asked, used, &joined, carried, &blank, out);
    order_ties(&mut out.calls, &joined);
    (toolless, blank)
}

/// Joins each call to the model's request for it (by call id, else by
/// name or its display name, else by a namespaced name or equal
/// arguments) and takes the model's name and arguments where the span
/// lacks them. Returns which
/// requests were joined, the request each call was joined to, and which
/// calls' spans have a call id of their own (`ask_ids`).
pub(super) fn join(
    trace: &Trace,
    asked: &[AskedAt],
    calls: &mut [ToolCall],
) -> (Vec<bool>, Vec<Option<usize>>, Vec<bool>) {
    let index = Positions::of(trace);
    let mut by_id: IdMap<&str, Vec<usize>> = IdMap::default();
    for (k, at) in asked.iter().enumerate() {
        if let Some(id) = at.asked.id.as_deref() {
            by_id.entry(id).or_default().push(k);
        }
    }
    let mut used = vec![false; asked.len()];
    // The model's call each tool span's call was joined to.
    let mut joined: Vec<Option<usize>> = vec![None; calls.len()];
    let mut own = vec![false; calls.len()];
    // By call id (of the same tool first: ids may repeat across agents).
    for (c, call) in calls.iter_mut().enumerate() {
        let id = index
            .get(call.span_id)
            .and_then(|i| call_id(&trace.spans[i]));
        own[c] = id.is_some();
        let Some(ks) = id.and_then(|id| by_id.get(id)) else {
            continue;
        };
        let free = |k: &&usize| !used[**k];
        let k = ks
            .iter()
            .filter(free)
            .find(|&&k| asked[k].asked.name == call.name)
            .or_else(|| ks.iter().find(free));
        if let Some(&k) = k {
            used[k] = true;
            joined[c] = Some(k);
            take_from_model(call, &asked[k].asked);
        }
    }
    // By name (an MCP tool's own), in order: the same call.
    for (c, call) in calls.iter_mut().enumerate() {
        if joined[c].is_some() {
            continue;
        }
        let named =
            |k: usize| crate::extract::tool_name::normalized(&asked[k].asked.name) == call.name;
        // A tool's display name (`Delegate work to coworker`) is the name
        // the model called (`delegate_work_to_coworker`) spelt for people.
        let displayed =
            |k: usize| crate::extract::tool_name::is_display_of(&call.name, &asked[k].asked.name);
        if let Some(k) = same_args::pick(asked, &used, call, named) {
            used[k] = true;
            joined[c] = Some(k);
            bare_value::joined_by_name(call, &asked[k].asked);
        } else if let Some(k) = same_args::pick(asked, &used, call, displayed) {
            used[k] = true;
            joined[c] = Some(k);
            take_from_model(call, &asked[k].asked);
        }
    }
    // A namespaced name (`dynamic.getWeather`), or a wrapper class's name
    // with the arguments the model gave.
    for (c, call) in calls.iter_mut().enumerate() {
        if joined[c].is_some() {
            continue;
        }
        let namespaced = |k: usize| {
            let n = &asked[k].asked.name;
            call.name.len() > n.len()
                && call.name.ends_with(n.as_str())
                && matches!(
                    call.name.as_bytes()[call.name.len() - n.len() - 1],
                    b'.' | b':' | b'/'
                )
        };
        let args: Option<Value> = match &call.args {
            CallArgs::Text(t) => serde_json::from_str(t).ok(),
            other => other.value().cloned(),
        };
        let same_args = |k: usize| {
            args.as_ref()
                .is_some_and(|v| *v == asked[k].asked.args && !v.is_null())
        };
        let k = (0..asked.len())
            .find(|&k| !used[k] && namespaced(k))
            .or_else(|| (0..asked.len()).find(|&k| !used[k] && same_args(k)));
        if let Some(k) = k {
            used[k] = true;
            joined[c] = Some(k);
            take_from_model(call, &asked[k].asked);
        }
    }
    (used, joined, own)
}

/// Warns of the requests no call shows and the calls no request asked
/// for; returns the requests of agent runs without tool spans, and those a
/// blank tool span stands for (`blank`), instead.
#[allow(clippy::too_many_arguments)]
fn check(
    trace: &Trace,
    seen: &[Ctx],
    asked: &[AskedAt],
    mut used: Vec<bool>,
    joined: &[Option<usize>],
    carried: &[OpenAsk],
    blank: &[blank_spans::Pair],
    out: &mut Analysis,
) -> Vec<AskedAt> {
    // A retriever span not counted as a call still shows the call.
    for r in &out.retrievers {
        if let Some(k) = (0..asked.len()).find(|&k| !used[k] && asked[k].asked.name == r.name) {
            used[k] = true;
        }
    }
    // An agent run (a sub-agent on a bare LLM client, say) with no tool
    // span: its calls are in its conversation only.
    let run_of = |i: usize| {
        seen.get(i)
            .and_then(|c| c.agent)
            .map(|r| trace.spans[r].span_id)
    };
    // Built when first asked (most traces' requests are all joined).
    let runs_with_spans: OnceCell<HashSet<Option<SpanId>>> = OnceCell::new();
    let runs_with_spans = || {
        runs_with_spans.get_or_init(|| {
            let calls = out.calls.iter();
            calls.map(|c| c.agent.as_ref().map(|a| a.span_id)).collect()
        })
    };
    let mut toolless = Vec::new();
    let agent_runs = agent_tool::Runs::new(&out.runs);
    let mut unjoined = Vec::new();
    for (k, at) in asked.iter().enumerate().filter(|(k, _)| !used[*k]) {
        let run = run_of(at.span);
        let toolless_run = run.is_some() && !runs_with_spans().contains(&run);
        let stood_for = blank.iter().any(|(b, _)| *b == k);
        if toolless_run || stood_for || agent_runs.ran(trace, at) || merged::answered(trace, at) {
            toolless.push(at.clone());
            continue;
        }
        out.warnings
            .push(unjoined_warning(&at.asked, trace.spans[at.span].span_id));
        unjoined.push(at);
    }
    out.asked_records = elsewhere::records(trace, &unjoined);
    elsewhere::wait(trace, &unjoined, out);
    // A call inside a joined call of the same tool is the same call
    // recorded twice (one-call merge): asked of calls not joined only.
    let joined_names: OnceCell<HashMap<SpanId, &str>> = OnceCell::new();
    let echo = |c: &ToolCall| {
        let joined_names = joined_names.get_or_init(|| {
            let calls = out.calls.iter().zip(joined);
            let calls = calls.filter(|(_, j)| j.is_some());
            calls.map(|(c, _)| (c.span_id, c.name.as_str())).collect()
        });
        c.within
            .and_then(|w| joined_names.get(&w))
            .is_some_and(|n| *n == c.name)
    };
    // Built when first asked: most traces warn of nothing.
    let history: OnceCell<HashSet<(String, String)>> = OnceCell::new();
    let in_history = |c: &ToolCall| {
        let id = trace
            .spans
            .iter()
            .find(|s| s.span_id == c.span_id)
            .and_then(call_id);
        id.is_some_and(|id| {
            let history = history.get_or_init(|| history_asks(trace));
            history.contains(&(id.to_string(), c.name.clone()))
        })
    };
    for (call, _) in out
        .calls
        .iter()
        .zip(joined)
        // A record of a call another trace counts (`extract::twice`): its
        // model call is in that trace.
        .filter(|(c, j)| {
            j.is_none()
                && !echo(c)
                && !carried
                    .iter()
                    .any(|e| e.is_echo() && e.span_id == c.span_id)
                && !in_history(c)
        })
    {
        out.warnings.push(format!(
            "tool span {} shows a call of `{}` that no model output in this trace asked for",
            call.span_id, call.name
        ));
    }
    toolless
}

/// The (call id, tool) pairs the model's messages in the trace's requests
/// ask for: a model span may record only its run's last output, the
/// earlier asks being in the history it sent (ADK's `invoke_agent` under
/// OpenInference keeps the last output beside the whole conversation), so
/// a tool span of such an ask is no call the model did not ask for.
fn history_asks(trace: &Trace) -> HashSet<(String, String)> {
    let inputs: Vec<bool> = trace.spans.iter().map(has_any_input).collect();
    let requests = requests_of(trace, &inputs);
    let asks = requests
        .iter()
        .flat_map(|r| r.history.iter().chain(&r.last_turn));
    asks.filter_map(|a| Some((a.id.clone()?, a.name.clone())))
        .collect()
}

/// Calls that start at the same time (parallel calls, clocks of a
/// millisecond) in the order the model asked for them.
fn order_ties(calls: &mut [ToolCall], joined: &[Option<usize>]) {
    let mut starts: Vec<u64> = calls.iter().map(|c| c.start_time_unix_nano).collect();
    starts.sort_unstable();
    let tied = starts.windows(2).any(|w| w[0] == w[1]);
    if tied {
        let order: HashMap<SpanId, usize> = calls
            .iter()
            .zip(joined.iter())
            .filter_map(|(c, j)| j.map(|k| (c.span_id, k)))
            .collect();
        calls.sort_by_key(|c| {
            let k = order.get(&c.span_id).copied().unwrap_or(usize::MAX);
            (c.start_time_unix_nano, k)
        });
    }
}

/// The model's name (an MCP tool's own, as every witness names it) and,
/// where the span has none or an action object around them, its arguments.
/// A model-side name that is an output item's type (`item_names`) is no
/// function's: a span with arguments keeps its own name and arguments.
pub(super) fn take_from_model(call: &mut ToolCall, a: &Asked) {
    if item_names::is_item_type(&a.name) && !call.args.is_none() {
        return;
    }
    if call.args.is_none()
        || action_args::wraps_asked(&call.args, &a.args, &call.name)
        || bare_value::is_bare(&call.args, &a.args)
    {
        call.args = args_of(&a.args);
    }
    let name = crate::extract::tool_name::normalized(&a.name);
    call.mcp_server = call
        .mcp_server
        .take()
        .or(crate::extract::tool_name::server(&a.name, name));
    if call.name != name {
        call.span_name = Some(std::mem::replace(&mut call.name, name.to_string()));
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use crate::assemble::{Trace, TraceId};
    use crate::extract::test_support::{genai_asks, genai_chat, genai_result, genai_user};
    use crate::extract::tests::sp;
    use crate::extract::Extractor;

    /// A made-up vendor's tool span of `book` under call id `call_7`, and
    /// a later model span whose request holds the ask `history_id` (and its
    /// answer) in its history: the warnings that no model output asked.
    fn warnings(history_id: &str) -> Vec<String> {
        let tool = sp(
            2,
            Some(1),
            (10, 20),
            "execute_tool book",
            &[
                ("gen_ai.operation.name", "execute_tool"),
                ("gen_ai.tool.name", "book"),
                ("gen_ai.tool.call.id", "call_7"),
                ("gen_ai.tool.call.arguments", "{\"room\": 4}"),
            ],
        );
        let input = json!([
            genai_user(),
            genai_asks(&[(history_id, "book", json!({"room": 4}))]),
            genai_result(history_id, "booked"),
        ]);
        // Its output asks for another call (the cross-check needs an ask).
        let output = json!([genai_asks(&[("call_9", "notify", json!({}))])]);
        let model = genai_chat(3, (30, 40), "chat acme", input, output);
        let t = Trace::new(
            TraceId([6; 16]),
            vec![sp(1, None, (0, 50), "agent", &[]), tool, model],
            0,
        );
        let warnings = Extractor::default().analyze(&t).warnings;
        warnings
            .into_iter()
            .filter(|w| w.contains("no model output"))
            .collect()
    }

    /// A turn of two parallel calls, `tune` with its tool span and `book`
    /// without (its span lost), then a merged span answering `merged_ids`,
    /// then the request answering both: the calls and the warnings.
    fn merged_turn(merged_ids: &[&str]) -> (Vec<String>, Vec<String>) {
        let asks = genai_asks(&[
            ("call_1", "tune", json!({"organ": "west"})),
            ("call_2", "book", json!({"day": 12})),
        ]);
        let first = genai_chat(
            2,
            (10, 20),
            "chat acme",
            json!([genai_user()]),
            json!([asks]),
        );
        let tune = sp(
            3,
            Some(1),
            (22, 25),
            "execute_tool tune",
            &[
                ("gen_ai.operation.name", "execute_tool"),
                ("gen_ai.tool.name", "tune"),
                ("gen_ai.tool.call.id", "call_1"),
                ("gen_ai.tool.call.arguments", "{\"organ\": \"west\"}"),
            ],
        );
        let parts: Vec<_> = merged_ids
            .iter()
            .map(|id| json!({"functionResponse": {"id": id, "name": "x", "response": {}}}))
            .collect();
        let responses = json!({"content": {"role": "user", "parts": parts}}).to_string();
        let merged = sp(
            4,
            Some(1),
            (26, 27),
            "execute_tool (merged)",
            &[
                ("gen_ai.operation.name", "execute_tool"),
                ("gen_ai.tool.name", "(merged tools)"),
                ("gcp.vertex.agent.tool_response", &responses),
            ],
        );
        let input = json!([
            genai_user(),
            asks,
            genai_result("call_1", "tuned"),
            genai_result("call_2", "hall closed"),
        ]);
        let last = genai_chat(5, (30, 40), "chat acme", input, json!([]));
        let spans = vec![
            sp(1, None, (0, 50), "agent", &[]),
            first,
            tune,
            merged,
            last,
        ];
        let a = Extractor::default().analyze(&Trace::new(TraceId([6; 16]), spans, 0));
        (a.calls.iter().map(|c| c.name.clone()).collect(), a.warnings)
    }

    #[test]
    fn an_ask_a_merged_span_answers_ran_though_no_tool_span_shows_it() {
        let (mut calls, warnings) = merged_turn(&["call_1", "call_2"]);
        calls.sort();
        assert_eq!(calls, ["book", "tune"], "{warnings:?}");
        assert!(warnings.is_empty(), "{warnings:?}");
        // Near miss: the merged span answers the other call only.
        let (calls, warnings) = merged_turn(&["call_1", "call_22"]);
        assert_eq!(calls, ["tune"]);
        assert!(
            warnings.iter().any(|w| w.contains("call_2")),
            "{warnings:?}"
        );
    }

    #[test]
    fn a_tool_spans_call_asked_in_a_requests_history_was_asked() {
        assert!(warnings("call_7").is_empty(), "{:?}", warnings("call_7"));
        // Near miss: the history asks for another call.
        let other = warnings("call_8");
        assert!(
            other.iter().any(|w| w.contains("no model output")),
            "{other:?}"
        );
    }
}
