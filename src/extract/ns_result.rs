//! The result beside a kind marker, for a span another rule read
//! (docs/conventions.md, "The generic tool-kind rule").
//!
//! A named rule may take a span that a vendor also types as a tool in its
//! own namespace (TruLens: `gen_ai.tool.name` with no operation name, so
//! `otel-genai-no-operation`, and `ai.observability.span_type = tool`).
//! The named rule knows the GenAI keys, not the vendor's: when it finds no
//! result, the result is read where the generic tool-kind rule reads it in
//! that namespace, from its sources under `{ns}` (`{ns}output`,
//! `{ns}result`, `{ns}call.return`, ...), in their order. Only a call
//! without a result asks, so no span that read a result reads otherwise.

use super::rules::{Field, Rule, Source, NS};
use super::{family_ns, result_of, CallResult};
use crate::assemble::SpanRecord;

/// The result of call span `s`, read by `rule` with none found, from the
/// generic rule `generic`'s sources in the namespace of its marker on `s`.
pub(super) fn of(generic: Option<&Rule>, rule: &Rule, s: &SpanRecord) -> Option<CallResult> {
    let generic = generic.filter(|g| rule.family.is_none() && g.name() != rule.name())?;
    let ns = family_ns(generic, s)?;
    let in_ns = |src: &&Source| match &src.field {
        Field::Attr(k) => k.starts_with(NS),
        _ => false,
    };
    generic.result.iter().filter(in_ns).find_map(|src| {
        // The namespace's own keys only: `flat` sources rebuild from
        // prefixes, which are the generic rule's to read.
        let Field::Attr(k) = &src.field else {
            return None;
        };
        if src.flat {
            return None;
        }
        let key = k.replacen(NS, ns, 1);
        // A key the span lacks gives nothing: the source is copied only
        // for a key that is there (most spans have none of them).
        s.attr(&key)?;
        let mut src = src.clone();
        src.field = Field::Attr(key);
        result_of(&src, s)
    })
}
