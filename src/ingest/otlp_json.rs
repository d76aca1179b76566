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
//! - 64-bit integers and doubles as numbers or strings (`"NaN"`, `"Infinity"`).
//!
//! It is written as serde visitors over the borrowed input (no intermediate
//! `serde_json::Value`); values nobody reads are skipped with `IgnoredAny`.
//! A span's name and attributes go to a reused [`SpanBuilder`] with their
//! strings borrowed from the input (no prost `Span` in between).
//!
//! Errors are kept to the smallest unit: a bad id, enum name or number
//! rejects the span that holds it (a resource's or scope's bad attribute
//! value, the spans under it) and decoding goes on. Only malformed JSON, or
//! a JSON type where a message or list belongs (`"spans": 5`), fails the
//! whole document.

use std::borrow::Cow;
use std::fmt;

use opentelemetry_proto::tonic::common::v1::{
    any_value, AnyValue, ArrayValue, EntityRef, InstrumentationScope, KeyValue, KeyValueList,
};
use opentelemetry_proto::tonic::resource::v1::Resource;
use opentelemetry_proto::tonic::trace::v1::{span, Status};
use serde::de::{self, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};

use super::projection::{holds_json, AttrsOf, KeepAll, KeyFilter};
use super::span::{Id, Input, ResourceSpans, ScopeSpans, Span, SpanBuilder};
use super::Request;

// ------------------------------------------------------------------ API

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
    /// `resourceSpans` key is wrong too (a file; an HTTP body `{}` is a valid
    /// empty export).
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
/// A document up to [`SIMD_MAX_BYTES`] is parsed by simd-json first: it
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
                let mut de = simd_json::Deserializer::from_tape(taped);
                let mut ctx = Ctx::new(filter);
                let requests = DocSeed { ctx: &mut ctx }.deserialize(&mut de);
                taped = de.into_tape();
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

// ------------------------------------------------------------ context

/// State threaded through the visitors: where we are (for messages), what
/// was rejected, which unknown keys were seen.
struct Ctx<'f> {
    filter: &'f dyn KeyFilter,
    /// `""`, `"[3]."` (array element) or `"trace."` (Tempo v2).
    prefix: String,
    rs_key: &'static str,
    r: usize,
    ss_key: &'static str,
    s: usize,
    rejected: Vec<SpanRejected>,
    unknown: Vec<String>,
    containers: bool,
    /// Gathers each span's name and attributes; every span finishes it
    /// (kept or rejected), so it is empty between spans.
    sb: SpanBuilder,
}

thread_local! {
    /// A thread's [`SpanBuilder`], its buffers reused from document to
    /// document (a JSON-lines file is one document per line). Given back
    /// only by a decode that succeeded: one that failed may have stopped
    /// mid-span, and its builder is dropped.
    static SPAN_BUILDER: std::cell::Cell<SpanBuilder> = std::cell::Cell::new(SpanBuilder::default());
}

impl<'f> Ctx<'f> {
    fn new(filter: &'f dyn KeyFilter) -> Self {
        Ctx {
            filter,
            prefix: String::new(),
            rs_key: "resourceSpans",
            r: 0,
            ss_key: "scopeSpans",
            s: 0,
            rejected: Vec::new(),
            unknown: Vec::new(),
            containers: false,
            sb: SPAN_BUILDER.take(),
        }
    }

    fn into_document(self, requests: Vec<Request>) -> Document {
        SPAN_BUILDER.set(self.sb);
        Document {
            requests,
            rejected: self.rejected,
            unknown: self.unknown,
            containers: self.containers,
        }
    }
}

const MAX_UNKNOWN: usize = 8;

impl Ctx<'_> {
    fn rs_path(&self) -> String {
        format!("{}{}[{}]", self.prefix, self.rs_key, self.r)
    }

    fn ss_path(&self) -> String {
        format!("{}.{}[{}]", self.rs_path(), self.ss_key, self.s)
    }

    fn unknown_key(&mut self, key: &str, place: impl FnOnce(&Self) -> String) {
        if self.unknown.len() < MAX_UNKNOWN {
            let p = place(self);
            self.unknown.push(format!("`{key}` ({p})"));
        }
    }
}

/// The first problem found in one unit (span, resource, scope).
#[derive(Default)]
struct Fault(Option<String>);

impl Fault {
    fn note(&mut self, msg: impl FnOnce() -> String) {
        if self.0.is_none() {
            self.0 = Some(msg());
        }
    }
}

// ------------------------------------------------------------- scalars

/// A map key, borrowed from the input unless it has escapes.
struct Key<'de>(Cow<'de, str>);

impl<'de> de::Deserialize<'de> for Key<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Key<'de>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a key")
            }
            fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Key<'de>, E> {
                Ok(Key(Cow::Borrowed(v)))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Key<'de>, E> {
                Ok(Key(Cow::Owned(v.to_owned())))
            }
            fn visit_string<E: de::Error>(self, v: String) -> Result<Key<'de>, E> {
                Ok(Key(Cow::Owned(v)))
            }
        }
        d.deserialize_str(V)
    }
}

/// Any JSON scalar. Scalar fields are read as this and converted, so that a
/// wrong value becomes a [`Fault`] of its unit instead of a serde error
/// that would fail the whole document.
enum Scalar<'de> {
    Null,
    Bool(bool),
    U64(u64),
    I64(i64),
    F64(f64),
    Str(Cow<'de, str>),
    /// An object or array where a scalar belongs (skipped).
    Composite(&'static str),
}

impl<'de> de::Deserialize<'de> for Scalar<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Scalar<'de>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a JSON value")
            }
            fn visit_unit<E: de::Error>(self) -> Result<Scalar<'de>, E> {
                Ok(Scalar::Null)
            }
            fn visit_none<E: de::Error>(self) -> Result<Scalar<'de>, E> {
                Ok(Scalar::Null)
            }
            fn visit_bool<E: de::Error>(self, v: bool) -> Result<Scalar<'de>, E> {
                Ok(Scalar::Bool(v))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Scalar<'de>, E> {
                Ok(Scalar::U64(v))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Scalar<'de>, E> {
                Ok(Scalar::I64(v))
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<Scalar<'de>, E> {
                Ok(Scalar::F64(v))
            }
            fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Scalar<'de>, E> {
                Ok(Scalar::Str(Cow::Borrowed(v)))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Scalar<'de>, E> {
                Ok(Scalar::Str(Cow::Owned(v.to_owned())))
            }
            fn visit_string<E: de::Error>(self, v: String) -> Result<Scalar<'de>, E> {
                Ok(Scalar::Str(Cow::Owned(v)))
            }
            fn visit_map<A: MapAccess<'de>>(self, mut m: A) -> Result<Scalar<'de>, A::Error> {
                while m.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
                Ok(Scalar::Composite("an object"))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut s: A) -> Result<Scalar<'de>, A::Error> {
                while s.next_element::<IgnoredAny>()?.is_some() {}
                Ok(Scalar::Composite("an array"))
            }
        }
        d.deserialize_any(V)
    }
}

impl fmt::Display for Scalar<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Scalar::Null => f.write_str("null"),
            Scalar::Bool(b) => write!(f, "{b}"),
            Scalar::U64(n) => write!(f, "{n}"),
            Scalar::I64(n) => write!(f, "{n}"),
            Scalar::F64(n) => write!(f, "{n}"),
            Scalar::Str(s) => write!(f, "\"{}\"", clip(s)),
            Scalar::Composite(what) => f.write_str(what),
        }
    }
}

/// At most 40 characters of `s`, for messages.
fn clip(s: &str) -> Cow<'_, str> {
    match s.char_indices().nth(40) {
        Some((i, _)) => Cow::Owned(format!("{}...", &s[..i])),
        None => Cow::Borrowed(s),
    }
}

/// A float that is a whole number in `[lo, hi]` (proto3 JSON accepts
/// `1e3` and `"1e3"` for integers).
fn whole(f: f64, lo: f64, hi: f64) -> Option<f64> {
    (f.fract() == 0.0 && f >= lo && f <= hi).then_some(f)
}

fn to_u64(v: &Scalar) -> Option<u64> {
    match v {
        Scalar::Null => Some(0),
        Scalar::U64(n) => Some(*n),
        Scalar::I64(_) | Scalar::Bool(_) | Scalar::Composite(_) => None,
        Scalar::F64(f) => whole(*f, 0.0, u64::MAX as f64).map(|f| f as u64),
        Scalar::Str(s) => {
            let s = s.trim();
            s.parse::<u64>().ok().or_else(|| {
                s.parse::<f64>()
                    .ok()
                    .and_then(|f| whole(f, 0.0, u64::MAX as f64))
                    .map(|f| f as u64)
            })
        }
    }
}

fn to_i64(v: &Scalar) -> Option<i64> {
    match v {
        Scalar::Null => Some(0),
        Scalar::U64(n) => i64::try_from(*n).ok(),
        Scalar::I64(n) => Some(*n),
        Scalar::Bool(_) | Scalar::Composite(_) => None,
        Scalar::F64(f) => whole(*f, i64::MIN as f64, i64::MAX as f64).map(|f| f as i64),
        Scalar::Str(s) => {
            let s = s.trim();
            s.parse::<i64>().ok().or_else(|| {
                s.parse::<f64>()
                    .ok()
                    .and_then(|f| whole(f, i64::MIN as f64, i64::MAX as f64))
                    .map(|f| f as i64)
            })
        }
    }
}

fn to_f64(v: &Scalar) -> Option<f64> {
    match v {
        Scalar::Null => Some(0.0),
        Scalar::U64(n) => Some(*n as f64),
        Scalar::I64(n) => Some(*n as f64),
        Scalar::F64(f) => Some(*f),
        Scalar::Bool(_) | Scalar::Composite(_) => None,
        Scalar::Str(s) => match s.trim() {
            "NaN" => Some(f64::NAN),
            "Infinity" => Some(f64::INFINITY),
            "-Infinity" => Some(f64::NEG_INFINITY),
            t => t.parse::<f64>().ok(),
        },
    }
}

fn u64_field(v: Scalar, field: &str, fault: &mut Fault) -> u64 {
    to_u64(&v).unwrap_or_else(|| {
        fault.note(|| format!("{field} {v} is not an unsigned 64-bit integer"));
        0
    })
}

fn u32_field(v: Scalar, field: &str, fault: &mut Fault) -> u32 {
    match to_u64(&v).map(u32::try_from) {
        Some(Ok(n)) => n,
        _ => {
            fault.note(|| format!("{field} {v} is not an unsigned 32-bit integer"));
            0
        }
    }
}

fn string_field(v: Scalar, field: &str, fault: &mut Fault) -> String {
    str_field(v, field, fault).into_owned()
}

