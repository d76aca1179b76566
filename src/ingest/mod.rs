//! Ingest: bytes -> OTLP `ExportTraceServiceRequest`s. Decode only.
//!
//! The format is detected from content (gzip magic, JSON vs protobuf), never
//! from the file extension alone. A bad item (line, file, record) becomes a
//! [`Rejected`] record and decoding goes on with the rest.

pub mod files;
pub mod mlflow;
pub mod otlp_json;

use std::fmt;
use std::io::Read;

use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use prost::Message;

pub use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest as Request;

/// Size caps applied while decoding.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Largest inflated size of a gzip input.
    pub max_inflated_bytes: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_inflated_bytes: 512 * 1024 * 1024,
        }
    }
}

/// Where in an input a problem is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Position {
    Whole,
    Line(usize),
    Byte(usize),
    /// Record `n` (1-based) of a length-prefixed file.
    Record(usize),
}

impl fmt::Display for Position {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Position::Whole => Ok(()),
            Position::Line(n) => write!(f, ":{n}"),
            Position::Byte(n) => write!(f, " at byte {n}"),
            Position::Record(n) => write!(f, " record {n}"),
        }
    }
}

/// An input item that was not accepted, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rejected {
    /// File path, `-` for stdin, or a request label.
    pub source: String,
    pub position: Position,
    pub reason: String,
    /// Spans lost with it, when known.
    pub spans: usize,
}

impl fmt::Display for Rejected {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}{}: {}", self.source, self.position, self.reason)
    }
}

/// The wire format found in an input.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// One OTLP/JSON request (or a JSON array of them).
    OtlpJson,
    /// One OTLP/JSON request per line (the Collector's file exporter).
    OtlpJsonLines,
    /// One binary `ExportTraceServiceRequest`.
    OtlpProtobuf,
    /// Collector file exporter `format: proto`: 4-byte big-endian length + message.
    OtlpProtobufRecords,
    /// MLflow's native trace JSON (`Trace.to_json()`), one trace or an array.
    MlflowTraceJson,
}

/// The result of decoding one input.
#[derive(Debug, Default)]
pub struct Decoded {
    pub requests: Vec<ExportTraceServiceRequest>,
    pub rejected: Vec<Rejected>,
    pub format: Option<Format>,
}

impl Decoded {
    fn reject(&mut self, source: &str, position: Position, reason: impl Into<String>) {
        self.rejected.push(Rejected {
            source: source.to_string(),
            position,
            reason: reason.into(),
            spans: 0,
        });
    }
}

const GZIP_MAGIC: [u8; 2] = [0x1f, 0x8b];

/// Why a capped gzip inflate failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum GunzipError {
    #[error("bad gzip data: {0}")]
    Corrupt(String),
    #[error("gzip data inflates to more than {cap} bytes (the cap)")]
    TooLarge { cap: u64 },
}

/// Inflates gzip `bytes` (one or more members), stopping past `cap` bytes of output.
pub fn gunzip_capped(bytes: &[u8], cap: u64) -> Result<Vec<u8>, GunzipError> {
    let hint = bytes.len().saturating_mul(4).min(cap as usize);
    let mut out = Vec::with_capacity(hint);
    // MultiGzDecoder: concatenated members are valid gzip (and what `cat a.gz b.gz` makes).
    let decoder = flate2::read::MultiGzDecoder::new(bytes);
    decoder
        .take(cap.saturating_add(1))
        .read_to_end(&mut out)
        .map_err(|e| GunzipError::Corrupt(e.to_string()))?;
    if out.len() as u64 > cap {
        return Err(GunzipError::TooLarge { cap });
    }
    Ok(out)
}

/// Whether `bytes` start with the gzip magic number.
pub fn is_gzip(bytes: &[u8]) -> bool {
    bytes.starts_with(&GZIP_MAGIC)
}

