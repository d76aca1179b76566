//! Calls that raised, which the framework dropped from its history and told
//! the model about only in text (docs/conventions.md, "The conversation
//! witness", "A failed call told in text").
//!
//! smolagents' `ToolCallingAgent` keeps no memory of a step whose tool
//! raised: the model turn asking for the call is gone from every later
//! request, and no tool message answers its call id. The next request
//! carries the failure as text in a user (or tool-response) message:
//! `Error executing tool 'reserve_items' with arguments {'sku': ...}:
//! RuntimeError: ...`. Such a text naming the asked tool with equal
//! arguments, in the first request after the ask, after that request's
//! last model turn, answers the ask as a failed call. The texts' shapes are
//! data (`[vocabulary]`: `failed_call_texts`, with `{name}`, `{args}`,
//! `{type}` and `{error}` in place of what varies, and
//! `failed_call_text_ends`, the words the loop writes after the error).
//!
//! Only an ask that no request answers by id is read so, and only once per
//! text: a request holding more such texts than the asking span's own
//! request holds (the history repeats older failures) has new ones.

use std::borrow::Cow;
use std::collections::HashSet;
use std::sync::OnceLock;

use serde_json::{Map, Value};

use super::{AskedAt, Request};
use crate::assemble::Trace;
use crate::extract::any_word::AnyWord;
use crate::extract::open::ended_by;
use crate::extract::open::{run_key, Open, OpenAsk, Told};
use crate::extract::requested::Asked;
use crate::extract::rules::builtin_list;
use crate::extract::{Analysis, CallStatus, Ctx, Extractor, ToolCall};
use crate::value::json_eq;

/// One failure a request's text tells: the tool, its arguments, the
/// error's type (when the text names one) and message.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Failure {
    pub name: String,
    pub args: Value,
    pub error_type: Option<String>,
    pub message: String,
    /// The whole text of the message telling it, when that message tells
    /// nothing else: what the model was sent for the call ([`told_text`]).
    pub text: Option<String>,
}

/// A declared text shape, cut at its placeholders: `opens` `{name}`
/// `after_name` `{args}` `after_args` [`{type}` `after_type`] `{error}`.
struct Shape {
    opens: String,
    after_name: String,
    after_args: String,
    after_type: Option<String>,
}

impl Shape {
    /// The shape a template declares; `None` when it lacks a placeholder
    /// or one is out of order (such an entry reads nothing).
    fn of(template: &str) -> Option<Shape> {
        let (opens, rest) = template.split_once("{name}")?;
        let (after_name, rest) = rest.split_once("{args}")?;
        let (after_args, after_type) = match rest.split_once("{type}") {
            Some((after_args, rest)) => (after_args, Some(rest.strip_suffix("{error}")?)),
            None => (rest.strip_suffix("{error}")?, None),
        };
        let words = [opens, after_name, after_args];
        if words.iter().any(|w| w.is_empty()) || after_type.is_some_and(str::is_empty) {
            return None;
        }
        Some(Shape {
            opens: opens.to_string(),
            after_name: after_name.to_string(),
            after_args: after_args.to_string(),
            after_type: after_type.map(str::to_string),
        })
    }
}

/// The declared shapes, the words ending an error, and a search for any
/// shape's opening words (one pass over a message's text), made once.
fn shapes() -> &'static (Vec<Shape>, &'static [String], AnyWord) {
    static SHAPES: OnceLock<(Vec<Shape>, &'static [String], AnyWord)> = OnceLock::new();
    SHAPES.get_or_init(|| {
        let shapes: Vec<Shape> = builtin_list("failed_call_texts")
            .iter()
            .filter_map(|t| Shape::of(t))
            .collect();
        let opens = AnyWord::new(shapes.iter().map(|s| s.opens.as_str()));
        (shapes, builtin_list("failed_call_text_ends"), opens)
    })
}

/// What opens each declared text (for a request text's byte look before
/// it is parsed: `result_words`).
pub(super) fn openings() -> impl Iterator<Item = &'static str> {
    shapes().0.iter().map(|s| s.opens.as_str())
}

/// The longest error message kept (bytes; a longer one is cut at a
/// character's edge): a text that never writes an end word must not make
/// each failure hold the rest of it.
const MAX_MESSAGE: usize = 4096;

