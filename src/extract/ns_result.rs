//! The arguments and result beside a kind marker, for a span another rule
//! read (docs/conventions.md, "The generic tool-kind rule").
//!
//! A named rule may take a span that a vendor also types as a tool in its
//! own namespace (TruLens: `gen_ai.tool.name` with no operation name, so
//! `otel-genai-no-operation`, and `ai.observability.span_type = tool`;
//! AgentMark: `openinference.span.kind = TOOL`, so `openinference`, and
//! `agentmark.span.kind = tool`). The named rule knows its own keys, not the
//! vendor's: when it finds no result, the result is read where the generic
//! tool-kind rule reads it in that namespace, from its sources under `{ns}`
//! (`{ns}output`, `{ns}result`, `{ns}call.return`, `{ns}response.output`,
//! ...), in their order; the arguments likewise (`{ns}input`,
//! `{ns}request.input`, ...). Every marker on the span is asked, in
//! attribute order (the named rule's own marker holds nothing more), then
//! every namespace in which a vendor mirrors the GenAI tool keys (GigaFlow:
//! `gigaflow.tool.name` beside `gen_ai.tool.name`, the result only as
//! `gigaflow.tool_output`). Only a call without a result (or arguments)
//! asks, so no span that read them reads otherwise.

use std::borrow::Cow;

use super::rules::{builtin_list, Field, Rule, Source, SpanView, NS};
use super::span_results::result_of;
use super::{any_text, CallResult};
use crate::assemble::SpanRecord;

/// The result of call span `s`, read by `rule` with none found, from the
/// generic rule `generic`'s sources in the namespace of a marker or a mirror on `s`.
pub(super) fn of(generic: Option<&Rule>, rule: &Rule, s: &SpanRecord) -> Option<CallResult> {
    let generic = generic.filter(|g| rule.family.is_none() && g.name() != rule.name())?;
    namespaces(generic, s).into_iter().find_map(|ns| {
        in_ns(&generic.result, ns, s)
            .into_iter()
            .find_map(|src| result_of(&src, s))
    })
}

/// The generic rule `generic`'s argument sources in the namespaces of the
/// markers on call span `s` (read by `rule`), for `rule`'s reading to try
/// after its own found nothing; empty for the generic rule itself.
pub(super) fn args_sources(generic: Option<&Rule>, rule: &Rule, s: &SpanRecord) -> Vec<Source> {
    let Some(generic) = generic.filter(|g| rule.family.is_none() && g.name() != rule.name()) else {
        return Vec::new();
    };
    namespaces(generic, s)
        .into_iter()
        .flat_map(|ns| in_ns(&generic.args, ns, s))
        .collect()
}

/// The sources of `list` keyed under `{ns}`, with `ns` for it, whose key
/// span `s` has (a source is copied only then: most spans have none). The
/// namespace's own keys only: `flat` sources rebuild from prefixes, which
/// are the generic rule's to read.
fn in_ns(list: &[Source], ns: &str, s: &SpanRecord) -> Vec<Source> {
    list.iter()
        .filter_map(|src| {
            let Field::Attr(k) = &src.field else {
                return None;
            };
            if src.flat || !k.starts_with(NS) {
                return None;
            }
            let key = k.replacen(NS, ns, 1);
            s.attr(&key)?;
            let mut src = src.clone();
            src.field = Field::Attr(key);
            for k in src.mime_attr.iter_mut().chain(src.schema_attr.iter_mut()) {
                *k = k.replace(NS, ns);
            }
            Some(src)
        })
        .collect()
}

/// The namespaces of `generic`'s markers on `s`, in attribute order.
fn namespaces<'s>(generic: &Rule, s: &'s SpanRecord) -> Vec<&'s str> {
    let any_key = |test: &super::rules::KeyTest| s.span.attr_keys().any(test);
    let mut out = Vec::new();
    // Past the last marker found: the next one is looked for after it.
    let mut from = 0;
    loop {
        let view = SpanView {
            name: s.span.name(),
            any_key: &any_key,
        };
        let value = |i: usize| {
            s.span
                .attr_value(from + i)
                .and_then(any_text)
                .map(Cow::into_owned)
        };
        let Some((ns, key)) = generic.family_marker(s.span.attr_keys().skip(from), value, view)
        else {
            break;
        };
        let Some(at) = s
            .span
            .attr_keys()
            .skip(from)
            .position(|k| k == key.as_bytes())
        else {
            break;
        };
        out.push(ns);
        from += at + 1;
    }
    for ns in mirrors(s) {
        if !out.contains(&ns) {
            out.push(ns);
        }
    }
    out
}

