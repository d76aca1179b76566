//! A hand-driven protobuf decoder of `ExportTraceServiceRequest` into
//! [`Request`]: spans in the compact form ([`Span`], built with one
//! [`SpanBuilder`] per request, their strings borrowed from the body until
//! they are copied into the span's one text buffer), everything else in the
//! same `opentelemetry_proto` structs as `prost::Message::decode`. With a
//! [`KeyFilter`], an attribute whose key the filter drops is skipped
//! without decoding (or allocating) its value. With [`KeepAll`] the result
//! is exactly prost's (tested against it, through [`Request::to_proto`]),
//! but for span attributes' `key_strindex`, which only profiles use.
//!
//! Wire semantics follow prost: the last of a repeated scalar or string
//! field wins, a repeated optional message (resource, scope, status, an
//! attribute's value) is merged, unknown fields are skipped (groups
//! included), a known field with the wrong wire type is an error, and
//! messages nest at most [`RECURSION_LIMIT`] deep (prost's limit, counted
//! the same way), which bounds `AnyValue` nesting: a span attribute holds
//! at most ~47 levels of arrays, or ~31 of key-value lists.
//!
//! Every length prefix is checked against the bytes that remain before
//! anything is read or allocated, so a lying prefix is an error, not an
//! allocation. Errors say what was wrong, at which byte of the body, and
//! in which field (outermost first).

use std::fmt;

use opentelemetry_proto::tonic::common::v1::{
    any_value, AnyValue, ArrayValue, EntityRef, InstrumentationScope, KeyValue, KeyValueList,
};
use opentelemetry_proto::tonic::resource::v1::Resource;
use opentelemetry_proto::tonic::trace::v1::{span, Status};

use super::projection::{holds_json, value_holds_json, AttrsOf, KeepAll, KeyFilter};
use super::span::{Id, NewValue, ResourceSpans, ScopeSpans, Span, SpanBuilder};
use super::Request;

/// How deep messages may nest (the request itself is level 0): prost's
/// limit, so that a body prost accepts is accepted here and the other way
/// round.
pub const RECURSION_LIMIT: u32 = 100;

/// A malformed protobuf body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProtoError {
    /// What was wrong.
    pub reason: String,
    /// Byte offset in the body where it was found.
    pub offset: usize,
    /// Fields from the innermost out (`Span.name`, `ScopeSpans.spans`, ...).
    path: Vec<&'static str>,
}

/// Boxed inside the decoder: a small `Err` keeps every `Result` it returns
/// small, which is measurably faster on the hot path.
type Boxed = Box<ProtoError>;

trait Within {
    fn within(self, field: &'static str) -> Self;
}

impl Within for Boxed {
    #[cold]
    fn within(mut self, field: &'static str) -> Self {
        self.path.push(field);
        self
    }
}

impl ProtoError {
    /// The fields leading to the problem, outermost first, joined by `.`-less
    /// arrows (`ExportTraceServiceRequest.resource_spans > ... > Span.name`).
    pub fn path(&self) -> String {
        let mut p: Vec<&str> = self.path.clone();
        p.reverse();
        p.join(" > ")
    }
}

impl fmt::Display for ProtoError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} at byte {}", self.reason, self.offset)?;
        if !self.path.is_empty() {
            write!(f, " (in {})", self.path())?;
        }
        Ok(())
    }
}

impl std::error::Error for ProtoError {}

/// Decodes a whole `ExportTraceServiceRequest`, keeping every attribute:
/// the same result as `prost::Message::decode`.
pub fn decode(body: &[u8]) -> Result<Request, ProtoError> {
    decode_with(body, &KeepAll)
}

/// Decodes a whole `ExportTraceServiceRequest`, keeping the attributes
/// `filter` keeps (resource, scope, span, event and link attributes, by
/// their key; values nested in a kept attribute are kept whole).
pub fn decode_with(body: &[u8], filter: &dyn KeyFilter) -> Result<Request, ProtoError> {
    let d = Dec {
        origin: body.as_ptr() as usize,
        filter,
    };
    d.request(body).map_err(|e| *e)
}

// Wire types.
const VARINT: u8 = 0;
const FIXED64: u8 = 1;
const LEN: u8 = 2;
const START_GROUP: u8 = 3;
const END_GROUP: u8 = 4;
const FIXED32: u8 = 5;

fn wire_name(wt: u8) -> &'static str {
    match wt {
        VARINT => "Varint",
        FIXED64 => "SixtyFourBit",
        LEN => "LengthDelimited",
        START_GROUP => "StartGroup",
        END_GROUP => "EndGroup",
        _ => "ThirtyTwoBit",
    }
}

type R<T> = Result<T, Boxed>;

struct Dec<'f> {
    /// Address of the body's first byte: offsets are computed from it.
    origin: usize,
    filter: &'f dyn KeyFilter,
}

