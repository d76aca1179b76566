//! `toolscore._native`: what the Python package (python/toolscore) calls.
//! The package shapes arguments and results; this module runs the library
//! with the GIL released, and calls back into Python only for the user's
//! own metrics.

mod spans;

use std::ffi::OsString;
use std::sync::Arc;

use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use serde_json::json;

use toolscore::cli::embed::{self, Expected, Request};
use toolscore::evaluate::CustomMetric;
use toolscore::expect::Call;
use toolscore::ingest::files::Source;
use toolscore::score::{Metric, MetricInput, MetricOptions, Outcome};

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// The threshold of a custom metric when neither its spec, the run nor the
/// function sets one, as for `tool_correctness`.
const CUSTOM_THRESHOLD: f64 = 0.5;

/// Runs the command line (`argv[0]` is the program name) and returns its
/// exit code.
#[pyfunction]
fn run_cli(py: Python<'_>, argv: Vec<OsString>) -> u8 {
    py.detach(|| toolscore::cli::run(argv))
}

/// Evaluates; returns (JSONL rows, table, exit code, notes). `expected` is
/// (kind, label, text) with kind `none`, `path` (text is the path), `text`
/// (fixture text) or `every` (the tools every trace should call).
#[pyfunction]
#[pyo3(signature = (flags, sources, expected, custom))]
fn evaluate(
    py: Python<'_>,
    flags: Vec<String>,
    sources: Vec<(String, Vec<u8>)>,
    expected: (String, String, String),
    custom: Vec<(String, Option<f64>, Py<PyAny>)>,
) -> PyResult<(String, String, u8, Vec<String>)> {
    let (kind, label, text) = expected;
    let expected = match kind.as_str() {
        "none" => Expected::None,
        "path" => Expected::Path(text.into()),
        "text" => Expected::Text { label, text },
        "every" => Expected::Every { label, text },
        other => {
            return Err(PyTypeError::new_err(format!(
                "unknown expected kind {other}"
            )))
        }
    };
    let request = Request {
        sources: memory(sources),
        flags,
        expected,
        custom: custom.into_iter().map(custom_metric).collect(),
    };
    let done = py
        .detach(|| embed::evaluate(request))
        .map_err(value_error)?;
    Ok((done.jsonl, done.table, done.exit_code, done.notes))
}

/// `inspect --format jsonl`'s rows, as text.
#[pyfunction]
fn inspect(
    py: Python<'_>,
    flags: Vec<String>,
    sources: Vec<(String, Vec<u8>)>,
) -> PyResult<String> {
    let sources = memory(sources);
    py.detach(|| embed::inspect(sources, &flags))
        .map_err(value_error)
}

/// SDK spans (`ReadableSpan`s) as the bytes of one OTLP protobuf request.
#[pyfunction]
fn spans_to_otlp<'py>(
    py: Python<'py>,
    spans: &Bound<'py, pyo3::types::PyList>,
) -> PyResult<Bound<'py, pyo3::types::PyBytes>> {
    let bytes = spans::to_otlp(spans)?;
    Ok(pyo3::types::PyBytes::new(py, &bytes))
}

fn memory(sources: Vec<(String, Vec<u8>)>) -> Vec<Source> {
    sources
        .into_iter()
        .map(|(label, data)| Source::Memory {
            label,
            data: Arc::from(data),
        })
        .collect()
}

/// The library's error, with its causes, as the command line prints it.
fn value_error(e: anyhow::Error) -> PyErr {
    PyValueError::new_err(format!("{e:#}"))
}

/// A metric whose score a Python function gives. `adapter(calls_json,
/// case_json)` (python/toolscore/_api.py) calls the user's function and
/// returns `(score, reason)`; `threshold` is the function's own, which a
/// spec's or the run's overrides.
fn custom_metric((name, threshold, adapter): (String, Option<f64>, Py<PyAny>)) -> CustomMetric {
    let adapter = Arc::new(adapter);
    let metric_name = name.clone();
    CustomMetric {
        name,
        build: Arc::new(move |opts: &MetricOptions| {
            Box::new(PyMetric {
                name: metric_name.clone(),
                threshold: opts.threshold.or(threshold).unwrap_or(CUSTOM_THRESHOLD),
                adapter: Arc::clone(&adapter),
            }) as Box<dyn Metric>
        }),
    }
}

struct PyMetric {
    name: String,
    threshold: f64,
    adapter: Arc<Py<PyAny>>,
}

impl PyMetric {
    fn call(&self, calls: String, case: String) -> Outcome {
        Python::attach(|py| {
            let got = self
                .adapter
                .call1(py, (calls, case))
                .and_then(|r| r.extract::<(f64, String)>(py));
            match got {
                Ok((score, reason)) => {
                    Outcome::scored(score, Some(score >= self.threshold), reason)
                }
                Err(e) => Outcome::error(format!("{} raised {e}", self.name)),
            }
        })
    }
}

impl Metric for PyMetric {
    fn name(&self) -> &str {
        &self.name
    }

    fn threshold(&self) -> Option<f64> {
        Some(self.threshold)
    }

    /// Without a trace (`toolscore score`): the calls as compared.
    fn score(&self, called: &[Call], expected: &[Call]) -> Outcome {
        let calls = serde_json::to_string(called).unwrap_or_else(|_| "[]".into());
        let case = json!({"id": null, "expected_tools": expected}).to_string();
        self.call(calls, case)
    }

    fn evaluate(&self, input: &MetricInput<'_>) -> Outcome {
        let case = json!({
            "id": input.case.id,
            "expected_tools": input.expected,
            "threshold": input.case.threshold,
        });
        self.call(toolscore::report::calls_json(input.calls), case.to_string())
    }
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add_function(wrap_pyfunction!(run_cli, m)?)?;
    m.add_function(wrap_pyfunction!(evaluate, m)?)?;
    m.add_function(wrap_pyfunction!(inspect, m)?)?;
    m.add_function(wrap_pyfunction!(spans_to_otlp, m)?)?;
    Ok(())
}