/// The namespaces in which a vendor mirrors the GenAI tool keys
/// (`gigaflow.tool.name` beside `gen_ai.tool.name`, naming the same tool):
/// the prefix of each `mirror_name_keys` key on `s` that is one segment
/// (not a message's indexed path, not a prefixed copy of the GenAI keys)
/// and has its twin under a `mirrored_namespaces` namespace, which is
/// never a mirror itself.
fn mirrors(s: &SpanRecord) -> impl Iterator<Item = &str> {
    let names = builtin_list("mirror_name_keys");
    let mirrored = builtin_list("mirrored_namespaces");
    s.span.attr_keys().enumerate().filter_map(move |(i, k)| {
        let k = std::str::from_utf8(k).ok()?;
        let (name, ns) = names
            .iter()
            .find_map(|n| k.strip_suffix(n.as_str()).map(|ns| (n, ns)))?;
        let vendor = ns.strip_suffix('.')?;
        if vendor.is_empty() || vendor.contains('.') || mirrored.iter().any(|m| m == ns) {
            return None;
        }
        let value = s.span.attr_value(i).and_then(any_text)?;
        let twin = |m: &String| s.attr_str(&format!("{m}{name}")) == Some(value.as_ref());
        mirrored.iter().any(twin).then_some(ns)
    })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use crate::extract::test_support::calls_in;
    use crate::extract::tests::sp;

    #[test]
    fn a_vendor_s_request_input_and_response_output_beside_its_marker_are_read() {
        // A made-up vendor types its tool spans in its own namespace and
        // OpenInference's, which the `openinference` rule reads (no
        // `input.value` / `output.value` there).
        let vendor = [
            ("acme.span.kind", "tool"),
            ("acme.request.input", r#"{"berth": 4}"#),
            ("acme.response.output", r#""moored""#),
        ];
        let oi = ("openinference.span.kind", "TOOL");
        let want = vec![(
            "moor".to_string(),
            Some(json!({"berth": 4})),
            Some(json!("moored")),
            "openinference".to_string(),
        )];
        // Either marker first: every marker's namespace is asked.
        let mut first = vec![oi];
        first.extend(vendor);
        let mut last = vendor.to_vec();
        last.push(oi);
        for attrs in [first, last] {
            let got = calls_in(vec![sp(1, None, (0, 10), "moor", &attrs)]);
            assert_eq!(got, want, "{attrs:?}");
        }
        // Alone, the generic rule reads the same keys.
        let got = calls_in(vec![sp(1, None, (0, 10), "moor", &vendor)]);
        assert_eq!(got[0].1, Some(json!({"berth": 4})));
        assert_eq!(got[0].2, Some(json!("moored")));
        assert_eq!(got[0].3, "tool-kind");
    }

    #[test]
    fn a_vendor_s_mirror_of_the_genai_tool_keys_gives_the_result_it_holds() {
        // A made-up vendor mirrors the GenAI tool keys in its namespace and
        // writes the result only there; `otel-genai` reads the span.
        let genai = [
            ("gen_ai.operation.name", "execute_tool"),
            ("gen_ai.tool.name", "moor"),
            ("gen_ai.tool.call.arguments", r#"{"berth": 4}"#),
        ];
        let with = |more: &[(&'static str, &'static str)]| {
            let mut attrs = genai.to_vec();
            attrs.extend_from_slice(more);
            calls_in(vec![sp(1, None, (0, 10), "moor", &attrs)])
        };
        let got = with(&[
            ("acme.tool.name", "moor"),
            ("acme.tool_output", r#"{"moored": true}"#),
        ]);
        assert_eq!(got[0].2, Some(json!({"moored": true})));
        assert_eq!(got[0].3, "otel-genai");
        // Near misses: no mirror of the name, a bare `tool.name`, the GenAI
        // namespace's own keys (read by the rule or not at all), a mirror
        // naming another tool, a prefix of more than one segment (a
        // message's path, a prefixed copy of the GenAI keys).
        for more in [
            &[("acme.tool_output", r#""moored""#)][..],
            &[("tool.name", "moor"), ("tool_output", r#""moored""#)],
            &[
                ("gen_ai.output", r#""moored""#),
                ("gen_ai.tool_output", r#""x""#),
            ],
            &[
                ("acme.tool.name", "sail"),
                ("acme.tool_output", r#""moored""#),
            ],
            &[
                ("x.acme.tool.name", "moor"),
                ("x.acme.tool_output", r#""moored""#),
            ],
        ] {
            let got = with(more);
            assert_ne!(got[0].2, Some(json!("x")), "{more:?}");
            if !more.iter().any(|(k, _)| *k == "gen_ai.output") {
                assert_eq!(got[0].2, None, "{more:?}");
            }
        }
    }

    #[test]
    fn an_observation_model_beside_a_vendor_s_marker_gives_the_result() {
        // `<ns>.observation.type = tool` beside `<ns>.observation.output`
        // (as Langfuse's keys, in another namespace), on a span
        // `otel-genai-no-operation` reads.
        let attrs = [
            ("acme.observation.type", "tool"),
            ("gen_ai.tool.name", "moor"),
            ("gen_ai.tool.call.arguments", r#"{"berth": 4}"#),
            ("acme.observation.output", r#"{"moored": true}"#),
        ];
        let got = calls_in(vec![sp(1, None, (0, 10), "moor", &attrs)]);
        assert_eq!(got[0].2, Some(json!({"moored": true})));
        assert_eq!(got[0].3, "otel-genai-no-operation");
    }
}
