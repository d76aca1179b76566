//! Projection at decode: keep only the attributes something downstream
//! reads (docs/architecture.md, "Replay at scale"). [`KeyFilter`] is what
//! both decoders (OTLP/JSON and OTLP/protobuf) ask of each attribute key;
//! [`Projection`] answers from a set that is data, computed once per run
//! from the extraction rules, the trace facts, the session keys and the
//! fixtures' join keys; everything else is skipped by the decoder without
//! being allocated.

use std::cell::RefCell;
use std::collections::HashSet;
use std::sync::atomic::{AtomicU64, Ordering};

use opentelemetry_proto::tonic::common::v1::{any_value, AnyValue};

/// Where an attribute list sits, for a [`KeyFilter`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AttrsOf {
    Resource,
    Scope,
    Span,
    Event,
    Link,
}

/// Which attributes to keep, by where they are and their key: [`KeepAll`]
/// keeps every one, [`Projection`] only the keys that something downstream
/// reads. A dropped attribute's value is skipped without being decoded when
/// its key comes first (as every exporter writes it).
pub trait KeyFilter {
    fn keep(&self, at: AttrsOf, key: &str) -> bool;

    /// Whether an attribute at `at` that [`KeyFilter::keep`] drops is kept
    /// after all when its value is a string holding JSON (an object or an
    /// array): readers that search every attribute for JSON (the calls a
    /// model requested) still find it. Its value is looked at, and copied
    /// only when kept.
    fn keep_json(&self, _at: AttrsOf) -> bool {
        false
    }
}

/// Whether `text` holds a JSON object or array (as far as its first
/// character tells), for [`KeyFilter::keep_json`].
pub fn holds_json(text: &str) -> bool {
    match text.as_bytes().first() {
        Some(b'{' | b'[') => true,
        // Most values start with a character that is neither: no trim.
        Some(&c) if c.is_ascii() && !char::from(c).is_whitespace() => false,
        _ => text.trim_start().starts_with(['{', '[']),
    }
}

/// Whether an attribute's value is a string holding JSON ([`holds_json`]).
pub fn value_holds_json(value: Option<&AnyValue>) -> bool {
    matches!(value, Some(AnyValue { value: Some(any_value::Value::StringValue(t)) }) if holds_json(t))
}

/// Keeps every attribute.
#[derive(Debug, Clone, Copy, Default)]
pub struct KeepAll;

impl KeyFilter for KeepAll {
    fn keep(&self, _: AttrsOf, _: &str) -> bool {
        true
    }
}

/// Which attributes to keep, by where they sit. Ids, names, kinds, times,
/// status and event names are always kept.
///
/// Span attributes are kept whole unless [`Projection::span_keys`] names
/// them; then a span keeps those keys, the keys that start with one of its
/// prefixes, and any attribute whose string value holds JSON: the lookup of
/// the calls a model requested reads every such attribute
/// (docs/conventions.md). Resource attributes are read only by joins and
/// sessions, event attributes only by the rules that name them, the
/// user-message and exception readers; scope and link attributes by nothing.
#[derive(Debug, Clone, Default)]
pub struct Projection {
    /// `None`: every span attribute is kept.
    span: Option<Keys>,
    span_prefixes: Vec<String>,
    /// Span keys kept by their last dot-separated part (`kind` keeps
    /// `acme.span.kind`): what a family rule reads in any namespace.
    span_tails: Keys,
    /// Span keys kept when they end with one of these after a `_`
    /// (`honeyhive_event_type` for `event_type`): a family marker whose
    /// namespace ends in `_`.
    span_snake_tails: Vec<String>,
    /// Span keys kept when they are one of these, or end with one after a
    /// `.` or `_` (`call.function` keeps `ai.observability.call.function`):
    /// a key any namespace may stand before, longer than its last part.
    span_suffixes: Vec<String>,
    /// Span keys kept when one of these starts them or follows a `.` or `_`
    /// (`inputs.` keeps `ag.data.inputs.town`): values written one
    /// attribute per key under a prefix in any namespace.
    span_infixes: Vec<memchr::memmem::Finder<'static>>,
    /// The bytes every infix ends with, when there are several (`puts.` of
    /// `inputs.` and `outputs.`): one search that turns most keys away
    /// before each infix is searched for.
    infix_common: Option<memchr::memmem::Finder<'static>>,
    resource: Keys,
    event: Keys,
    /// Event keys kept when one of these starts them or follows a `.`
    /// (`inputs.` keeps `tool_request.inputs.town`): a call's values written
    /// one attribute per key in a span event.
    event_infixes: Vec<memchr::memmem::Finder<'static>>,
    /// Which projection this is, for the answers a thread remembers
    /// ([`Projection::remembered`]): a new number at each change (0 for
    /// the default, which keeps every span attribute and asks no key).
    id: u64,
}

