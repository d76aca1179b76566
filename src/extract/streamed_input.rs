//! A model's call as a streamed response's blocks record it
//! (docs/conventions.md, "Streamed call blocks"): LangChain.js keeps an
//! Anthropic stream's chunks in a message's `content`, a `tool_use` start
//! block (`{"index": 0, "type": "tool_use", "id", "name", "input": ""}`)
//! and then the arguments' JSON in pieces, each a block `{"index": 0,
//! "type": "input_json_delta", "input": "..."}` (Anthropic's own stream
//! events name the piece `partial_json`). The start block's empty `input`
//! is no argument: the pieces of its index, joined in order, are.

use serde_json::Value;

use super::requested::{Asked, Tree};

/// The type of a block holding a piece of a streamed call's arguments.
const PIECE_TYPE: &str = "input_json_delta";

/// The keys a piece's text is under (LangChain's, Anthropic's).
const PIECE_KEYS: [&str; 2] = ["input", "partial_json"];

/// Gives each call of `found` (the calls [`super::requested::walk`] read
/// from `items`, a list of blocks) that a `tool_use` start block with an
/// empty `input` asked, the arguments the pieces of its index hold.
pub(crate) fn fill<T: Tree>(items: &[T], found: &mut [Asked]) {
    // The cheap test first: most lists hold no call with empty arguments.
    if !found.iter().any(is_blank) {
        return;
    }
    for block in items.iter().filter(|b| is_start(*b)) {
        let Some(id) = block.field("id").and_then(T::text) else {
            continue;
        };
        let Some(index) = block.field("index").map(T::compact) else {
            continue;
        };
        let Some(args) = joined(items, &index) else {
            continue;
        };
        if let Some(call) = found
            .iter_mut()
            .find(|c| is_blank(c) && c.id.as_deref() == Some(id))
        {
            call.args = args;
        }
    }
}

/// Whether a call's arguments are the empty text a start block holds.
fn is_blank(c: &Asked) -> bool {
    c.args.as_str() == Some("")
}

/// Whether `b` is a `tool_use` block whose `input` is the empty text.
fn is_start<T: Tree>(b: &T) -> bool {
    b.field("type").and_then(T::text) == Some("tool_use")
        && b.field("input").and_then(T::text) == Some("")
}

/// The arguments the pieces of block index `index` (compact JSON) hold,
/// joined in order and decoded; none when there is no piece or the joined
/// text is no JSON object (a stream cut short keeps the empty text).
fn joined<T: Tree>(items: &[T], index: &str) -> Option<Value> {
    let mut text = String::new();
    let mut any = false;
    for b in items {
        if b.field("type").and_then(T::text) != Some(PIECE_TYPE)
            || b.field("index").map(T::compact).as_deref() != Some(index)
        {
            continue;
        }
        let piece = PIECE_KEYS
            .iter()
            .find_map(|k| b.field(k).and_then(T::text))?;
        text.push_str(piece);
        any = true;
    }
    let v: Value = serde_json::from_str(text.trim()).ok().filter(|_| any)?;
    v.is_object().then_some(v)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use crate::extract::requested::walk;

    fn asked(v: serde_json::Value) -> Vec<(Option<String>, serde_json::Value)> {
        let mut out = Vec::new();
        walk(&v, None, 0, &mut out);
        out.into_iter().map(|a| (a.id, a.args)).collect()
    }

    #[test]
    fn a_start_block_takes_the_pieces_of_its_index() {
        let content = json!({"content": [
            {"index": 0, "type": "tool_use", "id": "t-1", "name": "rent_bike", "input": ""},
            {"index": 0, "type": "input_json_delta", "input": "{\"town\":"},
            {"index": 1, "type": "tool_use", "id": "t-2", "name": "rent_bike", "input": ""},
            {"index": 0, "type": "input_json_delta", "input": "\"Oslo\"}"},
            {"index": 1, "type": "input_json_delta", "partial_json": "{\"town\":\"Bergen\"}"},
        ]});
        assert_eq!(
            asked(content),
            vec![
                (Some("t-1".into()), json!({"town": "Oslo"})),
                (Some("t-2".into()), json!({"town": "Bergen"})),
            ]
        );
    }

    /// Near misses: no piece, pieces that are no JSON object, a start
    /// block with arguments of its own: the block's `input` stays.
    #[test]
    fn without_whole_pieces_the_start_block_s_input_stays() {
        let cut = json!([
            {"index": 0, "type": "tool_use", "id": "t-1", "name": "rent_bike", "input": ""},
            {"index": 0, "type": "input_json_delta", "input": "{\"town\":"},
        ]);
        assert_eq!(asked(cut), vec![(Some("t-1".into()), json!(""))]);
        let none = json!([
            {"index": 0, "type": "tool_use", "id": "t-1", "name": "rent_bike", "input": ""},
            {"index": 1, "type": "input_json_delta", "input": "{\"town\":\"Oslo\"}"},
        ]);
        assert_eq!(asked(none), vec![(Some("t-1".into()), json!(""))]);
        let own = json!([
            {"index": 0, "type": "tool_use", "id": "t-1", "name": "rent_bike", "input": {"town": "Rome"}},
            {"index": 0, "type": "input_json_delta", "input": "{\"town\":\"Oslo\"}"},
        ]);
        assert_eq!(
            asked(own),
            vec![(Some("t-1".into()), json!({"town": "Rome"}))]
        );
    }
}
