//! The document (a request, an array of them, Tempo's shapes) down to its
//! lists of resource spans, and what every level's visitors share.

use std::fmt;

use serde::de::{DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};

use super::context::Ctx;
use super::resource::ResourceSpansList;
use super::scalars::Key;
use super::seeds::Nullable;
use crate::ingest::Request;

/// The document: a request object or an array of them.
pub(super) struct DocSeed<'c, 'f> {
    pub(super) ctx: &'c mut Ctx<'f>,
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
/// wrapper, Jaeger v3's `result` wrapper), appended to `out`.
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
                "trace" | "result" => {
                    // Tempo's v2 API: {"trace": {"resourceSpans": [...]}, "status": ...};
                    // Jaeger's v3 API (its HTTP gateway): {"result": {"resourceSpans": [...]}}.
                    let saved = self.ctx.prefix.len();
                    self.ctx
                        .prefix
                        .push_str(if key == "trace" { "trace." } else { "result." });
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