/// [`string_field`], borrowed from the input where it can be.
fn str_field<'de>(v: Scalar<'de>, field: &str, fault: &mut Fault) -> Cow<'de, str> {
    match v {
        Scalar::Str(s) => s,
        Scalar::Null => Cow::Borrowed(""),
        other => {
            fault.note(|| format!("{field} {other} is not a string"));
            Cow::Borrowed("")
        }
    }
}

/// An enum: its name, its number, or (leniently) the name without its
/// prefix in any case (`"SERVER"`, `"Error"`).
fn enum_field(v: Scalar, field: &str, names: &[&str], fault: &mut Fault) -> i32 {
    let found = match &v {
        Scalar::Null => Some(0),
        Scalar::U64(_) | Scalar::I64(_) | Scalar::F64(_) => {
            to_i64(&v).and_then(|n| i32::try_from(n).ok())
        }
        Scalar::Str(s) => enum_by_name(s, names).or_else(|| s.trim().parse::<i32>().ok()),
        Scalar::Bool(_) | Scalar::Composite(_) => None,
    };
    found.unwrap_or_else(|| {
        fault.note(|| {
            format!(
                "{field} {v} is not one of {} or an integer",
                names.join(", ")
            )
        });
        0
    })
}

fn enum_by_name(s: &str, names: &[&str]) -> Option<i32> {
    if let Some(i) = names.iter().position(|n| *n == s) {
        return i32::try_from(i).ok();
    }
    let prefix_len = names
        .first()
        .and_then(|n| n.rfind('_'))
        .map_or(0, |i| i + 1);
    names
        .iter()
        .position(|n| n.eq_ignore_ascii_case(s) || n[prefix_len..].eq_ignore_ascii_case(s))
        .and_then(|i| i32::try_from(i).ok())
}

/// Index = the enum's number (both enums are dense from 0).
const SPAN_KINDS: &[&str] = &[
    "SPAN_KIND_UNSPECIFIED",
    "SPAN_KIND_INTERNAL",
    "SPAN_KIND_SERVER",
    "SPAN_KIND_CLIENT",
    "SPAN_KIND_PRODUCER",
    "SPAN_KIND_CONSUMER",
];
const STATUS_CODES: &[&str] = &["STATUS_CODE_UNSET", "STATUS_CODE_OK", "STATUS_CODE_ERROR"];

// ----------------------------------------------------------------- ids

/// Which id, for messages and its length.
#[derive(Clone, Copy)]
enum IdKind {
    Trace,
    Span,
    Parent,
    LinkTrace,
    LinkSpan,
}

impl IdKind {
    fn len(self) -> usize {
        match self {
            IdKind::Trace | IdKind::LinkTrace => 16,
            _ => 8,
        }
    }
    fn name(self) -> &'static str {
        match self {
            IdKind::Trace => "trace id",
            IdKind::Span => "span id",
            IdKind::Parent => "parent span id",
            IdKind::LinkTrace => "link trace id",
            IdKind::LinkSpan => "link span id",
        }
    }
}

/// Decodes an id as hex or base64 (see the module docs). An empty parent
/// id is "no parent" (`Ok(empty)`).
fn id_field(v: Scalar, kind: IdKind, fault: &mut Fault) -> Vec<u8> {
    let s = match &v {
        Scalar::Str(s) => s.as_ref(),
        Scalar::Null => "",
        other => {
            fault.note(|| format!("{} {other} is not a string", kind.name()));
            return Vec::new();
        }
    };
    match decode_id(s, kind) {
        Ok(id) => id,
        Err(e) => {
            fault.note(|| e);
            Vec::new()
        }
    }
}

/// [`id_field`] as a span's [`Id`]. Hex of the right length, what nearly
/// every exporter writes, is decoded in place (no `Vec` per id).
fn span_id_field(v: Scalar, kind: IdKind, fault: &mut Fault) -> Id {
    if let Scalar::Str(s) = &v {
        // As `decode_id` reads hex (anything else goes the full way).
        let h = s.strip_prefix("0x").unwrap_or(s).as_bytes();
        let mut bytes = [0u8; 16];
        if let Some(out) = bytes.get_mut(..kind.len()) {
            if h.len() == 2 * out.len() && hex_into(h, out) {
                return Id::new(out);
            }
        }
    }
    Id::new(&id_field(v, kind, fault))
}

fn decode_id(s: &str, kind: IdKind) -> Result<Vec<u8>, String> {
    let want = kind.len();
    if s.is_empty() {
        return match kind {
            IdKind::Parent => Ok(Vec::new()),
            _ => Err(format!("no {}", kind.name())),
        };
    }
    let h = s.strip_prefix("0x").unwrap_or(s).as_bytes();
    if h.len() == 2 * want {
        if let Some(id) = hex(h) {
            return Ok(id);
        }
    } else if let Some(id) = base64(s.as_bytes()) {
        if id.len() == want {
            return Ok(id);
        }
    }
    let tried = format!(
        "tried hex ({} chars of 0-9a-f) and base64 ({} chars, {} unpadded)",
        2 * want,
        4 * want.div_ceil(3),
        (4 * want).div_ceil(3)
    );
    Err(if let Some(b) = hex(h) {
        format!(
            "{} of {} bytes as hex \"{}\" (must be {want}; {tried})",
            kind.name(),
            b.len(),
            clip(s)
        )
    } else if let Some(b) = base64(s.as_bytes()) {
        format!(
            "{} of {} bytes as base64 \"{}\" (must be {want}; {tried})",
            kind.name(),
            b.len(),
            clip(s)
        )
    } else {
        format!(
            "{} \"{}\" is neither hex nor base64 ({tried})",
            kind.name(),
            clip(s)
        )
    })
}

/// Hex digit values; 0xff for anything else.
const HEX: [u8; 256] = {
    let mut t = [0xffu8; 256];
    let mut i = 0;
    while i < 10 {
        t[b'0' as usize + i] = i as u8;
        i += 1;
    }
    let mut i = 0;
    while i < 6 {
        t[b'a' as usize + i] = 10 + i as u8;
        t[b'A' as usize + i] = 10 + i as u8;
        i += 1;
    }
    t
};

/// Hex of even length (either case).
fn hex(s: &[u8]) -> Option<Vec<u8>> {
    if !s.len().is_multiple_of(2) {
        return None;
    }
    let mut out = vec![0; s.len() / 2];
    hex_into(s, &mut out).then_some(out)
}

/// `s` (hex of twice `out`'s length) decoded into `out`; false if it is
/// not hex.
fn hex_into(s: &[u8], out: &mut [u8]) -> bool {
    for (o, p) in out.iter_mut().zip(s.chunks_exact(2)) {
        let (hi, lo) = (HEX[usize::from(p[0])], HEX[usize::from(p[1])]);
        if (hi | lo) & 0xf0 != 0 {
            return false;
        }
        *o = (hi << 4) | lo;
    }
    true
}

/// Base64, standard (`+/`) or URL-safe (`-_`) alphabet but not a mix, with
/// or without `=` padding (padded input must be whole 4-char groups).
fn base64(s: &[u8]) -> Option<Vec<u8>> {
    let body = s
        .strip_suffix(b"==")
        .or_else(|| s.strip_suffix(b"="))
        .unwrap_or(s);
    let padded = body.len() != s.len();
    if body.is_empty() || body.len() % 4 == 1 || (padded && !s.len().is_multiple_of(4)) {
        return None;
    }
    let (mut standard, mut url) = (false, false);
    let mut out = Vec::with_capacity(body.len() * 3 / 4);
    let mut acc: u32 = 0;
    let mut bits = 0;
    for &c in body {
        let v = match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' | b'/' => {
                standard = true;
                if c == b'+' {
                    62
                } else {
                    63
                }
            }
            b'-' | b'_' => {
                url = true;
                if c == b'-' {
                    62
                } else {
                    63
                }
            }
            _ => return None,
        };
        acc = (acc << 6) | u32::from(v);
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
        }
    }
    (!(standard && url)).then_some(out)
}

// ------------------------------------------------------- the document

/// The document: a request object or an array of them.
struct DocSeed<'c, 'f> {
    ctx: &'c mut Ctx<'f>,
}

impl<'de> DeserializeSeed<'de> for DocSeed<'_, '_> {
    type Value = Vec<Request>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Vec<Request>, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for DocSeed<'_, '_> {
    type Value = Vec<Request>;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an OTLP/JSON request object or an array of them")
    }
    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Vec<Request>, A::Error> {
        let mut req = Request::default();
        RequestVisitor {
            ctx: self.ctx,
            out: &mut req,
        }
        .visit_map(map)?;
        Ok(vec![req])
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Vec<Request>, A::Error> {
        let mut out = Vec::new();
        loop {
            self.ctx.prefix = format!("[{}].", out.len());
            let mut req = Request::default();
            let seed = RequestVisitor {
                ctx: &mut *self.ctx,
                out: &mut req,
            };
            if seq.next_element_seed(seed)?.is_none() {
                break;
            }
            out.push(req);
        }
        self.ctx.prefix.clear();
        Ok(out)
    }
}

/// A request object (`resourceSpans`, Tempo's `batches` or its `trace`
/// wrapper), appended to `out`.
struct RequestVisitor<'c, 'f, 'o> {
    ctx: &'c mut Ctx<'f>,
    out: &'o mut Request,
}

impl<'de> DeserializeSeed<'de> for RequestVisitor<'_, '_, '_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for RequestVisitor<'_, '_, '_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an OTLP/JSON request object")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        while let Some(Key(key)) = map.next_key()? {
            match &*key {
                "resourceSpans" | "batches" => {
                    self.ctx.containers = true;
                    self.ctx.rs_key = if key == "batches" {
                        "batches"
                    } else {
                        "resourceSpans"
                    };
                    map.next_value_seed(ResourceSpansList {
                        ctx: &mut *self.ctx,
                        out: &mut self.out.resource_spans,
                    })?;
                }
                "trace" => {
                    // Tempo's v2 API: {"trace": {"resourceSpans": [...]}, "status": ...}.
                    let saved = self.ctx.prefix.len();
                    self.ctx.prefix.push_str("trace.");
                    map.next_value_seed(Nullable(RequestVisitor {
                        ctx: &mut *self.ctx,
                        out: &mut *self.out,
                    }))?;
                    self.ctx.prefix.truncate(saved);
                }
                // Tempo's v2 wrapper fields next to `trace`.
                "status" | "message" => {
                    map.next_value::<IgnoredAny>()?;
                }
                other => {
                    self.ctx.unknown_key(other, |c| {
                        if c.prefix.is_empty() {
                            "top level".to_string()
                        } else {
                            c.prefix.trim_end_matches('.').to_string()
                        }
                    });
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(())
    }
}

/// A message that may be `null`: not set (proto3 JSON). Yields whether it
/// was present.
struct Nullable<S>(S);

