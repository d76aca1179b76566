//! A JSON text rewritten as `serde_json` writes the `Value` parsed from it
//! (object keys sorted, the last of duplicate keys kept, no whitespace,
//! numbers and string escapes as serde_json prints them), without building
//! the `Value`: string contents are copied, not decoded and re-escaped,
//! unless their escapes differ from serde_json's. For calls whose arguments
//! are only written out, never read (serve without cases), where parsing
//! them into a `Value` and writing it back was most of the cost of a row.

/// Nesting beyond this is left to `serde_json::Value` (whose parser stops
/// at 128 levels): the caller parses such text the usual way. Also the
/// most a call's arguments or result may nest to be written as JSON: a
/// report row adds 3 levels, and serde_json reads no more than 128.
const MAX_DEPTH: usize = 100;

/// Whether `v`, parsed from `text`, nests deeper than [`MAX_DEPTH`]: kept
/// as text instead, so that every row stays readable by serde_json. The
/// text's brackets are counted first: most values have too few to nest
/// that deep, and need no walk.
pub(crate) fn too_deep(text: &str, v: &serde_json::Value) -> bool {
    fn deeper(v: &serde_json::Value, levels: usize) -> bool {
        use serde_json::Value::{Array, Object};
        match v {
            Array(_) | Object(_) if levels == 0 => true,
            Array(a) => a.iter().any(|v| deeper(v, levels - 1)),
            Object(o) => o.values().any(|v| deeper(v, levels - 1)),
            _ => false,
        }
    }
    memchr::memchr2_iter(b'[', b'{', text.as_bytes()).count() > MAX_DEPTH && deeper(v, MAX_DEPTH)
}

/// `text` as `serde_json::to_string(&serde_json::from_str::<Value>(text)?)`
/// would write it, or `None` when that is not certain (invalid JSON, deep
/// nesting): the caller then parses the text as usual.
///
/// One pass over the bytes. The output is the input copied in runs: only
/// where the two differ (whitespace, escapes or numbers spelt otherwise, an
/// object whose keys are out of order) is the run cut and something else
/// written, so text that is already canonical is copied once, whole. An
/// object's entries are sorted (and duplicate keys dropped) by moving their
/// written bytes.
pub(crate) fn canonical(text: &str) -> Option<String> {
    // Entries hold 31-bit offsets.
    if text.len() > (DECODED as usize) / 2 {
        return None;
    }
    if let Some(out) = flat(text) {
        return Some(out);
    }
    let mut r = Reader {
        text,
        at: 0,
        synced: 0,
        out: String::with_capacity(text.len()),
        // Room for an entry per ~16 bytes: grown push by push, this list
        // was reallocated several times per object.
        entries: Vec::with_capacity((text.len() / 16).clamp(4, 256)),
        keys: String::new(),
        scratch: String::new(),
    };
    r.ws();
    r.value(0)?;
    r.ws();
    if r.at != text.len() {
        return None;
    }
    r.sync();
    Some(r.out)
}

/// An object entry written to the output: where its key is and where the
/// whole `"key":value` sits in the output. Small and `Copy`: sorting moves
/// entries, not strings.
#[derive(Clone, Copy)]
struct Entry {
    /// The key's first 8 bytes, big-endian, zero-padded: most keys of an
    /// object differ there, so ordering them needs no string comparison.
    prefix: u64,
    /// The key: `text[key..key + key_len]`, or, for a key with escapes
    /// (`DECODED` set in `key_len`), decoded in [`Reader::keys`].
    key: u32,
    key_len: u32,
    start: u32,
    end: u32,
}

/// Set in [`Entry::key_len`]: the key is in [`Reader::keys`].
const DECODED: u32 = 1 << 31;

/// Where an entry's key bytes are.
#[derive(Clone, Copy)]
struct Keys<'a> {
    text: &'a [u8],
    decoded: &'a [u8],
}

impl Keys<'_> {
    fn of(&self, e: &Entry) -> &[u8] {
        let (from, len) = (e.key as usize, (e.key_len & !DECODED) as usize);
        let bytes = if e.key_len & DECODED != 0 {
            self.decoded
        } else {
            self.text
        };
        bytes.get(from..from + len).unwrap_or_default()
    }

    /// Byte order of the keys, as a `BTreeMap<String, _>` orders them.
    fn cmp(&self, a: &Entry, b: &Entry) -> std::cmp::Ordering {
        // Equal prefixes say nothing (a shorter key is zero-padded).
        a.prefix
            .cmp(&b.prefix)
            .then_with(|| self.of(a).cmp(self.of(b)))
    }
}

