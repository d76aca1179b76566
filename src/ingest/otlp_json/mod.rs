//! A tolerant OTLP/JSON decoder: JSON text -> [`Request`] (spans in their
//! compact form, built directly), accepting what the proto3 JSON mapping lets
//! parsers accept and what real exporters and backends write (see
//! docs/formats.md, "OTLP/JSON as accepted"):
//!
//! - enum names or integers (`"kind": "SPAN_KIND_SERVER"` or `2`);
//! - ids as hex (32/16 chars) or base64 (24/12 chars, standard or URL-safe,
//!   padding optional), told apart by length and alphabet;
//! - the pre-1.0 `instrumentationLibrarySpans` / `instrumentationLibrary`;
//! - Tempo's `{"batches": [...]}` and `{"trace": {...}}` documents;
//! - 64-bit integers and doubles as numbers or strings (`"NaN"`, `"Infinity"`);
//! - attributes as one JSON object of plain values (`plain`).
//!
//! It is written as serde visitors over the borrowed input (no intermediate
//! `serde_json::Value`); values nobody reads are skipped with `IgnoredAny`.
//! A span's name and attributes go to a reused
//! [`SpanBuilder`](super::span::SpanBuilder) with their strings borrowed
//! from the input (no prost `Span` in between).
//!
//! Errors are kept to the smallest unit: a bad id, enum name or number
//! rejects the span that holds it (a resource's or scope's bad attribute
//! value, the spans under it) and decoding goes on. Malformed JSON fails
//! the whole document; a JSON type where a message or list belongs
//! (`"spans": 5`) fails the decoding, which [`salvage`] then does again unit
//! by unit, losing only the scope (or resource, or request) that holds it.

mod any_in;
mod attributes;
mod context;
mod document;
mod ids;
mod plain;
mod resource;
mod salvage;
mod scalars;
mod seeds;
mod spans;
mod tape;
#[cfg(test)]
mod tests;

use serde::de::DeserializeSeed;

use self::context::Ctx;
use self::document::DocSeed;
pub(crate) use self::ids::{base64, log_id};
pub use self::salvage::salvage;
use self::tape::TapeDe;
use super::projection::{KeepAll, KeyFilter};
use super::Request;

/// Spans left out of a document, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SpanRejected {
    /// Names the span (or resource / scope) and its place in the document.
    pub reason: String,
    /// Spans lost with it.
    pub spans: usize,
}

/// One decoded JSON document.
#[derive(Debug, Default)]
pub struct Document {
    /// One request per request object (a JSON array of them gives several).
    pub requests: Vec<Request>,
    /// Spans left out, each with its reason.
    pub rejected: Vec<SpanRejected>,
    /// Keys no OTLP/JSON reader knows, where they were (a few, for messages).
    unknown: Vec<String>,
    /// Whether a `resourceSpans` (or Tempo `batches`) key was present.
    containers: bool,
}

impl Document {
    /// Spans decoded (kept).
    pub fn spans(&self) -> usize {
        self.requests.iter().map(super::span_count).sum()
    }

    /// Whether the document had a `resourceSpans` or `batches` key.
    pub fn has_span_lists(&self) -> bool {
        self.containers
    }

    /// Why a document that yields no span at all is not an empty OTLP/JSON
    /// request, or `None` if it is fine. serde-style decoding ignores unknown
    /// keys, so a snake_case or foreign document would otherwise decode to an
    /// empty request without a word. `require_lists`: a document without any
    /// `resourceSpans` key is wrong too (a whole file; an HTTP body or a line
    /// of a JSON-lines file `{}` is a valid empty export).
    pub fn empty_reason(&self, require_lists: bool) -> Option<String> {
        if self.spans() > 0 || !self.rejected.is_empty() {
            return None;
        }
        if !self.unknown.is_empty() {
            let snake = self.unknown.iter().any(|k| k.contains('_'));
            let hint = if snake {
                "OTLP/JSON keys are lowerCamelCase (`resourceSpans`, `scopeSpans`, `traceId`); \
                 snake_case is not OTLP/JSON"
            } else {
                "expected OTLP/JSON (`resourceSpans`) or a Tempo trace (`batches`, `trace`); \
                 another trace format is not OTLP/JSON"
            };
            return Some(format!(
                "JSON decodes to zero spans: unknown keys {}: {hint}",
                self.unknown.join(", ")
            ));
        }
        if require_lists && !self.containers {
            return Some(
                "JSON decodes to zero spans: no `resourceSpans` key (OTLP/JSON keys are \
                 lowerCamelCase; snake_case or another trace format is not OTLP/JSON)"
                    .to_string(),
            );
        }
        None
    }

