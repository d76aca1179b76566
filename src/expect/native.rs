//! Our own fixture format (docs/fixtures.md): JSON Lines or a JSON array of
//! cases, read one case at a time so a bad case is rejected alone with its
//! line. The model the cases are read into is `expect/mod.rs`'s; other
//! tools' formats are read by `formats.rs` and one file per format.

use std::collections::HashMap;

use serde::Deserialize;
use serde_json::Value;

use super::*;
use crate::ingest::{Position, Rejected};
use crate::value::PyValue;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawCase {
    id: Option<Value>,
    trace_id: Option<String>,
    #[serde(rename = "match")]
    match_: Option<serde_json::Map<String, Value>>,
    session_id: Option<Value>,
    /// Joins the trace whose user request has this text (normalized), as
    /// other tools' formats join.
    user_text: Option<String>,
    expected_tools: Option<Vec<RawTool>>,
    expected_tool_calls: Option<Vec<RawTool>>,
    threshold: Option<f64>,
    metrics: Option<Vec<String>>,
    max_calls: Option<u64>,
    max_calls_per_tool: Option<serde_json::Map<String, Value>>,
    forbidden_tools: Option<Vec<String>>,
    max_duration_ms: Option<f64>,
    max_tokens: Option<u64>,
    agents: Option<std::collections::BTreeMap<String, RawAgent>>,
    handoffs: Option<Vec<String>>,
    /// Free text, ignored.
    #[serde(alias = "note", alias = "description")]
    #[allow(dead_code)]
    notes: Option<Value>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawAgent {
    expected_tools: Vec<RawTool>,
    threshold: Option<f64>,
}

#[derive(Deserialize)]
#[serde(untagged)]
pub(super) enum RawTool {
    Name(String),
    Call {
        name: String,
        #[serde(alias = "arguments", alias = "input_parameters")]
        args: Option<read::Flagged>,
    },
}

/// Parses fixture text (JSONL or a JSON array).
pub fn parse(text: &str, source: &str) -> (Vec<Case>, Vec<Rejected>) {
    parse_with(text, source, &FixtureOptions::default())
}

/// [`parse`] with options (configured session keys): toolscore's own format
/// only (see [`parse_file`] for the others).
pub fn parse_with(text: &str, source: &str, opts: &FixtureOptions) -> (Vec<Case>, Vec<Rejected>) {
    // A UTF-8 byte order mark (Windows editors write one) is not content.
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut r = Reading::new(source, opts);
    if text.trim_start().starts_with('[') {
        // Each case's own text: one bad case is rejected alone, and no
        // tree of the whole array is built.
        match serde_json::from_str::<Vec<&serde_json::value::RawValue>>(text) {
            Ok(items) => {
                r.cases.reserve(items.len());
                // The line each case starts on, counted as the cases go.
                let (mut line, mut counted) = (1, 0);
                for (i, item) in items.into_iter().enumerate() {
                    let start = (item.get().as_ptr() as usize)
                        .saturating_sub(text.as_ptr() as usize)
                        .min(text.len());
                    line += memchr::memchr_iter(b'\n', &text.as_bytes()[counted..start]).count();
                    counted = start.max(counted);
                    match case_of_record(item.get(), i + 1, opts) {
                        Ok(c) => r.keep(c, Position::Record(i + 1)),
                        // The case's own position in a message counts
                        // within the case: its first line is named.
                        Err(e) => r.reject(
                            Position::Line(line),
                            format!("case #{} (starting on this line): {e}", i + 1),
                        ),
                    }
                }
            }
            Err(e) => r.reject(
                Position::Line(e.line()),
                format!("not a JSON array of cases: {e}"),
            ),
        }
    } else if let Some(docs) = read::documents(text) {
        for (line, doc) in docs {
            match case_of_record(doc, line, opts) {
                Ok(c) => r.keep(c, Position::Line(line)),
                Err(e) => r.reject(Position::Line(line), e),
            }
        }
    } else {
        // One case a line, about: a big fixture's cases are not moved
        // as the list grows.
        r.cases
            .reserve(memchr::memchr_iter(b'\n', text.as_bytes()).count() + 1);
        for (i, line) in text.lines().enumerate() {
            r.line(i + 1, line);
        }
    }
    r.finish()
}

/// Cases as they are read: each with where it was written (apart, so the
/// cases stay one list, never copied), and the records rejected.
pub(super) struct Reading<'a> {
    pub(super) cases: Vec<Case>,
    at: Vec<Position>,
    rejected: Vec<Rejected>,
    source: &'a str,
    opts: &'a FixtureOptions,
}

impl<'a> Reading<'a> {
    pub(super) fn new(source: &'a str, opts: &'a FixtureOptions) -> Self {
        Reading {
            cases: Vec::new(),
            at: Vec::new(),
            rejected: Vec::new(),
            source,
            opts,
        }
    }

    pub(super) fn keep(&mut self, case: Case, at: Position) {
        self.cases.push(case);
        self.at.push(at);
    }

