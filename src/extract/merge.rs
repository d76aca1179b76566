//! One call however many spans record it: a framework's tool span with an
//! MCP client's tool span inside it, an instrumentation's span around the
//! framework's own, found by the same or by different conventions
//! (docs/conventions.md, "One call, several spans").
//!
//! A call directly inside another call (no agent run or other call between
//! them) is the same call when both carry a tool-call id and the ids are
//! equal, or, without two ids, when the names are equal and the arguments
//! are equal or one side has none. With no arguments on either side, the
//! conventions must differ: a tool that calls itself, recorded by one
//! convention with nothing to tell the calls apart, keeps every call (as
//! does one that calls itself with other arguments).

use std::collections::{HashMap, HashSet};

use serde_json::Value;

use super::{Analysis, CallArgs, CallStatus, ToolCall};
use crate::assemble::{SpanId, SpanPositions, Trace};

/// Each call's index in `calls`, by the span it was read from.
pub(crate) fn by_span(calls: &[ToolCall]) -> HashMap<SpanId, usize> {
    calls
        .iter()
        .enumerate()
        .map(|(i, c)| (c.span_id, i))
        .collect()
}

/// Merges the calls of `out` that record one call (see the module
/// comment): the merged call keeps the best arguments (with the name,
/// convention and span of the call that had them), the first result and
/// error found from the innermost out, the innermost timing, and the
/// outermost nesting (depth, agent). What was below a merged record counts
/// one enclosing call fewer per record and sits within the merged call.
/// Linear in the number of calls and runs.
pub(crate) fn one_call_per_call(trace: &Trace, out: &mut Analysis) {
    let calls = &out.calls;
    let at = by_span(calls);
    if !calls
        .iter()
        .any(|c| c.within.is_some_and(|w| at.contains_key(&w)))
    {
        return;
    }
    let spans = trace.positions();
    let id_of = |c: &ToolCall| call_id(trace, &spans, c.span_id);
    // The call directly around each call, when both record one call.
    let same: Vec<Option<usize>> = calls
        .iter()
        .map(|c| {
            let o = *at.get(&c.within?)?;
            same_call(&calls[o], c, id_of).then_some(o)
        })
        .collect();
    if same.iter().all(Option::is_none) {
        return;
    }
    // Each group's outermost call, found with path halving: chains of
    // records are walked once however deep.
    let mut root: Vec<usize> = (0..calls.len()).map(|i| same[i].unwrap_or(i)).collect();
    for i in 0..root.len() {
        let mut r = i;
        while root[r] != r {
            root[r] = root[root[r]];
            r = root[r];
        }
        root[i] = r;
    }
    let mut groups: HashMap<usize, Vec<usize>> = HashMap::new();
    for (i, &r) in root.iter().enumerate() {
        if r != i {
            groups.entry(r).or_insert_with(|| vec![r]).push(i);
        }
    }
    let records: HashSet<SpanId> = (0..calls.len())
        .filter(|&i| same[i].is_some())
        .map(|i| calls[i].span_id)
        .collect();
    let mut kept: HashMap<SpanId, SpanId> = HashMap::new();
    let mut merged: HashMap<usize, ToolCall> = HashMap::new();
    for (r, group) in &groups {
        let mut one = merge(calls, group);
        super::tool_side::keep_tool_result(trace, &spans, calls, group, &mut one);
        kept.extend(group.iter().map(|&i| (calls[i].span_id, one.span_id)));
        merged.insert(*r, one);
    }
    renest(out, &records, &kept);
    for (r, one) in merged.iter_mut() {
        // The outermost's nesting, as just corrected.
        one.depth = out.calls[*r].depth;
        one.within = out.calls[*r].within;
    }
    keep_groups(&mut out.calls, &root, merged);
}

/// Keeps of `calls` the first member of each group (`root[i] == i`), each
/// replaced by its group's merged call when it has one.
pub(crate) fn keep_groups(
    calls: &mut Vec<ToolCall>,
    root: &[usize],
    mut merged: HashMap<usize, ToolCall>,
) {
    *calls = std::mem::take(calls)
        .into_iter()
        .enumerate()
        .filter(|&(i, _)| root[i] == i)
        .map(|(i, c)| merged.remove(&i).unwrap_or(c))
        .collect();
}