/// The failures `text` tells, in the text's order. Each is read only up to
/// the next opening of any shape (the next failure, or the text's end), so
/// the text is scanned about once however many failures it tells.
pub(crate) fn in_text(text: &str) -> Vec<Failure> {
    let (shapes, ends, _) = shapes();
    let mut at: Vec<(usize, &Shape)> = shapes
        .iter()
        .flat_map(|s| {
            text.match_indices(s.opens.as_str())
                .map(move |(p, _)| (p, s))
        })
        .collect();
    at.sort_by_key(|&(p, _)| p);
    let mut out = Vec::new();
    for (k, &(p, shape)) in at.iter().enumerate() {
        let from = p + shape.opens.len();
        let to = at.get(k + 1).map_or(text.len(), |&(next, _)| next);
        if let Some(f) = text.get(from..to).and_then(|w| read_one(w, shape, ends)) {
            out.push(f);
        }
    }
    out
}

/// The failure told right after a shape's opening words, in `rest` (the
/// text up to the next opening).
fn read_one(rest: &str, shape: &Shape, ends: &[String]) -> Option<Failure> {
    let (name, rest) = rest.split_once(shape.after_name.as_str())?;
    if name.is_empty() || name.contains(['\n', '\'', '"']) {
        return None;
    }
    // The arguments are the one value (JSON, or a Python literal as
    // `str(dict)` writes it) `after_args` follows.
    let (args, rest) = args_of(rest, &shape.after_args)?;
    let end = ends.iter().filter_map(|e| rest.find(e.as_str())).min();
    let error = rest[..end.unwrap_or(rest.len())].trim();
    let typed = shape
        .after_type
        .as_deref()
        .and_then(|sep| error.split_once(sep))
        .filter(|(ty, _)| is_type_name(ty));
    let (error_type, message) = match typed {
        Some((ty, m)) => (Some(ty.to_string()), m.trim()),
        None => (None, error),
    };
    Some(Failure {
        name: name.to_string(),
        args,
        error_type,
        message: cut(message, MAX_MESSAGE).to_string(),
        text: None,
    })
}

/// The value at the start of `text` that `after` follows (spaces between
/// allowed), and the text after `after`: read once, JSON first, else a
/// Python literal.
fn args_of<'t>(text: &'t str, after: &str) -> Option<(Value, &'t str)> {
    let followed = |end: usize| text.get(end..)?.trim_start().strip_prefix(after);
    let mut json = serde_json::Deserializer::from_str(text).into_iter::<Value>();
    if let Some(Ok(v)) = json.next() {
        if let Some(rest) = followed(json.byte_offset()) {
            return Some((v, rest));
        }
    }
    let (v, end) = crate::extract::literal::parse_prefix(text)?;
    Some((v, followed(end)?))
}

/// `s`'s first `max` bytes at most, cut at a character's edge.
fn cut(s: &str, max: usize) -> &str {
    let mut end = s.len().min(max);
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

/// Whether `ty` is an exception class's name (a dotted identifier).
fn is_type_name(ty: &str) -> bool {
    !ty.is_empty()
        && ty.split('.').all(|w| {
            w.chars()
                .next()
                .is_some_and(|c| c.is_alphabetic() || c == '_')
                && w.chars().all(|c| c.is_alphanumeric() || c == '_')
        })
}

/// The failures message `o` tells (its content string, or its text parts),
/// added to `out`; a message without a shape's opening words is not read.
pub(super) fn note(o: &Map<String, Value>, out: &mut Vec<Failure>) {
    let (declared, _, opens) = shapes();
    // (No shape declared: an empty search would match every text.)
    if declared.is_empty() {
        return;
    }
    let texts: Vec<&str> = match o.get("content").or_else(|| o.get("parts")) {
        Some(Value::String(t)) => vec![t.as_str()],
        Some(Value::Array(parts)) => parts
            .iter()
            .filter_map(|p| p.get("text").or_else(|| p.get("content")))
            .filter_map(Value::as_str)
            .collect(),
        _ => return,
    };
    let from = out.len();
    for t in &texts {
        if opens.is_in(t.as_bytes()) {
            out.extend(in_text(t));
        }
    }
    // One text telling one failure: the whole text is what the model was
    // sent for that call (the loop's words around the error included).
    if let ([t], [f]) = (texts.as_slice(), &mut out[from..]) {
        f.text = Some((*t).to_string());
    }
}

/// The whole text of the message telling the failure of ask `at` (found as
/// [`answer`] finds it), when that message tells no other: the call's
/// result as the model saw it. `used`: as [`answer`]'s.
pub(super) fn told_text(
    trace: &Trace,
    at: &AskedAt,
    requests: &[Request],
    used: &mut Vec<(usize, String, Value)>,
) -> Option<String> {
    let inputs: Vec<bool> = trace.spans.iter().map(super::has_any_input).collect();
    let (_, f) = answer(trace, at, requests, &inputs, used)?;
    f.text.clone()
}

/// The model's arguments as a value (text read as JSON or a Python
/// literal), to compare with a failure's.
fn asked_args(v: &Value) -> Cow<'_, Value> {
    match v {
        Value::String(t) => Cow::Owned(crate::extract::source::parse_json_or_literal(t)),
        other => Cow::Borrowed(other),
    }
}

