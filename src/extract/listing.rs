//! A span that lists the tools on offer is no call (docs/conventions.md,
//! "Tool listings").
//!
//! Before each turn a framework may ask an MCP server or a toolkit which
//! tools it offers, and record that in a span of its own: the OpenAI Agents
//! SDK's `mcp_tools` span, MCP's `tools/list` request, a client's
//! `list_tools` method. Some instrumentations type that span as a tool
//! (OpenInference's Agents processor: `openinference.span.kind = TOOL`, no
//! `tool.name`, no input, the offered tools' names as the output), and a
//! rule would count every listing as a call. A span is a listing, and no
//! call, when its name is one of the declared listing names
//! (`tool_listing_names` in `vocabulary.toml`) and the call read from it is
//! named by that span name, or the call's own name is one of them (OpenLIT
//! gives the Agents SDK's listing the tool name `mcp_list_tools` on a span
//! named `execute_tool <server>`), has no call id, no arguments (or only
//! the server's name, `{"server": "farm"}`, beside a list of tools), and a
//! result that is absent or a list of tools (names, or objects with a `name`; MCP's
//! `{"tools": [...]}`), and no model in the trace asked for a tool of that
//! name (a model-facing tool called `list_tools` stays a call).

use std::sync::OnceLock;

use serde_json::Value;

use super::requested::Requests;
use super::rules::{builtin_list, Pattern, Regexes, Rule};
use super::{source, wrappers::value_of, Classified, Role};
use crate::assemble::SpanRecord;

/// The vocabulary list (`vocabulary.toml`) naming the listing spans' names.
const VOCABULARY: &str = "tool_listing_names";

/// The declared listing names, each asked first what its literals need
/// ([`Pattern::is_match`]): most call spans' names are turned away by a
/// comparison of bytes, with no regex run (a regex set ran on every one).
struct Names(Vec<Pattern>);

impl Names {
    fn is_match(&self, name: &str) -> bool {
        self.0.iter().any(|p| p.is_match(name))
    }
}

/// [`Names`], built once; each regex compiled at its first use. The table
/// is a constant, checked by a test: a bad pattern lists nothing rather
/// than failing every read.
fn names() -> &'static Names {
    static NAMES: OnceLock<Names> = OnceLock::new();
    NAMES.get_or_init(|| {
        let compiled = builtin_list(VOCABULARY)
            .iter()
            .filter_map(|p| Pattern::new(VOCABULARY, p, Regexes::FirstUse).ok());
        Names(compiled.collect())
    })
}

/// Takes the call role off every span of `spans` that is a tool listing
/// (see the module's doc); `rules`: the extractor's, which `spans` index.
pub(super) fn demote(rules: &[Rule], spans: &mut Classified<'_>) {
    let trace = spans.trace;
    let mut requests: Option<Requests> = None;
    for i in 0..trace.spans.len() {
        if spans.role[i] != Role::Call {
            continue;
        }
        let (Some(r), Some(name)) = (spans.rule_of[i], spans.names[i].as_deref()) else {
            continue;
        };
        let s = &trace.spans[i];
        // Named so by its span, or by the tool name its writer gave it
        // (OpenLIT: `gen_ai.tool.name = mcp_list_tools`, the span named
        // after the operation and the server, `execute_tool parcels`).
        let span_named = names().is_match(s.span.name()) && s.span.name().contains(name);
        if !span_named && !names().is_match(name) {
            continue;
        }
        let rule = spans.generic.get(&i).map_or(&rules[r], |g| &**g);
        if !holds_a_listing(rule, s) {
            continue;
        }
        let requests = requests.get_or_insert_with(|| Requests::new(trace));
        if requests.nearest(trace.spans.len(), name).is_none() {
            spans.role[i] = Role::None;
        }
    }
}

