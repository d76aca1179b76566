//! The span form every stage after decoding reads: OTLP's `Span` with its
//! name and attributes packed into two allocations (docs/architecture.md,
//! "The span form"). Decoders build it with a reused [`SpanBuilder`]; a
//! prost `Span` converts to it ([`Span::from`]) and back
//! ([`Span::to_proto`], for forwarding and tests).
//!
//! prost's `Span` costs one allocation per string (name, every key, every
//! string value) and per id, about 21 per agent span; they are allocated on
//! the decoding thread and freed on the scoring thread, a large share of
//! serve's cost beyond the decode itself. Here a span's strings sit
//! in one buffer and its attributes in one list of fixed-size entries:
//! scalars inline, strings as ranges of the buffer. Events, links and the
//! status keep prost's types (rare, and read only where they occur).

use std::fmt;

use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::{any_value, AnyValue, InstrumentationScope, KeyValue};
use opentelemetry_proto::tonic::resource::v1::Resource;
use opentelemetry_proto::tonic::trace::v1 as proto;
use opentelemetry_proto::tonic::trace::v1::span::{Event, Link};
use opentelemetry_proto::tonic::trace::v1::Status;

/// A trace, span or parent id as it came: its first 16 bytes and its
/// length. Ids of any other length than OTLP's are rejected before a span
/// is kept (`ingest::validate_ids`), with the length they had.
#[derive(Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct Id {
    len: u32,
    bytes: [u8; 16],
}

impl Id {
    pub fn new(b: &[u8]) -> Id {
        let mut bytes = [0u8; 16];
        let kept = b.len().min(16);
        bytes[..kept].copy_from_slice(&b[..kept]);
        Id {
            len: u32::try_from(b.len()).unwrap_or(u32::MAX),
            bytes,
        }
    }

    /// The length the id came with.
    pub fn len(&self) -> usize {
        self.len as usize
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The bytes kept (all of them for an id of up to 16 bytes).
    pub fn as_bytes(&self) -> &[u8] {
        &self.bytes[..self.len().min(16)]
    }

    /// The id as `N` bytes, if it has exactly that many.
    pub fn get<const N: usize>(&self) -> Option<[u8; N]> {
        <[u8; N]>::try_from(self.as_bytes())
            .ok()
            .filter(|_| self.len() == N)
    }

    pub fn is_zero(&self) -> bool {
        self.as_bytes().iter().all(|&b| b == 0)
    }
}

impl fmt::Debug for Id {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for b in self.as_bytes() {
            write!(f, "{b:02x}")?;
        }
        if self.len() > 16 {
            write!(f, "..({} bytes)", self.len())?;
        }
        Ok(())
    }
}

