//! One ask recorded twice (docs/conventions.md, "The conversation
//! witness", "Each model call its own trace"): OpenLLMetry's LangChain.js
//! instrumentation writes every chain run as a trace of its own, and a
//! LangGraph agent's model output is the output of the agent node's chain
//! and again of the graph's (a supervisor's worker, a swarm's agent). Each
//! copy leaves the same call open; the later copy, still open once the
//! first was answered, would take a later result that carries no call id
//! (by order) and count the call a second time. An ask the carry already
//! keeps open under the same call id, in the same process, of the same tool
//! with the same arguments, both read from chain outputs, is such a copy: it
//! is not kept again. Model outputs of other forms stay apart: a run
//! replayed with the same call ids asks for its calls again. Such a record
//! of another form (a model client's span beside the chains) stays open
//! after a request answered the ask; it takes no later result without a
//! call id by order ([`answered_before`]).

use super::{key, Echo, Kept, OpenAsk, ASK_ID, CALL_ID};
use crate::extract::conversation::chain_outputs::FORM as CHAIN_OUTPUT;
use crate::extract::open::resource_key;
use crate::value::json_eq;

/// Whether `a` is a copy of an ask `asks` keeps open.
pub(super) fn is_copy(asks: &Kept<OpenAsk>, a: &OpenAsk) -> bool {
    let Some(id) = a.asked.id.as_deref() else {
        // No id to say it is the same call: two asks of one tool with
        // equal arguments may be two calls.
        return false;
    };
    if a.form != CHAIN_OUTPUT {
        return false;
    }
    asks.any_under(key(ASK_ID, id), |k| {
        k.form == CHAIN_OUTPUT
            && k.run == a.run
            && k.asked.id.as_deref() == Some(id)
            && k.asked.name == a.asked.name
            && k.asked.args == a.asked.args
    })
}

/// Whether a request already answered ask `a`: a call counted from the
/// conversation under its call id, of its tool with its arguments, in its
/// process, after it was asked (`calls`: the calls kept). Another record
/// of that ask (a client's span beside a framework's chain outputs) stays
/// kept; results without a call id in a later request are not its
/// answers: a request carries one result per call, and the request
/// recorded twice answered it in its other record (`conversation::twins`).
pub(super) fn answered_before(calls: &Kept<Echo>, a: &OpenAsk) -> bool {
    let Some(id) = a.asked.id.as_deref() else {
        return false;
    };
    let name = a.asked.name.as_str();
    calls.any_under(key(CALL_ID, (name, id)), |c| {
        c.from_conversation
            && c.id.as_deref() == Some(id)
            && c.name == name
            && json_eq(&c.args, &a.asked.args)
            && c.end >= a.end_time_unix_nano
            && c.resource.as_deref().map(resource_key) == Some(a.run)
    })
}

#[cfg(test)]
mod tests {
    //! Made-up tools and values in OpenLLMetry LangChain.js's shape: every
    //! span a trace of its own, the model's calls in chain outputs, the
    //! model spans' requests carrying results without call ids.

    use serde_json::{json, Value};

    use crate::assemble::{Trace, TraceId};
    use crate::extract::test_support::{in_process, read_in_order};
    use crate::extract::tests::sp;
    use crate::extract::Analysis;

    fn ai(id: &str, args: &Value) -> Value {
        json!({"lc": 1, "type": "constructor", "id": ["langchain_core", "messages", "AIMessage"],
               "kwargs": {"content": "", "tool_calls": [
                   {"name": "seat", "args": args, "type": "tool_call", "id": id}]}})
    }

    /// A chain run, a trace of its own, whose output is `output`.
    fn chain(trace: u8, when: (u64, u64), name: &str, output: &Value) -> Trace {
        let output = output.to_string();
        let attrs = [
            ("traceloop.span.kind", "workflow"),
            ("traceloop.entity.output", output.as_str()),
        ];
        let s = in_process(sp(1, None, when, name, &attrs), "p");
        Trace::new(TraceId([trace; 16]), vec![s], 0)
    }

    /// A model call, a trace of its own, its request ending with the
    /// results `results` (no call ids).
    fn chat(trace: u8, when: (u64, u64), results: &[&str]) -> Trace {
        let mut input =
            vec![json!({"role": "user", "parts": [{"type": "text", "content": "a seat"}]})];
        for r in results {
            input.push(json!({"role": "assistant", "parts": [{"type": "text", "content": ""}]}));
            input.push(json!({"role": "tool", "parts": [{"type": "text", "content": r}]}));
        }
        let output = json!([{"role": "assistant", "parts": [{"type": "text", "content": "ok"}]}]);
        let (input, output) = (Value::Array(input).to_string(), output.to_string());
        let attrs = [
            ("gen_ai.operation.name", "chat"),
            ("gen_ai.input.messages", input.as_str()),
            ("gen_ai.output.messages", output.as_str()),
        ];
        let s = in_process(sp(1, None, when, "chat acme-1", &attrs), "p");
        Trace::new(TraceId([trace; 16]), vec![s], 0)
    }

    fn seats(got: &[Analysis]) -> Vec<String> {
        got.iter()
            .flat_map(|a| &a.calls)
            .map(|c| format!("{} {:?}", c.name, c.result))
            .collect()
    }

    /// The agent node's chain and the graph's both output the ask; the
    /// next request answers it, a later one carries one more result (a
    /// handoff the framework wrote, no model's ask).
    fn run(copy: &Value) -> Vec<Analysis> {
        let args = json!({"town": "Braga"});
        read_in_order(vec![
            chain(1, (10, 12), "workflow RunnableSequence", &ai("k1", &args)),
            chain(2, (10, 14), "workflow CompiledStateGraph", copy),
            chat(3, (20, 30), &["seat 3"]),
            chat(4, (40, 50), &["seat 3", "handed back"]),
        ])
    }

    #[test]
    fn one_ask_in_two_chain_outputs_is_one_call() {
        let args = json!({"town": "Braga"});
        let got = run(&json!({"messages": [ai("k1", &args)]}));
        let seats = seats(&got);
        assert_eq!(seats.len(), 1, "{seats:?}");
        assert!(seats[0].contains("seat 3"), "{seats:?}");
    }

    #[test]
    fn another_id_or_other_arguments_are_another_call() {
        // Near miss: the second output asks under another id, or with other
        // arguments: two asks, each answered by order.
        for copy in [
            json!({"messages": [ai("k2", &json!({"town": "Braga"}))]}),
            json!({"messages": [ai("k1", &json!({"town": "Faro"}))]}),
        ] {
            assert_eq!(seats(&run(&copy)).len(), 2, "{copy}");
        }
    }
}
