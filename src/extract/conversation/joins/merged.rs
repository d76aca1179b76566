//! A turn's responses recorded together, the record that an ask no tool
//! span shows ran (docs/conventions.md, "The conversation witness",
//! "Responses recorded together").
//!
//! Google ADK writes, beside each tool's `execute_tool <name>` span, one
//! `execute_tool (merged)` span for a turn of parallel calls: no call of its
//! own (`gen_ai.tool.name = (merged tools)`, which no rule reads), but the
//! event answering the model, every call's `functionResponse` under its call
//! id, in `gcp.vertex.agent.tool_response`. A tool's own span may be lost:
//! Langfuse JS's export filter drops spans without a GenAI key, and ADK's
//! span of a tool that threw holds none. An ask no tool span shows is then
//! rebuilt from the conversation, as for a toolless run, when such a span,
//! starting after the asking span did, answers its call id. The marks are
//! data: `merged_tool_names` (the tool name such a span carries) and
//! `merged_response_keys` (where it keeps the responses).

use std::sync::OnceLock;

use crate::assemble::Trace;
use crate::extract::conversation::AskedAt;
use crate::extract::rules::builtin_list;

/// The key naming a span's tool, where a merged span names its own.
const TOOL_NAME_KEY: &str = "gen_ai.tool.name";

/// Whether a merged span of `trace` answers the call id `at` asked for
/// (see the module's doc).
pub(super) fn answered(trace: &Trace, at: &AskedAt) -> bool {
    let Some(id) = at.asked.id.as_deref().filter(|id| !id.is_empty()) else {
        return false;
    };
    static MARKS: OnceLock<(&'static [String], &'static [String])> = OnceLock::new();
    let (names, keys) = MARKS.get_or_init(|| {
        (
            builtin_list("merged_tool_names"),
            builtin_list("merged_response_keys"),
        )
    });
    let Some(asker) = trace.spans.get(at.span) else {
        return false;
    };
    // The id as JSON writes it, quoted, so one id is not part of another.
    let quoted = format!("\"{id}\"");
    let finder = memchr::memmem::Finder::new(quoted.as_bytes());
    trace.spans.iter().any(|s| {
        let merged = s
            .attr_str(TOOL_NAME_KEY)
            .is_some_and(|n| names.iter().any(|m| m == n));
        merged
            && s.span.start_time_unix_nano >= asker.span.start_time_unix_nano
            && keys.iter().any(|k| {
                s.attr_str(k)
                    .is_some_and(|text| finder.find(text.as_bytes()).is_some())
            })
    })
}
