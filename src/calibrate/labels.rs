//! Human labels: one verdict per row, as JSONL (`{"case", "trace_id"?,
//! "metric"?, "label", "rater"?, "rationale"?}`) or as CSV with the same
//! columns (a file whose name ends in `.csv`). A bad row is rejected with
//! its line and reason; the others are read.

use std::fs::File;
use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::ingest::{Position, Rejected};

/// A row longer than this is rejected unread (a rationale is a few
/// sentences; this bounds what one bad line can cost).
pub const MAX_ROW_BYTES: usize = 1 << 20;

/// Labels are kept in memory: a file past this size (millions of rows) is
/// refused rather than read.
pub const MAX_FILE_BYTES: u64 = 256 << 20;

/// One human verdict.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Label {
    /// Line of the file it came from (1-based), for messages.
    pub line: usize,
    pub case: String,
    /// Lower-case hex, 32 digits.
    pub trace_id: Option<String>,
    /// `None` labels the case as a whole (every metric).
    pub metric: Option<String>,
    pub pass: bool,
    pub rater: Option<String>,
    pub rationale: Option<String>,
}

/// What a labels file gave: its labels and the rows it rejected.
#[derive(Debug, Default)]
pub struct Labels {
    pub labels: Vec<Label>,
    pub rejected: Vec<Rejected>,
}

#[derive(Debug, thiserror::Error)]
pub enum LabelsError {
    #[error("cannot read labels file {}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// The file as a whole cannot be read: too big, or a bad CSV header.
    #[error("{}: {reason}", path.display())]
    Header { path: PathBuf, reason: String },
}

/// A row as written in either format, before it is checked.
#[derive(Debug, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RawLabel {
    pub case: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trace_id: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metric: Option<Value>,
    pub label: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rater: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rationale: Option<Value>,
}

/// The columns, in the order the `label` session writes them.
pub const COLUMNS: [&str; 6] = ["case", "trace_id", "metric", "label", "rater", "rationale"];

/// Reads the labels at `path`: CSV when its name ends in `.csv`, JSONL
/// otherwise.
pub fn read(path: &Path) -> Result<Labels, LabelsError> {
    let io = |source| LabelsError::Io {
        path: path.to_path_buf(),
        source,
    };
    let file = File::open(path).map_err(io)?;
    let size = file.metadata().map_err(io)?.len();
    if size > MAX_FILE_BYTES {
        return Err(LabelsError::Header {
            path: path.to_path_buf(),
            reason: format!(
                "{size} bytes: a labels file is read whole, up to {} MiB",
                MAX_FILE_BYTES >> 20
            ),
        });
    }
    let source = path.display().to_string();
    if is_csv(path) {
        read_csv(file, &source).map_err(|e| match e {
            CsvFail::Io(e) => io(e),
            CsvFail::Header(reason) => LabelsError::Header {
                path: path.to_path_buf(),
                reason,
            },
        })
    } else {
        read_jsonl(BufReader::new(file), &source).map_err(io)
    }
}

pub fn is_csv(path: &Path) -> bool {
    path.extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("csv"))
}

/// Reads JSONL labels from `input`; `source` names it in rejections.
pub fn read_jsonl(mut input: impl BufRead, source: &str) -> std::io::Result<Labels> {
    let mut out = Labels::default();
    let mut buf = Vec::new();
    let mut line = 0;
    loop {
        buf.clear();
        line += 1;
        let (n, whole) = read_bounded_line(&mut input, &mut buf)?;
        if n == 0 {
            break;
        }
        let reject = |reason: String| Rejected {
            source: source.to_string(),
            position: Position::Line(line),
            reason,
            spans: 0,
        };
        if !whole {
            out.rejected.push(reject(format!(
                "row longer than {} KiB: not read",
                MAX_ROW_BYTES / 1024
            )));
            continue;
        }
        let text = match std::str::from_utf8(&buf) {
            Ok(t) => t.trim(),
            Err(e) => {
                out.rejected.push(reject(format!("not UTF-8: {e}")));
                continue;
            }
        };
        if text.is_empty() {
            continue;
        }
        match serde_json::from_str::<RawLabel>(text)
            .map_err(|e| format!("not a label row: {e}"))
            .and_then(|raw| check(raw, line))
        {
            Ok(label) => out.labels.push(label),
            Err(reason) => out.rejected.push(reject(reason)),
        }
    }
    Ok(out)
}

