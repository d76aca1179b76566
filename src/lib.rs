//! toolscore: scores AI agents on tool correctness from OpenTelemetry traces.
//!
//! Data flows `ingest` (bytes -> OTLP requests) -> `assemble` (spans -> traces)
//! -> `extract` (traces -> tool calls) -> `expect` (fixtures, joined to traces)
//! -> `evaluate` (the core: one per-trace [`evaluate::Pipeline`], metrics from
//! `score`) -> `report` (table, JSONL, JUnit, HTML). The drivers (`run`:
//! `replay`, `inspect`, `record`, `cases`; and `serve` for OTLP receivers)
//! build their run through one setup ([`run::Setup`]) and call the pipeline.

pub mod assemble;
pub mod calibrate;
pub mod cli;
pub mod config;
pub mod evaluate;
pub mod expect;
pub mod extract;
#[doc(hidden)]
pub mod fake;
pub mod ingest;
pub mod judge;
pub mod names;
pub mod parallel;
pub mod report;
pub mod run;
pub mod score;
pub mod serve;
mod short_bytes;
pub mod store;
pub mod value;