impl<'de, S: DeserializeSeed<'de, Value = ()>> DeserializeSeed<'de> for Nullable<S> {
    type Value = bool;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<bool, D::Error> {
        d.deserialize_option(self)
    }
}

impl<'de, S: DeserializeSeed<'de, Value = ()>> Visitor<'de> for Nullable<S> {
    type Value = bool;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an object or null")
    }
    fn visit_none<E: de::Error>(self) -> Result<bool, E> {
        Ok(false)
    }
    fn visit_unit<E: de::Error>(self) -> Result<bool, E> {
        Ok(false)
    }
    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<bool, D::Error> {
        self.0.deserialize(d).map(|()| true)
    }
}

/// Implements `DeserializeSeed` for a list visitor: a JSON array, or null
/// (an empty list).
macro_rules! list_seed {
    ($ty:ident, $what:literal) => {
        impl<'de> DeserializeSeed<'de> for $ty<'_, '_> {
            type Value = ();
            fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
                d.deserialize_any(self)
            }
        }
        impl $ty<'_, '_> {
            fn describe(f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str(concat!("a list of ", $what, " (or null)"))
            }
        }
    };
}

// ------------------------------------------------- resource and scope

struct ResourceSpansList<'c, 'f> {
    ctx: &'c mut Ctx<'f>,
    out: &'c mut Vec<ResourceSpans>,
}
list_seed!(ResourceSpansList, "resource spans");

impl<'de> Visitor<'de> for ResourceSpansList<'_, '_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        Self::describe(f)
    }
    fn visit_unit<E: de::Error>(self) -> Result<(), E> {
        Ok(())
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        let mut i = 0;
        loop {
            self.ctx.r = i;
            match seq.next_element_seed(ResourceSpansSeed {
                ctx: &mut *self.ctx,
            })? {
                None => break,
                Some(Some(rs)) => self.out.push(rs),
                Some(None) => {}
            }
            i += 1;
        }
        Ok(())
    }
}

/// One ResourceSpans (a Tempo batch); `None` if its resource is rejected.
struct ResourceSpansSeed<'c, 'f> {
    ctx: &'c mut Ctx<'f>,
}

impl<'de> DeserializeSeed<'de> for ResourceSpansSeed<'_, '_> {
    type Value = Option<ResourceSpans>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for ResourceSpansSeed<'_, '_> {
    type Value = Option<ResourceSpans>;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a resource spans object")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let ctx = self.ctx;
        let mut rs = ResourceSpans::default();
        let mut fault = Fault::default();
        let mut s = 0;
        while let Some(Key(key)) = map.next_key()? {
            match &*key {
                "resource" => {
                    let mut res = Resource::default();
                    let present = map.next_value_seed(Nullable(ResourceSeed {
                        out: &mut res,
                        fault: &mut fault,
                        filter: ctx.filter,
                    }))?;
                    rs.resource = present.then_some(res);
                }
                "scopeSpans" | "instrumentationLibrarySpans" => {
                    ctx.ss_key = if key == "scopeSpans" {
                        "scopeSpans"
                    } else {
                        "instrumentationLibrarySpans"
                    };
                    map.next_value_seed(ScopeSpansList {
                        ctx: &mut *ctx,
                        out: &mut rs.scope_spans,
                        next: &mut s,
                    })?;
                }
                "schemaUrl" => {
                    rs.schema_url = string_field(map.next_value()?, "schemaUrl", &mut fault)
                }
                other => {
                    ctx.unknown_key(other, Ctx::rs_path);
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        match fault.0 {
            None => Ok(Some(rs)),
            Some(why) => {
                let n: usize = rs.scope_spans.iter().map(|ss| ss.spans.len()).sum();
                ctx.rejected.push(SpanRejected {
                    reason: format!("{n} span(s) of {} rejected: resource {why}", ctx.rs_path()),
                    spans: n,
                });
                Ok(None)
            }
        }
    }
}

struct ResourceSeed<'a, 'f> {
    out: &'a mut Resource,
    fault: &'a mut Fault,
    filter: &'f dyn KeyFilter,
}

impl<'de> DeserializeSeed<'de> for ResourceSeed<'_, '_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for ResourceSeed<'_, '_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a resource object")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        while let Some(Key(key)) = map.next_key()? {
            match &*key {
                "attributes" => map.next_value_seed(Attrs {
                    out: &mut self.out.attributes,
                    fault: &mut *self.fault,
                    filter: Some((self.filter, AttrsOf::Resource)),
                })?,
                "droppedAttributesCount" => {
                    self.out.dropped_attributes_count =
                        u32_field(map.next_value()?, "droppedAttributesCount", self.fault)
                }
                "entityRefs" => map.next_value_seed(EntityRefs {
                    out: &mut self.out.entity_refs,
                    fault: &mut *self.fault,
                })?,
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(())
    }
}

struct EntityRefs<'a, 'b> {
    out: &'a mut Vec<EntityRef>,
    fault: &'b mut Fault,
}
list_seed!(EntityRefs, "entity refs");

impl<'de> Visitor<'de> for EntityRefs<'_, '_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        Self::describe(f)
    }
    fn visit_unit<E: de::Error>(self) -> Result<(), E> {
        Ok(())
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        loop {
            let mut e = EntityRef::default();
            let seed = EntityRefSeed {
                out: &mut e,
                fault: &mut *self.fault,
            };
            if seq.next_element_seed(seed)?.is_none() {
                return Ok(());
            }
            self.out.push(e);
        }
    }
}

struct EntityRefSeed<'a, 'b> {
    out: &'a mut EntityRef,
    fault: &'b mut Fault,
}

impl<'de> DeserializeSeed<'de> for EntityRefSeed<'_, '_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for EntityRefSeed<'_, '_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an entity ref object")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        while let Some(Key(key)) = map.next_key()? {
            match &*key {
                "schemaUrl" => {
                    self.out.schema_url = string_field(map.next_value()?, "schemaUrl", self.fault)
                }
                "type" => self.out.r#type = string_field(map.next_value()?, "type", self.fault),
                "idKeys" | "descriptionKeys" => {
                    let list: Option<Vec<Scalar>> = map.next_value()?;
                    let strings = list
                        .unwrap_or_default()
                        .into_iter()
                        .map(|v| string_field(v, &key, self.fault))
                        .collect();
                    if key == "idKeys" {
                        self.out.id_keys = strings;
                    } else {
                        self.out.description_keys = strings;
                    }
                }
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(())
    }
}

struct ScopeSpansList<'c, 'f> {
    ctx: &'c mut Ctx<'f>,
    out: &'c mut Vec<ScopeSpans>,
    /// Index of the next element (both spellings may appear in one object).
    next: &'c mut usize,
}
list_seed!(ScopeSpansList, "scope spans");

impl<'de> Visitor<'de> for ScopeSpansList<'_, '_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        Self::describe(f)
    }
    fn visit_unit<E: de::Error>(self) -> Result<(), E> {
        Ok(())
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        loop {
            self.ctx.s = *self.next;
            match seq.next_element_seed(ScopeSpansSeed {
                ctx: &mut *self.ctx,
            })? {
                None => break,
                Some(Some(ss)) => self.out.push(ss),
                Some(None) => {}
            }
            *self.next += 1;
        }
        Ok(())
    }
}

/// One ScopeSpans (InstrumentationLibrarySpans); `None` if its scope is rejected.
struct ScopeSpansSeed<'c, 'f> {
    ctx: &'c mut Ctx<'f>,
}

impl<'de> DeserializeSeed<'de> for ScopeSpansSeed<'_, '_> {
    type Value = Option<ScopeSpans>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for ScopeSpansSeed<'_, '_> {
    type Value = Option<ScopeSpans>;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a scope spans object")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let ctx = self.ctx;
        let mut ss = ScopeSpans::default();
        let mut fault = Fault::default();
        while let Some(Key(key)) = map.next_key()? {
            match &*key {
                "scope" | "instrumentationLibrary" => {
                    let mut scope = InstrumentationScope::default();
                    let present = map.next_value_seed(Nullable(ScopeSeed {
                        out: &mut scope,
                        fault: &mut fault,
                        filter: ctx.filter,
                    }))?;
                    ss.scope = present.then_some(scope);
                }
                "spans" => map.next_value_seed(SpanList {
                    ctx: &mut *ctx,
                    out: &mut ss.spans,
                })?,
                "schemaUrl" => {
                    ss.schema_url = string_field(map.next_value()?, "schemaUrl", &mut fault)
                }
                other => {
                    ctx.unknown_key(other, Ctx::ss_path);
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        match fault.0 {
            None => Ok(Some(ss)),
            Some(why) => {
                let n = ss.spans.len();
                ctx.rejected.push(SpanRejected {
                    reason: format!("{n} span(s) of {} rejected: scope {why}", ctx.ss_path()),
                    spans: n,
                });
                Ok(None)
            }
        }
    }
}

struct ScopeSeed<'a, 'f> {
    out: &'a mut InstrumentationScope,
    fault: &'a mut Fault,
    filter: &'f dyn KeyFilter,
}

impl<'de> DeserializeSeed<'de> for ScopeSeed<'_, '_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for ScopeSeed<'_, '_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an instrumentation scope object")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        while let Some(Key(key)) = map.next_key()? {
            match &*key {
                "name" => self.out.name = string_field(map.next_value()?, "name", self.fault),
                "version" => {
                    self.out.version = string_field(map.next_value()?, "version", self.fault)
                }
                "attributes" => map.next_value_seed(Attrs {
                    out: &mut self.out.attributes,
                    fault: &mut *self.fault,
                    filter: Some((self.filter, AttrsOf::Scope)),
                })?,
                "droppedAttributesCount" => {
                    self.out.dropped_attributes_count =
                        u32_field(map.next_value()?, "droppedAttributesCount", self.fault)
                }
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(())
    }
}

// --------------------------------------------------------------- spans

struct SpanList<'c, 'f> {
    ctx: &'c mut Ctx<'f>,
    out: &'c mut Vec<Span>,
}
list_seed!(SpanList, "spans");

impl<'de> Visitor<'de> for SpanList<'_, '_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        Self::describe(f)
    }
    fn visit_unit<E: de::Error>(self) -> Result<(), E> {
        Ok(())
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        let mut index = 0;
        loop {
            match seq.next_element_seed(SpanSeed {
                ctx: &mut *self.ctx,
                index,
            })? {
                None => break,
                Some(Some(s)) => self.out.push(s),
                Some(None) => {}
            }
            index += 1;
        }
        Ok(())
    }
}

/// One span; `None` if rejected (recorded in the context with its reason).
struct SpanSeed<'c, 'f> {
    ctx: &'c mut Ctx<'f>,
    index: usize,
}

