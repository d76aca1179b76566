//! Expectations in other tools' formats: which format a file is in (found
//! from its content, never its name) and the converter of each. One place
//! registers them all; docs/formats.md describes the shapes and the joins.

use serde_json::{Map, Value};

use super::read::{kind, Ctx};
use super::Case;
use crate::ingest::{Position, Rejected};

/// The format of an expectations file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExpectFormat {
    /// toolscore's own cases (JSONL or a JSON array).
    Toolscore,
    /// Google ADK `EvalSet` (`*.evalset.json`).
    AdkEvalSet,
    /// Google ADK's older `*.test.json`: a list of turns with `query` and
    /// `expected_tool_use`.
    AdkTestFile,
    /// MLflow evaluation dataset records.
    Mlflow,
    /// DeepEval goldens.
    Deepeval,
    /// Ragas samples with `reference_tool_calls`.
    Ragas,
}

impl ExpectFormat {
    /// The name used in messages.
    pub fn name(self) -> &'static str {
        match self {
            ExpectFormat::Toolscore => "toolscore cases",
            ExpectFormat::AdkEvalSet => "Google ADK eval set",
            ExpectFormat::AdkTestFile => "Google ADK test file",
            ExpectFormat::Mlflow => "MLflow evaluation dataset",
            ExpectFormat::Deepeval => "DeepEval goldens",
            ExpectFormat::Ragas => "Ragas samples",
        }
    }

    /// The metrics a file in this format is scored with when the user names
    /// none: ADK's own default criterion, `tool_trajectory_avg_score` EXACT.
    pub fn default_metrics(self) -> Option<&'static [&'static str]> {
        match self {
            ExpectFormat::AdkEvalSet | ExpectFormat::AdkTestFile => Some(&["adk.exact"]),
            _ => None,
        }
    }

    /// The key whose list holds the records, in a file that wraps them in an
    /// object.
    fn wrappers(self) -> &'static [&'static str] {
        match self {
            ExpectFormat::AdkEvalSet => &["eval_cases", "evalCases"],
            ExpectFormat::Mlflow => &["records"],
            ExpectFormat::Deepeval => &["goldens"],
            ExpectFormat::Ragas => &["samples"],
            _ => &[],
        }
    }

    /// Converts one record into cases.
    /// Why a record holds nothing to compare and is skipped (not an error).
    fn skipped(self, record: &Value) -> Option<&'static str> {
        match self {
            ExpectFormat::AdkEvalSet => super::adk::skipped(record),
            _ => None,
        }
    }

    fn convert(self, record: &Value, ctx: &Ctx) -> Result<Vec<Case>, String> {
        match self {
            ExpectFormat::AdkEvalSet => super::adk::eval_case(record),
            ExpectFormat::AdkTestFile => super::adk::test_turn(record, ctx),
            ExpectFormat::Mlflow => super::mlflow::record(record, ctx),
            ExpectFormat::Deepeval => super::deepeval::golden(record, ctx),
            ExpectFormat::Ragas => super::ragas::sample(record, ctx),
            ExpectFormat::Toolscore => Err("not a foreign format".into()),
        }
    }
}

/// The format of `text`, from its first record's keys.
pub fn detect(text: &str) -> ExpectFormat {
    let first = match serde_json::from_str::<Value>(text) {
        Ok(v) => Some(v),
        // Pretty-printed records one after another: judged by the first.
        Err(_) if super::read::documents(text).is_some() => {
            super::read::documents(text).and_then(|d| {
                d.first()
                    .and_then(|(_, doc)| serde_json::from_str(doc).ok())
            })
        }
        // Not one JSON value: JSON Lines, judged by the first record.
        Err(_) => text
            .lines()
            .map(str::trim)
            .find(|l| !l.is_empty() && !l.starts_with("//"))
            .and_then(|l| serde_json::from_str::<Value>(l).ok()),
    };
    match first {
        Some(Value::Object(o)) => of_object(&o),
        Some(Value::Array(items)) => items
            .iter()
            .find_map(Value::as_object)
            .map_or(ExpectFormat::Toolscore, of_record),
        _ => ExpectFormat::Toolscore,
    }
}

