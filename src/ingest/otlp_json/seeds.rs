//! Seeds every level of the document uses: a message that may be `null`,
//! and the `DeserializeSeed` of a list visitor (a JSON array, or null).

use std::fmt;

use serde::de::{self, DeserializeSeed, Deserializer, Visitor};

/// A message that may be `null`: not set (proto3 JSON). Yields whether it
/// was present.
pub(super) struct Nullable<S>(pub(super) S);

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
// A path to the macro, for the lists of the other levels' files.
pub(super) use list_seed;