/// The first 8 bytes of the `len`-byte key at `text[at..]`, as [`word`]
/// makes them: one load where 8 bytes can be read there (past the key's
/// end, masked off).
fn key_prefix(text: &[u8], at: usize, len: usize) -> u64 {
    match text.get(at..).and_then(<[u8]>::first_chunk::<8>) {
        Some(p) if len >= 8 => u64::from_be_bytes(*p),
        // In two shifts: a zero length would shift by 64 in one.
        Some(p) => u64::from_be_bytes(*p) >> (8 * (7 - len)) >> 8 << (8 * (7 - len)) << 8,
        None => word(text.get(at..at + len).unwrap_or_default()),
    }
}

/// The first (up to) 8 bytes of `b` as one big-endian word, zero-padded:
/// words order as the bytes do, as far as they go.
pub(crate) fn word(b: &[u8]) -> u64 {
    match b.first_chunk::<8>() {
        Some(p) => u64::from_be_bytes(*p),
        // Byte by byte: a short copy into an array, read back as one word,
        // stalls the load.
        None => {
            let p = b.iter().fold(0u64, |p, &b| p << 8 | u64::from(b));
            // In two shifts: an empty slice would shift by 64 in one.
            p << (8 * (7 - b.len())) << 8
        }
    }
}

struct Reader<'a> {
    text: &'a str,
    at: usize,
    /// The output so far is `out` followed by `text[synced..at]`, not yet
    /// copied: the run of input that goes out as it is.
    synced: usize,
    out: String,
    /// The entries of the objects being read, innermost last (one buffer
    /// for every level, so an object costs no allocation of its own).
    entries: Vec<Entry>,
    /// Keys with escapes, decoded (rare).
    keys: String,
    /// Where an object's entries wait while they are put in order.
    scratch: String,
}

impl<'a> Reader<'a> {
    fn peek(&self) -> Option<u8> {
        self.text.as_bytes().get(self.at).copied()
    }

    /// Where the output stands (the pending run included).
    fn written(&self) -> usize {
        self.out.len() + (self.at - self.synced)
    }

    /// Copies the pending run of input to the output.
    fn sync(&mut self) {
        self.out.push_str(&self.text[self.synced..self.at]);
        self.synced = self.at;
    }

    /// Writes `with` in place of the input from `from` (where the run must
    /// be cut) to `at`.
    fn replace(&mut self, from: usize, with: &str) {
        self.out.push_str(&self.text[self.synced..from]);
        self.out.push_str(with);
        self.synced = self.at;
    }

    fn ws(&mut self) {
        let from = self.at;
        while matches!(self.peek(), Some(b' ' | b'\t' | b'\n' | b'\r')) {
            self.at += 1;
        }
        if self.at > from {
            self.replace(from, "");
        }
    }

    fn eat(&mut self, b: u8) -> Option<()> {
        (self.peek()? == b).then(|| self.at += 1)
    }

    fn value(&mut self, depth: usize) -> Option<()> {
        match self.peek()? {
            b'{' => self.object(depth + 1),
            b'[' => self.array(depth + 1),
            b'"' => {
                let (from, escapes) = self.string()?;
                if escapes == Escapes::Other {
                    self.escaped_out(from)?;
                }
                Some(())
            }
            b't' => self.literal("true"),
            b'f' => self.literal("false"),
            b'n' => self.literal("null"),
            _ => self.number(),
        }
    }

    fn literal(&mut self, word: &str) -> Option<()> {
        self.text[self.at..]
            .starts_with(word)
            .then(|| self.at += word.len())
    }

    fn array(&mut self, depth: usize) -> Option<()> {
        if depth > MAX_DEPTH {
            return None;
        }
        self.eat(b'[')?;
        self.ws();
        if self.eat(b']').is_some() {
            return Some(());
        }
        loop {
            self.ws();
            self.value(depth)?;
            self.ws();
            match self.peek()? {
                b',' => {}
                b']' => break,
                _ => return None,
            }
            self.at += 1;
        }
        self.at += 1;
        Some(())
    }