/// The last [`Projection::id`] given out.
static LAST_ID: AtomicU64 = AtomicU64::new(0);

/// The span keys whose answer a thread remembers, for one projection:
/// the keys seen first, so that input of made-up keys costs memory once.
const MAX_REMEMBERED: usize = 4096;
/// Longer keys are asked each time (they are rare, and a memo of them
/// would hold their bytes).
const MAX_REMEMBERED_LEN: usize = 128;

/// A thread's remembered answers for span keys, of projection `of`.
/// hashbrown's map, not std's: a lookup compares the key found with the
/// key asked by [`Asked`] (inline), not by `str`'s `==` (a `memcmp` call
/// per attribute of every span).
#[derive(Default)]
struct Remembered {
    of: u64,
    kept: hashbrown::HashMap<Box<str>, bool, foldhash::fast::RandomState>,
}

/// A key asked of [`Remembered`]: hashed as the `str` it is (as the map's
/// `Box<str>` keys are), compared with [`crate::short_bytes::eq`].
struct Asked<'a>(&'a str);

impl std::hash::Hash for Asked<'_> {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.0.hash(state);
    }
}

impl hashbrown::Equivalent<Box<str>> for Asked<'_> {
    fn equivalent(&self, key: &Box<str>) -> bool {
        crate::short_bytes::eq(self.0.as_bytes(), key.as_bytes())
    }
}

thread_local! {
    static REMEMBERED: RefCell<Remembered> = RefCell::new(Remembered::default());
}

/// A set of exact keys. Every attribute of every span is looked up here:
/// foldhash is several times cheaper than SipHash on such short keys, and
/// the set itself is ours, not the input's. The lengths the set holds (bit
/// `n`: a key of `n` bytes, the last bit any longer) turn most keys away
/// before they are hashed.
#[derive(Debug, Clone, Default)]
struct Keys {
    set: HashSet<String, foldhash::fast::RandomState>,
    lengths: u64,
}

impl Keys {
    fn length_bit(key: &str) -> u64 {
        1 << key.len().min(63)
    }

    fn contains(&self, key: &str) -> bool {
        self.lengths & Keys::length_bit(key) != 0 && self.set.contains(key)
    }

    fn extend(&mut self, keys: impl IntoIterator<Item = String>) {
        for k in keys {
            self.lengths |= Keys::length_bit(&k);
            self.set.insert(k);
        }
    }

    fn is_empty(&self) -> bool {
        self.set.is_empty()
    }
}

impl Projection {
    /// Gives the changed projection a new [`Projection::id`], so that no
    /// thread uses what it remembered of the projection before.
    fn renew(&mut self) {
        self.id = LAST_ID.fetch_add(1, Ordering::Relaxed) + 1;
    }

    /// Whether a span attribute of key `key` is kept, asked of `keys`,
    /// the prefixes, the tails and the family's infixes
    /// ([`Projection::remembered`] remembers the answer).
    fn span_kept(&self, keys: &Keys, key: &str) -> bool {
        keys.contains(key)
            || self.span_prefixes.iter().any(|p| {
                // The first byte before the whole prefix: most keys
                // start with none of theirs.
                p.is_empty()
                    || key.as_bytes().first() == p.as_bytes().first() && key.starts_with(p.as_str())
            })
            || self.tail_kept(key)
            || self.suffix_kept(key)
            || self.family_kept(key)
    }

