//! A framework's frame around a tool's arguments or result, in the form
//! the model was shown (docs/conventions.md, "Framework frames").
//!
//! Some agent frameworks do not offer the model a tool's own parameters,
//! nor hand it the tool's bare return value: they frame both, and only the
//! frame is recorded. Tool correctness is about what the function received
//! and returned (a user writes expectations in the tool's own terms), so the
//! frame comes off where its form is declared (`vocabulary.toml`) and matches exactly:
//!
//! - an argument envelope: the schema offered for the tool declares one
//!   object property with properties of its own beside free-text reasoning
//!   fields only (`envelope_reasoning`: Dynamiq's `{"thought",
//!   "action_input": {...}}`); arguments holding that property and such
//!   fields are that property's value. Only the offered schema decides:
//!   with no schema offered for the tool in the trace (on a span, or on a
//!   log record of one), the arguments stay as they are.
//! - a label before a result naming the call's own tool, on its own line
//!   (`result_labels`: Swarms' `Function 'find_hotel' result:`);
//! - a last line a loop appends to a result it writes into the
//!   conversation (`result_trailers`: Dynamiq's `[State: Progress: Loop
//!   2/5]`), read only in results read from the conversation;
//! - an object of one declared key around every return value
//!   (`result_wrapper_keys`: Upsonic's `{"func": <value>}`; WayFlow's and
//!   Agent Spec's default output title, `{"tool_output": <value>}`), text
//!   inside it read as a result given as text is.
//!
//! A label or trailer that comes off leaves text read as the conversation
//! reads a result given as text (`text_results::value_of`).

use std::sync::{Arc, OnceLock};

use serde_json::{Map, Value};

use super::conversation::text_results::value_of;
use super::conversation::FROM_CONVERSATION;
use super::facts::{self, ToolDef};
use super::rules::builtin_list;
use super::{CallArgs, CallResult, ToolCall};
use crate::assemble::Trace;
use crate::value::PyValue;

/// The event attribute of a log record holding the tools offered on its
/// model call (projection at decode).
pub(crate) const EVENT_KEY: &str = "gen_ai.tool.definitions";

use super::template::{after_template, ANY, NAME};

/// The declared forms (lists of `vocabulary.toml`).
struct Frames {
    reasoning: &'static [String],
    labels: &'static [String],
    trailers: &'static [String],
    wrapper_keys: &'static [String],
}

/// [`Frames`], looked up once.
fn frames() -> &'static Frames {
    static FRAMES: OnceLock<Frames> = OnceLock::new();
    FRAMES.get_or_init(|| Frames {
        reasoning: builtin_list("envelope_reasoning"),
        labels: builtin_list("result_labels"),
        trailers: builtin_list("result_trailers"),
        wrapper_keys: builtin_list("result_wrapper_keys"),
    })
}

/// Takes the declared frames off `calls`' arguments and results.
pub(crate) fn settle(trace: &Trace, calls: &mut [ToolCall]) {
    let reasoning = frames().reasoning;
    let mut offered: Option<Vec<ToolDef>> = None;
    for c in calls.iter_mut() {
        if may_be_enveloped(&c.args, reasoning) {
            let defs = offered.get_or_insert_with(|| offered_defs(trace));
            unwrap_args(c, defs, reasoning);
        }
        if let Some(r) = c.result.as_ref().and_then(|r| undecorated(r, c)) {
            c.result = Some(CallResult::Value(r));
        }
        super::error_frames::mark(c);
    }
    super::json_run::settle(calls);
    if super::no_args::any_lacking(calls) {
        super::no_args::settle(offered.get_or_insert_with(|| offered_defs(trace)), calls);
    }
}

/// Whether arguments may be an envelope (cheap, before any schema is
/// read): an object of a reasoning field and one object.
fn may_be_enveloped(args: &CallArgs, reasoning: &[String]) -> bool {
    match args {
        CallArgs::Value(v) | CallArgs::Ordered { value: v, .. } => {
            v.as_object().is_some_and(|o| envelope_shape(o, reasoning))
        }
        CallArgs::Text(t) => reasoning.iter().any(|r| t.contains(r.as_str())),
        CallArgs::None => false,
    }
}

