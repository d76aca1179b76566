//! A call paused for a human's approval and run later (docs/conventions.md,
//! "One call, several spans", "A call paused for approval").
//!
//! A framework with an approval or interrupt step may record a call twice:
//! once when the model asked for it and the run stopped for a decision (the
//! *attempt*), once when the run resumed, after the approval, and the tool
//! ran. The attempt's span holds a text the framework answers for the tool
//! while it waits (vocabulary `pending_results`: Google ADK's confirmation
//! request). The model asked once and the tool ran once: the attempt is not
//! a call of its own, the run counts it.
//!
//! Reading the traces in input order ([`super::carry::Carry`]), a trace
//! whose calls are all attempts is held (as a lone MCP client trace is:
//! `extract::echo`) until the next trace with calls; an attempt is then the
//! record of that trace's call when all of these hold: the same tool; the
//! same call id when the attempt has one; equal arguments when the attempt
//! has any; the run has a result and is no attempt itself; it started after
//! the attempt ended; and both ran in the same process, or the run's call
//! has the model's call id in another process of the same program
//! (resource attributes equal but for the instance's: vocabulary
//! `process_instance_keys`). Each run takes one attempt at most. An attempt
//! no run follows (rejected, or the input ends) stays a call.
//!
//! An attempt without any result (OpenAI Agents' `needs_approval` under the
//! OTel GenAI package or Overmind) is not held here: nothing tells it from a
//! call whose writer records no result. `carry::deferred` holds such a call
//! when its span has arguments and joins it to a later run of the same
//! process that answers it.

use opentelemetry_proto::tonic::resource::v1::Resource;
use serde_json::Value;

use super::open::{Echo, OpenAsk, PENDING_FORM};
use super::requested::Asked;
use super::rules::builtin_list;
use super::{Analysis, CallResult, CallStatus, ToolCall};

/// Whether `v` is a text a framework answers for a tool paused for
/// approval: the text itself, or an object whose one field holds it.
fn is_pending_text(v: &Value) -> bool {
    let texts = builtin_list("pending_results");
    let is = |s: &str| texts.iter().any(|t| t == s.trim());
    match v {
        Value::String(s) => is(s),
        Value::Object(m) if m.len() == 1 => m.values().all(|v| v.as_str().is_some_and(is)),
        _ => false,
    }
}

/// Whether `c`'s result is a framework's pending text. A result far longer
/// than every such text is not read (most results are not: no parse).
fn is_pending(c: &ToolCall) -> bool {
    let Some(r) = &c.result else {
        return false;
    };
    let texts = builtin_list("pending_results");
    let longest = texts.iter().map(String::len).max().unwrap_or(0);
    match r {
        CallResult::Json(text) if text.len() > 2 * longest + 64 => false,
        // JSON text without an escape holds each of its strings as they
        // are: one that holds no pending text has no string that trims to
        // one (not parsed either).
        CallResult::Json(text)
            if !text.contains('\\') && !texts.iter().any(|t| text.contains(t.as_str())) =>
        {
            false
        }
        CallResult::Json(_) => is_pending_text(&r.to_value()),
        CallResult::Value(Value::String(text)) if text.len() > 2 * longest + 64 => false,
        // Asked of the value itself (`to_value` would copy it).
        CallResult::Value(v) => is_pending_text(v),
    }
}

/// Whether `c` has a result. A run's pending text is not looked for
/// here (every call of every trace is asked): a trace of pending texts is
/// held, its calls never a run (`Echo::pending`).
pub(crate) fn answered(c: &ToolCall) -> bool {
    c.result.is_some()
}

/// Whether `c` failed with the framework's pause (vocabulary
/// `pause_errors`): its error type is one, or its error text names one as
/// a word (`GraphInterrupt: [...]`, or after the pause's payload in a
/// stack trace). Only a failed call's text is searched.
pub(crate) fn paused(c: &ToolCall) -> bool {
    if c.status != CallStatus::Error {
        return false;
    }
    let marks = builtin_list("pause_errors");
    if let Some(t) = &c.error_type {
        if marks.iter().any(|m| m == t.trim()) {
            return true;
        }
    }
    c.error_message
        .as_deref()
        .is_some_and(|text| marks.iter().any(|m| names_word(text, m)))
}

/// Whether `word` stands in `text` as a word of its own: neither side
/// touches a letter, a digit or `_` (`MyGraphInterruptError` is another
/// type).
fn names_word(text: &str, word: &str) -> bool {
    let inner = |b: u8| b.is_ascii_alphanumeric() || b == b'_';
    text.match_indices(word).any(|(at, _)| {
        let before = text.as_bytes()[..at].last().copied();
        let after = text.as_bytes().get(at + word.len()).copied();
        !before.is_some_and(inner) && !after.is_some_and(inner)
    })
}

