//! The drivers: what runs the stages over a whole input. `replay` and
//! `inspect` read trace files, `record` writes a fixture from them, `label`
//! asks a person for labels on a terminal, `cases`
//! scores tool calls given as data; `serve` (its own folder) scores what
//! OTLP receivers get. Each builds its run through [`setup`], the one place
//! that turns typed options into an evaluator and a per-trace pipeline.

pub mod cases;
pub mod inspect;
pub mod label;
pub mod record;
pub mod replay;
pub mod setup;

pub use setup::{CaseRun, DefaultCase, Fixture, Note, Options, Scoring, Setup, SetupError};

/// Prints a warning of the run on stderr, as the command line shows them
/// (`serve` logs the same warnings).
pub fn print_warning(w: &crate::evaluate::Warning) {
    eprintln!(
        "toolscore: warning: {}",
        crate::report::printable(&w.to_string())
    );
}
