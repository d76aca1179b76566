//! A sub-agent the model called as a tool, recorded as an agent run and no
//! tool span (docs/conventions.md, "The conversation witness", "A sub-agent
//! run as the call").
//!
//! A framework may run a managed agent for the model's call of a tool named
//! after it without a tool span: smolagents' manager asks for `booker({"task":
//! ...})` and OpenInference writes only the sub-agent's run, the AGENT span
//! `booker.run`, between that ask and the request carrying its answer. That
//! run shows the call ran, as a tool span would: the ask is rebuilt from the
//! conversation (name and arguments from the model, the result from the next
//! request) instead of being listed as a call no span shows. The run must be
//! named after the tool (`booker`, or the tool's name and one word after a
//! `.`, `:` or a space: `booker.run`) and start once the asking output has
//! ended, so the asker's own run, or a run before the ask, never stands for
//! it. Without a later request carrying its result the call stays listed.

use std::cell::OnceCell;
use std::collections::HashMap;

use super::AskedAt;
use crate::assemble::Trace;
use crate::extract::AgentRun;

/// A trace's agent runs by the tool names they may be named after, each
/// with the latest start among them: found once, so that many asks and
/// many runs in one trace cost one pass each.
pub(super) struct Runs<'a> {
    runs: &'a [AgentRun],
    latest: OnceCell<HashMap<&'a str, u64>>,
}

impl<'a> Runs<'a> {
    pub(super) fn new(runs: &'a [AgentRun]) -> Self {
        Runs {
            runs,
            latest: OnceCell::new(),
        }
    }

    /// Whether a run named after the tool `at` asked for started once the
    /// span that asked had ended (see the module's doc).
    pub(super) fn ran(&self, trace: &Trace, at: &AskedAt) -> bool {
        let Some(asker) = trace.spans.get(at.span) else {
            return false;
        };
        let latest = self.latest.get_or_init(|| {
            let mut latest: HashMap<&str, u64> = HashMap::new();
            for r in self.runs {
                for tool in tools_named(&r.name) {
                    let at = latest.entry(tool).or_insert(r.start_time_unix_nano);
                    *at = (*at).max(r.start_time_unix_nano);
                }
            }
            latest
        });
        latest
            .get(at.asked.name.as_str())
            .is_some_and(|&start| start >= asker.span.end_time_unix_nano)
    }
}

/// The tool names run name `run` may be named after: itself, and what
/// comes before its last `.`, `:` or space when one word follows
/// (`booker.run`, `booker:invoke`, `booker run`: `booker`).
fn tools_named(run: &str) -> impl Iterator<Item = &str> {
    let whole = (!run.is_empty()).then_some(run);
    let before_word = run.rfind(['.', ':', ' ']).and_then(|i| {
        let (tool, word) = (&run[..i], &run[i + 1..]);
        let is_word =
            !word.is_empty() && word.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
        (!tool.is_empty() && is_word).then_some(tool)
    });
    whole.into_iter().chain(before_word)
}

#[cfg(test)]
mod tests {
    use serde_json::{json, Value};

    use super::tools_named;
    use crate::extract::test_support::{calls_in, genai_asks, genai_result, genai_user};
    use crate::extract::tests::sp;

    /// A made-up framework's trace: a manager run whose model asks for
    /// `scout` (a sub-agent) and then for `log_visit` (a tool with a tool
    /// span); the sub-agent's run `scout.invoke` starts at `run_start`.
    fn manager(run_start: u64) -> Vec<(String, Option<Value>, Option<Value>, String)> {
        let chat = |id: u8, when: (u64, u64), input: Value, output: Value| {
            let (i, o) = (input.to_string(), output.to_string());
            sp(
                id,
                Some(1),
                when,
                "chat heron-1",
                &[
                    ("gen_ai.operation.name", "chat"),
                    ("gen_ai.input.messages", &i),
                    ("gen_ai.output.messages", &o),
                ],
            )
        };
        let ask_scout = genai_asks(&[("c1", "scout", json!({"area": "dunes"}))]);
        let ask_log = genai_asks(&[("c2", "log_visit", json!({"day": 3}))]);
        let report = genai_result("c1", "two dunes mapped");
        calls_in(vec![
            sp(
                1,
                None,
                (0, 100),
                "invoke_agent warden",
                &[
                    ("gen_ai.operation.name", "invoke_agent"),
                    ("gen_ai.agent.name", "warden"),
                ],
            ),
            chat(2, (10, 20), json!([genai_user()]), json!([ask_scout])),
            sp(
                3,
                Some(1),
                (run_start, run_start + 20),
                "scout.invoke",
                &[
                    ("heron.span.kind", "agent"),
                    ("openinference.span.kind", "AGENT"),
                ],
            ),
            chat(
                4,
                (50, 60),
                json!([genai_user(), ask_scout, report]),
                json!([ask_log]),
            ),
            sp(
                5,
                Some(1),
                (61, 62),
                "execute_tool log_visit",
                &[
                    ("gen_ai.operation.name", "execute_tool"),
                    ("gen_ai.tool.name", "log_visit"),
                    ("gen_ai.tool.call.arguments", r#"{"day": 3}"#),
                    ("gen_ai.tool.call.result", "logged"),
                ],
            ),
        ])
    }

    #[test]
    fn a_run_named_after_an_asked_tool_after_the_ask_is_that_call() {
        let got = manager(25);
        let names: Vec<&str> = got.iter().map(|c| c.0.as_str()).collect();
        assert_eq!(names, ["scout", "log_visit"], "{got:?}");
        assert_eq!(got[0].1, Some(json!({"area": "dunes"})));
        assert_eq!(got[0].2, Some(json!("two dunes mapped")));
        // A run that began before the model asked stands for no call.
        let got = manager(5);
        let names: Vec<&str> = got.iter().map(|c| c.0.as_str()).collect();
        assert_eq!(names, ["log_visit"], "{got:?}");
    }

    fn named_after(run: &str, tool: &str) -> bool {
        tools_named(run).any(|t| t == tool)
    }

    #[test]
    fn a_run_is_named_after_a_tool_alone_or_with_one_word() {
        assert!(named_after("booker", "booker"));
        assert!(named_after("booker.run", "booker"));
        assert!(named_after("booker:invoke", "booker"));
        assert!(named_after("booker run", "booker"));
        assert!(!named_after("booker_two.run", "booker"));
        assert!(!named_after("bookers", "booker"));
        assert!(!named_after("booker.run.step", "booker"));
        assert!(!named_after("booker.", "booker"));
        assert!(!named_after("", ""));
        assert!(!named_after("x.run", ""));
    }
}
