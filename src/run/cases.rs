//! Tool-call cases scored without traces (`toolscore score --cases`): a
//! driver beside `replay`, for calls that come as data rather than traces.
//!
//! Input is the oracle's case format (see tests/data/oracle), one JSON object
//! per line: `{"id", "tools_called": [...], "expected_tools": [...]}` where a
//! tool is `{"name", "args"?}` or a bare name. DeepEval's `input_parameters`
//! (or `inputParameters`) is accepted for `args`. Absent (or null) arguments
//! stay distinct from `{}`. Output is one line per case:
//! `{"id", "results": {"<metric>": {"score", "pass", "reason", "error"}}}`.

use std::fmt;
use std::io::{self, BufRead, Write};
use std::sync::Arc;

use serde::ser::{Serialize, SerializeMap, Serializer};

use crate::evaluate::MetricSet;
use crate::expect::{matchers, Call};
use crate::score::Outcome;
use crate::value::PyValue;

/// One case: what was called and what was expected.
#[derive(Debug, Clone, PartialEq)]
pub struct CallCase {
    pub id: String,
    pub tools_called: Vec<Call>,
    pub expected_tools: Vec<Call>,
}

/// A line that could not be read as a case.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("line {line}: {message}")]
pub struct BadLine {
    /// 1-based line number.
    pub line: usize,
    pub message: String,
}

/// Parses one case line. The error says what is wrong, without the line number.
pub fn parse_case(text: &str) -> Result<CallCase, String> {
    // Parsed as Python would (key order, int vs float kept) for the presets.
    let value: PyValue = serde_json::from_str(text).map_err(|e| format!("invalid JSON: {e}"))?;
    let PyValue::Dict(_) = &value else {
        return Err(format!(
            "a case must be a JSON object, got {}",
            json_type(&value)
        ));
    };
    let id = match value.get("id") {
        Some(PyValue::Str(s)) => s.clone(),
        Some(PyValue::Int(i)) => i.to_string(),
        Some(other) => return Err(format!("`id` must be a string, got {}", json_type(other))),
        None => return Err("missing `id`".into()),
    };
    let tools = |field: &str| -> Result<Vec<Call>, String> {
        match value.get(field) {
            Some(PyValue::List(items)) => items
                .iter()
                .enumerate()
                .map(|(i, t)| {
                    parse_tool(t).map_err(|m| format!("case `{id}`: `{field}[{i}]`: {m}"))
                })
                .collect(),
            Some(other) => Err(format!(
                "case `{id}`: `{field}` must be a list, got {}",
                json_type(other)
            )),
            None => Err(format!("case `{id}`: missing `{field}`")),
        }
    };
    let tools_called = tools("tools_called")?;
    let mut expected_tools = tools("expected_tools")?;
    // Argument matchers, compiled as a fixture's are (docs/scoring.md).
    for (i, call) in expected_tools.iter_mut().enumerate() {
        if let Some(args) = call.args.as_ref().filter(|a| matchers::any(a)) {
            let pattern = matchers::compile(args, &format!("expected_tools[{i}].args"))
                .map_err(|m| format!("case `{id}`: {m}"))?;
            call.matchers = Some(Arc::new(pattern));
        }
    }
    Ok(CallCase {
        id,
        tools_called,
        expected_tools,
    })
}

fn parse_tool(v: &PyValue) -> Result<Call, String> {
    let entries = match v {
        PyValue::Str(name) => return Ok(Call::new(name.clone(), None)),
        PyValue::Dict(entries) => entries,
        other => {
            return Err(format!(
                "a tool must be a name or an object with `name`, got {}",
                json_type(other)
            ))
        }
    };
    let name = match v.get("name") {
        Some(PyValue::Str(s)) => s.clone(),
        Some(other) => return Err(format!("`name` must be a string, got {}", json_type(other))),
        None => return Err("missing `name`".into()),
    };
    let mut args: Option<(&str, &PyValue)> = None;
    for (key, value) in entries {
        if matches!(
            key.as_str(),
            "args" | "input_parameters" | "inputParameters"
        ) {
            if let Some((first, _)) = args {
                return Err(format!("both `{first}` and `{key}` given; use one"));
            }
            args = Some((key, value));
        }
    }
    Ok(match args {
        None | Some((_, PyValue::None)) => Call::new(name, None),
        Some((_, value)) => Call::with_ordered_args(name, value.clone()),
    })
}

fn json_type(v: &PyValue) -> &'static str {
    match v {
        PyValue::None => "null",
        PyValue::Bool(_) => "a boolean",
        PyValue::Int(_) | PyValue::Float(_) => "a number",
        PyValue::Str(_) => "a string",
        PyValue::List(_) => "a list",
        PyValue::Dict(_) => "an object",
    }
}

/// The scores of one case, serialized in the oracle's shape.
#[derive(Debug, Clone, PartialEq)]
pub struct CaseResult {
    pub id: String,
    /// (metric label, outcome), in the order the metrics were given.
    pub results: Vec<(String, Outcome)>,
}

impl Serialize for CaseResult {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        struct Results<'a>(&'a [(String, Outcome)]);
        impl Serialize for Results<'_> {
            fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                let mut map = s.serialize_map(Some(self.0.len()))?;
                for (name, outcome) in self.0 {
                    map.serialize_entry(name, outcome)?;
                }
                map.end()
            }
        }
        let mut map = s.serialize_map(Some(2))?;
        map.serialize_entry("id", &self.id)?;
        map.serialize_entry("results", &Results(&self.results))?;
        map.end()
    }
}