/// An attribute's value, borrowed from its span: what prost's `AnyValue`
/// holds, with `Empty` for an `AnyValue` that holds nothing.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Val<'a> {
    Empty,
    Str(&'a str),
    Bool(bool),
    Int(i64),
    Double(f64),
    Bytes(&'a [u8]),
    Array(&'a [AnyValue]),
    Kvlist(&'a [KeyValue]),
    /// A kind of value nothing here reads (a profiles string-table index).
    Other(&'a AnyValue),
}

impl<'a> Val<'a> {
    /// A prost value, borrowed.
    pub fn of(v: &'a AnyValue) -> Val<'a> {
        match &v.value {
            None => Val::Empty,
            Some(any_value::Value::StringValue(s)) => Val::Str(s),
            Some(any_value::Value::BoolValue(b)) => Val::Bool(*b),
            Some(any_value::Value::IntValue(i)) => Val::Int(*i),
            Some(any_value::Value::DoubleValue(d)) => Val::Double(*d),
            Some(any_value::Value::BytesValue(b)) => Val::Bytes(b),
            Some(any_value::Value::ArrayValue(a)) => Val::Array(&a.values),
            Some(any_value::Value::KvlistValue(kv)) => Val::Kvlist(&kv.values),
            Some(any_value::Value::StringValueStrindex(_)) => Val::Other(v),
        }
    }

    /// The text of a string value.
    pub fn as_str(self) -> Option<&'a str> {
        match self {
            Val::Str(s) => Some(s),
            _ => None,
        }
    }

    /// The value as prost's `AnyValue`.
    pub fn to_any(self) -> AnyValue {
        use any_value::Value;
        let value = match self {
            Val::Empty => None,
            Val::Str(s) => Some(Value::StringValue(s.to_string())),
            Val::Bool(b) => Some(Value::BoolValue(b)),
            Val::Int(i) => Some(Value::IntValue(i)),
            Val::Double(d) => Some(Value::DoubleValue(d)),
            Val::Bytes(b) => Some(Value::BytesValue(b.to_vec())),
            Val::Array(a) => Some(Value::ArrayValue(
                opentelemetry_proto::tonic::common::v1::ArrayValue { values: a.to_vec() },
            )),
            Val::Kvlist(kv) => Some(Value::KvlistValue(
                opentelemetry_proto::tonic::common::v1::KeyValueList {
                    values: kv.to_vec(),
                },
            )),
            Val::Other(v) => return v.clone(),
        };
        AnyValue { value }
    }
}

/// The value of `key` in a prost attribute list (the first, if the key
/// comes twice); `None` when the key is missing or has no value at all.
pub fn find_attr<'a>(attrs: &'a [KeyValue], key: &str) -> Option<Val<'a>> {
    attrs
        .iter()
        .find(|kv| kv.key == key)
        .and_then(|kv| kv.value.as_ref())
        .map(Val::of)
}

/// A range of a span's text.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Range {
    start: u32,
    end: u32,
}

impl Range {
    fn len(self) -> usize {
        self.end.saturating_sub(self.start) as usize
    }
}

/// An attribute value as stored: scalars inline, strings as ranges of the
/// span's text, everything else (bytes, arrays, key-value lists) as prost
/// values, boxed.
#[derive(Debug, Clone, PartialEq)]
enum Stored {
    /// The `KeyValue` had no value field.
    Absent,
    Empty,
    Str(Range),
    Bool(bool),
    Int(i64),
    Double(f64),
    Nested(Box<AnyValue>),
}

#[derive(Debug, Clone, PartialEq)]
struct Attr {
    key: Range,
    value: Stored,
}

// docs/architecture.md ("The span form") and the memory figures rely on
// 24-byte entries: a change of `Range` or `Stored` must not grow them unseen.
const _: () = assert!(std::mem::size_of::<Attr>() == 24);

/// An attribute value handed to a [`SpanBuilder`].
#[derive(Debug, Clone, PartialEq)]
pub enum NewValue<'a> {
    /// No value field (prost: `value: None`).
    Absent,
    Empty,
    Str(&'a str),
    Bool(bool),
    Int(i64),
    Double(f64),
    /// Bytes, arrays and key-value lists, as decoded.
    Nested(AnyValue),
}

impl<'a> NewValue<'a> {
    /// A prost value, borrowed where it can be.
    pub fn of(v: Option<&'a AnyValue>) -> NewValue<'a> {
        let Some(v) = v else {
            return NewValue::Absent;
        };
        match &v.value {
            None => NewValue::Empty,
            Some(any_value::Value::StringValue(s)) => NewValue::Str(s),
            Some(any_value::Value::BoolValue(b)) => NewValue::Bool(*b),
            Some(any_value::Value::IntValue(i)) => NewValue::Int(*i),
            Some(any_value::Value::DoubleValue(d)) => NewValue::Double(*d),
            Some(_) => NewValue::Nested(v.clone()),
        }
    }
}

/// One span. Its fields are prost's, but for the name and attributes
/// ([`Span::name`], [`Span::attr`], [`Span::attributes`]) and the ids
/// ([`Id`]).
#[derive(Clone, Default)]
pub struct Span {
    pub trace_id: Id,
    pub span_id: Id,
    pub parent_span_id: Id,
    pub trace_state: String,
    pub flags: u32,
    pub kind: i32,
    pub start_time_unix_nano: u64,
    pub end_time_unix_nano: u64,
    pub dropped_attributes_count: u32,
    pub events: Vec<Event>,
    pub dropped_events_count: u32,
    pub links: Vec<Link>,
    pub dropped_links_count: u32,
    pub status: Option<Status>,
    /// Every string value, then the name and every attribute key.
    text: Box<str>,
    /// Where the name and keys start in `text`.
    keys_at: u32,
    name: Range,
    attrs: Box<[Attr]>,
}

impl Span {
    fn text(&self, r: Range) -> &str {
        let (start, end) = (r.start as usize, r.end as usize);
        if start > end || end > self.text.len() {
            return "";
        }
        debug_assert!(self.text.is_char_boundary(start) && self.text.is_char_boundary(end));
        // SAFETY: in bounds (checked above), and on char boundaries: every
        // range of a span is made by `push_text` around a whole `&str`
        // appended to a `String` (keys and name shifted by the length of
        // the values before them, `SpanBuilder::finish`), and a span's
        // text and ranges are set only there. The checked slice read the
        // bytes at both ends of each value, mostly cold (most values read
        // are only tested for presence): the cache misses were most of
        // `Span::val`'s time on the workers.
        unsafe { self.text.get_unchecked(start..end) }
    }

    pub fn name(&self) -> &str {
        self.text(self.name)
    }

    fn val<'a>(&'a self, v: &'a Stored) -> Option<Val<'a>> {
        Some(match v {
            Stored::Absent => return None,
            Stored::Empty => Val::Empty,
            Stored::Str(r) => Val::Str(self.text(*r)),
            Stored::Bool(b) => Val::Bool(*b),
            Stored::Int(i) => Val::Int(*i),
            Stored::Double(d) => Val::Double(*d),
            Stored::Nested(v) => Val::of(v),
        })
    }

    /// The value of attribute `key` (the first, if the key comes twice);
    /// `None` when the key is missing or has no value at all.
    pub fn attr(&self, key: &str) -> Option<Val<'_>> {
        // Lengths first, from the list alone; then bytes (a key's range is
        // the builder's: no UTF-8 boundary to check). Extraction looks up
        // attributes by key many times a span.
        let (key, text) = (key.as_bytes(), self.text.as_bytes());
        self.attrs
            .iter()
            .find(|a| {
                a.key.len() == key.len()
                    && (text.get(a.key.start as usize..a.key.end as usize))
                        .is_some_and(|k| crate::short_bytes::eq(k, key))
            })
            .and_then(|a| self.val(&a.value))
    }

    /// Every string value of the span's attributes ([`Val::Str`]), one after
    /// another (no key, no name): a word in none of it is in no value, so
    /// one search of it spares a reader the search of each value.
    pub fn string_values(&self) -> &str {
        self.text(Range {
            start: 0,
            end: self.keys_at,
        })
    }

    /// A string attribute (other types are not converted).
    pub fn attr_str(&self, key: &str) -> Option<&str> {
        self.attr(key).and_then(Val::as_str)
    }

    /// Every attribute in order: its key and value (`None`: no value field).
    pub fn attributes(&self) -> impl ExactSizeIterator<Item = (&str, Option<Val<'_>>)> + '_ {
        self.attrs
            .iter()
            .map(|a| (self.text(a.key), self.val(&a.value)))
    }

    /// The number of attributes.
    pub fn attr_count(&self) -> usize {
        self.attrs.len()
    }

    /// Every attribute's key, as bytes, in order (for lookups that compare
    /// many keys: no UTF-8 boundary checks).
    pub fn attr_keys(&self) -> impl ExactSizeIterator<Item = &[u8]> + '_ {
        let text = self.text.as_bytes();
        self.attrs.iter().map(move |a| {
            text.get(a.key.start as usize..a.key.end as usize)
                .unwrap_or(&[])
        })
    }

    /// The value of attribute `i` (in [`Span::attributes`]' order).
    pub fn attr_value(&self, i: usize) -> Option<Val<'_>> {
        self.attrs.get(i).and_then(|a| self.val(&a.value))
    }

    /// Asks the processor to start loading the span's attribute list and
    /// keys: a trace is read a decision wait after it was decoded, on
    /// another core, and the first look at each span's attributes missed
    /// the cache twice (most of the rule table's time). A hint only.
    #[inline]
    pub fn prefetch(&self) {
        #[cfg(target_arch = "x86_64")]
        {
            use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
            let attrs = self.attrs.as_ptr().cast::<i8>();
            let text = self
                .text
                .as_ptr()
                .cast::<i8>()
                .wrapping_add(self.keys_at as usize);
            // The list (24 bytes an attribute) and the keys (after the values).
            let lines = (self.attrs.len() * std::mem::size_of::<Attr>())
                .div_ceil(64)
                .min(4);
            for i in 0..lines {
                // SAFETY: a prefetch only hints the cache; it reads nothing
                // the program sees and never faults, whatever the address
                // (SSE, which it needs, is part of every x86_64 processor).
                unsafe {
                    _mm_prefetch::<_MM_HINT_T0>(attrs.wrapping_add(64 * i));
                    _mm_prefetch::<_MM_HINT_T0>(text.wrapping_add(64 * i));
                }
            }
        }
    }

    /// The span as prost's `Span` (ids of more than 16 bytes cut to 16).
    pub fn to_proto(&self) -> proto::Span {
        proto::Span {
            trace_id: self.trace_id.as_bytes().to_vec(),
            span_id: self.span_id.as_bytes().to_vec(),
            trace_state: self.trace_state.clone(),
            parent_span_id: self.parent_span_id.as_bytes().to_vec(),
            flags: self.flags,
            name: self.name().to_string(),
            kind: self.kind,
            start_time_unix_nano: self.start_time_unix_nano,
            end_time_unix_nano: self.end_time_unix_nano,
            attributes: self
                .attributes()
                .map(|(k, v)| KeyValue {
                    key: k.to_string(),
                    value: v.map(Val::to_any),
                    ..Default::default()
                })
                .collect(),
            dropped_attributes_count: self.dropped_attributes_count,
            events: self.events.clone(),
            dropped_events_count: self.dropped_events_count,
            links: self.links.clone(),
            dropped_links_count: self.dropped_links_count,
            status: self.status.clone(),
        }
    }
}