    fn object(&mut self, depth: usize) -> Option<()> {
        if depth > MAX_DEPTH {
            return None;
        }
        self.eat(b'{')?;
        let open = self.written();
        let base = self.entries.len();
        self.ws();
        if self.eat(b'}').is_some() {
            return Some(());
        }
        // Keys in strictly increasing order so far: the entries need no move.
        let mut sorted = true;
        loop {
            self.ws();
            if self.peek()? != b'"' {
                return None;
            }
            let start = self.written() as u32;
            let (from, escapes) = self.string()?;
            let (key, key_len, prefix) = if escapes != Escapes::None {
                let decoded: String = serde_json::from_str(&self.text[from..self.at]).ok()?;
                let at = self.keys.len();
                self.keys.push_str(&decoded);
                let len = u32::try_from(decoded.len()).ok()?;
                (at as u32, len | DECODED, word(decoded.as_bytes()))
            } else {
                let len = self.at - from - 2;
                let prefix = key_prefix(self.text.as_bytes(), from + 1, len);
                ((from + 1) as u32, len as u32, prefix)
            };
            let entry = Entry {
                prefix,
                key,
                key_len,
                start,
                end: 0,
            };
            if let Some(last) = self.entries[base..].last() {
                let keys = Keys {
                    text: self.text.as_bytes(),
                    decoded: self.keys.as_bytes(),
                };
                sorted &= keys.cmp(last, &entry).is_lt();
            }
            // Pushed now, its end set in place once known (nested objects
            // push theirs after it and take them off again).
            let mine = self.entries.len();
            self.entries.push(entry);
            if escapes == Escapes::Other {
                self.escaped_out(from)?;
            }
            self.ws();
            self.eat(b':')?;
            self.ws();
            self.value(depth)?;
            self.ws();
            let end = self.written() as u32;
            self.entries[mine].end = end;
            match self.peek()? {
                b',' => {}
                b'}' => break,
                _ => return None,
            }
            self.at += 1;
        }
        if !sorted {
            self.sync();
            let keys = Keys {
                text: self.text.as_bytes(),
                decoded: self.keys.as_bytes(),
            };
            reorder(
                &mut self.out,
                open,
                &mut self.entries[base..],
                keys,
                &mut self.scratch,
            );
        }
        self.at += 1;
        self.entries.truncate(base);
        Some(())
    }

    /// Reads a string literal: where it starts (its opening quote) and
    /// what escapes it has.
    #[inline(always)]
    fn string(&mut self) -> Option<(usize, Escapes)> {
        let start = self.at;
        let (end, escapes) = scan_string(self.text.as_bytes(), start)?;
        self.at = end;
        Some((start, escapes))
    }

    /// The string literal just read (from `from`), whose escapes are not
    /// all serde_json's, decoded and escaped again as serde_json writes it.
    fn escaped_out(&mut self, from: usize) -> Option<()> {
        let raw = &self.text[from..self.at];
        let s: String = serde_json::from_str(raw).ok()?;
        self.replace(from, &serde_json::to_string(&s).ok()?);
        Some(())
    }

    fn number(&mut self) -> Option<()> {
        let b = self.text.as_bytes();
        let start = self.at;
        let mut i = start;
        while i < b.len() && matches!(b[i], b'0'..=b'9' | b'-' | b'+' | b'.' | b'e' | b'E') {
            i += 1;
        }
        let raw = &self.text[start..i];
        self.at = i;
        // Digits only, no leading zero, under 20 of them: a u64, which
        // serde_json prints as written.
        let plain = !raw.is_empty()
            && raw.len() <= 19
            && raw.bytes().all(|c| c.is_ascii_digit())
            && (raw.len() == 1 || !raw.starts_with('0'));
        if !plain {
            let n: serde_json::Number = serde_json::from_str(raw).ok()?;
            self.replace(start, &n.to_string());
        }
        Some(())
    }
}

const ONES: u64 = 0x0101_0101_0101_0101;
const HIGHS: u64 = 0x8080_8080_8080_8080;

/// The high bit set in the bytes of `x` (little-endian) that end or escape
/// a string or are control characters (`"`, `\`, below 0x20). Exact up
/// to the first such byte; later ones may be flagged wrongly (borrows),
/// which the byte-wise step after it sorts out.
fn needs_a_look(x: u64) -> u64 {
    let quote = x ^ (ONES * u64::from(b'"'));
    let backslash = x ^ (ONES * u64::from(b'\\'));
    (quote.wrapping_sub(ONES) & !quote
        | backslash.wrapping_sub(ONES) & !backslash
        | x.wrapping_sub(ONES * 0x20) & !x)
        & HIGHS
}

/// Where the run of string bytes from `b[i]` that need no look ends (the
/// first quote, backslash or control character, or near the end of `b`):
/// eight bytes at a time.
#[inline(always)]
fn plain_run(b: &[u8], mut i: usize) -> usize {
    while let Some(chunk) = b.get(i..).and_then(<[u8]>::first_chunk::<8>) {
        let hits = needs_a_look(u64::from_le_bytes(*chunk));
        if hits != 0 {
            return i + (hits.trailing_zeros() / 8) as usize;
        }
        i += 8;
    }
    i
}

