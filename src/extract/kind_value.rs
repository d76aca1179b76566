//! Whether a span's kind/type value names a kind (the generic tool-kind
//! family, docs/conventions.md, "The generic tool-kind rule"). Vendors
//! write the kind as one word (`tool`, `TOOL`) or as one segment of a
//! dotted or underscored value (`agentic.tool.invocation`, `tool_call`).
//! The word must be a whole segment, and what follows it one word that says
//! the act of running it (the family's `then` list, data), the value's last
//! segment. A value that ends with the word after other segments
//! (`AgentOpsSpanKindValues.TOOL`: AgentOps' requested calls), whose
//! segment after the word says something else (`tool_choice`,
//! `tool.definition`) or that only starts with the word (`toolkit`) is not
//! the kind. A run ended may close the value (`tool_call_end`); a hook
//! word before it (`before_tool_execution`) makes it an event about the
//! run, no run (JAF's own tracer writes both).

/// The words around a kind's word: hooks before it, and words saying the
/// run ended after what follows it (vocabularies `kind_hook_words` and
/// `kind_ended_words`, handed in by the rules that read the table).
pub(crate) type Around<'a> = (&'a [String], &'a [String]);

/// Whether `value` names the kind `word`: equal to it, or with `word` as a
/// segment followed by one of `then`, its last (ASCII case ignored), or by
/// one of `then` and a word saying the run ended (`tool_call_end`:
/// vocabulary `kind_ended_words`). A segment before it that names a hook
/// around the run (`before_tool_execution`, `pre_tool_use`: vocabulary
/// `kind_hook_words`) says the span is an event about the run, no run.
pub(crate) fn names(value: &str, word: &str, then: &[String], around: Around<'_>) -> bool {
    if value.eq_ignore_ascii_case(word) {
        return true;
    }
    // Most values are not the word nor contain it: one length check and a
    // byte search say so before any split.
    if then.is_empty() || value.len() <= word.len() || !contains_ignore_case(value, word) {
        return false;
    }
    let is_sep = |c: char| matches!(c, '.' | '_' | '-' | ' ');
    let in_list = |list: &[String], w: &str| list.iter().any(|t| t.eq_ignore_ascii_case(w));
    let (hooks, ended) = around;
    let mut hooked = false;
    let mut parts = value.split(is_sep);
    while let Some(p) = parts.next() {
        if !p.eq_ignore_ascii_case(word) {
            hooked |= in_list(hooks, p);
            continue;
        }
        // The word last after a namespace (`AgentOpsSpanKindValues.TOOL`, an
        // enum's repr) is no kind of its own: AgentOps marks the model's
        // requested calls so.
        return !hooked
            && match (parts.next(), parts.next(), parts.next()) {
                (Some(next), None, None) => in_list(then, next),
                (Some(next), Some(end), None) => in_list(then, next) && in_list(ended, end),
                _ => false,
            };
    }
    false
}

fn contains_ignore_case(hay: &str, needle: &str) -> bool {
    hay.as_bytes()
        .windows(needle.len())
        .any(|w| w.eq_ignore_ascii_case(needle.as_bytes()))
}

#[cfg(test)]
mod tests {
    use super::names;

    fn words(list: &[&str]) -> Vec<String> {
        list.iter().map(|w| w.to_string()).collect()
    }

    fn then() -> Vec<String> {
        words(&["invocation", "call", "execution"])
    }

    /// `names` with a made-up table's hook and run-ended words.
    fn named(value: &str, word: &str, then: &[String]) -> bool {
        let hooks = words(&["before", "after", "pre"]);
        let ended = words(&["end", "completed"]);
        names(value, word, then, (&hooks, &ended))
    }

    #[test]
    fn a_segment_that_is_the_word_names_the_kind() {
        for v in [
            "tool",
            "TOOL",
            "agentic.tool.invocation",
            "tool_call",
            "Tool-Execution",
            "acme_agent.tool.call",
            "tool_call_end",
            "acme.tool.execution.completed",
        ] {
            assert!(named(v, "tool", &then()), "{v}");
        }
    }

    #[test]
    fn values_that_only_mention_the_word_do_not() {
        for v in [
            "agentic.inference",
            "tool_choice",
            "toolkit.list",
            "toolkit",
            "tool.definition",
            "agentic.tool.invocation.result",
            "tools",
            "mcp.tool.list",
            "acme.tool",
            "AgentOpsSpanKindValues.TOOL",
            "before_tool_execution",
            "acme.after.tool.call",
            "pre_tool_use",
            "tool_call_start",
            "tool_call_end_x",
            "",
        ] {
            assert!(!named(v, "tool", &then()), "{v}");
        }
        // Without `then`, only the word itself.
        assert!(named("Tool", "tool", &[]));
        assert!(!named("agentic.tool.invocation", "tool", &[]));
        assert!(!named("acme.tool", "tool", &[]));
    }
}
