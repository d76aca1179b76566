//! Extract: a trace -> the tool calls it made, in start-time order.

pub mod rules;

use serde::Serialize;
use serde_json::{Map, Number, Value};

use opentelemetry_proto::tonic::common::v1::{any_value, AnyValue};

use crate::assemble::{find_attr, SpanId, SpanRecord, Trace};
use rules::{Cond, Decode, Field, Rule, Source};

/// Success or failure of one call.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum CallStatus {
    Ok,
    Error,
}

/// One tool call found in a trace.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ToolCall {
    pub name: String,
    /// `None` when the span carries no arguments (not the same as `{}`).
    pub args: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub result: Option<Value>,
    pub status: CallStatus,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error_message: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error_type: Option<String>,
    #[serde(serialize_with = "ser_display")]
    pub span_id: SpanId,
    pub start_time_unix_nano: u64,
    /// Number of enclosing tool calls (0 for a call made by the top-level agent).
    pub depth: usize,
    pub convention: String,
}

fn ser_display<S: serde::Serializer, T: std::fmt::Display>(v: &T, s: S) -> Result<S::Ok, S::Error> {
    s.collect_str(v)
}

/// Finds tool calls with an ordered rule table.
#[derive(Debug, Clone)]
pub struct Extractor {
    rules: Vec<Rule>,
    /// Count retriever spans (P6) as tool calls.
    pub retrievers_as_tools: bool,
}

impl Default for Extractor {
    fn default() -> Self {
        Extractor::new(rules::builtin())
    }
}

impl Extractor {
    pub fn new(mut rules: Vec<Rule>) -> Self {
        rules.sort_by_key(|r| r.priority); // stable: equal priorities keep table order
        Extractor {
            rules,
            retrievers_as_tools: false,
        }
    }

    pub fn with_retrievers(mut self, on: bool) -> Self {
        self.retrievers_as_tools = on;
        self
    }

    pub fn rules(&self) -> &[Rule] {
        &self.rules
    }

    /// The rule that makes span `s` a tool call, if any.
    pub fn rule_for(&self, s: &SpanRecord) -> Option<&Rule> {
        self.rules
            .iter()
            .filter(|r| self.retrievers_as_tools || !r.retriever)
            .find(|r| r.when.iter().all(|c| holds(c, s)) && !r.unless.iter().any(|c| holds(c, s)))
    }

    /// Tool calls of `trace`, ordered by span start time.
    pub fn extract(&self, trace: &Trace) -> Vec<ToolCall> {
        let rule_of: Vec<Option<&Rule>> = trace.spans.iter().map(|s| self.rule_for(s)).collect();
        let mut calls = Vec::new();
        for (i, s) in trace.spans.iter().enumerate() {
            let Some(rule) = rule_of[i] else { continue };
            let Some(name) = rule
                .tool_name
                .iter()
                .find_map(|src| text_of(src, s))
                .filter(|n| !n.is_empty())
            else {
                continue;
            };
            let depth = trace.ancestors(i).filter(|&a| rule_of[a].is_some()).count();
            let (status, error_message, error_type) = error_of(rule, s);
            calls.push(ToolCall {
                name: name.into_owned(),
                args: rule.args.iter().find_map(|src| value_of(src, s)),
                result: rule.result.iter().find_map(|src| value_of(src, s)),
                status,
                error_message,
                error_type,
                span_id: s.span_id,
                start_time_unix_nano: s.span.start_time_unix_nano,
                depth,
                convention: rule.name.clone(),
            });
        }
        // Spans are already in start order; keep it explicit for callers that
        // build traces by hand.
        calls.sort_by_key(|c| c.start_time_unix_nano);
        calls
    }
}

const STATUS_ERROR: i32 = 2;

fn error_of(rule: &Rule, s: &SpanRecord) -> (CallStatus, Option<String>, Option<String>) {
    let status = s.span.status.as_ref();
    let failed = status.is_some_and(|st| st.code == STATUS_ERROR)
        || rule.error_when.iter().any(|c| holds(c, s));
    if !failed {
        return (CallStatus::Ok, None, None);
    }
    let exception = s.span.events.iter().find(|e| e.name == "exception");
    let event_str = |key: &str| {
        exception
            .and_then(|e| find_attr(&e.attributes, key))
            .and_then(any_text)
            .map(|t| t.into_owned())
    };
    let message = rule
        .error_message
        .iter()
        .find_map(|src| text_of(src, s).map(|t| t.into_owned()))
        .or_else(|| {
            status
                .map(|st| st.message.clone())
                .filter(|m| !m.is_empty())
        })
        .or_else(|| event_str("exception.message"));
    let kind = event_str("exception.type").or_else(|| s.attr_str("error.type").map(str::to_string));
    (CallStatus::Error, message, kind)
}

fn holds(c: &Cond, s: &SpanRecord) -> bool {
    match c {
        Cond::AttrEquals {
            key,
            value,
            json_encoded,
        } => {
            let Some(text) = s.attr(key).and_then(any_text) else {
                return false;
            };
            if *json_encoded {
                serde_json::from_str::<String>(&text).is_ok_and(|d| d == *value)
            } else {
                text == *value
            }
        }
        Cond::AttrMatches { key, regex } => s
            .attr(key)
            .and_then(any_text)
            .is_some_and(|t| regex.is_match(&t)),
        Cond::AttrPresent { key } => s.attr(key).is_some(),
        Cond::NameMatches { regex } => regex.is_match(&s.span.name),
    }
}

/// The raw text/value at a source, before decoding.
fn raw<'a>(field: &Field, s: &'a SpanRecord) -> Option<&'a AnyValue> {
    match field {
        Field::Attr(k) => s.attr(k),
        Field::Event { event, attr } => s
            .span
            .events
            .iter()
            .filter(|e| e.name == *event)
            .find_map(|e| find_attr(&e.attributes, attr)),
        Field::SpanName | Field::SpanNameCapture(_) => None,
    }
}

