//! Reading trace files from disk or stdin: paths, directories, `-`; and
//! bytes already in memory (the Python module's OTLP bodies and SDK spans).

use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::{decode, Decoded, Limits, Position, Rejected};

/// What traces are read from, as a caller names it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    /// A file, a directory (walked) or `-` (stdin).
    Path(PathBuf),
    /// Bytes in any input format; `label` names them in rejections.
    Memory { label: String, data: Arc<[u8]> },
}

impl Source {
    /// Command-line paths as sources.
    pub fn paths(paths: &[PathBuf]) -> Vec<Source> {
        paths.iter().cloned().map(Source::Path).collect()
    }
}

/// One input to read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TraceInput {
    Stdin,
    File(PathBuf),
    Memory { label: String, data: Arc<[u8]> },
}

impl TraceInput {
    pub fn label(&self) -> String {
        match self {
            TraceInput::Stdin => "-".to_string(),
            TraceInput::File(p) => p.display().to_string(),
            TraceInput::Memory { label, .. } => label.clone(),
        }
    }

    /// Size on disk, for progress; 0 for stdin or when unknown.
    pub fn size(&self) -> u64 {
        match self {
            TraceInput::Stdin => 0,
            TraceInput::File(p) => std::fs::metadata(p).map_or(0, |m| m.len()),
            TraceInput::Memory { data, .. } => data.len() as u64,
        }
    }
}

/// Expands the sources: directories are walked recursively (in sorted
/// order, hidden entries skipped), `-` is stdin. Only regular files are
/// read: a FIFO would block the run and a device (`/dev/zero`) never ends,
/// so anything else is skipped with the reason. A directory reached again
/// through a symbolic link (a cycle) is walked once.
pub fn expand(sources: &[Source]) -> (Vec<TraceInput>, Vec<Rejected>) {
    let mut inputs = Vec::new();
    let mut rejected = Vec::new();
    let mut walked = std::collections::HashSet::new();
    for source in sources {
        let p = match source {
            Source::Path(p) => p,
            Source::Memory { label, data } => {
                inputs.push(TraceInput::Memory {
                    label: label.clone(),
                    data: Arc::clone(data),
                });
                continue;
            }
        };
        if p.as_os_str() == "-" {
            inputs.push(TraceInput::Stdin);
            continue;
        }
        match std::fs::metadata(p) {
            Ok(m) if m.is_dir() => {
                let before = inputs.len();
                walk(p, &mut inputs, &mut rejected, &mut walked);
                if inputs.len() == before {
                    rejected.push(whole(p, no_trace_files()));
                }
            }
            Ok(m) if m.is_file() => match not_traces(p) {
                Some(reason) => rejected.push(whole(p, reason)),
                None => inputs.push(TraceInput::File(p.clone())),
            },
            Ok(m) => rejected.push(not_regular(p, &m)),
            Err(e) => rejected.push(Rejected {
                source: p.display().to_string(),
                position: Position::Whole,
                reason: format!("cannot read: {e}"),
                spans: 0,
            }),
        }
    }
    (inputs, rejected)
}

/// Why a path that is neither a file nor a directory is skipped.
fn not_regular(p: &Path, m: &std::fs::Metadata) -> Rejected {
    use std::os::unix::fs::FileTypeExt;
    let t = m.file_type();
    let what = if t.is_fifo() {
        "a FIFO (named pipe)"
    } else if t.is_char_device() || t.is_block_device() {
        "a device"
    } else if t.is_socket() {
        "a socket"
    } else {
        "not a regular file"
    };
    Rejected {
        source: p.display().to_string(),
        position: Position::Whole,
        reason: format!(
            "skipped: {what}; only regular files are read (pipe a stream in as `-` instead)"
        ),
        spans: 0,
    }
}

/// (device, inode) of a directory, to walk each one once.
fn dir_key(m: &std::fs::Metadata) -> (u64, u64) {
    use std::os::unix::fs::MetadataExt;
    (m.dev(), m.ino())
}