impl From<proto::Span> for Span {
    fn from(s: proto::Span) -> Span {
        let mut b = SpanBuilder::default();
        b.name(&s.name);
        for kv in &s.attributes {
            b.attr(&kv.key, NewValue::of(kv.value.as_ref()));
        }
        let mut out = Span {
            trace_id: Id::new(&s.trace_id),
            span_id: Id::new(&s.span_id),
            parent_span_id: Id::new(&s.parent_span_id),
            trace_state: s.trace_state,
            flags: s.flags,
            kind: s.kind,
            start_time_unix_nano: s.start_time_unix_nano,
            end_time_unix_nano: s.end_time_unix_nano,
            dropped_attributes_count: s.dropped_attributes_count,
            events: s.events,
            dropped_events_count: s.dropped_events_count,
            links: s.links,
            dropped_links_count: s.dropped_links_count,
            status: s.status,
            ..Span::default()
        };
        b.finish(&mut out);
        out
    }
}

/// Spans are equal when what they hold is, however their text is laid out.
impl PartialEq for Span {
    fn eq(&self, o: &Span) -> bool {
        self.trace_id == o.trace_id
            && self.span_id == o.span_id
            && self.parent_span_id == o.parent_span_id
            && self.trace_state == o.trace_state
            && self.flags == o.flags
            && self.kind == o.kind
            && self.start_time_unix_nano == o.start_time_unix_nano
            && self.end_time_unix_nano == o.end_time_unix_nano
            && self.dropped_attributes_count == o.dropped_attributes_count
            && self.dropped_events_count == o.dropped_events_count
            && self.dropped_links_count == o.dropped_links_count
            && self.status == o.status
            && self.events == o.events
            && self.links == o.links
            && self.name() == o.name()
            && self.attrs.len() == o.attrs.len()
            && self.attributes().eq(o.attributes())
    }
}

