//! Record: trace files -> fixture cases holding the calls each trace made,
//! ready to edit: a fixture from a good run. Traces are read and their calls
//! found by the same [`Pipeline`] as `replay` uses, so a recording replays
//! as passing on the traces it came from.
//!
//! A case joins its trace by trace id (one case per trace), by the user's
//! request (one case per distinct text) or by the value of an attribute (one
//! case per distinct value; for a session key, the case covers the whole
//! session, as a `match` on a session key does when replayed).

use std::collections::{BTreeMap, HashMap, HashSet};
use std::fs::{self, File};
use std::io::{self, BufWriter, Write};
use std::path::Path;
use std::str::FromStr;

use serde::Serialize;
use serde_json::Value;

use crate::assemble::{find_attr, Trace, TraceId, Val};
use crate::evaluate::{Pipeline, Warning};
use crate::expect::{matchers, normalize_text};
use crate::extract::carry::{Carry, Left, Open, OpenAsk};
use crate::extract::facts::turn_text_of;
use crate::ingest::files::Source;
use crate::ingest::Rejected;
use crate::run::replay::{stream_traces, Progress, ReadOptions};

/// How recorded cases find their traces (`--join`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum RecordJoin {
    /// One case per trace, by its id.
    #[default]
    TraceId,
    /// One case per distinct user request (normalized as joins compare it).
    UserText,
    /// One case per distinct value of this attribute (on the resource or
    /// any span).
    Match(String),
}

impl FromStr for RecordJoin {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "trace_id" => Ok(RecordJoin::TraceId),
            "user_text" => Ok(RecordJoin::UserText),
            _ => match s.strip_prefix("match:") {
                Some(key) if !key.trim().is_empty() => Ok(RecordJoin::Match(key.to_string())),
                _ => Err(format!(
                    "`{s}` is not `trace_id`, `user_text` or `match:KEY` (an attribute key)"
                )),
            },
        }
    }
}

/// How a recorded case finds its trace(s).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RecordedKey {
    TraceId(TraceId),
    /// The user's request as the first trace wrote it.
    UserText(String),
    Match {
        key: String,
        value: String,
    },
}

/// One expected call: a name, and the arguments when the span had some.
#[derive(Debug, Clone, PartialEq)]
pub struct RecordedCall {
    pub name: String,
    pub args: Option<Value>,
}

/// One case of a recording.
#[derive(Debug, Clone, PartialEq)]
pub struct RecordedCase {
    pub id: String,
    pub key: RecordedKey,
    /// The calls, in the order they were made.
    pub expected: Vec<RecordedCall>,
    /// The traces the calls come from (several only for a session).
    pub traces: Vec<TraceId>,
    /// Written into the case when set (`record --threshold`).
    pub threshold: Option<f64>,
}

/// What a recording read and made.
#[derive(Debug, Default)]
pub struct Recording {
    /// In the order their (first) traces were read.
    pub cases: Vec<RecordedCase>,
    pub rejected: Vec<Rejected>,
    /// Traces not recorded and why, sessions merged: for people, on stderr.
    pub notes: Vec<String>,
    /// Traces read, recorded or not.
    pub traces: usize,
}

impl Recording {
    /// Calls in all the cases.
    pub fn calls(&self) -> usize {
        self.cases.iter().map(|c| c.expected.len()).sum()
    }
}

#[derive(Debug, thiserror::Error)]
pub enum RecordError {
    #[error(
        "{path} exists; a fixture may hold edits, so it is not replaced: give --force to \
         replace it, or write elsewhere with -o"
    )]
    Exists { path: String },
    #[error("cannot write {path}")]
    Write { path: String, source: io::Error },
}

