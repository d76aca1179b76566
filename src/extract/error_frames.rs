//! A framework's template around a tool's failure, in the form the model
//! was shown (docs/conventions.md, "Framework frames"). LangGraph's tool
//! node hands the model a failed call's error as `Error: <message>` with a
//! last line asking the model to fix its mistakes, and an instrumentation
//! that records only the conversation (Sentry's LangChain integration)
//! keeps that text without the message's error status. A result whose
//! last line is a declared error trailer (`error_trailers` of
//! `vocabulary.toml`) is the failure it frames: the call failed, with the
//! text before the trailer as its error message. ADK JS hands the model
//! a thrown error as `Error in tool '{name}': <message>` (`error_frames`):
//! a failed call's message so framed is the message, and a result that is
//! that text alone (naming the call's own tool) is the failure. A call
//! read from the conversation alone has no status but its answer's text:
//! there a loop's `Error: <message>` (`conversation_error_frames`), its
//! error object `{"error": "<message>"}` (`conversation_error_keys`), or a
//! traceback (`conversation_error_tracebacks`) is that failure too. A
//! framework's record of a call it caught (`caught_record_keys`: mcp-use's
//! `{"error": <class>, "details": <text>, "tool": <name>, ...}`) naming the
//! call's own tool is that failure wherever the call was read.

use super::conversation::FROM_CONVERSATION;
use super::rules::builtin_list;
use super::{CallResult, CallStatus, ToolCall};

/// The last lines a framework appends to a failed call's error
/// (vocabulary `error_trailers`).
fn trailers() -> &'static [String] {
    builtin_list("error_trailers")
}

/// The texts a framework puts before a failed call's message (vocabulary
/// `error_frames`, `{name}` the call's tool).
fn frames() -> &'static [String] {
    builtin_list("error_frames")
}

/// The frames of a call read from the conversation alone (vocabulary
/// `conversation_error_frames`, naming no tool).
fn conversation_frames() -> &'static [String] {
    builtin_list("conversation_error_frames")
}

/// The message inside `text` when a declared frame naming tool `name`
/// opens it (a frame naming another tool is someone else's text), or a
/// declared frame that names no tool.
fn unframed<'a>(text: &'a str, name: &str) -> Option<&'a str> {
    let mut message = unframed_by(frames(), text, name)?;
    // A frame inside another (CAMEL's agent frames what its `FunctionTool`
    // framed); a few levels at most.
    for _ in 0..3 {
        let Some(inner) = unframed_by(frames(), message, name) else {
            break;
        };
        message = inner;
    }
    Some(message)
}

/// [`unframed`] by the declared frames that name the call's tool only.
fn named_unframed<'a>(text: &'a str, name: &str) -> Option<&'a str> {
    let named = frames()
        .iter()
        .filter(|f| f.contains(super::template::NAME));
    unframed_by(named, text, name)
}

/// The message inside `text` when one of `frames` opens it.
fn unframed_by<'a, 'f>(
    frames: impl IntoIterator<Item = &'f String>,
    text: &'a str,
    name: &str,
) -> Option<&'a str> {
    frames.into_iter().find_map(|f| {
        let message = super::template::after_template(f, text, name)?;
        (!message.trim().is_empty()).then_some(message)
    })
}

