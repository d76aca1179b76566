//! toolscore: scores AI agents on tool correctness from OpenTelemetry traces.
//!
//! Data flows `ingest` (bytes -> OTLP requests) -> `assemble` (spans -> traces)
//! -> `extract` (traces -> tool calls) -> `expect` (fixtures, joined to traces)
//! -> `evaluate` (the core: one per-trace [`evaluate::Pipeline`], metrics from
//! `score`) -> `report` (table, JSONL, JUnit, HTML). The drivers call the
//! pipeline: `replay` and `inspect` for trace files, `serve` for OTLP
//! receivers; `cases` scores tool-call cases given as data.

pub mod assemble;
pub mod cases;
pub mod cli;
pub mod config;
pub mod evaluate;
pub mod expect;
pub mod extract;
#[doc(hidden)]
pub mod fake;
pub mod ingest;
pub mod inspect;
pub mod judge;
pub mod names;
pub mod parallel;
pub mod record;
pub mod replay;
pub mod report;
pub mod score;
pub mod serve;
pub mod store;
pub mod value;