/// Scores one case with every metric.
pub fn score_case(case: &CallCase, metrics: &MetricSet) -> CaseResult {
    let results = metrics
        .score(&case.tools_called, &case.expected_tools)
        .into_iter()
        .map(|r| (r.metric, r.outcome))
        .collect();
    CaseResult {
        id: case.id.clone(),
        results,
    }
}

/// What [`score_lines`] did.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Summary {
    pub scored: usize,
    pub rejected: Vec<BadLine>,
    /// Cases scored whose expected calls hold an argument matcher.
    pub with_matchers: usize,
}

impl fmt::Display for Summary {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        write!(
            f,
            "{} case(s) scored, {} line(s) rejected",
            self.scored,
            self.rejected.len()
        )
    }
}

/// Reads cases line by line from `input`, writes one JSON line per case to
/// `out`. A bad line is passed to `on_bad` and skipped; the others go on.
/// Blank lines are ignored. Only I/O errors stop the run.
pub fn score_lines<R: BufRead, W: Write>(
    mut input: R,
    metrics: &MetricSet,
    out: &mut W,
    mut on_bad: impl FnMut(&BadLine),
) -> io::Result<Summary> {
    let mut summary = Summary::default();
    let mut buf = Vec::new();
    let mut line = 0usize;
    loop {
        buf.clear();
        if input.read_until(b'\n', &mut buf)? == 0 {
            break;
        }
        line += 1;
        let parsed = match std::str::from_utf8(&buf) {
            Ok(text) => {
                let text = text.trim_start_matches('\u{feff}').trim();
                if text.is_empty() {
                    continue;
                }
                parse_case(text)
            }
            Err(e) => Err(format!("not UTF-8: {e}")),
        };
        match parsed {
            Ok(case) => {
                let result = score_case(&case, metrics);
                summary.with_matchers +=
                    usize::from(case.expected_tools.iter().any(|c| c.matchers.is_some()));
                serde_json::to_writer(&mut *out, &result)?;
                out.write_all(b"\n")?;
                summary.scored += 1;
            }
            Err(message) => {
                let bad = BadLine { line, message };
                on_bad(&bad);
                summary.rejected.push(bad);
            }
        }
    }
    Ok(summary)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn parses_oracle_and_deepeval_shapes() {
        let c = parse_case(
            r#"{"id": "x", "note": "n", "tools_called": ["a", {"name": "b", "input_parameters": {"z": 1, "a": 2}}],
                "expected_tools": [{"name": "a", "args": null}, {"name": "b", "args": {}}]}"#,
        )
        .expect("case");
        assert_eq!(c.id, "x");
        assert_eq!(c.tools_called[0], Call::new("a", None));
        assert_eq!(c.tools_called[1].args, Some(json!({"z": 1, "a": 2})));
        // Key order as written is kept for the Python-based presets.
        let ordered = c.tools_called[1].ordered_args.as_deref().expect("ordered");
        assert_eq!(crate::value::py_repr(ordered), "{'z': 1, 'a': 2}");
        assert_eq!(c.expected_tools[0].args, None);
        assert_eq!(c.expected_tools[1].args, Some(json!({})));
    }

    #[test]
    fn errors_name_the_problem() {
        let err = |s: &str| parse_case(s).expect_err("should fail");
        assert!(err("[1]").contains("JSON object"));
        assert!(err(r#"{"tools_called": [], "expected_tools": []}"#).contains("missing `id`"));
        assert!(err(r#"{"id": "c", "tools_called": []}"#).contains("missing `expected_tools`"));
        assert!(
            err(r#"{"id": "c", "tools_called": [{"args": {}}], "expected_tools": []}"#)
                .contains("`tools_called[0]`: missing `name`")
        );
        assert!(err(r#"{"id": "c", "tools_called": [{"name": "a", "args": {}, "input_parameters": {}}], "expected_tools": []}"#)
            .contains("both"));
        assert!(err("{oops").starts_with("invalid JSON"));
    }

    #[test]
    fn bad_lines_are_reported_and_skipped() {
        let metrics = MetricSet::build(
            &crate::evaluate::MetricSpec::parse_list(&["eval_lib.default"]).expect("spec"),
            &crate::score::MetricOptions::default(),
            &crate::score::native::NativeConfig::default(),
            None,
        )
        .expect("metrics");
        let input =
            "{\"id\": \"a\", \"tools_called\": [\"x\"], \"expected_tools\": [\"x\"]}\n\nnot json\n\
                     {\"id\": \"b\", \"tools_called\": [], \"expected_tools\": [\"x\"]}\n";
        let mut out = Vec::new();
        let mut seen = Vec::new();
        let summary =
            score_lines(input.as_bytes(), &metrics, &mut out, |b| seen.push(b.line)).expect("io");
        assert_eq!(summary.scored, 2);
        assert_eq!(seen, vec![3]);
        let lines: Vec<serde_json::Value> = String::from_utf8(out)
            .expect("utf8")
            .lines()
            .map(|l| serde_json::from_str(l).expect("json"))
            .collect();
        assert_eq!(lines[0]["results"]["eval_lib.default"]["score"], json!(1.0));
        assert_eq!(lines[1]["id"], json!("b"));
        assert_eq!(
            lines[1]["results"]["eval_lib.default"]["pass"],
            json!(false)
        );
        assert_eq!(
            lines[1]["results"]["eval_lib.default"]["error"],
            json!(null)
        );
    }
}
