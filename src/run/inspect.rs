//! Inspect: trace files -> the tool calls found in each trace, as a tree of
//! agent runs or as JSONL rows; with `explain`, per span the rule that
//! classified it or the rules that almost did.

use std::io::Write;

use crate::assemble::Trace;
use crate::evaluate::{Inspected, Pipeline, Warning};
use crate::extract::carry::{Carry, Left, Open, OpenAsk};
use crate::extract::ToolCall;
use crate::ingest::files::Source;
use crate::ingest::projection::{KeepAll, KeyFilter};
use crate::ingest::Rejected;
use crate::report;
use crate::run::replay::{stream_traces, Progress, ReadOptions};

/// How `inspect` writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum InspectFormat {
    #[default]
    Table,
    Jsonl,
}

/// What an inspection read.
#[derive(Debug, Default)]
pub struct Inspection {
    pub rejected: Vec<Rejected>,
    /// Tool calls found (with `explain`, spans a rule classified as calls).
    pub calls: usize,
    pub spans: usize,
}

/// Reads every input and writes each trace to `out` as it completes, in
/// input order. After a write error the rest is read but not written, and
/// the error is returned.
pub fn inspect(
    sources: &[Source],
    pipeline: &Pipeline,
    read: &ReadOptions,
    format: InspectFormat,
    explain: bool,
    out: &mut dyn Write,
    progress: impl FnMut(Progress),
) -> std::io::Result<Inspection> {
    let write = |out: &mut Vec<u8>, t: &Trace, carried: &[OpenAsk]| {
        if explain {
            write_explained(out, pipeline, t, format, carried)
        } else {
            write_inspected(out, pipeline, t, format, carried)
        }
    };
    // Each batch of traces is turned into its output text on a worker;
    // this thread writes the texts (and prints the warnings) in input order.
    let text_of = |traces: Vec<Trace>| -> std::io::Result<(Vec<u8>, Vec<Piece>, usize)> {
        let mut text = Vec::new();
        let mut pieces = Vec::with_capacity(traces.len());
        let mut spans = 0;
        // The batch's traces are all inspected, then all written: each
        // stage's code stays in the instruction cache across the batch
        // (run in turn per trace, the two missed it on every trace).
        let mut found = (!explain).then(|| pipeline.inspect_all(&traces).into_iter());
        for t in traces {
            spans += t.spans.len();
            let (calls, open) = match found.as_mut().and_then(Iterator::next) {
                Some(f) => write_found(&mut text, &t, f, format)?,
                None => write(&mut text, &t, &[])?,
            };
            pieces.push(Piece {
                end: text.len(),
                calls,
                left: Left::of(open, || t),
            });
        }
        Ok((text, pieces, spans))
    };
    let render = |traces: Vec<Trace>| {
        let warnings: Vec<Warning> = traces.iter().flat_map(Warning::of_trace).collect();
        (warnings, text_of(traces))
    };
    let mut found = Inspection::default();
    let mut written: std::io::Result<()> = Ok(());
    let mut carry = Carry::handing_back();
    let projection = pipeline.projection();
    // An explanation shows near misses, which may name any attribute.
    let filter: &(dyn KeyFilter + Sync) = if explain { &KeepAll } else { &projection };
    let (rejected, _stats) =
        stream_traces(sources, read, filter, progress, render, |batch, spent| {
            let (warnings, rendered) = batch;
            warnings.iter().for_each(super::print_warning);
            if written.is_ok() {
                written = rendered.and_then(|(text, pieces, spans)| {
                    found.spans += spans;
                    let mut from = 0;
                    let mut due = Vec::with_capacity(pieces.len());
                    for p in pieces {
                        // A trace read again (it answers an earlier trace's
                        // call) replaces its part of the batch's text.
                        let first = Ok((Text::Part(from..p.end), p.calls));
                        carry.settle_into(
                            first,
                            p.left,
                            |t, carried| {
                                let mut again = Vec::new();
                                match write(&mut again, t, carried) {
                                    Ok((calls, open)) => (Ok((Text::Own(again), calls)), open),
                                    Err(e) => (Err(e), None),
                                }
                            },
                            &mut due,
                        );
                        from = p.end;
                    }
                    // What the carry holds outlives the batch's text.
                    for held in carry.held_mut().flatten() {
                        if let Text::Part(r) = &held.0 {
                            held.0 = Text::Own(text[r.clone()].to_vec());
                        }
                    }
                    put(&mut found, out, &text, due)
                });
            }
            spent.append(&mut carry.spent());
        });
    if written.is_ok() {
        written = put(&mut found, out, &[], carry.finish());
    }
    written?;
    found.rejected = rejected;
    Ok(found)
}

/// A trace's output text: its part of its batch's text, or its own (the
/// trace was read again, or held past its batch).
enum Text {
    Part(std::ops::Range<usize>),
    Own(Vec<u8>),
}

/// Writes the texts of traces that are due (parts of `batch`, or their
/// own), counting their calls. Parts that follow each other in the batch
/// go out in one write.
fn put(
    found: &mut Inspection,
    out: &mut dyn Write,
    batch: &[u8],
    due: Vec<std::io::Result<(Text, usize)>>,
) -> std::io::Result<()> {
    let mut run = 0..0;
    for read in due {
        let (text, calls) = read?;
        found.calls += calls;
        match text {
            Text::Part(r) if r.start == run.end => run.end = r.end,
            Text::Part(r) => {
                out.write_all(&batch[run])?;
                run = r;
            }
            Text::Own(own) => {
                out.write_all(&batch[run.clone()])?;
                run = run.end..run.end;
                out.write_all(&own)?;
            }
        }
    }
    out.write_all(&batch[run])
}