    pub(super) fn reject(&mut self, position: Position, reason: String) {
        self.rejected.push(Rejected {
            source: self.source.to_string(),
            position,
            reason,
            spans: 0,
        })
    }

    /// Line `n` of a JSON Lines fixture (blank lines and `//` comments are
    /// skipped).
    pub(super) fn line(&mut self, n: usize, line: &str) {
        let line = line.trim();
        if line.is_empty() || line.starts_with("//") {
            return;
        }
        match case_of_record(line, n, self.opts) {
            Ok(c) => self.keep(c, Position::Line(n)),
            Err(e) => self.reject(Position::Line(n), e),
        }
    }

    pub(super) fn finish(mut self) -> (Vec<Case>, Vec<Rejected>) {
        unique_ids(&mut self.cases, &self.at, self.source, &mut self.rejected);
        (self.cases, self.rejected)
    }
}

/// One record's case. Its calls are held as the text they were written in
/// when they can be ([`ExpectedCalls::as_written`]), else parsed with their
/// arguments in the order written.
pub(super) fn case_of_record(
    text: &str,
    ordinal: usize,
    opts: &FixtureOptions,
) -> Result<Case, String> {
    let mut case = case_from(read::record(text)?, ordinal, opts)?;
    // A statement of its own: the calls' shared copy is dropped before
    // `keep_key_order` changes them in place.
    let held = ExpectedCalls::as_written(text, &case.expected.calls());
    match held {
        Some(held) => case.expected = held,
        None => keep_key_order(&mut case, PyValue::parse(text).ok().as_ref()),
    }
    Ok(case)
}

/// Ids must be unique: reports, JUnit and baselines key on them. A repeat is
/// rejected (the first is kept), never silently renamed. `at[i]` is where
/// `cases[i]` was written.
pub(super) fn unique_ids(
    cases: &mut Vec<Case>,
    at: &[Position],
    source: &str,
    rejected: &mut Vec<Rejected>,
) {
    let mut first: HashMap<&str, usize> = HashMap::with_capacity(cases.len());
    let mut repeats = Vec::new();
    for (i, c) in cases.iter().enumerate() {
        match first.get(c.id.as_str()) {
            Some(&f) => {
                let first = match &at[f] {
                    Position::Line(n) => format!("line {n}"),
                    Position::Record(n) => format!("case #{n}"),
                    other => format!("{other}"),
                };
                rejected.push(Rejected {
                    source: source.to_string(),
                    position: at[i].clone(),
                    reason: format!(
                        "case id `{}` repeats the case at {first}; ids must be unique",
                        c.id
                    ),
                    spans: 0,
                });
                repeats.push(i);
            }
            None => {
                first.insert(&c.id, i);
            }
        }
    }
    drop(first);
    if !repeats.is_empty() {
        let mut i = 0;
        let mut next = repeats.iter().peekable();
        cases.retain(|_| {
            let repeat = next.next_if_eq(&&i).is_some();
            i += 1;
            !repeat
        });
    }
}

/// Gives the expected calls of `case` their arguments in the order written
/// (`ordered`: the same case parsed with key order kept).
fn keep_key_order(case: &mut Case, ordered: Option<&PyValue>) {
    let Some(PyValue::Dict(fields)) = ordered else {
        return;
    };
    let Some(PyValue::List(tools)) = fields
        .iter()
        .find(|(k, _)| k == "expected_tools" || k == "expected_tool_calls")
        .map(|(_, v)| v)
    else {
        return;
    };
    if let Some(calls) = case.expected.calls_mut() {
        expected::order_args(calls, tools);
    }
}

fn scalar_text(what: &str, v: Value) -> Result<String, String> {
    match v {
        Value::String(s) => Ok(s),
        Value::Number(n) => Ok(n.to_string()),
        Value::Bool(b) => Ok(b.to_string()),
        other => Err(format!(
            "`{what}` must be a string, number or bool, not {other}"
        )),
    }
}

/// A 64-bit trace id (16 hex digits, as Jaeger and Zipkin may write it) as
/// the 128-bit id the trace converters give it: 16 leading zeros.
fn padded_trace_id(t: &str) -> std::borrow::Cow<'_, str> {
    if t.len() == 16 && t.bytes().all(|b| b.is_ascii_hexdigit()) {
        format!("{:0>32}", t).into()
    } else {
        t.into()
    }
}

/// The case's expected tools (`expected_tools` or `expected_tool_calls`);
/// none for a case about agents or handoffs alone, which is then scored on
/// those metrics unless it names its own.
fn expected_tools(raw: &mut RawCase) -> Result<Option<Vec<RawTool>>, String> {
    match (raw.expected_tools.take(), raw.expected_tool_calls.take()) {
        (Some(_), Some(_)) => {
            Err("give `expected_tools` or `expected_tool_calls`, not both".into())
        }
        (Some(t), None) | (None, Some(t)) => Ok(Some(t)),
        // A case about agents or handoffs alone.
        (None, None) if raw.agents.is_some() || raw.handoffs.is_some() => Ok(None),
        (None, None) => Err(
            "a case needs `expected_tools` (a list, may be empty), `agents` or `handoffs`".into(),
        ),
    }
}