/// Whether failure `f` tells of a call of tool `name` with arguments `args`.
pub(crate) fn tells(f: &Failure, name: &str, args: &Value) -> bool {
    tells_asked(&f.name, &f.args, name, args)
}

/// Whether a failure told of tool `name` with `args` (a [`Failure`]'s, as
/// another trace keeps them) is of a call of `asked_name` with `asked_args`
/// (equal as values: `3` is `3.0`).
pub(crate) fn tells_asked(name: &str, args: &Value, asked_name: &str, asked_args: &Value) -> bool {
    name == asked_name && json_eq(args, &self::asked_args(asked_args))
}

/// For an ask of this trace that no request answers by id: the first
/// request after it (span position) and the failure there that answers it.
/// The history repeats older failures before the new one: the answer is
/// the one after as many such failures as the asking span's own request
/// told and asks answered so before took (`used`: request, tool, arguments
/// of each), so a retry with the same arguments gets its own error.
pub(super) fn answer<'r>(
    trace: &Trace,
    at: &AskedAt,
    requests: &'r [Request],
    inputs: &[bool],
    used: &mut Vec<(usize, String, Value)>,
) -> Option<(usize, &'r Failure)> {
    let start = |i: usize| trace.spans[i].span.start_time_unix_nano;
    // After the model answered: another record of the same model call
    // (a parent's, a child's) holds the same request, not the next one.
    let asked = &trace.spans[at.span].span;
    let answered = asked.end_time_unix_nano.max(asked.start_time_unix_nano);
    let next = (0..trace.spans.len())
        .filter(|&i| i != at.span && inputs[i] && ended_by(answered, start(i)))
        .min_by_key(|&i| (start(i), i))?;
    let (name, args) = (at.asked.name.as_str(), &at.asked.args);
    let r = requests.get(next)?;
    let before = requests.get(at.span).map_or(0, |own| {
        own.failures.iter().filter(|f| tells(f, name, args)).count()
    });
    let taken = used
        .iter()
        .filter(|(i, n, a)| *i == next && n == name && tells_asked(n, a, name, args))
        .count();
    let failure = r
        .failures
        .iter()
        .filter(|f| tells(f, name, args))
        .nth(before + taken)?;
    used.push((next, name.to_string(), asked_args(args).into_owned()));
    Some((next, failure))
}

/// The failed call of ask `a` (asked on span `at`, of form `form`), told
/// by failure `f` in the request on span `request`: no result, the error's
/// message and type. `origin`: where another trace asked for it.
#[allow(clippy::too_many_arguments)]
fn failed_call(
    (x, trace, seen): (&Extractor, &Trace, &[Ctx]),
    out: &mut Analysis,
    at: usize,
    a: &Asked,
    form: &'static str,
    (request, f): (usize, &Failure),
    origin: Option<&OpenAsk>,
) -> ToolCall {
    let mut call = super::conversation_call(x, trace, seen, out, at, a, form, None);
    let told = trace.spans[request].span.start_time_unix_nano;
    call.end_time_unix_nano = told.max(call.start_time_unix_nano);
    call.status = CallStatus::Error;
    call.error_message = Some(f.message.clone());
    call.error_type = f.error_type.clone();
    let asked = origin.map_or(String::new(), |c| {
        format!(" (asked for in trace {}, span {})", c.trace_id, c.span_id)
    });
    out.notes.push(format!(
        "`{}`{}{asked} is answered by no result: the request of span {} tells that it failed (`{}`): counted as a failed call",
        a.name,
        super::id_text(a),
        trace.spans[request].span_id,
        f.message
    ));
    call
}

