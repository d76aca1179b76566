//! Asks a later trace counts (`later`): a note in the asking trace where a
//! later trace of the same process counts the call, the warning where none
//! does before the trace is let go.

use serde_json::{json, Value};

use super::{Carry, Left, MAX_HELD};
use crate::assemble::{Trace, TraceId};
use crate::extract::test_support::{in_process, model_call, read_in_order};
use crate::extract::tests::sp;
use crate::extract::{Analysis, Extractor};

fn moor(trace: u8, process: &str) -> Trace {
    let pier = json!({"pier": "B"});
    model_call(trace, (0, 10), process, &[], &[("m1", "moor_boat", pier)])
}

fn moored(trace: u8, process: &str) -> Trace {
    model_call(trace, (20, 30), process, &[("m1", "moored")], &[])
}

fn listed(a: &Analysis) -> bool {
    a.warnings.iter().any(|w| w.contains("listed, not counted"))
}

#[test]
fn an_ask_a_later_trace_counts_is_a_note_in_the_trace_that_asked() {
    let read = read_in_order(vec![moor(1, "p1"), moored(2, "p1")]);
    assert_eq!(read.len(), 2);
    assert!(read[0].warnings.is_empty(), "{:?}", read[0].warnings);
    let note = read[0].notes.iter().find(|n| n.contains("later"));
    let note = note.map(String::as_str).unwrap_or_default();
    assert!(note.contains("`moor_boat` (call id m1)"), "{note}");
    assert!(note.contains(&TraceId([2; 16]).to_string()), "{note}");
    // Counted once, where its result is.
    assert!(read[0].calls.is_empty());
    assert_eq!(read[1].calls.len(), 1);
}

#[test]
fn an_ask_no_later_trace_counts_keeps_its_warning() {
    // Alone, answered by another process, or by a request that started
    // before the model asked.
    let alone = read_in_order(vec![moor(1, "p1")]);
    assert!(listed(&alone[0]), "{:?}", alone[0].warnings);
    let other = read_in_order(vec![moor(1, "p1"), moored(2, "p2")]);
    assert!(listed(&other[0]) && other[1].calls.is_empty());
    let early = model_call(2, (5, 30), "p1", &[("m1", "moored")], &[]);
    let early = read_in_order(vec![moor(1, "p1"), early]);
    assert!(listed(&early[0]) && early[1].calls.is_empty());
}

/// A trace's id byte and its analysis.
type Read = (u8, Analysis);

/// Folds `t` into `carry` as `inspect` does; returns what is due.
fn settle(carry: &mut Carry<Read>, t: Trace) -> Vec<Read> {
    let x = Extractor::default();
    let mut first = x.analyze(&t);
    let id = t.id.0[0];
    let left = Left::of(first.open.take(), || t);
    carry.settle((id, first), left, |t, carried| {
        let mut a = x.analyze_carried(t, carried);
        let open = a.open.take();
        ((t.id.0[0], a), open)
    })
}

fn ids(due: &[Read]) -> Vec<u8> {
    due.iter().map(|(id, _)| *id).collect()
}

#[test]
fn traces_behind_an_asking_trace_come_out_in_input_order() {
    let mut carry = Carry::default();
    assert!(settle(&mut carry, moor(1, "p1")).is_empty());
    let unrelated = model_call(2, (12, 15), "p2", &[], &[]);
    assert!(settle(&mut carry, unrelated).is_empty());
    let due = settle(&mut carry, moored(3, "p1"));
    assert_eq!(ids(&due), [1, 2, 3]);
    assert!(!listed(&due[0].1));
}

#[test]
fn an_asking_trace_is_held_no_longer_than_the_window() {
    let mut carry = Carry::default();
    assert!(settle(&mut carry, moor(1, "p1")).is_empty());
    let mut due = Vec::new();
    for k in 0..=MAX_HELD {
        let t = model_call(2 + k as u8, (12, 15), "p2", &[], &[]);
        due.extend(settle(&mut carry, t));
    }
    // Past the window, all come out, the ask's warning kept.
    assert_eq!(due.len(), MAX_HELD + 2);
    assert_eq!(due[0].0, 1);
    assert!(listed(&due[0].1));
    assert!(carry.finish().is_empty());
}

#[test]
fn letting_asks_go_releases_the_asking_trace_with_its_warning() {
    // `serve` at the end of a batch: the answer is in a later batch.
    let mut carry = Carry::default();
    assert!(settle(&mut carry, moor(1, "p1")).is_empty());
    let mut due = Vec::new();
    carry.let_asks_go(&mut due);
    assert_eq!(ids(&due), [1]);
    assert!(listed(&due[0].1));
    // The answer still counts the call.
    let due = settle(&mut carry, moored(2, "p1"));
    assert_eq!(ids(&due), [2]);
    assert_eq!(due[0].1.calls.len(), 1);
}

/// A model call whose request repeats the model's turn asking for `name`
/// under call id `id` and its result (`quay.*`, process `process`).
fn repeating(trace: u8, process: &str, id: &str, name: &str, args: &Value) -> Trace {
    let input = json!([
        {"role": "user", "parts": [{"type": "text", "content": "Moor at pier B"}]},
        {"role": "assistant", "parts": [{"type": "tool_call", "id": id, "name": name, "arguments": args}]},
        {"role": "tool", "parts": [{"type": "tool_call_response", "id": id, "response": "moored"}]}
    ]);
    let output = json!([{"role": "assistant", "parts": [{"type": "text", "content": "Moored."}]}]);
    let s = sp(
        trace,
        None,
        (20, 30),
        "quay.chat",
        &[
            ("quay.operation", "chat"),
            ("gen_ai.input.messages", &input.to_string()),
            ("gen_ai.output.messages", &output.to_string()),
        ],
    );
    Trace::new(TraceId([trace; 16]), vec![in_process(s, process)], 0)
}

#[test]
fn a_later_trace_counting_the_call_under_another_id_counts_that_ask() {
    // The asking output wrote an item id (`it_m1`), the next request the
    // call id (`m1`): the same tool and arguments, one ask only.
    let pier = json!({"pier": "B"});
    let ask = |args: &Value| {
        model_call(
            1,
            (0, 10),
            "p1",
            &[],
            &[("it_m1", "moor_boat", args.clone())],
        )
    };
    let read = read_in_order(vec![
        ask(&pier),
        repeating(2, "p1", "m1", "moor_boat", &pier),
    ]);
    assert!(read[0].warnings.is_empty(), "{:?}", read[0].warnings);
    assert_eq!(read[1].calls.len(), 1);
    // Other arguments, or two asks the call fits: the warning stays.
    let other = json!({"pier": "C"});
    let read = read_in_order(vec![
        ask(&other),
        repeating(2, "p1", "m1", "moor_boat", &pier),
    ]);
    assert!(listed(&read[0]), "{:?}", read[0].warnings);
    let two = model_call(
        1,
        (0, 10),
        "p1",
        &[],
        &[
            ("it_m1", "moor_boat", pier.clone()),
            ("it_m2", "moor_boat", pier.clone()),
        ],
    );
    let read = read_in_order(vec![two, repeating(2, "p1", "m1", "moor_boat", &pier)]);
    assert_eq!(read[0].warnings.len(), 2, "{:?}", read[0].warnings);
}