/// Whether `c` is an attempt (see the module's doc): read from a span,
/// and either failed with the framework's pause or, not failed, holding
/// a pending text.
pub(crate) fn is_attempt(c: &ToolCall) -> bool {
    c.from.is_none() && (paused(c) || (c.status != CallStatus::Error && is_pending(c)))
}

/// Whether the trace `a` holds attempts to wait for: all its calls are
/// attempts, or one failed with the framework's pause (whose span says
/// itself that the run will call the tool again; the trace's other calls
/// stay counted).
pub(crate) fn attempts(a: &Analysis) -> bool {
    !a.calls.is_empty()
        && (a.calls.iter().all(is_attempt) || a.calls.iter().any(|c| c.from.is_none() && paused(c)))
}

/// Whether `run`, a call of a trace read after the attempt's, is the run
/// of `attempt` (see the module's doc; `attempt.pending` holds).
pub(crate) fn runs(attempt: &Echo, run: &Echo) -> bool {
    let args = attempt.args.is_null()
        || (!run.args.is_null() && super::merge::same_args(&attempt.args, &run.args));
    // A paused attempt with the run's arguments may carry the framework's
    // run id where the run has the model's call id (OpenLIT's LangChain.js
    // on the failed run), and either may be named after the tool class
    // (OpenLLMetry's LangChain.js on a run with no ToolMessage).
    let same_args = args && !attempt.args.is_null();
    let ids = match (&attempt.id, &run.id) {
        (Some(a), Some(r)) => a == r || (attempt.paused && same_args),
        (Some(_), None) => attempt.paused && same_args,
        (None, _) => true,
    };
    let placeholder = |n: &str| {
        builtin_list("placeholder_tool_names")
            .iter()
            .any(|p| p == n)
    };
    let names = attempt.name == run.name
        || (attempt.paused && same_args && (placeholder(&attempt.name) || placeholder(&run.name)));
    !run.pending
        && run.answered
        && attempt.trace_id != run.trace_id
        && names
        && run.start >= attempt.end
        && ids
        && args
        && (super::open::same_process(&attempt.resource, &run.resource)
            || (run.id.is_some() && same_program(attempt, run)))
}

/// Whether two calls ran in processes of one program: their resources'
/// attributes equal but for those naming the instance.
fn same_program(a: &Echo, b: &Echo) -> bool {
    let (Some(a), Some(b)) = (&a.resource, &b.resource) else {
        return false;
    };
    let instance = builtin_list("process_instance_keys");
    let kept = |r: &Resource| {
        let mut kv: Vec<_> = r
            .attributes
            .iter()
            .filter(|kv| !instance.contains(&kv.key))
            .map(|kv| (kv.key.clone(), format!("{:?}", kv.value)))
            .collect();
        kv.sort();
        kv
    };
    kept(a) == kept(b)
}

/// The carried entry saying that `attempt` was run as `run`.
pub(crate) fn carried(attempt: &Echo, run: &Echo) -> OpenAsk {
    OpenAsk {
        asked: Asked {
            id: attempt.id.clone(),
            name: attempt.name.clone(),
            args: Value::Null,
        },
        form: PENDING_FORM,
        trace_id: run.trace_id,
        span_id: attempt.span_id,
        end_time_unix_nano: run.end,
        run: 0,
    }
}

/// The carried entries for the held attempts `lone` that calls of a later
/// trace (`calls`) ran; `used` marks the calls taken (one attempt each).
pub(crate) fn ran(lone: &[Echo], calls: &[Echo], used: &mut Vec<bool>) -> Vec<OpenAsk> {
    used.resize(calls.len(), false);
    let mut out = Vec::new();
    for l in lone.iter().filter(|l| l.pending) {
        let found = (0..calls.len()).find(|&k| !used[k] && runs(l, &calls[k]));
        if let Some(k) = found {
            used[k] = true;
            out.push(carried(l, &calls[k]));
        }
    }
    out
}

/// The note of an attempt not counted: `c` the attempt, `e` its entry.
pub(crate) fn note(c: &ToolCall, e: &OpenAsk) -> String {
    format!(
        "tool call `{}` (span {}) is an attempt paused for approval ({}) that trace {} ran after the approval ({}): counted there, not again",
        c.name,
        c.span_id,
        if paused(c) {
            "failed with the framework's pause"
        } else if c.result.is_some() {
            "the framework's pending answer"
        } else {
            "no result"
        },
        e.trace_id,
        match &e.asked.id {
            Some(id) => format!("same call id {id}"),
            None => "same tool and arguments".to_string(),
        }
    )
}

#[cfg(test)]
mod tests {
    use crate::assemble::{Trace, TraceId};
    use crate::extract::test_support::{in_process, read_in_order};
    use crate::extract::tests::sp;

    const WAIT: &str =
        r#"{"error": "This tool call requires confirmation, please approve or reject."}"#;
    const ARGS: &str = r#"{"room": 12}"#;