fn walk(
    dir: &Path,
    inputs: &mut Vec<TraceInput>,
    rejected: &mut Vec<Rejected>,
    walked: &mut std::collections::HashSet<(u64, u64)>,
) {
    match std::fs::metadata(dir) {
        Ok(m) if !walked.insert(dir_key(&m)) => return, // seen: a link cycle or a repeat
        _ => {}
    }
    let entries = match std::fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) => {
            rejected.push(Rejected {
                source: dir.display().to_string(),
                position: Position::Whole,
                reason: format!("cannot list directory: {e}"),
                spans: 0,
            });
            return;
        }
    };
    let mut paths: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| {
            !p.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with('.'))
        })
        .collect();
    paths.sort();
    for p in paths {
        let Ok(m) = std::fs::metadata(&p) else {
            continue; // a dangling link: nothing to read
        };
        if m.is_dir() {
            walk(&p, inputs, rejected, walked);
        } else if is_trace_file(&p) {
            if m.is_file() {
                match not_traces(&p) {
                    Some(reason) => rejected.push(whole(&p, reason)),
                    None => inputs.push(TraceInput::File(p)),
                }
            } else {
                rejected.push(not_regular(&p, &m));
            }
        }
    }
}

/// Reads a small text file named by the user (a fixture, a config):
/// regular files only, at most `cap` bytes, so `/dev/zero` or a FIFO given
/// by mistake is an error rather than a hang or a memory blow-up.
pub fn read_text_capped(path: &Path, cap: u64) -> std::io::Result<String> {
    let m = std::fs::metadata(path)?;
    if !m.is_file() {
        let why = not_regular(path, &m).reason;
        return Err(std::io::Error::new(std::io::ErrorKind::InvalidInput, why));
    }
    // Sized from the file: growing by doubling would hold up to twice it.
    let mut text = String::with_capacity(usize::try_from(m.len().min(cap)).unwrap_or(0));
    std::fs::File::open(path)?
        .take(cap + 1)
        .read_to_string(&mut text)?;
    if text.len() as u64 > cap {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            format!("larger than {cap} bytes"),
        ));
    }
    Ok(text)
}

/// Inside a walked directory, only files that may hold traces are read, so
/// that a folder with READMEs and fixtures next to the exports just works.
/// (Files named on the command line are always read, whatever their name.)
/// Endings of the files a directory walk reads (and their `.gz`).
const TRACE_ENDINGS: [&str; 7] = [
    ".json", ".jsonl", ".ndjson", ".pb", ".proto", ".bin", ".otlp",
];

/// Names a directory walk skips: fixtures and the corpus' truth files.
const SKIPPED_NAMES: [&str; 2] = ["truth.jsonl", "requests.index.jsonl"];
const SKIPPED_PREFIXES: [&str; 2] = ["expected", "fixture"];

fn is_trace_file(p: &Path) -> bool {
    let name = p
        .file_name()
        .map(|n| n.to_string_lossy().to_ascii_lowercase())
        .unwrap_or_default();
    let name = name.strip_suffix(".gz").unwrap_or(&name);
    if SKIPPED_NAMES.contains(&name) || SKIPPED_PREFIXES.iter().any(|s| name.starts_with(s)) {
        return false;
    }
    TRACE_ENDINGS.iter().any(|ext| name.ends_with(ext))
}

/// Why a directory gave nothing to read: what the walk looks for.
fn no_trace_files() -> String {
    let endings: Vec<String> = TRACE_ENDINGS.iter().map(|e| format!("*{e}")).collect();
    format!(
        "no trace files in this directory: looked for {} and their .gz; skipped {} and {}*",
        endings.join(", "),
        SKIPPED_NAMES.join(", "),
        SKIPPED_PREFIXES.join("*, "),
    )
}

fn whole(p: &Path, reason: String) -> Rejected {
    Rejected {
        source: p.display().to_string(),
        position: Position::Whole,
        reason,
        spans: 0,
    }
}

/// Paths on the command line that do not exist: a usage error, found before
/// any work (a typo must not give a table of cases that matched nothing).
pub fn missing(paths: &[PathBuf]) -> Vec<&Path> {
    paths
        .iter()
        .filter(|p| p.as_os_str() != "-" && std::fs::symlink_metadata(p).is_err())
        .map(PathBuf::as_path)
        .collect()
}

/// Bytes read from the start of a file to tell what it is.
const SNIFF_BYTES: usize = 4096;

