//! Results recorded on a sibling's span (docs/conventions.md, "Result
//! wrappers"): a writer that keeps one "current tool" slot per run can,
//! with calls run in parallel, attach one call's result message to another
//! call's span (Agenttic's LangGraph handler gave `execute_tool plan_trip`
//! the `ToolMessage` of `find_hotel`). The message itself still names the
//! tool and the call id it answers (a LangChain `ToolMessage`, as its
//! `repr()` or its dump), so a result whose record names another tool than
//! its span's call is paired with the call that tool names: the span
//! keeps its result and time (the message was written when the tool
//! ended) and takes that call's name and arguments, which the writer's
//! slot held. Only a whole re-pairing is taken: every misplaced record finds its own call of the
//! tool it names (by call id first when the span has one), or nothing
//! moves; a record named after its writer (an agent) names no call and
//! leaves every result where it was.

use std::sync::OnceLock;

use super::any_word::AnyWord;
use serde_json::Value;

use super::literal::keyword_fields;
use super::rules::builtin_list;
use super::source::tool_call_id;
use super::wrappers::TOOL_MESSAGE_KEYS;
use super::ToolCall;
use crate::assemble::{Trace, Val};

/// The keys a result record names its call id under (vocabulary
/// `result_record_id_keys`: LangChain's `tool_call_id`, Vercel's
/// `toolCallId`, Strands' `toolUseId`, ...).
fn id_keys() -> &'static [String] {
    builtin_list("result_record_id_keys")
}

/// The keys a result record names its tool under besides `name`
/// (vocabulary `result_record_name_keys`).
fn name_keys() -> &'static [String] {
    builtin_list("result_record_name_keys")
}

/// Whether text `t` holds one of [`id_keys`]: it may be a record naming a
/// call. One pass over the text for every key (a multi-literal search): a
/// search per key read most result texts, which hold none, once per key.
fn holds_id_key(t: &str) -> bool {
    static KEYS: OnceLock<AnyWord> = OnceLock::new();
    KEYS.get_or_init(|| AnyWord::new(id_keys()))
        .is_in(t.as_bytes())
}

/// What a result record says it answers: the tool and the call id.
#[derive(Debug, Clone, PartialEq)]
struct Named {
    tool: String,
    id: String,
}

/// Pairs each result whose record names another tool than its call with
/// the call of `calls` (tool spans of one trace) that the record names.
pub(crate) fn repair(trace: &Trace, calls: &mut [ToolCall]) {
    let _ = repair_all(trace, calls);
}

/// [`repair`], `None` where nothing moves.
fn repair_all(trace: &Trace, calls: &mut [ToolCall]) -> Option<()> {
    let spanned = |c: &&ToolCall| c.from.is_none() && c.result.is_some();
    // A record can only name another call of the trace: two tools at least.
    // Each tool once: a text is searched for every other tool's name.
    let mut names: Vec<&str> = calls
        .iter()
        .filter(spanned)
        .map(|c| c.name.as_str())
        .collect();
    names.sort_unstable();
    names.dedup();
    if names.len() < 2 {
        return None;
    }
    let positions = trace.positions();
    // (call index, what its result's record names) for records naming
    // another tool than their span's call.
    let misplaced: Vec<(usize, Named)> = calls
        .iter()
        .enumerate()
        .filter(|(_, c)| spanned(c))
        .filter_map(|(i, c)| {
            let s = &trace.spans[positions.get(c.span_id)?];
            let others = |t: &str| names.iter().any(|n| *n != c.name && t.contains(n));
            let named = span_record(s, others)?;
            (named.tool != c.name).then_some((i, named))
        })
        .collect();
    if misplaced.is_empty() {
        return None;
    }
    let own_id = |i: usize| {
        positions
            .get(calls[i].span_id)
            .and_then(|at| tool_call_id(&trace.spans[at]))
    };
    let mut target: Vec<Option<usize>> = vec![None; misplaced.len()];
    // Spans drawn in whose plain result (naming no call) is the one a
    // misplaced record's call left there.
    let mut drawn: Vec<usize> = Vec::new();
    for (k, (i, named)) in misplaced.iter().enumerate() {
        let free = |j: &usize| !target.contains(&Some(*j)) && calls[*j].name == named.tool;
        let candidates: Vec<usize> = misplaced.iter().map(|(j, _)| *j).filter(free).collect();
        let by_id = candidates
            .iter()
            .find(|&&j| own_id(j) == Some(named.id.as_str()));
        let unnamed = candidates.iter().find(|&&j| own_id(j).is_none());
        match by_id.or(unnamed) {
            Some(&j) => target[k] = Some(j),
            None => {
                let j = plain_partner(trace, calls, *i, &named.tool, &target)?;
                target[k] = Some(j);
                drawn.push(j);
            }
        }
    }
    let mut moves: Vec<(usize, usize)> = misplaced
        .iter()
        .zip(&target)
        .filter_map(|((i, _), t)| Some((*i, (*t)?)))
        .collect();
    moves.extend(drawn_moves(calls, &misplaced, &target, &drawn)?);
    // The record was written when its tool ended, at its span's time; the
    // name and arguments came from the slot a later start overwrote. So
    // each span keeps its time and result and takes the call its record
    // names.
    let asked: Vec<_> = moves
        .iter()
        .map(|&(_, j)| (calls[j].name.clone(), calls[j].args.clone()))
        .collect();
    for ((i, _), (name, args)) in moves.iter().zip(asked) {
        calls[*i].name = name;
        calls[*i].args = args;
    }
    Some(())
}

