//! mlflow 3.17.2, `mlflow.genai.scorers.ToolCallCorrectness(should_exact_match=True)`
//! (`mlflow/genai/scorers/builtin_scorers.py`, `scorer_utils.py`,
//! `genai/utils/trace_utils.py`). Only the exact-match modes are deterministic;
//! the default (`should_exact_match=False`) asks an LLM judge.
//!
//! Kept on purpose:
//! * empty expectations raise `MlflowException`;
//! * one expected call without `arguments` switches argument checking off for
//!   every call;
//! * arguments compare as `json.dumps(sort_keys=True)` text, so `1 != 1.0`,
//!   `true != 1`, and absent arguments equal `{}`;
//! * the unordered mode compares *sets* after an equal-length check
//!   (`[a, a, b]` vs `[a, b, b]` passes);
//! * a called tool whose arguments hold `{"call": {"tool_name": X}}` is named X
//!   (trace extraction reads the name from the span inputs).
//!
//! The verdict is `yes`/`no`: score 1 or 0, `pass` = yes; no threshold.

use std::borrow::Cow;

use super::common::{dedup_by, py_args};
use crate::expect::Call;
use crate::score::{Metric, MetricOptions, Outcome, ScoreError};
use crate::value::{py_eq, py_json_dumps, py_repr, py_str, py_str_repr, DumpsOptions, PyValue};

pub const LIBRARY: &str = "mlflow";
pub const VERSION: &str = "3.17.2";

const NO_EXPECTATIONS: &str = "MlflowException: should_exact_match=True requires expectations \
     to be provided. Cannot perform exact matching without ground truth.";

/// (name, ordered, names only)
/// Every mode: (name, settings..., summary for `toolscore metrics`). This one
/// list is both the lookup table and the catalog.
const MODES: &[(&str, bool, bool, &str)] = &[
    (
        "mlflow.exact",
        false,
        false,
        "ToolCallCorrectness(should_exact_match=True): same count and same set of \
         name(sorted-key JSON args); yes=1/no=0; raises on empty expectations",
    ),
    (
        "mlflow.exact_ordered",
        true,
        false,
        "+ should_consider_ordering: same signature at every position",
    ),
    (
        "mlflow.exact_names",
        false,
        true,
        "mlflow.exact with name-only expectations (arguments ignored)",
    ),
    (
        "mlflow.exact_ordered_names",
        true,
        true,
        "mlflow.exact_ordered with name-only expectations",
    ),
];

/// (name, summary) of every mode.
pub(super) fn modes() -> impl Iterator<Item = (&'static str, &'static str)> {
    MODES.iter().map(|m| (m.0, m.3))
}

pub(super) fn build(
    name: &str,
    _opts: &MetricOptions,
) -> Option<Result<Box<dyn Metric>, ScoreError>> {
    let &(name, ordered, names_only, _) = MODES.iter().find(|m| m.0 == name)?;
    Some(Ok(Box::new(Mlflow {
        name,
        ordered,
        names_only,
    })))
}

struct Mlflow {
    name: &'static str,
    ordered: bool,
    /// The expectations carry names only (no `arguments`).
    names_only: bool,
}

/// An mlflow `FunctionCall`: the name (from the span inputs) may be None.
struct FnCall<'a> {
    name: Cow<'a, PyValue>,
    arguments: Option<Cow<'a, PyValue>>,
}

impl Metric for Mlflow {
    fn name(&self) -> &str {
        self.name
    }

    fn threshold(&self) -> Option<f64> {
        None
    }

    fn score(&self, called: &[Call], expected: &[Call]) -> Outcome {
        match self.evaluate(called, expected) {
            Ok((yes, reason)) => Outcome::scored(if yes { 1.0 } else { 0.0 }, Some(yes), reason),
            Err(err) => Outcome::error(err),
        }
    }
}