fn case_from(v: Value, ordinal: usize, opts: &FixtureOptions) -> Result<Case, String> {
    let mut raw: RawCase = serde_json::from_value(v).map_err(|e| format!("bad case: {e}"))?;
    let given = usize::from(raw.trace_id.is_some())
        + usize::from(raw.match_.is_some())
        + usize::from(raw.session_id.is_some())
        + usize::from(raw.user_text.is_some());
    if given > 1 {
        return Err("give one of `trace_id`, `match`, `session_id` and `user_text`".into());
    }
    let join = match (
        raw.trace_id.take(),
        raw.match_.take(),
        raw.session_id.take(),
        raw.user_text.take(),
    ) {
        (Some(t), _, _, _) => Join::TraceId(padded_trace_id(&t).parse()?),
        (_, _, Some(id), _) => Join::Session {
            key: None,
            id: scalar_text("session_id", id)?,
        },
        (_, _, _, Some(text)) => read::user_text_join(&text, "user_text")?,
        (_, Some(m), _, _) if !m.is_empty() => {
            let mut pairs = Vec::with_capacity(m.len());
            for (k, v) in m {
                let text = scalar_text(&format!("match.{k}"), v)?;
                pairs.push((k, text));
            }
            match pairs.pop() {
                Some((k, id)) if pairs.is_empty() && opts.session_keys.contains(&k) => {
                    Join::Session { key: Some(k), id }
                }
                Some(last) => {
                    pairs.push(last);
                    Join::Match(pairs)
                }
                None => Join::Match(pairs),
            }
        }
        _ => return Err(
            "a case needs `trace_id` (32 hex digits), a non-empty `match` object, `session_id` \
             or `user_text`"
                .into(),
        ),
    };
    let list = if raw.expected_tool_calls.is_some() {
        "expected_tool_calls"
    } else {
        "expected_tools"
    };
    let tools = expected_tools(&mut raw)?;
    let states_tools = tools.is_some();
    let expected = calls_of(tools.unwrap_or_default(), list)?;
    let mut agents = Vec::new();
    for (name, a) in raw.agents.unwrap_or_default() {
        if let Some(t) = a.threshold.filter(|t| !(0.0..=1.0).contains(t)) {
            return Err(format!("agents.{name}.threshold {t} is outside 0..=1"));
        }
        let expected = calls_of(a.expected_tools, &format!("agents.{name}.expected_tools"))?;
        agents.push(AgentExpectation {
            name,
            expected,
            threshold: a.threshold,
        });
    }
    if let Some(t) = raw.threshold {
        if !(0.0..=1.0).contains(&t) {
            return Err(format!("threshold {t} is outside 0..=1"));
        }
    }
    let id = match raw.id {
        Some(Value::String(s)) => s,
        Some(Value::Number(n)) => n.to_string(),
        None => {
            // Sized to its text: a big fixture holds many.
            let mut id = format!("case-{ordinal}");
            id.shrink_to_fit();
            id
        }
        Some(other) => return Err(format!("`id` must be a string, not {other}")),
    };
    let mut per_tool = Vec::new();
    for (name, v) in raw.max_calls_per_tool.unwrap_or_default() {
        match v.as_u64() {
            Some(n) => per_tool.push((name, n)),
            None => {
                return Err(format!(
                    "`max_calls_per_tool.{name}` must be a non-negative integer, not {v}"
                ))
            }
        }
    }
    if let Some(ms) = raw.max_duration_ms {
        if !ms.is_finite() || ms < 0.0 {
            return Err(format!(
                "`max_duration_ms` {ms} must be a non-negative number"
            ));
        }
    }
    let budgets = Budgets {
        max_calls: raw.max_calls,
        max_calls_per_tool: per_tool,
        forbidden_tools: raw.forbidden_tools.unwrap_or_default(),
        max_duration_ms: raw.max_duration_ms,
        max_tokens: raw.max_tokens,
    };
    let more = CaseMore {
        metrics: raw.metrics,
        budgets,
        agents,
        handoffs: raw.handoffs,
    };
    Ok(Case {
        id,
        join,
        expected: expected.into(),
        threshold: raw.threshold,
        states_tools,
        more: (more != CaseMore::default()).then(|| Box::new(more)),
    })
}

/// The calls of the list `list`; a bad argument matcher is an error naming
/// its key path (`args` stands for any spelling of the arguments key).
pub(super) fn calls_of(tools: Vec<RawTool>, list: &str) -> Result<Vec<Call>, String> {
    tools
        .into_iter()
        .enumerate()
        .map(|(i, t)| match t {
            RawTool::Name(name) => Ok(Call::new(name, None)),
            // No key starting with `$`: no matcher to look for.
            RawTool::Call { name, args } if !args.as_ref().is_some_and(|a| a.dollar) => {
                Ok(Call::new(name, args.map(|a| a.value)))
            }
            RawTool::Call { name, args } => {
                Call::expected(name, args.map(|a| a.value), || format!("{list}[{i}].args"))
            }
        })
        .collect()
}
