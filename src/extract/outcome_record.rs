//! A tool span whose result is the framework's record of how the call
//! went, not the tool's value (docs/conventions.md, "Framework frames").
//!
//! Agno runs every tool through `FunctionCall.execute()`, which returns a
//! `FunctionExecutionResult`: `status` `success` with the tool's value in
//! `result`, or `status` `failure` with `result` `None` and the raised
//! error's text in `error` (the text Agno hands the model). OpenLLMetry's
//! Agno instrumentation records that record's `str()` as the tool span's
//! output (`status='failure' result=None error='...'
//! updated_session_state=None images=None ...`) and sets the span's status
//! OK whatever the record says, so a raised call looks like one that
//! returned the record. A writer could as well record the record's dump
//! (JSON, or a Python dict's `repr()`).
//!
//! The record's keys are data (`vocabulary.toml`):
//! `outcome_record_keys` its status, value and error keys, in that order;
//! `outcome_record_extra_keys` the keys only the record holds beside them;
//! `outcome_record_dump_keys` the keys its dump always holds;
//! `outcome_failed` and `outcome_succeeded` its statuses. The text the
//! rule's own result source holds is such a record when its shape is the
//! record's, not when it merely holds the words:
//!
//! - pydantic's `str()` (keyword fields, opening with the status key, no
//!   name twice): the three keys and no key outside the record (older
//!   Agno wrote only the three); no tool's value is written so.
//! - an object (JSON or a Python dict literal): the three keys, every key
//!   of `outcome_record_dump_keys` (pydantic's `model_dump()` writes each
//!   field, `None` or not), and no key outside the record. A tool's own
//!   dict of `status`, `result` and `error` alone, or with a business
//!   field or a common key such as `images` or `files`, is the tool's
//!   value and stays.
//!
//! A failed record (a failure status, no value, an error that is text) is
//! a failed call: its error the error message, no result, as a span with
//! status ERROR reads (a span already failed keeps its own message, and
//! loses the record as its result). A record of success (no error) gives
//! its value (JSON-decoded); rule `traceloop`'s `agno_result` unwrap reads
//! it through [`returned`], so every rule reads a record the same. Any
//! other record stays as it was read. Only text of at most
//! [`MAX_RECORD_BYTES`] that opens as a record and names its status key is
//! parsed: results are read on every trace. An object must also name a
//! dump's keys, except on a span a framework marks as its own tool span
//! (`framework_record`), where a dump may have dropped its `None` fields:
//! there any object naming the status key is parsed, and its keys decide.
//!
//! The status a record states is read whether or not results are (the
//! extractor reads a result for a call whose text [`may_be_record`] even
//! with results off, and drops the value after): a call's failure must not
//! depend on the output format.

use std::collections::BTreeMap;
use std::sync::OnceLock;

use memchr::memmem::Finder;
use serde::de::IgnoredAny;
use serde_json::{Map, Value};

use super::rules::{builtin_list, Source};
use super::source::{parse_json_or_string, raw_string};
use super::{CallResult, CallStatus, ToolCall};
use crate::assemble::SpanRecord;

/// The declared record (lists of `vocabulary.toml`).
struct Record {
    /// The status, value and error keys.
    status: &'static str,
    value: &'static str,
    error: &'static str,
    /// Every key the record may hold besides those three.
    extra: &'static [String],
    /// The keys a dump of the record (an object) always holds.
    dump_keys: &'static [String],
    failed: &'static [String],
    succeeded: &'static [String],
    /// How its `str()` opens (`status=`), and finders for the status and
    /// error keys, for the cheap look before any parse.
    repr_start: String,
    finders: [Finder<'static>; 2],
    /// Finders for [`Record::dump_keys`].
    dump_finders: Vec<Finder<'static>>,
}

/// [`Record`], looked up once; `None` when the vocabulary declares no
/// record (a table without the three keys reads nothing).
fn record() -> Option<&'static Record> {
    static RECORD: OnceLock<Option<Record>> = OnceLock::new();
    RECORD
        .get_or_init(|| {
            let [status, value, error] = builtin_list("outcome_record_keys") else {
                return None;
            };
            Some(Record {
                status,
                value,
                error,
                extra: builtin_list("outcome_record_extra_keys"),
                dump_keys: builtin_list("outcome_record_dump_keys"),
                dump_finders: builtin_list("outcome_record_dump_keys")
                    .iter()
                    .map(|k| Finder::new(k.as_bytes()).into_owned())
                    .collect(),
                failed: builtin_list("outcome_failed"),
                succeeded: builtin_list("outcome_succeeded"),
                repr_start: format!("{status}="),
                finders: [
                    Finder::new(status.as_bytes()).into_owned(),
                    Finder::new(error.as_bytes()).into_owned(),
                ],
            })
        })
        .as_ref()
}

