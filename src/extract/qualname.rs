//! A tool span named by its function's qualified name (docs/conventions.md,
//! "Tool names that are a function's qualified name").
//!
//! A tracer that wraps a plain function names the span, and often the tool,
//! by the function's module-qualified name: TruLens's `@instrument` writes
//! `module.function` (or `module.Class.method`, `module.outer.<locals>.inner`)
//! as `gen_ai.tool.name` and as `ai.observability.call.function`. The model
//! called the function by its own name: OpenAI and Anthropic allow no dot in
//! a tool's name. But some providers and frameworks do give a tool a dotted
//! name the model sees (Gemini's function declarations allow dots and
//! colons; an MCP server's `server.tool`, BeeAI's `dynamic.getWeather`), so
//! a dotted name alone proves nothing: the name is cut to its last part
//! only when the span also records that very text under a key that holds a
//! function's qualified name (`vocabulary.toml`:
//! `qualified_function_keys`, `qualified_function_namespaces`). The full
//! name stays as the call's `span_name`. When the conversation holds the
//! model's own name for the call, joining it still renames the call to that
//! (`conversation::joins`).

use std::sync::OnceLock;

use crate::assemble::SpanRecord;
use crate::ingest::span::Val;

use super::rules::{builtin_list, in_namespace, ANY};
use super::wrapper_names::{is_wrapper_method, tool_name};

/// The name a rule gave span `s`'s call (`call`) after
/// `wrapper_names::named`, then cut to its last part when the span records
/// it as a function's qualified name (`t33.check_stock`). Kept apart from
/// `wrapper_names` because this reading asks it which names are a wrapper's.
pub(crate) fn named(name: String, s: &SpanRecord, call: bool) -> String {
    let name = super::wrapper_names::named(name, s, call);
    match call.then(|| bare(&name, s)).flatten() {
        Some((bare, _)) => bare.to_string(),
        None => name,
    }
}

/// A nested function's marker in a Python qualname (`outer.<locals>.inner`).
const LOCALS: &str = "<locals>";

/// The declared keys, split once: exact keys, and the tails that any
/// namespace may stand before (`call.function` of `{any}call.function`).
struct Keys {
    exact: Vec<&'static str>,
    tails: Vec<&'static str>,
    namespaces: &'static [String],
    /// The last bytes of the exact keys and tails: a key ending otherwise
    /// is none of them (the first test [`holds_key`] makes).
    ends: Vec<u8>,
}

fn keys() -> &'static Keys {
    static KEYS: OnceLock<Keys> = OnceLock::new();
    KEYS.get_or_init(|| {
        let list = builtin_list("qualified_function_keys");
        let mut ends: Vec<u8> = list.iter().filter_map(|k| k.bytes().last()).collect();
        ends.sort_unstable();
        ends.dedup();
        Keys {
            exact: list
                .iter()
                .filter(|k| !k.starts_with(ANY))
                .map(String::as_str)
                .collect(),
            tails: list.iter().filter_map(|k| k.strip_prefix(ANY)).collect(),
            namespaces: builtin_list("qualified_function_namespaces"),
            ends,
        }
    })
}

/// Whether `key` is a declared tail in some namespace: the tail bare or
/// after a namespace, as a family's marker keys are matched
/// ([`in_namespace`]).
fn is_tail_key(k: &Keys, key: &[u8]) -> bool {
    k.tails.iter().any(|t| in_namespace(key, t).is_some())
}

/// The exact keys decoding must keep for this reading.
pub(crate) fn span_keys() -> impl Iterator<Item = &'static str> {
    let k = keys();
    k.exact
        .iter()
        .copied()
        .chain(k.namespaces.iter().map(String::as_str))
}

/// The keys any namespace may stand before (`call.function` of
/// `{any}call.function`): decoding keeps a key that is one, or ends in one
/// after a `.` or `_` (as [`is_tail_key`] reads them).
pub(crate) fn span_suffixes() -> impl Iterator<Item = &'static str> {
    keys().tails.iter().copied()
}

/// Whether `part` is an identifier of Python or JavaScript: letters,
/// digits, `_` or `$`, not starting with a digit.
fn identifier(part: &str) -> bool {
    part.starts_with(|c: char| !c.is_ascii_digit())
        && part
            .chars()
            .all(|c| c.is_alphanumeric() || c == '_' || c == '$')
}

