//! A report rebuilt from the JSONL rows a run saved, so that `runs show`
//! writes JUnit and HTML with the same writers as `replay`. The rows keep
//! what those formats show, with two gaps a saved run cannot fill: span
//! timelines and call durations (the rows keep a call's start, not its end).

use std::collections::HashMap;
use std::sync::Arc;

use serde_json::Value;

use super::{Report, Stats, TokenStats, ToolStats};
use crate::evaluate::{
    Evaluation, MetricResult, SavedCase, SessionRef, TrialsPass, UnmatchedCase, UnmatchedTrace,
};
use crate::expect::Call;
use crate::extract::{AgentRef, CallArgs, CallResult, CallStatus, ToolCall};
use crate::ingest::{Position, Rejected};
use crate::score::{Outcome, Unjudged};

/// A saved row that is not what the report writes.
#[derive(Debug, thiserror::Error)]
#[error("{name}, report line {line}: {reason}")]
pub struct StoredRowError {
    pub name: String,
    pub line: usize,
    pub reason: String,
}

/// The keys `evaluation_row` writes itself; any other top-level key of an
/// evaluation row is a component of its headline metric (`details`).
const EVALUATION_KEYS: &[&str] = &[
    "type",
    "trace_id",
    "case",
    "joined_by",
    "pass",
    "unjudged",
    "session",
    "metric",
    "score",
    "threshold",
    "explanation",
    "error",
    "warnings",
    "expected_tools",
    "metrics",
    "tools_called",
];

/// The report whose JSONL is `jsonl` (named `name` in errors); `metrics` is
/// the run's `--metric` order, which the rows do not keep.
pub fn report_of_rows(
    jsonl: &[u8],
    metrics: &[String],
    name: &str,
) -> Result<Report, StoredRowError> {
    let mut report = Report {
        metrics: metrics.to_vec(),
        has_cases: true,
        ..Report::default()
    };
    let mut case_index: HashMap<String, usize> = HashMap::new();
    for (i, line) in jsonl.split(|b| *b == b'\n').enumerate() {
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        let err = |reason: String| StoredRowError {
            name: name.to_string(),
            line: i + 1,
            reason,
        };
        let row: Value = serde_json::from_slice(line).map_err(|e| err(format!("not JSON: {e}")))?;
        match text(&row, "type") {
            "evaluation" => {
                let next = case_index.len();
                let index = *case_index
                    .entry(text(&row, "case").to_string())
                    .or_insert(next);
                report
                    .evaluations
                    .push(evaluation(&row, index, metrics).map_err(err)?);
            }
            "case" => {
                if let Ok(rule) = text(&row, "trials_pass").parse::<TrialsPass>() {
                    report.trials_pass = rule;
                }
            }
            "unmatched_trace" => report.unmatched_traces.push(UnmatchedTrace {
                trace_id: parse(&row, "trace_id").map_err(err)?,
                spans: count(&row, "spans"),
                tools_called: calls(&row).map_err(err)?,
                warnings: strings(&row, "warnings"),
            }),
            "unmatched_case" => report.unmatched_cases.push(UnmatchedCase::saved(SavedCase {
                id: text(&row, "case").to_string(),
                joined_by: join_label(text(&row, "joined_by")),
                looked_for: text(&row, "looked_for").to_string(),
                expected: expected(&row),
            })),
            "rejected" => report.rejected.push(Rejected {
                source: text(&row, "source").to_string(),
                position: position(text(&row, "position")),
                reason: text(&row, "reason").to_string(),
                spans: 0,
            }),
            "summary" => summary(&row, &mut report).map_err(err)?,
            other => return Err(err(format!("unknown row type `{other}`"))),
        }
    }
    Ok(report)
}

fn text<'a>(row: &'a Value, key: &str) -> &'a str {
    row.get(key).and_then(Value::as_str).unwrap_or_default()
}

fn count(row: &Value, key: &str) -> usize {
    row.get(key)
        .and_then(Value::as_u64)
        .map_or(0, |n| usize::try_from(n).unwrap_or(usize::MAX))
}

fn strings(row: &Value, key: &str) -> Arc<[String]> {
    row.get(key)
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(|w| w.as_str().map(String::from))
                .collect()
        })
        .unwrap_or_default()
}

fn parse<T: std::str::FromStr>(row: &Value, key: &str) -> Result<T, String> {
    let s = text(row, key);
    s.parse()
        .map_err(|_| format!("`{key}` is not an id: `{s}`"))
}

/// The labels `expect::Join::label` gives (and `default`).
fn join_label(s: &str) -> &'static str {
    match s {
        "trace_id" => "trace_id",
        "session" => "session",
        "user_text" => "user_text",
        "default" => "default",
        _ => "match",
    }
}

/// `rejected_row`'s position back: `12` a line, `at byte 7`, `record 3`.
fn position(s: &str) -> Position {
    let number = |p: &str| s.strip_prefix(p).and_then(|n| n.trim().parse().ok());
    if let Ok(n) = s.parse() {
        Position::Line(n)
    } else if let Some(n) = number("at byte") {
        Position::Byte(n)
    } else if let Some(n) = number("record") {
        Position::Record(n)
    } else {
        Position::Whole
    }
}

fn expected(row: &Value) -> Arc<[Call]> {
    row.get("expected_tools")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .map(|c| Call::new(text(c, "name"), c.get("args").cloned()))
                .collect()
        })
        .unwrap_or_default()
}

