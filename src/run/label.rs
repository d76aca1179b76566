//! The labelling session (`toolscore label`): one evaluation at a time on
//! the terminal (the request, the expected calls, the calls made with their
//! arguments and results, the agents that ran), never the metric's verdict,
//! and one key per answer: `p` pass, `f` fail, `s` skip, `u` undo, `q`
//! quit. Each answer is appended to the labels file at once, as one whole
//! line synced to disk, so a killed session loses nothing; a new session
//! skips what the same rater already labelled.
//!
//! The screen is plain text cut to the terminal's size (80x24 is enough),
//! with no colour at all, so `NO_COLOR` and any terminal over ssh are
//! served alike.

use std::collections::HashSet;
use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::path::Path;

use crossterm::event::{self, Event, KeyCode, KeyEventKind, KeyModifiers};
use crossterm::terminal;

use crate::calibrate::labels::{self, Label};
use crate::evaluate::{Evaluation, Verdict};
use crate::report::{ellipsize, Report, SpanMark};

/// Which evaluations a session shows, and what its rows say.
#[derive(Debug, Clone, Default)]
pub struct Plan {
    /// Written into each row; `None` labels the case as a whole.
    pub metric: Option<String>,
    pub rater: Option<String>,
    /// A random subset of this many evaluations.
    pub sample: Option<usize>,
    pub seed: u64,
    /// Half the subset from the metric's passes, half from its failures.
    pub balanced: bool,
}

#[derive(Debug, thiserror::Error)]
pub enum SessionError {
    #[error("cannot use labels file {path}")]
    File {
        path: String,
        #[source]
        source: io::Error,
    },
    #[error("the terminal (`label` is an interactive session: run it in a terminal)")]
    Terminal(#[source] io::Error),
    #[error("labels file {0}: {1}")]
    Labels(String, String),
}

/// SplitMix64: a fixed, documented generator, so a seed picks the same
/// subset in every version of toolscore (a library's generator may change).
struct SplitMix(u64);

impl SplitMix {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Fisher-Yates.
    fn shuffle<T>(&mut self, items: &mut [T]) {
        for i in (1..items.len()).rev() {
            let j = (self.next() % (i as u64 + 1)) as usize;
            items.swap(i, j);
        }
    }
}

/// The evaluations to show, in order: all of them, or the seeded subset
/// (picked among all, so that a resumed session continues the same one).
pub fn pick(evaluations: &[Evaluation], plan: &Plan) -> Vec<usize> {
    let all: Vec<usize> = (0..evaluations.len()).collect();
    let Some(n) = plan.sample else { return all };
    let mut rng = SplitMix(plan.seed);
    if !plan.balanced {
        let mut all = all;
        rng.shuffle(&mut all);
        all.truncate(n);
        return all;
    }
    let passed = |i: &usize| {
        let e = &evaluations[*i];
        let r = match &plan.metric {
            Some(m) => e.results.iter().find(|r| &r.metric == m),
            None => e.headline(),
        };
        r.map(|r| r.verdict() == Verdict::Pass)
    };
    let (mut passes, mut fails): (Vec<usize>, Vec<usize>) = all
        .iter()
        .copied()
        .filter(|i| passed(i).is_some())
        .partition(|i| passed(i) == Some(true));
    rng.shuffle(&mut passes);
    rng.shuffle(&mut fails);
    // Half each; a class that runs short leaves its share to the other.
    let want_fails = (n / 2).min(fails.len());
    let want_passes = (n - want_fails).min(passes.len());
    let want_fails = (n - want_passes).min(fails.len());
    let mut out: Vec<usize> = passes[..want_passes]
        .iter()
        .chain(&fails[..want_fails])
        .copied()
        .collect();
    // Interleaved by the generator, so the human cannot guess the class by position.
    rng.shuffle(&mut out);
    out
}

/// What the terminal session needs: keys in, a screen out.
trait Screen {
    fn size(&self) -> (usize, usize);
    fn show(&mut self, lines: &[String]) -> io::Result<()>;
    fn key(&mut self) -> io::Result<char>;
}

/// The real terminal, in raw mode while it lives.
struct Term {
    out: io::Stdout,
}

impl Term {
    fn new() -> io::Result<Term> {
        terminal::enable_raw_mode()?;
        Ok(Term { out: io::stdout() })
    }
}

impl Drop for Term {
    fn drop(&mut self) {
        let _ = terminal::disable_raw_mode();
        let _ = self.out.write_all(b"\r\n");
        let _ = self.out.flush();
    }
}

impl Screen for Term {
    fn size(&self) -> (usize, usize) {
        terminal::size().map_or((80, 24), |(w, h)| (w.max(20) as usize, h.max(8) as usize))
    }