    /// [`Projection::span_kept`], remembered per thread: every attribute
    /// of every span is asked, spans repeat a few keys, and one hash
    /// lookup costs less than the tests after the exact keys (a key kept
    /// by none of them goes through all).
    fn remembered(&self, keys: &Keys, key: &str) -> bool {
        if key.len() > MAX_REMEMBERED_LEN {
            return self.span_kept(keys, key);
        }
        REMEMBERED.with(|r| {
            let mut r = r.borrow_mut();
            if r.of != self.id {
                r.kept.clear();
                r.of = self.id;
            }
            if let Some(&kept) = r.kept.get(&Asked(key)) {
                return kept;
            }
            let kept = self.span_kept(keys, key);
            if r.kept.len() < MAX_REMEMBERED {
                r.kept.insert(key.into(), kept);
            }
            kept
        })
    }

    /// Keeps `keys` on resources (join and session keys).
    pub fn resource_keys<S: Into<String>>(mut self, keys: impl IntoIterator<Item = S>) -> Self {
        self.renew();
        self.resource.extend(keys.into_iter().map(Into::into));
        self
    }

    /// Keeps `keys` on span events.
    pub fn event_keys<S: Into<String>>(mut self, keys: impl IntoIterator<Item = S>) -> Self {
        self.renew();
        self.event.extend(keys.into_iter().map(Into::into));
        self
    }

    /// Keeps event keys that start with one of `infixes` or hold one after
    /// a `.`.
    pub fn event_infixes<S: AsRef<str>>(mut self, infixes: impl IntoIterator<Item = S>) -> Self {
        self.renew();
        self.event_infixes.extend(
            infixes
                .into_iter()
                .map(|i| memchr::memmem::Finder::new(i.as_ref().as_bytes()).into_owned()),
        );
        self
    }

    /// Keeps `keys` on spans, with the keys that start with `prefixes` and
    /// the attributes holding JSON; the first call turns span projection on.
    pub fn span_keys<S: Into<String>, P: Into<String>>(
        mut self,
        keys: impl IntoIterator<Item = S>,
        prefixes: impl IntoIterator<Item = P>,
    ) -> Self {
        self.renew();
        self.span
            .get_or_insert_with(Keys::default)
            .extend(keys.into_iter().map(Into::into));
        self.span_prefixes
            .extend(prefixes.into_iter().map(Into::into));
        self
    }
}

impl Projection {
    /// Keeps span keys whose last part (after a `.` or a `:`) is one of
    /// `tails`.
    pub fn span_tails<S: Into<String>>(mut self, tails: impl IntoIterator<Item = S>) -> Self {
        self.renew();
        self.span_tails.extend(tails.into_iter().map(Into::into));
        self
    }

    /// Keeps span keys that end with one of `tails` after a `_`.
    pub fn span_snake_tails<S: Into<String>>(mut self, tails: impl IntoIterator<Item = S>) -> Self {
        self.renew();
        self.span_snake_tails
            .extend(tails.into_iter().map(Into::into));
        self
    }

    /// Keeps span keys that are one of `suffixes` or end with one after a
    /// `.` or `_`.
    pub fn span_suffixes<S: Into<String>>(mut self, suffixes: impl IntoIterator<Item = S>) -> Self {
        self.renew();
        self.span_suffixes
            .extend(suffixes.into_iter().map(Into::into));
        self
    }

    /// Keeps span keys that start with one of `infixes` or hold one after
    /// a `.` or `_`.
    pub fn span_infixes<S: AsRef<str>>(mut self, infixes: impl IntoIterator<Item = S>) -> Self {
        self.renew();
        self.span_infixes.extend(
            infixes
                .into_iter()
                .map(|i| memchr::memmem::Finder::new(i.as_ref().as_bytes()).into_owned()),
        );
        let needles: Vec<&[u8]> = self.span_infixes.iter().map(|f| f.needle()).collect();
        let common = needles
            .iter()
            .skip(1)
            .fold(needles.first().copied(), |c, n| {
                let c = c?;
                let len = c
                    .iter()
                    .rev()
                    .zip(n.iter().rev())
                    .take_while(|(a, b)| a == b)
                    .count();
                Some(&c[c.len() - len..])
            });
        self.infix_common = common
            .filter(|c| needles.len() > 1 && c.len() >= 2)
            .map(|c| memchr::memmem::Finder::new(c).into_owned());
        self
    }