/// The one call of `tool` beside misplaced call `i` (same parent span)
/// whose span has no call id and whose result names no call: the span a
/// writer's slot gave the result `i`'s call left. Several such, or none:
/// `None`, and nothing moves.
fn plain_partner(
    trace: &Trace,
    calls: &[ToolCall],
    i: usize,
    tool: &str,
    target: &[Option<usize>],
) -> Option<usize> {
    let positions = trace.positions();
    let span = |j: usize| positions.get(calls[j].span_id).map(|at| &trace.spans[at]);
    let parent = span(i)?.parent;
    let mut found = calls.iter().enumerate().filter(|(j, c)| {
        c.from.is_none()
            && c.result.is_some()
            && c.name == tool
            && !target.contains(&Some(*j))
            && span(*j).is_some_and(|s| {
                s.parent == parent && tool_call_id(s).is_none() && !names_a_call(s)
            })
    });
    let (j, _) = found.next()?;
    found.next().is_none().then_some(j)
}

/// Which call each drawn span takes: the misplaced calls no record named
/// (their results went to the drawn spans). One each, and when several,
/// all the same call, else `None`.
fn drawn_moves(
    calls: &[ToolCall],
    misplaced: &[(usize, Named)],
    target: &[Option<usize>],
    drawn: &[usize],
) -> Option<Vec<(usize, usize)>> {
    let left: Vec<usize> = misplaced
        .iter()
        .map(|(i, _)| *i)
        .filter(|i| !target.contains(&Some(*i)))
        .collect();
    if left.len() != drawn.len() {
        return None;
    }
    let same =
        |a: usize, b: usize| calls[a].name == calls[b].name && calls[a].args == calls[b].args;
    if !left.iter().all(|&j| same(j, left[0])) && left.len() > 1 {
        return None;
    }
    Some(drawn.iter().copied().zip(left).collect())
}

/// Whether any of span `s`'s texts holds a call id key: a result record
/// naming some call, which a plain result does not.
fn names_a_call(s: &crate::assemble::SpanRecord) -> bool {
    texts(s).any(holds_id_key)
}

/// Span `s`'s string attribute and event attribute values.
fn texts(s: &crate::assemble::SpanRecord) -> impl Iterator<Item = &str> {
    let attrs = s.span.attributes().filter_map(|(_, v)| v);
    let events = s.span.events.iter().flat_map(|e| {
        e.attributes
            .iter()
            .filter_map(|kv| kv.value.as_ref().map(Val::of))
    });
    attrs.chain(events).filter_map(Val::as_str)
}

/// The one result record among span `s`'s attribute and event texts that
/// names its tool and call id, if exactly one does; only texts that
/// `names_other` (a text naming another call's tool) are read.
fn span_record(
    s: &crate::assemble::SpanRecord,
    names_other: impl Fn(&str) -> bool,
) -> Option<Named> {
    let mut found = texts(s)
        .filter(|t| holds_id_key(t) && names_other(t))
        .filter_map(record_names);
    let first = found.next()?;
    found.all(|n| n == first).then_some(first)
}

