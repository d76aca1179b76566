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
//!
//! This file holds the model (cases, joins, budgets, the loaded fixture);
//! `native.rs` reads our own format, `formats.rs` and one file per format
//! the other tools'.

use std::path::Path;

use crate::assemble::session;
use crate::assemble::TraceId;
use crate::ingest::{Position, Rejected};

mod adk;
mod call;
mod deepeval;
mod default_case;
mod expected;
mod formats;
mod lines;
pub mod matchers;
mod mlflow;
mod native;
mod ragas;
mod read;

pub use call::Call;
pub use default_case::parse_default;
pub use expected::ExpectedCalls;
pub use formats::ExpectFormat;
use native::{calls_of, unique_ids, RawTool, Reading};
pub use native::{parse, parse_with};

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