/// Why a regular file is not trace data, when its first bytes say so:
/// a fixture given as a trace file, or text that is neither JSON nor
/// protobuf (a CSV, a log). `None` when it may be traces (gzip is not
/// looked into).
fn not_traces(p: &Path) -> Option<String> {
    let mut head = Vec::with_capacity(SNIFF_BYTES);
    let file = std::fs::File::open(p).ok()?;
    file.take(SNIFF_BYTES as u64).read_to_end(&mut head).ok()?;
    sniff(&head)
}

/// [`not_traces`] on a file's first bytes.
fn sniff(head: &[u8]) -> Option<String> {
    let first = *head.get(super::non_blank(head)?)?;
    if first == b'{' || first == b'[' {
        // A fixture's keys, and none of a trace format's.
        let has = |k: &str| memchr::memmem::find(head, k.as_bytes()).is_some();
        let fixture = FIXTURE_KEYS.iter().any(|k| has(k));
        let traces = TRACE_KEYS.iter().any(|k| has(k));
        return (fixture && !traces).then(|| {
            "this is a fixture of expected tools, not traces: pass it with --expected".to_string()
        });
    }
    // Protobuf holds ids (random bytes) within its first bytes; text is
    // printable throughout. A cut UTF-8 sequence at the end is allowed.
    let text = match std::str::from_utf8(head) {
        Ok(t) => t,
        Err(e) if e.error_len().is_none() => std::str::from_utf8(&head[..e.valid_up_to()]).ok()?,
        Err(_) => return None,
    };
    let printable = text
        .chars()
        .all(|c| !c.is_control() || matches!(c, '\n' | '\r' | '\t'));
    printable.then(|| {
        let line = text.lines().next().unwrap_or_default();
        let kind = if line.contains(',') { " (CSV?)" } else { "" };
        format!(
            "not a trace file: text that is neither JSON nor OTLP protobuf{kind}; \
             trace files are OTLP/JSON, JSON lines, OTLP protobuf, MLflow, Jaeger, Zipkin or \
             the OTel SDK's console output"
        )
    })
}

/// Keys of the fixture formats (ours, DeepEval, ADK, MLflow, Ragas), as
/// JSON text.
const FIXTURE_KEYS: [&str; 6] = [
    "\"expected_tools\"",
    "\"expected_tool_calls\"",
    "\"eval_cases\"",
    "\"eval_set_id\"",
    "\"expectations\"",
    "\"reference_tool_calls\"",
];

/// Keys that only trace formats have.
const TRACE_KEYS: [&str; 7] = [
    "\"resourceSpans\"",
    "\"resource_spans\"",
    "\"spans\"",
    "\"traceId\"",
    "\"batches\"",
    "\"traceID\"",
    "\"context\"",
];

/// Reads and decodes one input. I/O errors become a rejection.
pub fn read_input(input: &TraceInput, limits: &Limits) -> Decoded {
    let label = input.label();
    let bytes = match input {
        TraceInput::Stdin => {
            let mut buf = Vec::new();
            std::io::stdin().read_to_end(&mut buf).map(|_| buf)
        }
        TraceInput::File(p) => std::fs::read(p),
        TraceInput::Memory { data, .. } => return decode(data, &label, limits),
    };
    match bytes {
        Ok(b) => decode(&b, &label, limits),
        Err(e) => Decoded {
            rejected: vec![Rejected {
                source: label,
                position: Position::Whole,
                reason: format!("cannot read: {e}"),
                spans: 0,
            }],
            ..Decoded::default()
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sniff_tells_fixtures_and_text_from_traces() {
        let fixture = br#"{"id": "a", "trace_id": "00", "expected_tools": [{"name": "x"}]}"#;
        assert!(sniff(fixture).is_some_and(|r| r.contains("--expected")));
        let otlp = br#"{"resourceSpans": [{"scopeSpans": [{"spans": []}]}]}"#;
        assert_eq!(sniff(otlp), None);
        assert!(sniff(b"a,b\n1,2\n").is_some_and(|r| r.contains("CSV")));
        assert_eq!(sniff(b"\x0a\x82\x01\x0a\x00\xff\xfe"), None);
        assert_eq!(sniff(b"   "), None);
    }
}
