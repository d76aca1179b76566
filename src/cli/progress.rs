//! Progress on stderr for long reads.

use std::io::{self, IsTerminal};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use crate::run::replay::Progress;

/// Progress on stderr when a person is watching (a terminal) and not
/// `--quiet`: files, bytes and spans read so far, with a bar over the bytes.
pub(crate) fn progress_printer(quiet: bool) -> impl FnMut(Progress) {
    let show = !quiet && io::stderr().is_terminal();
    let mut bar: Option<ProgressBar> = None;
    move |p: Progress| {
        if !show {
            return;
        }
        // indicatif draws at most 20 times a second, however often it is told.
        let bar = bar.get_or_insert_with(|| progress_bar(&p));
        bar.set_message(format!("{}/{} files, {} spans", p.done, p.total, p.spans));
        bar.set_position(p.bytes);
        if p.done == p.total {
            bar.finish();
        }
    }
}

fn progress_bar(first: &Progress) -> ProgressBar {
    // The counts first: indicatif cuts lines at the terminal's width and the
    // bar takes what is left. Only stdin: no size to measure a bar against.
    let template = if first.total_bytes > 0 {
        "reading {msg}, {binary_bytes}/{binary_total_bytes} {wide_bar} eta {eta}"
    } else {
        "reading {msg} {spinner}"
    };
    // Set up hidden, so that nothing half-made is drawn.
    let bar = ProgressBar::with_draw_target(Some(first.total_bytes), ProgressDrawTarget::hidden());
    if let Ok(style) = ProgressStyle::with_template(template) {
        bar.set_style(style);
    }
    bar.set_draw_target(ProgressDrawTarget::stderr());
    // Redraws skipped by the rate limit, and the clock, catch up while a big
    // file is read.
    bar.enable_steady_tick(std::time::Duration::from_millis(250));
    bar
}