/// Reads every input and hands each trace's row, built from it on a worker
/// by `row`, to `each` in input order: what a program that embeds the
/// library reads in place of `inspect`'s JSONL text.
pub fn each_row<R: Send>(
    sources: &[Source],
    pipeline: &Pipeline,
    read: &ReadOptions,
    row: impl Fn(&report::InspectRow<'_>) -> R + Sync,
    mut each: impl FnMut(R),
) -> Inspection {
    // One trace's row and what it leaves open, as `inspect` writes it.
    let row_of = |t: &Trace, carried: &[OpenAsk]| {
        let mut found = pipeline.inspect_carried(t, carried);
        let r = row(&report::InspectRow::of(
            t,
            &found.analysis,
            found.session.as_ref(),
            found.joins.as_deref(),
        ));
        ((r, found.analysis.calls.len()), found.analysis.open.take())
    };
    let rows = |traces: Vec<Trace>| {
        let mut spans = 0;
        let mut rows = Vec::with_capacity(traces.len());
        for t in traces {
            spans += t.spans.len();
            let (r, open) = row_of(&t, &[]);
            rows.push((r, Left::of(open, || t)));
        }
        (rows, spans)
    };
    let mut found = Inspection::default();
    let mut carry = Carry::handing_back();
    let projection = pipeline.projection();
    let (rejected, _stats) = stream_traces(
        sources,
        read,
        &projection,
        |_| {},
        rows,
        |(rows, spans), spent| {
            found.spans += spans;
            for (first, left) in rows {
                for (r, calls) in carry.settle(first, left, row_of) {
                    found.calls += calls;
                    each(r);
                }
            }
            spent.append(&mut carry.spent());
        },
    );
    for (r, calls) in carry.finish() {
        found.calls += calls;
        each(r);
    }
    found.rejected = rejected;
    found
}

/// One trace's output within its batch's text (up to `end`), and what the
/// trace leaves open for the traces after it.
struct Piece {
    end: usize,
    calls: usize,
    left: Option<Left>,
}

/// One trace's calls as a tree or a row; returns how many calls, and what
/// the trace leaves open.
fn write_inspected(
    out: &mut Vec<u8>,
    pipeline: &Pipeline,
    t: &Trace,
    format: InspectFormat,
    carried: &[OpenAsk],
) -> std::io::Result<(usize, Option<Box<Open>>)> {
    write_found(out, t, pipeline.inspect_carried(t, carried), format)
}

/// [`write_inspected`] of a trace already inspected.
fn write_found(
    out: &mut Vec<u8>,
    t: &Trace,
    mut found: Inspected,
    format: InspectFormat,
) -> std::io::Result<(usize, Option<Box<Open>>)> {
    match format {
        InspectFormat::Jsonl => report::write_inspect_row(
            out,
            t,
            &found.analysis,
            found.session.as_ref(),
            found.joins.as_deref(),
        ),
        InspectFormat::Table => {
            report::write_inspect_tree(out, t, &found.analysis, found.session.as_ref())?;
            if let Some(j) = &found.joins {
                report::write_joins(out, j)?;
            }
        }
    }
    Ok((found.analysis.calls.len(), found.analysis.open.take()))
}

/// One trace's spans with the rule of each; returns how many are calls,
/// and what the trace leaves open.
fn write_explained(
    out: &mut Vec<u8>,
    pipeline: &Pipeline,
    t: &Trace,
    format: InspectFormat,
    carried: &[OpenAsk],
) -> std::io::Result<(usize, Option<Box<Open>>)> {
    let mut rows = pipeline.extractor().explain(t);
    // An MCP client's record of a call another trace counts is no call here.
    for e in &mut rows {
        if carried
            .iter()
            .any(|c| c.is_echo() && c.span_id == e.span_id)
        {
            if let Some(m) = &mut e.matched {
                m.call = false;
            }
        }
    }
    // What the conversation witness did: calls rebuilt, disagreements.
    let mut witnessed = pipeline.extractor().analyze_carried(t, carried);
    let rebuilt: Vec<&ToolCall> = witnessed
        .calls
        .iter()
        .filter(|c| c.from.is_some() || c.span_name.is_some())
        .collect();
    let calls = rows
        .iter()
        .filter(|e| e.matched.as_ref().is_some_and(|m| m.call))
        .count()
        + rebuilt.iter().filter(|c| c.from.is_some()).count();
    match format {
        InspectFormat::Jsonl => {
            for e in &rows {
                writeln!(out, "{}", report::explain_row(t, e))?;
            }
            if let Some(row) = report::conversation_row(t, &rebuilt, &witnessed) {
                writeln!(out, "{row}")?;
            }
        }
        InspectFormat::Table => {
            report::write_explain(out, t, &rows, witnessed.calls.len())?;
            report::write_conversation(out, &rebuilt, &witnessed)?;
        }
    }
    Ok((calls, witnessed.open.take()))
}