/// The string literal whose opening quote is at `b[start]`: where it ends
/// (past its closing quote) and what escapes it has; `None` if it is not
/// one. Inlined: most strings are a few bytes, and a call cost as much as
/// reading them.
#[inline(always)]
fn scan_string(b: &[u8], start: usize) -> Option<(usize, Escapes)> {
    let mut i = start + 1;
    let mut escapes = Escapes::None;
    loop {
        i = plain_run(b, i);
        match *b.get(i)? {
            b'"' => break,
            b'\\' => {
                if escapes == Escapes::None {
                    escapes = Escapes::SerdeJson;
                }
                match b.get(i + 1) {
                    Some(b'"' | b'\\' | b'b' | b'f' | b'n' | b'r' | b't') => i += 2,
                    Some(b'u') if b.get(i + 2..i + 6).is_some_and(serde_json_u_escape) => i += 6,
                    // Checked when decoded (`escaped_out`).
                    _ => {
                        escapes = Escapes::Other;
                        i += 2;
                    }
                }
            }
            // Control characters are not allowed raw in a JSON string.
            c if c < 0x20 => return None,
            _ => i += 1,
        }
    }
    Some((i + 1, escapes))
}

/// The common case, quickly: one object of strings, plain numbers and
/// literals, written without whitespace, its keys without escapes and all
/// different. The entries are read as the general reader reads them, and
/// written from the input in key order (each exactly as the general reader
/// would leave it). `None` hands anything else to the general reader.
fn flat(text: &str) -> Option<String> {
    thread_local! {
        static ENTRIES: std::cell::RefCell<Vec<Entry>> = const { std::cell::RefCell::new(Vec::new()) };
    }
    let b = text.as_bytes();
    if b.len() < 2 || b[0] != b'{' || b[b.len() - 1] != b'}' {
        return None;
    }
    if b.len() == 2 {
        return Some(text.to_string());
    }
    let keys = Keys {
        text: b,
        decoded: &[],
    };
    ENTRIES.with(|cell| {
        let mut entries = cell.try_borrow_mut().ok()?;
        entries.clear();
        let mut sorted = true;
        let mut i = 1;
        loop {
            if b.get(i) != Some(&b'"') {
                return None;
            }
            let start = i;
            let (end, escapes) = scan_string(b, i)?;
            if escapes != Escapes::None {
                return None;
            }
            let (key, key_len) = (i + 1, end - i - 2);
            i = end;
            if b.get(i) != Some(&b':') {
                return None;
            }
            i += 1;
            i = match *b.get(i)? {
                b'"' => match scan_string(b, i)? {
                    (_, Escapes::Other) => return None,
                    (end, _) => end,
                },
                // As `Reader::number` writes them as they are: digits
                // only, no leading zero, at most 19.
                b'0'..=b'9' => {
                    let digits = b[i..].iter().take_while(|c| c.is_ascii_digit()).count();
                    let next = b.get(i + digits);
                    if digits > 19
                        || digits > 1 && b[i] == b'0'
                        || matches!(next, Some(b'.' | b'e' | b'E' | b'+' | b'-'))
                    {
                        return None;
                    }
                    i + digits
                }
                b't' if b[i..].starts_with(b"true") => i + 4,
                b'f' if b[i..].starts_with(b"false") => i + 5,
                b'n' if b[i..].starts_with(b"null") => i + 4,
                _ => return None,
            };
            let entry = Entry {
                prefix: key_prefix(b, key, key_len),
                key: key as u32,
                key_len: key_len as u32,
                start: start as u32,
                end: i as u32,
            };
            if let Some(last) = entries.last() {
                sorted &= keys.cmp(last, &entry).is_lt();
            }
            entries.push(entry);
            match b.get(i)? {
                b',' => i += 1,
                b'}' if i + 1 == b.len() => break,
                _ => return None,
            }
        }
        if sorted {
            return Some(text.to_string());
        }
        entries.sort_by(|x, y| keys.cmp(x, y));
        if entries.windows(2).any(|w| keys.cmp(&w[0], &w[1]).is_eq()) {
            return None;
        }
        let mut out = String::with_capacity(text.len());
        out.push('{');
        for (n, e) in entries.iter().enumerate() {
            if n > 0 {
                out.push(',');
            }
            out.push_str(text.get(e.start as usize..e.end as usize)?);
        }
        out.push('}');
        Some(out)
    })
}

/// Puts the object entries written after `open` in key order, the last of
/// equal keys kept (as a map does), comma-separated; `scratch` holds the
/// entries' bytes meanwhile.
fn reorder(
    out: &mut String,
    open: usize,
    entries: &mut [Entry],
    keys: Keys<'_>,
    scratch: &mut String,
) {
    scratch.clear();
    scratch.push_str(&out[open..]);
    // Stable, so of equal keys the last written stays last; and it finds
    // the runs already in order (`k1`, `k2`, ... `k9` before `k10`, ...).
    entries.sort_by(|a, b| keys.cmp(a, b));
    out.truncate(open);
    for (i, e) in entries.iter().enumerate() {
        if entries
            .get(i + 1)
            .is_some_and(|next| keys.cmp(next, e).is_eq())
        {
            continue;
        }
        if out.len() > open {
            out.push(',');
        }
        out.push_str(&scratch[e.start as usize - open..e.end as usize - open]);
    }
}