/// The tool and call id a result record names: a LangChain `ToolMessage`'s
/// `repr()` (`content='...' name='t' tool_call_id='c'`) or dump (a JSON
/// object), or another framework's record of the same family (its value
/// under `content` or `result`, its call id under one of
/// `result_record_id_keys`, its tool under `name` or one of
/// `result_record_name_keys`, no key outside those and
/// `result_record_other_keys`), either possibly inside a JSON string.
fn record_names(text: &str) -> Option<Named> {
    let text = text.trim();
    let fields: Vec<(String, Value)> = match serde_json::from_str::<Value>(text) {
        Ok(Value::String(inner)) => return record_names(&inner),
        Ok(Value::Object(o)) => o.into_iter().collect(),
        Ok(_) => return None,
        Err(_) => keyword_fields(text)?,
    };
    let among = |list: &[String], k: &str| list.iter().any(|x| x == k);
    let known = |k: &str| {
        TOOL_MESSAGE_KEYS.contains(&k)
            || k == "result"
            || among(id_keys(), k)
            || among(name_keys(), k)
            || among(builtin_list("result_record_other_keys"), k)
    };
    let message = fields.iter().any(|(k, _)| k == "content" || k == "result")
        && fields.iter().all(|(k, _)| known(k));
    if !message {
        return None;
    }
    let field = |key: &str| {
        fields
            .iter()
            .find(|(k, _)| k == key)
            .and_then(|(_, v)| v.as_str())
            .map(str::trim)
            .filter(|v| !v.is_empty())
            .map(str::to_string)
    };
    let tool = field("name").or_else(|| name_keys().iter().find_map(|k| field(k)))?;
    let id = id_keys().iter().find_map(|k| field(k))?;
    Some(Named { tool, id })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_message_repr_names_its_tool_and_call() {
        let named = record_names(r#""content='{\"a\": 1}' name='lookup' tool_call_id='c-7'""#);
        assert_eq!(
            named,
            Some(Named {
                tool: "lookup".into(),
                id: "c-7".into()
            })
        );
    }

    #[test]
    fn a_message_dump_names_its_tool_and_call() {
        let named = record_names(
            r#"{"content": "x", "type": "tool", "name": "fetch_row", "tool_call_id": "r1"}"#,
        );
        assert_eq!(named.map(|n| n.tool), Some("fetch_row".to_string()));
    }

    #[test]
    fn another_family_s_record_names_its_tool_and_call() {
        // A made-up vendor's record: `result`, `toolName`, `callId`.
        let named = record_names(
            r#"{"result": {"rows": 2}, "toolName": "count_rows", "callId": "q-9", "status": "ok"}"#,
        );
        assert_eq!(
            named,
            Some(Named {
                tool: "count_rows".into(),
                id: "q-9".into()
            })
        );
    }

    #[test]
    fn other_records_name_nothing() {
        assert_eq!(
            record_names(r#"{"content": "x", "tool_call_id": "r1"}"#),
            None
        );
        assert_eq!(
            record_names(r#"{"content": "x", "name": "t", "tool_call_id": "r1", "extra": 1}"#),
            None
        );
        assert_eq!(record_names("tool_call_id"), None);
    }
}

#[cfg(test)]
mod trace_tests {
    use serde_json::{json, Value};

    use crate::extract::test_support::{event, span_of};

    /// A made-up vendor's tool span of `tool` whose result event holds the
    /// `repr()` of a message answering `answers` (tool, call id, content).
    fn tool_span(
        id: u8,
        tool: &str,
        args: &str,
        answers: (&str, &str, &str),
    ) -> crate::assemble::SpanRecord {
        let kv = |k: &str, v: &str| opentelemetry_proto::tonic::common::v1::KeyValue {
            key: k.into(),
            value: Some(opentelemetry_proto::tonic::common::v1::AnyValue {
                value: Some(
                    opentelemetry_proto::tonic::common::v1::any_value::Value::StringValue(v.into()),
                ),
            }),
            ..Default::default()
        };
        let mut s = span_of(
            id,
            Some(1),
            &format!("execute_tool {tool}"),
            (u64::from(id) * 10, u64::from(id) * 10 + 5),
            vec![
                kv("gen_ai.operation.name", "execute_tool"),
                kv("gen_ai.tool.name", tool),
            ],
        );
        let (named, call, content) = answers;
        let repr = format!("content='{content}' name='{named}' tool_call_id='{call}'");
        let mut events = vec![
            event("gen_ai.tool.call", "arguments", args),
            event(
                "gen_ai.tool.message",
                "gen_ai.tool.message.content",
                &Value::String(repr).to_string(),
            ),
        ];
        s.span.events.append(&mut events);
        s
    }

    /// A tool span of `tool` whose result is plain text naming no call.
    fn plain_span(id: u8, tool: &str, args: &str, text: &str) -> crate::assemble::SpanRecord {
        let mut s = tool_span(id, tool, args, ("x", "x", "x"));
        s.span.events.truncate(s.span.events.len() - 1);
        s.span.events.push(event(
            "gen_ai.tool.message",
            "gen_ai.tool.message.content",
            text,
        ));
        s
    }

    fn results(spans: Vec<crate::assemble::SpanRecord>) -> Vec<(String, Value)> {
        crate::extract::test_support::calls_of(9, spans)
            .into_iter()
            .map(|(name, _, result, _)| (name, result))
            .collect()
    }

    #[test]
    fn spans_holding_each_other_s_results_take_the_calls_they_name() {
        let spans = vec![
            span_of(1, None, "run", (0, 100), vec![]),
            tool_span(2, "lookup_sku", "{'sku': 'a'}", ("weigh_box", "k2", "7")),
            tool_span(3, "weigh_box", "{'box': 1}", ("lookup_sku", "k1", "found")),
            tool_span(
                4,
                "lookup_sku",
                "{'sku': 'b'}",
                ("lookup_sku", "k3", "none"),
            ),
        ];
        assert_eq!(
            results(spans),
            vec![
                ("weigh_box".to_string(), json!(7)),
                ("lookup_sku".to_string(), json!("found")),
                ("lookup_sku".to_string(), json!("none")),
            ]
        );
    }

    #[test]
    fn a_record_naming_no_call_of_the_trace_moves_nothing() {
        // Named after its writer (an agent), not a tool: stays.
        let spans = vec![
            span_of(1, None, "run", (0, 100), vec![]),
            tool_span(2, "lookup_sku", "{'sku': 'a'}", ("clerk", "k1", "found")),
            tool_span(3, "weigh_box", "{'box': 1}", ("weigh_box", "k2", "7")),
        ];
        assert_eq!(
            results(spans),
            vec![
                ("lookup_sku".to_string(), json!("found")),
                ("weigh_box".to_string(), json!(7)),
            ]
        );
    }

    #[test]
    fn a_plain_result_of_the_named_tool_takes_the_call_no_record_named() {
        // weigh_box's span holds lookup_sku's plain failure; lookup_sku's
        // span holds weigh_box's record; a later retry is paired right.
        let spans = vec![
            span_of(1, None, "run", (0, 100), vec![]),
            plain_span(2, "weigh_box", "{'box': 1}", "error: scale offline"),
            tool_span(3, "lookup_sku", "{'sku': 'a'}", ("weigh_box", "k2", "7")),
            tool_span(
                4,
                "lookup_sku",
                "{'sku': 'a'}",
                ("lookup_sku", "k1", "found"),
            ),
        ];
        assert_eq!(
            crate::extract::test_support::calls_of(9, spans)
                .into_iter()
                .map(|(name, args, result, _)| (name, args, result))
                .collect::<Vec<_>>(),
            vec![
                (
                    "lookup_sku".to_string(),
                    json!({"sku": "a"}),
                    json!("error: scale offline")
                ),
                ("weigh_box".to_string(), json!({"box": 1}), json!(7)),
                (
                    "lookup_sku".to_string(),
                    json!({"sku": "a"}),
                    json!("found")
                ),
            ]
        );
    }

    #[test]
    fn two_plain_results_of_the_named_tool_move_nothing() {
        let spans = vec![
            span_of(1, None, "run", (0, 100), vec![]),
            plain_span(2, "weigh_box", "{'box': 1}", "error: scale offline"),
            tool_span(3, "lookup_sku", "{'sku': 'a'}", ("weigh_box", "k2", "7")),
            plain_span(4, "weigh_box", "{'box': 2}", "9"),
        ];
        assert_eq!(
            results(spans),
            vec![
                ("weigh_box".to_string(), json!("error: scale offline")),
                ("lookup_sku".to_string(), json!(7)),
                ("weigh_box".to_string(), json!(9)),
            ]
        );
    }

    #[test]
    fn results_swapped_with_no_record_naming_a_call_stay() {
        let spans = vec![
            span_of(1, None, "run", (0, 100), vec![]),
            plain_span(2, "weigh_box", "{'box': 1}", "found"),
            plain_span(3, "lookup_sku", "{'sku': 'a'}", "7"),
        ];
        assert_eq!(
            results(spans),
            vec![
                ("weigh_box".to_string(), json!("found")),
                ("lookup_sku".to_string(), json!(7)),
            ]
        );
    }
}