/// An object of reasoning fields and exactly one object beside them.
fn envelope_shape(o: &Map<String, Value>, reasoning: &[String]) -> bool {
    let objects = o.values().filter(|v| v.is_object()).count();
    o.len() >= 2
        && objects == 1
        && o.iter()
            .all(|(k, v)| v.is_object() || reasoning.contains(k))
}

/// The tools offered in `trace`: on its spans, then on the log records
/// read as their events.
fn offered_defs(trace: &Trace) -> Vec<ToolDef> {
    let mut defs = facts::tools_of(trace);
    for s in &trace.spans {
        for e in &s.span.events {
            if let Some(v) = crate::assemble::find_attr(&e.attributes, EVENT_KEY) {
                defs.extend(facts::tool_defs(&super::source::any_to_json(v)));
            }
        }
    }
    defs
}

/// The property of schema `params` that holds the tool's own parameters,
/// when the schema is an envelope: that one object property (with
/// properties of its own) beside string reasoning fields only.
fn envelope_key<'a>(params: &'a Value, reasoning: &[String]) -> Option<&'a str> {
    let props = params.get("properties")?.as_object()?;
    let mut inner = None;
    for (k, p) in props {
        let ty = p.get("type").and_then(Value::as_str);
        if reasoning.contains(k) {
            if ty.is_some_and(|t| t != "string") {
                return None;
            }
        } else if inner.is_none()
            && ty == Some("object")
            && p.get("properties").is_some_and(Value::is_object)
        {
            inner = Some(k.as_str());
        } else {
            return None;
        }
    }
    inner.filter(|_| props.len() >= 2)
}

/// Call `c`'s arguments without the envelope the schema offered for its
/// tool (the first of `defs` by that name) declares, where they are in it.
fn unwrap_args(c: &mut ToolCall, defs: &[ToolDef], reasoning: &[String]) {
    let Some(params) = defs
        .iter()
        .find(|d| d.name == c.name)
        .and_then(|d| d.parameters.as_ref())
    else {
        return;
    };
    let Some(key) = envelope_key(params, reasoning) else {
        return;
    };
    let parsed;
    let args = match &c.args {
        CallArgs::Value(v) | CallArgs::Ordered { value: v, .. } => v,
        CallArgs::Text(t) => match serde_json::from_str::<Value>(t) {
            Ok(v) => {
                parsed = v;
                &parsed
            }
            Err(_) => return,
        },
        CallArgs::None => return,
    };
    let Some(o) = args.as_object() else { return };
    let declared = |k: &String| params["properties"].get(k).is_some();
    let Some(inner) = o.get(key).filter(|v| v.is_object()) else {
        return;
    };
    if !envelope_shape(o, reasoning) || !o.keys().all(declared) {
        return;
    }
    let inner = inner.clone();
    c.args = match &c.args {
        CallArgs::Ordered { ordered, .. } => match inner_ordered(ordered, key) {
            Some(ordered) => CallArgs::Ordered {
                value: inner,
                ordered,
            },
            None => CallArgs::Value(inner),
        },
        CallArgs::Text(_) => CallArgs::Text(inner.to_string().into()),
        _ => CallArgs::Value(inner),
    };
}

/// The value of `key` in arguments kept in their written order.
fn inner_ordered(ordered: &PyValue, key: &str) -> Option<Arc<PyValue>> {
    let PyValue::Dict(items) = ordered else {
        return None;
    };
    items
        .iter()
        .find(|(k, _)| k == key)
        .map(|(_, v)| Arc::new(v.clone()))
}

/// Result `r` of call `c` without the declared decorations around it;
/// `None` when it has none.
fn undecorated(r: &CallResult, c: &ToolCall) -> Option<Value> {
    match r {
        CallResult::Value(v) => undecorated_value(v, c),
        // Only text that may hold a decoration is parsed.
        CallResult::Json(t) if may_be_decorated(t, c.from == Some(FROM_CONVERSATION)) => {
            undecorated_value(&serde_json::from_str(t).ok()?, c)
        }
        CallResult::Json(_) => None,
    }
}