/// What a record says of its call.
#[derive(Debug, PartialEq)]
enum Outcome {
    /// The call failed with this error message.
    Failed(String),
    /// The call returned this value.
    Returned(Value),
}

/// Reads `call`, read from span `s`, as the record in `from` (the rule's
/// own result source its result came from) says (see the module's doc).
/// The extractor reads that source for a call whose text may be a record
/// even when results are off (`may_be_record`), so a call fails alike
/// whatever the output format; the value is dropped after.
pub(crate) fn mark(from: Option<&Source>, s: &SpanRecord, call: &mut ToolCall) {
    if call.result.is_none() {
        return;
    }
    let (Some(src), Some(rec)) = (from, record()) else {
        return;
    };
    let Some(text) = raw_string(&src.field, s) else {
        return;
    };
    match outcome(rec, text) {
        Some(Outcome::Failed(message)) => apply(call, Err(message)),
        Some(Outcome::Returned(v)) => apply(call, Ok(v)),
        None => {}
    }
}

/// Applies what a record said of `call`: a failure fails it with the
/// record's error as its message, no result (the record is no value of
/// the tool's), and a span already failed keeps its own message; a
/// success gives its value to a call not failed. The one place both
/// readers of the record (`mark`, `framework_record`) change a call.
pub(crate) fn apply(call: &mut ToolCall, said: Result<Value, String>) {
    let ok = call.status == CallStatus::Ok;
    match said {
        Err(message) => {
            if ok || call.error_message.is_none() {
                call.error_message = Some(message);
            }
            call.status = CallStatus::Error;
            call.result = None;
        }
        Ok(v) if ok => call.result = Some(CallResult::Value(v)),
        Ok(_) => {}
    }
}

/// Whether `text` may be the record (it names the record's status key):
/// the cheap test the extractor makes before reading a result it would
/// otherwise skip (results off), so the record's status is read anyway.
pub(crate) fn may_be_record(text: &str) -> bool {
    record().is_some_and(|rec| rec.finders[0].find(text.as_bytes()).is_some())
}

/// The longest result text read as the record: a failure's record is a
/// line of text, and a success's wraps one value; a larger text is left as
/// it was read rather than parsed a second time (docs/conventions.md).
const MAX_RECORD_BYTES: usize = 1 << 20;

/// How much of the record's shape a text must show to be read as it.
#[derive(Clone, Copy, PartialEq)]
enum Shape {
    /// Read wherever a rule takes a result: the record's `str()`, or its
    /// whole dump (see the module's doc).
    Whole,
    /// On a span its instrumentation marks as the framework's own tool
    /// span (`framework_record`): its dump may also have its `None` fields
    /// dropped (the status and no key outside the record; a missing value
    /// or error is `None`). The mark, not the shape, tells it from a
    /// tool's own dict there.
    NoneDropped,
}

/// What the record `text` is says of its call; `None` when `text` is no
/// record of the declared shape, or one of another status.
fn outcome(rec: &Record, text: &str) -> Option<Outcome> {
    outcome_in(rec, text, Shape::Whole)
}

/// What the record `text`, written with a framework's mark on its span
/// (`framework_record`), says of its call: failed with its error message,
/// or returned its value; `None` when `text` is no record.
pub(crate) fn on_marked_span(text: &str) -> Option<Result<Value, String>> {
    match outcome_in(record()?, text, Shape::NoneDropped)? {
        Outcome::Returned(v) => Some(Ok(v)),
        Outcome::Failed(m) => Some(Err(m)),
    }
}