impl fmt::Debug for Span {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        struct Attrs<'a>(&'a Span);
        impl fmt::Debug for Attrs<'_> {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.debug_map().entries(self.0.attributes()).finish()
            }
        }
        let mut d = f.debug_struct("Span");
        d.field("trace_id", &self.trace_id)
            .field("span_id", &self.span_id)
            .field("parent_span_id", &self.parent_span_id)
            .field("name", &self.name())
            .field("kind", &self.kind)
            .field("start_time_unix_nano", &self.start_time_unix_nano)
            .field("end_time_unix_nano", &self.end_time_unix_nano)
            .field("attributes", &Attrs(self));
        if !self.events.is_empty() {
            d.field("events", &self.events);
        }
        if !self.links.is_empty() {
            d.field("links", &self.links);
        }
        if let Some(s) = &self.status {
            d.field("status", s);
        }
        d.finish_non_exhaustive()
    }
}

/// Gathers a span's name and attributes, then gives them to the span
/// ([`SpanBuilder::finish`]): one allocation for the text, one for the
/// attribute list. String values are written once, into what becomes the
/// span's text ([`SpanBuilder::start`] sizes it); the name and the keys
/// follow them, so the keys that every rule looks at share a few cache
/// lines.
#[derive(Debug, Default)]
pub struct SpanBuilder {
    /// String values: the start of the span's text.
    values: String,
    /// The name and the keys (reused); their ranges count from the end of
    /// `values`.
    keys: String,
    name: Range,
    attrs: Vec<Attr>,
    /// Attributes left out because the span's text would pass 4 GiB.
    overflow: u32,
    /// The text of the last span, to size the next.
    last: usize,
}

