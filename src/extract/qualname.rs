//! A tool span named by its function's qualified name (docs/conventions.md,
//! "Tool names that are a function's qualified name").
//!
//! A tracer that wraps a plain function names the span, and often the tool,
//! by the function's module-qualified name: TruLens's `@instrument` writes
//! `module.function` (or `module.Class.method`, `module.outer.<locals>.inner`)
//! as `gen_ai.tool.name` and as `ai.observability.call.function`. The model
//! called the function by its own name: OpenAI, Anthropic and Gemini allow no
//! dot in a tool's name. But some frameworks do give a tool a dotted name the
//! model sees (an MCP server's `server.tool`, BeeAI's `dynamic.getWeather`),
//! so a dotted name alone proves nothing: the name is cut to its last part
//! only when the span also records that very text under a key that holds a
//! function's qualified name (`[vocabulary]` of `builtin.toml`:
//! `qualified_function_keys`, `qualified_function_namespaces`). The full
//! name stays as the call's `span_name`. When the conversation holds the
//! model's own name for the call, joining it still renames the call to that
//! (`conversation::joins`).

use std::sync::OnceLock;

use crate::assemble::SpanRecord;
use crate::ingest::span::Val;

use super::rules::{builtin_list, ANY};
use super::wrapper_names::is_wrapper_method;

/// A nested function's marker in a Python qualname (`outer.<locals>.inner`).
const LOCALS: &str = "<locals>";

/// The declared keys, split once: exact keys, and the tails that any
/// prefix may stand before (`call.function` of `{any}call.function`), each
/// with its declared form.
struct Keys {
    exact: Vec<&'static str>,
    tails: Vec<(&'static str, &'static str)>,
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
            tails: (list.iter())
                .filter_map(|k| Some((k.as_str(), k.strip_prefix(ANY)?)))
                .collect(),
            namespaces: builtin_list("qualified_function_namespaces"),
            ends,
        }
    })
}

/// The exact keys decoding must keep for this reading.
pub(crate) fn span_keys() -> impl Iterator<Item = &'static str> {
    let k = keys();
    k.exact
        .iter()
        .copied()
        .chain(k.namespaces.iter().map(String::as_str))
}

/// The last dot-separated parts of the keys any prefix may stand before
/// (`function` of `{any}call.function`): decoding keeps keys by them.
pub(crate) fn span_tails() -> impl Iterator<Item = &'static str> {
    keys()
        .tails
        .iter()
        .filter_map(|(_, t)| t.rsplit('.').next())
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

/// The string value of attribute `key` on `s`.
fn text<'s>(s: &'s SpanRecord, key: &str) -> Option<&'s str> {
    s.attr_str(key)
}

/// The key under which span `s` records `full` as a function's qualified
/// name: a declared key whose value is `full`, a key ending in a declared
/// tail with that value (its declared form given, `{any}call.function`),
/// or a declared namespace key and `code.function` that together spell it
/// (`namespace.function`).
pub(crate) fn recorded_by(full: &str, s: &SpanRecord) -> Option<&'static str> {
    let k = keys();
    for &key in &k.exact {
        let Some(value) = text(s, key) else { continue };
        if value == full {
            return Some(key);
        }
        // The older conventions: the function within its namespace.
        let within = |ns: &String| {
            text(s, ns).is_some_and(|ns| {
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
        let (declared, _) = k.tails.iter().find(|(_, t)| {
            key.strip_suffix(t)
                .is_some_and(|head| head.is_empty() || head.ends_with('.'))
        })?;
        matches!(value, Some(Val::Str(v)) if v == full).then_some(*declared)
    })
}

/// The bare name for a call a rule named `name` on span `s`, with the key
/// that marks `name` as a qualified function name: `name`'s last part when
/// `name` is dotted, has the shape of a qualified name, is no tool
/// wrapper's method (`ToolNode.invoke` is left to `wrapper_names` and
/// `call_input`), and the span records it as its function's name.
pub(crate) fn bare<'n>(name: &'n str, s: &SpanRecord) -> Option<(&'n str, &'static str)> {
    // Most names hold no dot: one byte scan, before any lookup.
    if !name.contains('.') || is_wrapper_method(name) {
        return None;
    }
    let last = last_part(name)?;
    recorded_by(name, s).map(|key| (last, key))
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
            && (k.exact.iter().any(|e| e.as_bytes() == key)
                || k.tails.iter().any(|(_, t)| {
                    key.strip_suffix(t.as_bytes())
                        .is_some_and(|head| head.is_empty() || head.ends_with(b"."))
                }))
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
    fn a_bare_name_a_lambda_and_a_wrappers_method_stay() {
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
            // A tool wrapper's method is left to `wrapper_names`.
            traced(
                4,
                "acme_graph.runner.ToolRunner.invoke",
                "acme_graph.runner.ToolRunner.invoke",
                "acme_graph.runner.ToolRunner.invoke",
            ),
        ];
        assert_eq!(
            named(spans),
            vec![
                pair("tide_times", None),
                pair("harbour_tools.<lambda>", None),
                pair("acme_graph.runner.ToolRunner.invoke", None),
            ]
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