/// Marks `c` failed when its result is a failure framed by a declared
/// trailer, the text before it becoming its error message, or by a
/// declared frame; takes a frame off a failed call's message. The result
/// stays: it is the text the model was shown of the failure.
pub(crate) fn mark(c: &mut ToolCall) {
    if c.status != CallStatus::Ok {
        // A declared trailer comes off as it does from a result that
        // says the call failed (LangGraph's tool node writes it on the
        // message the model is sent, which some writers take for the
        // error's: Sentry's LangChain handler).
        let inner = match c.error_message.as_deref() {
            Some(m) if !m.trim().is_empty() => {
                let cut = untrailed(m);
                unframed(cut.unwrap_or(m), &c.name).or(cut)
            }
            // No message: the text the model was shown has it, inside a
            // frame (Haystack's tool invoker flags the result an error) or
            // as it is (Strands TS flags an MCP call's failure
            // `gen_ai.tool.status = error` on a span left OK).
            _ => c.result.as_ref().and_then(result_text).and_then(|t| {
                let t = untrailed(t).unwrap_or(t);
                unframed(t, &c.name).or_else(|| Some(t.trim()).filter(|t| !t.is_empty()))
            }),
        };
        if let Some(m) = inner.map(str::to_string) {
            c.error_message = Some(m);
        }
        return;
    }
    // Most span calls' results are JSON objects: parsed only when their
    // text could be a one-key error object, not on every call.
    let may_be_error = |r: &CallResult| match r {
        CallResult::Json(t) => (conversation_keys().iter())
            .any(|k| memchr::memmem::find(t.as_bytes(), k.as_bytes()).is_some()),
        CallResult::Value(_) => true,
    };
    if let Some((message, kind)) = c.result.as_ref().and_then(|r| caught_record(r, &c.name)) {
        let message = unframed(&message, &c.name).unwrap_or(&message).to_string();
        c.error_message = Some(message);
        c.error_type = Some(kind);
        c.status = CallStatus::Error;
        return;
    }
    let object = c
        .result
        .as_ref()
        .filter(|r| c.from == Some(FROM_CONVERSATION) || may_be_error(r))
        .and_then(error_object);
    if c.from == Some(FROM_CONVERSATION) {
        if let Some(m) = object {
            mark_conversation(c, Some(m));
            return;
        }
    } else if let Some(m) = object.as_deref().and_then(|t| named_unframed(t, &c.name)) {
        // An error object whose text a frame naming the call's own tool
        // opens is the failure the framework caught (IQ AI's ADK answers a
        // tool that threw with `{"error": "Error executing {name}: ..."}`
        // and records the span OK); a tool's own `{"error": ...}` stays.
        c.error_message = Some(m.to_string());
        c.status = CallStatus::Error;
        return;
    }
    let Some(text) = c.result.as_ref().and_then(result_text) else {
        return;
    };
    if let Some(m) = unframed(text, &c.name) {
        c.error_message = Some(m.to_string());
        c.status = CallStatus::Error;
        return;
    }
    let Some(message) = untrailed(text) else {
        if c.from == Some(FROM_CONVERSATION) {
            let frames = conversation_frames();
            // A frame inside another (`[ERROR] Error: ...`) comes off too.
            let message = unframed_by(frames, text, &c.name)
                .map(|m| unframed_by(frames, m, &c.name).unwrap_or(m))
                .or_else(|| traceback_error(text))
                .map(str::to_string);
            mark_conversation(c, message);
        }
        return;
    };
    c.error_message = Some(message.to_string());
    c.status = CallStatus::Error;
}

/// The text before a declared trailer that is the last line of `text`,
/// when something is before it.
fn untrailed(text: &str) -> Option<&str> {
    let (message, last) = text.trim_end().rsplit_once('\n')?;
    let trailed = trailers().iter().any(|t| last.trim() == t) && !message.trim().is_empty();
    trailed.then(|| message.trim_end())
}

/// The first lines of a traceback a loop answers the model with for a
/// failed call (vocabulary `conversation_error_tracebacks`).
fn tracebacks() -> &'static [String] {
    builtin_list("conversation_error_tracebacks")
}

/// The error line that ends `text` when it is a declared traceback: its
/// last line that is not blank, `<Name>: <message>`, the name a dotted
/// identifier (AG2 answers a tool that raised with Python's traceback,
/// ending `PermissionDenied: <message>`).
fn traceback_error(text: &str) -> Option<&str> {
    let text = text.trim_start();
    let rest = tracebacks()
        .iter()
        .find_map(|t| text.strip_prefix(t.as_str()))?;
    let last = rest.lines().rev().find(|l| !l.trim().is_empty())?.trim();
    let (name, message) = last.split_once(": ")?;
    (class_name(name) && !message.trim().is_empty()).then_some(last)
}

