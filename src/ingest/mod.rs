//! Ingest: bytes -> OTLP export requests, their spans in [`span::Span`]'s
//! compact form. Decode only.
//!
//! The format is detected from content (gzip magic, JSON vs protobuf), never
//! from the file extension alone. A bad item (line, file, record) becomes a
//! [`Rejected`] record and decoding goes on with the rest.

pub mod aws_spans;
pub mod console;
pub mod convert;
pub mod files;
pub mod jaeger;
pub mod logs;
pub mod mlflow;
pub mod otlp_json;
pub mod otlp_proto;
pub mod projection;
pub mod span;
pub mod stream;
pub mod zipkin;

use std::fmt;
use std::io::Read;

use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use prost::Message;

pub use span::{Request, Span};

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
    /// Jaeger's JSON model (query API responses, UI downloads).
    JaegerJson,
    /// Zipkin v2 JSON: a list of spans (or a list of such lists).
    ZipkinJson,
    /// The OTel Python SDK's span JSON (`ConsoleSpanExporter`), concatenated objects.
    OtelConsoleJson,
    /// CloudWatch `aws/spans` records (AWS Bedrock AgentCore): one span per JSON record.
    AwsSpansJson,
    /// OTLP log records (`resourceLogs`), read as events of the spans they name.
    OtlpLogs,
}

impl Format {
    /// Every format read, in the order the help and docs/formats.md list
    /// them: the one list of what `PATH` may hold.
    pub const ALL: [Format; 10] = [
        Format::OtlpJson,
        Format::OtlpJsonLines,
        Format::OtlpProtobuf,
        Format::OtlpProtobufRecords,
        Format::MlflowTraceJson,
        Format::JaegerJson,
        Format::ZipkinJson,
        Format::OtelConsoleJson,
        Format::AwsSpansJson,
        Format::OtlpLogs,
    ];

    /// The format's name, as the help and docs/formats.md spell it.
    pub fn name(self) -> &'static str {
        match self {
            Format::OtlpJson => "OTLP/JSON",
            Format::OtlpJsonLines => "OTLP/JSON lines",
            Format::OtlpProtobuf => "OTLP protobuf",
            Format::OtlpProtobufRecords => "OTLP protobuf records",
            Format::MlflowTraceJson => "MLflow trace JSON",
            Format::JaegerJson => "Jaeger JSON",
            Format::ZipkinJson => "Zipkin v2 JSON",
            Format::OtelConsoleJson => "OTel Python console JSON",
            Format::AwsSpansJson => "CloudWatch aws/spans",
            Format::OtlpLogs => "OTLP logs",
        }
    }

    /// What an input in this format looks like, in one line.
    pub fn description(self) -> &'static str {
        match self {
            Format::OtlpJson => "one ExportTraceServiceRequest or a JSON list of them; also Grafana Tempo downloads and Jaeger v3 API answers",
            Format::OtlpJsonLines => "one request per line, as the Collector's file exporter writes",
            Format::OtlpProtobuf => "one binary ExportTraceServiceRequest",
            Format::OtlpProtobufRecords => "the Collector's file exporter with `format: proto` (length-prefixed messages of spans or of log records)",
            Format::MlflowTraceJson => "MLflow's `Trace.to_json()`, one trace or a list",
            Format::JaegerJson => "query API responses and the UI's downloads",
            Format::ZipkinJson => "a list of spans, or a list of such lists",
            Format::OtelConsoleJson => "the OTel Python SDK's ConsoleSpanExporter output",
            Format::AwsSpansJson => "the `aws/spans` log group's records (AWS Bedrock AgentCore), one span per JSON record",
            Format::OtlpLogs => "log records (`resourceLogs`) as OTLP/JSON (a request, or one a line) or one protobuf request; a record with a span id is read as an event of that span, in this file or another",
        }
    }

    /// The `PATHS` argument's long help: the inputs taken and, from
    /// [`Format::ALL`], every format read.
    pub fn paths_help() -> String {
        let mut help = String::from(
            "Trace files or directories (walked recursively); `-` reads stdin.\n\n\
             Formats, found from the content, each also gzip-compressed:",
        );
        for f in Format::ALL {
            help.push_str(&format!("\n  - {}: {}", f.name(), f.description()));
        }
        help
    }
}

/// The result of decoding one input.
#[derive(Debug, Default)]
pub struct Decoded {
    pub requests: Vec<Request>,
    /// Log records, read as span events (the assembler joins them).
    pub logs: logs::Logs,
    pub rejected: Vec<Rejected>,
    pub format: Option<Format>,
}