/// Takes one from the depth of every call and run per merged-away
/// `records` call around it, and points what was within a merged call to
/// the call kept (`kept`).
fn renest(out: &mut Analysis, records: &HashSet<SpanId>, kept: &HashMap<SpanId, SpanId>) {
    let within: HashMap<SpanId, Option<SpanId>> = out
        .calls
        .iter()
        .map(|c| (c.span_id, c.within))
        .chain(out.runs.iter().map(|r| (r.span_id, r.within)))
        .collect();
    // Records around each call or run, memoized, walked without recursion
    // (chains run 50,000 deep): up to what is known, then back down, each
    // one its parent's count plus one when the parent is a record.
    let mut extra: HashMap<SpanId, usize> = HashMap::new();
    let mut path: Vec<SpanId> = Vec::new();
    let mut count = |id: SpanId| -> usize {
        path.clear();
        let mut at = Some(id);
        while let Some(x) = at.filter(|x| within.contains_key(x) && !extra.contains_key(x)) {
            path.push(x);
            at = within.get(&x).copied().flatten();
        }
        for &x in path.iter().rev() {
            let n = within
                .get(&x)
                .copied()
                .flatten()
                .and_then(|w| Some(extra.get(&w)? + usize::from(records.contains(&w))))
                .unwrap_or(0);
            extra.insert(x, n);
        }
        extra.get(&id).copied().unwrap_or(0)
    };
    for c in &mut out.calls {
        c.depth -= count(c.span_id).min(c.depth);
        c.within = c.within.map(|w| kept.get(&w).copied().unwrap_or(w));
    }
    for r in &mut out.runs {
        r.depth -= count(r.span_id).min(r.depth);
        r.within = r.within.map(|w| kept.get(&w).copied().unwrap_or(w));
    }
}

fn call_id<'t>(trace: &'t Trace, spans: &SpanPositions<'_>, span: SpanId) -> Option<&'t str> {
    super::source::tool_call_id(&trace.spans[spans.get(span)?])
}

fn same_call<'t>(
    outer: &ToolCall,
    inner: &ToolCall,
    id_of: impl Fn(&ToolCall) -> Option<&'t str>,
) -> bool {
    if let (Some(a), Some(b)) = (id_of(outer), id_of(inner)) {
        return a == b;
    }
    if outer.name != inner.name {
        return false;
    }
    match (outer.args.parsed(), inner.args.parsed()) {
        (None, None) => outer.convention != inner.convention,
        (Some(a), Some(b)) if text_naming_keys(&a, &b) || text_naming_keys(&b, &a) => true,
        _ => args_agree(&outer.args, &inner.args),
    }
}

/// Whether `text` is arguments left as text (a `repr()` no reader could
/// parse) that names, quoted, every key of the object `object`: the record
/// of the same arguments with more beside them. Monocle records LangChain's
/// MCP tool span's input as the `repr()` of the keyword arguments with
/// LangGraph's injected `runtime` (`ToolRuntime(...)`), the MCP client
/// span inside it the arguments as JSON. Only for a call directly inside
/// another of its tool (`same_call`).
fn text_naming_keys(text: &Value, object: &Value) -> bool {
    let (Value::String(t), Value::Object(o)) = (text, object) else {
        return false;
    };
    let quoted = |k: &str| t.contains(&format!("'{k}'")) || t.contains(&format!("\"{k}\""));
    t.trim_start().starts_with('{') && o.keys().all(|k| quoted(k))
}

/// Whether two records' arguments are equal, or one side has none.
pub(crate) fn args_agree(a: &CallArgs, b: &CallArgs) -> bool {
    match (a.parsed(), b.parsed()) {
        (Some(a), Some(b)) => same_args(&a, &b),
        _ => true,
    }
}

/// Whether two records of a call give the same arguments: equal values, or
/// one record writes an object of one field as that field's bare value
/// (LangChain.js under OpenInference records `{"town": "Lisbon"}` as
/// `Lisbon`). A string stands for a number or boolean written as text, and
/// for the object or list whose JSON text it holds.
pub(crate) fn same_args(a: &Value, b: &Value) -> bool {
    crate::value::json_eq(a, b)
        || bare_field(a, b)
        || bare_field(b, a)
        || json_text_of(a, b)
        || json_text_of(b, a)
}

/// Whether `text` is a string holding the JSON text of the object or list
/// `whole`: a writer that encoded the arguments' JSON text once more
/// (Laminar's span input around the OpenAI Agents SDK's function span).
fn json_text_of(text: &Value, whole: &Value) -> bool {
    let (Value::String(t), Value::Object(_) | Value::Array(_)) = (text, whole) else {
        return false;
    };
    matches!(t.trim_start().as_bytes().first(), Some(b'{' | b'['))
        && serde_json::from_str::<Value>(t).is_ok_and(|v| crate::value::json_eq(&v, whole))
}

/// Whether `bare`, a scalar, is the one field of the object `whole`.
pub(crate) fn bare_field(bare: &Value, whole: &Value) -> bool {
    let Value::Object(o) = whole else {
        return false;
    };
    let (1, Some(field)) = (o.len(), o.values().next()) else {
        return false;
    };
    match (bare, field) {
        (Value::String(s), Value::Number(_) | Value::Bool(_)) => {
            serde_json::from_str::<Value>(s).is_ok_and(|v| crate::value::json_eq(&v, field))
        }
        // A text of digits recorded bare and read back as a number
        // (OpenInference's LangChain.js tool span under Laminar: the input
        // `30012004455` for `{"barcode": "30012004455"}`).
        (Value::Number(n), Value::String(s)) => n.to_string() == *s,
        (Value::String(_) | Value::Number(_) | Value::Bool(_), _) => {
            crate::value::json_eq(bare, field)
        }
        _ => false,
    }
}