    /// What [`Projection::span_snake_tails`] and
    /// [`Projection::span_infixes`] keep.
    fn family_kept(&self, key: &str) -> bool {
        let bytes = key.as_bytes();
        // The last byte first: most keys are told apart by it alone.
        let last = bytes.last();
        let snake = self.span_snake_tails.iter().any(|t| {
            t.as_bytes().last() == last
                && bytes.len() > t.len()
                && bytes.ends_with(t.as_bytes())
                && bytes[bytes.len() - t.len() - 1] == b'_'
        });
        snake
            || self
                .infix_common
                .as_ref()
                .is_none_or(|c| c.find(bytes).is_some())
                && self.span_infixes.iter().any(|f| {
                    f.find(bytes)
                        .is_some_and(|at| at == 0 || matches!(bytes[at - 1], b'.' | b'_'))
                })
    }

    /// What [`Projection::span_suffixes`] keeps.
    fn suffix_kept(&self, key: &str) -> bool {
        let bytes = key.as_bytes();
        self.span_suffixes.iter().any(|t| {
            // The last byte first, as in `family_kept`.
            t.as_bytes().last() == bytes.last()
                && bytes.ends_with(t.as_bytes())
                && (bytes.len() == t.len()
                    || matches!(bytes[bytes.len() - t.len() - 1], b'.' | b'_'))
        })
    }

    fn tail_kept(&self, key: &str) -> bool {
        if self.span_tails.is_empty() {
            return false;
        }
        // A set, not a list: every key that no exact key keeps is asked.
        // A namespace may separate with `:` (Genkit's `genkit:name`): the
        // part after the last `.` or `:` (asked once per key: remembered).
        let last = memchr::memrchr2(b'.', b':', key.as_bytes()).map_or(key, |at| &key[at + 1..]);
        self.span_tails.contains(last)
    }
}

impl KeyFilter for Projection {
    fn keep(&self, at: AttrsOf, key: &str) -> bool {
        match at {
            AttrsOf::Span => self
                .span
                .as_ref()
                .is_none_or(|keys| self.remembered(keys, key)),
            AttrsOf::Resource => self.resource.contains(key),
            AttrsOf::Event => {
                self.event.contains(key)
                    || self.event_infixes.iter().any(|f| {
                        let bytes = key.as_bytes();
                        f.find(bytes)
                            .is_some_and(|at| at == 0 || bytes[at - 1] == b'.')
                    })
            }
            AttrsOf::Scope | AttrsOf::Link => false,
        }
    }