/// [`outcome`] for a record of shape `shape`.
fn outcome_in(rec: &Record, text: &str, shape: Shape) -> Option<Outcome> {
    let mut t = text.trim();
    // Cheap first: the record opens as its `str()`, that `str()` as a JSON
    // string, or an object (one that names every key a dump of the record
    // holds, unless `None` fields may have been dropped on a marked span);
    // most results do not, and a large text is not parsed again.
    let repr = t.starts_with(rec.repr_start.as_str())
        || (t.starts_with('"') && t[1..].starts_with(rec.repr_start.as_str()));
    let dump = t.starts_with('{')
        && (shape == Shape::NoneDropped
            || rec
                .dump_finders
                .iter()
                .all(|f| f.find(t.as_bytes()).is_some()));
    // The status key always; the error key too unless `None` fields may
    // have been dropped (a success's dump then holds none).
    let named = match shape {
        Shape::Whole => &rec.finders[..],
        Shape::NoneDropped => &rec.finders[..1],
    };
    if !(repr || dump)
        || t.len() > MAX_RECORD_BYTES
        || !named.iter().all(|f| f.find(t.as_bytes()).is_some())
    {
        return None;
    }
    let quoted;
    // The record's `str()` as a JSON string.
    if t.starts_with('"') {
        quoted = serde_json::from_str::<String>(t).ok()?;
        t = quoted.trim();
    }
    let fields = if t.starts_with(rec.repr_start.as_str()) {
        // A name written twice is no pydantic `str()` (`model_str`).
        let fields: Map<String, Value> = super::literal::model_str(t)?.into_iter().collect();
        known_keys(rec, fields.keys().map(String::as_str), Required::All).then_some(fields)?
    } else if shape == Shape::NoneDropped {
        none_dropped_fields(rec, t)?
    } else {
        dump_fields(rec, t)?
    };
    read(rec, fields)
}

/// The fields of the record's dump `t` with its `None` fields dropped:
/// the status, no key outside the record; the value and the error, when
/// missing, are `None` again (what the writer dropped).
fn none_dropped_fields(rec: &Record, t: &str) -> Option<Map<String, Value>> {
    let Value::Object(mut fields) = super::source::parse_json_or_literal(t) else {
        return None;
    };
    if !known_keys(rec, fields.keys().map(String::as_str), Required::Status) {
        return None;
    }
    for k in [rec.value, rec.error] {
        fields.entry(k).or_insert(Value::Null);
    }
    Some(fields)
}

/// The fields of the record's dump `t` (an object, JSON or a Python dict
/// literal): every key the declared dump always holds (pydantic's
/// `model_dump()` writes each field, `None` or not), the three keys, and
/// no key outside the record. A JSON object's keys are looked at before
/// any value is built.
fn dump_fields(rec: &Record, t: &str) -> Option<Map<String, Value>> {
    let keys_fit = |keys: &mut dyn Iterator<Item = &str>| {
        let keys: Vec<&str> = keys.collect();
        rec.dump_keys.iter().all(|k| keys.contains(&k.as_str()))
            && known_keys(rec, keys.into_iter(), Required::All)
    };
    if let Ok(keys) = serde_json::from_str::<BTreeMap<String, IgnoredAny>>(t) {
        if !keys_fit(&mut keys.keys().map(String::as_str)) {
            return None;
        }
    }
    let Value::Object(fields) = super::source::parse_json_or_literal(t) else {
        return None;
    };
    keys_fit(&mut fields.keys().map(String::as_str)).then_some(fields)
}

/// Which of the record's three keys (status, value, error) must be there.
#[derive(Clone, Copy)]
enum Required {
    /// All three (the record's `str()`, its whole dump).
    All,
    /// The status alone (a dump with its `None` fields dropped).
    Status,
}

/// Whether `keys` hold the `required` keys of the record's three and no
/// key outside the record.
fn known_keys<'a>(rec: &Record, keys: impl Iterator<Item = &'a str>, required: Required) -> bool {
    let core = [rec.status, rec.value, rec.error];
    let mut seen = [false; 3];
    for k in keys {
        match core.iter().position(|c| *c == k) {
            Some(i) => seen[i] = true,
            None if rec.extra.iter().any(|e| e == k) => {}
            None => return false,
        }
    }
    match required {
        Required::All => seen.iter().all(|s| *s),
        Required::Status => seen[0],
    }
}

/// The value the record `text` says its call returned: `None` when `text`
/// is no record of success. The one reader of the record, for a rule's
/// `agno_result` unwrap as for [`mark`].
pub(crate) fn returned(text: &str) -> Option<Value> {
    match outcome(record()?, text)? {
        Outcome::Returned(v) => Some(v),
        Outcome::Failed(_) => None,
    }
}

