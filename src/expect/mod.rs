//! Expect: fixture cases (the tools a trace should call) and how they join
//! with traces.
//!
//! One case per JSONL line, or a JSON array of cases:
//! `{"id", "trace_id" | "match": {key: value} | "session_id" | "user_text",
//! "expected_tools": [...], "threshold"?, "metrics"?, budgets?}` with the
//! budgets `max_calls`, `max_calls_per_tool` ({tool: n}), `forbidden_tools`, `max_duration_ms`,
//! `max_tokens`; and for multi-agent traces `agents` ({name: {expected_tools,
//! threshold?}}) and `handoffs` (agent names in the order they should run). MLflow's spelling (`expected_tool_calls` with
//! `arguments`) is accepted too.
//!
//! A case targets a session (a conversation of several traces) with
//! `"session_id"`, or with a `match` whose only key is a session key
//! (`{"session.id": "..."}`); it then expects the calls of all the session's
//! traces, in time order.

use std::collections::HashMap;
use std::path::Path;

use serde::Deserialize;
use serde_json::Value;

use crate::assemble::session;
use crate::assemble::TraceId;
use crate::ingest::{Position, Rejected};
use crate::value::PyValue;

mod adk;
mod call;
mod deepeval;
mod default_case;
mod expected;
mod formats;
mod lines;
pub mod matchers;
mod mlflow;
mod ragas;
mod read;

pub use call::Call;
pub use default_case::parse_default;
pub use expected::ExpectedCalls;
pub use formats::ExpectFormat;

/// The largest fixture file read (one case is a few hundred bytes).
pub const MAX_FIXTURE_BYTES: u64 = 256 * 1024 * 1024;

/// How a case finds its trace(s).
#[derive(Debug, Clone, PartialEq)]
pub enum Join {
    TraceId(TraceId),
    /// Every key/value is present on the trace's resource or on any span.
    Match(Vec<(String, String)>),
    /// Every trace whose session attribute `key` (any session key when
    /// `None`) has the value `id`, taken together.
    Session {
        key: Option<String>,
        id: String,
    },
    /// The trace whose user request, normalized ([`normalize_text`]), equals
    /// this text: how expectations in other tools' formats, which carry no
    /// trace id, find their trace (docs/formats.md).
    UserText(String),
}

impl Join {
    /// How the case was joined, as reports say it (`joined_by`).
    pub fn label(&self) -> &'static str {
        match self {
            Join::TraceId(_) => "trace_id",
            Join::Match(_) => "match",
            Join::Session { .. } => "session",
            Join::UserText(_) => "user_text",
        }
    }

    /// What the case looks for, for a report on a case that found nothing:
    /// `trace_id 31d9...`, `match k=v, k2=v2`, `session id`, `user_text "..."`.
    pub fn describe(&self) -> String {
        match self {
            Join::TraceId(id) => format!("trace_id {id}"),
            Join::Match(kv) => {
                let pairs: Vec<String> = kv.iter().map(|(k, v)| format!("{k}={v}")).collect();
                format!("match {}", pairs.join(", "))
            }
            Join::Session { key: Some(k), id } => format!("session {k}={id}"),
            Join::Session { key: None, id } => format!("session {id} (any session key)"),
            Join::UserText(t) => format!("user_text {t:?}"),
        }
    }
}

/// A user text as joins compare it: whitespace runs collapsed to one space,
/// trimmed, lower-cased (agentevals' rule, docs/formats.md).
pub fn normalize_text(s: &str) -> String {
    s.split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .to_lowercase()
}

/// How fixtures are read.
#[derive(Debug, Clone)]
pub struct FixtureOptions {
    /// A `match` on exactly one of these keys targets a session.
    pub session_keys: Vec<String>,
}

impl Default for FixtureOptions {
    fn default() -> Self {
        FixtureOptions {
            session_keys: session::default_keys(),
        }
    }
}

/// One expectation.
///
/// Kept small: a big fixture holds hundreds of thousands (docs/formats.md,
/// fixture memory). What few cases set is boxed in [`CaseMore`].
#[derive(Debug, Clone, PartialEq)]
pub struct Case {
    pub id: String,
    pub join: Join,
    /// What the case expects called: parsed when a trace is scored against it
    /// ([`ExpectedCalls`]).
    pub expected: ExpectedCalls,
    pub threshold: Option<f64>,
    /// Whether the case states expected tools; a case of `agents` or
    /// `handoffs` alone does not, and is scored on those metrics alone.
    pub states_tools: bool,
    pub more: Option<Box<CaseMore>>,
}