/// Reads one line into `buf`, at most [`MAX_ROW_BYTES`] of it; the rest of
/// a longer line is skipped without being kept. Returns the bytes read and
/// whether the line was whole.
fn read_bounded_line(
    input: &mut impl BufRead,
    buf: &mut Vec<u8>,
) -> std::io::Result<(usize, bool)> {
    let n = input
        .by_ref()
        .take(MAX_ROW_BYTES as u64 + 1)
        .read_until(b'\n', buf)?;
    if n <= MAX_ROW_BYTES || buf.last() == Some(&b'\n') {
        return Ok((n, true));
    }
    // Too long: skip to the end of the line.
    let mut skipped = n;
    loop {
        let chunk = input.fill_buf()?;
        if chunk.is_empty() {
            break;
        }
        match memchr::memchr(b'\n', chunk) {
            Some(i) => {
                input.consume(i + 1);
                skipped += i + 1;
                break;
            }
            None => {
                let len = chunk.len();
                input.consume(len);
                skipped += len;
            }
        }
    }
    Ok((skipped, false))
}

enum CsvFail {
    Io(std::io::Error),
    Header(String),
}

fn read_csv(input: impl Read, source: &str) -> Result<Labels, CsvFail> {
    let mut reader = csv::ReaderBuilder::new().flexible(true).from_reader(input);
    let headers = reader
        .headers()
        .map_err(|e| CsvFail::Header(format!("cannot read the CSV header: {e}")))?
        .clone();
    for h in &headers {
        if !COLUMNS.contains(&h.trim()) {
            return Err(CsvFail::Header(format!(
                "unknown column `{h}` in the CSV header (columns: {})",
                COLUMNS.join(", ")
            )));
        }
    }
    for required in ["case", "label"] {
        if !headers.iter().any(|h| h.trim() == required) {
            return Err(CsvFail::Header(format!(
                "the CSV header has no `{required}` column"
            )));
        }
    }
    let mut out = Labels::default();
    let mut record = csv::StringRecord::new();
    loop {
        let line = reader.position().line() as usize;
        match reader.read_record(&mut record) {
            Ok(false) => break,
            Ok(true) => {}
            Err(e) => {
                if let csv::ErrorKind::Io(_) = e.kind() {
                    let csv::ErrorKind::Io(io) = e.into_kind() else {
                        unreachable!("matched above")
                    };
                    return Err(CsvFail::Io(io));
                }
                out.rejected.push(Rejected {
                    source: source.to_string(),
                    position: Position::Line(line.max(1)),
                    reason: format!("not a CSV row: {e}"),
                    spans: 0,
                });
                continue;
            }
        }
        let line = record.position().map_or(line, |p| p.line() as usize);
        if record.iter().all(|f| f.trim().is_empty()) {
            continue;
        }
        let result = if record.len() != headers.len() {
            Err(format!(
                "{} fields where the header has {}",
                record.len(),
                headers.len()
            ))
        } else {
            let mut raw = RawLabel::default();
            for (h, v) in headers.iter().zip(record.iter()) {
                let v = (!v.is_empty()).then(|| Value::String(v.to_string()));
                match h.trim() {
                    "case" => raw.case = v,
                    "trace_id" => raw.trace_id = v,
                    "metric" => raw.metric = v,
                    "label" => raw.label = v,
                    "rater" => raw.rater = v,
                    _ => raw.rationale = v,
                }
            }
            check(raw, line)
        };
        match result {
            Ok(label) => out.labels.push(label),
            Err(reason) => out.rejected.push(Rejected {
                source: source.to_string(),
                position: Position::Line(line),
                reason,
                spans: 0,
            }),
        }
    }
    Ok(out)
}

/// Checks a row's fields: a case id, a pass/fail label, a 32-digit hex
/// trace id when given, text where text is due.
fn check(raw: RawLabel, line: usize) -> Result<Label, String> {
    let case = text(raw.case, "case")?.ok_or("no `case`: every label names its case")?;
    let label = raw.label.ok_or("no `label` (pass or fail)")?;
    let pass = match &label {
        Value::Bool(b) => *b,
        Value::String(s) => match s.trim().to_ascii_lowercase().as_str() {
            "pass" | "true" => true,
            "fail" | "false" => false,
            _ => return Err(format!("`label` is `{s}`: give pass, fail, true or false")),
        },
        other => {
            return Err(format!(
                "`label` is {other}: give pass, fail, true or false"
            ))
        }
    };
    let trace_id = text(raw.trace_id, "trace_id")?
        .map(|t| {
            let t = t.to_ascii_lowercase();
            if t.len() == 32 && t.bytes().all(|b| b.is_ascii_hexdigit()) {
                Ok(t)
            } else {
                Err(format!("`trace_id` `{t}` is not 32 hex digits"))
            }
        })
        .transpose()?;
    Ok(Label {
        line,
        case,
        trace_id,
        metric: text(raw.metric, "metric")?,
        pass,
        rater: text(raw.rater, "rater")?,
        rationale: text(raw.rationale, "rationale")?,
    })
}

