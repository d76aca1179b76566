//! Templates that labels (`framing`) and error frames (`error_frames`)
//! are written in: literal pieces, `{name}` and `{any}`.

/// The placeholder of a label or a frame for the call's tool name.
pub(super) const NAME: &str = "{name}";
/// The placeholder of a trailer for the rest of its line, and of a frame
/// for the shortest text up to its next piece.
pub(super) const ANY: &str = super::rules::ANY;

/// What follows `template` (a label, or an error frame of `error_frames`)
/// at the start of `text`: its literal pieces in order, `{name}` the
/// call's tool and `{any}` the shortest text up to the next piece (BeeAI's
/// preamble, two sentences and a blank line before the explained error).
pub(super) fn after_template<'a>(template: &str, text: &'a str, name: &str) -> Option<&'a str> {
    let (mut rest, mut frame, mut skip) = (text, template, false);
    loop {
        let (piece, placeholder) = match next_placeholder(frame) {
            Some((at, p)) => (&frame[..at], Some(p)),
            None => (frame, None),
        };
        rest = match skip {
            true => &rest[rest.find(piece)? + piece.len()..],
            false => rest.strip_prefix(piece)?,
        };
        skip = false;
        match placeholder {
            None => return Some(rest),
            Some(NAME) => rest = rest.strip_prefix(name)?,
            Some(_) => skip = true,
        }
        frame = &frame[piece.len() + placeholder.map_or(0, str::len)..];
    }
}

/// The first placeholder in `frame` and where it starts. A byte search for
/// `{`, not a substring search: this runs for every frame on every call's
/// result, and a substring searcher is built anew each time.
fn next_placeholder(frame: &str) -> Option<(usize, &'static str)> {
    frame.match_indices('{').find_map(|(at, _)| {
        let rest = &frame[at..];
        [NAME, ANY]
            .into_iter()
            .find(|p| rest.starts_with(p))
            .map(|p| (at, p))
    })
}

#[cfg(test)]
mod tests {
    use super::after_template;

    #[test]
    fn pieces_name_and_any_are_read_in_order() {
        let framed = "Error in tool 'book': no room";
        assert_eq!(
            after_template("Error in tool '{name}': ", framed, "book"),
            Some("no room")
        );
        assert_eq!(
            after_template("Error in tool '{name}': ", framed, "pay"),
            None
        );
        // `{any}`: the shortest text up to the next piece.
        let two = "Sorry. Try again.\n\nError: no room\n\nError: twice";
        assert_eq!(
            after_template("{any}\n\nError: ", two, "book"),
            Some("no room\n\nError: twice")
        );
        // A brace that opens no placeholder is a literal.
        let json = r#"{"tool": book, "error": boom"#;
        assert_eq!(
            after_template(r#"{"tool": {name}, "error": "#, json, "book"),
            Some("boom")
        );
        assert_eq!(after_template("plain", "plain text", "x"), Some(" text"));
    }
}
