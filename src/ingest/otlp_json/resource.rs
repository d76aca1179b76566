//! Resource spans and scope spans, with their resource and scope: a bad
//! value in either rejects the spans under it.

use std::fmt;

use opentelemetry_proto::tonic::common::v1::{EntityRef, InstrumentationScope};
use opentelemetry_proto::tonic::resource::v1::Resource;
use serde::de::{self, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};

use super::attributes::Attrs;
use super::context::{Ctx, Fault};
use super::scalars::{string_field, u32_field, Key, Scalar};
use super::seeds::{list_seed, Nullable};
use super::spans::SpanList;
use super::tape::TapeDe;
use super::SpanRejected;
use crate::ingest::projection::{AttrsOf, KeyFilter};
use crate::ingest::span::{ResourceSpans, ScopeSpans};

pub(super) struct ResourceSpansList<'c, 'f> {
    pub(super) ctx: &'c mut Ctx<'f>,
    pub(super) out: &'c mut Vec<ResourceSpans>,
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
                        tape: ctx.tape,
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
    tape: Option<&'f TapeDe<'f, 'f>>,
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
                    tape: self.tape,
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
                        tape: ctx.tape,
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
    tape: Option<&'f TapeDe<'f, 'f>>,
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