impl Decoded {
    /// Whether anything came of the input: a span, a log record or a
    /// rejection.
    fn holds_anything(&self) -> bool {
        !self.rejected.is_empty()
            || !self.logs.is_empty()
            || self.requests.iter().any(|r| span_count(r) > 0)
    }

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

/// The encoding of one OTLP export request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wire {
    Protobuf,
    Json,
}

/// Decodes one OTLP export request body (a receiver's, inflated already),
/// with the same reader as a file's request (`otlp_json`: enum names,
/// base64 ids, pre-1.0 and Tempo shapes). Returns the request and the spans
/// the JSON reader left out (bad ids, with reasons). A JSON body with keys
/// but no spans (snake_case, another format) is an error, not an empty
/// success; `{}` is a valid empty export. The error is the reason, for the
/// client.
pub fn decode_request(
    body: &[u8],
    wire: Wire,
) -> Result<(Request, Vec<otlp_json::SpanRejected>), String> {
    decode_request_with(body, wire, &projection::KeepAll)
}

/// [`decode_request`] keeping only the attributes `filter` keeps (the
/// others are skipped undecoded, in both wire formats).
pub fn decode_request_with(
    body: &[u8],
    wire: Wire,
    filter: &dyn projection::KeyFilter,
) -> Result<(Request, Vec<otlp_json::SpanRejected>), String> {
    match wire {
        Wire::Protobuf => otlp_proto::decode_with(body, filter)
            .map(|r| (r, Vec::new()))
            .map_err(|e| {
                format!(
                    "not an OTLP protobuf ExportTraceServiceRequest ({} bytes): {e}",
                    body.len()
                )
            }),
        Wire::Json => {
            // An export request is one object (serde would also read an
            // array, as a struct's fields in order).
            if first_non_ws(body).is_some_and(|b| b != b'{') {
                return Err("not OTLP/JSON: an export request is a JSON object".into());
            }
            let doc =
                otlp_json::decode_with(body, filter).map_err(|e| format!("not OTLP/JSON: {e}"))?;
            if let Some(why) = doc.empty_reason(false) {
                return Err(why);
            }
            Ok(doc.into_request())
        }
    }
}

/// Decodes one whole input (a file's content or stdin).
pub fn decode(bytes: &[u8], source: &str, limits: &Limits) -> Decoded {
    decode_with(bytes, source, limits, &projection::KeepAll)
}

/// [`decode`], keeping only the attributes `filter` keeps.
pub fn decode_with(
    bytes: &[u8],
    source: &str,
    limits: &Limits,
    filter: &dyn projection::KeyFilter,
) -> Decoded {
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
            decode_json(bytes, source, filter, &mut out)
        }
        Some(_) => decode_protobuf(bytes, source, &mut out, filter),
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
        && ExportTraceServiceRequest::decode(bytes).is_ok_and(|r| {
            r.resource_spans
                .iter()
                .flat_map(|rs| &rs.scope_spans)
                .any(|ss| !ss.spans.is_empty())
        })
}

fn first_non_ws(bytes: &[u8]) -> Option<u8> {
    non_blank(bytes).map(|n| bytes[n])
}

/// Where the first byte that is not ASCII whitespace is. Blocks of 32 bytes
/// are tested without branches, which the compiler turns into vector
/// compares: a file of blanks (the gzip bomb) is read at memory speed, not
/// a byte per cycle.
pub(crate) fn non_blank(bytes: &[u8]) -> Option<usize> {
    const BLOCK: usize = 32;
    let mut at = 0;
    for block in bytes.chunks_exact(BLOCK) {
        if !block.iter().fold(true, |all, &c| all & blank(c)) {
            break;
        }
        at += BLOCK;
    }
    bytes[at..].iter().position(|&c| !blank(c)).map(|n| at + n)
}

/// `u8::is_ascii_whitespace`, written with `|` so that a block of tests
/// has no branches.
fn blank(c: u8) -> bool {
    (c == b' ') | (c == b'\n') | (c == b'\r') | (c == b'\t') | (c == 0x0c)
}