    /// All requests merged into one (an HTTP body is one export).
    pub fn into_request(self) -> (Request, Vec<SpanRejected>) {
        let mut requests = self.requests.into_iter();
        let mut first = requests.next().unwrap_or_default();
        for r in requests {
            first.resource_spans.extend(r.resource_spans);
        }
        (first, self.rejected)
    }
}

/// Decodes one JSON document (a request, an array of requests, or a Tempo
/// trace), keeping every attribute.
pub fn decode(doc: &[u8]) -> Result<Document, serde_json::Error> {
    decode_with(doc, &KeepAll)
}

/// [`decode`] keeping only the attributes `filter` keeps.
///
/// A document up to 4 MiB (`SIMD_MAX_BYTES`) is parsed by simd-json first: it
/// finds the structure many bytes at a time and unescapes strings in place,
/// so the attributes the filter drops cost almost nothing. If simd-json
/// fails, serde_json decodes the document again, so a bad document gets
/// serde_json's error and position, as it always did.
pub fn decode_with(doc: &[u8], filter: &dyn KeyFilter) -> Result<Document, serde_json::Error> {
    if doc.len() <= SIMD_MAX_BYTES {
        if let Some(d) = decode_simd(doc, filter) {
            return Ok(d);
        }
    }
    decode_serde(doc, filter)
}

/// Larger documents (a whole file that cannot be cut into lines) go to
/// serde_json: simd-json's buffers grow to the largest document and are
/// kept per thread.
const SIMD_MAX_BYTES: usize = 4 << 20;

/// Nesting simd-json takes (serde_json's limit is 128).
const SIMD_MAX_DEPTH: usize = 100;

/// The document decoded with simd-json, or `None` if it fails.
fn decode_simd(doc: &[u8], filter: &dyn KeyFilter) -> Option<Document> {
    /// What a thread reuses from document to document: the padded copy
    /// simd-json unescapes in place (the input stays as it was, for the
    /// fallback), simd-json's buffers, and its tape.
    struct Reused {
        copy: Vec<u8>,
        buffers: Option<simd_json::Buffers>,
        tape: Option<simd_json::Tape<'static>>,
    }
    thread_local! {
        static SIMD: std::cell::RefCell<Reused> = const {
            std::cell::RefCell::new(Reused { copy: Vec::new(), buffers: None, tape: None })
        };
    }
    SIMD.with(|cell| {
        let mut guard = cell.try_borrow_mut().ok()?;
        let Reused {
            copy,
            buffers,
            tape,
        } = &mut *guard;
        copy.clear();
        copy.extend_from_slice(doc);
        copy.resize(doc.len() + simd_json::INPUT_PADDING, b' ');
        // Deeper nesting goes to serde_json, which stops at 128 levels: both
        // parsers then take the same documents.
        let buffers = buffers
            .get_or_insert_with(|| simd_json::Buffers::with_max_depth(doc.len(), SIMD_MAX_DEPTH));
        let mut taped = tape.take().unwrap_or_else(simd_json::Tape::null).reset();
        let decoded = match simd_json::fill_tape_padded(copy, doc.len(), buffers, &mut taped) {
            Ok(()) => {
                let de = TapeDe::new(&taped.0);
                let mut ctx = Ctx::new(filter);
                ctx.tape = Some(&de);
                let requests = DocSeed { ctx: &mut ctx }.deserialize(&de);
                requests.ok().map(|r| ctx.into_document(r))
            }
            Err(_) => None,
        };
        *tape = Some(taped.reset());
        // The buffers grow to the document (about four times its size):
        // kept for the next one only when it was small.
        if doc.len() > SIMD_KEEP_BYTES {
            *guard = Reused {
                copy: Vec::new(),
                buffers: None,
                tape: None,
            };
        }
        decoded
    })
}

/// The largest document whose buffers a thread keeps for the next.
const SIMD_KEEP_BYTES: usize = 256 << 10;

/// The document decoded with serde_json.
fn decode_serde(doc: &[u8], filter: &dyn KeyFilter) -> Result<Document, serde_json::Error> {
    let mut ctx = Ctx::new(filter);
    // Validating UTF-8 once for the whole document is cheaper than serde_json
    // doing it string by string; invalid UTF-8 goes the slice way, which
    // says where.
    let requests = match std::str::from_utf8(doc) {
        Ok(text) => {
            let mut de = serde_json::Deserializer::from_str(text);
            let requests = DocSeed { ctx: &mut ctx }.deserialize(&mut de)?;
            de.end()?;
            requests
        }
        Err(_) => {
            let mut de = serde_json::Deserializer::from_slice(doc);
            let requests = DocSeed { ctx: &mut ctx }.deserialize(&mut de)?;
            de.end()?;
            requests
        }
    };
    Ok(ctx.into_document(requests))
}