    fn show(&mut self, lines: &[String]) -> io::Result<()> {
        // Clear, home, then the lines (raw mode: \r\n ends a line).
        let mut buf = String::from("\x1b[2J\x1b[H");
        buf.push_str(&lines.join("\r\n"));
        self.out.write_all(buf.as_bytes())?;
        self.out.flush()
    }

    fn key(&mut self) -> io::Result<char> {
        loop {
            if let Event::Key(k) = event::read()? {
                if k.kind != KeyEventKind::Press {
                    continue;
                }
                return Ok(match k.code {
                    KeyCode::Char('c') if k.modifiers.contains(KeyModifiers::CONTROL) => 'q',
                    KeyCode::Esc => 'q',
                    KeyCode::Char(c) => c.to_ascii_lowercase(),
                    _ => continue,
                });
            }
        }
    }
}

/// Runs the session on the terminal; returns what it did, for people.
pub fn run(report: &Report, plan: &Plan, path: &Path) -> Result<String, SessionError> {
    let file_err = |source| SessionError::File {
        path: path.display().to_string(),
        source,
    };
    let done = already_labelled(path, plan)?;
    let order: Vec<usize> = pick(&report.evaluations, plan)
        .into_iter()
        .filter(|&i| {
            let e = &report.evaluations[i];
            !done.contains(&(e.case_id.clone(), Some(e.trace_id.to_string())))
                && !done.contains(&(e.case_id.clone(), None))
        })
        .collect();
    if order.is_empty() {
        return Ok(format!(
            "nothing to label: {} evaluation(s), every one picked already labelled{}",
            report.evaluations.len(),
            plan.rater
                .as_deref()
                .map_or(String::new(), |r| format!(" by {r}"))
        ));
    }
    // The terminal first: without one, no file is created.
    let mut term = Term::new().map_err(SessionError::Terminal)?;
    let mut file = OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .map_err(file_err)?;
    session(report, plan, &order, &mut file, &mut term).map_err(|e| match e {
        Step::Io(e) => SessionError::Terminal(e),
        Step::File(e) => file_err(e),
        Step::Changed => SessionError::Labels(
            path.display().to_string(),
            "changed by another writer during the session; undo refused".into(),
        ),
    })
}

enum Step {
    Io(io::Error),
    File(io::Error),
    Changed,
}

/// What was done to an item, for undo.
enum Done {
    /// Answered: the file's length before and after the row.
    Answered(u64, u64),
    Skipped,
}

fn session(
    report: &Report,
    plan: &Plan,
    order: &[usize],
    file: &mut File,
    screen: &mut dyn Screen,
) -> Result<String, Step> {
    let mut history: Vec<Done> = Vec::new();
    let (mut answered, mut note) = (0usize, String::new());
    while history.len() < order.len() {
        let at = history.len();
        let e = &report.evaluations[order[at]];
        let (w, h) = screen.size();
        let lines = render(report, e, at + 1, order.len(), &note, w, h);
        screen.show(&lines).map_err(Step::Io)?;
        note.clear();
        match screen.key().map_err(Step::Io)? {
            k @ ('p' | 'f') => {
                let label = Label {
                    line: 0,
                    case: e.case_id.clone(),
                    trace_id: Some(e.trace_id.to_string()),
                    metric: plan.metric.clone(),
                    pass: k == 'p',
                    rater: plan.rater.clone(),
                    rationale: None,
                };
                let before = file.metadata().map_err(Step::File)?.len();
                labels::append_row(file, &labels::to_row(&label)).map_err(Step::File)?;
                let after = file.metadata().map_err(Step::File)?.len();
                history.push(Done::Answered(before, after));
                answered += 1;
            }
            's' => history.push(Done::Skipped),
            'u' => match history.pop() {
                Some(Done::Answered(before, after)) => {
                    // Only our own last row goes: the file must end where we left it.
                    if file.metadata().map_err(Step::File)?.len() != after {
                        return Err(Step::Changed);
                    }
                    file.set_len(before).map_err(Step::File)?;
                    file.sync_data().map_err(Step::File)?;
                    answered -= 1;
                    note = "undone: the last answer was removed".into();
                }
                Some(Done::Skipped) => note = "back to the skipped case".into(),
                None => note = "nothing to undo in this session".into(),
            },
            'q' => break,
            other => note = format!("`{other}` is not a key here: p f s u q"),
        }
    }
    let left = order.len() - history.len();
    Ok(format!(
        "labelled {answered}, skipped {}, {left} left of {}",
        history
            .iter()
            .filter(|d| matches!(d, Done::Skipped))
            .count(),
        order.len()
    ))
}

/// (case, trace) pairs the rater already labelled for the plan's metric;
/// `None` as trace for a label of the whole case.
fn already_labelled(
    path: &Path,
    plan: &Plan,
) -> Result<HashSet<(String, Option<String>)>, SessionError> {
    if !path.exists() {
        return Ok(HashSet::new());
    }
    let read = labels::read(path).map_err(|e| {
        SessionError::Labels(
            path.display().to_string(),
            format!("{:#}", anyhow::Error::new(e)),
        )
    })?;
    if let Some(bad) = read.rejected.first() {
        return Err(SessionError::Labels(
            path.display().to_string(),
            format!(
                "{} bad row(s), first {bad}: fix them before labelling more",
                read.rejected.len()
            ),
        ));
    }
    Ok(read
        .labels
        .into_iter()
        .filter(|l| l.rater == plan.rater && l.metric == plan.metric)
        .map(|l| (l.case, l.trace_id))
        .collect())
}

/// The screen for one evaluation, cut to `w` x `h`: no verdict on it.
fn render(
    report: &Report,
    e: &Evaluation,
    at: usize,
    of: usize,
    note: &str,
    w: usize,
    h: usize,
) -> Vec<String> {
    let mut body = vec![
        format!("case {} ({at} of {of})", e.case_id),
        format!("trace {}", e.trace_id),
    ];
    let timeline = report.timelines.as_ref().and_then(|t| t.get(&e.trace_id));
    if let Some(req) = timeline.and_then(|t| t.request.as_deref()) {
        body.push(format!("request: {req}"));
    }
    let agents: Vec<&str> = timeline
        .map(|t| {
            t.spans
                .iter()
                .filter(|s| s.mark == SpanMark::Agent)
                .map(|s| s.name.as_str())
                .collect()
        })
        .unwrap_or_default();
    if !agents.is_empty() {
        body.push(format!("agents: {}", agents.join(", ")));
    }
    body.push("expected:".into());
    if e.expected.is_empty() {
        body.push("  (no calls)".into());
    }
    for c in e.expected.iter() {
        body.push(format!(
            "  {}",
            serde_json::to_string(c).unwrap_or_default()
        ));
    }
    body.push("called:".into());
    if e.tools_called.is_empty() {
        body.push("  (no calls)".into());
    }
    for c in e.tools_called.iter() {
        let args = serde_json::to_string(&c.args).unwrap_or_default();
        let mut line = format!("  {}({args})", c.name);
        if let Some(r) = &c.result {
            line.push_str(&format!(
                " -> {}",
                serde_json::to_string(r).unwrap_or_default()
            ));
        }
        if let Some(err) = &c.error_message {
            line.push_str(&format!(" error: {err}"));
        }
        body.push(line);
    }
    let footer = "p pass  f fail  s skip  u undo  q quit";
    // Room for the body: the note and the footer take the last two lines.
    let room = h.saturating_sub(2).max(1);
    let mut lines: Vec<String> = body.iter().map(|l| ellipsize(l, w)).collect();
    if lines.len() > room {
        let more = lines.len() - room + 1;
        lines.truncate(room - 1);
        lines.push(format!("... {more} more line(s) not shown"));
    }
    lines.push(ellipsize(note, w));
    lines.push(footer.to_string());
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splitmix_is_fixed() {
        // The first outputs for seed 0, as the generator's authors list them.
        let mut r = SplitMix(0);
        assert_eq!(r.next(), 0xe220_a839_7b1d_cdaf);
        assert_eq!(r.next(), 0x6e78_9e6a_a1b9_65f4);
    }
}
