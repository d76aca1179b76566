//! Spans, with their status, events and links: a bad value rejects the
//! span that holds it.

use std::fmt;

use opentelemetry_proto::tonic::trace::v1::{span, Status};
use serde::de::{self, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};

use super::attributes::{Attrs, SpanAttrs};
use super::context::{Ctx, Fault, MAX_UNKNOWN};
use super::ids::{id_field, span_id_field, IdKind};
use super::scalars::{
    clip, enum_field, str_field, string_field, u32_field, u64_field, Key, SPAN_KINDS, STATUS_CODES,
};
use super::seeds::{list_seed, Nullable};
use super::tape::TapeDe;
use super::SpanRejected;
use crate::ingest::projection::{AttrsOf, KeyFilter};
use crate::ingest::span::Span;

pub(super) struct SpanList<'c, 'f> {
    pub(super) ctx: &'c mut Ctx<'f>,
    pub(super) out: &'c mut Vec<Span>,
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
        let tape = ctx.tape;
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
                    tape,
                })?,
                "droppedAttributesCount" => {
                    s.dropped_attributes_count =
                        u32_field(map.next_value()?, "droppedAttributesCount", f)
                }
                "events" => map.next_value_seed(Events {
                    out: &mut s.events,
                    fault: f,
                    filter,
                    tape,
                })?,
                "droppedEventsCount" => {
                    s.dropped_events_count = u32_field(map.next_value()?, "droppedEventsCount", f)
                }
                "links" => map.next_value_seed(Links {
                    out: &mut s.links,
                    fault: f,
                    filter,
                    tape,
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
    tape: Option<&'f TapeDe<'f, 'f>>,
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
                tape: self.tape,
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
    tape: Option<&'f TapeDe<'f, 'f>>,
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
                    tape: self.tape,
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
    tape: Option<&'f TapeDe<'f, 'f>>,
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
                tape: self.tape,
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
    tape: Option<&'f TapeDe<'f, 'f>>,
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
                    tape: self.tape,
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