/// A field that must be a string when present; an empty one counts as
/// absent.
fn text(v: Option<Value>, key: &str) -> Result<Option<String>, String> {
    match v {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) if s.trim().is_empty() => Ok(None),
        Some(Value::String(s)) => Ok(Some(s)),
        Some(other) => Err(format!("`{key}` is {other}, not a string")),
    }
}

/// The JSONL row of one label, as the `label` session writes it.
pub fn to_row(label: &Label) -> String {
    let raw = RawLabel {
        case: Some(Value::String(label.case.clone())),
        trace_id: label.trace_id.clone().map(Value::String),
        metric: label.metric.clone().map(Value::String),
        label: Some(Value::String(
            if label.pass { "pass" } else { "fail" }.into(),
        )),
        rater: label.rater.clone().map(Value::String),
        rationale: label.rationale.clone().map(Value::String),
    };
    serde_json::to_string(&raw).unwrap_or_default()
}

/// Appends `row` and a newline to `file` as one write, then syncs it to
/// disk, so a killed session leaves whole lines only.
pub fn append_row(file: &mut File, row: &str) -> std::io::Result<()> {
    let mut line = Vec::with_capacity(row.len() + 1);
    line.extend_from_slice(row.as_bytes());
    line.push(b'\n');
    file.write_all(&line)?;
    file.sync_data()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn jsonl(text: &str) -> Labels {
        read_jsonl(text.as_bytes(), "labels.jsonl").unwrap()
    }

    #[test]
    fn rows_and_rejections() {
        let l = jsonl(concat!(
            "{\"case\": \"a\", \"label\": \"pass\"}\n",
            "{\"case\": \"b\", \"label\": false, \"rater\": \"ann\", \"metric\": \"m\"}\n",
            "\n",
            "{\"case\": \"c\", \"label\": \"maybe\"}\n",
            "{\"case\": \"d\", \"label\": \"fail\", \"lable\": 1}\n",
            "{\"case\": \"e\", \"label\": \"fail\", \"trace_id\": \"xyz\"}\n",
            "{\"label\": \"fail\"}\n",
            "not json\n",
        ));
        assert_eq!(l.labels.len(), 2);
        assert!(l.labels[0].pass && !l.labels[1].pass);
        assert_eq!(l.labels[1].rater.as_deref(), Some("ann"));
        let lines: Vec<String> = l.rejected.iter().map(ToString::to_string).collect();
        assert_eq!(lines.len(), 5, "{lines:?}");
        assert!(
            lines[0].starts_with("labels.jsonl:4: `label` is `maybe`"),
            "{lines:?}"
        );
        assert!(
            lines[1].contains(":5:") && lines[1].contains("lable"),
            "{lines:?}"
        );
        assert!(
            lines[2].contains(":6:") && lines[2].contains("32 hex"),
            "{lines:?}"
        );
        assert!(
            lines[3].contains(":7:") && lines[3].contains("no `case`"),
            "{lines:?}"
        );
    }

    #[test]
    fn an_overlong_row_is_skipped_alone() {
        let long = format!(
            "{{\"case\": \"{}\", \"label\": \"pass\"}}\n",
            "x".repeat(MAX_ROW_BYTES)
        );
        let text = format!("{long}{{\"case\": \"b\", \"label\": \"fail\"}}\n");
        let l = jsonl(&text);
        assert_eq!(l.labels.len(), 1);
        assert_eq!(l.labels[0].line, 2);
        assert!(l.rejected[0].to_string().contains(":1: row longer"));
    }

    #[test]
    fn csv_rows() {
        let text =
            "case,label,rater,rationale\na,pass,ann,\"fine, all calls\"\nb,nope,ann,\nc,false\n";
        let l = read_csv(text.as_bytes(), "l.csv").ok().unwrap();
        assert_eq!(l.labels.len(), 1);
        assert_eq!(l.labels[0].rationale.as_deref(), Some("fine, all calls"));
        let lines: Vec<String> = l.rejected.iter().map(ToString::to_string).collect();
        assert!(
            lines[0].starts_with("l.csv:3: `label` is `nope`"),
            "{lines:?}"
        );
        assert!(lines[1].starts_with("l.csv:4: 2 fields"), "{lines:?}");
        assert!(matches!(
            read_csv("case,verdict\n".as_bytes(), "l.csv"),
            Err(CsvFail::Header(_))
        ));
    }

    #[test]
    fn a_written_row_reads_back() {
        let label = Label {
            line: 1,
            case: "c\"1".into(),
            trace_id: Some("0".repeat(32)),
            metric: None,
            pass: false,
            rater: Some("ann".into()),
            rationale: None,
        };
        let back = jsonl(&format!("{}\n", to_row(&label)));
        assert_eq!(back.labels, vec![label]);
    }
}
