//! When a call counted in another trace than the one that asked for it
//! began (docs/conventions.md, "Each model call its own trace").
//!
//! A call the model asked for in one trace and whose result the next
//! request carries, in another trace, ran after the model's answer ended
//! and before that request started. It starts, as a call asked and answered
//! in one trace does, when the answer that asked for it ended: the calls it
//! ran itself (a sub-agent used as a tool, its model calls traces of their
//! own) come after it, and its row's duration is the time until the request
//! carrying its result.

use crate::extract::open::{OpenAsk, ASKED_ARGS_FORM, ASKED_NAME_FORM, HISTORY_FORM};

/// The start of the call `ask` asked for, answered by a request that
/// started at `request`: the end of the model's answer that asked for it,
/// when that entry is an answer's ask and ended no later than the request;
/// else the request's start.
pub(super) fn asked_start(ask: &OpenAsk, request: u64) -> u64 {
    let is_ask = !ask.is_echo()
        && ask.form != HISTORY_FORM
        && ask.form != ASKED_ARGS_FORM
        && ask.form != ASKED_NAME_FORM;
    if is_ask && ask.end_time_unix_nano <= request {
        ask.end_time_unix_nano
    } else {
        request
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::asked_start;
    use crate::assemble::{SpanId, TraceId};
    use crate::extract::open::{OpenAsk, HISTORY_FORM, TWICE_FORM};
    use crate::extract::requested::Asked;

    fn ask(form: &'static str, end: u64) -> OpenAsk {
        OpenAsk {
            asked: Asked {
                id: Some("call_q1".into()),
                name: "lookup".into(),
                args: json!({"q": "x"}),
            },
            form,
            trace_id: TraceId([1; 16]),
            span_id: SpanId([2; 8]),
            end_time_unix_nano: end,
            run: 0,
        }
    }

    #[test]
    fn a_call_starts_when_the_answer_asking_it_ended() {
        assert_eq!(asked_start(&ask("acme", 100), 250), 100);
        // A clock that puts the ask after the request: the request's start.
        assert_eq!(asked_start(&ask("acme", 300), 250), 250);
        // Entries that are no model output's ask keep the request's start.
        assert_eq!(asked_start(&ask(TWICE_FORM, 100), 250), 250);
        assert_eq!(asked_start(&ask(HISTORY_FORM, 100), 250), 250);
    }
}