/// Inflates `bytes` if they are gzip (by magic), with a cap on the output.
pub fn gunzip_if_needed<'a>(
    bytes: &'a [u8],
    limits: &Limits,
) -> Result<std::borrow::Cow<'a, [u8]>, String> {
    if !is_gzip(bytes) {
        return Ok(std::borrow::Cow::Borrowed(bytes));
    }
    gunzip_capped(bytes, limits.max_inflated_bytes)
        .map(std::borrow::Cow::Owned)
        .map_err(|e| e.to_string())
}

/// Decodes one whole input (a file's content, stdin, an HTTP body).
pub fn decode(bytes: &[u8], source: &str, limits: &Limits) -> Decoded {
    let mut out = Decoded::default();
    let bytes = match gunzip_if_needed(bytes, limits) {
        Ok(b) => b,
        Err(reason) => {
            out.reject(source, Position::Whole, reason);
            return out;
        }
    };
    let bytes: &[u8] = &bytes;
    let bytes = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes);
    match first_non_ws(bytes) {
        None => {
            // An empty file holds no request; nothing to reject.
        }
        Some(b'{') | Some(b'[') if !looks_like_protobuf(bytes) => {
            decode_json(bytes, source, &mut out)
        }
        Some(_) => decode_protobuf(bytes, source, &mut out),
    }
    for req in &mut out.requests {
        let problems = validate_ids(req);
        for p in problems {
            out.rejected.push(Rejected {
                source: source.to_string(),
                position: Position::Whole,
                reason: p,
                spans: 1,
            });
        }
    }
    out
}

/// A protobuf request starts with field 1 (0x0a, which is also `\n`) and a
/// length varint that may happen to be `{` or `[`; decide by decoding.
fn looks_like_protobuf(bytes: &[u8]) -> bool {
    bytes.first() == Some(&0x0a)
        && ExportTraceServiceRequest::decode(bytes).is_ok_and(|r| span_count(&r) > 0)
}

fn first_non_ws(bytes: &[u8]) -> Option<u8> {
    bytes.iter().copied().find(|b| !b.is_ascii_whitespace())
}

fn decode_json(bytes: &[u8], source: &str, out: &mut Decoded) {
    // A Collector file has one complete JSON document per line; a pretty
    // printed export has one document over many lines. Tell them apart by
    // whether the first non-empty line is a complete document on its own.
    let mut lines = bytes
        .split(|&b| b == b'\n')
        .enumerate()
        .filter(|(_, l)| first_non_ws(l).is_some());
    let first = lines.next();
    let multi = lines.next().is_some();
    let jsonl = multi
        && first.is_some_and(|(_, l)| serde_json::from_slice::<serde::de::IgnoredAny>(l).is_ok());
    if jsonl {
        out.format = Some(Format::OtlpJsonLines);
        for (i, line) in bytes.split(|&b| b == b'\n').enumerate() {
            if first_non_ws(line).is_none() {
                continue;
            }
            decode_json_document(line, source, Position::Line(i + 1), out);
        }
    } else {
        out.format = Some(Format::OtlpJson);
        decode_json_document(bytes, source, Position::Whole, out);
    }
}

/// One JSON document: a request, an array of requests, a Tempo trace (see
/// docs/formats.md), or MLflow trace JSON.
fn decode_json_document(doc: &[u8], source: &str, pos: Position, out: &mut Decoded) {
    let at = |e: &serde_json::Error| match pos {
        Position::Line(n) => Position::Line(n),
        _ => Position::Line(e.line()),
    };
    let decoded = otlp_json::decode(doc);
    // MLflow JSON has no OTLP keys, so it decodes to nothing (or fails).
    let maybe_mlflow = match &decoded {
        Ok(d) => d.spans() == 0 && d.rejected.is_empty() && !d.has_span_lists(),
        Err(_) => true,
    };
    if maybe_mlflow && mlflow::looks_like(doc) {
        match mlflow::decode(doc) {
            Ok(req) => {
                out.format = Some(Format::MlflowTraceJson);
                out.requests.push(req);
            }
            Err(e) => out.reject(source, pos, format!("not valid MLflow trace JSON: {e}")),
        }
        return;
    }
    let d = match decoded {
        Ok(d) => d,
        Err(e) => {
            out.reject(source, at(&e), json_reason(&e));
            return;
        }
    };
    if let Some(why) = d.empty_reason(true) {
        out.reject(source, pos, why);
        return;
    }
    for r in d.rejected {
        out.rejected.push(Rejected {
            source: source.to_string(),
            position: pos.clone(),
            reason: r.reason,
            spans: r.spans,
        });
    }
    out.requests.extend(d.requests);
}

