//! A case's expected calls, held compactly: a big fixture's plain cases keep
//! the JSON text of their list and parse it again when a trace is scored
//! against them. Parsed, two small calls take about a kilobyte (the map
//! `serde_json` builds for one arguments object is a 632-byte node); their
//! text takes the bytes it was written in (docs/formats.md, fixture memory).

use std::sync::Arc;

use serde::Deserialize;
use serde_json::value::RawValue;

use super::{calls_of, read, Call, RawTool};
use crate::value::PyValue;

/// The expected calls of one case.
#[derive(Debug, Clone)]
pub struct ExpectedCalls(Repr);

#[derive(Debug, Clone)]
enum Repr {
    Parsed(Arc<[Call]>),
    /// The list as written (`[...]`), which parsed without error when the
    /// fixture was read and holds no argument matcher (those are compiled
    /// once, so such lists stay parsed).
    Text(Arc<str>),
}

impl ExpectedCalls {
    /// The calls, parsed: shared when held parsed, built from the text
    /// otherwise (the same steps as when the fixture was read, so the same
    /// calls).
    pub fn calls(&self) -> Arc<[Call]> {
        match &self.0 {
            Repr::Parsed(calls) => Arc::clone(calls),
            // The text parsed when the fixture was read: no error here.
            Repr::Text(text) => parse_list(text).unwrap_or_default().into(),
        }
    }

    /// How many calls the case expects.
    pub fn len(&self) -> usize {
        match &self.0 {
            Repr::Parsed(calls) => calls.len(),
            Repr::Text(_) => self.calls().len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Whether a call holds an argument matcher (a list held as text holds
    /// none, so it is not parsed to answer).
    pub fn has_matchers(&self) -> bool {
        match &self.0 {
            Repr::Parsed(calls) => calls.iter().any(|c| c.matchers.is_some()),
            Repr::Text(_) => false,
        }
    }

    /// The calls, to change, when held parsed and not shared (a case just
    /// read).
    pub(super) fn calls_mut(&mut self) -> Option<&mut [Call]> {
        match &mut self.0 {
            Repr::Parsed(calls) => Arc::get_mut(calls),
            Repr::Text(_) => None,
        }
    }

    /// The same calls held parsed (a case scored against many traces, as
    /// the default case is, parses once).
    pub fn into_parsed(self) -> ExpectedCalls {
        ExpectedCalls(Repr::Parsed(self.calls()))
    }

    /// Keeps the list as the text it was written in, when the record `text`
    /// holds one (`expected_tools` or `expected_tool_calls`) and `calls`,
    /// parsed from it, hold no argument matcher. `None` otherwise.
    pub(super) fn as_written(text: &str, calls: &[Call]) -> Option<ExpectedCalls> {
        if calls.is_empty() || calls.iter().any(|c| c.matchers.is_some()) {
            return None;
        }
        #[derive(Deserialize)]
        struct Lists<'a> {
            #[serde(borrow, default)]
            expected_tools: Option<&'a RawValue>,
            #[serde(borrow, default)]
            expected_tool_calls: Option<&'a RawValue>,
        }
        let lists: Lists = serde_json::from_str(text).ok()?;
        let list = lists.expected_tools.or(lists.expected_tool_calls)?.get();
        list.starts_with('[')
            .then(|| ExpectedCalls(Repr::Text(list.into())))
    }
}

impl From<Vec<Call>> for ExpectedCalls {
    fn from(calls: Vec<Call>) -> Self {
        ExpectedCalls(Repr::Parsed(calls.into()))
    }
}

impl From<Arc<[Call]>> for ExpectedCalls {
    fn from(calls: Arc<[Call]>) -> Self {
        ExpectedCalls(Repr::Parsed(calls))
    }
}

impl PartialEq for ExpectedCalls {
    fn eq(&self, other: &Self) -> bool {
        self.calls() == other.calls()
    }
}

/// Parses a list of expected tools as a fixture record's list is parsed,
/// arguments in the order written included.
fn parse_list(text: &str) -> Result<Vec<Call>, String> {
    let tools: Vec<RawTool> =
        serde_json::from_value(read::record(text)?).map_err(|e| e.to_string())?;
    let mut calls = calls_of(tools, "expected_tools")?;
    if let Ok(PyValue::List(ordered)) = PyValue::parse(text) {
        order_args(&mut calls, &ordered);
    }
    Ok(calls)
}

/// Gives `calls` their arguments in the order written (`tools`: the same
/// list parsed with key order kept), for presets that compare Python
/// `str()` of dicts (ragas).
pub(super) fn order_args(calls: &mut [Call], tools: &[PyValue]) {
    for (call, tool) in calls.iter_mut().zip(tools) {
        let PyValue::Dict(tool) = tool else { continue };
        let args = tool
            .iter()
            .find(|(k, _)| matches!(k.as_str(), "args" | "arguments" | "input_parameters"))
            .map(|(_, v)| v);
        if let (Some(args), Some(want)) = (args, &call.args) {
            if matches!(args, PyValue::Dict(_) | PyValue::List(_)) && args.to_json() == *want {
                call.ordered_args = Some(Arc::new(args.clone()));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::expect::parse;

    #[test]
    fn held_as_text_gives_the_calls_parsed_at_load() {
        let line = r#"{"id":"a","trace_id":"0123456789abcdef0123456789abcdef","expected_tools":[{"name":"w","args":{"z":1,"a":[2.5,"\u00e9"]}},"f"]}"#;
        let (cases, rejected) = parse(line, "f");
        assert!(rejected.is_empty());
        let held = &cases[0].expected;
        assert!(matches!(held.0, Repr::Text(_)), "{held:?}");
        let calls = held.calls();
        assert_eq!(calls.len(), 2);
        assert_eq!(
            calls[0].args,
            Some(serde_json::json!({"z": 1, "a": [2.5, "é"]}))
        );
        let ordered = calls[0].ordered_args.as_deref().and_then(PyValue::as_dict);
        let keys: Vec<&str> = ordered
            .unwrap_or_default()
            .iter()
            .map(|(k, _)| k.as_str())
            .collect();
        assert_eq!(keys, ["z", "a"], "key order as written");
        assert_eq!(calls[1].args, None);
        assert_eq!(held.clone().into_parsed(), *held);
    }

    #[test]
    fn lists_with_matchers_stay_parsed() {
        let line = r#"{"id":"a","trace_id":"0123456789abcdef0123456789abcdef","expected_tools":[{"name":"w","args":{"z":1,"q":{"$regex":"^x"}}}]}"#;
        let (cases, _) = parse(line, "f");
        assert!(matches!(cases[0].expected.0, Repr::Parsed(_)));
        let calls = cases[0].expected.calls();
        assert!(calls[0].matchers.is_some());
        let ordered = calls[0].ordered_args.as_deref().and_then(PyValue::as_dict);
        let keys: Vec<&str> = ordered
            .unwrap_or_default()
            .iter()
            .map(|(k, _)| k.as_str())
            .collect();
        assert_eq!(keys, ["z", "q"], "key order as written");
    }
}
