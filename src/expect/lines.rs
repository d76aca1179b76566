//! A JSON Lines fixture in toolscore's format, read a line at a time: a big
//! fixture's text is never held whole (docs/formats.md, fixture memory).
//! Every other file goes to the whole-text readers; both give the same cases
//! and rejections for the same file.

use std::fs::File;
use std::io::{self, BufRead, BufReader, Read, Seek};
use std::path::Path;

use serde_json::Value;

use super::formats::{self, ExpectFormat};
use super::{FixtureOptions, Loaded, Reading, MAX_FIXTURE_BYTES};
use crate::ingest::Position;

/// How much of the file is read to decide: its first record must end
/// within it.
const HEAD: u64 = 64 * 1024;

/// Reads `path` line by line when it is JSON Lines of toolscore cases: its
/// text starts with a one-line object (within the first 64 KiB) that no
/// other format claims. `None` when it is not (or is not a regular file
/// within the size limit): the whole-text readers take it and say why.
pub(super) fn load(path: &Path, opts: &FixtureOptions) -> io::Result<Option<Loaded>> {
    let m = std::fs::metadata(path)?;
    if !m.is_file() || m.len() > MAX_FIXTURE_BYTES {
        return Ok(None);
    }
    let mut file = File::open(path)?;
    let mut head = Vec::new();
    (&mut file).take(HEAD).read_to_end(&mut head)?;
    if !case_lines(&head, (head.len() as u64) < HEAD) {
        return Ok(None);
    }
    let lines = count_lines(&mut file)?;
    file.rewind()?;
    let source = path.display().to_string();
    let mut r = Reading::new(&source, opts);
    r.cases.reserve(lines);
    let mut reader = BufReader::with_capacity(256 * 1024, file.take(MAX_FIXTURE_BYTES + 1));
    let (mut buf, mut n, mut read) = (Vec::new(), 0, 0u64);
    loop {
        buf.clear();
        let got = reader.read_until(b'\n', &mut buf)?;
        if got == 0 {
            break;
        }
        read += got as u64;
        if read > MAX_FIXTURE_BYTES {
            // The file grew while it was read.
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("larger than {MAX_FIXTURE_BYTES} bytes"),
            ));
        }
        n += 1;
        let bytes = match n {
            1 => buf.strip_prefix(b"\xef\xbb\xbf").unwrap_or(&buf),
            _ => &buf,
        };
        match std::str::from_utf8(bytes) {
            Ok(line) => r.line(n, line),
            Err(e) => r.reject(Position::Line(n), format!("not UTF-8 text: {e}")),
        }
    }
    let (cases, rejected) = r.finish();
    Ok(Some(Loaded {
        cases,
        rejected,
        notes: Vec::new(),
        format: ExpectFormat::Toolscore,
    }))
}

/// Whether a file starting with `head` (`whole`: the entire file) is JSON
/// Lines of toolscore cases, as the whole-text readers would find: its text
/// starts with `{`, and its first line, complete, is an object of toolscore's
/// format (so it is not one object written over several lines, nor another
/// tool's records).
fn case_lines(head: &[u8], whole: bool) -> bool {
    let head = head.strip_prefix(b"\xef\xbb\xbf").unwrap_or(head);
    let start = head.iter().position(|b| !b.is_ascii_whitespace());
    let Some(start) = start.filter(|&s| head[s] == b'{') else {
        return false;
    };
    let line = match memchr::memchr(b'\n', &head[start..]) {
        Some(end) => &head[start..start + end],
        None if whole => &head[start..],
        None => return false,
    };
    match serde_json::from_slice::<Value>(line) {
        Ok(Value::Object(o)) => formats::of_object(&o) == ExpectFormat::Toolscore,
        _ => false,
    }
}

/// Lines in `file` (read from its start): the case list is sized once, not
/// grown by doubling.
fn count_lines(file: &mut File) -> io::Result<usize> {
    let mut buf = vec![0u8; 256 * 1024];
    let mut lines = 1;
    file.rewind()?;
    loop {
        let n = file.read(&mut buf)?;
        if n == 0 {
            return Ok(lines);
        }
        lines += memchr::memchr_iter(b'\n', &buf[..n]).count();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_toolscore_case_lines_are_streamed() {
        let case = br#"{"trace_id":"0123456789abcdef0123456789abcdef","expected_tools":[]}"#;
        let mut lines = case.to_vec();
        lines.extend_from_slice(b"\n");
        lines.extend_from_slice(case);
        assert!(case_lines(&lines, true));
        assert!(case_lines(case, true), "one line, the whole file");
        assert!(!case_lines(case, false), "the first line may go on");
        let bom = [b"\xef\xbb\xbf".as_slice(), &lines].concat();
        assert!(case_lines(&bom, true));
        assert!(!case_lines(b"[{\"trace_id\":\"x\"}]", true), "a JSON list");
        assert!(
            !case_lines(b"{\n  \"trace_id\": \"x\"\n}\n", true),
            "pretty-printed"
        );
        assert!(
            !case_lines(b"{\"eval_cases\":[]}\n", true),
            "an ADK eval set"
        );
        assert!(!case_lines(b"// note\n{}\n", true));
    }
}