impl Dec<'_> {
    #[cold]
    fn err(&self, at: &[u8], reason: impl Into<String>) -> Boxed {
        Box::new(ProtoError {
            reason: reason.into(),
            offset: (at.as_ptr() as usize).saturating_sub(self.origin),
            path: Vec::new(),
        })
    }

    #[inline(always)]
    fn varint(&self, b: &mut &[u8]) -> R<u64> {
        // Fast path, inlined: one byte (tags, small lengths) or two (the
        // lengths of most attribute values); the rest out of line.
        let s: &[u8] = b;
        match *s {
            [first, ref rest @ ..] if first < 0x80 => {
                *b = rest;
                Ok(u64::from(first))
            }
            [first, second, ref rest @ ..] if second < 0x80 => {
                *b = rest;
                Ok(u64::from(first & 0x7f) | u64::from(second) << 7)
            }
            _ => self.long_varint(b),
        }
    }

    #[inline(never)]
    fn long_varint(&self, b: &mut &[u8]) -> R<u64> {
        let at = *b;
        prost::encoding::decode_varint(b).map_err(|_| self.err(at, "invalid varint"))
    }

    /// A field's tag and wire type. Inlined with a fast path for the
    /// one-byte keys of every field but the span's `flags`: the decoder
    /// reads a few dozen keys per span.
    #[inline(always)]
    fn key(&self, b: &mut &[u8]) -> R<(u32, u8)> {
        if let Some((&k, rest)) = b.split_first() {
            if (8..0x80).contains(&k) && k & 7 <= FIXED32 {
                *b = rest;
                return Ok((u32::from(k >> 3), k & 7));
            }
        }
        self.long_key(b)
    }

    #[inline(never)]
    fn long_key(&self, b: &mut &[u8]) -> R<(u32, u8)> {
        let at = *b;
        let key = self.varint(b)?;
        if key > u64::from(u32::MAX) {
            return Err(self.err(at, format!("invalid key value: {key}")));
        }
        let wt = (key & 7) as u8;
        if wt > FIXED32 {
            return Err(self.err(at, format!("invalid wire type value: {wt}")));
        }
        let tag = (key as u32) >> 3;
        if tag == 0 {
            return Err(self.err(at, "invalid tag value: 0"));
        }
        Ok((tag, wt))
    }

    #[inline(always)]
    fn expect(&self, at: &[u8], wt: u8, want: u8) -> R<()> {
        if wt == want {
            Ok(())
        } else {
            Err(self.wrong_wire_type(at, wt, want))
        }
    }

    #[cold]
    fn wrong_wire_type(&self, at: &[u8], wt: u8, want: u8) -> Boxed {
        self.err(
            at,
            format!(
                "invalid wire type: {} (expected {})",
                wire_name(wt),
                wire_name(want)
            ),
        )
    }

    /// A length-delimited field's bytes, checked against what remains.
    #[inline(always)]
    fn slice<'a>(&self, wt: u8, b: &mut &'a [u8]) -> R<&'a [u8]> {
        self.expect(b, wt, LEN)?;
        let at = *b;
        let len = self.varint(b)?;
        if len > b.len() as u64 {
            return Err(self.past_end(at, len, b.len()));
        }
        let (inner, rest) = b.split_at(len as usize);
        *b = rest;
        Ok(inner)
    }

    #[cold]
    fn past_end(&self, at: &[u8], len: u64, left: usize) -> Boxed {
        self.err(
            at,
            format!("length {len} runs past the end ({left} bytes left)"),
        )
    }

    /// A nested message's bytes; `depth` is what its parent's fields got.
    #[inline]
    fn message<'a>(&self, wt: u8, b: &mut &'a [u8], depth: u32) -> R<&'a [u8]> {
        // A wrong wire type is reported first (by `slice`), as prost does.
        if depth == 0 && wt == LEN {
            return Err(self.err(b, "recursion limit reached"));
        }
        self.slice(wt, b)
    }

    #[inline]
    fn string(&self, wt: u8, b: &mut &[u8]) -> R<String> {
        self.str(wt, b).map(str::to_owned)
    }

    #[inline]
    fn str<'a>(&self, wt: u8, b: &mut &'a [u8]) -> R<&'a str> {
        let at = *b;
        let s = self.slice(wt, b)?;
        // SIMD validation (CPU features picked at run time): tool arguments
        // and results mix ASCII with other scripts, where std's check goes
        // byte by byte.
        simdutf8::basic::from_utf8(s)
            .map_err(|_| self.err(at, "invalid string value: data is not UTF-8 encoded"))
    }

    #[inline]
    fn bytes(&self, wt: u8, b: &mut &[u8]) -> R<Vec<u8>> {
        self.slice(wt, b).map(<[u8]>::to_vec)
    }

    #[inline]
    fn uvarint(&self, wt: u8, b: &mut &[u8]) -> R<u64> {
        self.expect(b, wt, VARINT)?;
        self.varint(b)
    }

    #[inline]
    fn fixed64(&self, wt: u8, b: &mut &[u8]) -> R<u64> {
        self.expect(b, wt, FIXED64)?;
        match b.split_first_chunk::<8>() {
            Some((v, rest)) => {
                *b = rest;
                Ok(u64::from_le_bytes(*v))
            }
            None => Err(self.err(b, "buffer underflow (8-byte value)")),
        }
    }

    #[inline]
    fn fixed32(&self, wt: u8, b: &mut &[u8]) -> R<u32> {
        self.expect(b, wt, FIXED32)?;
        match b.split_first_chunk::<4>() {
            Some((v, rest)) => {
                *b = rest;
                Ok(u32::from_le_bytes(*v))
            }
            None => Err(self.err(b, "buffer underflow (4-byte value)")),
        }
    }

    /// Skips an unknown field (as prost does, groups included).
    fn skip(&self, wt: u8, tag: u32, b: &mut &[u8], depth: u32) -> R<()> {
        if depth == 0 {
            return Err(self.err(b, "recursion limit reached"));
        }
        let at = *b;
        let len = match wt {
            VARINT => self.varint(b).map(|_| 0)?,
            FIXED64 => 8,
            FIXED32 => 4,
            LEN => self.varint(b)?,
            START_GROUP => loop {
                let inner_at = *b;
                let (inner_tag, inner_wt) = self.key(b)?;
                if inner_wt == END_GROUP {
                    if inner_tag != tag {
                        return Err(self.err(inner_at, "unexpected end group tag"));
                    }
                    break 0;
                }
                self.skip(inner_wt, inner_tag, b, depth - 1)?;
            },
            _ => return Err(self.err(at, "unexpected end group tag")),
        };
        if len > b.len() as u64 {
            return Err(self.err(
                at,
                format!(
                    "unknown field {tag}: length {len} runs past the end ({} bytes left)",
                    b.len()
                ),
            ));
        }
        *b = &b[len as usize..];
        Ok(())
    }

    // ------------------------------------------------------------ messages
    //
    // Each `*_fields` merges one message's bytes into `out`; `depth` is the
    // recursion budget its fields get (prost's `DecodeContext`).

    fn request(&self, body: &[u8]) -> R<Request> {
        let mut out = Request::default();
        let mut b = body;
        let depth = RECURSION_LIMIT;
        // Reused by every span of the request.
        let mut sb = SpanBuilder::default();
        while !b.is_empty() {
            let (tag, wt) = self.key(&mut b)?;
            match tag {
                1 => {
                    let m = self.message(wt, &mut b, depth)?;
                    let mut rs = ResourceSpans::default();
                    self.resource_spans(&mut rs, &mut sb, m, depth - 1)
                        .map_err(|e| e.within("ExportTraceServiceRequest.resource_spans"))?;
                    out.resource_spans.push(rs);
                }
                _ => self.skip(wt, tag, &mut b, depth)?,
            }
        }
        Ok(out)
    }

    fn resource_spans(
        &self,
        out: &mut ResourceSpans,
        sb: &mut SpanBuilder,
        mut b: &[u8],
        depth: u32,
    ) -> R<()> {
        while !b.is_empty() {
            let (tag, wt) = self.key(&mut b)?;
            match tag {
                1 => {
                    let m = self.message(wt, &mut b, depth)?;
                    let r = out.resource.get_or_insert_with(Default::default);
                    self.resource(r, m, depth - 1)
                        .map_err(|e| e.within("ResourceSpans.resource"))?;
                }
                2 => {
                    let m = self.message(wt, &mut b, depth)?;
                    let mut ss = ScopeSpans::default();
                    self.scope_spans(&mut ss, sb, m, depth - 1)
                        .map_err(|e| e.within("ResourceSpans.scope_spans"))?;
                    out.scope_spans.push(ss);
                }
                3 => {
                    out.schema_url = self
                        .string(wt, &mut b)
                        .map_err(|e| e.within("ResourceSpans.schema_url"))?
                }
                _ => self.skip(wt, tag, &mut b, depth)?,
            }
        }
        Ok(())
    }

    fn resource(&self, out: &mut Resource, mut b: &[u8], depth: u32) -> R<()> {
        while !b.is_empty() {
            let (tag, wt) = self.key(&mut b)?;
            match tag {
                1 => {
                    let m = self.message(wt, &mut b, depth)?;
                    self.attribute(
                        &mut out.attributes,
                        m,
                        depth,
                        AttrsOf::Resource,
                        "Resource.attributes",
                    )?;
                }
                2 => out.dropped_attributes_count = self.uvarint(wt, &mut b)? as u32,
                3 => {
                    let m = self.message(wt, &mut b, depth)?;
                    let mut er = EntityRef::default();
                    self.entity_ref(&mut er, m, depth - 1)
                        .map_err(|e| e.within("Resource.entity_refs"))?;
                    out.entity_refs.push(er);
                }
                _ => self.skip(wt, tag, &mut b, depth)?,
            }
        }
        Ok(())
    }

    fn entity_ref(&self, out: &mut EntityRef, mut b: &[u8], depth: u32) -> R<()> {
        while !b.is_empty() {
            let (tag, wt) = self.key(&mut b)?;
            match tag {
                1 => out.schema_url = self.string(wt, &mut b)?,
                2 => out.r#type = self.string(wt, &mut b)?,
                3 => out.id_keys.push(self.string(wt, &mut b)?),
                4 => out.description_keys.push(self.string(wt, &mut b)?),
                _ => self.skip(wt, tag, &mut b, depth)?,
            }
        }
        Ok(())
    }

    fn scope_spans(
        &self,
        out: &mut ScopeSpans,
        sb: &mut SpanBuilder,
        mut b: &[u8],
        depth: u32,
    ) -> R<()> {
        while !b.is_empty() {
            let (tag, wt) = self.key(&mut b)?;
            match tag {
                1 => {
                    let m = self.message(wt, &mut b, depth)?;
                    let s = out.scope.get_or_insert_with(Default::default);
                    self.scope(s, m, depth - 1)
                        .map_err(|e| e.within("ScopeSpans.scope"))?;
                }
                2 => {
                    let m = self.message(wt, &mut b, depth)?;
                    let mut sp = Span::default();
                    sb.start(Some(m.len()));
                    self.span(&mut sp, sb, m, depth - 1)
                        .map_err(|e| e.within("ScopeSpans.spans"))?;
                    sb.finish(&mut sp);
                    out.spans.push(sp);
                }
                3 => out.schema_url = self.string(wt, &mut b)?,
                _ => self.skip(wt, tag, &mut b, depth)?,
            }
        }
        Ok(())
    }

    fn scope(&self, out: &mut InstrumentationScope, mut b: &[u8], depth: u32) -> R<()> {
        while !b.is_empty() {
            let (tag, wt) = self.key(&mut b)?;
            match tag {
                1 => out.name = self.string(wt, &mut b)?,
                2 => out.version = self.string(wt, &mut b)?,
                3 => {
                    let m = self.message(wt, &mut b, depth)?;
                    self.attribute(
                        &mut out.attributes,
                        m,
                        depth,
                        AttrsOf::Scope,
                        "InstrumentationScope.attributes",
                    )?;
                }
                4 => out.dropped_attributes_count = self.uvarint(wt, &mut b)? as u32,
                _ => self.skip(wt, tag, &mut b, depth)?,
            }
        }
        Ok(())
    }

    /// One span's fields into `out`, its name and attributes into `sb`
    /// (the caller finishes the span).
    fn span(&self, out: &mut Span, sb: &mut SpanBuilder, mut b: &[u8], depth: u32) -> R<()> {
        while !b.is_empty() {
            let (tag, wt) = self.key(&mut b)?;
            match tag {
                1 => out.trace_id = Id::new(self.slice(wt, &mut b)?),
                2 => out.span_id = Id::new(self.slice(wt, &mut b)?),
                3 => out.trace_state = self.string(wt, &mut b)?,
                4 => out.parent_span_id = Id::new(self.slice(wt, &mut b)?),
                5 => sb.name(self.str(wt, &mut b).map_err(|e| e.within("Span.name"))?),
                6 => out.kind = self.uvarint(wt, &mut b)? as i32,
                7 => out.start_time_unix_nano = self.fixed64(wt, &mut b)?,
                8 => out.end_time_unix_nano = self.fixed64(wt, &mut b)?,
                9 => {
                    let m = self.message(wt, &mut b, depth)?;
                    self.span_attribute(sb, m, depth - 1)
                        .map_err(|e| e.within("Span.attributes"))?;
                }
                10 => out.dropped_attributes_count = self.uvarint(wt, &mut b)? as u32,
                11 => {
                    let m = self.message(wt, &mut b, depth)?;
                    let mut ev = span::Event::default();
                    self.event(&mut ev, m, depth - 1)
                        .map_err(|e| e.within("Span.events"))?;
                    out.events.push(ev);
                }
                12 => out.dropped_events_count = self.uvarint(wt, &mut b)? as u32,
                13 => {
                    let m = self.message(wt, &mut b, depth)?;
                    let mut l = span::Link::default();
                    self.link(&mut l, m, depth - 1)
                        .map_err(|e| e.within("Span.links"))?;
                    out.links.push(l);
                }
                14 => out.dropped_links_count = self.uvarint(wt, &mut b)? as u32,
                15 => {
                    let m = self.message(wt, &mut b, depth)?;
                    let s = out.status.get_or_insert_with(Default::default);
                    self.status(s, m, depth - 1)
                        .map_err(|e| e.within("Span.status"))?;
                }
                16 => out.flags = self.fixed32(wt, &mut b)?,
                _ => self.skip(wt, tag, &mut b, depth)?,
            }
        }
        Ok(())
    }

    fn event(&self, out: &mut span::Event, mut b: &[u8], depth: u32) -> R<()> {
        while !b.is_empty() {
            let (tag, wt) = self.key(&mut b)?;
            match tag {
                1 => out.time_unix_nano = self.fixed64(wt, &mut b)?,
                2 => out.name = self.string(wt, &mut b)?,
                3 => {
                    let m = self.message(wt, &mut b, depth)?;
                    self.attribute(
                        &mut out.attributes,
                        m,
                        depth,
                        AttrsOf::Event,
                        "Event.attributes",
                    )?;
                }
                4 => out.dropped_attributes_count = self.uvarint(wt, &mut b)? as u32,
                _ => self.skip(wt, tag, &mut b, depth)?,
            }
        }
        Ok(())
    }

    fn link(&self, out: &mut span::Link, mut b: &[u8], depth: u32) -> R<()> {
        while !b.is_empty() {
            let (tag, wt) = self.key(&mut b)?;
            match tag {
                1 => out.trace_id = self.bytes(wt, &mut b)?,
                2 => out.span_id = self.bytes(wt, &mut b)?,
                3 => out.trace_state = self.string(wt, &mut b)?,
                4 => {
                    let m = self.message(wt, &mut b, depth)?;
                    self.attribute(
                        &mut out.attributes,
                        m,
                        depth,
                        AttrsOf::Link,
                        "Link.attributes",
                    )?;
                }
                5 => out.dropped_attributes_count = self.uvarint(wt, &mut b)? as u32,
                6 => out.flags = self.fixed32(wt, &mut b)?,
                _ => self.skip(wt, tag, &mut b, depth)?,
            }
        }
        Ok(())
    }

    fn status(&self, out: &mut Status, mut b: &[u8], depth: u32) -> R<()> {
        while !b.is_empty() {
            let (tag, wt) = self.key(&mut b)?;
            match tag {
                2 => out.message = self.string(wt, &mut b)?,
                3 => out.code = self.uvarint(wt, &mut b)? as i32,
                _ => self.skip(wt, tag, &mut b, depth)?,
            }
        }
        Ok(())
    }

    /// One attribute. With `at`, the filter decides by the (last) key: a
    /// value that comes after a dropped key is skipped undecoded; one that
    /// came before the key was decoded and is dropped with it. `None`: the
    /// attribute is dropped.
    fn key_value(&self, bytes: &[u8], depth: u32, at: Option<AttrsOf>) -> R<Option<KeyValue>> {
        let mut kv = KeyValue::default();
        let mut b = bytes;
        // Whether the key seen last is dropped (values after it are skipped).
        let mut dropped = false;
        let mut key_seen = false;
        let mut skipped_value = false;
        let keep_json = at.is_some_and(|a| self.filter.keep_json(a));
        // A dropped key, copied only if its value holds JSON after all.
        let mut json_key = "";
        while !b.is_empty() {
            let (tag, wt) = self.key(&mut b)?;
            match tag {
                1 => {
                    let key = self.str(wt, &mut b).map_err(|e| e.within("KeyValue.key"))?;
                    key_seen = true;
                    dropped = at.is_some_and(|a| !self.filter.keep(a, key));
                    if !dropped {
                        if skipped_value {
                            // A kept key after a skipped value (keys given
                            // twice): decode it all again, then decide.
                            return self.key_value_whole(bytes, depth, at);
                        }
                        kv.key = key.to_owned();
                    } else if keep_json {
                        json_key = key;
                    }
                }
                // A dropped key's value is decoded only if it holds JSON
                // (`KeyFilter::keep_json`).
                2 if dropped && !(keep_json && self.holds_json(wt, b)) => {
                    self.slice(wt, &mut b)?;
                    skipped_value = true;
                }
                2 => {
                    let m = self.message(wt, &mut b, depth)?;
                    let v = kv.value.get_or_insert_with(Default::default);
                    self.any_value(v, m, depth - 1)
                        .map_err(|e| e.within("KeyValue.value"))?;
                }
                3 => kv.key_strindex = self.uvarint(wt, &mut b)? as i32,
                _ => self.skip(wt, tag, &mut b, depth)?,
            }
        }
        if !key_seen {
            dropped = at.is_some_and(|a| !self.filter.keep(a, ""));
        }
        if !dropped {
            return Ok(Some(kv));
        }
        let json = keep_json && value_holds_json(kv.value.as_ref());
        if json {
            kv.key = json_key.to_owned();
        }
        Ok(json.then_some(kv))
    }

    /// Whether the length-delimited AnyValue at the front of `b` is a
    /// string holding JSON, read without decoding it (its last member
    /// decides, as in the full decode; a malformed one says no, and is
    /// skipped as a dropped value is).
    fn holds_json(&self, wt: u8, b: &[u8]) -> bool {
        let mut b = b;
        let Ok(mut m) = self.slice(wt, &mut b) else {
            return false;
        };
        let mut json = false;
        while !m.is_empty() {
            let Ok((tag, wt)) = self.key(&mut m) else {
                return false;
            };
            match tag {
                1 => {
                    let mut rest = m;
                    let Ok(t) = self.slice(wt, &mut rest) else {
                        return false;
                    };
                    // The last member, with an ASCII byte other than `{` or
                    // `[` after the spaces `trim_start` takes: not JSON,
                    // whatever its other bytes, so they are not checked as
                    // UTF-8 (the common dropped value).
                    let first = t
                        .iter()
                        .find(|&&c| !matches!(c, b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r'));
                    if rest.is_empty() && first.is_some_and(|&c| c < 0x80 && c != b'{' && c != b'[')
                    {
                        return false;
                    }
                    match self.str(wt, &mut m) {
                        Ok(t) => json = holds_json(t),
                        Err(_) => return false,
                    }
                }
                _ => {
                    json = false;
                    if self.skip(wt, tag, &mut m, 1).is_err() {
                        return false;
                    }
                }
            }
        }
        json
    }

    /// One attribute of a list at `at` (`within` names the field in errors),
    /// pushed unless the filter drops it.
    fn attribute(
        &self,
        out: &mut Vec<KeyValue>,
        bytes: &[u8],
        depth: u32,
        at: AttrsOf,
        within: &'static str,
    ) -> R<()> {
        if let Some(kv) = self
            .key_value(bytes, depth - 1, Some(at))
            .map_err(|e| e.within(within))?
        {
            out.push(kv);
        }
        Ok(())
    }

    /// [`Dec::key_value`] decoding everything, the filter asked at the end.
    fn key_value_whole(
        &self,
        bytes: &[u8],
        depth: u32,
        at: Option<AttrsOf>,
    ) -> R<Option<KeyValue>> {
        let kv = self.key_value(bytes, depth, None)?.unwrap_or_default();
        let keep = at.is_none_or(|a| self.filter.keep(a, &kv.key))
            || at.is_some_and(|a| self.filter.keep_json(a)) && value_holds_json(kv.value.as_ref());
        Ok(keep.then_some(kv))
    }

    /// One span attribute into `sb`, unless the filter drops it: as
    /// [`Dec::key_value`] decides, with the value borrowed from the body.
    fn span_attribute(&self, sb: &mut SpanBuilder, bytes: &[u8], depth: u32) -> R<()> {
        const AT: AttrsOf = AttrsOf::Span;
        let mut key = "";
        let mut value = NewValue::Absent;
        let mut b = bytes;
        let mut dropped = false;
        let mut key_seen = false;
        let mut skipped_value = false;
        let keep_json = self.filter.keep_json(AT);
        let mut json_key = "";
        while !b.is_empty() {
            let (tag, wt) = self.key(&mut b)?;
            match tag {
                1 => {
                    let k = self.str(wt, &mut b).map_err(|e| e.within("KeyValue.key"))?;
                    key_seen = true;
                    dropped = !self.filter.keep(AT, k);
                    if !dropped {
                        if skipped_value {
                            // A kept key after a skipped value (keys given
                            // twice): decode it all again, then decide.
                            let (k, v) = self.span_key_value(bytes, depth)?;
                            let keep = self.filter.keep(AT, k)
                                || keep_json && matches!(v, NewValue::Str(t) if holds_json(t));
                            if keep {
                                sb.attr(k, v);
                            }
                            return Ok(());
                        }
                        key = k;
                    } else if keep_json {
                        json_key = k;
                    }
                }
                2 if dropped && !(keep_json && self.holds_json(wt, b)) => {
                    self.slice(wt, &mut b)?;
                    skipped_value = true;
                }
                2 => {
                    let m = self.message(wt, &mut b, depth)?;
                    self.any_input(&mut value, m, depth - 1)
                        .map_err(|e| e.within("KeyValue.value"))?;
                }
                // `key_strindex`: profiles only, not kept.
                3 => {
                    self.uvarint(wt, &mut b)?;
                }
                _ => self.skip(wt, tag, &mut b, depth)?,
            }
        }
        if !key_seen {
            dropped = !self.filter.keep(AT, "");
        }
        if !dropped {
            sb.attr(key, value);
        } else if keep_json && matches!(value, NewValue::Str(t) if holds_json(t)) {
            sb.attr(json_key, value);
        }
        Ok(())
    }

    /// A whole span attribute, nothing skipped: its (last) key and value.
    fn span_key_value<'b>(&self, mut b: &'b [u8], depth: u32) -> R<(&'b str, NewValue<'b>)> {
        let mut key = "";
        let mut value = NewValue::Absent;
        while !b.is_empty() {
            let (tag, wt) = self.key(&mut b)?;
            match tag {
                1 => key = self.str(wt, &mut b).map_err(|e| e.within("KeyValue.key"))?,
                2 => {
                    let m = self.message(wt, &mut b, depth)?;
                    self.any_input(&mut value, m, depth - 1)
                        .map_err(|e| e.within("KeyValue.value"))?;
                }
                3 => {
                    self.uvarint(wt, &mut b)?;
                }
                _ => self.skip(wt, tag, &mut b, depth)?,
            }
        }
        Ok((key, value))
    }

    /// An `AnyValue` merged into `out` as prost merges it (a member
    /// replaces the one before, an array or list merges into one of its
    /// kind), strings borrowed from the body.
    fn any_input<'b>(&self, out: &mut NewValue<'b>, mut b: &'b [u8], depth: u32) -> R<()> {
        if matches!(out, NewValue::Absent) {
            *out = NewValue::Empty;
        }
        while !b.is_empty() {
            let (tag, wt) = self.key(&mut b)?;
            match tag {
                1 => *out = NewValue::Str(self.str(wt, &mut b)?),
                2 => *out = NewValue::Bool(self.uvarint(wt, &mut b)? != 0),
                3 => *out = NewValue::Int(self.uvarint(wt, &mut b)? as i64),
                4 => *out = NewValue::Double(f64::from_bits(self.fixed64(wt, &mut b)?)),
                5..=8 => {
                    // Rare kinds: decoded into prost's value, merged into
                    // what came before as prost would.
                    let mut v = match std::mem::replace(out, NewValue::Empty) {
                        NewValue::Nested(v) => v,
                        _ => AnyValue::default(),
                    };
                    self.any_value_field(&mut v, tag, wt, &mut b, depth)?;
                    *out = NewValue::Nested(v);
                }
                _ => self.skip(wt, tag, &mut b, depth)?,
            }
        }
        Ok(())
    }

    fn any_value(&self, out: &mut AnyValue, mut b: &[u8], depth: u32) -> R<()> {
        while !b.is_empty() {
            let (tag, wt) = self.key(&mut b)?;
            self.any_value_field(out, tag, wt, &mut b, depth)?;
        }
        Ok(())
    }

    /// One field of an `AnyValue` merged into `out`.
    fn any_value_field(
        &self,
        out: &mut AnyValue,
        tag: u32,
        wt: u8,
        b: &mut &[u8],
        depth: u32,
    ) -> R<()> {
        use any_value::Value;
        match tag {
            1 => out.value = Some(Value::StringValue(self.string(wt, b)?)),
            2 => out.value = Some(Value::BoolValue(self.uvarint(wt, b)? != 0)),
            3 => out.value = Some(Value::IntValue(self.uvarint(wt, b)? as i64)),
            4 => {
                let bits = self.fixed64(wt, b)?;
                out.value = Some(Value::DoubleValue(f64::from_bits(bits)));
            }
            5 => {
                let m = self.message(wt, b, depth)?;
                // prost's oneof: merge into the same variant, else start anew.
                if !matches!(out.value, Some(Value::ArrayValue(_))) {
                    out.value = Some(Value::ArrayValue(ArrayValue::default()));
                }
                if let Some(Value::ArrayValue(a)) = &mut out.value {
                    self.array(a, m, depth - 1)
                        .map_err(|e| e.within("AnyValue.array_value"))?;
                }
            }
            6 => {
                let m = self.message(wt, b, depth)?;
                if !matches!(out.value, Some(Value::KvlistValue(_))) {
                    out.value = Some(Value::KvlistValue(KeyValueList::default()));
                }
                if let Some(Value::KvlistValue(l)) = &mut out.value {
                    self.kvlist(l, m, depth - 1)
                        .map_err(|e| e.within("AnyValue.kvlist_value"))?;
                }
            }
            7 => out.value = Some(Value::BytesValue(self.bytes(wt, b)?)),
            8 => out.value = Some(Value::StringValueStrindex(self.uvarint(wt, b)? as i32)),
            _ => self.skip(wt, tag, b, depth)?,
        }
        Ok(())
    }

    fn array(&self, out: &mut ArrayValue, mut b: &[u8], depth: u32) -> R<()> {
        while !b.is_empty() {
            let (tag, wt) = self.key(&mut b)?;
            match tag {
                1 => {
                    let m = self.message(wt, &mut b, depth)?;
                    let mut v = AnyValue::default();
                    self.any_value(&mut v, m, depth - 1)
                        .map_err(|e| e.within("ArrayValue.values"))?;
                    out.values.push(v);
                }
                _ => self.skip(wt, tag, &mut b, depth)?,
            }
        }
        Ok(())
    }

    fn kvlist(&self, out: &mut KeyValueList, mut b: &[u8], depth: u32) -> R<()> {
        while !b.is_empty() {
            let (tag, wt) = self.key(&mut b)?;
            match tag {
                1 => {
                    let m = self.message(wt, &mut b, depth)?;
                    let kv = self
                        .key_value(m, depth - 1, None)
                        .map_err(|e| e.within("KeyValueList.values"))?
                        .unwrap_or_default();
                    out.values.push(kv);
                }
                _ => self.skip(wt, tag, &mut b, depth)?,
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest as PbRequest;
    use opentelemetry_proto::tonic::trace::v1::{ResourceSpans, ScopeSpans, Span};
    use prost::Message;

    /// prost's request as ours compares: span attributes' `key_strindex`
    /// (profiles only) is not kept.
    fn comparable(mut r: PbRequest) -> PbRequest {
        for rs in &mut r.resource_spans {
            for ss in &mut rs.scope_spans {
                for s in &mut ss.spans {
                    s.attributes.iter_mut().for_each(|kv| kv.key_strindex = 0);
                }
            }
        }
        r
    }

    fn pb_files() -> Vec<std::path::PathBuf> {
        fn walk(dir: &std::path::Path, out: &mut Vec<std::path::PathBuf>) {
            for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
                let p = e.path();
                if p.is_dir() {
                    walk(&p, out);
                } else if p.extension().is_some_and(|x| x == "pb") {
                    out.push(p);
                }
            }
        }
        let mut out = Vec::new();
        walk(
            &std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data"),
            &mut out,
        );
        out
    }

    /// Same result as prost, or both fail.
    fn same_as_prost(body: &[u8]) -> bool {
        match (PbRequest::decode(body), decode(body)) {
            (Ok(a), Ok(b)) => {
                assert_eq!(comparable(a).encode_to_vec(), b.to_proto().encode_to_vec());
                true
            }
            (Err(_), Err(_)) => false,
            (a, b) => panic!("prost {a:?} vs ours {b:?} on {body:?}"),
        }
    }

    #[test]
    fn every_pb_under_tests_data_decodes_as_prost_does() {
        let files = pb_files();
        let mut spans = 0;
        for f in &files {
            let body = std::fs::read(f).unwrap();
            // Both take it (and agree) or both refuse it.
            if let Ok(a) = PbRequest::decode(body.as_slice()) {
                let b = decode(&body).unwrap();
                assert!(comparable(a.clone()) == b.to_proto(), "{}", f.display());
                assert!(Request::from(a) == b, "{}", f.display());
                spans += super::super::span_count(&b);
            } else {
                assert!(decode(&body).is_err(), "{}", f.display());
            }
        }
        assert!(files.len() > 5 && spans > 0, "{} files", files.len());
    }

    /// A small deterministic generator (xorshift), so failures repeat.
    struct Rng(u64);
    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0
        }
        fn below(&mut self, n: u64) -> u64 {
            self.next() % n
        }
        fn bytes(&mut self, max: u64) -> Vec<u8> {
            (0..self.below(max + 1))
                .map(|_| self.next() as u8)
                .collect()
        }
        fn string(&mut self) -> String {
            const WORDS: [&str; 8] = [
                "gen_ai.tool.name",
                "http.url",
                "é",
                "x",
                "",
                "λ→",
                "{",
                " [",
            ];
            (0..self.below(3))
                .map(|_| WORDS[self.below(8) as usize])
                .collect()
        }
        fn any(&mut self, depth: u32) -> AnyValue {
            use any_value::Value;
            let v = match self.below(if depth > 3 { 7 } else { 9 }) {
                0 => None,
                1 => Some(Value::StringValue(self.string())),
                2 => Some(Value::BoolValue(self.below(2) == 1)),
                3 => Some(Value::IntValue(self.next() as i64)),
                4 => Some(Value::DoubleValue(f64::from_bits(self.next()))),
                5 => Some(Value::BytesValue(self.bytes(5))),
                6 => Some(Value::StringValueStrindex(self.next() as i32)),
                7 => Some(Value::ArrayValue(ArrayValue {
                    values: (0..self.below(3)).map(|_| self.any(depth + 1)).collect(),
                })),
                _ => Some(Value::KvlistValue(KeyValueList {
                    values: self.kvs(depth + 1),
                })),
            };
            AnyValue { value: v }
        }
        fn kvs(&mut self, depth: u32) -> Vec<KeyValue> {
            (0..self.below(4))
                .map(|_| KeyValue {
                    key: self.string(),
                    value: (self.below(4) > 0).then(|| self.any(depth)),
                    key_strindex: if self.below(4) == 0 {
                        self.next() as i32
                    } else {
                        0
                    },
                })
                .collect()
        }
        fn span(&mut self) -> Span {
            Span {
                trace_id: self.bytes(16),
                span_id: self.bytes(8),
                trace_state: self.string(),
                parent_span_id: self.bytes(8),
                flags: self.next() as u32,
                name: self.string(),
                kind: self.below(7) as i32 - 1,
                start_time_unix_nano: self.next(),
                end_time_unix_nano: self.next(),
                attributes: self.kvs(0),
                dropped_attributes_count: self.below(3) as u32,
                events: (0..self.below(3))
                    .map(|_| span::Event {
                        time_unix_nano: self.next(),
                        name: self.string(),
                        attributes: self.kvs(0),
                        dropped_attributes_count: self.below(2) as u32,
                    })
                    .collect(),
                dropped_events_count: self.below(2) as u32,
                links: (0..self.below(2))
                    .map(|_| span::Link {
                        trace_id: self.bytes(16),
                        span_id: self.bytes(8),
                        trace_state: self.string(),
                        attributes: self.kvs(0),
                        dropped_attributes_count: self.below(2) as u32,
                        flags: self.next() as u32,
                    })
                    .collect(),
                dropped_links_count: self.below(2) as u32,
                status: (self.below(2) == 0).then(|| Status {
                    message: self.string(),
                    code: self.below(4) as i32,
                }),
            }
        }
        fn request(&mut self) -> PbRequest {
            PbRequest {
                resource_spans: (0..self.below(3))
                    .map(|_| ResourceSpans {
                        resource: (self.below(3) > 0).then(|| Resource {
                            attributes: self.kvs(0),
                            dropped_attributes_count: self.below(2) as u32,
                            entity_refs: (0..self.below(2))
                                .map(|_| EntityRef {
                                    schema_url: self.string(),
                                    r#type: self.string(),
                                    id_keys: (0..self.below(3)).map(|_| self.string()).collect(),
                                    description_keys: (0..self.below(2))
                                        .map(|_| self.string())
                                        .collect(),
                                })
                                .collect(),
                        }),
                        scope_spans: (0..self.below(3))
                            .map(|_| ScopeSpans {
                                scope: (self.below(2) == 0).then(|| InstrumentationScope {
                                    name: self.string(),
                                    version: self.string(),
                                    attributes: self.kvs(0),
                                    dropped_attributes_count: self.below(2) as u32,
                                }),
                                spans: (0..self.below(4)).map(|_| self.span()).collect(),
                                schema_url: self.string(),
                            })
                            .collect(),
                        schema_url: self.string(),
                    })
                    .collect(),
            }
        }
    }

    #[test]
    fn random_valid_messages_decode_as_prost_does() {
        let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
        for _ in 0..2000 {
            let req = rng.request();
            let body = req.encode_to_vec();
            assert!(same_as_prost(&body));
        }
    }

    #[test]
    fn damaged_bodies_fail_where_prost_fails_and_never_panic() {
        // Truncations and flipped bytes of valid messages: either both
        // decoders take the body (and agree on it) or both refuse it.
        let mut rng = Rng(42);
        for _ in 0..300 {
            let body = rng.request().encode_to_vec();
            if body.is_empty() {
                continue;
            }
            for _ in 0..10 {
                let mut bad = body.clone();
                match rng.below(3) {
                    0 => bad.truncate(rng.below(body.len() as u64) as usize),
                    1 => {
                        let i = rng.below(body.len() as u64) as usize;
                        bad[i] = rng.next() as u8;
                    }
                    _ => {
                        let i = rng.below(body.len() as u64) as usize;
                        bad.insert(i, rng.next() as u8);
                    }
                }
                same_as_prost(&bad);
            }
        }
    }

    #[test]
    fn repeated_fields_merge_and_last_wins_as_in_prost() {
        // Two resources, two statuses, a string given twice, unknown
        // fields and a group: written by hand.
        let mut span = Vec::new();
        span.extend_from_slice(b"\x2a\x01a\x2a\x01b"); // name "a" then "b"
        span.extend_from_slice(b"\x7a\x03\x12\x01m"); // status.message "m"
        span.extend_from_slice(b"\x7a\x02\x18\x02"); // status.code 2
        span.extend_from_slice(b"\xa8\x06\x07"); // unknown field 101 varint
        span.extend_from_slice(b"\xab\x06\x08\x01\xac\x06"); // group 101 {1: 1}
        let mut ss = vec![0x12, span.len() as u8];
        ss.extend_from_slice(&span);
        let mut rs = b"\x0a\x02\x10\x03\x0a\x02\x10\x04".to_vec(); // resource twice
        rs.extend_from_slice(&[0x12, ss.len() as u8]);
        rs.extend_from_slice(&ss);
        let mut body = vec![0x0a, rs.len() as u8];
        body.extend_from_slice(&rs);
        assert!(same_as_prost(&body));
        let r = decode(&body).unwrap();
        let s = &r.resource_spans[0].scope_spans[0].spans[0];
        assert_eq!(s.name(), "b");
        assert_eq!(s.status.as_ref().unwrap().message, "m");
        assert_eq!(s.status.as_ref().unwrap().code, 2);
    }

    #[test]
    fn errors_say_what_and_where() {
        // A span whose name is not UTF-8.
        let body = b"\x0a\x08\x12\x06\x12\x04\x2a\x02\xff\xfe";
        let e = decode(body).unwrap_err();
        assert!(PbRequest::decode(&body[..]).is_err());
        assert!(e.reason.contains("UTF-8"), "{e}");
        assert_eq!(e.offset, 7);
        assert_eq!(
            e.path(),
            "ExportTraceServiceRequest.resource_spans > ResourceSpans.scope_spans > \
             ScopeSpans.spans > Span.name"
        );
        // A length prefix far past the end: an error, nothing allocated.
        let e = decode(b"\x0a\xff\xff\xff\xff\x0f").unwrap_err();
        assert!(e.reason.contains("runs past the end"), "{e}");
        let e = decode(b"\x0a\x02\x12").unwrap_err();
        assert!(e.to_string().contains("at byte"), "{e}");
        // Wrong wire type for a known field.
        let e = decode(b"\x08\x01").unwrap_err();
        assert!(e.reason.contains("wire type"), "{e}");
    }

    /// A span attribute nested `levels` arrays deep.
    fn nested_arrays(levels: usize) -> Vec<u8> {
        let mut v: Vec<u8> = b"\x10\x01".to_vec(); // AnyValue { bool_value: true }
        fn wrap(tag: u8, inner: &[u8]) -> Vec<u8> {
            let mut out = vec![tag];
            prost::encoding::encode_varint(inner.len() as u64, &mut out);
            out.extend_from_slice(inner);
            out
        }
        for _ in 0..levels {
            let array = wrap(0x0a, &v); // ArrayValue.values
            v = wrap(0x2a, &array); // AnyValue.array_value
        }
        let kv = [b"\x0a\x01k".to_vec(), wrap(0x12, &v)].concat();
        let span = wrap(0x4a, &kv);
        let ss = wrap(0x12, &span);
        let rs = wrap(0x12, &ss);
        wrap(0x0a, &rs)
    }

    #[test]
    fn nesting_is_bounded_like_prost() {
        let mut last_ok = 0;
        for levels in [1, 10, 40, 46, 47, 48, 49, 60, 500, 5000] {
            let body = nested_arrays(levels);
            if same_as_prost(&body) {
                last_ok = levels;
            }
        }
        // Request, resource spans, scope spans, span, attribute, value: 5
        // levels below the request; each array adds two; prost stops past 100.
        assert_eq!(last_ok, 47);
        assert!(decode(&nested_arrays(5000))
            .unwrap_err()
            .reason
            .contains("recursion"));
    }

    struct Only(&'static [&'static str]);
    impl KeyFilter for Only {
        fn keep(&self, at: AttrsOf, key: &str) -> bool {
            at == AttrsOf::Resource || self.0.contains(&key)
        }
    }

    /// [`Only`], and span attributes whose string value holds JSON.
    struct OnlyOrJson(Only);
    impl KeyFilter for OnlyOrJson {
        fn keep(&self, at: AttrsOf, key: &str) -> bool {
            self.0.keep(at, key)
        }
        fn keep_json(&self, at: AttrsOf) -> bool {
            at == AttrsOf::Span
        }
    }

    #[test]
    fn a_filter_drops_attributes_without_decoding_their_values() {
        let mut rng = Rng(7);
        let filter = Only(&["x", "é", "http.url"]);
        let or_json = OnlyOrJson(Only(&["x", "é", "http.url"]));
        for n in 0..1000 {
            let filter: &dyn KeyFilter = if n % 2 == 0 { &filter } else { &or_json };
            let req = rng.request();
            let body = req.encode_to_vec();
            let got = decode_with(&body, filter).unwrap();
            // What prost gives, with the filter applied afterwards.
            let mut want = req.clone();
            let json = |kv: &KeyValue| {
                filter.keep_json(AttrsOf::Span) && value_holds_json(kv.value.as_ref())
            };
            for rs in &mut want.resource_spans {
                for ss in &mut rs.scope_spans {
                    if let Some(s) = &mut ss.scope {
                        s.attributes
                            .retain(|kv| filter.keep(AttrsOf::Scope, &kv.key));
                    }
                    for s in &mut ss.spans {
                        s.attributes
                            .retain(|kv| filter.keep(AttrsOf::Span, &kv.key) || json(kv));
                        for e in &mut s.events {
                            e.attributes
                                .retain(|kv| filter.keep(AttrsOf::Event, &kv.key));
                        }
                        for l in &mut s.links {
                            l.attributes
                                .retain(|kv| filter.keep(AttrsOf::Link, &kv.key));
                        }
                    }
                }
            }
            assert_eq!(
                got.to_proto().encode_to_vec(),
                comparable(want).encode_to_vec()
            );
        }
        // A dropped attribute's value is not decoded: broken UTF-8 in it
        // passes; in a kept one it fails.
        let span = |key: &[u8]| {
            let kv = [&[0x0a, key.len() as u8], key, b"\x12\x04\x0a\x02\xff\xfe"].concat();
            let span = [&[0x4a, kv.len() as u8][..], &kv].concat();
            let ss = [&[0x12, span.len() as u8][..], &span].concat();
            let rs = [&[0x12, ss.len() as u8][..], &ss].concat();
            [&[0x0a, rs.len() as u8][..], &rs].concat()
        };
        let dropped = decode_with(&span(b"llm.input_messages"), &filter).unwrap();
        assert_eq!(
            dropped.resource_spans[0].scope_spans[0].spans[0].attr_count(),
            0
        );
        assert!(decode_with(&span(b"x"), &filter).is_err());
        let dropped = decode_with(&span(b"llm.input_messages"), &or_json).unwrap();
        assert_eq!(
            dropped.resource_spans[0].scope_spans[0].spans[0].attr_count(),
            0
        );
        // A dropped key's string value is kept when `trim_start` leaves
        // JSON: after a vertical tab or a non-ASCII space too, and only
        // its last member counts.
        let with_value = |value: &[u8]| {
            let mut kv = b"\x0a\x01m\x12".to_vec();
            kv.push(value.len() as u8);
            kv.extend_from_slice(value);
            let span = [&[0x4a, kv.len() as u8][..], &kv].concat();
            let ss = [&[0x12, span.len() as u8][..], &span].concat();
            let rs = [&[0x12, ss.len() as u8][..], &ss].concat();
            [&[0x0a, rs.len() as u8][..], &rs].concat()
        };
        let string = |t: &str| [&[0x0a, t.len() as u8][..], t.as_bytes()].concat();
        for (value, kept) in [
            (string("\x0b{}"), true),
            (string("\u{a0}[1]"), true),
            (string(" x{}"), false),
            (string("\u{a0}x"), false),
            ([string("no"), string("{}")].concat(), true),
            ([string("{}"), string("no")].concat(), false),
        ] {
            let got = decode_with(&with_value(&value), &or_json).unwrap();
            let n = got.resource_spans[0].scope_spans[0].spans[0].attr_count();
            assert_eq!(n == 1, kept, "{value:?}");
        }
        // Value before key, and a key given twice: decided by the last key.
        let kv = b"\x12\x03\x0a\x01v\x0a\x01x\x0a\x01y\x0a\x01x";
        let span = [&[0x4a, kv.len() as u8][..], kv].concat();
        let ss = [&[0x12, span.len() as u8][..], &span].concat();
        let rs = [&[0x12, ss.len() as u8][..], &ss].concat();
        let body = [&[0x0a, rs.len() as u8][..], &rs].concat();
        let got = decode_with(&body, &filter).unwrap();
        assert_eq!(
            got,
            Request::from(PbRequest::decode(body.as_slice()).unwrap())
        );
        let kv2 = b"\x0a\x01y\x12\x03\x0a\x01v\x0a\x01x";
        let span = [&[0x4a, kv2.len() as u8][..], kv2].concat();
        let ss = [&[0x12, span.len() as u8][..], &span].concat();
        let rs = [&[0x12, ss.len() as u8][..], &ss].concat();
        let body = [&[0x0a, rs.len() as u8][..], &rs].concat();
        let got = decode_with(&body, &filter).unwrap();
        assert_eq!(
            got,
            Request::from(PbRequest::decode(body.as_slice()).unwrap())
        );
    }
}