/// Whether JSON text may be a decorated result, looking no further than
/// its start where it can: an object whose first key is a declared
/// wrapper key, a string opening with a declared label, or (`trailed`: a
/// result from the conversation) a string holding a trailer's opening.
fn may_be_decorated(t: &str, trailed: bool) -> bool {
    let f = frames();
    if let Some(rest) = t.strip_prefix('{') {
        let rest = rest.trim_start();
        return f.wrapper_keys.iter().any(|k| {
            rest.strip_prefix('"')
                .and_then(|r| r.strip_prefix(k.as_str()))
                .is_some_and(|r| r.starts_with('"'))
        });
    }
    let Some(mut rest) = t.strip_prefix('"') else {
        return false;
    };
    // Whitespace before a label, as JSON escapes it.
    loop {
        let next = rest.trim_start_matches(' ');
        match ["\\n", "\\r", "\\t"]
            .iter()
            .find_map(|e| next.strip_prefix(e))
        {
            Some(r) => rest = r,
            None => {
                rest = next;
                break;
            }
        }
    }
    let opening = |form: &'static String, at: &str| form.split(at).next().unwrap_or_default();
    f.labels.iter().any(|l| rest.starts_with(opening(l, NAME)))
        || (trailed && f.trailers.iter().any(|l| t.contains(opening(l, ANY))))
}

/// [`undecorated`] of a value.
fn undecorated_value(v: &Value, c: &ToolCall) -> Option<Value> {
    let mut out: Option<Value> = None;
    if c.from == Some(FROM_CONVERSATION) {
        if let Some(t) = v.as_str().and_then(without_trailer) {
            out = Some(value_of(t));
        }
    }
    let now = out.as_ref().unwrap_or(v);
    if let Some(t) = now.as_str().and_then(|t| without_label(t, &c.name)) {
        out = Some(value_of(t));
    }
    let now = out.as_ref().unwrap_or(v);
    if let Some(inner) = unwrapped(now) {
        out = Some(inner);
    }
    out
}

/// `text` without a declared trailer as its last line, when text comes
/// before it.
fn without_trailer(text: &str) -> Option<&str> {
    let (head, last) = text.trim_end().rsplit_once('\n')?;
    let head = head.trim();
    let matches = frames().trailers.iter().any(|t| {
        let (opens, closes) = t.split_once(ANY).unwrap_or((t, ""));
        last.len() >= opens.len() + closes.len()
            && last.starts_with(opens)
            && last.ends_with(closes)
    });
    (matches && !head.is_empty()).then_some(head)
}

/// `text` without a declared label naming tool `name`, on a line of its
/// own before the value.
fn without_label<'a>(text: &'a str, name: &str) -> Option<&'a str> {
    let text = text.trim_start();
    let mut naming = frames().labels.iter().filter(|l| l.contains(NAME));
    naming.find_map(|l| {
        let rest = after_template(l, text, name)?;
        let rest = rest
            .strip_prefix("\r\n")
            .or_else(|| rest.strip_prefix('\n'))?;
        Some(rest.trim())
    })
}

/// The value inside an object of one declared wrapper key; text inside it
/// read as a result given as text is (`{"tool_output": "{\"stars\": 3}"}`:
/// the object).
fn unwrapped(v: &Value) -> Option<Value> {
    let o = v.as_object().filter(|o| o.len() == 1)?;
    let (k, inner) = o.iter().next()?;
    if !frames().wrapper_keys.contains(k) {
        return None;
    }
    Some(match inner {
        Value::String(t) => value_of(t),
        v => v.clone(),
    })
}

#[cfg(test)]
mod tests {
    use serde_json::{json, Value};

    use super::{envelope_key, undecorated, without_label, without_trailer};
    use crate::extract::{CallResult, ToolCall};

    fn words() -> Vec<String> {
        vec!["thought".into(), "reasoning".into()]
    }