impl Mlflow {
    fn evaluate(&self, called: &[Call], expected: &[Call]) -> Result<(bool, String), String> {
        // Same order as the scorer: the trace's calls, then the expectations.
        let actual = called
            .iter()
            .map(from_span)
            .collect::<Result<Vec<_>, String>>()?;
        let expected = expected
            .iter()
            .map(|e| {
                let arguments = if self.names_only { None } else { py_args(e) };
                if let Some(a) = &arguments {
                    if a.as_dict().is_none() {
                        return Err(invalid_arguments(a));
                    }
                }
                Ok(FnCall {
                    name: Cow::Owned(PyValue::Str(e.name.clone())),
                    arguments,
                })
            })
            .collect::<Result<Vec<_>, String>>()?;
        // `parse_tool_call_expectations` returns None for an empty list.
        if expected.is_empty() {
            return Err(NO_EXPECTATIONS.to_string());
        }

        let include_arguments = expected.iter().all(|e| e.arguments.is_some());
        if actual.len() != expected.len() {
            let reason = format!(
                "Expected {} tool call(s), but got {} tool call(s).",
                expected.len(),
                actual.len()
            );
            return Ok((false, reason));
        }
        let sig = |c: &FnCall| signature(c, include_arguments, true);
        let actual_sigs = actual.iter().map(sig).collect::<Result<Vec<_>, _>>()?;
        let expected_sigs = expected.iter().map(sig).collect::<Result<Vec<_>, _>>()?;

        if self.ordered {
            // The message shows the arguments unsorted.
            let shown = |c: &FnCall| {
                signature(c, include_arguments, false).map_or_else(|e| e, |s| py_str(&s))
            };
            let diffs: Vec<String> = (0..actual.len())
                .filter(|&i| !py_eq(&actual_sigs[i], &expected_sigs[i]))
                .map(|i| {
                    let (e, a) = (shown(&expected[i]), shown(&actual[i]));
                    format!("Position {}: expected {e}, got {a}", i + 1)
                })
                .collect();
            if diffs.is_empty() {
                return Ok((
                    true,
                    "All tool calls match expected sequence exactly.".into(),
                ));
            }
            return Ok((
                false,
                format!("Tool calls do not match in order: {}", diffs.join("; ")),
            ));
        }

        let a = dedup_by(&actual_sigs, py_eq);
        let e = dedup_by(&expected_sigs, py_eq);
        let missing: Vec<&PyValue> = e
            .iter()
            .filter(|x| !a.iter().any(|y| py_eq(x, y)))
            .collect();
        let unexpected: Vec<&PyValue> = a
            .iter()
            .filter(|x| !e.iter().any(|y| py_eq(x, y)))
            .collect();
        if missing.is_empty() && unexpected.is_empty() {
            return Ok((
                true,
                "All expected tool calls present (order ignored).".into(),
            ));
        }
        let mut parts = Vec::new();
        if !missing.is_empty() {
            parts.push(format!("Missing: {}", set_repr(&missing)));
        }
        if !unexpected.is_empty() {
            parts.push(format!("Unexpected: {}", set_repr(&unexpected)));
        }
        Ok((false, parts.join("; ")))
    }
}

/// What `extract_tools_called_from_trace` makes of a TOOL span whose inputs
/// are the call's arguments: `name = inputs["call"]["tool_name"]` when
/// present, `arguments = inputs or None`. `FunctionCall` (pydantic) then
/// takes a `str | None` name and `str | dict | None` arguments.
fn from_span(c: &Call) -> Result<FnCall<'_>, String> {
    let inputs = py_args(c);
    let renamed = inputs
        .as_deref()
        .and_then(|i| i.get("call"))
        .and_then(|call| call.get("tool_name"))
        .cloned();
    let name = match renamed {
        Some(n @ (PyValue::Str(_) | PyValue::None)) => Cow::Owned(n),
        Some(other) => return Err(invalid_field("name", "a valid string", &other)),
        None => Cow::Owned(PyValue::Str(c.name.clone())),
    };
    let arguments = inputs.filter(|i| i.is_truthy());
    if let Some(a) = arguments.as_deref() {
        if !matches!(a, PyValue::Str(_) | PyValue::Dict(_)) {
            return Err(invalid_field("arguments", "a valid string or dict", a));
        }
    }
    Ok(FnCall { name, arguments })
}

