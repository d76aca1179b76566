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
        let next = [NAME, ANY]
            .into_iter()
            .filter_map(|p| frame.find(p).map(|at| (at, p)))
            .min();
        let (piece, placeholder) = match next {
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