impl<'de> DeserializeSeed<'de> for SpanSeed<'_, '_> {
    type Value = Option<Span>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for SpanSeed<'_, '_> {
    type Value = Option<Span>;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a span object")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let ctx = self.ctx;
        let filter = ctx.filter;
        // The name and attributes go to the builder; a document that fails
        // here is dropped whole, builder and all (see `SPAN_BUILDER`).
        let sb = &mut ctx.sb;
        sb.start(None);
        let mut s = Span::default();
        let mut fault = Fault::default();
        let mut unknown: Vec<String> = Vec::new();
        while let Some(Key(key)) = map.next_key()? {
            let f = &mut fault;
            match &*key {
                "traceId" => s.trace_id = span_id_field(map.next_value()?, IdKind::Trace, f),
                "spanId" => s.span_id = span_id_field(map.next_value()?, IdKind::Span, f),
                "parentSpanId" => {
                    s.parent_span_id = span_id_field(map.next_value()?, IdKind::Parent, f)
                }
                "traceState" => s.trace_state = string_field(map.next_value()?, "traceState", f),
                "flags" => s.flags = u32_field(map.next_value()?, "flags", f),
                "name" => sb.name(&str_field(map.next_value()?, "name", f)),
                "kind" => s.kind = enum_field(map.next_value()?, "kind", SPAN_KINDS, f),
                "startTimeUnixNano" => {
                    s.start_time_unix_nano = u64_field(map.next_value()?, "startTimeUnixNano", f)
                }
                "endTimeUnixNano" => {
                    s.end_time_unix_nano = u64_field(map.next_value()?, "endTimeUnixNano", f)
                }
                "attributes" => map.next_value_seed(SpanAttrs {
                    sb: &mut *sb,
                    fault: f,
                    filter,
                })?,
                "droppedAttributesCount" => {
                    s.dropped_attributes_count =
                        u32_field(map.next_value()?, "droppedAttributesCount", f)
                }
                "events" => map.next_value_seed(Events {
                    out: &mut s.events,
                    fault: f,
                    filter,
                })?,
                "droppedEventsCount" => {
                    s.dropped_events_count = u32_field(map.next_value()?, "droppedEventsCount", f)
                }
                "links" => map.next_value_seed(Links {
                    out: &mut s.links,
                    fault: f,
                    filter,
                })?,
                "droppedLinksCount" => {
                    s.dropped_links_count = u32_field(map.next_value()?, "droppedLinksCount", f)
                }
                "status" => {
                    let mut st = Status::default();
                    let present = map.next_value_seed(Nullable(StatusSeed {
                        out: &mut st,
                        fault: f,
                    }))?;
                    s.status = present.then_some(st);
                }
                other => {
                    if unknown.len() < MAX_UNKNOWN {
                        unknown.push(format!("`{other}`"));
                    }
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        if s.trace_id.is_empty() {
            fault.note(|| "no trace id".to_string());
        } else if s.span_id.is_empty() {
            fault.note(|| "no span id".to_string());
        }
        // Finished either way: a rejected span's name is read from it, and
        // the builder starts the next span empty.
        sb.finish(&mut s);
        let Some(why) = fault.0 else {
            return Ok(Some(s));
        };
        let hint = match unknown.is_empty() {
            true => String::new(),
            false if unknown.iter().any(|k| k.contains('_')) => format!(
                " (unknown keys {}; OTLP/JSON keys are lowerCamelCase)",
                unknown.join(", ")
            ),
            false => format!(" (unknown keys {})", unknown.join(", ")),
        };
        ctx.rejected.push(SpanRejected {
            reason: format!(
                "span `{}` ({}.spans[{}]) rejected: {why}{hint}",
                s.name(),
                ctx.ss_path(),
                self.index
            ),
            spans: 1,
        });
        Ok(None)
    }
}

struct StatusSeed<'a> {
    out: &'a mut Status,
    fault: &'a mut Fault,
}

impl<'de> DeserializeSeed<'de> for StatusSeed<'_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for StatusSeed<'_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a status object")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        while let Some(Key(key)) = map.next_key()? {
            match &*key {
                "code" => {
                    self.out.code =
                        enum_field(map.next_value()?, "status code", STATUS_CODES, self.fault)
                }
                "message" => {
                    self.out.message = string_field(map.next_value()?, "status message", self.fault)
                }
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(())
    }
}

struct Events<'a, 'f> {
    out: &'a mut Vec<span::Event>,
    fault: &'a mut Fault,
    filter: &'f dyn KeyFilter,
}
list_seed!(Events, "events");

impl<'de> Visitor<'de> for Events<'_, '_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        Self::describe(f)
    }
    fn visit_unit<E: de::Error>(self) -> Result<(), E> {
        Ok(())
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        loop {
            let mut ev = span::Event::default();
            let mut fault = Fault::default();
            let seed = EventSeed {
                out: &mut ev,
                fault: &mut fault,
                filter: self.filter,
            };
            if seq.next_element_seed(seed)?.is_none() {
                return Ok(());
            }
            if let Some(why) = fault.0 {
                let n = self.out.len();
                self.fault
                    .note(|| format!("event {n} `{}`: {why}", clip(&ev.name)));
            }
            self.out.push(ev);
        }
    }
}

struct EventSeed<'a, 'f> {
    out: &'a mut span::Event,
    fault: &'a mut Fault,
    filter: &'f dyn KeyFilter,
}

impl<'de> DeserializeSeed<'de> for EventSeed<'_, '_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for EventSeed<'_, '_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an event object")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        while let Some(Key(key)) = map.next_key()? {
            match &*key {
                "timeUnixNano" => {
                    self.out.time_unix_nano =
                        u64_field(map.next_value()?, "timeUnixNano", self.fault)
                }
                "name" => self.out.name = string_field(map.next_value()?, "name", self.fault),
                "attributes" => map.next_value_seed(Attrs {
                    out: &mut self.out.attributes,
                    fault: &mut *self.fault,
                    filter: Some((self.filter, AttrsOf::Event)),
                })?,
                "droppedAttributesCount" => {
                    self.out.dropped_attributes_count =
                        u32_field(map.next_value()?, "droppedAttributesCount", self.fault)
                }
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(())
    }
}

struct Links<'a, 'f> {
    out: &'a mut Vec<span::Link>,
    fault: &'a mut Fault,
    filter: &'f dyn KeyFilter,
}
list_seed!(Links, "links");

impl<'de> Visitor<'de> for Links<'_, '_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        Self::describe(f)
    }
    fn visit_unit<E: de::Error>(self) -> Result<(), E> {
        Ok(())
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        loop {
            let mut link = span::Link::default();
            let mut fault = Fault::default();
            let seed = LinkSeed {
                out: &mut link,
                fault: &mut fault,
                filter: self.filter,
            };
            if seq.next_element_seed(seed)?.is_none() {
                return Ok(());
            }
            if let Some(why) = fault.0 {
                let n = self.out.len();
                self.fault.note(|| format!("link {n}: {why}"));
            }
            self.out.push(link);
        }
    }
}

struct LinkSeed<'a, 'f> {
    out: &'a mut span::Link,
    fault: &'a mut Fault,
    filter: &'f dyn KeyFilter,
}

impl<'de> DeserializeSeed<'de> for LinkSeed<'_, '_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for LinkSeed<'_, '_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a link object")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let f = self.fault;
        while let Some(Key(key)) = map.next_key()? {
            match &*key {
                "traceId" => self.out.trace_id = id_field(map.next_value()?, IdKind::LinkTrace, f),
                "spanId" => self.out.span_id = id_field(map.next_value()?, IdKind::LinkSpan, f),
                "traceState" => {
                    self.out.trace_state = string_field(map.next_value()?, "traceState", f)
                }
                "flags" => self.out.flags = u32_field(map.next_value()?, "flags", f),
                "attributes" => map.next_value_seed(Attrs {
                    out: &mut self.out.attributes,
                    fault: &mut *f,
                    filter: Some((self.filter, AttrsOf::Link)),
                })?,
                "droppedAttributesCount" => {
                    self.out.dropped_attributes_count =
                        u32_field(map.next_value()?, "droppedAttributesCount", f)
                }
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(())
    }
}

// ---------------------------------------------------------- attributes

/// A list of KeyValue. `filter`: which keys to keep (`None` inside a
/// kvlistValue, whose keys are data, not attribute names).
struct Attrs<'a, 'f> {
    out: &'a mut Vec<KeyValue>,
    fault: &'a mut Fault,
    filter: Option<(&'f dyn KeyFilter, AttrsOf)>,
}
list_seed!(Attrs, "attributes");

impl<'de> Visitor<'de> for Attrs<'_, '_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        Self::describe(f)
    }
    fn visit_unit<E: de::Error>(self) -> Result<(), E> {
        Ok(())
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        // Gathered in a reused buffer, then moved into a list of exactly
        // their number: growing each list push by push cost a reallocation
        // and a copy per span. A nested list (a kvlistValue) finds the
        // buffer taken and uses its own.
        let mut kept = ATTR_SCRATCH.take();
        kept.clear();
        let filled = (|| {
            while let Some(kv) = seq.next_element_seed(KeyValueSeed {
                fault: &mut *self.fault,
                filter: self.filter,
            })? {
                if let Some((key, value)) = kv {
                    kept.push(KeyValue {
                        key: key.into_owned(),
                        value: value.map(AnyIn::into_any),
                        ..Default::default()
                    });
                }
            }
            Ok(())
        })();
        self.out.reserve_exact(kept.len());
        self.out.append(&mut kept);
        ATTR_SCRATCH.set(kept);
        filled
    }
}

thread_local! {
    /// [`Attrs`]' reused buffer.
    static ATTR_SCRATCH: std::cell::Cell<Vec<KeyValue>> = const { std::cell::Cell::new(Vec::new()) };
}

/// A span's attributes, into its builder: a key or string value is copied
/// once, from the input into the span's text.
struct SpanAttrs<'a, 'f> {
    sb: &'a mut SpanBuilder,
    fault: &'a mut Fault,
    filter: &'f dyn KeyFilter,
}
list_seed!(SpanAttrs, "attributes");

impl<'de> Visitor<'de> for SpanAttrs<'_, '_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        Self::describe(f)
    }
    fn visit_unit<E: de::Error>(self) -> Result<(), E> {
        Ok(())
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        while let Some(kv) = seq.next_element_seed(KeyValueSeed {
            fault: &mut *self.fault,
            filter: Some((self.filter, AttrsOf::Span)),
        })? {
            if let Some((key, value)) = kv {
                let sb = &mut *self.sb;
                match value {
                    None => sb.attr(&key, Input::Absent),
                    Some(AnyIn::Empty) => sb.attr(&key, Input::Empty),
                    Some(AnyIn::Str(s)) => sb.attr(&key, Input::Str(&s)),
                    Some(AnyIn::Bool(b)) => sb.attr(&key, Input::Bool(b)),
                    Some(AnyIn::Int(i)) => sb.attr(&key, Input::Int(i)),
                    Some(AnyIn::Double(d)) => sb.attr(&key, Input::Double(d)),
                    Some(AnyIn::Nested(v)) => sb.attr(&key, Input::Nested(v)),
                }
            }
        }
        Ok(())
    }
}