fn invalid_field(field: &str, want: &str, got: &PyValue) -> String {
    format!(
        "ValidationError: FunctionCall.{field}: input should be {want}, \
         got {}",
        got.type_name()
    )
}

/// `get_tool_call_signature`: `name(json.dumps(args, sort_keys=True))`, or the
/// bare name when arguments are not compared.
fn signature(c: &FnCall, include_arguments: bool, sort_keys: bool) -> Result<PyValue, String> {
    if !include_arguments {
        return Ok(c.name.clone().into_owned());
    }
    let empty = PyValue::Dict(Vec::new());
    let args = match c.arguments.as_deref() {
        None => &empty,
        Some(a) if a.as_dict().is_some() => a,
        Some(a) => return Err(invalid_arguments(a)),
    };
    let opts = DumpsOptions {
        sort_keys,
        ..DumpsOptions::default()
    };
    Ok(PyValue::Str(format!(
        "{}({})",
        py_str(&c.name),
        py_json_dumps(args, opts)
    )))
}

fn invalid_arguments(a: &PyValue) -> String {
    format!(
        "MlflowException: Invalid arguments type: <class '{}'>. Arguments must be a dict.",
        a.type_name()
    )
}

/// Python `repr()` of a set of signatures.
fn set_repr(items: &[&PyValue]) -> String {
    let parts: Vec<String> = items
        .iter()
        .map(|v| match v {
            PyValue::Str(s) => py_str_repr(s),
            other => py_repr(other),
        })
        .collect();
    format!("{{{}}}", parts.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn metric(name: &str) -> Box<dyn Metric> {
        build(name, &MetricOptions::default())
            .and_then(Result::ok)
            .expect("preset")
    }
    fn n(name: &str) -> Call {
        Call::new(name, None)
    }
    fn a(name: &str, args: serde_json::Value) -> Call {
        Call::new(name, Some(args))
    }

    #[test]
    fn empty_expectations_raise() {
        let o = metric("mlflow.exact").score(&[n("a")], &[]);
        assert_eq!(o.error.as_deref(), Some(NO_EXPECTATIONS));
    }

    #[test]
    fn unordered_compares_sets_after_length() {
        let m = metric("mlflow.exact");
        assert_eq!(
            m.score(&[n("a"), n("a"), n("b")], &[n("a"), n("b"), n("b")])
                .score,
            Some(1.0)
        );
        assert_eq!(
            m.score(&[n("a"), n("b"), n("c")], &[n("a"), n("b")]).score,
            Some(0.0)
        );
    }

    #[test]
    fn arguments_compare_as_sorted_json_text() {
        let m = metric("mlflow.exact_ordered");
        assert_eq!(
            m.score(&[a("s", json!({"n": 1}))], &[a("s", json!({"n": 1.0}))])
                .score,
            Some(0.0)
        );
        assert_eq!(
            m.score(&[a("s", json!({"f": true}))], &[a("s", json!({"f": 1}))])
                .score,
            Some(0.0)
        );
        assert_eq!(
            m.score(
                &[a("s", json!({"a": 1, "b": {"d": 1, "c": 2}}))],
                &[a("s", json!({"b": {"c": 2, "d": 1}, "a": 1}))]
            )
            .score,
            Some(1.0)
        );
        assert_eq!(m.score(&[a("p", json!({}))], &[n("p")]).score, Some(1.0));
    }

    #[test]
    fn one_expectation_without_arguments_turns_argument_checks_off() {
        let m = metric("mlflow.exact");
        let called = [a("s", json!({"q": "y"})), a("f", json!({"x": 1}))];
        let expected = [a("s", json!({"q": "x"})), n("f")];
        assert_eq!(m.score(&called, &expected).score, Some(1.0));
    }

    #[test]
    fn tool_name_read_from_call_inputs() {
        let args = json!({"call": {"tool_name": "other"}});
        let o =
            metric("mlflow.exact_names").score(&[a("search", args.clone())], &[a("search", args)]);
        assert_eq!(o.score, Some(0.0));
    }
}