/// The parts of a case that few cases set.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CaseMore {
    /// Metrics for this case instead of the run's `--metric` list.
    pub metrics: Option<Vec<String>>,
    /// Limits the `budget` metric checks.
    pub budgets: Budgets,
    /// What each agent of a multi-agent run should call (`agents` metric),
    /// by agent name.
    pub agents: Vec<AgentExpectation>,
    /// The order agents should run in (`handoffs` metric).
    pub handoffs: Option<Vec<String>>,
}

/// No budget set.
static NO_BUDGETS: Budgets = Budgets {
    max_calls: None,
    max_calls_per_tool: Vec::new(),
    forbidden_tools: Vec::new(),
    max_duration_ms: None,
    max_tokens: None,
};

impl Case {
    /// The case's own metrics list, if any.
    pub fn metrics(&self) -> Option<&[String]> {
        self.more.as_ref()?.metrics.as_deref()
    }

    pub fn budgets(&self) -> &Budgets {
        self.more.as_ref().map_or(&NO_BUDGETS, |m| &m.budgets)
    }

    pub fn agents(&self) -> &[AgentExpectation] {
        self.more.as_ref().map_or(&[], |m| &m.agents)
    }

    pub fn handoffs(&self) -> Option<&[String]> {
        self.more.as_ref()?.handoffs.as_deref()
    }
}

/// One agent's expected calls in a multi-agent trace.
#[derive(Debug, Clone, PartialEq)]
pub struct AgentExpectation {
    pub name: String,
    pub expected: Vec<Call>,
    pub threshold: Option<f64>,
}

/// A case's budgets: `max_calls`, `max_calls_per_tool`, `forbidden_tools`,
/// `max_duration_ms`, `max_tokens`. A case that sets any and has no
/// `metrics` of its own is scored with the run's metrics plus `budget`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Budgets {
    pub max_calls: Option<u64>,
    /// Tool name -> most calls allowed, by name.
    pub max_calls_per_tool: Vec<(String, u64)>,
    pub forbidden_tools: Vec<String>,
    pub max_duration_ms: Option<f64>,
    /// Input plus output tokens of the trace's LLM spans.
    pub max_tokens: Option<u64>,
}

impl Budgets {
    /// Whether any budget is set.
    pub fn is_set(&self) -> bool {
        *self != Budgets::default()
    }
}

