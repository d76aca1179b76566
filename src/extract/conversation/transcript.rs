//! Calls and their results in one body (docs/conventions.md, "The
//! conversation witness", "A run's transcript").
//!
//! Some tracers of agent frameworks record no tool span and no model call,
//! only an agent run whose output lists what happened in it: the calls the
//! model asked for (each an object with a call id, a tool name and its
//! arguments) and the results that came back (each naming the call id it
//! answers). MLflow's AutoGen autolog writes AutoGen's `ToolCallRequestEvent`
//! and `ToolCallExecutionEvent` messages so. When a trace gave no call and
//! no model output asked for one, the output-like JSON attributes of its
//! spans that say they are an agent's run (a kind-like attribute `AGENT`)
//! are read as such transcripts: a call is counted when a result in the
//! same body answers its id; a call never answered is not. So is a chain's
//! run (`CHAIN`: a graph's, whose output is its final state of messages)
//! in a trace that holds a model call: the run's model turns were traced
//! there, only the tool steps were not (NVIDIA NeMo Agent Toolkit with its
//! profiler records the model call and the graph, not the tool nodes).
//! Other spans' outputs are not, nor a chain's in a trace without a model
//! call: a workflow's state repeats calls that tool spans of other traces
//! record.

use std::collections::{HashMap, HashSet};
use std::sync::OnceLock;

use memchr::memmem::Finder;
use serde_json::{Map, Value};

use super::bodies::{is_agent_run, is_model_call, is_run};
use super::{conversation_call, Answer, MAX_DEPTH};
use crate::assemble::Trace;
use crate::extract::requested::{Asked, Tree};
use crate::extract::sides::{side_of, Side};
use crate::extract::{Analysis, Ctx, Extractor};

/// The form these calls are said to come in (`transcript-messages`).
const FORM: &str = "transcript";

/// Keys of the call id a result answers (not a bare `id`: every message
/// has one).
const ANSWERS_ID: [&str; 5] = [
    "call_id",
    "tool_call_id",
    "tool_use_id",
    "toolCallId",
    "toolUseId",
];
/// Keys of a result's content.
const CONTENT: [&str; 4] = ["content", "result", "output", "response"];

