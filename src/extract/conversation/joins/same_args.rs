//! The join by the tool's name, told apart by arguments: of several asks
//! of one tool left unjoined, a tool span joins the one whose arguments are
//! its own (docs/conventions.md, "The conversation witness").
//!
//! Without call ids (Gemini's `functionCall` parts, as Google ADK records
//! them on its `call_llm` spans), a tool span joins an ask of its tool in
//! order. When an earlier call of the tool left no span that names it (it
//! threw, and its span stayed blank: `blank_spans`), the first ask in order
//! is that call's, not the span's: the span's arguments say which ask it
//! ran. With one ask of the tool left, or a span without arguments, or no
//! ask with the span's arguments, the order decides as before.

use super::{AskedAt, ToolCall};
use serde_json::Value;

/// Of the asks not `used` that `named` says are of `call`'s tool, the
/// first whose arguments are the call's, else the first.
pub(super) fn pick(
    asked: &[AskedAt],
    used: &[bool],
    call: &ToolCall,
    named: impl Fn(usize) -> bool,
) -> Option<usize> {
    let mut open = (0..asked.len()).filter(|&k| !used[k] && named(k));
    let first = open.next()?;
    // One ask of the tool left (most joins): no arguments compared.
    if open.next().is_none() {
        return Some(first);
    }
    let Some(args) = call.args.parsed() else {
        return Some(first);
    };
    let same = |k: usize| ask_args(&asked[k].asked.args).is_some_and(|a| *a == *args);
    (0..asked.len())
        .find(|&k| !used[k] && named(k) && same(k))
        .or(Some(first))
}

/// An ask's arguments as a value: JSON text (OpenAI's `arguments`) parsed.
fn ask_args(v: &Value) -> Option<std::borrow::Cow<'_, Value>> {
    match v {
        Value::Null => None,
        Value::String(t) => serde_json::from_str(t).ok().map(std::borrow::Cow::Owned),
        other => Some(std::borrow::Cow::Borrowed(other)),
    }
}