/// Why `text` is in no accepted format, when it is one JSON object written
/// over several lines that no format claims (a one-line object is a JSONL
/// case, rejected with its fields by that reader).
pub fn unknown(text: &str) -> Option<String> {
    // Cheap checks first: a JSON Lines or list file is never parsed here.
    if !text.trim_start().starts_with('{') || text.trim().lines().nth(1).is_none() {
        return None;
    }
    let Ok(Value::Object(o)) = serde_json::from_str::<Value>(text) else {
        return None;
    };
    if of_object(&o) != ExpectFormat::Toolscore {
        return None;
    }
    let keys: Vec<String> = o.keys().take(8).map(|k| format!("`{k}`")).collect();
    Some(format!(
        "not an expectations file of a known format: one JSON object with the keys {} \
         (accepted: toolscore cases as JSONL or a JSON list, a Google ADK eval set with \
         `eval_cases`, an ADK `*.test.json` list, MLflow dataset records, DeepEval goldens, \
         Ragas samples; see docs/formats.md)",
        keys.join(", ")
    ))
}

/// A whole-file object: a wrapper around records, or one record.
pub(super) fn of_object(o: &Map<String, Value>) -> ExpectFormat {
    if has_any(o, &["eval_cases", "evalCases"]) {
        return ExpectFormat::AdkEvalSet;
    }
    for (key, format) in [
        ("records", ExpectFormat::Mlflow),
        ("goldens", ExpectFormat::Deepeval),
        ("samples", ExpectFormat::Ragas),
    ] {
        if o.get(key).is_some_and(Value::is_array) {
            return format;
        }
    }
    of_record(o)
}

/// One record, by the keys only its format has.
fn of_record(o: &Map<String, Value>) -> ExpectFormat {
    if has_any(o, &["trace_id", "match", "session_id"]) {
        ExpectFormat::Toolscore
    } else if has_any(o, &["query"]) && has_any(o, &["expected_tool_use"]) {
        ExpectFormat::AdkTestFile
    } else if has_any(o, &["inputs"]) && has_any(o, &["expectations", "dataset_record_id"]) {
        ExpectFormat::Mlflow
    } else if has_any(o, &["reference_tool_calls"]) {
        ExpectFormat::Ragas
    } else if has_any(o, &["input"]) && has_any(o, &["expected_tools", "expectedTools"]) {
        ExpectFormat::Deepeval
    } else {
        ExpectFormat::Toolscore
    }
}

fn has_any(o: &Map<String, Value>, keys: &[&str]) -> bool {
    keys.iter().any(|k| o.contains_key(*k))
}

/// Converts every record of `text` (in `format`), each bad record rejected
/// alone with its position, the record and the field.
pub fn parse(
    format: ExpectFormat,
    text: &str,
    source: &str,
) -> (Vec<(Case, Position)>, Vec<Rejected>, Vec<String>) {
    let mut cases = Vec::new();
    let mut rejected = Vec::new();
    let mut notes = Vec::new();
    let mut reject = |position: Position, reason: String| {
        rejected.push(Rejected {
            source: source.to_string(),
            position,
            reason: format!("{}: {reason}", format.name()),
            spans: 0,
        })
    };
    let stem = stem_of(source);
    let (records, bad) = records(format, text);
    for (position, reason) in bad {
        reject(position, reason);
    }
    for (n, (position, label, record)) in records.into_iter().enumerate() {
        let ctx = Ctx {
            stem: stem.clone(),
            n: n + 1,
        };
        if let Some(why) = format.skipped(&record) {
            notes.push(format!(
                "{source}: {label}{}: skipped: {why}",
                id_note(&record)
            ));
            continue;
        }
        match format.convert(&record, &ctx) {
            Ok(found) => cases.extend(found.into_iter().map(|c| (c, position.clone()))),
            Err(e) => reject(position, format!("{label}{}: {e}", id_note(&record))),
        }
    }
    (cases, rejected, notes)
}

/// ` (id `x`)` when the record names itself, for messages.
fn id_note(record: &Value) -> String {
    ["eval_id", "evalId", "dataset_record_id", "id", "name"]
        .iter()
        .find_map(|k| record.get(*k).and_then(Value::as_str))
        .map(|id| format!(" (id `{id}`)"))
        .unwrap_or_default()
}

/// A record with where it is: position, a label naming it (`eval_cases[2]`,
/// `[3]`, `line 4`), and its value.
type Record = (Position, String, Value);