/// Whether text may name the call id a result answers.
fn may_hold_answers(text: &str) -> bool {
    static FINDERS: OnceLock<[Finder<'static>; 5]> = OnceLock::new();
    let finders = FINDERS.get_or_init(|| ANSWERS_ID.map(|k| Finder::new(k.as_bytes())));
    finders.iter().any(|f| f.find(text.as_bytes()).is_some())
}

/// Every call object with an id, and every result naming the id it
/// answers, in `v` (document order).
fn collect(v: &Value, depth: usize, calls: &mut Vec<Asked>, answers: &mut Vec<Answer>) {
    if depth > MAX_DEPTH {
        return;
    }
    match v {
        Value::Array(items) => items
            .iter()
            .for_each(|x| collect(x, depth + 1, calls, answers)),
        Value::Object(o) => {
            if let Some(call) = v.call().filter(|c| c.id.is_some()) {
                calls.push(call);
            } else if let Some(answer) = answer_of(o) {
                answers.push(answer);
            }
            o.values()
                .filter(|x| matches!(x, Value::Array(_) | Value::Object(_)))
                .for_each(|x| collect(x, depth + 1, calls, answers));
        }
        _ => {}
    }
}

fn answer_of(o: &Map<String, Value>) -> Option<Answer> {
    let id = ANSWERS_ID
        .iter()
        .find_map(|k| o.get(*k).and_then(Value::as_str))
        .filter(|id| !id.is_empty())?;
    let content = CONTENT.iter().find_map(|k| o.get(*k))?;
    Some(Answer {
        id: Some(id.to_string()),
        name: o.get("name").and_then(Value::as_str).map(str::to_string),
        content: Some(content.clone()),
        ..Answer::default()
    })
}

/// The calls of a trace that gave none otherwise, from the transcripts in
/// its spans' outputs (see the module's doc), once per call id and tool.
pub(super) fn calls(x: &Extractor, trace: &Trace, seen: &[Ctx], out: &mut Analysis) {
    let mut counted: HashSet<(String, String)> = HashSet::new();
    // Asked once, at the first chain span: most traces have none.
    let mut model_traced: Option<bool> = None;
    let mut from_chain = false;
    for (i, s) in trace.spans.iter().enumerate() {
        // One pass over the keys for most spans: neither kind.
        if !is_run(s) {
            continue;
        }
        if !is_agent_run(s) {
            let traced = || trace.spans.iter().any(is_model_call);
            if !*model_traced.get_or_insert_with(traced) {
                continue;
            }
            from_chain = true;
        }
        for (key, value) in s.span.attributes() {
            let Some(text) = value.and_then(|v| v.as_str()) else {
                continue;
            };
            if side_of(key) != Some(Side::Output)
                || !text.trim_start().starts_with(['{', '['])
                || !may_hold_answers(text)
            {
                continue;
            }
            let Ok(v) = serde_json::from_str::<Value>(text) else {
                continue;
            };
            let (mut asked, mut answers) = (Vec::new(), Vec::new());
            collect(&v, 0, &mut asked, &mut answers);
            let by_id: HashMap<&str, &Answer> = answers
                .iter()
                .filter_map(|a| a.id.as_deref().map(|id| (id, a)))
                .collect();
            for a in &asked {
                let Some(id) = a.id.as_deref() else {
                    continue;
                };
                let Some(answer) = by_id
                    .get(id)
                    .filter(|ans| ans.name.as_deref().is_none_or(|n| n == a.name))
                else {
                    continue;
                };
                if !counted.insert((id.to_string(), a.name.clone())) {
                    continue;
                }
                let call = conversation_call(x, trace, seen, out, i, a, FORM, Some((i, answer)));
                out.calls.push(call);
            }
        }
    }
    if out.calls.is_empty() {
        return;
    }
    out.notes.push(if from_chain {
        format!(
            "{} call(s) read from a transcript of calls and results in a span's output, an agent's or a graph's final state (no tool span, and no model output in this trace asking for a call)",
            out.calls.len()
        )
    } else {
        format!(
            "{} call(s) read from a transcript of calls and results in a span's output (no tool span and no model output in this trace)",
            out.calls.len()
        )
    });
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use crate::assemble::{SpanRecord, Trace, TraceId};
    use crate::extract::tests::sp;
    use crate::extract::Extractor;

    /// A made-up vendor's graph run (`zeta.span_kind = CHAIN`) whose output
    /// is its final state: a LangChain-shaped message list with the model's
    /// call and the tool's answer.
    fn graph() -> SpanRecord {
        let state = json!({"messages": [
            {"type": "human", "content": "Tide at Brest?"},
            {"type": "ai", "content": "", "tool_calls": [
                {"name": "tide", "args": {"port": "Brest"}, "id": "z1", "type": "tool_call"}]},
            {"type": "tool", "name": "tide", "tool_call_id": "z1", "content": "06:12"},
            {"type": "ai", "content": "High tide at 06:12."},
        ]})
        .to_string();
        sp(
            1,
            None,
            (0, 100),
            "graph",
            &[("zeta.span_kind", "CHAIN"), ("zeta.outputs", &state)],
        )
    }

    /// The graph's model call, its output not recorded as messages.
    fn model() -> SpanRecord {
        let asked = json!([{"type": "human", "content": "Tide at Brest?"}]).to_string();
        sp(
            2,
            Some(1),
            (10, 40),
            "zeta-model",
            &[("zeta.span_kind", "LLM"), ("zeta.inputs", &asked)],
        )
    }

    fn calls(spans: Vec<SpanRecord>) -> Vec<(String, Option<serde_json::Value>)> {
        let t = Trace::new(TraceId([5; 16]), spans, 0);
        let a = Extractor::default().analyze(&t);
        a.calls
            .iter()
            .map(|c| (c.name.clone(), c.args.value().cloned()))
            .collect()
    }

    #[test]
    fn a_graph_s_final_state_is_a_transcript_where_its_model_call_was_traced() {
        assert_eq!(
            calls(vec![graph(), model()]),
            [("tide".to_string(), Some(json!({"port": "Brest"})))]
        );
        // Without a model call in the trace, a workflow's state may repeat
        // calls that other traces' tool spans record: not read.
        assert!(calls(vec![graph()]).is_empty());
    }
}