fn decode_json(bytes: &[u8], source: &str, filter: &dyn projection::KeyFilter, out: &mut Decoded) {
    // A Collector file has one complete JSON document per line; a pretty
    // printed export has one document over many lines. Tell them apart by
    // whether the first non-empty line is a complete document on its own;
    // if it is not (a malformed first line must not lose the rest), by
    // whether a later line that starts a document at column 0 is one, as
    // long as the whole input is not one document.
    let mut lines = numbered_lines(bytes)
        .map(|(_, l)| l)
        .filter(|l| first_non_ws(l).is_some());
    let first = lines.next();
    let multi = lines.next().is_some();
    let whole_line = |l: &[u8]| serde_json::from_slice::<serde::de::IgnoredAny>(l).is_ok();
    let jsonl = multi
        && (first.is_some_and(whole_line)
            || (serde_json::from_slice::<serde::de::IgnoredAny>(bytes).is_err()
                && numbered_lines(bytes)
                    .map(|(_, l)| l)
                    .filter(|l| l.first() == Some(&b'{'))
                    .take(64)
                    .any(whole_line)));
    if jsonl {
        out.format = Some(Format::OtlpJsonLines);
        for (i, line) in numbered_lines(bytes) {
            if first_non_ws(line).is_none() {
                continue;
            }
            decode_json_document(line, source, Position::Line(i + 1), filter, out);
        }
    } else if concatenated(bytes) {
        // Several pretty-printed documents one after another (the Python
        // SDK's console exporter): each is read, or rejected, on its own.
        out.format = Some(Format::OtlpJson);
        for piece in split_documents(bytes) {
            match piece {
                Ok((range, line)) => {
                    decode_json_document(&bytes[range], source, Position::Line(line), filter, out)
                }
                Err((line, e)) => {
                    out.reject(source, Position::Line(line), format!("not valid JSON: {e}"))
                }
            }
        }
    } else {
        out.format = Some(Format::OtlpJson);
        decode_json_document(bytes, source, Position::Whole, filter, out);
    }
}

/// Whole lines of a JSON-lines input, the first numbered `first_line`
/// (a chunk cut by [`stream`]). Bad span ids are reported with their line.
pub(crate) fn decode_lines(
    bytes: &[u8],
    first_line: usize,
    source: &str,
    filter: &dyn projection::KeyFilter,
    out: &mut Decoded,
) {
    out.format = Some(Format::OtlpJsonLines);
    for (i, line) in numbered_lines(bytes) {
        if first_non_ws(line).is_none() {
            continue;
        }
        let at = Position::Line(first_line + i);
        let from = out.requests.len();
        decode_json_document(line, source, at.clone(), filter, out);
        for req in &mut out.requests[from..] {
            for reason in validate_ids(req) {
                out.rejected.push(Rejected {
                    source: source.to_string(),
                    position: at.clone(),
                    reason,
                    spans: 1,
                });
            }
        }
    }
}

/// The lines of `bytes` (split at `\n`, as `split` would) numbered from 0.
/// memchr finds the line ends many bytes at a time: a byte-by-byte split
/// was a visible share of the decode workers' time.
fn numbered_lines(bytes: &[u8]) -> impl Iterator<Item = (usize, &[u8])> {
    let mut start = 0;
    memchr::memchr_iter(b'\n', bytes)
        .chain(std::iter::once(bytes.len()))
        .enumerate()
        .map(move |(i, end)| {
            let line = &bytes[start..end];
            start = end + 1;
            (i, line)
        })
}

/// The framing of the Collector's `format: proto` files: each record is a
/// 4-byte big-endian length, then that many bytes of one export request
/// (of spans or of log records).
pub(crate) const RECORD_HEADER: usize = 4;

/// The length of the record that `header` (at least [`RECORD_HEADER`]
/// bytes) starts.
pub(crate) fn record_length(header: &[u8]) -> Option<u64> {
    let h: [u8; RECORD_HEADER] = header.get(..RECORD_HEADER)?.try_into().ok()?;
    Some(u64::from(u32::from_be_bytes(h)))
}