/// Reads every input as `replay` does and records one case per trace, user
/// text or attribute value (`join`). `pipeline` finds the calls; it needs
/// no cases.
pub fn record(
    sources: &[Source],
    pipeline: &Pipeline,
    read: &ReadOptions,
    join: &RecordJoin,
    progress: impl FnMut(Progress),
) -> Recording {
    let evaluator = pipeline.evaluator();
    let mut keys = evaluator.join_keys();
    if let RecordJoin::Match(k) = join {
        keys.push(k.clone());
    }
    let projection = pipeline.extractor().projection(keys);
    let session = matches!(join, RecordJoin::Match(k) if evaluator.session_keys().contains(k));
    let mut builder = Builder::new(join, session);
    // Calls earlier traces left open, as replay counts them.
    let mut carry = Carry::handing_back();
    let (rejected, _stats) = stream_traces(
        sources,
        read,
        &projection,
        progress,
        |traces| -> Vec<(Seen, Option<Left>)> {
            traces
                .into_iter()
                .map(|t| {
                    let (s, open) = seen(pipeline, join, &t, &[]);
                    (s, Left::of(open, || t))
                })
                .collect()
        },
        |batch, spent| {
            for (s, left) in batch {
                for s in carry.settle(s, left, |t, carried| seen(pipeline, join, t, carried)) {
                    s.warnings.iter().for_each(super::print_warning);
                    builder.add(s);
                }
            }
            spent.append(&mut carry.spent());
        },
    );
    for s in carry.finish() {
        s.warnings.iter().for_each(super::print_warning);
        builder.add(s);
    }
    let traces = builder.traces;
    let (cases, notes) = builder.finish();
    Recording {
        cases,
        rejected,
        notes,
        traces,
    }
}

/// What a recording keeps of one trace.
#[derive(Debug)]
struct Seen {
    trace_id: TraceId,
    start: u64,
    /// Its agent's name (the first agent run's), else its root span's.
    name: Option<String>,
    /// The user text or attribute value the join reads, when present.
    key: Option<String>,
    /// Each call with its start time, by start time.
    calls: Vec<(u64, RecordedCall)>,
    /// What assembling the trace found amiss, to print.
    warnings: Vec<Warning>,
}

fn seen(
    pipeline: &Pipeline,
    join: &RecordJoin,
    t: &Trace,
    carried: &[OpenAsk],
) -> (Seen, Option<Box<Open>>) {
    let (result, runs, open) = pipeline.run_carried(t, carried);
    let name = runs
        .first()
        .map(|r| r.name.clone())
        .or_else(|| t.roots().next().map(|i| t.spans[i].span.name().to_string()));
    let key = match join {
        RecordJoin::TraceId => None,
        RecordJoin::UserText => turn_text_of(t).filter(|s| !normalize_text(s).is_empty()),
        RecordJoin::Match(k) => attr_text(t, k),
    };
    let calls = result
        .calls
        .iter()
        .map(|c| {
            let call = RecordedCall {
                name: c.name.clone(),
                // `null` reads back as no arguments; say so plainly. Real
                // `$` keys must not read back as argument matchers.
                args: c
                    .args
                    .value()
                    .cloned()
                    .filter(|a| !a.is_null())
                    .map(matchers::escape_literals),
            };
            (c.start_time_unix_nano, call)
        })
        .collect();
    let seen = Seen {
        trace_id: t.id,
        start: t.start_time(),
        name,
        key,
        calls,
        warnings: result.assembly_warnings,
    };
    (seen, open)
}

/// The first value of attribute `key` on a span (in start order) or its
/// resource, as a fixture's `match` writes it. MLflow's JSON-encoded strings
/// are decoded, as a `match` compares them.
fn attr_text(t: &Trace, key: &str) -> Option<String> {
    let text = |v: Val<'_>| -> Option<String> {
        match v {
            Val::Str(s) if s.starts_with('"') => {
                Some(serde_json::from_str::<String>(s).unwrap_or_else(|_| s.to_string()))
            }
            Val::Str(s) => Some(s.to_string()),
            Val::Int(i) => Some(i.to_string()),
            Val::Double(d) => Some(d.to_string()),
            Val::Bool(b) => Some(b.to_string()),
            _ => None,
        }
        .filter(|s| !s.is_empty())
    };
    t.spans.iter().find_map(|s| {
        s.span
            .attr(key)
            .and_then(text)
            .or_else(|| find_attr(&s.resource.attributes, key).and_then(text))
    })
}

/// A case being recorded: its first trace, and for a session all of them.
struct Pending {
    id: String,
    key: RecordedKey,
    members: Vec<Seen>,
}

/// Folds traces into cases, in the order they are read.
struct Builder<'a> {
    join: &'a RecordJoin,
    /// `join` is a `match` on a session key: traces sharing a value are one
    /// case, as replay scores them.
    session: bool,
    cases: Vec<Pending>,
    /// Case index by the normalized text or the value.
    by_key: HashMap<String, usize>,
    ids: HashSet<String>,
    notes: Vec<String>,
    traces: usize,
}

impl<'a> Builder<'a> {
    fn new(join: &'a RecordJoin, session: bool) -> Self {
        Builder {
            join,
            session,
            cases: Vec::new(),
            by_key: HashMap::new(),
            ids: HashSet::new(),
            notes: Vec::new(),
            traces: 0,
        }
    }