    #[test]
    fn an_envelope_is_one_object_property_beside_reasoning_fields_only() {
        let schema = json!({"type": "object", "properties": {
            "thought": {"type": "string"},
            "payload": {"type": "object", "properties": {"port": {"type": "integer"}}}}});
        assert_eq!(envelope_key(&schema, &words()), Some("payload"));
        // A tool's own object parameter beside another of its own.
        let own = json!({"properties": {
            "label": {"type": "string"},
            "payload": {"type": "object", "properties": {"port": {"type": "integer"}}}}});
        assert_eq!(envelope_key(&own, &words()), None);
        // An object of no declared properties is no envelope of parameters.
        let free = json!({"properties": {
            "thought": {"type": "string"}, "payload": {"type": "object"}}});
        assert_eq!(envelope_key(&free, &words()), None);
        // A lone object property: the tool's own.
        let lone = json!({"properties": {
            "payload": {"type": "object", "properties": {"port": {}}}}});
        assert_eq!(envelope_key(&lone, &words()), None);
        // A reasoning word typed other than text is the tool's own field.
        let typed = json!({"properties": {"thought": {"type": "integer"},
            "payload": {"type": "object", "properties": {"port": {}}}}});
        assert_eq!(envelope_key(&typed, &words()), None);
    }

    #[test]
    fn a_label_comes_off_only_when_it_names_the_call_s_own_tool_on_its_own_line() {
        let t = "Function 'dock' result:\n{\"berth\": 4}";
        assert_eq!(without_label(t, "dock"), Some("{\"berth\": 4}"));
        assert_eq!(without_label(t, "undock"), None);
        assert_eq!(without_label("Function 'dock' result: ok", "dock"), None);
        assert_eq!(without_label("Function 'dock' results:\nok", "dock"), None);
        assert_eq!(
            without_label("The Function 'dock' result:\nok", "dock"),
            None
        );
    }

    #[test]
    fn a_trailer_comes_off_only_as_a_last_line_after_a_value() {
        let t = "{\"berth\": 4}\n\n\n[State: Progress: Loop 2/9]";
        assert_eq!(without_trailer(t), Some("{\"berth\": 4}"));
        assert_eq!(without_trailer("[State: Progress: Loop 2/9]"), None);
        assert_eq!(without_trailer("docked\n[Status: ready]"), None);
        assert_eq!(without_trailer("docked\n[State: ready] ok"), None);
    }

    fn call(name: &str, result: CallResult, from: Option<&'static str>) -> ToolCall {
        ToolCall {
            result: Some(result),
            from,
            ..crate::evaluate::sessions_test_call(name, 0)
        }
    }

    fn settled(name: &str, result: Value, from: Option<&'static str>) -> Option<Value> {
        let c = call(name, CallResult::Value(result), from);
        undecorated(c.result.as_ref().unwrap(), &c)
    }