/// One KeyValue: its key and its value (`None`: no value field), strings
/// borrowed from the input where the deserializer lends them; `None` if
/// the filter drops it. [`Attrs`] makes prost's `KeyValue` of it,
/// [`SpanAttrs`] hands it to the span's builder.
struct KeyValueSeed<'a, 'f> {
    fault: &'a mut Fault,
    filter: Option<(&'f dyn KeyFilter, AttrsOf)>,
}

/// What [`KeyValueSeed`] yields for a kept attribute.
type KeyValueIn<'de> = (Cow<'de, str>, Option<AnyIn<'de>>);

impl<'de> DeserializeSeed<'de> for KeyValueSeed<'_, '_> {
    type Value = Option<KeyValueIn<'de>>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_map(self)
    }
}

impl KeyValueSeed<'_, '_> {
    fn keeps(&self, key: &str) -> bool {
        self.filter.is_none_or(|(f, at)| f.keep(at, key))
    }

    fn keeps_json(&self) -> bool {
        self.filter.is_some_and(|(f, at)| f.keep_json(at))
    }
}

impl<'de> Visitor<'de> for KeyValueSeed<'_, '_> {
    type Value = Option<KeyValueIn<'de>>;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a key-value object")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut key: Option<Cow<'de, str>> = None;
        let mut value: Option<AnyIn<'de>> = None;
        let mut inner = Fault::default();
        // Known to be dropped once the key is read (key usually comes first),
        // unless its value holds JSON (`json_only`).
        let mut dropped = false;
        let mut json_only = false;
        while let Some(Key(k)) = map.next_key()? {
            match &*k {
                "key" => {
                    // Tested borrowed: a dropped key is never copied.
                    let s = str_field(map.next_value()?, "key", &mut inner);
                    dropped = !self.keeps(&s);
                    json_only = dropped && self.keeps_json();
                    key = (!dropped || json_only).then_some(s);
                }
                "value" if json_only => value = map.next_value_seed(JsonText)?.map(AnyIn::Str),
                "value" if dropped => {
                    map.next_value::<IgnoredAny>()?;
                }
                "value" => value = map.next_value_seed(AnyValueSeed { fault: &mut inner })?,
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        let key = key.unwrap_or_default();
        let json = matches!(&value, Some(AnyIn::Str(t)) if holds_json(t));
        let kept = !dropped && self.keeps(&key) || self.keeps_json() && json;
        if !kept {
            return Ok(None);
        }
        if let Some(why) = inner.0 {
            self.fault
                .note(|| format!("attribute `{}`: {why}", clip(&key)));
        }
        Ok(Some((key, value)))
    }
}

/// The value of an attribute [`KeyFilter::keep_json`] may keep: the text
/// of a string value holding JSON, or `None` (anything else is skipped
/// undecoded).
struct JsonText;

impl<'de> DeserializeSeed<'de> for JsonText {
    type Value = Option<Cow<'de, str>>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for JsonText {
    type Value = Option<Cow<'de, str>>;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an AnyValue object")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut value = None;
        while let Some(Key(k)) = map.next_key()? {
            match (&*k, map.next_value()?) {
                ("stringValue", Scalar::Str(s)) if holds_json(&s) => value = Some(s),
                // A null member is "not set"; another member set last wins,
                // as in the full decode.
                (_, Scalar::Null) => {}
                (
                    "stringValue" | "boolValue" | "intValue" | "doubleValue" | "bytesValue"
                    | "arrayValue" | "kvlistValue",
                    _,
                ) => value = None,
                _ => {}
            }
        }
        Ok(value)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(None)
    }
    fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_bool<E: de::Error>(self, _: bool) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_i64<E: de::Error>(self, _: i64) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_u64<E: de::Error>(self, _: u64) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_f64<E: de::Error>(self, _: f64) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_str<E: de::Error>(self, _: &str) -> Result<Self::Value, E> {
        Ok(None)
    }
}

/// An AnyValue as decoded, its string borrowed from the input where the
/// deserializer lends it: a span attribute's value goes to the builder as
/// it is, any other becomes prost's ([`AnyIn::into_any`]).
enum AnyIn<'de> {
    /// No member set.
    Empty,
    Str(Cow<'de, str>),
    Bool(bool),
    Int(i64),
    Double(f64),
    /// Bytes, arrays and key-value lists, as prost's.
    Nested(AnyValue),
}

impl AnyIn<'_> {
    fn nested(v: any_value::Value) -> Self {
        AnyIn::Nested(AnyValue { value: Some(v) })
    }

    fn into_any(self) -> AnyValue {
        use any_value::Value as V;
        let value = match self {
            AnyIn::Empty => None,
            AnyIn::Str(s) => Some(V::StringValue(s.into_owned())),
            AnyIn::Bool(b) => Some(V::BoolValue(b)),
            AnyIn::Int(i) => Some(V::IntValue(i)),
            AnyIn::Double(d) => Some(V::DoubleValue(d)),
            AnyIn::Nested(v) => return v,
        };
        AnyValue { value }
    }
}

/// An AnyValue object: `Some` (possibly empty), `None` for null. A member
/// set later replaces one set before.
struct AnyValueSeed<'a> {
    fault: &'a mut Fault,
}

impl<'de> DeserializeSeed<'de> for AnyValueSeed<'_> {
    type Value = Option<AnyIn<'de>>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for AnyValueSeed<'_> {
    type Value = Option<AnyIn<'de>>;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an AnyValue object (`{\"stringValue\": ...}` etc.) or null")
    }
    fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        use any_value::Value as V;
        let f = self.fault;
        let mut value = AnyIn::Empty;
        while let Some(Key(k)) = map.next_key()? {
            // A null member is "not set" (as the serde derive reads it).
            match &*k {
                "stringValue" => match map.next_value()? {
                    Scalar::Null => {}
                    v => value = AnyIn::Str(str_field(v, "stringValue", f)),
                },
                "boolValue" => match map.next_value()? {
                    Scalar::Null => {}
                    Scalar::Bool(b) => value = AnyIn::Bool(b),
                    Scalar::Str(s) if s == "true" || s == "false" => {
                        value = AnyIn::Bool(s == "true")
                    }
                    v => f.note(|| format!("boolValue {v} is not a boolean")),
                },
                "intValue" => match map.next_value()? {
                    Scalar::Null => {}
                    v => match to_i64(&v) {
                        Some(n) => value = AnyIn::Int(n),
                        None => f.note(|| format!("intValue {v} is not a 64-bit integer")),
                    },
                },
                "doubleValue" => match map.next_value()? {
                    Scalar::Null => {}
                    v => match to_f64(&v) {
                        Some(n) => value = AnyIn::Double(n),
                        None => f.note(|| format!("doubleValue {v} is not a number")),
                    },
                },
                "bytesValue" => match map.next_value()? {
                    Scalar::Null => {}
                    Scalar::Str(s) if s.is_empty() => {
                        value = AnyIn::nested(V::BytesValue(Vec::new()))
                    }
                    v => match &v {
                        Scalar::Str(s) => match base64(s.as_bytes()) {
                            Some(b) => value = AnyIn::nested(V::BytesValue(b)),
                            None => f.note(|| format!("bytesValue {v} is not base64")),
                        },
                        _ => f.note(|| format!("bytesValue {v} is not a base64 string")),
                    },
                },
                "arrayValue" => {
                    let mut values = Vec::new();
                    // null: not set, as for every member of the oneof.
                    if map.next_value_seed(Nullable(ValuesOf(ArrayValues {
                        out: &mut values,
                        fault: &mut *f,
                    })))? {
                        value = AnyIn::nested(V::ArrayValue(ArrayValue { values }));
                    }
                }
                "kvlistValue" => {
                    let mut values = Vec::new();
                    if map.next_value_seed(Nullable(ValuesOf(Attrs {
                        out: &mut values,
                        fault: &mut *f,
                        filter: None,
                    })))? {
                        value = AnyIn::nested(V::KvlistValue(KeyValueList { values }));
                    }
                }
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(Some(value))
    }
}

/// `{"values": [...]}` (ArrayValue, KeyValueList): the list goes to `S`.
struct ValuesOf<S>(S);

