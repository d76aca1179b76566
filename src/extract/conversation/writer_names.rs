//! Which later result answers a call asked for under an id
//! (docs/conventions.md, "The conversation witness"): the id, and the tool
//! when the result names one.
//!
//! Ids are unique within one conversation only (two agents' conversations
//! in one trace may reuse one), so a result that names another tool is
//! first taken for another conversation's. But some frameworks name every
//! message after its writer, not the tool: ControlFlow sets each LangChain
//! message's `name` to the agent's (`"booker"`), its `ToolMessage`s among
//! them. A result under the call's id whose name is no tool the trace's
//! model outputs asked for is that writer's name: it answers the call when
//! no result under the id names the call's own tool (or none). A name that
//! is another asked tool's still keeps the result from the call.

use std::cell::OnceCell;

use super::later;
use super::{Answer, AskedAt, Request};
use crate::assemble::IdSet;

/// The result of `list` (the requests' results under call `at`'s id, in
/// span order, with their request's position) that answers `at`: one
/// recorded by a request after the asking span starts (or one whose
/// history repeats the call), a result recorded under the id before one
/// given it by order, and one naming the call's tool (or none) before one
/// naming its writer. `asked` is every call the trace's outputs asked for.
pub(super) fn answer_by_id<'r>(
    list: &[(usize, &'r Answer)],
    at: &AskedAt,
    requests: &[Request],
    names: &AskedNames<'_>,
    start: impl Fn(usize) -> u64,
) -> Option<(usize, &'r Answer)> {
    let a = &at.asked;
    let fits = |strict: bool, (i, ans): &(usize, &Answer)| {
        (*i != at.span || later::carries(&requests[*i], a))
            && start(*i) >= start(at.span)
            && name_fits(ans.name.as_deref(), &a.name, strict, names)
    };
    let pick = |strict: bool| {
        let recorded = list
            .iter()
            .filter(|x| fits(strict, x))
            .find(|(i, _)| !requests[*i].by_order);
        recorded.or_else(|| list.iter().find(|x| fits(strict, x)))
    };
    pick(true).or_else(|| pick(false)).copied()
}

/// Whether a result naming `named` may answer a call of tool `tool`: no
/// name or the tool's; unless `strict`, also a name no asked call has (its
/// writer's).
fn name_fits(named: Option<&str>, tool: &str, strict: bool, names: &AskedNames<'_>) -> bool {
    match named {
        None => true,
        Some(n) if n == tool => true,
        Some(n) => !strict && !names.contains(n),
    }
}

/// The tools the model outputs of a trace asked for, a set built when
/// first asked (each call's answers may look: asks times asks otherwise).
pub(super) struct AskedNames<'a> {
    asked: &'a [AskedAt],
    set: OnceCell<IdSet<&'a str>>,
}

impl<'a> AskedNames<'a> {
    pub(super) fn of(asked: &'a [AskedAt]) -> Self {
        AskedNames {
            asked,
            set: OnceCell::new(),
        }
    }

    fn contains(&self, name: &str) -> bool {
        let asked = self.asked;
        self.set
            .get_or_init(|| asked.iter().map(|at| at.asked.name.as_str()).collect())
            .contains(name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn asked_at(span: usize, id: &str, name: &str) -> AskedAt {
        AskedAt {
            span,
            asked: crate::extract::requested::Asked {
                id: Some(id.into()),
                name: name.into(),
                args: json!({}),
            },
            form: "test",
        }
    }

    fn answer(id: &str, name: Option<&str>, content: &str) -> Answer {
        Answer {
            id: Some(id.into()),
            name: name.map(str::to_owned),
            content: Some(json!(content)),
            ..Answer::default()
        }
    }

    #[test]
    fn a_result_named_after_its_writer_answers_its_id() {
        // Acme's agent `clerk` names every message it writes after itself.
        let asked = [asked_at(0, "k-1", "acme_lookup")];
        let requests = [Request::default(), Request::default()];
        let clerk = answer("k-1", Some("clerk"), "found");
        let list = [(1, &clerk)];
        let got = answer_by_id(&list, &asked[0], &requests, &AskedNames::of(&asked), |i| {
            i as u64
        });
        assert_eq!(
            got.map(|(i, a)| (i, a.content.clone())),
            Some((1, Some(json!("found"))))
        );
    }

    #[test]
    fn a_result_naming_another_asked_tool_does_not_answer_a_reused_id() {
        // Two conversations reuse `k-1`: one asks for acme_lookup, the
        // other for acme_store; only acme_store's result was recorded.
        let asked = [
            asked_at(0, "k-1", "acme_lookup"),
            asked_at(1, "k-1", "acme_store"),
        ];
        let requests = [Request::default(), Request::default(), Request::default()];
        let stored = answer("k-1", Some("acme_store"), "stored");
        let list = [(2, &stored)];
        assert!(
            answer_by_id(&list, &asked[0], &requests, &AskedNames::of(&asked), |i| i
                as u64)
            .is_none()
        );
        let got = answer_by_id(&list, &asked[1], &requests, &AskedNames::of(&asked), |i| {
            i as u64
        });
        assert_eq!(got.map(|(i, _)| i), Some(2));
    }

    #[test]
    fn the_tool_s_own_name_wins_over_a_writer_s_under_one_id() {
        let asked = [asked_at(0, "k-1", "acme_lookup")];
        let requests = [Request::default(), Request::default(), Request::default()];
        let clerk = answer("k-1", Some("clerk"), "from the writer");
        let own = answer("k-1", Some("acme_lookup"), "found");
        let list = [(1, &clerk), (2, &own)];
        let got = answer_by_id(&list, &asked[0], &requests, &AskedNames::of(&asked), |i| {
            i as u64
        });
        assert_eq!(got.map(|(i, _)| i), Some(2));
    }
}