/// Marks `c`, a call read from the conversation alone whose answer is a
/// loop's framed failure, failed with the `message` inside the frame
/// (looked for after the framework frames and trailers, so LangGraph's
/// `Error: ...` and trailer keeps its whole text).
fn mark_conversation(c: &mut ToolCall, message: Option<String>) {
    if let Some(m) = message {
        c.error_message = Some(m);
        c.status = CallStatus::Error;
    }
}

/// The keys of the error object a loop answers the model with for a failed
/// call (vocabulary `conversation_error_keys`).
fn conversation_keys() -> &'static [String] {
    builtin_list("conversation_error_keys")
}

/// The message of result `r` when it is a loop's error object: one key, a
/// declared one, whose value is text that says something.
fn error_object(r: &CallResult) -> Option<String> {
    let parsed;
    let o = match r {
        CallResult::Value(v) => v.as_object()?,
        CallResult::Json(t) if t.trim_start().starts_with('{') => {
            parsed = serde_json::from_str::<serde_json::Value>(t).ok()?;
            parsed.as_object()?
        }
        CallResult::Json(_) => return None,
    };
    super::mcp_error_text::lone_text(o, |key| conversation_keys().iter().any(|k| k == key))
}

/// The message and error type of result `r` when it is a framework's
/// record of a call to tool `name` it caught (vocabulary
/// `caught_record_keys`: type, message and tool keys). Text is parsed only
/// when it names the message key.
fn caught_record(r: &CallResult, name: &str) -> Option<(String, String)> {
    let [kind, message, tool] = builtin_list("caught_record_keys") else {
        return None;
    };
    let parsed;
    let o = match r {
        CallResult::Value(v) => v.as_object()?,
        CallResult::Json(t) => {
            let names_message = memchr::memmem::find(t.as_bytes(), message.as_bytes()).is_some();
            if !t.trim_start().starts_with('{') || !names_message {
                return None;
            }
            parsed = serde_json::from_str::<serde_json::Value>(t).ok()?;
            parsed.as_object()?
        }
    };
    (o.get(tool)?.as_str()? == name).then_some(())?;
    let class = o.get(kind)?.as_str()?.trim();
    class_name(class).then_some(())?;
    let text = o.get(message)?.as_str().filter(|t| !t.trim().is_empty())?;
    Some((text.to_string(), class.to_string()))
}

/// Whether `name` is a class name as an error names its type: dotted
/// identifiers (`PermissionDenied`, `mcp.shared.McpError`).
fn class_name(name: &str) -> bool {
    let word = |w: &str| !w.is_empty() && w.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    name.split('.').all(word)
}