impl<'de, S: DeserializeSeed<'de, Value = ()>> DeserializeSeed<'de> for ValuesOf<S> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de, S: DeserializeSeed<'de, Value = ()>> Visitor<'de> for ValuesOf<S> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an object with `values`")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let mut seed = Some(self.0);
        while let Some(Key(k)) = map.next_key()? {
            match (&*k, seed.take()) {
                ("values", Some(s)) => map.next_value_seed(s)?,
                (_, s) => {
                    seed = s;
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(())
    }
}

/// The elements of an ArrayValue (null elements are empty values).
struct ArrayValues<'a, 'b> {
    out: &'a mut Vec<AnyValue>,
    fault: &'b mut Fault,
}
list_seed!(ArrayValues, "values");

impl<'de> Visitor<'de> for ArrayValues<'_, '_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        Self::describe(f)
    }
    fn visit_unit<E: de::Error>(self) -> Result<(), E> {
        Ok(())
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        while let Some(v) = seq.next_element_seed(AnyValueSeed {
            fault: &mut *self.fault,
        })? {
            self.out
                .push(v.map_or_else(AnyValue::default, AnyIn::into_any));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest as PbRequest;
    use opentelemetry_proto::tonic::common::v1::any_value::Value as V;
    // The tests read spans as prost's (`to_proto`).
    use opentelemetry_proto::tonic::trace::v1::Span;

    const TRACE_HEX: &str = "5b8efff798038103d269b633813fc60c";
    const SPAN_HEX: &str = "eee19b7ec3c1b174";
    // The same ids in base64 (standard alphabet): what Go protojson and Tempo write.
    const TRACE_B64: &str = "W47/95gDgQPSabYzgT/GDA==";
    const SPAN_B64: &str = "7uGbfsPBsXQ=";

    fn trace_bytes() -> Vec<u8> {
        hex(TRACE_HEX.as_bytes()).unwrap()
    }
    fn span_bytes() -> Vec<u8> {
        hex(SPAN_HEX.as_bytes()).unwrap()
    }

    /// A request with one scope holding `spans` (JSON objects).
    fn request(spans: &[String]) -> String {
        format!(
            r#"{{"resourceSpans":[{{"resource":{{"attributes":[{{"key":"service.name","value":{{"stringValue":"svc"}}}}]}},"scopeSpans":[{{"scope":{{"name":"lib"}},"spans":[{}]}}]}}]}}"#,
            spans.join(",")
        )
    }

    fn span(name: &str, extra: &str) -> String {
        format!(r#"{{"traceId":"{TRACE_HEX}","spanId":"{SPAN_HEX}","name":"{name}"{extra}}}"#)
    }

    /// The document's spans as prost's.
    fn spans_of(d: &Document) -> Vec<Span> {
        d.requests
            .iter()
            .flat_map(|r| &r.resource_spans)
            .flat_map(|rs| &rs.scope_spans)
            .flat_map(|ss| &ss.spans)
            .map(super::super::Span::to_proto)
            .collect()
    }

    fn one(json: &str) -> Span {
        let d = decode(json.as_bytes()).unwrap();
        assert!(d.rejected.is_empty(), "{:?}", d.rejected);
        let spans = spans_of(&d);
        assert_eq!(spans.len(), 1);
        spans[0].clone()
    }

    fn attr<'a>(attrs: &'a [KeyValue], key: &str) -> Option<&'a V> {
        attrs
            .iter()
            .find(|kv| kv.key == key)
            .and_then(|kv| kv.value.as_ref())
            .and_then(|v| v.value.as_ref())
    }

    // 1. enum names as well as integers.
    #[test]
    fn enums_by_name_or_number() {
        for (kind, want) in [
            (r#""SPAN_KIND_SERVER""#, 2),
            ("3", 3),
            (r#""SPAN_KIND_CONSUMER""#, 5),
            (r#""server""#, 2),
            (r#""span_kind_client""#, 3),
            ("null", 0),
        ] {
            let s = one(&request(&[span("a", &format!(r#","kind":{kind}"#))]));
            assert_eq!(s.kind, want, "{kind}");
        }
        for (code, want) in [
            (r#""STATUS_CODE_ERROR""#, 2),
            (r#""STATUS_CODE_OK""#, 1),
            ("2", 2),
            (r#""Error""#, 2),
        ] {
            let s = one(&request(&[span(
                "a",
                &format!(r#","status":{{"code":{code},"message":"boom"}}"#),
            )]));
            let st = s.status.unwrap();
            assert_eq!((st.code, st.message.as_str()), (want, "boom"), "{code}");
        }
        // An unknown name rejects that span only, naming the span and the value.
        let d = decode(
            request(&[
                span("bad", r#","kind":"SPAN_KIND_SEVER""#),
                span("good", r#","kind":"SPAN_KIND_CLIENT""#),
            ])
            .as_bytes(),
        )
        .unwrap();
        assert_eq!(spans_of(&d).len(), 1);
        assert_eq!(spans_of(&d)[0].name, "good");
        let r = &d.rejected[0].reason;
        assert!(
            r.contains("span `bad`") && r.contains("SPAN_KIND_SEVER"),
            "{r}"
        );
        assert!(r.contains("resourceSpans[0].scopeSpans[0].spans[0]"), "{r}");
    }

    #[test]
    fn enums_in_links_and_events_contexts() {
        // Links carry ids (hex or base64) and flags; events carry times as strings.
        let s = one(&request(&[span(
            "a",
            &format!(
                r#","kind":"SPAN_KIND_INTERNAL","links":[{{"traceId":"{TRACE_B64}","spanId":"{SPAN_HEX}","flags":"256","traceState":"k=v","attributes":[{{"key":"l","value":{{"boolValue":true}}}}],"droppedAttributesCount":1}}],"events":[{{"name":"exception","timeUnixNano":"12","attributes":[{{"key":"exception.type","value":{{"stringValue":"E"}}}}]}}],"status":{{"code":"STATUS_CODE_ERROR"}}"#
            ),
        )]));
        assert_eq!(s.kind, 1);
        assert_eq!(s.links[0].trace_id, trace_bytes());
        assert_eq!(s.links[0].span_id, span_bytes());
        assert_eq!(s.links[0].flags, 256);
        assert_eq!(s.links[0].trace_state, "k=v");
        assert_eq!(s.links[0].dropped_attributes_count, 1);
        assert_eq!(attr(&s.links[0].attributes, "l"), Some(&V::BoolValue(true)));
        assert_eq!(s.events[0].time_unix_nano, 12);
        assert_eq!(
            attr(&s.events[0].attributes, "exception.type"),
            Some(&V::StringValue("E".into()))
        );
        assert_eq!(s.status.unwrap().code, 2);
    }

    // 2. base64 ids as well as hex.
    #[test]
    fn ids_as_hex_or_base64() {
        let url_trace = TRACE_B64.replace('/', "_");
        let cases = [
            (TRACE_HEX.to_string(), SPAN_HEX.to_string()),
            (TRACE_HEX.to_uppercase(), SPAN_HEX.to_uppercase()),
            (TRACE_B64.to_string(), SPAN_B64.to_string()),
            (
                TRACE_B64.trim_end_matches('=').to_string(),
                SPAN_B64.trim_end_matches('=').to_string(),
            ),
            (url_trace.clone(), SPAN_B64.to_string()),
            (
                url_trace.trim_end_matches('=').to_string(),
                SPAN_B64.to_string(),
            ),
            (format!("0x{TRACE_HEX}"), SPAN_HEX.to_string()),
        ];
        for (t, s) in cases {
            let json = request(&[format!(
                r#"{{"traceId":"{t}","spanId":"{s}","parentSpanId":"{s}","name":"a"}}"#
            )]);
            let sp = one(&json);
            assert_eq!(sp.trace_id, trace_bytes(), "{t}");
            assert_eq!(sp.span_id, span_bytes(), "{s}");
            assert_eq!(sp.parent_span_id, span_bytes(), "{s}");
        }
        // An empty or absent parent is "no parent".
        let sp = one(&request(&[span("root", r#","parentSpanId":"""#)]));
        assert!(sp.parent_span_id.is_empty());
        let sp = one(&request(&[span("root", "")]));
        assert!(sp.parent_span_id.is_empty());
    }

    #[test]
    fn a_wrong_id_rejects_that_span_only() {
        let bad = [
            // hex of the wrong length
            (r#""traceId":"abcd""#, "trace id of 2 bytes as hex"),
            // 32 chars that are not hex (but base64 of 24 bytes)
            (
                r#""traceId":"zzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzz""#,
                "trace id of 24 bytes as base64",
            ),
            (r#""traceId":"not an id!""#, "is neither hex nor base64"),
            // base64 of the wrong length
            (r#""spanId":"0a0b0c""#, "span id of 3 bytes as hex"),
            (r#""spanId":"AQID""#, "span id of 3 bytes as base64"),
            (r#""spanId":"AQIDBA==""#, "span id of 4 bytes as base64"),
            // mixed alphabets
            (r#""spanId":"7u+bfsPBsX_=""#, "is neither hex nor base64"),
            (
                r#""parentSpanId":"xyz!""#,
                "parent span id \"xyz!\" is neither",
            ),
            (r#""spanId":"""#, "no span id"),
            (r#""spanId":12"#, "span id 12 is not a string"),
        ];
        for (field, want) in bad {
            let good = span("kept", "");
            let b = format!(
                r#"{{"traceId":"{TRACE_HEX}","spanId":"{SPAN_HEX}","name":"broken",{field}}}"#
            );
            let d = decode(request(&[good, b]).as_bytes()).unwrap();
            assert_eq!(spans_of(&d).len(), 1, "{field}");
            assert_eq!(spans_of(&d)[0].name, "kept");
            assert_eq!(d.rejected.len(), 1);
            assert_eq!(d.rejected[0].spans, 1);
            let r = &d.rejected[0].reason;
            assert!(r.contains(want), "{field}: {r}");
            assert!(
                r.contains("span `broken` (resourceSpans[0].scopeSpans[0].spans[1])"),
                "{r}"
            );
            if want.contains("hex") {
                assert!(r.contains("tried hex") && r.contains("and base64"), "{r}");
            }
        }
        // A span in snake_case: no ids, and the reason says why.
        let d = decode(
            request(&[format!(
                r#"{{"trace_id":"{TRACE_HEX}","span_id":"{SPAN_HEX}","name":"snake"}}"#
            )])
            .as_bytes(),
        )
        .unwrap();
        let r = &d.rejected[0].reason;
        assert!(r.contains("no trace id") && r.contains("`trace_id`"), "{r}");
        assert!(r.contains("lowerCamelCase"), "{r}");
    }

    #[test]
    fn base64_and_hex_helpers() {
        assert_eq!(base64(b"AQIDBAUGBwg="), Some(vec![1, 2, 3, 4, 5, 6, 7, 8]));
        assert_eq!(base64(b"AQIDBAUGBwg"), Some(vec![1, 2, 3, 4, 5, 6, 7, 8]));
        assert_eq!(base64(b"+/+/"), Some(vec![0xfb, 0xff, 0xbf]));
        assert_eq!(base64(b"-_-_"), Some(vec![0xfb, 0xff, 0xbf]));
        assert_eq!(base64(b"+_"), None);
        assert_eq!(base64(b"AQIDB"), None); // 4n+1 chars
        assert_eq!(base64(b"AQI=="), None); // padded but not whole groups
        assert_eq!(base64(b"A*=="), None);
        assert_eq!(hex(b"0aFf"), Some(vec![0x0a, 0xff]));
        assert_eq!(hex(b"0aF"), None);
        assert_eq!(hex(b"0g"), None);
    }

    // 3. pre-1.0 names.
    #[test]
    fn instrumentation_library_names() {
        let json = format!(
            r#"{{"resourceSpans":[{{"resource":{{}},"instrumentationLibrarySpans":[{{"instrumentationLibrary":{{"name":"old","version":"0.9"}},"spans":[{}]}}]}}]}}"#,
            span("a", "")
        );
        let d = decode(json.as_bytes()).unwrap();
        let ss = &d.requests[0].resource_spans[0].scope_spans[0];
        let scope = ss.scope.as_ref().unwrap();
        assert_eq!(
            (scope.name.as_str(), scope.version.as_str()),
            ("old", "0.9")
        );
        assert_eq!(ss.spans.len(), 1);
        // Positions in messages use the key the document used.
        let json = format!(
            r#"{{"resourceSpans":[{{"instrumentationLibrarySpans":[{{"spans":[{}]}}]}}]}}"#,
            span("x", r#","kind":"NOPE""#)
        );
        let d = decode(json.as_bytes()).unwrap();
        assert!(
            d.rejected[0]
                .reason
                .contains("resourceSpans[0].instrumentationLibrarySpans[0].spans[0]"),
            "{:?}",
            d.rejected
        );
    }

    // 4. Tempo's shapes.
    #[test]
    fn tempo_batches_and_v2_wrapper() {
        let s = format!(
            r#"{{"traceId":"{TRACE_B64}","spanId":"{SPAN_B64}","name":"GET /","kind":"SPAN_KIND_SERVER","startTimeUnixNano":"1","endTimeUnixNano":"2","status":{{}}}}"#
        );
        let batches = format!(
            r#"{{"batches":[{{"resource":{{"attributes":[{{"key":"service.name","value":{{"stringValue":"api"}}}}]}},"scopeSpans":[{{"scope":{{"name":"x"}},"spans":[{s}]}}]}},{{"resource":{{}},"instrumentationLibrarySpans":[{{"instrumentationLibrary":{{"name":"y"}},"spans":[{s}]}}]}}]}}"#
        );
        let d = decode(batches.as_bytes()).unwrap();
        assert_eq!(d.requests.len(), 1);
        assert_eq!(d.requests[0].resource_spans.len(), 2);
        assert_eq!(spans_of(&d).len(), 2);
        assert!(spans_of(&d)
            .iter()
            .all(|s| s.trace_id == trace_bytes() && s.kind == 2));
        assert!(d.empty_reason(true).is_none());
        for inner in [
            format!(r#"{{"resourceSpans":[{{"scopeSpans":[{{"spans":[{s}]}}]}}]}}"#),
            format!(r#"{{"batches":[{{"scopeSpans":[{{"spans":[{s}]}}]}}]}}"#),
        ] {
            let v2 = format!(r#"{{"status":"complete","trace":{inner},"message":""}}"#);
            let d = decode(v2.as_bytes()).unwrap();
            assert_eq!(spans_of(&d).len(), 1, "{v2}");
        }
        // Tempo's "not found" answer has no spans: wrong as a file, fine as a body.
        let d = decode(br#"{"trace":{}}"#).unwrap();
        assert!(d.empty_reason(true).is_some());
        assert!(d.empty_reason(false).is_none());
        // Positions name the wrapper.
        let v2 = format!(
            r#"{{"trace":{{"batches":[{{"scopeSpans":[{{"spans":[{}]}}]}}]}}}}"#,
            span("w", r#","kind":7.5"#)
        );
        let d = decode(v2.as_bytes()).unwrap();
        assert!(
            d.rejected[0]
                .reason
                .contains("(trace.batches[0].scopeSpans[0].spans[0])"),
            "{:?}",
            d.rejected
        );
    }

    // 5. numbers where strings are expected, and the reverse.
    #[test]
    fn numbers_and_strings_both_ways() {
        let s = one(&request(&[span(
            "a",
            r#","startTimeUnixNano":1700000000000000000,"endTimeUnixNano":"1700000000000000001","flags":"1","droppedAttributesCount":"2","droppedEventsCount":3,"droppedLinksCount":4.0,"attributes":[
              {"key":"i1","value":{"intValue":"-42"}},
              {"key":"i2","value":{"intValue":42}},
              {"key":"i3","value":{"intValue":"1e3"}},
              {"key":"d1","value":{"doubleValue":1.5}},
              {"key":"d2","value":{"doubleValue":"2.5"}},
              {"key":"d3","value":{"doubleValue":"NaN"}},
              {"key":"d4","value":{"doubleValue":"-Infinity"}},
              {"key":"d5","value":{"doubleValue":"Infinity"}},
              {"key":"d6","value":{"doubleValue":3}}]"#,
        )]));
        assert_eq!(s.start_time_unix_nano, 1_700_000_000_000_000_000);
        assert_eq!(s.end_time_unix_nano, 1_700_000_000_000_000_001);
        assert_eq!(
            (
                s.flags,
                s.dropped_attributes_count,
                s.dropped_events_count,
                s.dropped_links_count
            ),
            (1, 2, 3, 4)
        );
        let a = &s.attributes;
        assert_eq!(attr(a, "i1"), Some(&V::IntValue(-42)));
        assert_eq!(attr(a, "i2"), Some(&V::IntValue(42)));
        assert_eq!(attr(a, "i3"), Some(&V::IntValue(1000)));
        assert_eq!(attr(a, "d1"), Some(&V::DoubleValue(1.5)));
        assert_eq!(attr(a, "d2"), Some(&V::DoubleValue(2.5)));
        assert!(matches!(attr(a, "d3"), Some(V::DoubleValue(f)) if f.is_nan()));
        assert_eq!(attr(a, "d4"), Some(&V::DoubleValue(f64::NEG_INFINITY)));
        assert_eq!(attr(a, "d5"), Some(&V::DoubleValue(f64::INFINITY)));
        assert_eq!(attr(a, "d6"), Some(&V::DoubleValue(3.0)));
        // Values that are no number reject the span, naming field and value.
        for (extra, want) in [
            (
                r#","startTimeUnixNano":"soon""#,
                "startTimeUnixNano \"soon\"",
            ),
            (r#","endTimeUnixNano":-5"#, "endTimeUnixNano -5"),
            (r#","flags":4294967296"#, "flags 4294967296"),
            (
                r#","attributes":[{"key":"n","value":{"intValue":"4.5"}}]"#,
                "attribute `n`: intValue \"4.5\"",
            ),
            (
                r#","attributes":[{"key":"n","value":{"doubleValue":"fast"}}]"#,
                "attribute `n`: doubleValue \"fast\"",
            ),
            (
                r#","events":[{"name":"e","timeUnixNano":{}}]"#,
                "event 0 `e`: timeUnixNano an object",
            ),
        ] {
            let d = decode(request(&[span("bad", extra), span("ok", "")]).as_bytes()).unwrap();
            assert_eq!(spans_of(&d).len(), 1, "{extra}");
            assert!(d.rejected[0].reason.contains(want), "{:?}", d.rejected);
        }
    }

    // 6. AnyValue in all its forms, and the rest of the span.
    #[test]
    fn any_value_forms_and_span_fields() {
        let s = one(&request(&[span(
            "full",
            r#","traceState":"a=b","kind":1,"droppedAttributesCount":0,"attributes":[
              {"key":"s","value":{"stringValue":"x"}},
              {"key":"b","value":{"boolValue":false}},
              {"key":"bytes","value":{"bytesValue":"AQID"}},
              {"key":"arr","value":{"arrayValue":{"values":[{"stringValue":"a"},{"intValue":"1"},{}]}}},
              {"key":"kv","value":{"kvlistValue":{"values":[{"key":"inner","value":{"doubleValue":0.5}}]}}},
              {"key":"empty","value":{}},
              {"key":"novalue"},
              {"key":"nulls","value":{"stringValue":null}},
              {"key":"future","value":{"stringValueStrindex":3,"stringValue":"y"}}],
              "unknownField":{"deep":[1,2,{"x":null}]}"#,
        )]));
        let a = &s.attributes;
        assert_eq!(s.trace_state, "a=b");
        assert_eq!(attr(a, "s"), Some(&V::StringValue("x".into())));
        assert_eq!(attr(a, "b"), Some(&V::BoolValue(false)));
        assert_eq!(attr(a, "bytes"), Some(&V::BytesValue(vec![1, 2, 3])));
        let Some(V::ArrayValue(arr)) = attr(a, "arr") else {
            panic!("{a:?}")
        };
        assert_eq!(arr.values.len(), 3);
        assert_eq!(arr.values[1].value, Some(V::IntValue(1)));
        assert_eq!(arr.values[2].value, None);
        let Some(V::KvlistValue(kv)) = attr(a, "kv") else {
            panic!("{a:?}")
        };
        assert_eq!(kv.values[0].key, "inner");
        assert_eq!(attr(&kv.values, "inner"), Some(&V::DoubleValue(0.5)));
        let find = |k: &str| a.iter().find(|kv| kv.key == k).unwrap();
        assert_eq!(find("empty").value, Some(AnyValue { value: None }));
        assert_eq!(find("novalue").value, None);
        assert_eq!(find("nulls").value, Some(AnyValue { value: None }));
        assert_eq!(attr(a, "future"), Some(&V::StringValue("y".into())));
        // A resource whose attribute is wrong takes its spans with it.
        let json = format!(
            r#"{{"resourceSpans":[{{"resource":{{"attributes":[{{"key":"k","value":{{"bytesValue":"***"}}}}]}},"scopeSpans":[{{"spans":[{}]}}]}},{{"scopeSpans":[{{"spans":[{}]}}]}}]}}"#,
            span("lost", ""),
            span("kept", "")
        );
        let d = decode(json.as_bytes()).unwrap();
        assert_eq!(spans_of(&d).len(), 1);
        assert_eq!(d.rejected[0].spans, 1);
        let r = &d.rejected[0].reason;
        assert!(
            r.contains("resourceSpans[0]") && r.contains("bytesValue"),
            "{r}"
        );
    }

    #[test]
    fn zero_spans_says_why() {
        // snake_case: a message naming the keys, saying lowerCamelCase.
        let d = decode(br#"{"resource_spans":[{"scope_spans":[]}]}"#).unwrap();
        let why = d.empty_reason(false).unwrap();
        assert!(why.contains("`resource_spans` (top level)"), "{why}");
        assert!(why.contains("lowerCamelCase"), "{why}");
        let d = decode(br#"{"resourceSpans":[{"scope_spans":[{"spans":[]}]}]}"#).unwrap();
        let why = d.empty_reason(false).unwrap();
        assert!(why.contains("`scope_spans` (resourceSpans[0])"), "{why}");
        // Another format altogether.
        let d = decode(br#"{"data":[{"traceID":"x","spans":[]}]}"#).unwrap();
        let why = d.empty_reason(false).unwrap();
        assert!(
            why.contains("`data`") && why.contains("another trace format"),
            "{why}"
        );
        // Empty but well-formed: fine as a body; a file needs `resourceSpans`.
        let d = decode(b"{}").unwrap();
        assert!(d.empty_reason(false).is_none());
        assert!(d.empty_reason(true).unwrap().contains("no `resourceSpans`"));
        let d = decode(br#"{"resourceSpans":[]}"#).unwrap();
        assert!(d.empty_reason(true).is_none());
        // Unknown keys next to spans are ignored (proto3 JSON).
        let d = decode(format!(r#"{{"extra":1,{}"#, &request(&[span("a", "")])[1..]).as_bytes())
            .unwrap();
        assert_eq!(spans_of(&d).len(), 1);
        assert!(d.empty_reason(true).is_none());
    }

    #[test]
    fn arrays_of_requests_and_structural_errors() {
        let one_req = request(&[span("a", "")]);
        let d = decode(format!("[{one_req},{one_req}]").as_bytes()).unwrap();
        assert_eq!(d.requests.len(), 2);
        let (merged, _) = d.into_request();
        assert_eq!(merged.resource_spans.len(), 2);
        let d = decode(
            format!(
                r#"[{one_req},{{"resourceSpans":[{{"scopeSpans":[{{"spans":[{}]}}]}}]}}]"#,
                span("b", r#","kind":"X""#)
            )
            .as_bytes(),
        )
        .unwrap();
        assert!(
            d.rejected[0].reason.contains("([1].resourceSpans[0]"),
            "{:?}",
            d.rejected
        );
        // A JSON type where a list belongs fails the document, with a position.
        let e = decode(br#"{"resourceSpans":[{"scopeSpans":[{"spans":5}]}]}"#).unwrap_err();
        assert!(e.to_string().contains("list of spans"), "{e}");
        assert!(decode(br#"{"resourceSpans":[{"#).is_err());
        assert!(decode(b"[1]").is_err());
        assert!(decode(b"{} x").is_err());
        // Invalid UTF-8 is an error with its position too.
        let e =
            decode(b"{\"resourceSpans\":[{\"scopeSpans\":[{\"spans\":[\n{\"name\":\"\xff\"}]}]}]}")
                .unwrap_err();
        assert_eq!(e.line(), 2, "{e}");
    }

    #[test]
    fn a_key_filter_drops_attributes() {
        struct OnlyGenAi;
        impl KeyFilter for OnlyGenAi {
            fn keep(&self, at: AttrsOf, key: &str) -> bool {
                at == AttrsOf::Resource || key.starts_with("gen_ai.")
            }
        }
        let json = request(&[span(
            "a",
            r#","attributes":[{"key":"gen_ai.tool.name","value":{"stringValue":"t"}},{"key":"http.url","value":{"intValue":"not checked"}},{"value":{"stringValue":"v"},"key":"late"}]"#,
        )]);
        let d = decode_with(json.as_bytes(), &OnlyGenAi).unwrap();
        assert!(d.rejected.is_empty(), "{:?}", d.rejected);
        let s = &spans_of(&d)[0];
        let keys: Vec<&str> = s.attributes.iter().map(|kv| kv.key.as_str()).collect();
        assert_eq!(keys, ["gen_ai.tool.name"]);
        let rs = &d.requests[0].resource_spans[0];
        assert_eq!(rs.resource.as_ref().unwrap().attributes.len(), 1);

        // With `keep_json`, a dropped key's string value holding JSON is
        // kept; other values (plain text, a JSON-looking number, an array
        // value, a string replaced by a later member) are not.
        struct OrJson;
        impl KeyFilter for OrJson {
            fn keep(&self, at: AttrsOf, key: &str) -> bool {
                OnlyGenAi.keep(at, key)
            }
            fn keep_json(&self, at: AttrsOf) -> bool {
                at == AttrsOf::Span
            }
        }
        let json = request(&[span(
            "a",
            r#","attributes":[{"key":"m","value":{"stringValue":" [{\"role\":\"user\"}]"}},{"key":"plain","value":{"stringValue":"hi {"}},{"key":"n","value":{"intValue":"7"}},{"key":"arr","value":{"arrayValue":{"values":[{"stringValue":"{}"}]}}},{"key":"later","value":{"stringValue":"{}","boolValue":true}},{"value":{"stringValue":"{\"a\":1}"},"key":"value.first"},{"key":"nul","value":{"stringValue":"{}","intValue":null}},{"key":"gen_ai.x","value":{"stringValue":"kept"}}]"#,
        )]);
        let d = decode_with(json.as_bytes(), &OrJson).unwrap();
        assert!(d.rejected.is_empty(), "{:?}", d.rejected);
        let spans = spans_of(&d);
        let kept: Vec<(&str, &AnyValue)> = spans[0]
            .attributes
            .iter()
            .map(|kv| (kv.key.as_str(), kv.value.as_ref().unwrap()))
            .collect();
        let text = |t: &str| AnyValue {
            value: Some(any_value::Value::StringValue(t.into())),
        };
        assert_eq!(
            kept,
            [
                ("m", &text(" [{\"role\":\"user\"}]")),
                ("value.first", &text("{\"a\":1}")),
                ("nul", &text("{}")),
                ("gen_ai.x", &text("kept")),
            ]
        );
    }

    #[test]
    fn matches_the_serde_derive_on_its_own_output() {
        // What the generated serde writes (hex ids, integer enums, int64 as
        // strings) decodes to the same request.
        let json = request(&[span(
            "a",
            r#","parentSpanId":"0102030405060708","kind":3,"startTimeUnixNano":"5","endTimeUnixNano":"9","attributes":[{"key":"x","value":{"arrayValue":{"values":[{"stringValue":"a"}]}}}],"events":[{"timeUnixNano":"6","name":"e","attributes":[],"droppedAttributesCount":0}],"links":[],"status":{"code":2,"message":"m"},"flags":257"#,
        )]);
        let ours = decode(json.as_bytes()).unwrap().into_request().0;
        let derive: PbRequest = serde_json::from_str(&json).unwrap();
        assert_eq!(ours.to_proto(), derive);
        let again = serde_json::to_string(&derive).unwrap();
        assert_eq!(
            decode(again.as_bytes())
                .unwrap()
                .into_request()
                .0
                .to_proto(),
            derive
        );
        // Unset messages are written as `null` and read back as unset.
        let mut req = derive.clone();
        req.resource_spans[0].resource = None;
        req.resource_spans[0].scope_spans[0].scope = None;
        let sp = &mut req.resource_spans[0].scope_spans[0].spans[0];
        sp.status = None;
        sp.attributes.push(KeyValue {
            key: "unset".into(),
            value: None,
            ..Default::default()
        });
        let text = serde_json::to_string(&req).unwrap();
        assert!(text.contains(r#""status":null"#), "{text}");
        let old: PbRequest = serde_json::from_str(&text).unwrap();
        assert_eq!(old, req);
        assert_eq!(
            decode(text.as_bytes()).unwrap().into_request().0.to_proto(),
            req
        );
        let nulls = request(&[span(
            "n",
            r#","attributes":[{"key":"a","value":{"arrayValue":null,"kvlistValue":null}}]"#,
        )]);
        let old: PbRequest = serde_json::from_str(&nulls).unwrap();
        assert_eq!(
            decode(nulls.as_bytes())
                .unwrap()
                .into_request()
                .0
                .to_proto(),
            old
        );
    }

    /// simd-json and serde_json decode every document alike: the corpus
    /// lines as they are and mutated (bad escapes, control characters,
    /// odd numbers, cuts, stray bytes). When serde_json rejects a document
    /// simd-json must fail too (so serde_json's error is the one given);
    /// when both decode it, the results are the same.
    #[test]
    fn simd_json_decodes_as_serde_json_does() {
        let corpus = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/corpus");
        let mut lines: Vec<Vec<u8>> = Vec::new();
        for dir in std::fs::read_dir(&corpus).unwrap() {
            let path = dir.unwrap().path().join("traces.jsonl");
            if let Ok(text) = std::fs::read(&path) {
                lines.extend(
                    text.split(|&b| b == b'\n')
                        .filter(|l| !l.is_empty())
                        .map(<[u8]>::to_vec),
                );
            }
        }
        assert!(lines.len() > 50, "{} corpus lines", lines.len());
        const PIECES: &[&[u8]] = &[
            b"\\ud800",
            b"\\udc00x",
            b"\\ud83d\\ude00",
            b"\\u0000",
            b"\\x",
            b"\x01",
            b"\x7f",
            b"\xff",
            b"\xc3",
            b"\"",
            b"\\",
            b"1e400",
            b"-0",
            b"18446744073709551616",
            b"-9223372036854775809",
            b"1.0e-7",
            b"0.1",
            b"01",
            b" ",
            b"\t\n",
            b"{",
            b"}",
            b"[",
            b"]",
            b",",
            b":",
            b"null",
            b"\"k\":1,",
            b"true",
            b"NaN",
            b"\xe2\x80\xa8",
        ];
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = |n: usize| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            (seed % n as u64) as usize
        };
        let filter = KeepOnlyGenAi;
        let (mut same, mut both_failed) = (0, 0);
        for round in 0..4000 {
            let mut doc = lines[next(lines.len())].clone();
            if round % 4 != 0 {
                for _ in 0..1 + next(3) {
                    let at = next(doc.len() + 1);
                    let piece = PIECES[next(PIECES.len())];
                    let (end, with): (usize, &[u8]) = match next(3) {
                        0 => (at, piece),
                        1 => ((at + 1 + next(8)).min(doc.len()), b""),
                        _ => ((at + 1).min(doc.len()), piece),
                    };
                    doc.splice(at..end, with.iter().copied());
                }
            }
            let filters: [&dyn KeyFilter; 2] = [&KeepAll, &filter];
            for f in filters {
                let serde = decode_serde(&doc, f);
                let simd = decode_simd(&doc, f);
                match (&serde, &simd) {
                    (Ok(a), Some(b)) => {
                        assert_eq!(
                            format!("{a:?}"),
                            format!("{b:?}"),
                            "{}",
                            String::from_utf8_lossy(&doc)
                        );
                        same += 1;
                    }
                    (Err(_), None) => both_failed += 1,
                    (Ok(_), None) => assert!(round % 4 != 0, "simd-json failed on a corpus line"),
                    (Err(e), Some(_)) => panic!(
                        "serde_json rejects ({e}) what simd-json takes: {}",
                        String::from_utf8_lossy(&doc)
                    ),
                }
            }
        }
        assert!(
            same > 1000 && both_failed > 1000,
            "{same} same, {both_failed} rejected by both"
        );
        // Nesting around both parsers' limits: taken by both, by serde_json
        // alone, by neither.
        let mut kinds = std::collections::BTreeSet::new();
        // Each level is three containers deep, under about eight of the request.
        for depth in [1, 10, 29, 30, 31, 32, 38, 39, 40, 41, 42, 500, 5000] {
            let value = format!(
                "{}{{\"stringValue\":\"x\"}}{}",
                r#"{"arrayValue":{"values":["#.repeat(depth),
                "]}}".repeat(depth)
            );
            let doc = request(&[span(
                "deep",
                &format!(r#","attributes":[{{"key":"k","value":{value}}}]"#),
            )]);
            let serde = decode_serde(doc.as_bytes(), &KeepAll);
            let simd = decode_simd(doc.as_bytes(), &KeepAll);
            kinds.insert((serde.is_ok(), simd.is_some()));
            match (&serde, simd) {
                (Ok(a), Some(b)) => assert_eq!(format!("{a:?}"), format!("{b:?}")),
                (_, None) => {}
                (Err(e), Some(_)) => {
                    panic!("depth {depth}: serde_json rejects ({e}), simd-json takes it")
                }
            }
            assert_eq!(serde.is_ok(), decode_with(doc.as_bytes(), &KeepAll).is_ok());
        }
        assert_eq!(
            kinds.into_iter().collect::<Vec<_>>(),
            [(false, false), (true, false), (true, true)]
        );
    }

    /// Keeps span attributes under `gen_ai.` and those holding JSON.
    struct KeepOnlyGenAi;
    impl KeyFilter for KeepOnlyGenAi {
        fn keep(&self, at: AttrsOf, key: &str) -> bool {
            at != AttrsOf::Span || key.starts_with("gen_ai.")
        }
        fn keep_json(&self, at: AttrsOf) -> bool {
            at == AttrsOf::Span
        }
    }
}