/// Appends `s` to `to`; `None` (and nothing appended) when the text of
/// the span would pass the 4 GiB that an offset can name.
fn push_text(to: &mut String, other: usize, s: &str) -> Option<Range> {
    let start = u32::try_from(to.len()).ok()?;
    let end = u32::try_from(to.len() + s.len()).ok()?;
    u32::try_from(end as usize + other).ok()?;
    to.push_str(s);
    Some(Range { start, end })
}

impl SpanBuilder {
    /// Starts a span whose text (name, keys, string values) takes at most
    /// about `bytes` (a protobuf span's length bounds it; `None`: about
    /// as much as the last span's).
    pub fn start(&mut self, bytes: Option<usize>) {
        if self.values.capacity() == 0 {
            self.values
                .reserve_exact(bytes.unwrap_or(self.last).max(64));
        }
    }

    /// Sets the span's name (the last call wins, as in protobuf).
    pub fn name(&mut self, name: &str) {
        // The range of an earlier name stays in the text, unused: a name
        // given twice is malformed input, and the text is bounded by it.
        self.name = push_text(&mut self.keys, self.values.len(), name).unwrap_or_default();
    }

    /// Appends one attribute.
    pub fn attr(&mut self, key: &str, value: NewValue<'_>) {
        let value = match value {
            NewValue::Absent => Stored::Absent,
            NewValue::Empty => Stored::Empty,
            NewValue::Str(s) => match push_text(&mut self.values, self.keys.len() + key.len(), s) {
                Some(r) => Stored::Str(r),
                None => {
                    self.overflow += 1;
                    return;
                }
            },
            NewValue::Bool(b) => Stored::Bool(b),
            NewValue::Int(i) => Stored::Int(i),
            NewValue::Double(d) => Stored::Double(d),
            NewValue::Nested(v) => {
                // A string is `Str`, kept in the text (`Span::string_values`
                // holds every string value): no decoder nests one.
                debug_assert!(!matches!(v.value, Some(any_value::Value::StringValue(_))));
                Stored::Nested(Box::new(v))
            }
        };
        let Some(key) = push_text(&mut self.keys, self.values.len(), key) else {
            if let Stored::Str(r) = value {
                self.values.truncate(r.start as usize);
            }
            self.overflow += 1;
            return;
        };
        self.attrs.push(Attr { key, value });
    }