/// The escapes of a string literal.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Escapes {
    None,
    /// Only the ones serde_json writes: `\"`, `\\`, `\b`, `\f`, `\n`, `\r`,
    /// `\t`, and `\u00xx` (lowercase) for the other control characters
    /// (other characters it writes as they are, and valid JSON has no raw
    /// control characters in strings).
    SerdeJson,
    /// Others (or invalid ones): the string is decoded and written again.
    Other,
}

/// Whether the four hex digits of a `\u` escape are one serde_json
/// writes: a control character without a short escape, in lowercase.
fn serde_json_u_escape(hex: &[u8]) -> bool {
    matches!(hex, [b'0', b'0', b'0' | b'1', d] if matches!(d, b'0'..=b'9' | b'a'..=b'f'))
        // These five have their short escapes.
        && !matches!(hex, [_, _, b'0', b'8' | b'9' | b'a' | b'c' | b'd'])
}

/// Whether `text` is certainly one JSON value (with whitespace around it
/// or not) that serde_json reads into a `Value`, so that a report holding
/// it as it is parses again: its grammar, `\u` escapes of surrogates only
/// in pairs, numbers within f64's range, and nesting to 100 levels (a
/// row adds 3, and serde_json reads 128). `false` otherwise: the caller
/// writes such text as a string. One pass, strings scanned 8 bytes at a
/// time: a call's result is checked, not parsed, and serde_json's check
/// cost three times as much.
pub(crate) fn is_json(text: &str) -> bool {
    let mut v = Validator {
        b: text.as_bytes(),
        at: 0,
    };
    v.ws();
    v.value(0).is_some() && {
        v.ws();
        v.at == v.b.len()
    }
}

struct Validator<'a> {
    b: &'a [u8],
    at: usize,
}

/// The length of the `\\u` escape at `b[i]` (6, or 12 for a surrogate
/// pair); `None` if its digits are not hex or a surrogate is alone, which
/// serde_json refuses in a string.
fn unicode_escape(b: &[u8], i: usize) -> Option<usize> {
    let hex = |at: usize| {
        b.get(at..at + 4)?.iter().try_fold(0u32, |n, &d| {
            let d = char::from(d).to_digit(16)?;
            Some(n << 4 | d)
        })
    };
    match hex(i + 2)? {
        0xd800..=0xdbff => {
            let low = (b.get(i + 6..i + 8) == Some(&b"\\u"[..]))
                .then(|| hex(i + 8))
                .flatten()?;
            (0xdc00..=0xdfff).contains(&low).then_some(12)
        }
        0xdc00..=0xdfff => None,
        _ => Some(6),
    }
}