/// The outcome a record's `fields` state: failed (no value, an error that
/// is text), or returned (no error).
fn read(rec: &Record, mut fields: Map<String, Value>) -> Option<Outcome> {
    let status = fields.get(rec.status)?.as_str()?;
    let is = |words: &[String]| words.iter().any(|w| w == status);
    let error = fields.get(rec.error)?;
    let value = fields.get(rec.value)?;
    if is(rec.failed) && value.is_null() {
        let message = error.as_str().map(str::trim).filter(|m| !m.is_empty())?;
        return Some(Outcome::Failed(message.to_string()));
    }
    if is(rec.succeeded) && error.is_null() {
        return Some(Outcome::Returned(match fields.remove(rec.value)? {
            Value::String(t) => parse_json_or_string(&t),
            v => v,
        }));
    }
    None
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn of(text: &str) -> Option<Outcome> {
        outcome(
            record().expect("the built-in table declares the record"),
            text,
        )
    }

    fn failed(m: &str) -> Option<Outcome> {
        Some(Outcome::Failed(m.to_string()))
    }

    #[test]
    fn a_failed_record_is_a_failed_call_in_each_form() {
        let tail = "updated_session_state=None images=None videos=None audios=None files=None";
        assert_eq!(
            of(&format!(
                "status='failure' result=None error='lane 4 is closed' {tail}"
            )),
            failed("lane 4 is closed")
        );
        // Older Agno wrote the three keys alone.
        assert_eq!(
            of("status='failure' result=None error='lane 4 is closed'"),
            failed("lane 4 is closed")
        );
        // The record's dump, as JSON, as a Python dict, and as a JSON
        // string holding its `str()`.
        let dump = json!({"status": "failed", "result": null, "error": "no crate 9",
            "updated_session_state": null, "images": null});
        assert_eq!(of(&dump.to_string()), failed("no crate 9"));
        assert_eq!(
            of(
                "{'status': 'error', 'result': None, 'error': 'no crate 9', \
                'updated_session_state': None, 'files': None}"
            ),
            failed("no crate 9")
        );
        let quoted = json!("status='failure' result=None error='no crate 9'").to_string();
        assert_eq!(of(&quoted), failed("no crate 9"));
    }

    #[test]
    fn a_record_of_success_gives_its_value() {
        let dump = json!({"status": "success", "result": "{\"crate\": 9}", "error": null,
            "updated_session_state": null});
        assert_eq!(
            of(&dump.to_string()),
            Some(Outcome::Returned(json!({"crate": 9})))
        );
        assert_eq!(
            of("status='success' result={'crate': 9} error=None"),
            Some(Outcome::Returned(json!({"crate": 9})))
        );
    }

    #[test]
    fn near_records_stay() {
        for kept in [
            // A failure with no error text, or an empty one.
            "status='failure' result=None error=None updated_session_state=None",
            "status='failure' result=None error='  '",
            // A failure that holds a value, a status the record lacks.
            "status='failure' result='half' error='x'",
            "status='pending' result=None error=None",
            // A key outside the record.
            "status='failure' result=None error='x' mood='bad'",
            // A tool's own dicts: a business field beside the words, the
            // three keys alone, a key outside the record.
            r#"{"order": 7, "status": "failed", "reason": "card declined"}"#,
            r#"{"order": 7, "status": "failed", "error": "card declined"}"#,
            r#"{"status": "failed", "result": null, "error": "card declined"}"#,
            r#"{"status": "failed", "result": null, "error": "x", "images": null, "order": 7}"#,
            // A tool's own dicts with a common key of the record's but no
            // key a dump of it always holds.
            r#"{"status": "failed", "result": null, "error": "refused", "images": []}"#,
            r#"{"status": "success", "result": "2 matched", "error": null, "files": ["a"]}"#,
            // A name written twice is no pydantic `str()`.
            "status='failure' result=None error='x' error='y'",
            "status='success' result='calm' result='gale' error=None",
            // A success that names an error, or lacks the error key.
            "status='success' result='calm' error='slow'",
            "status='success' result='calm'",
            // A JSON string that is no `str()` of the record.
            r#""the status is failure: error 5""#,
            // Text that is no record.
            "the status is failure: error 5",
            "[1, 2]",
        ] {
            assert_eq!(of(kept), None, "{kept}");
        }
    }

    /// The call read from a span of rule `traceloop` whose output is
    /// `output`, the span failed (status ERROR) when `error`.
    fn traceloop_call(output: &str, error: bool) -> ToolCall {
        traceloop_call_with(crate::extract::Extractor::default(), output, error)
    }

    /// [`traceloop_call`] read by `extractor`.
    fn traceloop_call_with(
        extractor: crate::extract::Extractor,
        output: &str,
        error: bool,
    ) -> ToolCall {
        use crate::assemble::{Trace, TraceId};
        let attrs = [
            ("traceloop.span.kind", "tool"),
            ("traceloop.entity.name", "open_lane"),
            ("traceloop.entity.input", r#"{"lane": 4}"#),
            ("traceloop.entity.output", output),
        ];
        let mut s = crate::extract::tests::sp(1, None, (0, 5), "open_lane.tool", &attrs);
        if error {
            s.span.status = Some(opentelemetry_proto::tonic::trace::v1::Status {
                code: 2,
                message: "raised".into(),
            });
        }
        let t = Trace::new(TraceId([7; 16]), vec![s], 0);
        let a = extractor.analyze(&t);
        a.calls.into_iter().next().expect("one call")
    }

    #[test]
    fn on_a_marked_span_a_dump_may_have_dropped_its_none_fields() {
        let fail = r#"{"status": "failure", "error": "tide too low"}"#;
        assert_eq!(on_marked_span(fail), Some(Err("tide too low".to_string())));
        assert_eq!(
            on_marked_span(r#"{"status": "success", "result": {"depth": 3}}"#),
            Some(Ok(json!({"depth": 3})))
        );
        // A success that returned `None` keeps only its status.
        assert_eq!(
            on_marked_span(r#"{"status": "success"}"#),
            Some(Ok(Value::Null))
        );
        // The `str()` and the whole dump read as anywhere.
        assert_eq!(
            on_marked_span("status='failure' result=None error='tide too low'"),
            Some(Err("tide too low".to_string()))
        );
        // Still no record: a key outside it, no status, both a value and
        // an error; and, without the mark, the dropped form is no record.
        for kept in [
            r#"{"status": "failure", "error": "x", "berth": 4}"#,
            r#"{"error": "tide too low"}"#,
            r#"{"status": "success", "result": 1, "error": "x"}"#,
        ] {
            assert_eq!(on_marked_span(kept), None, "{kept}");
        }
        assert_eq!(of(fail), None);
    }

    #[test]
    fn a_large_text_is_not_read_as_the_record() {
        let pad = "x".repeat(MAX_RECORD_BYTES);
        let big = json!({"status": "success", "result": pad, "error": null,
            "updated_session_state": null});
        assert_eq!(of(&big.to_string()), None);
        // A large object naming the words but no dump key is not parsed,
        // and one with a key outside the record is turned away by its keys.
        let own = json!({"status": "failed", "error": "x", "rows": [1, 2, 3]});
        assert_eq!(of(&own.to_string()), None);
        let own = json!({"status": "failed", "result": null, "error": "x",
            "updated_session_state": null, "rows": [1, 2, 3]});
        assert_eq!(of(&own.to_string()), None);
    }

    #[test]
    fn returned_is_the_value_of_a_record_of_success_only() {
        let ok = "status='success' result='{\"tide\": \"calm\"}' error=None images=None";
        assert_eq!(returned(ok), Some(json!({"tide": "calm"})));
        assert_eq!(returned("status='failure' result=None error='x'"), None);
        assert_eq!(
            returned("status='success' result='calm' error='slow'"),
            None
        );
    }

    #[test]
    fn a_span_whose_output_is_a_failed_record_is_a_failed_call() {
        let text = "status='failure' result=None error='lane 4 is closed' images=None";
        let c = traceloop_call(text, false);
        assert_eq!(
            (c.status, c.error_message.as_deref(), c.result.is_none()),
            (CallStatus::Error, Some("lane 4 is closed"), true)
        );
        // A span already failed keeps its own message, not the record.
        let c = traceloop_call(text, true);
        assert_eq!(
            (c.error_message.as_deref(), c.result.is_none()),
            (Some("raised"), true)
        );
        // A tool's own dict with a failed status is its result.
        let own = r#"{"lane": 4, "status": "failed", "reason": "closed"}"#;
        let c = traceloop_call(own, false);
        assert_eq!(c.status, CallStatus::Ok);
        let got = c.result.as_ref().map(CallResult::to_value);
        assert_eq!(got, Some(serde_json::from_str(own).expect("JSON")));
    }

    #[test]
    fn with_results_off_a_failed_record_still_fails_the_call() {
        // Results are off unless a judge or JSONL output needs them: the
        // status a record states is read anyway, the value dropped.
        let off = || crate::extract::Extractor::default().with_results(false);
        let text = "status='failure' result=None error='lane 4 is closed' images=None";
        let c = traceloop_call_with(off(), text, false);
        assert_eq!(
            (c.status, c.error_message.as_deref(), c.result.is_none()),
            (CallStatus::Error, Some("lane 4 is closed"), true)
        );
        // A failed LangChain `ToolMessage` too (`failed_message`).
        let message = json!({"output": {"lc": 1, "type": "constructor",
            "id": ["langchain", "schema", "messages", "ToolMessage"],
            "kwargs": {"content": "lane 4 is closed", "status": "error",
                "tool_call_id": "call_1", "type": "tool"}}, "kwargs": {}});
        for results in [true, false] {
            let e = crate::extract::Extractor::default().with_results(results);
            let c = traceloop_call_with(e, &message.to_string(), false);
            assert_eq!(c.status, CallStatus::Error, "results {results}");
            assert_eq!(c.result.is_some(), results);
        }
        // A record of success, or a tool's own dict: ok, no value.
        for text in [
            "status='success' result='calm' error=None",
            r#"{"lane": 4, "status": "failed", "reason": "closed"}"#,
        ] {
            let c = traceloop_call_with(off(), text, false);
            assert_eq!(
                (c.status, c.result.is_none()),
                (CallStatus::Ok, true),
                "{text}"
            );
        }
    }

    /// The call an OTel GenAI tool span with result `result` reads as.
    fn genai_call(result: &str) -> ToolCall {
        use crate::assemble::{Trace, TraceId};
        let attrs = [
            ("gen_ai.operation.name", "execute_tool"),
            ("gen_ai.tool.name", "open_lane"),
            ("gen_ai.tool.call.arguments", r#"{"lane": 4}"#),
            ("gen_ai.tool.call.result", result),
        ];
        let s = crate::extract::tests::sp(1, None, (0, 5), "execute_tool open_lane", &attrs);
        let t = Trace::new(TraceId([8; 16]), vec![s], 0);
        let a = crate::extract::Extractor::default().analyze(&t);
        a.calls.into_iter().next().expect("one call")
    }

    #[test]
    fn the_record_dumped_under_any_rule_reads_the_same() {
        let dump = |status: &str, result: Value, error: Value| {
            json!({"status": status, "result": result, "error": error,
                "updated_session_state": null, "images": null, "videos": null,
                "audios": null, "files": null})
            .to_string()
        };
        let c = genai_call(&dump("failure", Value::Null, json!("lane 4 is closed")));
        assert_eq!(
            (c.status, c.error_message.as_deref(), c.result.is_none()),
            (CallStatus::Error, Some("lane 4 is closed"), true)
        );
        let c = genai_call(&dump("success", json!("{\"open\": true}"), Value::Null));
        assert_eq!(c.status, CallStatus::Ok);
        let got = c.result.as_ref().map(CallResult::to_value);
        assert_eq!(got, Some(json!({"open": true})));
        // The tool's own dict of the record's words alone stays.
        let own = r#"{"status": "failed", "result": null, "error": "lane 4 is closed"}"#;
        let c = genai_call(own);
        assert_eq!(c.status, CallStatus::Ok);
        let got = c.result.as_ref().map(CallResult::to_value);
        assert_eq!(got, Some(serde_json::from_str(own).expect("JSON")));
        // The record's `str()` reads the same under `traceloop` (whose
        // `agno_result` unwrap takes it off) as under the GenAI rule, and
        // a near record is read under both as any model's `str()` is: the
        // object of its fields.
        for (text, want) in [
            ("status='success' result='calm' error=None", json!("calm")),
            (
                "status='success' result='calm' error='slow'",
                json!({"status": "success", "result": "calm", "error": "slow"}),
            ),
            (
                "status='success' result='calm'",
                json!({"status": "success", "result": "calm"}),
            ),
        ] {
            for c in [genai_call(text), traceloop_call(text, false)] {
                assert_eq!(c.status, CallStatus::Ok, "{text}");
                let got = c.result.as_ref().map(CallResult::to_value);
                assert_eq!(got, Some(want.clone()), "{text}");
            }
        }
    }
}