fn json_reason(e: &serde_json::Error) -> String {
    format!("not valid OTLP/JSON: {e}")
}

fn decode_protobuf(bytes: &[u8], source: &str, out: &mut Decoded) {
    match ExportTraceServiceRequest::decode(bytes) {
        Ok(req) if !req.resource_spans.is_empty() || bytes.is_empty() => {
            out.format = Some(Format::OtlpProtobuf);
            out.requests.push(req);
        }
        whole => {
            // The Collector's `format: proto` file: length-prefixed records.
            if let Some(reqs) = decode_records(bytes, source, out) {
                out.format = Some(Format::OtlpProtobufRecords);
                out.requests.extend(reqs);
                return;
            }
            let reason = match whole {
                Ok(_) => {
                    "protobuf decodes to no resource spans: not an OTLP trace export".to_string()
                }
                Err(e) => format!("not OTLP protobuf ({} bytes): {e}", bytes.len()),
            };
            out.reject(source, Position::Whole, reason);
        }
    }
}

/// Length-prefixed records; `None` unless the framing is consistent throughout.
fn decode_records(
    bytes: &[u8],
    source: &str,
    out: &mut Decoded,
) -> Option<Vec<ExportTraceServiceRequest>> {
    let mut offset = 0usize;
    let mut frames = Vec::new();
    while offset < bytes.len() {
        let header: [u8; 4] = bytes.get(offset..offset + 4)?.try_into().ok()?;
        let len = u32::from_be_bytes(header) as usize;
        let body = bytes.get(offset + 4..offset + 4 + len)?;
        frames.push((offset, body));
        offset += 4 + len;
    }
    if frames.is_empty() {
        return None;
    }
    let mut reqs = Vec::with_capacity(frames.len());
    for (n, (at, body)) in frames.into_iter().enumerate() {
        match ExportTraceServiceRequest::decode(body) {
            Ok(r) => reqs.push(r),
            Err(e) => out.reject(
                source,
                Position::Record(n + 1),
                format!("bad protobuf record at byte {at}: {e}"),
            ),
        }
    }
    if reqs.iter().all(|r| r.resource_spans.is_empty()) {
        return None;
    }
    Some(reqs)
}

/// Number of spans in a request.
pub fn span_count(req: &ExportTraceServiceRequest) -> usize {
    req.resource_spans
        .iter()
        .flat_map(|rs| &rs.scope_spans)
        .map(|ss| ss.spans.len())
        .sum()
}

/// Removes spans whose ids have the wrong length and says why for each.
///
/// OTLP/JSON decoders accept hex of any even length, so `"traceId": "abcd"`
/// would otherwise become a 2-byte id.
pub fn validate_ids(req: &mut ExportTraceServiceRequest) -> Vec<String> {
    let mut problems = Vec::new();
    for rs in &mut req.resource_spans {
        for ss in &mut rs.scope_spans {
            ss.spans.retain(|s| {
                let problem = if s.trace_id.len() != 16 || s.trace_id.iter().all(|&b| b == 0) {
                    Some(format!(
                        "trace id of {} bytes (must be 16, not all zero)",
                        s.trace_id.len()
                    ))
                } else if s.span_id.len() != 8 || s.span_id.iter().all(|&b| b == 0) {
                    Some(format!(
                        "span id of {} bytes (must be 8, not all zero)",
                        s.span_id.len()
                    ))
                } else if !s.parent_span_id.is_empty() && s.parent_span_id.len() != 8 {
                    Some(format!(
                        "parent span id of {} bytes (must be 8 or empty)",
                        s.parent_span_id.len()
                    ))
                } else {
                    None
                };
                match problem {
                    Some(p) => {
                        problems.push(format!("span `{}` rejected: {p}", s.name));
                        false
                    }
                    None => true,
                }
            });
        }
    }
    problems
}

