//! A tool span named after the wrapper's method that ran the tool
//! (`FunctionTool.acall`, `SimpleTool.__call__`, `StructuredTool._run`):
//! the name says which class ran, not which tool (docs/conventions.md,
//! "Spans named after a wrapper's method"). Whatever rule read the span, a
//! call whose name came out so takes the tool's own name from a name-like
//! attribute of the span, and keeps the span's name as `span_name`. With no
//! such attribute the name stays; the conversation witness may still join
//! the call to the model's request by call id or arguments.

use std::borrow::Cow;

use crate::assemble::SpanRecord;

/// The methods a tool wrapper runs its tool through, in the Python and
/// JavaScript frameworks seen (sync and async spellings).
const WRAPPER_METHODS: [&str; 18] = [
    "call",
    "acall",
    "__call__",
    "_call",
    "_acall",
    "run",
    "arun",
    "_run",
    "_arun",
    "invoke",
    "ainvoke",
    "_invoke",
    "forward",
    "aforward",
    "execute",
    "aexecute",
    "_execute",
    "call_tool",
];

/// The attributes that name the tool on such a span, in the order tried
/// (MLflow writes a bare `name`, JSON-encoded like all its values).
pub(crate) const NAME_KEYS: [&str; 3] = ["tool.name", "gen_ai.tool.name", "name"];

/// Whether `name` is `<Class>.<method>` of a tool wrapper: a class name
/// (a capital first, then letters, digits or `_`), a dot, one of
/// [`WRAPPER_METHODS`]; or that after the module path that holds the
/// class, as a Python qualname writes it (TruLens's `gen_ai.tool.name`:
/// `langgraph.prebuilt.tool_node.ToolNode.invoke`), each module a
/// lowercase identifier.
pub(crate) fn is_wrapper_method(name: &str) -> bool {
    let mut parts = name.rsplit('.');
    let (Some(method), Some(class)) = (parts.next(), parts.next()) else {
        return false;
    };
    let ident = |p: &str| !p.is_empty() && p.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    let module = |p: &str| ident(p) && p.starts_with(|c: char| c.is_ascii_lowercase() || c == '_');
    class.starts_with(|c: char| c.is_ascii_uppercase())
        && ident(class)
        && WRAPPER_METHODS.contains(&method)
        && parts.all(module)
}

/// The tool's own name on span `s` when `name`, the name a rule gave its
/// call, is a wrapper's method, with the key it came from.
pub(crate) fn tool_name(name: &str, s: &SpanRecord) -> Option<(String, &'static str)> {
    if !is_wrapper_method(name) {
        return None;
    }
    NAME_KEYS.iter().find_map(|&key| {
        let text = s.attr_str(key)?;
        let text = match text.strip_prefix('"') {
            Some(_) => Cow::Owned(serde_json::from_str::<String>(text).ok()?),
            None => Cow::Borrowed(text),
        };
        let text = text.trim();
        (!text.is_empty() && text != name && !is_wrapper_method(text))
            .then(|| (text.to_string(), key))
    })
}

/// `name` (the name a rule gave span `s`), or, for a call (`call`), the
/// tool's own name when `name` is a wrapper's method and the span names
/// the tool. Agent runs keep theirs (`FunctionAgent.run`). A function's
/// qualified name is cut after this (`extract::qualname::named`).
pub(crate) fn named(name: String, s: &SpanRecord, call: bool) -> String {
    match call {
        true => {
            let name = tool_name(&name, s).map_or(name, |(n, _)| n);
            // An MCP tool's namespaced name (`mcp__trip__find_hotel`).
            match super::tool_name::mcp_parts(&name) {
                Some((_, tool)) => tool.to_string(),
                None => name,
            }
        }
        false => name,
    }
}

/// The span's name to keep as `span_name` for a call named `name` whose
/// rule named it `own()`: when the span's name is a wrapper's method and
/// [`named`] replaced the rule's name (asked only then: most spans are
/// not so named).
pub(crate) fn kept(
    own: impl FnOnce() -> Option<String>,
    name: &str,
    s: &SpanRecord,
) -> Option<String> {
    let span = s.span.name();
    // A span named after an MCP tool's namespaced name keeps it: the
    // server stays visible beside the tool's own name.
    if super::tool_name::mcp_parts(span).is_some() {
        return (span != name).then(|| span.to_string());
    }
    if !is_wrapper_method(span) {
        return None;
    }
    own()
        .filter(|own| own != name && is_wrapper_method(own))
        .map(|_| span.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_wrapper_method_is_a_class_and_a_known_method() {
        for yes in [
            "FunctionTool.acall",
            "SimpleTool.__call__",
            "StructuredTool._run",
            "acme_graph.prebuilt.runner.ToolRunner.invoke",
            "_private.Tool.run",
        ] {
            assert!(is_wrapper_method(yes), "{yes}");
        }
        for no in [
            "find_hotel",
            "Tool.get_weather",
            "tool.run",
            "My Tool.run",
            "FunctionTool.acall.x",
            "execute_tool find_hotel",
            "Acme.ToolRunner.invoke",
            "acme..ToolRunner.invoke",
            "acme.tools.find_hotel",
        ] {
            assert!(!is_wrapper_method(no), "{no}");
        }
    }
}