/// A row's `tools_called`, as `report::write_call` wrote them.
fn calls(row: &Value) -> Result<Arc<[ToolCall]>, String> {
    let Some(list) = row.get("tools_called").and_then(Value::as_array) else {
        return Ok(Arc::new([]));
    };
    list.iter().map(call).collect()
}

fn call(c: &Value) -> Result<ToolCall, String> {
    let start = c
        .get("start_time_unix_nano")
        .and_then(Value::as_u64)
        .unwrap_or(0);
    Ok(ToolCall {
        name: text(c, "name").to_string(),
        args: c
            .get("args")
            .cloned()
            .map_or(CallArgs::None, CallArgs::Value),
        result: c.get("result").cloned().map(CallResult::Value),
        status: if text(c, "status") == "error" {
            CallStatus::Error
        } else {
            CallStatus::Ok
        },
        error_message: c
            .get("error_message")
            .and_then(Value::as_str)
            .map(String::from),
        error_type: c
            .get("error_type")
            .and_then(Value::as_str)
            .map(String::from),
        span_id: parse(c, "span_id")?,
        start_time_unix_nano: start,
        depth: count(c, "depth"),
        agent: match c.get("agent") {
            Some(a) => Some(AgentRef {
                span_id: parse(a, "span_id")?,
                name: text(a, "name").to_string(),
            }),
            None => None,
        },
        retriever: c.get("retriever").and_then(Value::as_bool) == Some(true),
        convention: text(c, "convention").to_string(),
        from: match text(c, "from") {
            "conversation" => Some(crate::extract::conversation::FROM_CONVERSATION),
            "provider" => Some(crate::extract::conversation::provider::FROM_PROVIDER),
            _ => None,
        },
        span_name: c.get("span_name").and_then(Value::as_str).map(String::from),
        mcp_server: c
            .get("mcp_server")
            .and_then(Value::as_str)
            .map(String::from),
        within: None,
        // Not saved: a saved call has no duration.
        end_time_unix_nano: start,
        call_id: None,
    })
}

/// A metric's result from its entry under `metrics` (as `outcome_json`
/// wrote it); `details` are the headline's components.
fn metric_result(name: &str, m: &Value, details: Option<Value>) -> MetricResult {
    let unjudged = match text(m, "unjudged") {
        "judge_error" => Some(Unjudged::JudgeError),
        "not_judged" => Some(Unjudged::NotJudged),
        _ => None,
    };
    let mut details = details;
    if let Some(j) = m.get("judge") {
        let d = details.get_or_insert_with(|| Value::Object(Default::default()));
        d["judge"] = j.clone();
    }
    MetricResult {
        metric: name.to_string(),
        threshold: m.get("threshold").and_then(Value::as_f64),
        outcome: Outcome {
            score: m.get("score").and_then(Value::as_f64),
            // What the row says passed is the verdict, which this gives back.
            pass: m.get("pass").and_then(Value::as_bool),
            reason: text(m, "reason").to_string(),
            error: m.get("error").and_then(Value::as_str).map(String::from),
            details,
            unjudged,
        },
    }
}

fn evaluation(row: &Value, case_index: usize, order: &[String]) -> Result<Evaluation, String> {
    let headline = text(row, "metric");
    let components: serde_json::Map<String, Value> = row
        .as_object()
        .into_iter()
        .flatten()
        .filter(|(k, _)| !EVALUATION_KEYS.contains(&k.as_str()))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    let mut results: Vec<MetricResult> = row
        .get("metrics")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
        .map(|(name, m)| {
            let details = (name == headline && !components.is_empty())
                .then(|| Value::Object(components.clone()));
            metric_result(name, m, details)
        })
        .collect();
    // The headline first, then the run's metric order, then by name (the
    // order a case with metrics of its own listed them is not saved).
    results.sort_by_key(|r| {
        if r.metric == headline {
            (0, 0)
        } else {
            order
                .iter()
                .position(|m| *m == r.metric)
                .map_or((2, 0), |i| (1, i))
        }
    });
    let session = match row.get("session") {
        Some(s) => Some(SessionRef {
            id: text(s, "id").to_string(),
            trace_ids: s
                .get("trace_ids")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .map(|t| t.as_str().unwrap_or_default().parse())
                .collect::<Result<_, _>>()
                .map_err(|_| "a session's trace id is not an id".to_string())?,
        }),
        None => None,
    };
    Ok(Evaluation {
        trace_id: parse(row, "trace_id")?,
        session,
        case_id: text(row, "case").to_string(),
        case_index,
        joined_by: join_label(text(row, "joined_by")),
        tools_called: calls(row)?,
        expected: expected(row),
        results,
        warnings: strings(row, "warnings"),
    })
}

fn summary(row: &Value, report: &mut Report) -> Result<(), String> {
    let field = |k: &str| row.get(k).cloned().unwrap_or(Value::Null);
    report.stats = serde_json::from_value::<Stats>(field("stats"))
        .map_err(|e| format!("summary `stats`: {e}"))?;
    report.tools = serde_json::from_value::<Option<Vec<ToolStats>>>(field("tools"))
        .map_err(|e| format!("summary `tools`: {e}"))?
        .unwrap_or_default();
    report.tokens = serde_json::from_value::<Option<TokenStats>>(field("tokens"))
        .map_err(|e| format!("summary `tokens`: {e}"))?;
    report.judge =
        serde_json::from_value(field("judge")).map_err(|e| format!("summary `judge`: {e}"))?;
    Ok(())
}