/// Whole length-prefixed protobuf records (a chunk cut by [`stream`]), the
/// first numbered `first_record` at byte `offset` of its input. A record is
/// a trace request, or a logs request when it holds no spans and decodes as
/// one (their records go to `out.logs`).
pub(crate) fn decode_records_chunk(
    bytes: &[u8],
    first_record: usize,
    offset: u64,
    source: &str,
    filter: &dyn projection::KeyFilter,
    out: &mut Decoded,
) {
    out.format = Some(Format::OtlpProtobufRecords);
    let mut at = 0usize;
    let mut n = first_record;
    while let Some(len) = record_length(&bytes[at.min(bytes.len())..]) {
        let start = at + RECORD_HEADER;
        let Some(body) = usize::try_from(len)
            .ok()
            .and_then(|len| bytes.get(start..start.checked_add(len)?))
        else {
            break;
        };
        let traces = otlp_proto::decode_with(body, filter);
        let logs = match &traces {
            Ok(req) if span_count(req) > 0 => None,
            _ => logs::decode_proto(body),
        };
        match (traces, logs) {
            (_, Some(req)) => {
                let (mut found, bad) = logs::from_proto(req);
                out.logs.append(&mut found);
                for reason in bad {
                    out.reject(source, Position::Record(n), reason);
                }
            }
            (Ok(mut req), None) => {
                for reason in validate_ids(&mut req) {
                    out.rejected.push(Rejected {
                        source: source.to_string(),
                        position: Position::Record(n),
                        reason,
                        spans: 1,
                    });
                }
                out.requests.push(req);
            }
            (Err(e), None) => out.reject(
                source,
                Position::Record(n),
                format!("bad protobuf record at byte {}: {e}", offset + at as u64),
            ),
        }
        at = start + body.len();
        n += 1;
    }
}

/// Whether `bytes` hold more than one JSON document on separate lines: a
/// `}` followed by `{` with only whitespace (and a line break) between can
/// only be two values, as JSON strings hold no raw line break.
///
/// Walks the line breaks (none in a one-line document, so that costs one
/// `memchr`): the last other byte before a break, carried over blank lines,
/// and the first other byte on the line after it.
fn concatenated(bytes: &[u8]) -> bool {
    let mut last = None;
    let mut from = 0;
    for nl in memchr::memchr_iter(b'\n', bytes) {
        if let Some(i) = bytes[from..nl].iter().rposition(|&b| !blank(b)) {
            last = Some(bytes[from + i]);
        }
        from = nl + 1;
        // Within the next line: a later break is looked at on its own.
        let next = bytes[from..].iter().find(|&&b| b == b'\n' || !blank(b));
        if last == Some(b'}') && next == Some(&b'{') {
            return true;
        }
    }
    false
}

/// A document's byte range and first line, or the line and error of a
/// piece that is not JSON.
type DocPiece = Result<(std::ops::Range<usize>, usize), (usize, serde_json::Error)>;

/// Splits concatenated JSON documents with serde_json's stream reader.
/// After a piece that is not JSON, reading resumes at the next line that starts
/// with `{`, so one broken document costs only itself.
fn split_documents(bytes: &[u8]) -> Vec<DocPiece> {
    let mut out = Vec::new();
    let (mut pos, mut line, mut line_at) = (0usize, 1usize, 0usize);
    let mut line_of = |offset: usize| {
        line += bytes[line_at..offset]
            .iter()
            .filter(|&&b| b == b'\n')
            .count();
        line_at = offset;
        line
    };
    while let Some(skip) = non_blank(&bytes[pos..]) {
        let start = pos + skip;
        let first_line = line_of(start);
        let mut stream = serde_json::Deserializer::from_slice(&bytes[start..])
            .into_iter::<serde::de::IgnoredAny>();
        match stream.next() {
            Some(Ok(_)) => {
                let end = start + stream.byte_offset();
                out.push(Ok((start..end, first_line)));
                pos = end;
            }
            Some(Err(e)) => {
                out.push(Err((first_line + e.line().saturating_sub(1), e)));
                let next = bytes[start..]
                    .windows(2)
                    .position(|w| w == b"\n{")
                    .map(|p| start + p + 1);
                match next {
                    Some(n) => pos = n,
                    None => break,
                }
            }
            None => break,
        }
    }
    out
}