/// A result given as text (a JSON string, or text not parsed).
fn result_text(r: &CallResult) -> Option<&str> {
    match r {
        CallResult::Value(v) => v.as_str(),
        CallResult::Json(t) => (!t.trim_start().starts_with(['{', '[', '"'])).then_some(&**t),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::Value;

    use super::*;
    use opentelemetry_proto::tonic::common::v1::{any_value, AnyValue, KeyValue};

    use crate::extract::test_support::{ask_and_answer, span_of};
    use crate::extract::unwrap_tests::trace;
    use crate::extract::Extractor;

    fn str_kv(key: &str, v: &str) -> KeyValue {
        KeyValue {
            key: key.into(),
            value: Some(AnyValue {
                value: Some(any_value::Value::StringValue(v.into())),
            }),
            ..Default::default()
        }
    }

    /// The result of `c`: the text the model was shown.
    fn shown(c: &ToolCall) -> Value {
        c.result.as_ref().map_or(Value::Null, CallResult::to_value)
    }

    /// The call read from the model's ask and the conversation's answer
    /// `answer`.
    fn read(answer: &str) -> ToolCall {
        let t = trace(ask_and_answer(Value::from(answer), 2).to_vec());
        let mut calls = Extractor::default().extract(&t);
        assert_eq!(calls.len(), 1, "{calls:?}");
        calls.remove(0)
    }

    #[test]
    fn a_frameworks_frame_inside_another_comes_off_too() {
        // CAMEL's agent around its FunctionTool's frame, as the model is
        // sent it after the tool `moor_boat` raised.
        let shown_text = "Tool execution failed: Error executing tool 'moor_boat': Execution of \
            function moor_boat failed with kwargs={'pier': 'B', 'hours': 3}. Error: pier B is full";
        let failed = read(shown_text);
        assert_eq!(failed.status, CallStatus::Error);
        assert_eq!(failed.error_message.as_deref(), Some("pier B is full"));
        assert_eq!(shown(&failed), shown_text);
        // The outer frame alone gives the inner text; another tool's inner
        // frame stays in the message.
        let outer = read("Tool execution failed: Error executing tool 'moor_boat': pier B is full");
        assert_eq!(outer.error_message.as_deref(), Some("pier B is full"));
        let other = read(
            "Tool execution failed: Error executing tool 'moor_boat': Execution of function \
             other failed with no arguments. Error: pier B is full",
        );
        assert_eq!(
            other.error_message.as_deref(),
            Some("Execution of function other failed with no arguments. Error: pier B is full")
        );
    }

    #[test]
    fn a_result_framed_as_the_calls_own_failure_is_that_failure() {
        // `ask_and_answer` asks for the tool `moor_boat`.
        let failed = read("Error in tool 'moor_boat': pier B is full");
        assert_eq!(failed.status, CallStatus::Error);
        assert_eq!(failed.error_message.as_deref(), Some("pier B is full"));
        assert_eq!(shown(&failed), "Error in tool 'moor_boat': pier B is full");
        // Near misses: another tool's frame, the frame alone, the words
        // inside a longer text, another wording.
        for kept in [
            "Error in tool 'other': pier B is full",
            "Error in tool 'moor_boat': ",
            "Logged: Error in tool 'moor_boat': pier B is full",
            "Error in tool moor_boat: pier B is full",
        ] {
            let c = read(kept);
            assert_eq!(c.status, CallStatus::Ok, "{kept}");
        }
    }

    #[test]
    fn a_frameworks_record_of_a_caught_call_naming_its_tool_is_that_failure() {
        // mcp-use's adapter answers an MCP error result so; the MCP SDK's
        // frame comes off the message.
        let record = |tool: &str, class: &str| {
            serde_json::json!({
                "error": class,
                "details": "Error executing tool moor_boat: pier B is full",
                "stack": "Traceback (most recent call last):\n  ...",
                "code": "UNKNOWN",
                "tool": tool,
            })
            .to_string()
        };
        let failed = read(&record("moor_boat", "RuntimeError"));
        assert_eq!(failed.status, CallStatus::Error);
        assert_eq!(failed.error_message.as_deref(), Some("pier B is full"));
        assert_eq!(failed.error_type.as_deref(), Some("RuntimeError"));
        // Another tool's record, a type that is no class name, a record
        // without its tool: the tool's own value.
        let without_tool =
            serde_json::json!({"error": "RuntimeError", "details": "pier B is full"});
        for kept in [
            record("other", "RuntimeError"),
            record("moor_boat", "pier B is full"),
            without_tool.to_string(),
        ] {
            let c = read(&kept);
            assert_eq!(c.status, CallStatus::Ok, "{kept}");
        }
    }

    #[test]
    fn a_frame_naming_no_tool_is_any_calls_failure() {
        // CrewAI's answer to a call that raised names no tool.
        let failed = read("Error executing tool: pier B is full");
        assert_eq!(failed.status, CallStatus::Error);
        assert_eq!(failed.error_message.as_deref(), Some("pier B is full"));
        assert_eq!(shown(&failed), "Error executing tool: pier B is full");
        // Near misses: the frame alone, inside a longer text, smolagents'
        // wording (a tool's name after `tool`), lower case.
        for kept in [
            "Error executing tool: ",
            "Note: Error executing tool: pier B is full",
            "Error executing tool 'moor_boat': pier B is full",
            "error executing tool: pier B is full",
        ] {
            let c = read(kept);
            assert_eq!(c.status, CallStatus::Ok, "{kept}");
        }
    }

    #[test]
    fn a_frame_with_any_text_inside_ends_at_its_next_piece() {
        // A preamble of two sentences, then the explained error after a
        // blank line (BeeAI's answer to a call that raised).
        let explained = "ToolError(beeai_framework.tools.errors): Tool Error\n  OSError(builtins): pier B is full";
        let text = format!(
            "The tool has failed; the error log is shown below. Try another.\n\n{explained}"
        );
        let failed = read(&text);
        assert_eq!(failed.status, CallStatus::Error);
        assert_eq!(failed.error_message.as_deref(), Some(explained));
        assert_eq!(shown(&failed), text.as_str());
        // Near misses: no blank line, nothing after it, another opening.
        for kept in [
            "The tool has failed; the error log is shown below. pier B is full".to_string(),
            "The tool has failed; the error log is shown below.\n\n ".to_string(),
            format!("The tool ran; the log is shown below.\n\n{explained}"),
        ] {
            let c = read(&kept);
            assert_eq!(c.status, CallStatus::Ok, "{kept}");
        }
        // The pieces of a frame, in order, with `{name}` and `{any}`.
        let frame = "On {name}:{any}|";
        let after = super::super::template::after_template;
        assert_eq!(after(frame, "On dock: a|b|c", "dock"), Some("b|c"));
        assert_eq!(after(frame, "On pier: a|b", "dock"), None);
        assert_eq!(after("{any}", "all of it", "dock"), Some("all of it"));
    }

    #[test]
    fn a_frame_inside_another_comes_off_too() {
        // Strands TS: `[ERROR] ` before the thrown error's `Error: <text>`.
        let failed = read("[ERROR] Error: pier B is full");
        assert_eq!(failed.status, CallStatus::Error);
        assert_eq!(failed.error_message.as_deref(), Some("pier B is full"));
        assert_eq!(shown(&failed), "[ERROR] Error: pier B is full");
        let once = read("[ERROR] pier B is full");
        assert_eq!(once.error_message.as_deref(), Some("pier B is full"));
        // Near miss: lower case, no space.
        for kept in ["[error] pier B is full", "[ERROR]pier B is full"] {
            assert_eq!(read(kept).status, CallStatus::Ok, "{kept}");
        }
    }

    #[test]
    fn a_traceback_fails_a_call_read_from_the_conversation_alone() {
        let text = "Traceback (most recent call last):\n  File \"tools.py\", line 9, in moor\n    raise Full(pier)\nharbour.Full: pier B is full\n";
        let failed = read(text);
        assert_eq!(failed.status, CallStatus::Error);
        assert_eq!(
            failed.error_message.as_deref(),
            Some("harbour.Full: pier B is full")
        );
        assert_eq!(shown(&failed), text);
        // Near misses: no error line at the end, text before the traceback,
        // a last line that names no error.
        for kept in [
            "Traceback (most recent call last):\n  File \"tools.py\", line 9\n",
            "Logged: Traceback (most recent call last):\nFull: pier B is full",
            "Traceback (most recent call last):\nthe pier: B is full",
        ] {
            let c = read(kept);
            assert_eq!(c.status, CallStatus::Ok, "{kept}");
        }
    }

    #[test]
    fn a_loops_error_text_fails_a_call_read_from_the_conversation_alone() {
        // A hand-written loop answers a call that raised `Error: <message>`;
        // no span says how the call went.
        let failed = read("Error: pier B is full");
        assert_eq!(failed.from, Some(FROM_CONVERSATION));
        assert_eq!(failed.status, CallStatus::Error);
        assert_eq!(failed.error_message.as_deref(), Some("pier B is full"));
        assert_eq!(shown(&failed), "Error: pier B is full");
        // Near misses: the frame alone, lower case, inside a longer text,
        // no space after the colon.
        for kept in [
            "Error: ",
            "error: pier B is full",
            "Logged: Error: pier B is full",
            "Error:pier B is full",
        ] {
            let c = read(kept);
            assert_eq!(c.status, CallStatus::Ok, "{kept}");
        }
    }

    /// [`read`] with the answer given as a value.
    fn read_value(answer: Value) -> ToolCall {
        let t = trace(ask_and_answer(answer, 2).to_vec());
        let mut calls = Extractor::default().extract(&t);
        assert_eq!(calls.len(), 1, "{calls:?}");
        calls.remove(0)
    }

    #[test]
    fn a_loops_error_object_fails_a_call_read_from_the_conversation_alone() {
        use serde_json::json;
        // As an object and as the JSON text of one (OpenAI's tool message
        // content is text).
        let object = json!({"error": "pier B is full"});
        for answer in [object.clone(), Value::from(object.to_string())] {
            let failed = read_value(answer.clone());
            assert_eq!(failed.from, Some(FROM_CONVERSATION));
            assert_eq!(failed.status, CallStatus::Error, "{answer}");
            assert_eq!(failed.error_message.as_deref(), Some("pier B is full"));
            assert_eq!(shown(&failed), object);
        }
        // Near misses: more keys, another key, no text, blank text.
        for kept in [
            json!({"error": "pier B is full", "pier": "B"}),
            json!({"errors": "pier B is full"}),
            json!({"error": {"code": 7}}),
            json!({"error": ""}),
        ] {
            let c = read_value(kept.clone());
            assert_eq!(c.status, CallStatus::Ok, "{kept}");
        }
    }

    /// The call of a tool span `moor_boat` whose result attribute is
    /// `result`.
    fn span_call(result: &str) -> ToolCall {
        let span = span_of(
            1,
            None,
            "execute_tool moor_boat",
            (10, 20),
            vec![
                str_kv("gen_ai.operation.name", "execute_tool"),
                str_kv("gen_ai.tool.name", "moor_boat"),
                str_kv("gen_ai.tool.call.result", result),
            ],
        );
        let mut calls = Extractor::default().extract(&trace(vec![span]));
        assert_eq!(calls.len(), 1, "{calls:?}");
        calls.remove(0)
    }

    #[test]
    fn a_tool_spans_ok_call_returning_error_text_stays_ok() {
        // A tool span's status says how its call went: a tool may return
        // such text without failing.
        let c = span_call("Error: pier B is full");
        assert_eq!(c.from, None);
        assert_eq!(c.status, CallStatus::Ok);
    }

    #[test]
    fn a_tool_spans_error_object_framed_naming_its_tool_is_that_failure() {
        // IQ AI's ADK catches the throw and answers an error object, the
        // span left OK.
        let text = r#"{"error": "Error executing moor_boat: pier B is full"}"#;
        let failed = span_call(text);
        assert_eq!(failed.status, CallStatus::Error);
        assert_eq!(failed.error_message.as_deref(), Some("pier B is full"));
        assert_eq!(shown(&failed), serde_json::from_str::<Value>(text).unwrap());
        // Near misses: the tool's own error object, another tool's frame, a
        // frame naming no tool, another key beside it, the framed text
        // under another key.
        for kept in [
            r#"{"error": "pier B is full"}"#,
            r#"{"error": "Error executing other: pier B is full"}"#,
            r#"{"error": "Error executing tool: pier B is full"}"#,
            r#"{"error": "Error executing moor_boat: pier B is full", "pier": "B"}"#,
            r#"{"message": "Error executing moor_boat: pier B is full"}"#,
        ] {
            let c = span_call(kept);
            assert_eq!(c.status, CallStatus::Ok, "{kept}");
        }
    }

    #[test]
    fn a_failed_calls_framed_message_is_the_message() {
        let mut c = read("moored");
        c.status = CallStatus::Error;
        c.result = None;
        c.error_message = Some("Error in tool 'moor_boat': pier B is full".into());
        mark(&mut c);
        assert_eq!(c.error_message.as_deref(), Some("pier B is full"));
        // Another tool's frame stays as it is.
        c.error_message = Some("Error in tool 'other': pier B is full".into());
        mark(&mut c);
        assert_eq!(
            c.error_message.as_deref(),
            Some("Error in tool 'other': pier B is full")
        );
        // No message: the framed result the model was shown gives it
        // (Haystack's tool invoker); the result stays.
        let framed = "Failed to invoke Tool `moor_boat` with parameters {'pier': 'B'}. Error: pier B is full";
        for none in [None, Some(String::new())] {
            c.error_message = none;
            c.result = Some(CallResult::Value(Value::from(framed)));
            mark(&mut c);
            assert_eq!(c.error_message.as_deref(), Some("pier B is full"));
            assert_eq!(shown(&c), framed);
        }
        // Another tool's frame, or none: the whole text is the message.
        let unframed_texts = [
            framed.replace("moor_boat", "other"),
            "pier B is full\n".into(),
        ];
        for text in unframed_texts {
            c.error_message = None;
            c.result = Some(CallResult::Value(Value::from(text.as_str())));
            mark(&mut c);
            assert_eq!(c.error_message.as_deref(), Some(text.trim()));
        }
        // A blank text, or an object, gives none.
        for result in [Value::from("  "), serde_json::json!({"pier": "B"})] {
            c.error_message = None;
            c.result = Some(CallResult::Value(result));
            mark(&mut c);
            assert_eq!(c.error_message, None);
        }
    }

    #[test]
    fn a_result_ending_in_a_declared_error_trailer_is_the_failure_it_frames() {
        let failed = read("Error: pier B is full\n Please fix your mistakes.");
        assert_eq!(failed.status, CallStatus::Error);
        assert_eq!(
            failed.error_message.as_deref(),
            Some("Error: pier B is full")
        );
        assert_eq!(
            shown(&failed),
            "Error: pier B is full\n Please fix your mistakes."
        );
        // Text that only mentions the words, or the trailer alone, is a result.
        for kept in [
            "moored; please fix your mistakes.",
            "Please fix your mistakes.",
            "moored\n Please fix your mistakes later.",
        ] {
            let c = read(kept);
            assert_eq!(c.status, CallStatus::Ok, "{kept}");
            let r = c.result.map(|r| r.to_value());
            assert_eq!(r, Some(Value::from(kept)), "{kept}");
        }
    }

    #[test]
    fn a_failed_calls_message_or_result_loses_a_declared_trailer() {
        // A span marked failed whose message is the text the model was
        // sent (Sentry's LangChain handler under LangGraph), and one with
        // no message whose result is that text.
        let sent = "Error: pier B is full\n Please fix your mistakes.";
        let failed = |message: Option<&str>| {
            let mut c = read("moored");
            c.status = CallStatus::Error;
            c.error_message = message.map(str::to_string);
            c.result = Some(CallResult::Value(Value::from(sent)));
            mark(&mut c);
            c
        };
        for message in [Some(sent), None] {
            let c = failed(message);
            assert_eq!(
                c.error_message.as_deref(),
                Some("Error: pier B is full"),
                "{message:?}"
            );
            assert_eq!(shown(&c), sent);
        }
        // A message without a trailer stays as it is.
        let plain = failed(Some("pier B is full; Please fix your mistakes."));
        assert_eq!(
            plain.error_message.as_deref(),
            Some("pier B is full; Please fix your mistakes.")
        );
    }
}
