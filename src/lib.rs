//! toolscore: scores AI agents on tool correctness from OpenTelemetry traces.
//!
//! Data flows `ingest` (bytes -> OTLP requests) -> `assemble` (spans -> traces)
//! -> `extract` (traces -> tool calls) -> `expect` (fixtures, joined to traces)
//! -> `score` (metrics) -> `report` (table, JSONL, JUnit). `replay` wires the
//! stages for trace files.

pub mod assemble;
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
pub mod replay;
pub mod report;
pub mod score;
pub mod serve;
pub mod value;