/// The function's own name when `name` has the shape of a qualified name:
/// two or more dot-separated parts, each an identifier or (before the last)
/// `<locals>`. `t33.make.<locals>.check_stock` gives `check_stock`; a
/// lambda's `t33.<lambda>` gives none.
pub(crate) fn last_part(name: &str) -> Option<&str> {
    let (path, last) = name.rsplit_once('.')?;
    let path_ok = path.split('.').all(|p| p == LOCALS || identifier(p));
    (path_ok && identifier(last)).then_some(last)
}

/// The key under which span `s` records `full` as a function's qualified
/// name: a declared key whose value is `full`, the span's key that ends in
/// a declared tail with that value (`ai.observability.call.function`), or
/// a declared key and a declared namespace key that together spell it
/// (`code.namespace` `.` `code.function`).
pub(crate) fn recorded_by<'s>(full: &str, s: &'s SpanRecord) -> Option<&'s str> {
    let k = keys();
    for &key in &k.exact {
        let Some(value) = s.attr_str(key) else {
            continue;
        };
        if value == full {
            return Some(key);
        }
        // The older conventions: the function within its namespace.
        let within = |ns: &String| {
            s.attr_str(ns).is_some_and(|ns| {
                full.strip_prefix(ns)
                    .and_then(|rest| rest.strip_prefix('.'))
                    .is_some_and(|rest| rest == value)
            })
        };
        if k.namespaces.iter().any(within) {
            return Some(key);
        }
    }
    if k.tails.is_empty() {
        return None;
    }
    s.span.attributes().find_map(|(key, value)| {
        let same = matches!(value, Some(Val::Str(v)) if v == full);
        (same && is_tail_key(k, key.as_bytes())).then_some(key)
    })
}

/// The bare name for a call a rule named `name` on span `s`, with the key
/// that marks `name` as a qualified function name: `name`'s last part when
/// `name` is dotted, has the shape of a qualified name, and the span
/// records it as its function's name.
///
/// A name shaped like a tool wrapper's method (`Shell.run`, `ToolNode.invoke`)
/// is cut too, but only when nothing else on the span names the tool: a
/// user's class may well have a method `run` or `execute` that is the tool,
/// while a wrapper's span names the tool it ran under a name key
/// (`wrapper_names`) or carries the model's call record as its input
/// (`call_input`), which name it better than the method.
pub(crate) fn bare<'n, 's>(name: &'n str, s: &'s SpanRecord) -> Option<(&'n str, &'s str)> {
    // Most names hold no dot: one byte scan, before any lookup.
    if !name.contains('.') {
        return None;
    }
    let last = last_part(name)?;
    let key = recorded_by(name, s)?;
    let named_otherwise =
        || tool_name(name, s).is_some() || super::call_input::named(name, s).is_some();
    if is_wrapper_method(name) && named_otherwise() {
        return None;
    }
    Some((last, key))
}

/// The qualified name to keep as `span_name` for a call named `name` on
/// span `s` whose rule named it `own()`: `own()` when [`bare`] cut it to
/// `name`. `own()` is asked only when `name` is bare and the span holds a
/// declared key (most spans hold none).
pub(crate) fn kept(
    own: impl FnOnce() -> Option<String>,
    name: &str,
    s: &SpanRecord,
) -> Option<String> {
    if name.contains('.') || !holds_key(s) {
        return None;
    }
    own().filter(|own| bare(own, s).is_some_and(|(b, _)| b == name))
}