    fn add(&mut self, mut s: Seen) {
        self.traces += 1;
        let (key, base, lookup) = match (self.join, s.key.take()) {
            (RecordJoin::TraceId, _) => {
                let mut base = short_id(s.trace_id);
                if let Some(name) = s.name.as_deref().map(|n| slug(n, 40)) {
                    if !name.is_empty() {
                        base = format!("{base}-{name}");
                    }
                }
                (RecordedKey::TraceId(s.trace_id), base, None)
            }
            (RecordJoin::UserText, Some(text)) => {
                let normalized = normalize_text(&text);
                let base = Some(slug(&normalized, 40))
                    .filter(|b| !b.is_empty())
                    .unwrap_or_else(|| short_id(s.trace_id));
                (RecordedKey::UserText(text), base, Some(normalized))
            }
            (RecordJoin::Match(k), Some(value)) => {
                let key = RecordedKey::Match {
                    key: k.clone(),
                    value: value.clone(),
                };
                (key, value.clone(), Some(value))
            }
            (RecordJoin::UserText, None) => {
                self.skip(&s, "has no user text (--join user_text)");
                return;
            }
            (RecordJoin::Match(k), None) => {
                self.skip(&s, &format!("has no attribute `{k}` (--join match:{k})"));
                return;
            }
        };
        if let Some(lookup) = lookup {
            if let Some(&at) = self.by_key.get(&lookup) {
                let case = &mut self.cases[at];
                if self.session {
                    case.members.push(s);
                } else {
                    let first = case.members.first().map(|m| m.trace_id);
                    let what = match self.join {
                        RecordJoin::Match(k) => format!("`{k}`"),
                        _ => "user text".to_string(),
                    };
                    self.notes.push(format!(
                        "trace {} has the same {what} as trace {} (case `{}`): not recorded, the \
                         first is kept",
                        s.trace_id,
                        first.map(|f| f.to_string()).unwrap_or_default(),
                        case.id
                    ));
                }
                return;
            }
            self.by_key.insert(lookup, self.cases.len());
        }
        let id = self.unique(base);
        self.cases.push(Pending {
            id,
            key,
            members: vec![s],
        });
    }

    fn skip(&mut self, s: &Seen, why: &str) {
        self.notes
            .push(format!("trace {} {why}: not recorded", s.trace_id));
    }

    /// `base`, or `base-2`, `base-3`, ... if taken.
    fn unique(&mut self, base: String) -> String {
        let id = if self.ids.contains(&base) {
            (2..)
                .map(|n| format!("{base}-{n}"))
                .find(|c| !self.ids.contains(c))
                .unwrap_or_default()
        } else {
            base
        };
        self.ids.insert(id.clone());
        id
    }

    /// The cases; a session's calls are those of all its traces in time
    /// order, as replay scores a session.
    fn finish(mut self) -> (Vec<RecordedCase>, Vec<String>) {
        let mut cases = Vec::with_capacity(self.cases.len());
        for mut p in self.cases {
            p.members.sort_by_key(|m| (m.start, m.trace_id));
            if p.members.len() > 1 {
                if let RecordedKey::Match { key, value } = &p.key {
                    self.notes.push(format!(
                        "case `{}` covers the {} traces of session {key}={value}",
                        p.id,
                        p.members.len()
                    ));
                }
            }
            let traces = p.members.iter().map(|m| m.trace_id).collect();
            let mut calls: Vec<(u64, RecordedCall)> =
                p.members.into_iter().flat_map(|m| m.calls).collect();
            // Stable: calls that start together keep their trace's order.
            calls.sort_by_key(|(start, _)| *start);
            cases.push(RecordedCase {
                id: p.id,
                key: p.key,
                expected: calls.into_iter().map(|(_, c)| c).collect(),
                traces,
                threshold: None,
            });
        }
        (cases, self.notes)
    }
}

/// The first 8 hex digits of a trace id.
fn short_id(id: TraceId) -> String {
    let hex = id.to_string();
    hex.get(..8).unwrap_or(&hex).to_string()
}

/// `s` as a readable id part: letters, digits and `_` kept, every other run
/// of characters one `-`, at most `max` characters.
fn slug(s: &str, max: usize) -> String {
    let mut out = String::new();
    let (mut len, mut gap) = (0, false);
    for c in s.chars() {
        if !(c.is_alphanumeric() || c == '_') {
            gap = true;
            continue;
        }
        let dash = gap && len > 0;
        if len + usize::from(dash) + 1 > max {
            break;
        }
        if dash {
            out.push('-');
            len += 1;
        }
        out.push(c);
        len += 1;
        gap = false;
    }
    out
}