    /// A made-up vendor's agent run over `when` in process `process`, with
    /// one tool span of `book_room` at its end: call id `id`, arguments
    /// `args` and result `result`, each when not empty.
    fn run(
        trace: u8,
        when: (u64, u64),
        process: &str,
        id: &str,
        args: &str,
        result: &str,
    ) -> Trace {
        let mut attrs = vec![
            ("gen_ai.operation.name", "execute_tool"),
            ("gen_ai.tool.name", "book_room"),
        ];
        if !args.is_empty() {
            attrs.push(("gen_ai.tool.call.arguments", args));
        }
        if !id.is_empty() {
            attrs.push(("gen_ai.tool.call.id", id));
        }
        if !result.is_empty() {
            attrs.push(("gen_ai.tool.call.result", result));
        }
        let agent = [
            ("gen_ai.operation.name", "invoke_agent"),
            ("gen_ai.agent.name", "desk"),
        ];
        let spans = vec![
            in_process(sp(1, None, when, "invoke_agent desk", &agent), process),
            in_process(
                sp(
                    2,
                    Some(1),
                    (when.1 - 10, when.1 - 10),
                    "execute_tool book_room",
                    &attrs,
                ),
                process,
            ),
        ];
        Trace::new(TraceId([trace; 16]), spans, 0)
    }

    fn counts(traces: Vec<Trace>) -> (Vec<usize>, Vec<String>) {
        let got = read_in_order(traces);
        let notes = got.iter().flat_map(|a| a.notes.clone()).collect();
        (got.iter().map(|a| a.calls.len()).collect(), notes)
    }

    #[test]
    fn an_attempt_answered_by_the_framework_is_counted_by_its_run() {
        let (n, notes) = counts(vec![
            run(1, (0, 100), "p", "c1", ARGS, WAIT),
            run(2, (200, 300), "p", "c1", ARGS, "booked"),
        ]);
        assert_eq!(n, vec![0, 1]);
        assert!(
            notes.iter().any(|n| n.contains("paused for approval")),
            "{notes:?}"
        );
    }

    #[test]
    fn a_pending_text_written_with_an_escape_is_still_read() {
        // `\u0020` for a space in the text: the byte look before the
        // parse must not turn it away.
        let escaped = WAIT.replacen("tool call", "tool\\u0020call", 1);
        assert!(escaped.contains('\\'), "{escaped}");
        let (n, _) = counts(vec![
            run(1, (0, 100), "p", "c1", ARGS, &escaped),
            run(2, (200, 300), "p", "c1", ARGS, "booked"),
        ]);
        assert_eq!(n, vec![0, 1]);
    }

    #[test]
    fn a_result_less_span_is_not_pending_but_deferred() {
        // No pending text: not this module's. `carry::deferred` takes the
        // result-less span for the later run's call of the same arguments.
        let (n, notes) = counts(vec![
            run(1, (0, 100), "p", "", ARGS, ""),
            run(2, (200, 300), "p", "", ARGS, "booked"),
        ]);
        assert_eq!(n, vec![0, 1]);
        assert!(
            !notes.iter().any(|n| n.contains("paused for approval")),
            "{notes:?}"
        );
    }

    #[test]
    fn a_run_resumed_in_another_process_of_the_program_counts_the_attempt() {
        let (n, _) = counts(vec![
            run(1, (0, 100), "p", "c1", ARGS, WAIT),
            run(2, (200, 300), "q", "c1", ARGS, "booked"),
        ]);
        assert_eq!(n, vec![0, 1]);
    }

    #[test]
    fn an_attempt_no_run_follows_stays_a_call() {
        // Rejected: the next run holds another call; or nothing follows.
        let (n, _) = counts(vec![
            run(1, (0, 100), "p", "c1", ARGS, WAIT),
            run(2, (200, 300), "p", "c2", r#"{"room": 13}"#, "booked"),
        ]);
        assert_eq!(n, vec![1, 1]);
        let (n, _) = counts(vec![run(1, (0, 100), "p", "c1", ARGS, WAIT)]);
        assert_eq!(n, vec![1]);
    }

    #[test]
    fn other_arguments_id_process_or_an_earlier_run_stay_two_calls() {
        let other = [
            run(2, (200, 300), "p", "", r#"{"room": 13}"#, "booked"),
            run(2, (200, 300), "q", "", ARGS, "booked"),
            // Its tool span at 85, before the attempt's ended (90).
            run(2, (50, 95), "p", "", ARGS, "booked"),
        ];
        for (k, later) in other.into_iter().enumerate() {
            let (n, _) = counts(vec![run(1, (0, 100), "p", "", ARGS, WAIT), later]);
            assert_eq!(n, vec![1, 1], "case {k}");
        }
        let (n, _) = counts(vec![
            run(1, (0, 100), "p", "c1", ARGS, WAIT),
            run(2, (200, 300), "p", "c9", ARGS, "booked"),
        ]);
        assert_eq!(n, vec![1, 1]);
    }
}