#[cfg(test)]
mod tests {
    use super::*;

    fn one_span_json(trace: &str, span: &str) -> String {
        format!(
            r#"{{"resourceSpans":[{{"resource":{{}},"scopeSpans":[{{"spans":[{{"traceId":"{trace}","spanId":"{span}","name":"x","kind":1,"startTimeUnixNano":"5","endTimeUnixNano":6}}]}}]}}]}}"#
        )
    }

    #[test]
    fn json_lines_with_a_bad_line() {
        let good = one_span_json("0123456789abcdef0123456789abcdef", "0123456789abcdef");
        let body = format!("{good}\n{{not json\n\n{good}\n");
        let d = decode(body.as_bytes(), "f.jsonl", &Limits::default());
        assert_eq!(d.format, Some(Format::OtlpJsonLines));
        assert_eq!(d.requests.len(), 2);
        assert_eq!(d.rejected.len(), 1);
        assert_eq!(d.rejected[0].position, Position::Line(2));
    }

    #[test]
    fn snake_case_is_rejected() {
        let d = decode(
            br#"{"resource_spans":[{"scope_spans":[]}]}"#,
            "f.json",
            &Limits::default(),
        );
        assert!(d.requests.is_empty());
        assert!(
            d.rejected[0].reason.contains("zero spans"),
            "{:?}",
            d.rejected
        );
    }

    #[test]
    fn wrong_length_ids_are_rejected_per_span() {
        let d = decode(
            one_span_json("abcd", "0123456789abcdef").as_bytes(),
            "f",
            &Limits::default(),
        );
        assert_eq!(span_count(&d.requests[0]), 0);
        assert!(d.rejected[0].reason.contains("trace id of 2 bytes"));
    }

    #[test]
    fn gzip_roundtrip_and_cap() {
        use std::io::Write;
        let body = one_span_json("0123456789abcdef0123456789abcdef", "0123456789abcdef");
        let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        enc.write_all(body.as_bytes()).unwrap();
        let gz = enc.finish().unwrap();
        assert_eq!(decode(&gz, "f.gz", &Limits::default()).requests.len(), 1);
        let tiny = Limits {
            max_inflated_bytes: 10,
        };
        let d = decode(&gz, "f.gz", &tiny);
        assert!(d.rejected[0].reason.contains("cap"));
        let d = decode(&gz[..gz.len() / 2], "f.gz", &Limits::default());
        assert!(d.rejected[0].reason.contains("gzip"));
    }

    #[test]
    fn protobuf_and_records() {
        let body = one_span_json("0123456789abcdef0123456789abcdef", "0123456789abcdef");
        let req: ExportTraceServiceRequest = serde_json::from_str(&body).unwrap();
        let pb = req.encode_to_vec();
        let d = decode(&pb, "f.pb", &Limits::default());
        assert_eq!(
            (d.format, d.requests.len()),
            (Some(Format::OtlpProtobuf), 1)
        );
        let mut framed = Vec::new();
        for _ in 0..2 {
            framed.extend_from_slice(&(pb.len() as u32).to_be_bytes());
            framed.extend_from_slice(&pb);
        }
        let d = decode(&framed, "f.bin", &Limits::default());
        assert_eq!(d.requests.len(), 2, "{:?}", d.rejected);
        let d = decode(&pb[..pb.len() - 3], "f.pb", &Limits::default());
        assert_eq!(d.requests.len(), 0);
        assert!(d.rejected[0].reason.contains("protobuf"));
    }
}