/// One JSON document: a request, an array of requests, a Tempo trace (see
/// docs/formats.md), or MLflow trace JSON.
fn decode_json_document(
    doc: &[u8],
    source: &str,
    pos: Position,
    filter: &dyn projection::KeyFilter,
    out: &mut Decoded,
) {
    let at = |e: &serde_json::Error| match pos {
        Position::Line(n) => Position::Line(n),
        _ => Position::Line(e.line()),
    };
    let otlp = contains(doc, b"\"resourceSpans\"");
    if !otlp && contains(doc, b"\"resourceLogs\"") {
        decode_logs_document(doc, source, pos, out);
        return;
    }
    if !otlp && decode_other_format(doc, source, &pos, out) {
        return;
    }
    let decoded = otlp_json::decode_with(doc, filter);
    // MLflow JSON has no OTLP keys, so it decodes to nothing (or fails).
    let maybe_mlflow = match &decoded {
        Ok(d) => d.spans() == 0 && d.rejected.is_empty() && !d.has_span_lists(),
        Err(_) => true,
    };
    if maybe_mlflow && mlflow::looks_like(doc) {
        match mlflow::decode(doc) {
            Ok(converted) => {
                out.format = Some(Format::MlflowTraceJson);
                for (reason, spans) in converted.rejected {
                    out.rejected.push(Rejected {
                        source: source.to_string(),
                        position: pos.clone(),
                        reason: format!("MLflow trace JSON: {reason}"),
                        spans,
                    });
                }
                if !converted.request.resource_spans.is_empty() {
                    out.requests.push(converted.request.into());
                }
            }
            Err(e) => out.reject(source, pos, format!("not valid MLflow trace JSON: {e}")),
        }
        return;
    }
    let d = match decoded {
        Ok(d) => d,
        Err(e) => {
            // Valid JSON with a wrong type somewhere: only the smallest
            // unit holding it is lost.
            if let Some(d) = otlp_json::salvage(doc, filter) {
                keep_document(d, source, &pos, out);
                return;
            }
            out.reject(source, at(&e), json_reason(&e));
            return;
        }
    };
    keep_document(d, source, &pos, out);
}

/// An OTLP/JSON logs document: its records as span events, the bad ones
/// rejected one by one.
fn decode_logs_document(doc: &[u8], source: &str, pos: Position, out: &mut Decoded) {
    out.format = Some(Format::OtlpLogs);
    match logs::decode_json(doc) {
        Ok((mut found, bad)) => {
            out.logs.append(&mut found);
            for reason in bad {
                out.reject(source, pos.clone(), reason);
            }
        }
        Err(e) => {
            let at = match pos {
                Position::Line(n) => Position::Line(n),
                _ => Position::Line(e.line()),
            };
            out.reject(source, at, format!("not valid OTLP/JSON logs: {e}"));
        }
    }
}