/// How complete arguments are: none, a bare string, positional or other
/// values, then named arguments by their number.
fn completeness(args: &CallArgs) -> (u8, usize) {
    match args.parsed().as_deref() {
        None => (0, 0),
        Some(Value::String(_)) => (1, 0),
        Some(Value::Object(o)) if !o.contains_key("args") => (3, o.len()),
        Some(_) => (2, 0),
    }
}

/// One call from `group` (outermost first, then the others in span order).
pub(crate) fn merge(calls: &[ToolCall], group: &[usize]) -> ToolCall {
    let outermost = &calls[group[0]];
    // The innermost: the deepest, the latest-starting of equals.
    let innermost = group
        .iter()
        .map(|&i| &calls[i])
        .max_by_key(|c| (c.depth, c.start_time_unix_nano))
        .unwrap_or(outermost);
    // The best arguments; of equals, the outer one (found first).
    let best = group
        .iter()
        .map(|&i| &calls[i])
        .rev()
        .max_by_key(|c| completeness(&c.args))
        .unwrap_or(outermost);
    let mut inside_out: Vec<&ToolCall> = group.iter().map(|&i| &calls[i]).collect();
    inside_out.sort_by_key(|c| std::cmp::Reverse(c.depth));
    let failed = inside_out.iter().find(|c| c.status == CallStatus::Error);
    ToolCall {
        result: best
            .result
            .clone()
            .or_else(|| inside_out.iter().find_map(|c| c.result.clone())),
        status: failed.map_or(CallStatus::Ok, |c| c.status.clone()),
        error_message: failed.and_then(|c| c.error_message.clone()),
        error_type: failed.and_then(|c| c.error_type.clone()),
        start_time_unix_nano: innermost.start_time_unix_nano,
        end_time_unix_nano: innermost.end_time_unix_nano,
        depth: outermost.depth,
        agent: outermost.agent.clone(),
        within: outermost.within,
        // The server whichever record of the call named it.
        mcp_server: (best.mcp_server.clone())
            .or_else(|| group.iter().find_map(|&i| calls[i].mcp_server.clone())),
        ..best.clone()
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::same_args;

    #[test]
    fn a_bare_value_is_the_one_field_object_it_writes() {
        let town = json!({"town": "Lisbon"});
        assert!(same_args(&json!("Lisbon"), &town));
        assert!(same_args(&town, &json!("Lisbon")));
        assert!(same_args(&json!("2"), &json!({"hours": 2})));
        assert!(same_args(&json!(2), &json!({"hours": 2.0})));
        assert!(same_args(&json!("true"), &json!({"ok": true})));
        assert!(same_args(&town, &json!({"town": "Lisbon"})));
        // Another value, a second field, a nested value: not the same.
        assert!(!same_args(&json!("Porto"), &town));
        assert!(!same_args(
            &json!("Lisbon"),
            &json!({"town": "Lisbon", "n": 1})
        ));
        assert!(!same_args(&json!("Lisbon"), &json!({"town": ["Lisbon"]})));
        assert!(!same_args(&json!(["Lisbon"]), &town));
        assert!(!same_args(&json!("2"), &json!({"hours": "2.0"})));
        // Digits recorded bare and read back as a number.
        let barcode = json!({"barcode": "30012004455"});
        assert!(same_args(&json!(30012004455u64), &barcode));
        assert!(!same_args(&json!(30012004456u64), &barcode));
        assert!(!same_args(&json!(1.5), &json!({"code": "1.50"})));
    }

    /// Arguments left as text that quote every key of the other record's
    /// object (Monocle's `repr()` of LangChain's tool input with the
    /// injected runtime) are that record's, with more beside them.
    #[test]
    fn a_text_naming_every_key_holds_the_object() {
        let repr = json!("{'boat': {'name': 'Lelietje'}, 'runtime': ToolRuntime(state={})}");
        assert!(super::text_naming_keys(
            &repr,
            &json!({"boat": {"name": "Lelietje"}})
        ));
        assert!(super::text_naming_keys(&repr, &json!({})));
        assert!(!super::text_naming_keys(&repr, &json!({"berth": "C-11"})));
        assert!(!super::text_naming_keys(
            &json!("boat"),
            &json!({"boat": 1})
        ));
        assert!(!super::text_naming_keys(
            &json!({"boat": 1}),
            &json!({"boat": 1})
        ));
    }

    #[test]
    fn json_text_is_the_value_it_holds() {
        let whole = json!({"field": "north-7", "depth": 30});
        let text = json!(r#"{"depth": 30, "field": "north-7"}"#);
        assert!(same_args(&text, &whole));
        assert!(same_args(&whole, &text));
        assert!(same_args(&json!(" [1, 2]"), &json!([1, 2])));
        // Other values, text that is no JSON, text of a scalar.
        assert!(!same_args(
            &json!(r#"{"field": "south-2", "depth": 30}"#),
            &whole
        ));
        assert!(!same_args(&json!(r#"{"field": "north-7""#), &whole));
        assert!(!same_args(&json!("30"), &json!([30])));
    }
}