    /// Attributes appended so far.
    pub fn attr_count(&self) -> usize {
        self.attrs.len()
    }

    /// Moves the name and attributes gathered into `span` and starts anew.
    pub fn finish(&mut self, span: &mut Span) {
        // The keys go behind the values (the checks in `push_text` keep
        // the sum within u32).
        let base = self.values.len() as u32;
        let mut text = std::mem::take(&mut self.values);
        text.push_str(&self.keys);
        self.last = text.len();
        // Given back as it is where little of it is spare (the allocator
        // shrinks such a block in place); copied where much is.
        span.text = if text.capacity() - text.len() > text.len() / 4 {
            Box::from(text.as_str())
        } else {
            text.into_boxed_str()
        };
        let shift = |r: &mut Range| {
            r.start += base;
            r.end += base;
        };
        span.name = self.name;
        shift(&mut span.name);
        span.keys_at = base;
        span.attrs = self
            .attrs
            .drain(..)
            .map(|mut a| {
                shift(&mut a.key);
                a
            })
            .collect();
        span.dropped_attributes_count = span.dropped_attributes_count.saturating_add(self.overflow);
        self.keys.clear();
        self.name = Range::default();
        self.overflow = 0;
    }
}

/// An OTLP export request with spans in [`Span`]'s form: what every decoder
/// gives.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Request {
    pub resource_spans: Vec<ResourceSpans>,
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct ResourceSpans {
    pub resource: Option<Resource>,
    pub scope_spans: Vec<ScopeSpans>,
    pub schema_url: String,
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct ScopeSpans {
    pub scope: Option<InstrumentationScope>,
    pub spans: Vec<Span>,
    pub schema_url: String,
}

impl From<ExportTraceServiceRequest> for Request {
    fn from(r: ExportTraceServiceRequest) -> Request {
        Request {
            resource_spans: r
                .resource_spans
                .into_iter()
                .map(|rs| ResourceSpans {
                    resource: rs.resource,
                    schema_url: rs.schema_url,
                    scope_spans: rs
                        .scope_spans
                        .into_iter()
                        .map(|ss| ScopeSpans {
                            scope: ss.scope,
                            schema_url: ss.schema_url,
                            spans: ss.spans.into_iter().map(Span::from).collect(),
                        })
                        .collect(),
                })
                .collect(),
        }
    }
}

impl Request {
    /// The request as prost's (to encode it again, for forwarding).
    pub fn to_proto(&self) -> ExportTraceServiceRequest {
        ExportTraceServiceRequest {
            resource_spans: self
                .resource_spans
                .iter()
                .map(|rs| proto::ResourceSpans {
                    resource: rs.resource.clone(),
                    schema_url: rs.schema_url.clone(),
                    scope_spans: rs
                        .scope_spans
                        .iter()
                        .map(|ss| proto::ScopeSpans {
                            scope: ss.scope.clone(),
                            schema_url: ss.schema_url.clone(),
                            spans: ss.spans.iter().map(Span::to_proto).collect(),
                        })
                        .collect(),
                })
                .collect(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kv(key: &str, v: Option<any_value::Value>) -> KeyValue {
        KeyValue {
            key: key.into(),
            value: v.map(|v| AnyValue { value: Some(v) }),
            ..Default::default()
        }
    }

    fn sample() -> proto::Span {
        use any_value::Value;
        proto::Span {
            trace_id: vec![1; 16],
            span_id: vec![2; 8],
            parent_span_id: vec![3; 8],
            name: "execute_tool get_weather".into(),
            kind: 1,
            start_time_unix_nano: 5,
            end_time_unix_nano: 9,
            attributes: vec![
                kv(
                    "gen_ai.tool.name",
                    Some(Value::StringValue("get_weather".into())),
                ),
                kv("n", Some(Value::IntValue(-3))),
                kv("x", Some(Value::DoubleValue(0.5))),
                kv("b", Some(Value::BoolValue(true))),
                kv("none", None),
                KeyValue {
                    key: "empty".into(),
                    value: Some(AnyValue { value: None }),
                    ..Default::default()
                },
                kv("raw", Some(Value::BytesValue(vec![0, 255]))),
                kv(
                    "gen_ai.tool.name",
                    Some(Value::StringValue("second".into())),
                ),
                kv("", Some(Value::StringValue(String::new()))),
            ],
            status: Some(Status {
                message: "boom".into(),
                code: 2,
            }),
            ..Default::default()
        }
    }

    #[test]
    fn converts_from_prost_and_back_unchanged() {
        let p = sample();
        let s = Span::from(p.clone());
        assert_eq!(s.to_proto(), p);
        assert_eq!(s.name(), "execute_tool get_weather");
        assert_eq!(s.attr_count(), 9);
        assert_eq!(
            s.attr_str("gen_ai.tool.name"),
            Some("get_weather"),
            "the first wins"
        );
        assert_eq!(s.attr("n"), Some(Val::Int(-3)));
        assert_eq!(s.attr("none"), None, "no value field reads as missing");
        assert_eq!(s.attr("empty"), Some(Val::Empty));
        assert_eq!(s.attr("raw"), Some(Val::Bytes(&[0, 255])));
        assert_eq!(s.attr("missing"), None);
        assert_eq!(s.trace_id.get::<16>(), Some([1; 16]));
        assert_eq!(s.span_id.get::<16>(), None);
    }

    #[test]
    fn equality_ignores_the_layout_of_the_text() {
        let p = sample();
        let a = Span::from(p.clone());
        // The same span built with the name given twice: other offsets.
        let mut b = SpanBuilder::default();
        b.name("first");
        for kv in &p.attributes {
            b.attr(&kv.key, NewValue::of(kv.value.as_ref()));
        }
        b.name(&p.name);
        let mut other = Span::from(proto::Span {
            attributes: Vec::new(),
            ..p.clone()
        });
        b.finish(&mut other);
        assert_eq!(a, other);
        let mut changed = p;
        changed.attributes[1] = kv("n", Some(any_value::Value::IntValue(4)));
        assert_ne!(a, Span::from(changed));
    }

    /// Every string value and nothing else is in `string_values`, in the
    /// attributes' order.
    #[test]
    fn string_values_are_every_string_value() {
        let mut b = SpanBuilder::default();
        b.name("name");
        b.attr("k1", NewValue::Str("one"));
        b.attr("k2", NewValue::Int(2));
        let nested = any_value::Value::IntValue(3);
        b.attr(
            "k3",
            NewValue::Nested(AnyValue {
                value: Some(nested),
            }),
        );
        b.attr("k4", NewValue::Str("four"));
        let mut s = Span::default();
        b.finish(&mut s);
        assert_eq!(s.string_values(), "onefour");
        let texts: Vec<&str> = s.attributes().filter_map(|(_, v)| v?.as_str()).collect();
        assert_eq!(texts, ["one", "four"]);
        assert_eq!(Span::default().string_values(), "");
    }

    #[test]
    fn ids_keep_their_length() {
        let long = Id::new(&[7; 20]);
        assert_eq!(long.len(), 20);
        assert_eq!(long.as_bytes(), &[7; 16]);
        assert_eq!(long.get::<16>(), None);
        assert!(Id::new(&[0; 8]).is_zero());
        assert!(Id::default().is_empty());
    }
}