/// A source read as text (tool names, error messages).
fn text_of<'a>(src: &Source, s: &'a SpanRecord) -> Option<std::borrow::Cow<'a, str>> {
    match &src.field {
        Field::SpanName => Some(std::borrow::Cow::Borrowed(s.span.name.as_str())),
        Field::SpanNameCapture(re) => re
            .captures(&s.span.name)
            .and_then(|c| c.get(1))
            .map(|m| std::borrow::Cow::Borrowed(m.as_str())),
        f => raw(f, s).and_then(any_text),
    }
}

/// A source read as a JSON value (arguments, results).
fn value_of(src: &Source, s: &SpanRecord) -> Option<Value> {
    if matches!(src.field, Field::SpanName | Field::SpanNameCapture(_)) {
        return text_of(src, s).map(|t| Value::String(t.into_owned()));
    }
    let v = raw(&src.field, s)?;
    let text = match v.value.as_ref()? {
        any_value::Value::StringValue(t) => t,
        // Structured attributes (kvlist/array) are already values.
        _ => return Some(any_to_json(v)),
    };
    Some(match &src.decode {
        Decode::Plain => Value::String(text.clone()),
        Decode::Json => parse_json_or_string(text),
        Decode::JsonIfMime { mime_key } => {
            if s.attr_str(mime_key)
                .is_some_and(|m| m.trim().starts_with("application/json"))
            {
                parse_json_or_string(text)
            } else {
                Value::String(text.clone())
            }
        }
        Decode::JsonIfMimeOrSchema {
            mime_key,
            schema_key,
        } => {
            if s.attr_str(mime_key)
                .is_some_and(|m| m.trim().starts_with("application/json"))
            {
                parse_json_or_string(text)
            } else {
                match s.attr_str(schema_key).and_then(single_property) {
                    Some(name) => {
                        Value::Object(Map::from_iter([(name, Value::String(text.clone()))]))
                    }
                    None => Value::String(text.clone()),
                }
            }
        }
        Decode::ArgsKwargs => args_kwargs(parse_json_or_string(text)),
    })
}

/// The name of the only property of a JSON Schema, if it has exactly one.
fn single_property(schema: &str) -> Option<String> {
    let v: Value = serde_json::from_str(schema).ok()?;
    let props = v.get("properties")?.as_object()?;
    (props.len() == 1)
        .then(|| props.keys().next().cloned())
        .flatten()
}

fn parse_json_or_string(text: &str) -> Value {
    serde_json::from_str(text).unwrap_or_else(|_| Value::String(text.to_string()))
}

/// `{"args": [...], "kwargs": {...}}` -> keyword arguments by name, with
/// positional ones kept under `"args"` (they cannot be named without the
/// tool's signature, and must not be dropped).
fn args_kwargs(v: Value) -> Value {
    let Value::Object(mut o) = v else { return v };
    let looks_like_call = o.keys().all(|k| k == "args" || k == "kwargs") && !o.is_empty();
    if !looks_like_call {
        return Value::Object(o);
    }
    let mut out = match o.remove("kwargs") {
        Some(Value::Object(kw)) => kw,
        _ => Map::new(),
    };
    match o.remove("args") {
        Some(Value::Array(a)) if a.is_empty() => {}
        Some(positional) => {
            out.insert("args".to_string(), positional);
        }
        None => {}
    }
    Value::Object(out)
}

/// An attribute value as text (strings as-is, scalars formatted).
pub fn any_text(v: &AnyValue) -> Option<std::borrow::Cow<'_, str>> {
    use std::borrow::Cow;
    Some(match v.value.as_ref()? {
        any_value::Value::StringValue(s) => Cow::Borrowed(s.as_str()),
        any_value::Value::IntValue(i) => Cow::Owned(i.to_string()),
        any_value::Value::DoubleValue(d) => Cow::Owned(d.to_string()),
        any_value::Value::BoolValue(b) => Cow::Owned(b.to_string()),
        _ => Cow::Owned(any_to_json(v).to_string()),
    })
}

/// An OTLP `AnyValue` as JSON.
pub fn any_to_json(v: &AnyValue) -> Value {
    match v.value.as_ref() {
        None => Value::Null,
        Some(any_value::Value::StringValue(s)) => Value::String(s.clone()),
        Some(any_value::Value::BoolValue(b)) => Value::Bool(*b),
        Some(any_value::Value::IntValue(i)) => Value::Number((*i).into()),
        Some(any_value::Value::DoubleValue(d)) => {
            Number::from_f64(*d).map_or(Value::Null, Value::Number)
        }
        Some(any_value::Value::ArrayValue(a)) => {
            Value::Array(a.values.iter().map(any_to_json).collect())
        }
        Some(any_value::Value::KvlistValue(kv)) => Value::Object(
            kv.values
                .iter()
                .map(|p| {
                    (
                        p.key.clone(),
                        p.value.as_ref().map_or(Value::Null, any_to_json),
                    )
                })
                .collect(),
        ),
        Some(any_value::Value::BytesValue(b)) => {
            Value::String(b.iter().map(|x| format!("{x:02x}")).collect())
        }
        Some(_) => Value::Null,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn args_kwargs_keeps_positional() {
        assert_eq!(
            args_kwargs(json!({"args": [], "kwargs": {"a": 1}})),
            json!({"a": 1})
        );
        assert_eq!(
            args_kwargs(json!({"args": ["Tokyo"], "kwargs": {}})),
            json!({"args": ["Tokyo"]})
        );
        assert_eq!(args_kwargs(json!({"city": "x"})), json!({"city": "x"}));
    }
}