    #[test]
    fn a_declared_wrapper_key_comes_off_any_value_and_nothing_else() {
        let text = CallResult::Json(r#"{"func": {"berth": 4}}"#.into());
        let c = call("dock", text, None);
        assert_eq!(
            undecorated(c.result.as_ref().unwrap(), &c),
            Some(json!({"berth": 4}))
        );
        assert_eq!(
            settled("dock", json!({"func": "docked"}), None),
            Some(json!("docked"))
        );
        assert_eq!(settled("dock", json!({"func": 1, "more": 2}), None), None);
        // A framework's default single-output name; text inside is read
        // as a text result (JSON object text: the object).
        let text = CallResult::Json(r#"{"tool_output": "{\"berth\": 4}"}"#.into());
        let c = call("dock", text, None);
        assert_eq!(
            undecorated(c.result.as_ref().unwrap(), &c),
            Some(json!({"berth": 4}))
        );
        assert_eq!(
            settled("dock", json!({"tool_output": "docked"}), None),
            Some(json!("docked"))
        );
        let two = json!({"tool_output": "docked", "status": "ok"});
        assert_eq!(settled("dock", two, None), None);
        assert_eq!(settled("dock", json!({"function": "docked"}), None), None);
    }

    #[test]
    fn decorations_come_off_together_and_a_trailer_only_in_the_conversation() {
        let t = json!("Function 'dock' result:\n{\"berth\": 4}\n\n[State: Loop 2/9]");
        assert_eq!(
            settled("dock", t.clone(), Some("conversation")),
            Some(json!({"berth": 4}))
        );
        // A tool span's own text ending so is the tool's.
        let own = json!("docked\n[State: Loop 2/9]");
        assert_eq!(settled("dock", own, None), None);
        assert_eq!(
            settled("dock", json!("Function 'dock' result:\ndocked"), None),
            Some(json!("docked"))
        );
    }

    /// A made-up vendor's two model calls in one trace asking for and
    /// answering `dock` with `args`; the tools offered as `defs` (none:
    /// `None`) on the first span, or on a log record of it (`logged`).
    fn framed_trace(args: &Value, defs: Option<&Value>, logged: bool) -> Vec<(String, Value)> {
        use crate::assemble::{Trace, TraceId};
        use crate::extract::test_support::{
            event, genai_asks as asks, genai_result as answer, genai_user as user,
        };
        use crate::extract::tests::sp;
        let asked = json!([asks(&[("c1", "dock", args.clone())])]);
        let later = json!([
            user(),
            asks(&[("c1", "dock", args.clone())]),
            answer("c1", "4")
        ]);
        let done = json!([{"role": "assistant", "parts": [{"type": "text", "content": "ok"}]}]);
        let (first, second) = (json!([user()]).to_string(), later.to_string());
        let (asked, done) = (asked.to_string(), done.to_string());
        let offered = defs.map(Value::to_string).unwrap_or_default();
        let mut a = vec![
            ("gen_ai.operation.name", "chat"),
            ("gen_ai.input.messages", first.as_str()),
            ("gen_ai.output.messages", asked.as_str()),
        ];
        if defs.is_some() && !logged {
            a.push(("gen_ai.tool.definitions", offered.as_str()));
        }
        let mut one = sp(1, None, (0, 10), "acme.respond", &a);
        if defs.is_some() && logged {
            let e = event("acme.details", super::EVENT_KEY, &offered);
            one.span.events.push(e);
        }
        let b = [
            ("gen_ai.operation.name", "chat"),
            ("gen_ai.input.messages", second.as_str()),
            ("gen_ai.output.messages", done.as_str()),
        ];
        let two = sp(2, None, (20, 30), "acme.respond", &b);
        let a = crate::extract::Extractor::default().analyze(&Trace::new(
            TraceId([5; 16]),
            vec![one, two],
            0,
        ));
        a.calls
            .iter()
            .map(|c| (c.name.clone(), c.args.value().cloned().unwrap_or_default()))
            .collect()
    }

    #[test]
    fn an_envelope_the_offered_schema_declares_gives_the_inner_arguments() {
        let args = json!({"reasoning": "Dock first.", "request": {"berth": 4}});
        let defs = json!([{"type": "function", "function": {"name": "dock", "parameters": {
            "type": "object", "properties": {
                "reasoning": {"type": "string"},
                "request": {"type": "object", "properties": {"berth": {"type": "integer"}}}}}}}]);
        let inner = vec![("dock".to_string(), json!({"berth": 4}))];
        assert_eq!(framed_trace(&args, Some(&defs), false), inner);
        // The schema on a log record of the model call.
        assert_eq!(framed_trace(&args, Some(&defs), true), inner);
        // No schema offered: nothing is guessed.
        let as_they_are = vec![("dock".to_string(), args.clone())];
        assert_eq!(framed_trace(&args, None, false), as_they_are);
        // A schema of the tool's own two parameters: they are its arguments.
        let own = json!([{"name": "dock", "parameters": {"properties": {
            "reasoning": {"type": "string"},
            "request": {"type": "object"}}}}]);
        assert_eq!(framed_trace(&args, Some(&own), false), as_they_are);
    }
}
