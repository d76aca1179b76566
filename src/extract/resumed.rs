//! A tool span that ran a call an earlier trace asked for and left open,
//! named after the framework's tool class (`twice::runs_ask`), is handed to
//! "the request carrying its result", which counts it under the model's
//! name. In a run resumed in a trace of its own after an interrupt
//! (LangChain's human-in-the-loop middleware), that request is in the same
//! trace as the tool spans and may carry neither call ids nor tool names
//! (OpenLIT's LangChain.js integration): nothing would count the call. A
//! call is never lost: when the trace read holds a request after those
//! spans whose results end it without ids or names, the spans' calls stay
//! counted here, named after the model's call of their id, with the
//! arguments the tool ran with (a human may have edited them); with as
//! many results as spans, each takes the result in the order the calls
//! started.

use std::borrow::Cow;
use std::collections::{HashMap, HashSet};

use super::conversation::resumed::bare_results_after;
use super::open::{OpenAsk, ASKED_SPAN_FORM};
use super::{Analysis, CallResult};
use crate::assemble::{SpanId, Trace};

/// Keeps the calls the `carried` entries of [`ASKED_SPAN_FORM`] hand to a
/// request that cannot count them (see the module's doc), noting each;
/// gives back the entries left for `echo::absorb`.
pub(crate) fn keep<'a>(
    trace: &Trace,
    carried: &'a [OpenAsk],
    a: &mut Analysis,
) -> Cow<'a, [OpenAsk]> {
    let handed = |e: &OpenAsk| e.form == ASKED_SPAN_FORM;
    if !carried.iter().any(handed) {
        return Cow::Borrowed(carried);
    }
    // The span calls by span, once: a trace may hand on thousands.
    let mut by_span: HashMap<SpanId, Vec<usize>> = HashMap::new();
    for (k, c) in a.calls.iter().enumerate().filter(|(_, c)| c.from.is_none()) {
        by_span.entry(c.span_id).or_default().push(k);
    }
    // The calls handed on, by start: (call, entry's position in `carried`).
    let mut calls: Vec<(usize, usize)> = carried
        .iter()
        .enumerate()
        .filter(|(_, e)| handed(e))
        .filter_map(|(i, e)| {
            let on_span = by_span.get(&e.span_id)?;
            let k = *on_span.iter().find(|&&k| a.calls[k].name == e.asked.name)?;
            Some((k, i))
        })
        .collect();
    calls.sort_by_key(|&(k, _)| (a.calls[k].start_time_unix_nano, k));
    let Some(first) = calls.first().map(|&(k, _)| a.calls[k].start_time_unix_nano) else {
        return Cow::Borrowed(carried);
    };
    let Some(results) = bare_results_after(trace, first) else {
        return Cow::Borrowed(carried);
    };
    // As many results as calls: each its own, by order; else none taken.
    let results = (results.len() == calls.len()).then_some(results);
    let mut results = results.into_iter().flatten();
    for &(k, i) in &calls {
        let e = &carried[i];
        let result = results.next();
        let c = &mut a.calls[k];
        let Some(model_name) = e.asked.args.as_str() else {
            continue;
        };
        a.notes.push(format!(
            "tool call `{}` (span {}) ran call {} that the model asked for as `{}` in trace {}; the request after it in this trace carries its result without a call id or tool name, so none counts it there: counted here under the model's name, with the arguments the tool ran with (the result by order when the results are as many as the calls)",
            c.name,
            c.span_id,
            e.asked.id.as_deref().unwrap_or_default(),
            model_name,
            e.trace_id
        ));
        c.name = model_name.to_string();
        if c.result.is_none() {
            c.result = result.map(CallResult::Value);
        }
    }
    let kept: HashSet<usize> = calls.iter().map(|&(_, i)| i).collect();
    Cow::Owned(
        carried
            .iter()
            .enumerate()
            .filter(|(i, _)| !kept.contains(i))
            .map(|(_, e)| e.clone())
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use serde_json::{json, Value};

    use crate::assemble::{Trace, TraceId};
    use crate::extract::test_support::{in_process, read_in_order};
    use crate::extract::tests::sp;

    /// Trace 1: a made-up vendor's model call asking for `lookup` (k1) and
    /// `moor` (k2, two hours).
    fn asking() -> Trace {
        let calls = json!([{"role": "assistant", "tool_calls": [
            {"id": "k1", "type": "function", "function": {"name": "lookup", "arguments": "{\"q\": \"tide\"}"}},
            {"id": "k2", "type": "function", "function": {"name": "moor", "arguments": "{\"hours\": 2}"}},
        ]}])
        .to_string();
        let attrs = [
            ("gen_ai.operation.name", "chat"),
            ("gen_ai.output.messages", calls.as_str()),
        ];
        let s = in_process(sp(1, None, (0, 10), "acme.chat", &attrs), "p");
        Trace::new(TraceId([1; 16]), vec![s], 0)
    }

    /// Trace 2, the run resumed: two class-named tool spans (`moor` run
    /// with three hours, as a human edited it), then a model call whose
    /// request ends with `results`, without ids or names.
    fn resumed(results: &[&str]) -> Trace {
        let tool = |id: u8, call: &str, args: &str, when| {
            let attrs = [
                ("gen_ai.operation.name", "execute_tool"),
                ("gen_ai.tool.name", "DynamicStructuredTool"),
                ("gen_ai.tool.call.id", call),
                ("gen_ai.tool.call.arguments", args),
                ("gen_ai.tool.call.result", "[object AcmeMessage]"),
            ];
            in_process(sp(id, None, when, "execute_tool", &attrs), "p")
        };
        let mut input = vec![
            json!({"role": "user", "content": "plan my day"}),
            json!({"role": "assistant", "content": ""}),
        ];
        input.extend(
            results
                .iter()
                .map(|r| json!({"role": "tool", "content": r})),
        );
        let input = Value::Array(input).to_string();
        let output = json!([{"role": "assistant", "content": "done"}]).to_string();
        let chat = [
            ("gen_ai.operation.name", "chat"),
            ("gen_ai.input.messages", input.as_str()),
            ("gen_ai.output.messages", output.as_str()),
        ];
        let spans = vec![
            tool(1, "k1", "{\"q\": \"tide\"}", (20, 30)),
            tool(2, "k2", "{\"hours\": 3}", (31, 40)),
            in_process(sp(3, None, (50, 60), "acme.chat", &chat), "p"),
        ];
        Trace::new(TraceId([2; 16]), spans, 0)
    }

    #[test]
    fn a_resumed_runs_class_named_calls_stay_counted_under_the_models_names() {
        let got = read_in_order(vec![asking(), resumed(&["high", "moored"])]);
        let calls: Vec<_> = got[1]
            .calls
            .iter()
            .map(|c| {
                let result = c.result.as_ref().map(|r| r.to_value());
                (
                    c.name.as_str(),
                    c.args.parsed().map(|a| a.into_owned()),
                    result,
                )
            })
            .collect();
        assert_eq!(
            calls,
            [
                ("lookup", Some(json!({"q": "tide"})), Some(json!("high"))),
                ("moor", Some(json!({"hours": 3})), Some(json!("moored"))),
            ]
        );
        // Results not as many as the calls: the calls stay, without them.
        let got = read_in_order(vec![asking(), resumed(&["high"])]);
        let names: Vec<_> = got[1].calls.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(names, ["lookup", "moor"]);
        assert!(got[1].calls.iter().all(|c| c.result.is_none()));
    }
}