/// A case as a fixture line writes it (docs/fixtures.md).
#[derive(Serialize)]
struct Line<'a> {
    id: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    trace_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    user_text: Option<&'a str>,
    #[serde(rename = "match", skip_serializing_if = "Option::is_none")]
    match_: Option<BTreeMap<&'a str, &'a str>>,
    expected_tools: Vec<Tool<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    threshold: Option<f64>,
}

/// An expected call: a name alone when the call had no arguments.
#[derive(Serialize)]
#[serde(untagged)]
enum Tool<'a> {
    Name(&'a str),
    Call { name: &'a str, args: &'a Value },
}

/// Writes `cases` as JSONL, one case per line.
pub fn write_jsonl(cases: &[RecordedCase], out: &mut dyn Write) -> io::Result<()> {
    for c in cases {
        let mut line = Line {
            id: &c.id,
            trace_id: None,
            user_text: None,
            match_: None,
            expected_tools: c
                .expected
                .iter()
                .map(|t| match &t.args {
                    Some(args) => Tool::Call {
                        name: &t.name,
                        args,
                    },
                    None => Tool::Name(&t.name),
                })
                .collect(),
            threshold: c.threshold,
        };
        match &c.key {
            RecordedKey::TraceId(id) => line.trace_id = Some(id.to_string()),
            RecordedKey::UserText(t) => line.user_text = Some(t),
            RecordedKey::Match { key, value } => {
                line.match_ = Some(BTreeMap::from([(key.as_str(), value.as_str())]))
            }
        }
        serde_json::to_writer(&mut *out, &line)?;
        out.write_all(b"\n")?;
    }
    Ok(())
}

/// Fails when `path` exists (a file, or a link even to nothing): an
/// existing fixture is replaced only when asked.
pub fn check_new(path: &Path) -> Result<(), RecordError> {
    if fs::symlink_metadata(path).is_ok() {
        return Err(RecordError::Exists {
            path: path.display().to_string(),
        });
    }
    Ok(())
}

