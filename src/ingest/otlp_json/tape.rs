//! simd-json's tape read by a serde deserializer of our own: the one
//! simd-json lends answers the same, but its place on the tape is its own,
//! and the span attribute lists (most of a document's nodes) are read
//! straight from the tape where they have the usual shape
//! ([`super::attributes`]), which needs that place.
//!
//! It gives the visitors what simd-json's deserializer gives them, method
//! for method (`deserialize_any`, `_map`, `_str`, `_option`, and the map
//! keys as borrowed strings), and fails where that one fails; a skipped
//! value (`IgnoredAny`) is stepped over by its node count. A failure fails
//! the document, which serde_json then decodes again for its error.

use std::cell::Cell;

use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use simd_json::{Error, Node, StaticNode};

/// The nodes of one document and the place of the next one to read.
pub(super) struct TapeDe<'t, 'de> {
    pub(super) nodes: &'t [Node<'de>],
    pub(super) at: Cell<usize>,
}

impl<'t, 'de> TapeDe<'t, 'de> {
    pub(super) fn new(nodes: &'t [Node<'de>]) -> Self {
        TapeDe {
            nodes,
            at: Cell::new(0),
        }
    }

    /// The next node, or `None` at the end.
    pub(super) fn peek(&self) -> Option<Node<'de>> {
        self.nodes.get(self.at.get()).copied()
    }

    fn next(&self) -> Result<Node<'de>, Error> {
        let at = self.at.get();
        let node = self.nodes.get(at).copied().ok_or_else(|| fail("end"))?;
        self.at.set(at + 1);
        Ok(node)
    }

    fn visit_array<V: Visitor<'de>>(&self, len: usize, visitor: V) -> Result<V::Value, Error> {
        let mut seq = Members { de: self, len };
        let value = visitor.visit_seq(&mut seq)?;
        match seq.len {
            0 => Ok(value),
            _ => Err(fail("fewer elements in array")),
        }
    }

    fn visit_object<V: Visitor<'de>>(&self, len: usize, visitor: V) -> Result<V::Value, Error> {
        let mut map = Members { de: self, len };
        let value = visitor.visit_map(&mut map)?;
        match map.len {
            0 => Ok(value),
            _ => Err(fail("fewer elements in map")),
        }
    }
}

fn fail(what: &str) -> Error {
    de::Error::custom(what)
}

impl<'de> Deserializer<'de> for &TapeDe<'_, 'de> {
    type Error = Error;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        match self.next()? {
            Node::String(s) => visitor.visit_borrowed_str(s),
            Node::Static(StaticNode::Null) => visitor.visit_unit(),
            Node::Static(StaticNode::Bool(b)) => visitor.visit_bool(b),
            Node::Static(StaticNode::F64(n)) => visitor.visit_f64(n),
            Node::Static(StaticNode::I64(n)) => visitor.visit_i64(n),
            Node::Static(StaticNode::U64(n)) => visitor.visit_u64(n),
            Node::Array { len, .. } => self.visit_array(len, visitor),
            Node::Object { len, .. } => self.visit_object(len, visitor),
        }
    }

    fn deserialize_map<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        match self.next()? {
            Node::Object { len, .. } => self.visit_object(len, visitor),
            _ => Err(fail("expected an object")),
        }
    }

    fn deserialize_str<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        match self.next()? {
            Node::String(s) => visitor.visit_borrowed_str(s),
            _ => Err(fail("expected a string")),
        }
    }

    fn deserialize_string<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        match self.next()? {
            Node::String(s) => visitor.visit_str(s),
            _ => Err(fail("expected a string")),
        }
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        match self.peek().ok_or_else(|| fail("end"))? {
            Node::Static(StaticNode::Null) => {
                self.at.set(self.at.get() + 1);
                visitor.visit_unit()
            }
            _ => visitor.visit_some(self),
        }
    }

    /// Steps over the value: a list or object with all the nodes under it.
    fn deserialize_ignored_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        if let Node::Array { count, .. } | Node::Object { count, .. } = self.next()? {
            let end = self.at.get() + count;
            if end > self.nodes.len() {
                return Err(fail("end"));
            }
            self.at.set(end);
        }
        visitor.visit_unit()
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char bytes byte_buf
        unit unit_struct newtype_struct seq tuple tuple_struct struct enum identifier
    }
}

/// The members of an array or object, `len` of them left.
struct Members<'a, 't, 'de> {
    de: &'a TapeDe<'t, 'de>,
    len: usize,
}

impl<'de> SeqAccess<'de> for Members<'_, '_, 'de> {
    type Error = Error;

    fn next_element_seed<T: DeserializeSeed<'de>>(
        &mut self,
        seed: T,
    ) -> Result<Option<T::Value>, Error> {
        if self.len == 0 {
            return Ok(None);
        }
        self.len -= 1;
        seed.deserialize(self.de).map(Some)
    }

    fn size_hint(&self) -> Option<usize> {
        Some(self.len)
    }
}

impl<'de> MapAccess<'de> for Members<'_, '_, 'de> {
    type Error = Error;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, Error> {
        if self.len == 0 {
            return Ok(None);
        }
        self.len -= 1;
        seed.deserialize(MapKey { de: self.de }).map(Some)
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value, Error> {
        seed.deserialize(self.de)
    }

    fn size_hint(&self) -> Option<usize> {
        Some(self.len)
    }
}

/// A map key: always a string on the tape.
struct MapKey<'a, 't, 'de> {
    de: &'a TapeDe<'t, 'de>,
}

impl<'de> Deserializer<'de> for MapKey<'_, '_, 'de> {
    type Error = Error;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        match self.de.next()? {
            Node::String(s) => visitor.visit_borrowed_str(s),
            _ => Err(fail("expected a string")),
        }
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf
        option unit unit_struct newtype_struct seq tuple tuple_struct map struct enum
        identifier ignored_any
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::de::IgnoredAny;

    /// Skipping steps over whole lists and objects; what follows is read.
    #[test]
    fn skips_by_node_count() {
        let mut text = br#"[{"a": [1, {"b": null}], "c": "d"}, "after"]"#.to_vec();
        let tape = simd_json::to_tape(&mut text).expect("valid JSON");
        let de = TapeDe::new(&tape.0);
        let (skipped, after): (IgnoredAny, String) =
            serde::Deserialize::deserialize(&de).expect("a pair");
        let _ = skipped;
        assert_eq!(after, "after");
        assert_eq!(de.at.get(), tape.0.len());
    }
}