impl Validator<'_> {
    fn peek(&self) -> Option<u8> {
        self.b.get(self.at).copied()
    }

    fn ws(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t' | b'\n' | b'\r')) {
            self.at += 1;
        }
    }

    fn value(&mut self, depth: usize) -> Option<()> {
        match self.peek()? {
            b'{' => self.container(depth + 1, b'}'),
            b'[' => self.container(depth + 1, b']'),
            b'"' => self.string(),
            b't' => self.literal(b"true"),
            b'f' => self.literal(b"false"),
            b'n' => self.literal(b"null"),
            _ => self.number(),
        }
    }

    fn literal(&mut self, word: &[u8]) -> Option<()> {
        self.b[self.at..]
            .starts_with(word)
            .then(|| self.at += word.len())
    }

    fn digits(&mut self) -> usize {
        let from = self.at;
        while matches!(self.peek(), Some(b'0'..=b'9')) {
            self.at += 1;
        }
        self.at - from
    }

    /// A number: a sign, `0` or digits without a leading zero, then a
    /// fraction and an exponent, each with at least one digit. One that may
    /// be past 10^300 (by its integer digits and exponent) is left to
    /// serde_json's own parser, which refuses what does not fit an f64.
    fn number(&mut self) -> Option<()> {
        let start = self.at;
        if self.peek() == Some(b'-') {
            self.at += 1;
        }
        let int_digits = match self.peek()? {
            b'0' => {
                self.at += 1;
                if matches!(self.peek(), Some(b'0'..=b'9')) {
                    return None;
                }
                1
            }
            b'1'..=b'9' => self.digits(),
            _ => return None,
        };
        if self.peek() == Some(b'.') {
            self.at += 1;
            if self.digits() == 0 {
                return None;
            }
        }
        let mut exponent: i64 = 0;
        if matches!(self.peek(), Some(b'e' | b'E')) {
            self.at += 1;
            let negative = self.peek() == Some(b'-');
            if matches!(self.peek(), Some(b'+' | b'-')) {
                self.at += 1;
            }
            let from = self.at;
            if self.digits() == 0 {
                return None;
            }
            // Capped: only whether it passes ~300 matters.
            exponent = self.b[from..self.at]
                .iter()
                .fold(0i64, |e, d| (e * 10 + i64::from(d - b'0')).min(1 << 20));
            if negative {
                exponent = -exponent;
            }
        }
        if int_digits as i64 + exponent > 300 {
            serde_json::from_slice::<serde_json::Number>(&self.b[start..self.at]).ok()?;
        }
        Some(())
    }

    #[inline(always)]
    fn string(&mut self) -> Option<()> {
        let b = self.b;
        let mut i = self.at + 1;
        loop {
            i = plain_run(b, i);
            match *b.get(i)? {
                b'"' => break,
                b'\\' => match b.get(i + 1)? {
                    b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't' => i += 2,
                    b'u' => i += unicode_escape(b, i)?,
                    _ => return None,
                },
                c if c < 0x20 => return None,
                _ => i += 1,
            }
        }
        self.at = i + 1;
        Some(())
    }

    /// An array (`close` is `]`) or an object (`}`).
    fn container(&mut self, depth: usize, close: u8) -> Option<()> {
        if depth > MAX_DEPTH {
            return None;
        }
        self.at += 1;
        self.ws();
        if self.peek()? == close {
            self.at += 1;
            return Some(());
        }
        loop {
            self.ws();
            if close == b'}' {
                if self.peek()? != b'"' {
                    return None;
                }
                self.string()?;
                self.ws();
                if self.peek()? != b':' {
                    return None;
                }
                self.at += 1;
                self.ws();
            }
            self.value(depth)?;
            self.ws();
            match self.peek()? {
                b',' => self.at += 1,
                c if c == close => break,
                _ => return None,
            }
        }
        self.at += 1;
        Some(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;

    fn via_value(text: &str) -> Option<String> {
        serde_json::from_str::<Value>(text)
            .ok()
            .map(|v| v.to_string())
    }

    #[test]
    fn writes_what_serde_json_writes_of_the_value() {
        let cases = [
            r#"{"k1":"a","k10":"b","k2":"c"}"#,
            r#" { "b" : 1 , "a" : [ 1 , 2.50 , -0 , -3 , 1e3 , 1E-2 , 18446744073709551616 ] } "#,
            r#"{"a":1,"a":2,"b":{"z":null,"y":true,"x":false}}"#,
            r#"{"t":"tab\there \"q\" back\\slash \n\r\b\f","u":"\u00e9\u0001\u001F\u0008\/"}"#,
            r#"{"\u0061b":1,"aa":2,"a\"b":3}"#,
            r#"["Zürich 東京", {}, [], "", 0, 12345678901234567890, 99999999999999999999]"#,
            r#""a string""#,
            r#""esc \u00e9""#,
            "123",
            "-1.0",
            "true",
            "null",
            r#"{"s":"\ud83d\ude00"}"#,
        ];
        for text in cases {
            assert_eq!(canonical(text), via_value(text), "{text}");
        }
    }

    /// Random JSON text in many spellings: whitespace, duplicate and
    /// escaped keys, every number form, escapes serde_json writes and
    /// ones it does not.
    fn random_json(rng: &mut crate::fake::Rng, depth: u32, out: &mut String) {
        const WS: [&str; 4] = ["", " ", "\n\t", "\r "];
        let ws = |rng: &mut crate::fake::Rng| WS[rng.below(4) as usize];
        const ATOMS: [&str; 22] = [
            "0",
            "-0",
            "7",
            "-12",
            "1.0",
            "1.50",
            "-0.0",
            "1e3",
            "1E+2",
            "2.5e-3",
            "-1e0",
            "18446744073709551615",
            "18446744073709551616",
            "-9223372036854775808",
            "-9223372036854775809",
            "123456789012345678901234567890",
            "0.1",
            "true",
            "false",
            "null",
            "3.141592653589793238",
            "1e308",
        ];
        const STRINGS: [&str; 12] = [
            r#""""#,
            r#""plain""#,
            r#""Zürich 東京""#,
            r#""tab\tnl\n""#,
            r#""q\"b\\""#,
            r#""\u00e9""#,
            r#""\u0041\/""#,
            r#""\u001f\u0008""#,
            r#""\u001F""#,
            r#""\ud83d\ude00""#,
            r#""\b\f\r""#,
            r#""x\u2028y""#,
        ];
        const KEYS: [&str; 8] = [
            r#""a""#,
            r#""b""#,
            r#""\u0061""#,
            r#""k10""#,
            r#""k2""#,
            r#""é""#,
            r#""a\"""#,
            r#""""#,
        ];
        out.push_str(ws(rng));
        match rng.below(if depth > 3 { 2 } else { 4 }) {
            0 => out.push_str(ATOMS[rng.below(ATOMS.len() as u64) as usize]),
            1 => out.push_str(STRINGS[rng.below(STRINGS.len() as u64) as usize]),
            2 => {
                out.push('[');
                for i in 0..rng.below(4) {
                    if i > 0 {
                        out.push(',');
                    }
                    random_json(rng, depth + 1, out);
                }
                out.push_str(ws(rng));
                out.push(']');
            }
            _ => {
                out.push('{');
                for i in 0..rng.below(6) {
                    if i > 0 {
                        out.push(',');
                    }
                    out.push_str(ws(rng));
                    out.push_str(KEYS[rng.below(KEYS.len() as u64) as usize]);
                    out.push_str(ws(rng));
                    out.push(':');
                    random_json(rng, depth + 1, out);
                }
                out.push_str(ws(rng));
                out.push('}');
            }
        }
        out.push_str(ws(rng));
    }

    #[test]
    fn random_json_is_written_as_serde_json_writes_its_value() {
        let mut rng = crate::fake::Rng::new(11);
        let (mut taken, mut text) = (0, String::new());
        for _ in 0..20_000 {
            text.clear();
            random_json(&mut rng, 0, &mut text);
            let expected = via_value(&text);
            assert_eq!(canonical(&text), expected, "{text}");
            taken += usize::from(expected.is_some());
        }
        // Every spelling is valid JSON: none was declined.
        assert_eq!(taken, 20_000);
    }

    /// Broken spellings (bytes cut, doubled or replaced): when serde_json
    /// parses the text, the same text comes out or `None` (not sure); when it
    /// does not, `None`.
    /// `text` with one to three bytes cut, replaced or put in (from
    /// `bytes`); `None` when a cut split a character.
    fn broken(rng: &mut crate::fake::Rng, text: &str, bytes: &[u8]) -> Option<String> {
        let mut out = text.as_bytes().to_vec();
        for _ in 0..1 + rng.below(3) {
            let at = rng.below(out.len() as u64 + 1) as usize;
            let b = bytes[rng.below(bytes.len() as u64) as usize];
            match rng.below(3) {
                0 if at < out.len() => {
                    out.remove(at);
                }
                1 if at < out.len() => out[at] = b,
                _ => out.insert(at, b),
            }
        }
        String::from_utf8(out).ok()
    }

    #[test]
    fn broken_json_is_declined_or_written_as_serde_json_writes_it() {
        const BYTES: &[u8] = b"{}[]\",:\\ \t\n\x01e.-+0129ntfxu";
        let mut rng = crate::fake::Rng::new(5);
        let (mut text, mut same) = (String::new(), 0);
        for _ in 0..20_000 {
            text.clear();
            random_json(&mut rng, 0, &mut text);
            let Some(broken) = broken(&mut rng, &text, BYTES) else {
                continue;
            };
            match (canonical(&broken), via_value(&broken)) {
                (Some(ours), Some(theirs)) => {
                    assert_eq!(ours, theirs, "{broken}");
                    same += 1;
                }
                (Some(ours), None) => panic!("{broken:?} is not JSON, yet gave {ours}"),
                (None, _) => {}
            }
        }
        assert!(same > 1000, "{same}");
    }

    #[test]
    fn declines_what_a_value_would_not_parse_or_nests_deeply() {
        for text in [
            "{",
            "{\"a\":1} x",
            "not json",
            r#"{"s":"\ud800"}"#,
            "1e400",
            "",
        ] {
            assert_eq!(canonical(text), None, "{text}");
            assert_eq!(via_value(text), None, "{text}");
        }
        let deep = format!("{}{}", "[".repeat(120), "]".repeat(120));
        assert_eq!(canonical(&deep), None);
    }

    /// As deep as `is_json` takes, and no deeper, whatever the brackets.
    #[test]
    fn too_deep_is_past_100_levels() {
        let nest = |n: usize| format!("{}{}", "[".repeat(n), "]".repeat(n));
        for (text, deep) in [
            (nest(100), false),
            (nest(101), true),
            (format!("[{}]", vec!["{}"; 500].join(",")), false),
            (format!("{{\"a\":{}}}", nest(100)), true),
        ] {
            let v: Value = serde_json::from_str(&text).unwrap();
            assert_eq!(too_deep(&text, &v), deep, "{text}");
            assert_eq!(is_json(&text), !deep, "{text}");
        }
    }

    #[test]
    fn flat_objects_take_the_quick_way() {
        for text in [
            "{}",
            r#"{"b":1,"a":"x"}"#,
            r#"{"k1":"v","k10":true,"k2":null,"k20":false,"k3":0}"#,
            r#"{"z":"t\tq\"\\ \u001f é 東京","y":1234567890123456789}"#,
            r#"{"gen_ai.tool.b":"2","gen_ai.tool.a":"1","gen_ai.tool":"0","":"e"}"#,
            r#"{"a":"1","b":"2"}"#,
        ] {
            assert_eq!(flat(text), via_value(text), "{text}");
            assert!(flat(text).is_some(), "{text}");
        }
        // Left to the general reader, which gets them right.
        for text in [
            r#"{"a":1,"a":2}"#,
            r#"{"a": 1}"#,
            r#"{"a":-1,"b":1.5}"#,
            r#"{"a":{"c":1,"b":2}}"#,
            r#"{"a":[2,1]}"#,
            r#"{"\u0061":1}"#,
            r#"{"a":"\u00e9"}"#,
            r#"{"a":12345678901234567890}"#,
            r#"{"a":01}"#,
            r#"{"a":1}x"#,
            " {}",
        ] {
            assert_eq!(flat(text), None, "{text}");
            assert_eq!(canonical(text), via_value(text), "{text}");
        }
    }

    fn value_takes(text: &str) -> bool {
        via_value(text).is_some()
    }

    /// `is_json` says yes only where serde_json reads the text into a
    /// `Value`, and says yes to every valid spelling the generator makes.
    #[test]
    fn is_json_agrees_with_serde_json() {
        let mut rng = crate::fake::Rng::new(23);
        let mut text = String::new();
        for _ in 0..20_000 {
            text.clear();
            random_json(&mut rng, 0, &mut text);
            assert!(is_json(&text), "{text}");
            assert!(value_takes(&text), "{text}");
        }
        const BYTES: &[u8] = b"{}[]\",:\\ \t\n\x01e.-+0129ntfxuE/d8c";
        let (mut yes, mut no) = (0, 0);
        for _ in 0..40_000 {
            text.clear();
            random_json(&mut rng, 0, &mut text);
            let Some(broken) = broken(&mut rng, &text, BYTES) else {
                continue;
            };
            let theirs = value_takes(&broken);
            if is_json(&broken) {
                assert!(theirs, "{broken:?} is not JSON to serde_json");
                yes += 1;
            } else {
                assert!(!theirs, "{broken:?} was declined");
                no += 1;
            }
        }
        assert!(yes > 1000 && no > 1000, "{yes} {no}");
        for text in [
            "",
            " ",
            "{",
            "[1,]",
            "{\"a\":1,}",
            "01",
            "1.",
            "1e",
            "-",
            "+1",
            ".5",
            "tru",
            "\"\\x\"",
            "\"\\u12\"",
            "\"a\u{1}\"",
            "{\"a\" 1}",
            "[1 2]",
            "1 2",
            // What serde_json's grammar check takes but its parser refuses.
            "\"\\ud800\"",
            "\"\\udbff\\u0041\"",
            "\"\\udc00\"",
            "\"\\ud800\\n\"",
            "1e400",
            "-1e999",
            "1.8e308",
            "[1e309]",
            &format!("1{}", "0".repeat(400)),
            &format!("0.{}1e500", "0".repeat(150)),
        ] {
            assert!(!is_json(text), "{text:?}");
            assert!(!value_takes(text), "{text:?}");
        }
        let deep = format!("{}{}", "[".repeat(120), "]".repeat(120));
        assert!(!is_json(&deep));
        for text in [
            "-0.0e-0",
            " {\"a\":[true,false,null]} ",
            "\"\\uD83D\\uDE00 \\udbff\\udfff\"",
            "1e-400",
            "1e-99999999999999999999999",
            "0e99999999999",
            "1.7976931348623157e308",
            "-1e300",
            &format!("1{}e-300", "0".repeat(400)),
            &format!("0.{}1e450", "0".repeat(150)),
        ] {
            assert!(is_json(text) && value_takes(text), "{text:?}");
        }
    }

    /// Not a test: the arguments and results of the serve bench's agent
    /// traces, rewritten and checked many times, for a profiler
    /// (`cargo test --release --lib canonical::tests::work -- --ignored`).
    #[test]
    #[ignore]
    fn work() {
        let g = crate::fake::agent_traces(50, 8, 1, 11);
        let texts: Vec<String> = g.requests[0]
            .resource_spans
            .iter()
            .flat_map(|r| &r.scope_spans)
            .flat_map(|s| &s.spans)
            .flat_map(|s| &s.attributes)
            .filter(|kv| kv.key.starts_with("gen_ai.tool.call.a") || kv.key.ends_with(".result"))
            .filter_map(|kv| match kv.value.as_ref()?.value.as_ref()? {
                opentelemetry_proto::tonic::common::v1::any_value::Value::StringValue(t) => {
                    Some(t.clone())
                }
                _ => None,
            })
            .collect();
        let n: usize = std::env::var("ROUNDS")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(50);
        let (mut bytes, mut ok) = (0, 0);
        for _ in 0..n {
            for t in &texts {
                bytes += canonical(t).map_or(0, |c| c.len());
                ok += usize::from(is_json(t));
            }
        }
        assert_eq!(ok, n * texts.len());
        assert!(bytes > 0);
    }
}