#[derive(Debug, thiserror::Error)]
pub enum ExpectError {
    #[error("cannot read fixture file {path}")]
    Read {
        path: String,
        source: std::io::Error,
    },
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawCase {
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
struct RawAgent {
    expected_tools: Vec<RawTool>,
    threshold: Option<f64>,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum RawTool {
    Name(String),
    Call {
        name: String,
        #[serde(alias = "arguments", alias = "input_parameters")]
        args: Option<read::Flagged>,
    },
}

/// What a fixture file gave.
#[derive(Debug, Clone)]
pub struct Loaded {
    pub cases: Vec<Case>,
    pub rejected: Vec<Rejected>,
    /// Records skipped on purpose, with why (not input errors): an ADK eval
    /// case that is a `conversation_scenario`, say.
    pub notes: Vec<String>,
    /// The format found in the file.
    pub format: ExpectFormat,
}

impl Loaded {
    /// The metrics a file in this format is naturally scored with, when the
    /// user names none (Google ADK eval sets: the `adk.*` presets).
    pub fn default_metrics(&self) -> Option<&'static [&'static str]> {
        self.format.default_metrics()
    }
}

/// Loads a fixture file with `opts` (configured session keys). Bad cases
/// are rejected one by one with their line.
pub fn load_with(
    path: &Path,
    opts: &FixtureOptions,
) -> Result<(Vec<Case>, Vec<Rejected>), ExpectError> {
    let l = load_file(path, opts)?;
    Ok((l.cases, l.rejected))
}

/// [`load_with`], also saying which format the file was in.
pub fn load_file(path: &Path, opts: &FixtureOptions) -> Result<Loaded, ExpectError> {
    let err = |source| ExpectError::Read {
        path: path.display().to_string(),
        source,
    };
    if let Some(loaded) = lines::load(path, opts).map_err(err)? {
        return Ok(loaded);
    }
    let text = crate::ingest::files::read_text_capped(path, MAX_FIXTURE_BYTES).map_err(err)?;
    Ok(parse_file(&text, &path.display().to_string(), opts))
}

/// Parses fixture text in any accepted format, found from the content
/// (docs/formats.md, expectations in other tools' formats).
pub fn parse_file(text: &str, source: &str, opts: &FixtureOptions) -> Loaded {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    if let Some(reason) = formats::unknown(text) {
        return Loaded {
            cases: Vec::new(),
            rejected: vec![Rejected {
                source: source.to_string(),
                position: Position::Whole,
                reason,
                spans: 0,
            }],
            notes: Vec::new(),
            format: ExpectFormat::Toolscore,
        };
    }
    match formats::detect(text) {
        ExpectFormat::Toolscore => {
            let (cases, rejected) = parse_with(text, source, opts);
            Loaded {
                cases,
                rejected,
                notes: Vec::new(),
                format: ExpectFormat::Toolscore,
            }
        }
        format => {
            let (found, mut rejected, notes) = formats::parse(format, text, source);
            let (mut cases, at): (Vec<Case>, Vec<Position>) = found.into_iter().unzip();
            unique_ids(&mut cases, &at, source, &mut rejected);
            Loaded {
                cases,
                rejected,
                notes,
                format,
            }
        }
    }
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
struct Reading<'a> {
    cases: Vec<Case>,
    at: Vec<Position>,
    rejected: Vec<Rejected>,
    source: &'a str,
    opts: &'a FixtureOptions,
}

impl<'a> Reading<'a> {
    fn new(source: &'a str, opts: &'a FixtureOptions) -> Self {
        Reading {
            cases: Vec::new(),
            at: Vec::new(),
            rejected: Vec::new(),
            source,
            opts,
        }
    }

    fn keep(&mut self, case: Case, at: Position) {
        self.cases.push(case);
        self.at.push(at);
    }

    fn reject(&mut self, position: Position, reason: String) {
        self.rejected.push(Rejected {
            source: self.source.to_string(),
            position,
            reason,
            spans: 0,
        })
    }

    /// Line `n` of a JSON Lines fixture (blank lines and `//` comments are
    /// skipped).
    fn line(&mut self, n: usize, line: &str) {
        let line = line.trim();
        if line.is_empty() || line.starts_with("//") {
            return;
        }
        match case_of_record(line, n, self.opts) {
            Ok(c) => self.keep(c, Position::Line(n)),
            Err(e) => self.reject(Position::Line(n), e),
        }
    }

    fn finish(mut self) -> (Vec<Case>, Vec<Rejected>) {
        unique_ids(&mut self.cases, &self.at, self.source, &mut self.rejected);
        (self.cases, self.rejected)
    }
}

/// One record's case. Its calls are held as the text they were written in
/// when they can be ([`ExpectedCalls::as_written`]), else parsed with their
/// arguments in the order written.
fn case_of_record(text: &str, ordinal: usize, opts: &FixtureOptions) -> Result<Case, String> {
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
fn unique_ids(cases: &mut Vec<Case>, at: &[Position], source: &str, rejected: &mut Vec<Rejected>) {
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
fn calls_of(tools: Vec<RawTool>, list: &str) -> Result<Vec<Call>, String> {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_both_spellings_and_rejects_bad_lines() {
        let text = r#"{"id":"a","trace_id":"0123456789abcdef0123456789abcdef","expected_tools":["x",{"name":"y","args":{"q":1}}],"threshold":0.8}
{"id":"b","match":{"session.id":"s1","n":3},"expected_tool_calls":[{"name":"z","arguments":{}}]}
{"id":"c","expected_tools":[]}
not json
{"id":"d","trace_id":"abc","expected_tools":[]}
"#;
        let (cases, rejected) = parse(text, "f.jsonl");
        assert_eq!(cases.len(), 2);
        assert_eq!(
            cases[0].expected.calls()[1].args,
            Some(serde_json::json!({"q": 1}))
        );
        assert_eq!(
            cases[1].expected.calls()[0].args,
            Some(serde_json::json!({}))
        );
        assert_eq!(
            cases[1].join,
            Join::Match(vec![
                ("n".into(), "3".into()),
                ("session.id".into(), "s1".into())
            ])
        );
        let lines: Vec<_> = rejected.iter().map(|r| r.position.clone()).collect();
        assert_eq!(
            lines,
            vec![Position::Line(3), Position::Line(4), Position::Line(5)]
        );
    }

    #[test]
    fn session_cases() {
        let text = r#"{"id":"a","session_id":"s1","expected_tools":[]}
{"id":"b","match":{"session.id":"s1"},"expected_tools":[]}
{"id":"c","match":{"session.id":"s1","x":"y"},"expected_tools":[]}
{"id":"d","match":{"acme.thread":"t"},"expected_tools":[]}
{"id":"e","session_id":"s1","trace_id":"0123456789abcdef0123456789abcdef","expected_tools":[]}
"#;
        let (cases, rejected) = parse(text, "f");
        assert_eq!(rejected.len(), 1, "session_id with trace_id");
        assert_eq!(
            cases[0].join,
            Join::Session {
                key: None,
                id: "s1".into()
            }
        );
        assert_eq!(
            cases[1].join,
            Join::Session {
                key: Some("session.id".into()),
                id: "s1".into()
            }
        );
        assert!(matches!(cases[2].join, Join::Match(_)));
        assert!(matches!(cases[3].join, Join::Match(_)));
        let opts = FixtureOptions {
            session_keys: vec!["acme.thread".into()],
        };
        let (cases, _) = parse_with(text, "f", &opts);
        assert!(matches!(cases[1].join, Join::Match(_)));
        assert_eq!(
            cases[3].join,
            Join::Session {
                key: Some("acme.thread".into()),
                id: "t".into()
            }
        );
    }

    #[test]
    fn repeated_ids_are_rejected_and_a_bom_is_not_content() {
        let text = "\u{feff}{\"id\":\"a\",\"session_id\":\"s\",\"expected_tools\":[]}\n{\"id\":\"a\",\"session_id\":\"t\",\"expected_tools\":[]}\n";
        let (cases, rejected) = parse(text, "f");
        assert_eq!(cases.len(), 1);
        assert_eq!(
            cases[0].join,
            Join::Session {
                key: None,
                id: "s".into()
            }
        );
        assert_eq!(rejected.len(), 1);
        assert_eq!(rejected[0].position, Position::Line(2));
        assert!(
            rejected[0].reason.contains("repeats the case at line 1"),
            "{}",
            rejected[0].reason
        );
    }

    #[test]
    fn user_text_cases() {
        let text = r#"{"id":"a","user_text":"  Weather in\tPARIS? ","expected_tools":["w"]}
{"id":"b","user_text":"   ","expected_tools":[]}
{"id":"c","user_text":"x","session_id":"s","expected_tools":[]}
"#;
        let (cases, rejected) = parse(text, "f");
        assert_eq!(cases.len(), 1);
        assert_eq!(cases[0].join, Join::UserText("weather in paris?".into()));
        let lines: Vec<_> = rejected.iter().map(|r| r.position.clone()).collect();
        assert_eq!(lines, vec![Position::Line(2), Position::Line(3)]);
    }

    #[test]
    fn a_bad_case_in_a_list_is_rejected_alone_at_its_line() {
        let text = "[\n  {\"trace_id\": \"0123456789abcdef0123456789abcdef\", \"expected_tools\": []},\n\n  {\n    \"id\": \"b\", \"x\": 1, \"expected_tools\": []\n  },\n  {\"id\": \"c\", \"trace_id\": \"0123456789abcdef0123456789abcdef\", \"expected_tools\": [], \"threshold\": 2}\n]";
        let (cases, rejected) = parse(text, "f");
        assert_eq!(cases.len(), 1);
        let at: Vec<_> = rejected.iter().map(|r| r.position.clone()).collect();
        assert_eq!(at, [Position::Line(4), Position::Line(7)]);
        assert!(
            rejected[0].reason.starts_with("case #2 "),
            "{}",
            rejected[0].reason
        );
        assert!(
            rejected[1].reason.contains("threshold 2"),
            "{}",
            rejected[1].reason
        );
    }

    #[test]
    fn json_array_form() {
        let (cases, rejected) = parse(
            r#"[{"trace_id":"0123456789abcdef0123456789abcdef","expected_tools":[]}]"#,
            "f",
        );
        assert_eq!((cases.len(), rejected.len()), (1, 0));
        assert_eq!(cases[0].id, "case-1");
    }
}
