//! JSON scalars: map keys, and scalar fields read leniently (numbers as
//! strings and the reverse, enums by name or number).

use std::borrow::Cow;
use std::fmt;

use serde::de::{self, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};

use super::context::Fault;

/// A map key, borrowed from the input unless it has escapes.
pub(super) struct Key<'de>(pub(super) Cow<'de, str>);

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
pub(super) enum Scalar<'de> {
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
pub(super) fn clip(s: &str) -> Cow<'_, str> {
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

/// A string of 1 to 19 ASCII digits as the number it writes (no such
/// number passes `u64::MAX`): the timestamps every span holds, read
/// without `trim` and `parse`'s checks; anything else is `None`.
fn plain_u64(s: &str) -> Option<u64> {
    let b = s.as_bytes();
    if b.is_empty() || b.len() > 19 {
        return None;
    }
    let (head, eights) = b.split_at(b.len() % 8);
    let mut n = 0u64;
    for &c in head {
        let d = c.wrapping_sub(b'0');
        if d > 9 {
            return None;
        }
        n = n * 10 + u64::from(d);
    }
    for eight in eights.chunks_exact(8) {
        n = n * 100_000_000 + eight_digits(eight.try_into().ok()?)?;
    }
    Some(n)
}

/// Eight ASCII digits as their number, a word at a time (a 19-digit
/// timestamp took about 20 instructions a digit byte by byte).
fn eight_digits(b: [u8; 8]) -> Option<u64> {
    let v = u64::from_le_bytes(b);
    let digits = v.wrapping_sub(0x3030_3030_3030_3030);
    // A byte below `0` sets its top bit in `digits`, one above `9` in
    // `v + 0x46` (a borrow or carry across bytes comes only from a byte
    // that fails itself).
    if (digits | v.wrapping_add(0x4646_4646_4646_4646)) & 0x8080_8080_8080_8080 != 0 {
        return None;
    }
    // Pairs, then fours, then all eight (the first digit is the low byte).
    let v = (digits * 10 + (digits >> 8)) & 0x00ff_00ff_00ff_00ff;
    let v = (v * 100 + (v >> 16)) & 0x0000_ffff_0000_ffff;
    Some((v * 10_000 + (v >> 32)) & 0xffff_ffff)
}

fn to_u64(v: &Scalar) -> Option<u64> {
    match v {
        Scalar::Null => Some(0),
        Scalar::U64(n) => Some(*n),
        Scalar::I64(_) | Scalar::Bool(_) | Scalar::Composite(_) => None,
        Scalar::F64(f) => whole(*f, 0.0, u64::MAX as f64).map(|f| f as u64),
        Scalar::Str(s) => plain_u64(s).or_else(|| {
            let s = s.trim();
            s.parse::<u64>().ok().or_else(|| {
                s.parse::<f64>()
                    .ok()
                    .and_then(|f| whole(f, 0.0, u64::MAX as f64))
                    .map(|f| f as u64)
            })
        }),
    }
}

pub(super) fn to_i64(v: &Scalar) -> Option<i64> {
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

pub(super) fn to_f64(v: &Scalar) -> Option<f64> {
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

pub(super) fn u64_field(v: Scalar, field: &str, fault: &mut Fault) -> u64 {
    to_u64(&v).unwrap_or_else(|| {
        fault.note(|| format!("{field} {v} is not an unsigned 64-bit integer"));
        0
    })
}

pub(super) fn u32_field(v: Scalar, field: &str, fault: &mut Fault) -> u32 {
    match to_u64(&v).map(u32::try_from) {
        Some(Ok(n)) => n,
        _ => {
            fault.note(|| format!("{field} {v} is not an unsigned 32-bit integer"));
            0
        }
    }
}

pub(super) fn string_field(v: Scalar, field: &str, fault: &mut Fault) -> String {
    str_field(v, field, fault).into_owned()
}

/// [`string_field`], borrowed from the input where it can be.
pub(super) fn str_field<'de>(v: Scalar<'de>, field: &str, fault: &mut Fault) -> Cow<'de, str> {
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
pub(super) fn enum_field(v: Scalar, field: &str, names: &[&str], fault: &mut Fault) -> i32 {
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
pub(super) const SPAN_KINDS: &[&str] = &[
    "SPAN_KIND_UNSPECIFIED",
    "SPAN_KIND_INTERNAL",
    "SPAN_KIND_SERVER",
    "SPAN_KIND_CLIENT",
    "SPAN_KIND_PRODUCER",
    "SPAN_KIND_CONSUMER",
];
pub(super) const STATUS_CODES: &[&str] =
    &["STATUS_CODE_UNSET", "STATUS_CODE_OK", "STATUS_CODE_ERROR"];

#[cfg(test)]
mod tests {
    use super::*;

    /// The word-at-a-time reading of digits gives what `parse` gives, and
    /// turns away what is not 1 to 19 plain digits (any byte in any place).
    #[test]
    fn plain_digits_read_as_parse_reads_them() {
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        let mut next = || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        let mut cases: Vec<String> = vec![
            "0".into(),
            "00000000".into(),
            "9999999999999999999".into(),
            "1795310757457414907".into(),
            "18446744073709551615".into(),
            String::new(),
        ];
        for len in 1..=21 {
            for _ in 0..200 {
                cases.push(
                    (0..len)
                        .map(|_| char::from(b'0' + (next() % 10) as u8))
                        .collect(),
                );
            }
        }
        for case in cases {
            let want = (!case.is_empty() && case.len() <= 19).then(|| case.parse::<u64>().unwrap());
            assert_eq!(plain_u64(&case), want, "{case}");
            // Every byte value in every place: a number only if still digits.
            let bytes = case.as_bytes();
            for at in 0..bytes.len().min(19) {
                for c in 0..=255u8 {
                    let mut b = bytes.to_vec();
                    b[at] = c;
                    let Ok(s) = std::str::from_utf8(&b) else {
                        continue;
                    };
                    let want = (s.len() <= 19 && s.bytes().all(|c| c.is_ascii_digit()))
                        .then(|| s.parse::<u64>().unwrap());
                    assert_eq!(plain_u64(s), want, "{s:?}");
                }
            }
        }
    }
}
