//! Reading trace files from disk or stdin: paths, directories, `-`.

use std::io::Read;
use std::path::{Path, PathBuf};

use super::{decode, Decoded, Limits, Position, Rejected};

/// One input to read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Input {
    Stdin,
    File(PathBuf),
}

impl Input {
    pub fn label(&self) -> String {
        match self {
            Input::Stdin => "-".to_string(),
            Input::File(p) => p.display().to_string(),
        }
    }

    /// Size on disk, for progress; 0 for stdin or when unknown.
    pub fn size(&self) -> u64 {
        match self {
            Input::Stdin => 0,
            Input::File(p) => std::fs::metadata(p).map_or(0, |m| m.len()),
        }
    }
}

/// Expands the command-line paths: directories are walked recursively (in
/// sorted order, hidden entries skipped), `-` is stdin.
pub fn expand(paths: &[PathBuf]) -> (Vec<Input>, Vec<Rejected>) {
    let mut inputs = Vec::new();
    let mut rejected = Vec::new();
    for p in paths {
        if p.as_os_str() == "-" {
            inputs.push(Input::Stdin);
            continue;
        }
        match std::fs::metadata(p) {
            Ok(m) if m.is_dir() => walk(p, &mut inputs, &mut rejected),
            Ok(_) => inputs.push(Input::File(p.clone())),
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

fn walk(dir: &Path, inputs: &mut Vec<Input>, rejected: &mut Vec<Rejected>) {
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
        if p.is_dir() {
            walk(&p, inputs, rejected);
        } else if is_trace_file(&p) {
            inputs.push(Input::File(p));
        }
    }
}

/// Inside a walked directory, only files that may hold traces are read, so
/// that a folder with READMEs and fixtures next to the exports just works.
/// (Files named on the command line are always read, whatever their name.)
fn is_trace_file(p: &Path) -> bool {
    let name = p
        .file_name()
        .map(|n| n.to_string_lossy().to_ascii_lowercase())
        .unwrap_or_default();
    let name = name.strip_suffix(".gz").unwrap_or(&name);
    let skip = ["truth.jsonl", "requests.index.jsonl", "expected.jsonl"];
    if skip.contains(&name) || name.starts_with("expected") || name.starts_with("fixture") {
        return false;
    }
    [
        ".json", ".jsonl", ".ndjson", ".pb", ".proto", ".bin", ".otlp",
    ]
    .iter()
    .any(|ext| name.ends_with(ext))
}

/// Reads and decodes one input. I/O errors become a rejection.
pub fn read_input(input: &Input, limits: &Limits) -> Decoded {
    let label = input.label();
    let bytes = match input {
        Input::Stdin => {
            let mut buf = Vec::new();
            std::io::stdin().read_to_end(&mut buf).map(|_| buf)
        }
        Input::File(p) => std::fs::read(p),
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