/// The records of `text`: the items of the whole file's list (or of the
/// list a wrapper object holds), the object itself, or one per line.
fn records(format: ExpectFormat, text: &str) -> (Vec<Record>, Vec<(Position, String)>) {
    let mut out = Vec::new();
    let mut bad = Vec::new();
    match super::read::record(text) {
        Ok(Value::Array(items)) => {
            for (i, v) in items.into_iter().enumerate() {
                out.push((Position::Record(i + 1), format!("[{i}]"), v));
            }
        }
        Ok(Value::Object(mut o)) => {
            let key = format
                .wrappers()
                .iter()
                .find(|k| o.get(**k).is_some_and(Value::is_array));
            match key.and_then(|k| o.remove(*k).map(|v| (k, v))) {
                Some((k, Value::Array(items))) => {
                    if items.is_empty() {
                        bad.push((Position::Whole, format!("`{k}` is empty: no expectations")));
                    }
                    for (i, v) in items.into_iter().enumerate() {
                        out.push((Position::Record(i + 1), format!("{k}[{i}]"), v));
                    }
                }
                _ if format == ExpectFormat::AdkEvalSet => bad.push((
                    Position::Whole,
                    "`eval_cases` must be a list of eval cases".to_string(),
                )),
                _ => out.push((Position::Whole, "the record".to_string(), Value::Object(o))),
            }
        }
        Ok(other) => bad.push((
            Position::Whole,
            format!("expected a JSON object or list, not {}", kind(&other)),
        )),
        // JSON, but a key repeats: not a stream of records either.
        Err(e) if !e.starts_with(super::read::NOT_JSON) => bad.push((Position::Whole, e)),
        Err(_) if super::read::documents(text).is_some() => {
            for (line, doc) in super::read::documents(text).unwrap_or_default() {
                match super::read::record(doc) {
                    Ok(v) => out.push((Position::Line(line), format!("line {line}"), v)),
                    Err(e) => bad.push((Position::Line(line), e)),
                }
            }
        }
        Err(_) => {
            for (i, line) in text.lines().enumerate() {
                let line = line.trim();
                if line.is_empty() || line.starts_with("//") {
                    continue;
                }
                match super::read::record(line) {
                    Ok(v) => out.push((Position::Line(i + 1), format!("line {}", i + 1), v)),
                    Err(e) => bad.push((Position::Line(i + 1), e)),
                }
            }
        }
    }
    if out.is_empty() && bad.is_empty() {
        bad.push((Position::Whole, "no records: no expectations".to_string()));
    }
    (out, bad)
}

/// The file name without directories and extensions (`a/b.evalset.json`
/// gives `b`).
fn stem_of(source: &str) -> String {
    let name = std::path::Path::new(source)
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| source.to_string());
    match name.split_once('.') {
        Some((stem, _)) if !stem.is_empty() => stem.to_string(),
        _ => name,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn detects_by_content() {
        let cases = [
            (
                r#"{"eval_set_id":"s","eval_cases":[]}"#,
                ExpectFormat::AdkEvalSet,
            ),
            (
                r#"{"evalSetId":"s","evalCases":[]}"#,
                ExpectFormat::AdkEvalSet,
            ),
            (
                r#"[{"query":"q","expected_tool_use":[],"reference":"r"}]"#,
                ExpectFormat::AdkTestFile,
            ),
            (
                r#"[{"inputs":{"question":"q"},"expectations":{"expected_tool_calls":[]}}]"#,
                ExpectFormat::Mlflow,
            ),
            (
                "{\"inputs\":{\"q\":1},\"expectations\":{}}\n{\"inputs\":{}}\n",
                ExpectFormat::Mlflow,
            ),
            (
                r#"[{"input":"q","expected_tools":[]}]"#,
                ExpectFormat::Deepeval,
            ),
            (
                r#"[{"user_input":[],"reference_tool_calls":[]}]"#,
                ExpectFormat::Ragas,
            ),
            (
                r#"{"id":"a","trace_id":"0123456789abcdef0123456789abcdef","expected_tools":[]}"#,
                ExpectFormat::Toolscore,
            ),
            ("not json at all", ExpectFormat::Toolscore),
        ];
        for (text, want) in cases {
            assert_eq!(detect(text), want, "{text}");
        }
    }

    #[test]
    fn stems() {
        assert_eq!(stem_of("a/b/weather.evalset.json"), "weather");
        assert_eq!(stem_of("x"), "x");
        assert_eq!(stem_of(".hidden.json"), ".hidden.json");
    }
}