    fn keep_json(&self, at: AttrsOf) -> bool {
        at == AttrsOf::Span && self.span.is_some()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The first-byte shortcut answers as the trimmed test does.
    #[test]
    fn holds_json_as_trimmed() {
        for t in [
            "",
            "{",
            "[1]",
            " {",
            "\u{a0}[",
            "\u{2003}{}",
            "\x0b{",
            "\x0c[",
            "\x1c{",
            "x{",
            "\u{e9}{",
            "\r\n\t [",
            "1",
            "\"{\"",
        ] {
            assert_eq!(
                holds_json(t),
                t.trim_start().starts_with(['{', '[']),
                "{t:?}"
            );
        }
    }

    #[test]
    fn keeps_what_is_read_where_it_is_read() {
        let p = Projection::default()
            .resource_keys(["session.id"])
            .event_keys(["content"]);
        assert!(p.keep(AttrsOf::Span, "anything.at.all"));
        assert!(p.keep(AttrsOf::Resource, "session.id"));
        assert!(!p.keep(AttrsOf::Resource, "service.instance.id"));
        assert!(p.keep(AttrsOf::Event, "content"));
        assert!(!p.keep(AttrsOf::Event, "exception.stacktrace"));
        assert!(!p.keep(AttrsOf::Scope, "content"));
        assert!(!p.keep_json(AttrsOf::Span));

        let p = p.span_keys(["gen_ai.tool.name"], ["llm.tools."]);
        assert!(p.keep(AttrsOf::Span, "gen_ai.tool.name"));
        assert!(p.keep(AttrsOf::Span, "llm.tools.0.tool.json_schema"));
        assert!(!p.keep(AttrsOf::Span, "gen_ai.system_instructions"));
        assert!(p.keep_json(AttrsOf::Span));
        assert!(!p.keep_json(AttrsOf::Resource));
    }

    #[test]
    fn a_changed_projection_answers_anew_on_the_same_thread() {
        let first = Projection::default().span_keys(["a.kept"], [""; 0]);
        let long = format!("x.{}", "k".repeat(MAX_REMEMBERED_LEN));
        for _ in 0..2 {
            assert!(first.keep(AttrsOf::Span, "a.kept"));
            assert!(!first.keep(AttrsOf::Span, "b.kept"));
            assert!(!first.keep(AttrsOf::Span, &long));
        }
        // A copy changed after the keys were asked, then the first again:
        // each answers for its own keys.
        let second = first.clone().span_keys(["b.kept", long.as_str()], [""; 0]);
        for _ in 0..2 {
            assert!(second.keep(AttrsOf::Span, "b.kept"));
            assert!(second.keep(AttrsOf::Span, &long));
            assert!(!first.keep(AttrsOf::Span, "b.kept"));
            assert!(!first.keep(AttrsOf::Span, &long));
        }
        let tails = first.clone().span_tails(["kind"]);
        assert!(tails.keep(AttrsOf::Span, "acme.kind"));
        assert!(!first.keep(AttrsOf::Span, "acme.kind"));
        // A namespace separated by `:` (Genkit's `genkit:name`).
        assert!(tails.keep(AttrsOf::Span, "acme:kind"));
        assert!(!tails.keep(AttrsOf::Span, "acme:kinds"));
    }

    #[test]
    fn suffixes_keep_keys_that_end_a_namespace() {
        let p = Projection::default()
            .span_keys(["gen_ai.tool.name"], [""; 0])
            .span_suffixes(["call.function"]);
        for kept in [
            "call.function",
            "ai.observability.call.function",
            "acme_call.function",
        ] {
            assert!(p.keep(AttrsOf::Span, kept), "{kept}");
        }
        // Another key ending in `function`, or the suffix inside a word.
        for left in ["code.function", "acmecall.function", "call.functions"] {
            assert!(!p.keep(AttrsOf::Span, left), "{left}");
        }
    }

    #[test]
    fn infixes_keep_keys_where_they_start_a_part() {
        let on = |p: Projection| p.span_keys(["gen_ai.tool.name"], [""; 0]);
        // Two infixes with a common ending (searched first), one alone,
        // and two with no common ending worth a search.
        for infixes in [
            &["inputs.", "outputs."][..],
            &["inputs."],
            &["args.", "kw."],
        ] {
            let p = on(Projection::default()).span_infixes(infixes.iter().copied());
            let first = infixes[0];
            assert!(p.keep(AttrsOf::Span, &format!("{first}town")));
            assert!(p.keep(AttrsOf::Span, &format!("ag.data.{first}town")));
            assert!(p.keep(AttrsOf::Span, &format!("ag_{first}town")));
            assert!(!p.keep(AttrsOf::Span, &format!("ag.data{first}town")));
            assert!(!p.keep(AttrsOf::Span, "ag.data.town"));
        }
        let p = on(Projection::default()).span_infixes(["inputs.", "outputs."]);
        assert!(p.keep(AttrsOf::Span, "run.outputs.answer"));
        assert!(!p.keep(AttrsOf::Span, "run.outputs"));
    }
}