/// Keeps a decoded OTLP/JSON document's requests and reports the spans it
/// left out; a document with nothing in it is rejected with the reason. A
/// line of a JSON-lines file may be an empty export (`{}`: a receiver writes
/// each request it gets, and some exporters send an empty one first); a
/// whole file needs `resourceSpans`, and a file that gives no span at all
/// is an error anyway.
fn keep_document(d: otlp_json::Document, source: &str, pos: &Position, out: &mut Decoded) {
    let whole = !matches!(pos, Position::Line(_));
    if let Some(why) = d.empty_reason(whole) {
        out.reject(source, pos.clone(), why);
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

/// Jaeger, Zipkin and OTel console JSON, told apart by shape (see
/// docs/formats.md). `false` when the document is none of them.
fn decode_other_format(doc: &[u8], source: &str, pos: &Position, out: &mut Decoded) -> bool {
    // Cheap key tests first, so other documents are not parsed twice.
    let keys: [&[u8]; 4] = [
        b"\"traceID\"",
        b"\"traceId\"",
        b"\"trace_id\"",
        b"\"errors\"",
    ];
    if !contains_any(doc, &keys) {
        return false;
    }
    let Ok(v) = serde_json::from_slice::<serde_json::Value>(doc) else {
        return false;
    };
    type Convert = fn(&serde_json::Value) -> convert::Converted;
    let (format, label, to_request): (Format, &str, Convert) = if jaeger::looks_like(&v) {
        (Format::JaegerJson, "Jaeger JSON", jaeger::to_request)
    } else if aws_spans::looks_like(&v) {
        (
            Format::AwsSpansJson,
            "CloudWatch aws/spans record",
            aws_spans::to_request,
        )
    } else if zipkin::looks_like(&v) {
        (Format::ZipkinJson, "Zipkin v2 JSON", zipkin::to_request)
    } else if console::looks_like(&v) {
        (
            Format::OtelConsoleJson,
            "OTel console span JSON",
            console::to_request,
        )
    } else {
        return false;
    };
    out.format = Some(format);
    match to_request(&v) {
        Ok((req, problems)) => {
            let req = Request::from(req);
            let explained = !problems.is_empty();
            for p in problems {
                out.rejected.push(Rejected {
                    source: source.to_string(),
                    position: pos.clone(),
                    reason: format!("{label} {p}"),
                    spans: p.spans,
                });
            }
            if span_count(&req) > 0 {
                out.requests.push(req);
            } else if !explained {
                out.reject(source, pos.clone(), format!("{label} holds no spans"));
            }
        }
        Err(e) => out.reject(source, pos.clone(), format!("{label}: {e}")),
    }
    true
}

fn json_reason(e: &serde_json::Error) -> String {
    format!("not valid OTLP/JSON: {e}")
}

fn decode_protobuf(
    bytes: &[u8],
    source: &str,
    out: &mut Decoded,
    filter: &dyn projection::KeyFilter,
) {
    match otlp_proto::decode_with(bytes, filter) {
        Ok(req) if !req.resource_spans.is_empty() || bytes.is_empty() => {
            out.format = Some(Format::OtlpProtobuf);
            out.requests.push(req);
        }
        whole => {
            // The Collector's `format: proto` file: length-prefixed records.
            if decode_records(bytes, source, out, filter) {
                return;
            }
            if let Some(req) = logs::decode_proto(bytes) {
                out.format = Some(Format::OtlpLogs);
                let (mut found, bad) = logs::from_proto(req);
                out.logs.append(&mut found);
                for reason in bad {
                    out.reject(source, Position::Whole, reason);
                }
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

/// Length-prefixed records, decoded as a stream's chunk is
/// ([`decode_records_chunk`]); `false` (and nothing kept) unless the framing
/// is consistent throughout and some record holds spans.
fn decode_records(
    bytes: &[u8],
    source: &str,
    out: &mut Decoded,
    filter: &dyn projection::KeyFilter,
) -> bool {
    let mut offset = 0u64;
    let total = bytes.len() as u64;
    while offset < total {
        let Some(len) = record_length(&bytes[offset as usize..]) else {
            return false;
        };
        if total - offset - (RECORD_HEADER as u64) < len {
            return false;
        }
        offset += RECORD_HEADER as u64 + len;
    }
    let mut records = Decoded::default();
    decode_records_chunk(bytes, 1, 0, source, filter, &mut records);
    if records.logs.is_empty() && records.requests.iter().all(|r| r.resource_spans.is_empty()) {
        return false;
    }
    out.format = records.format;
    out.requests.extend(records.requests);
    out.rejected.extend(records.rejected);
    out.logs.append(&mut records.logs);
    true
}

fn contains(hay: &[u8], needle: &[u8]) -> bool {
    contains_any(hay, &[needle])
}

/// Whether `hay` holds one of `needles`, all of which start with the same
/// byte (here `"`): one pass that only compares where that byte is.
fn contains_any(hay: &[u8], needles: &[&[u8]]) -> bool {
    let Some(&first) = needles.first().and_then(|n| n.first()) else {
        return false;
    };
    let mut i = 0;
    while let Some(off) = memchr::memchr(first, &hay[i..]) {
        let rest = &hay[i + off..];
        if needles.iter().any(|n| rest.starts_with(n)) {
            return true;
        }
        i += off + 1;
    }
    false
}

/// Number of spans in a request.
pub fn span_count(req: &Request) -> usize {
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
pub fn validate_ids(req: &mut Request) -> Vec<String> {
    let mut problems = Vec::new();
    for rs in &mut req.resource_spans {
        for ss in &mut rs.scope_spans {
            ss.spans.retain(|s| {
                let problem = if s.trace_id.len() != 16 || s.trace_id.is_zero() {
                    Some(format!(
                        "trace id of {} bytes (must be 16, not all zero)",
                        s.trace_id.len()
                    ))
                } else if s.span_id.len() != 8 || s.span_id.is_zero() {
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
                        problems.push(format!("span `{}` rejected: {p}", s.name()));
                        false
                    }
                    None => true,
                }
            });
        }
    }
    problems
}

/// A string attribute, for tests that write spans by hand.
#[cfg(test)]
pub(crate) fn str_kv(key: &str, v: &str) -> opentelemetry_proto::tonic::common::v1::KeyValue {
    use opentelemetry_proto::tonic::common::v1::{any_value, AnyValue, KeyValue};
    KeyValue {
        key: key.to_string(),
        value: Some(AnyValue {
            value: Some(any_value::Value::StringValue(v.to_string())),
        }),
        ..Default::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_split_like_split_on_newline() {
        for text in ["", "\n", "a", "a\n", "a\nb", "\n\na\n\nbc\n", "a\r\nb"] {
            let b = text.as_bytes();
            let want: Vec<(usize, &[u8])> = b.split(|&c| c == b'\n').enumerate().collect();
            assert_eq!(numbered_lines(b).collect::<Vec<_>>(), want, "{text:?}");
        }
    }

    #[test]
    fn non_blank_finds_what_is_ascii_whitespace_would() {
        // Every position and every byte value, behind runs longer than a block.
        for len in [0, 1, 31, 32, 33, 64, 100] {
            for at in 0..=len {
                for c in 0..=255u8 {
                    let mut b = vec![b' '; len];
                    b.extend_from_slice(b"\t\n\r\x0c");
                    b.rotate_right(at.min(4));
                    if at < b.len() {
                        b[at] = c;
                    }
                    let want = b.iter().position(|c| !c.is_ascii_whitespace());
                    assert_eq!(non_blank(&b), want, "len {len} at {at} byte {c:#x}");
                }
            }
        }
    }

    #[test]
    fn concatenated_means_a_close_then_an_open_across_a_line_break() {
        // The definition, spelled out: `}`, blanks including a line break, `{`.
        let slow = |b: &[u8]| {
            (0..b.len()).any(|i| {
                let gap = b[i + 1..]
                    .iter()
                    .take_while(|c| c.is_ascii_whitespace())
                    .count();
                b[i] == b'}'
                    && b.get(i + 1 + gap) == Some(&b'{')
                    && b[i + 1..i + 1 + gap].contains(&b'\n')
            })
        };
        let alphabet = b"{}\n \t\ra";
        let mut seed = 7u64;
        for len in 0..400 {
            let b: Vec<u8> = (0..len % 40)
                .map(|_| {
                    seed = seed
                        .wrapping_mul(6364136223846793005)
                        .wrapping_add(1442695040888963407);
                    alphabet[(seed >> 33) as usize % alphabet.len()]
                })
                .collect();
            assert_eq!(
                concatenated(&b),
                slow(&b),
                "{:?}",
                String::from_utf8_lossy(&b)
            );
        }
        assert!(concatenated(b"{\"a\":1}\n\n  \n{\"b\":2}"));
        assert!(!concatenated(b"{\"a\":{}}\n"));
    }

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
    fn request_bodies_decode_with_the_same_checks() {
        assert!(decode_request(b"{}", Wire::Json).is_ok());
        assert!(decode_request(br#"{"resourceSpans": []}"#, Wire::Json).is_ok());
        let e = decode_request(br#"{"resource_spans": [{"scope_spans": []}]}"#, Wire::Json)
            .unwrap_err();
        assert!(e.contains("resource_spans"), "{e}");
        assert!(decode_request(b"\x0a\x05abc", Wire::Protobuf).is_err());
        assert!(decode_request(b"[]", Wire::Json).is_err());
        assert!(decode_request(b"", Wire::Protobuf).is_ok());
    }

    #[test]
    fn one_bad_request_of_an_array_loses_only_itself() {
        let good = one_span_json("0123456789abcdef0123456789abcdef", "0123456789abcdef");
        let bad = r#"{"resourceSpans": [{"scopeSpans": [{"spans": 5}]}]}"#;
        let body = format!("[{good}, {bad}, {good}]");
        let d = decode(body.as_bytes(), "f.json", &Limits::default());
        assert_eq!(d.requests.len(), 2, "{:?}", d.rejected);
        assert_eq!(d.rejected.len(), 1);
        assert!(
            d.rejected[0].reason.contains("request #2"),
            "{:?}",
            d.rejected
        );
    }

    #[test]
    fn a_malformed_first_line_loses_only_itself() {
        let good = one_span_json("0123456789abcdef0123456789abcdef", "0123456789abcdef");
        let body = format!("{{\"resourceSpans\": [oops\n{good}\n{good}\n");
        let d = decode(body.as_bytes(), "f.jsonl", &Limits::default());
        assert_eq!(d.format, Some(Format::OtlpJsonLines));
        assert_eq!(d.requests.len(), 2, "{:?}", d.rejected);
        assert_eq!(d.rejected.len(), 1);
        assert_eq!(d.rejected[0].position, Position::Line(1));
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

    /// What `ConsoleSpanExporter` prints for one span (`json.dumps(indent=4)`).
    fn console_span(span_id: &str, name: &str) -> String {
        format!(
            r#"{{
    "name": "{name}",
    "context": {{
        "trace_id": "0x5b8efff798038103d269b633813fc60c",
        "span_id": "0x{span_id}",
        "trace_state": "[]"
    }},
    "kind": "SpanKind.INTERNAL",
    "parent_id": null,
    "start_time": "2024-05-01T12:00:00.100000Z",
    "end_time": "2024-05-01T12:00:00.101500Z",
    "status": {{
        "status_code": "UNSET"
    }},
    "attributes": {{}},
    "events": [],
    "links": [],
    "resource": {{
        "attributes": {{
            "service.name": "demo"
        }},
        "schema_url": ""
    }}
}}
"#
        )
    }

    #[test]
    fn concatenated_console_objects_and_a_broken_one() {
        let good = console_span("eee19b7ec3c1b174", "a");
        let lines = good.lines().count();
        let broken = good.replace(
            "\"kind\": \"SpanKind.INTERNAL\",",
            "\"kind\": SpanKind.INTERNAL,",
        );
        let bad_id = console_span("xyz", "bad_id");
        let body = format!(
            "{good}{broken}{bad_id}{}",
            console_span("eee19b7ec3c1b176", "c")
        );
        let d = decode(body.as_bytes(), "spans.log", &Limits::default());
        assert_eq!(d.format, Some(Format::OtelConsoleJson));
        assert_eq!(d.requests.len(), 2, "{:?}", d.rejected);
        assert_eq!(d.rejected.len(), 2, "{:?}", d.rejected);
        // The broken object: its line (the bad token's), the others kept.
        assert_eq!(d.rejected[0].position, Position::Line(lines + 8));
        assert!(d.rejected[0].reason.contains("not valid JSON"));
        assert_eq!(d.rejected[1].position, Position::Line(2 * lines + 1));
        assert!(
            d.rejected[1].reason.contains("span `bad_id` rejected")
                && d.rejected[1].reason.contains("`0xxyz`"),
            "{:?}",
            d.rejected[1]
        );
    }

    #[test]
    fn formats_are_told_apart_by_shape_and_gzip_works() {
        use std::io::Write;
        let jaeger = r#"{"data": [{"traceID": "5b8efff798038103d269b633813fc60c", "spans": [
            {"traceID": "5b8efff798038103d269b633813fc60c", "spanID": "eee19b7ec3c1b174",
             "operationName": "x", "references": [], "startTime": 1, "duration": 1,
             "tags": [{"key": "info", "type": "string", "value": "data"}], "processID": "p1"}],
            "processes": {"p1": {"serviceName": "svc"}}}], "total": 0, "limit": 0, "offset": 0, "errors": null}"#;
        let zipkin = r#"[{"traceId": "5b8efff798038103d269b633813fc60c", "id": "eee19b7ec3c1b174",
            "name": "x", "timestamp": 1, "duration": 1, "localEndpoint": {"serviceName": "svc"}}]"#;
        let mlflow = br#"{"info": {"request_id": "tr-0123456789abcdef0123456789abcdef"},
          "data": {"spans": [{"name": "t", "context": {"span_id": "0x00000000000000aa",
            "trace_id": "0x0123456789abcdef0123456789abcdef"}, "parent_id": null,
            "start_time": 5, "end_time": 9, "attributes": {}, "events": []}]}}"#;
        let otlp = one_span_json("0123456789abcdef0123456789abcdef", "0123456789abcdef");
        let console = console_span("eee19b7ec3c1b174", "a");
        for (body, format) in [
            (jaeger.as_bytes(), Format::JaegerJson),
            (zipkin.as_bytes(), Format::ZipkinJson),
            (&mlflow[..], Format::MlflowTraceJson),
            (otlp.as_bytes(), Format::OtlpJson),
            (console.as_bytes(), Format::OtelConsoleJson),
        ] {
            let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
            gz.write_all(body).unwrap();
            for bytes in [body.to_vec(), gz.finish().unwrap()] {
                let d = decode(&bytes, "f", &Limits::default());
                assert_eq!(d.format, Some(format), "{:?}", d.rejected);
                assert!(d.rejected.is_empty(), "{format:?}: {:?}", d.rejected);
                assert_eq!(d.requests.iter().map(span_count).sum::<usize>(), 1);
            }
        }
    }

    #[test]
    fn span_shaped_documents_that_yield_nothing_are_rejected() {
        for (body, why) in [
            (
                r#"{"data": [], "total": 0, "limit": 0, "offset": 0, "errors": null}"#,
                "no traces",
            ),
            (
                r#"{"data": [{"traceID": "ab", "spans": [], "processes": {}}]}"#,
                "no trace holds any span",
            ),
            (r#"[[], [{"traceId": "ab", "id": ""}]]"#, "no id"),
        ] {
            let d = decode(body.as_bytes(), "f.json", &Limits::default());
            assert!(d.requests.is_empty());
            assert_eq!(d.rejected.len(), 1, "{body}");
            assert!(d.rejected[0].reason.contains(why), "{:?}", d.rejected);
        }
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