/// Ask `at` of this trace as a failed call, when the first request after
/// it tells that it failed ([`answer`]; `told`: the failures so used).
pub(super) fn in_trace(
    ctx: (&Extractor, &Trace, &[Ctx]),
    at: &AskedAt,
    (requests, inputs): (&[Request], &[bool]),
    told: &mut Vec<(usize, String, Value)>,
    out: &mut Analysis,
) -> bool {
    let Some((request, f)) = answer(ctx.1, at, requests, inputs, told) else {
        return false;
    };
    let call = failed_call(ctx, out, at.span, &at.asked, at.form, (request, f), None);
    out.calls.push(call);
    true
}

/// The asks earlier traces left open (`carried`) whose failure this
/// trace's first request tells (after its last model turn), and no request
/// answers by id: counted here as failed calls. The failures told there
/// that no carried ask takes are left for the carry (`Open::failed`).
pub(super) fn carried_calls<'r>(
    ctx: (&Extractor, &Trace, &[Ctx]),
    (requests, inputs): (&'r [Request], &[bool]),
    carried: &'r [OpenAsk],
    counted: &mut HashSet<(&'r str, &'r str)>,
    open: &mut Open,
    out: &mut Analysis,
) {
    let trace = ctx.1;
    let start = |i: usize| trace.spans[i].span.start_time_unix_nano;
    let first = (0..trace.spans.len())
        .filter(|&i| inputs[i])
        .min_by_key(|&i| (start(i), i));
    let Some(r) = first.and_then(|f| Some((f, requests.get(f)?))) else {
        return;
    };
    let (f, request) = r;
    if request.failures.is_empty() {
        return;
    }
    let answered: HashSet<&str> = requests
        .iter()
        .flat_map(|r| &r.answers)
        .filter_map(|a| a.id.as_deref())
        .collect();
    // From the ends: the history repeats older failures before the new
    // one, and the latest ask is the retry the newest failure answers.
    let mut used = vec![false; request.failures.len()];
    let mut pairs: Vec<(usize, usize)> = Vec::new();
    for (j, c) in carried
        .iter()
        .enumerate()
        .rev()
        .filter(|(_, c)| !c.is_echo())
    {
        let Some(id) = c.asked.id.as_deref() else {
            continue;
        };
        let paired = pairs.iter().any(|&(i, _)| {
            carried[i].asked.id.as_deref() == Some(id) && carried[i].asked.name == c.asked.name
        });
        if paired || answered.contains(id) || counted.contains(&(id, c.asked.name.as_str())) {
            continue;
        }
        let free = (0..used.len())
            .rev()
            .find(|&k| !used[k] && tells(&request.failures[k], &c.asked.name, &c.asked.args));
        if let Some(k) = free {
            used[k] = true;
            pairs.push((j, k));
        }
    }
    for &(j, k) in pairs.iter().rev() {
        let c = &carried[j];
        if let Some(id) = c.asked.id.as_deref() {
            counted.insert((id, &c.asked.name));
        }
        let told = (f, &request.failures[k]);
        let mut call = failed_call(ctx, out, f, &c.asked, c.form, told, Some(c));
        call.start_time_unix_nano = super::asked_time::asked_start(c, start(f));
        out.calls.push(call);
    }
    let run = run_key(&trace.spans[f]);
    let left = request.failures.iter().zip(&used).filter(|(_, u)| !**u);
    open.failed.extend(left.map(|(t, _)| Told {
        name: t.name.clone(),
        args: t.args.clone(),
        run,
        start: start(f),
    }));
}

#[cfg(test)]
#[path = "failed_texts_tests.rs"]
mod tests;