/// Writes `cases` to `path` whole or not at all: to a new file beside it,
/// then moved into place. An existing `path` is replaced only with
/// `overwrite`.
pub fn write_file(path: &Path, cases: &[RecordedCase], overwrite: bool) -> Result<(), RecordError> {
    let failed = |source: io::Error| RecordError::Write {
        path: path.display().to_string(),
        source,
    };
    if !overwrite {
        check_new(path)?;
    }
    let name = path.file_name().ok_or_else(|| {
        failed(io::Error::new(
            io::ErrorKind::InvalidInput,
            "not a file name",
        ))
    })?;
    let dir = path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let tmp = dir.join(format!(
        ".{}.{}.tmp",
        name.to_string_lossy(),
        std::process::id()
    ));
    let written = File::options()
        .write(true)
        .create_new(true)
        .open(&tmp)
        .and_then(|f| {
            let mut w = BufWriter::new(f);
            write_jsonl(cases, &mut w)?;
            w.into_inner().map_err(|e| e.into_error())?.sync_all()
        });
    if let Err(e) = written {
        let _ = fs::remove_file(&tmp);
        return Err(failed(e));
    }
    let placed = if overwrite {
        fs::rename(&tmp, path)
    } else {
        // A link fails if `path` appeared while the traces were read: no
        // file made meanwhile is replaced.
        fs::hard_link(&tmp, path).or_else(|e| match e.kind() {
            io::ErrorKind::AlreadyExists => Err(e),
            // A file system without hard links: checked, then moved.
            _ => check_new(path)
                .map_err(|_| e)
                .and_then(|()| fs::rename(&tmp, path)),
        })
    };
    let _ = fs::remove_file(&tmp);
    placed.map_err(|e| match e.kind() {
        io::ErrorKind::AlreadyExists => RecordError::Exists {
            path: path.display().to_string(),
        },
        _ => failed(e),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn trace_id(first: u8) -> TraceId {
        let mut id = [0x11; 16];
        id[0] = first;
        TraceId(id)
    }

    fn trace_seen(
        first: u8,
        start: u64,
        key: Option<&str>,
        calls: &[(&str, Option<Value>)],
    ) -> Seen {
        Seen {
            trace_id: trace_id(first),
            start,
            name: Some("invoke_agent weather agent".into()),
            key: key.map(String::from),
            calls: calls
                .iter()
                .enumerate()
                .map(|(i, (n, a))| {
                    let call = RecordedCall {
                        name: n.to_string(),
                        args: a.clone(),
                    };
                    (start + i as u64, call)
                })
                .collect(),
            warnings: Vec::new(),
        }
    }

    #[test]
    fn joins_parse() {
        assert_eq!("trace_id".parse(), Ok(RecordJoin::TraceId));
        assert_eq!("user_text".parse(), Ok(RecordJoin::UserText));
        assert_eq!(
            "match:session.id".parse(),
            Ok(RecordJoin::Match("session.id".into()))
        );
        assert!("match:".parse::<RecordJoin>().is_err());
        assert!("trace".parse::<RecordJoin>().is_err());
    }

    #[test]
    fn slugs_are_short_and_plain() {
        assert_eq!(
            slug("invoke_agent weather agent", 40),
            "invoke_agent-weather-agent"
        );
        assert_eq!(slug("  what's the weather?  ", 40), "what-s-the-weather");
        assert_eq!(slug("abc def", 4), "abc");
        assert_eq!(slug("???", 40), "");
    }

    #[test]
    fn ids_name_the_trace_and_repeat_with_a_suffix() {
        let join = RecordJoin::TraceId;
        let mut b = Builder::new(&join, false);
        b.add(trace_seen(0xab, 1, None, &[("get_weather", None)]));
        // Same first 8 hex digits, same name.
        b.add(trace_seen(0xab, 2, None, &[]));
        b.add(trace_seen(0xab, 3, None, &[]));
        let (cases, notes) = b.finish();
        let ids: Vec<&str> = cases.iter().map(|c| c.id.as_str()).collect();
        assert_eq!(
            ids,
            [
                "ab111111-invoke_agent-weather-agent",
                "ab111111-invoke_agent-weather-agent-2",
                "ab111111-invoke_agent-weather-agent-3"
            ]
        );
        assert!(notes.is_empty());
    }

    #[test]
    fn user_text_keeps_the_first_and_skips_traces_without() {
        let join = RecordJoin::UserText;
        let mut b = Builder::new(&join, false);
        b.add(trace_seen(1, 1, Some("Weather in  Paris?"), &[("a", None)]));
        b.add(trace_seen(2, 2, Some("weather in paris?"), &[("b", None)]));
        b.add(trace_seen(3, 3, None, &[("c", None)]));
        let (cases, notes) = b.finish();
        assert_eq!(cases.len(), 1);
        assert_eq!(cases[0].id, "weather-in-paris");
        assert_eq!(
            cases[0].key,
            RecordedKey::UserText("Weather in  Paris?".into())
        );
        assert_eq!(cases[0].expected[0].name, "a");
        assert_eq!(notes.len(), 2, "{notes:?}");
        assert!(notes[0].contains("same user text"), "{}", notes[0]);
        assert!(notes[1].contains("has no user text"), "{}", notes[1]);
    }

    #[test]
    fn a_session_key_merges_its_traces_in_time_order() {
        let join = RecordJoin::Match("session.id".into());
        let mut b = Builder::new(&join, true);
        // The later turn is read first.
        b.add(trace_seen(2, 100, Some("s1"), &[("second", None)]));
        b.add(trace_seen(1, 10, Some("s1"), &[("first", None)]));
        b.add(trace_seen(3, 50, Some("s2"), &[]));
        let (cases, notes) = b.finish();
        let names: Vec<&str> = cases[0].expected.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(names, ["first", "second"]);
        assert_eq!(cases[0].traces, [trace_id(1), trace_id(2)]);
        assert_eq!((cases[0].id.as_str(), cases[1].id.as_str()), ("s1", "s2"));
        assert!(notes[0].contains("covers the 2 traces"), "{notes:?}");
    }

    #[test]
    fn lines_name_calls_without_args_alone() {
        let cases = [RecordedCase {
            id: "x".into(),
            key: RecordedKey::Match {
                key: "k".into(),
                value: "v".into(),
            },
            expected: vec![
                RecordedCall {
                    name: "a".into(),
                    args: Some(serde_json::json!({"z": 1, "b": 2})),
                },
                RecordedCall {
                    name: "b".into(),
                    args: None,
                },
            ],
            traces: vec![trace_id(1)],
            threshold: None,
        }];
        let mut out = Vec::new();
        write_jsonl(&cases, &mut out).unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "{\"id\":\"x\",\"match\":{\"k\":\"v\"},\"expected_tools\":[{\"name\":\"a\",\"args\":{\"b\":2,\"z\":1}},\"b\"]}\n"
        );
    }
}