/// Whether span `s` holds any declared key (a scan of its keys, no lookup
/// of values).
fn holds_key(s: &SpanRecord) -> bool {
    let k = keys();
    s.span.attr_keys().any(|key| {
        key.last().is_some_and(|b| k.ends.contains(b))
            && (k.exact.iter().any(|e| e.as_bytes() == key) || is_tail_key(k, key))
    })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::assemble::{Trace, TraceId};
    use crate::extract::test_support::{genai_asks, genai_chat, genai_user, read_in_order};
    use crate::extract::tests::sp;

    /// `(name, span_name)` of each call read from `spans` (span 1 the root).
    fn named(spans: Vec<SpanRecord>) -> Vec<(String, Option<String>)> {
        let trace = Trace::new(TraceId([9; 16]), spans, 0);
        let read = read_in_order(vec![trace]);
        (read.iter().flat_map(|a| &a.calls))
            .map(|c| (c.name.clone(), c.span_name.clone()))
            .collect()
    }

    /// A tool span as TruLens's `@instrument(span_type=TOOL)` writes it:
    /// named by `qual`, which `gen_ai.tool.name` repeats, and `function`
    /// under `ai.observability.call.function`.
    fn traced(id: u8, qual: &str, function: &str, tool: &str) -> SpanRecord {
        let when = (u64::from(id) * 10, u64::from(id) * 10 + 5);
        let attrs = [
            ("ai.observability.span_type", "tool"),
            ("ai.observability.call.function", function),
            ("ai.observability.call.kwargs.port", "Peniche"),
            ("ai.observability.call.return", "ok"),
            ("gen_ai.tool.name", tool),
        ];
        sp(id, Some(1), when, qual, &attrs)
    }

    fn root() -> SpanRecord {
        sp(1, None, (0, 1000), "marina.reply", &[])
    }

    fn pair(name: &str, span_name: Option<&str>) -> (String, Option<String>) {
        (name.to_string(), span_name.map(str::to_string))
    }

    #[test]
    fn a_function_method_or_nested_function_by_its_qualified_name_is_named_by_its_last_part() {
        let quals = [
            "harbour_tools.tide_times",
            "harbour_tools.Harbour.book_berth",
            "harbour_tools.make_tools.<locals>.fuel_price",
        ];
        let mut spans = vec![root()];
        spans.extend((2..).zip(quals).map(|(id, q)| traced(id, q, q, q)));
        assert_eq!(
            named(spans),
            vec![
                pair("tide_times", Some(quals[0])),
                pair("book_berth", Some(quals[1])),
                pair("fuel_price", Some(quals[2])),
            ]
        );
    }

    #[test]
    fn a_dotted_name_no_key_records_as_a_function_stays_whole() {
        // An MCP-style `server.tool` name: no qualified-function key, or
        // one that records another function.
        let bare = sp(
            2,
            Some(1),
            (10, 20),
            "weather.get_forecast",
            &[("gen_ai.tool.name", "weather.get_forecast")],
        );
        let other = traced(
            3,
            "weather.get_alerts",
            "srv.dispatch",
            "weather.get_alerts",
        );
        assert_eq!(
            named(vec![root(), bare, other]),
            vec![
                pair("weather.get_forecast", None),
                pair("weather.get_alerts", None),
            ]
        );
    }

    #[test]
    fn a_bare_name_and_a_lambda_stay() {
        let spans = vec![
            root(),
            // The tool's own name beside its function's qualified name.
            traced(2, "tide_times", "harbour_tools.tide_times", "tide_times"),
            traced(
                3,
                "harbour_tools.<lambda>",
                "harbour_tools.<lambda>",
                "harbour_tools.<lambda>",
            ),
        ];
        assert_eq!(
            named(spans),
            vec![
                pair("tide_times", None),
                pair("harbour_tools.<lambda>", None),
            ]
        );
    }

    #[test]
    fn a_users_method_named_like_a_wrappers_is_cut_when_nothing_else_names_the_tool() {
        let quals = ["dock_tools.Ledger.execute", "dock_tools.Crane.run"];
        let mut spans = vec![root()];
        spans.extend((2..).zip(quals).map(|(id, q)| traced(id, q, q, q)));
        assert_eq!(
            named(spans),
            vec![pair("execute", Some(quals[0])), pair("run", Some(quals[1])),]
        );
    }

    #[test]
    fn a_wrappers_method_named_by_its_input_record_or_span_is_left_to_call_input() {
        let runner = "acme_graph.runner.ToolRunner.invoke";
        let record = r#"[{"name": "tide_times", "args": {"port": "Sines"}, "id": "c7", "type": "tool_call"}]"#;
        let wrapper = |id: u8, span: &str, input: Option<&'static str>| {
            let mut attrs = vec![
                ("ai.observability.span_type", "tool"),
                ("ai.observability.call.function", runner),
                ("gen_ai.tool.name", runner),
            ];
            attrs.extend(input.map(|i| ("ai.observability.call.kwargs.input", i)));
            let when = (u64::from(id) * 10, u64::from(id) * 10 + 5);
            sp(id, Some(1), when, span, &attrs)
        };
        let spans = vec![
            root(),
            // The model's call record as the node's input.
            wrapper(2, runner, Some(record)),
            // The span itself named by the tool.
            wrapper(3, "fuel_price", None),
        ];
        assert_eq!(
            named(spans),
            vec![pair("tide_times", Some(runner)), pair("fuel_price", None),]
        );
    }

    #[test]
    fn explain_names_the_key_the_span_holds() {
        let q = "harbour_tools.tide_times";
        let trace = Trace::new(TraceId([9; 16]), vec![root(), traced(2, q, q, q)], 0);
        let rows = crate::extract::Extractor::default().explain(&trace);
        let m = (rows.iter().find_map(|r| r.matched.clone())).expect("matched");
        assert_eq!(m.name.as_deref(), Some("tide_times"));
        assert_eq!(
            m.name_qualified_by.as_deref(),
            Some("ai.observability.call.function")
        );
    }

    #[test]
    fn the_code_conventions_keys_mark_a_qualified_name() {
        let tool = |id: u8, name: &str, code: &[(&'static str, &'static str)]| {
            let mut attrs = vec![("gen_ai.tool.name", name)];
            attrs.extend_from_slice(code);
            sp(
                id,
                Some(1),
                (u64::from(id) * 10, u64::from(id) * 10 + 5),
                name,
                &attrs,
            )
        };
        let spans = vec![
            root(),
            tool(
                2,
                "berths.Berths.free",
                &[("code.function.name", "berths.Berths.free")],
            ),
            tool(
                3,
                "berths.tide_times",
                &[
                    ("code.namespace", "berths"),
                    ("code.function", "tide_times"),
                ],
            ),
            // The namespace does not spell the name: left whole.
            tool(
                4,
                "berths.fuel_price",
                &[("code.namespace", "docks"), ("code.function", "fuel_price")],
            ),
        ];
        assert_eq!(
            named(spans),
            vec![
                pair("free", Some("berths.Berths.free")),
                pair("tide_times", Some("berths.tide_times")),
                pair("berths.fuel_price", None),
            ]
        );
    }

    #[test]
    fn the_models_name_for_the_call_wins() {
        // A provider that allows a dot: the model called the tool by the
        // dotted name, with the arguments the span records.
        let ask = genai_asks(&[("c1", "harbour.tide_times", json!({"port": "Peniche"}))]);
        let spans = vec![
            root(),
            genai_chat(2, (5, 8), "chat", json!([genai_user()]), json!([ask])),
            traced(
                3,
                "harbour.tide_times",
                "harbour.tide_times",
                "harbour.tide_times",
            ),
        ];
        let got = named(spans);
        assert_eq!(got.len(), 1, "{got:?}");
        assert_eq!(got[0].0, "harbour.tide_times");
    }

    #[test]
    fn decoding_keeps_the_declared_keys_and_no_other_function_key() {
        use crate::ingest::projection::{AttrsOf, KeyFilter};
        let p = crate::extract::Extractor::default().projection(Vec::new());
        for key in [
            "ai.observability.call.function",
            "call.function",
            "code.function.name",
            "code.function",
            "code.namespace",
        ] {
            assert!(p.keep(AttrsOf::Span, key), "{key}");
        }
        assert!(!p.keep(AttrsOf::Span, "acme.lookup.function"));
    }

    #[test]
    fn a_qualified_name_gives_its_last_part() {
        for (name, last) in [
            ("t33.check_stock", "check_stock"),
            ("__main__.check_stock", "check_stock"),
            ("shop.desk.Desk.check_stock", "check_stock"),
            ("shop.make_tools.<locals>.check_stock", "check_stock"),
            ("svc.Stock.$lookup", "$lookup"),
        ] {
            assert_eq!(last_part(name), Some(last), "{name}");
        }
        for no in [
            "check_stock",
            "t33.<lambda>",
            "t33.",
            ".check_stock",
            "t33..check_stock",
            "t33.check stock",
            "t33.9lives",
            "<locals>",
            "weather/get.forecast",
        ] {
            assert_eq!(last_part(no), None, "{no}");
        }
    }
}