/// Whether span `s`, read by `rule`, holds nothing of a call but a list of
/// tools: no call id, no arguments (but a server's name beside a tool
/// list), a result absent or a tool list.
fn holds_a_listing(rule: &Rule, s: &SpanRecord) -> bool {
    let empty = |v: &Value| match v {
        Value::Null => true,
        Value::Object(o) => o.is_empty(),
        Value::Array(a) => a.is_empty(),
        Value::String(t) => t.trim().is_empty(),
        _ => false,
    };
    let result = rule.result.iter().find_map(|src| value_of(src, s));
    // The server's name alone is no call's argument beside a tool list.
    let listed = result.as_ref().is_some_and(is_tool_list);
    source::tool_call_id(s).is_none()
        && rule
            .args
            .iter()
            .filter_map(|src| value_of(src, s))
            .all(|v| empty(&v) || (listed && names_a_server(&v)))
        && result.is_none_or(|v| is_tool_list(&v))
}

/// Arguments that only name the server whose tools are listed,
/// `{"server": "farm"}` (Laminar's record of the OpenAI Agents SDK's
/// `mcp_tools` span): no tool takes them, so they are no call's.
fn names_a_server(v: &Value) -> bool {
    v.as_object().is_some_and(|o| {
        o.len() == 1
            && SERVER_KEYS.iter().any(|k| {
                o.get(*k)
                    .and_then(Value::as_str)
                    .is_some_and(|t| !t.trim().is_empty())
            })
    })
}

/// The keys a listing's input names its server under.
const SERVER_KEYS: [&str; 2] = ["server", "server_name"];

