//! The state threaded through the visitors, and the first problem of a unit.

use super::tape::TapeDe;
use super::{Document, SpanRejected};
use crate::ingest::projection::KeyFilter;
use crate::ingest::span::SpanBuilder;
use crate::ingest::Request;

/// State threaded through the visitors: where we are (for messages), what
/// was rejected, which unknown keys were seen.
pub(super) struct Ctx<'f> {
    pub(super) filter: &'f dyn KeyFilter,
    /// `""`, `"[3]."` (array element) or `"trace."` (Tempo v2).
    pub(super) prefix: String,
    pub(super) rs_key: &'static str,
    pub(super) r: usize,
    pub(super) ss_key: &'static str,
    pub(super) s: usize,
    pub(super) rejected: Vec<SpanRejected>,
    unknown: Vec<String>,
    pub(super) containers: bool,
    /// Gathers each span's name and attributes; every span finishes it
    /// (kept or rejected), so it is empty between spans.
    pub(super) sb: SpanBuilder,
    /// The simd-json tape being read (`None`: serde_json reads the text),
    /// for the span attribute lists read straight from it.
    pub(super) tape: Option<&'f TapeDe<'f, 'f>>,
}

thread_local! {
    /// A thread's [`SpanBuilder`], its buffers reused from document to
    /// document (a JSON-lines file is one document per line). Given back
    /// only by a decode that succeeded: one that failed may have stopped
    /// mid-span, and its builder is dropped.
    static SPAN_BUILDER: std::cell::Cell<SpanBuilder> = std::cell::Cell::new(SpanBuilder::default());
}

impl<'f> Ctx<'f> {
    pub(super) fn new(filter: &'f dyn KeyFilter) -> Self {
        Ctx {
            filter,
            prefix: String::new(),
            rs_key: "resourceSpans",
            r: 0,
            ss_key: "scopeSpans",
            s: 0,
            rejected: Vec::new(),
            unknown: Vec::new(),
            containers: false,
            sb: SPAN_BUILDER.take(),
            tape: None,
        }
    }

    pub(super) fn into_document(self, requests: Vec<Request>) -> Document {
        SPAN_BUILDER.set(self.sb);
        Document {
            requests,
            rejected: self.rejected,
            unknown: self.unknown,
            containers: self.containers,
        }
    }
}

pub(super) const MAX_UNKNOWN: usize = 8;

impl Ctx<'_> {
    pub(super) fn rs_path(&self) -> String {
        format!("{}{}[{}]", self.prefix, self.rs_key, self.r)
    }

    pub(super) fn ss_path(&self) -> String {
        format!("{}.{}[{}]", self.rs_path(), self.ss_key, self.s)
    }

    pub(super) fn unknown_key(&mut self, key: &str, place: impl FnOnce(&Self) -> String) {
        if self.unknown.len() < MAX_UNKNOWN {
            let p = place(self);
            self.unknown.push(format!("`{key}` ({p})"));
        }
    }
}

/// The first problem found in one unit (span, resource, scope).
#[derive(Default)]
pub(super) struct Fault(pub(super) Option<String>);

impl Fault {
    pub(super) fn note(&mut self, msg: impl FnOnce() -> String) {
        if self.0.is_none() {
            self.0 = Some(msg());
        }
    }
}
