//! Trace and span ids, as hex or base64 (see the decoder's module docs).

use super::context::Fault;
use super::scalars::{clip, Scalar};
use crate::ingest::span::Id;

/// Which id, for messages and its length.
#[derive(Clone, Copy)]
pub(super) enum IdKind {
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

/// Decodes an id as hex or base64 (see the decoder's module docs). An empty parent
/// id is "no parent" (`Ok(empty)`).
pub(super) fn id_field(v: Scalar, kind: IdKind, fault: &mut Fault) -> Vec<u8> {
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
pub(super) fn span_id_field(v: Scalar, kind: IdKind, fault: &mut Fault) -> Id {
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

/// A log record's trace id (`trace`) or span id, as hex or base64: what
/// [`id_field`] reads on spans.
pub(crate) fn log_id(s: &str, trace: bool) -> Result<Vec<u8>, String> {
    decode_id(s, if trace { IdKind::Trace } else { IdKind::Span })
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
pub(super) fn hex(s: &[u8]) -> Option<Vec<u8>> {
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
pub(crate) fn base64(s: &[u8]) -> Option<Vec<u8>> {
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

#[cfg(test)]
mod tests {
    use super::*;

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
}