/// A list of tools: their names, or objects naming them (MCP's `Tool`),
/// alone or as MCP's `ListToolsResult` (`{"tools": [...]}`).
fn is_tool_list(v: &Value) -> bool {
    let tool = |t: &Value| match t {
        Value::String(name) => !name.trim().is_empty(),
        Value::Object(o) => o.get("name").is_some_and(Value::is_string),
        _ => false,
    };
    match v {
        Value::Array(list) => list.iter().all(tool),
        Value::Object(o) => o
            .get("tools")
            .and_then(Value::as_array)
            .is_some_and(|list| list.iter().all(tool)),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn the_declared_listing_names_compile() {
        let set = names();
        assert!(!set.0.is_empty());
        let listings = [
            "mcp_tools",
            "mcp_tools harbour-tools",
            "tools/list",
            "tools/list.mcp",
            "list_tools",
            "MCPServerStdio.list_tools",
            "listTools",
            "mcp_list_tools",
        ];
        for listing in listings {
            assert!(set.is_match(listing), "{listing}");
        }
        for call in [
            "find_hotel",
            "tools",
            "list_toolsets",
            "mcp_tools_x",
            "tools/listing",
            "mcp_list_toolsets",
        ] {
            assert!(!set.is_match(call), "{call}");
        }
    }

    #[test]
    fn a_tool_list_is_names_or_named_objects() {
        assert!(is_tool_list(&json!(["a", "b"])));
        assert!(is_tool_list(&json!([])));
        assert!(is_tool_list(
            &json!({"tools": [{"name": "a", "inputSchema": {}}]})
        ));
        assert!(!is_tool_list(&json!({"hotel": "Tejo"})));
        assert!(!is_tool_list(&json!([1, 2])));
        assert!(!is_tool_list(&json!("rented")));
    }
}

#[cfg(test)]
mod demote_tests {
    use serde_json::json;

    use crate::extract::test_support::calls_in;
    use crate::extract::tests::sp;

    /// A made-up vendor's span typed TOOL, named `name`, with `attrs`.
    fn typed(id: u8, name: &str, attrs: &[(&str, &str)]) -> crate::assemble::SpanRecord {
        let mut all = vec![("acme.span.kind", "TOOL")];
        all.extend_from_slice(attrs);
        sp(
            id,
            None,
            (u64::from(id) * 10, u64::from(id) * 10 + 5),
            name,
            &all,
        )
    }

    fn names(spans: Vec<crate::assemble::SpanRecord>) -> Vec<String> {
        calls_in(spans).into_iter().map(|c| c.0).collect()
    }

    #[test]
    fn a_span_listing_the_offered_tools_is_no_call() {
        let names_out = json!(["moor", "tide"]).to_string();
        let mcp = json!({"tools": [{"name": "moor", "inputSchema": {}}]}).to_string();
        let listing = typed(1, "mcp_tools", &[("acme.output", &names_out)]);
        let mcp_list = typed(2, "tools/list harbour", &[("acme.output", &mcp)]);
        let bare = typed(3, "HarbourClient.list_tools", &[]);
        let call = typed(4, "moor", &[("acme.input", r#"{"berth": 4}"#)]);
        assert_eq!(names(vec![listing, mcp_list, bare, call]), ["moor"]);
    }

    #[test]
    fn a_listing_name_with_a_call_s_content_stays_a_call() {
        // Arguments, a result that is no tool list, a call id.
        let args = typed(
            1,
            "list_tools",
            &[("acme.input", r#"{"server": "harbour"}"#)],
        );
        let result = typed(2, "list_tools", &[("acme.output", r#"{"berths": 4}"#)]);
        let id = typed(3, "list_tools", &[("gen_ai.tool.call.id", "call_9")]);
        assert_eq!(names(vec![args, result, id]).len(), 3);
        // A model asked for a tool of that name: it is one of its tools.
        let asked = json!([{"role": "assistant", "tool_calls": [{"id": "c1", "type": "function",
            "function": {"name": "list_tools", "arguments": "{}"}}]}])
        .to_string();
        let model = sp(
            1,
            None,
            (0, 5),
            "chat",
            &[
                ("gen_ai.operation.name", "chat"),
                ("gen_ai.output.messages", &asked),
            ],
        );
        let listing = typed(2, "list_tools", &[("acme.output", r#"["moor"]"#)]);
        assert_eq!(names(vec![model, listing]), ["list_tools"]);
    }

    #[test]
    fn a_server_s_name_beside_a_tool_list_is_a_listing_s_input() {
        // Laminar's record of the OpenAI Agents SDK's `mcp_tools` span.
        let server = ("acme.input", r#"{"server": "farm"}"#);
        let listing = typed(
            1,
            "agents.mcp_tools",
            &[server, ("acme.output", r#"["sow", "reap"]"#)],
        );
        // Beside a result that is no tool list, or with a second key, or
        // alone, the same input is a call's.
        let result = typed(2, "mcp_tools", &[server, ("acme.output", r#"{"sown": 4}"#)]);
        let two = typed(
            3,
            "mcp_tools",
            &[
                ("acme.input", r#"{"server": "farm", "field": 4}"#),
                ("acme.output", r#"["sow"]"#),
            ],
        );
        let alone = typed(4, "mcp_tools", &[server]);
        assert_eq!(names(vec![listing, result, two, alone]).len(), 3);
    }

    /// An OTel GenAI tool span named `execute_tool {server}`, its tool
    /// name `tool`, with `attrs`.
    fn genai(id: u8, tool: &str, attrs: &[(&str, &str)]) -> crate::assemble::SpanRecord {
        let mut all = vec![
            ("gen_ai.operation.name", "execute_tool"),
            ("gen_ai.tool.name", tool),
        ];
        all.extend_from_slice(attrs);
        let when = (u64::from(id) * 10, u64::from(id) * 10 + 5);
        sp(id, None, when, "execute_tool harbour", &all)
    }

    #[test]
    fn a_listing_named_by_its_tool_name_is_no_call() {
        let offered = json!(["moor", "tide"]).to_string();
        let result = ("gen_ai.tool.call.result", offered.as_str());
        let listing = genai(1, "mcp_list_tools", &[result]);
        let bare = genai(2, "mcp_list_tools", &[]);
        let call = genai(
            3,
            "moor",
            &[("gen_ai.tool.call.arguments", r#"{"berth": 4}"#)],
        );
        assert_eq!(names(vec![listing, bare, call]), ["moor"]);
    }

    #[test]
    fn a_listing_tool_name_with_a_call_s_content_stays_a_call() {
        // Arguments, a result that is no tool list, a name merely alike.
        let args = genai(
            1,
            "mcp_list_tools",
            &[("gen_ai.tool.call.arguments", r#"{"server": "harbour"}"#)],
        );
        let result = genai(
            2,
            "mcp_list_tools",
            &[("gen_ai.tool.call.result", r#"{"berths": 4}"#)],
        );
        let alike = genai(
            3,
            "mcp_list_toolsets",
            &[("gen_ai.tool.call.result", r#"["moor"]"#)],
        );
        assert_eq!(names(vec![args, result, alike]).len(), 3);
    }
}
