//! `toolscore._native`: what the Python package (python/toolscore) calls.
//! The package shapes arguments and results; this module builds the run
//! from them as typed options (run.rs), runs the library with the GIL
//! released, hands the report back as Rust values converted to Python
//! objects on demand (convert.rs), and calls back into Python only for the
//! user's own metrics.

mod convert;
mod run;
mod spans;

use std::ffi::OsString;
use std::path::PathBuf;
use std::sync::Arc;

use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};
use serde_json::json;

use toolscore::evaluate::CustomMetric;
use toolscore::expect::Call;
use toolscore::ingest::files::Source;
use toolscore::score::{Metric, MetricInput, MetricOptions, Outcome};

use run::{Expected, Request};

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

/// A finished evaluation: the report as the library's values, turned into
/// Python objects when asked.
#[pyclass(frozen, module = "toolscore._native")]
struct Run {
    report: toolscore::report::Report,
    #[pyo3(get)]
    exit_code: u8,
    #[pyo3(get)]
    notes: Vec<String>,
    #[pyo3(get)]
    run_id: Option<String>,
}

#[pymethods]
impl Run {
    /// The rows `replay --format jsonl` writes, by type.
    fn rows<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        convert::rows(py, &self.report)
    }

    /// `replay`'s table.
    fn table(&self, py: Python<'_>) -> PyResult<String> {
        let mut out = Vec::new();
        py.detach(|| toolscore::report::write_table(&self.report, &mut out))
            .map_err(|e| PyValueError::new_err(format!("writing the table: {e}")))?;
        Ok(String::from_utf8_lossy(&out).into_owned())
    }
}

/// Evaluates as `toolscore replay` does. `expected` is (kind, label, text)
/// with kind `none`, `path` (text is the path), `text` (fixture text) or
/// `every` (the tools every trace should call); `metrics` name the metrics
/// in order, custom ones by the names in `custom`; `store` is where the run
/// is saved, `labels` saved with it, and `command` the call as the saved run
/// records it.
#[pyfunction]
#[pyo3(signature = (paths, sources, expected, metrics, config, custom, store, labels, command))]
#[allow(clippy::too_many_arguments)]
fn evaluate(
    py: Python<'_>,
    paths: Vec<PathBuf>,
    sources: Vec<(String, Vec<u8>)>,
    expected: (String, String, String),
    metrics: Vec<String>,
    config: Option<PathBuf>,
    custom: Vec<(String, Option<f64>, Py<PyAny>)>,
    store: Option<String>,
    labels: Vec<(String, String)>,
    command: String,
) -> PyResult<Run> {
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
        paths,
        sources: memory(sources),
        expected,
        metrics,
        config,
        custom: custom.into_iter().map(custom_metric).collect(),
        store: store.map(|s| (s, command)),
        labels,
    };
    let done = py.detach(|| run::evaluate(request)).map_err(value_error)?;
    Ok(Run {
        report: done.report,
        exit_code: done.exit_code,
        notes: done.notes,
        run_id: done.run_id,
    })
}

/// `inspect --format jsonl`'s rows, as dicts: each trace's, then the
/// rejected input's.
#[pyfunction]
fn inspect<'py>(
    py: Python<'py>,
    paths: Vec<PathBuf>,
    sources: Vec<(String, Vec<u8>)>,
    config: Option<PathBuf>,
) -> PyResult<Bound<'py, PyList>> {
    let sources = memory(sources);
    // Each row becomes its dict on the worker that built it, which takes
    // the GIL for just that.
    let (rows, rejected) = py
        .detach(|| {
            run::inspect(paths, sources, config, |row| {
                Python::attach(|py| convert::inspect_row(py, row).map(Bound::unbind))
            })
        })
        .map_err(value_error)?;
    let list = PyList::empty(py);
    for row in rows {
        list.append(row?)?;
    }
    for r in &rejected {
        list.append(convert::value(py, &toolscore::report::rejected_row(r))?)?;
    }
    Ok(list)
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

/// A metric whose score a Python function gives. `adapter(calls, case)`
/// (python/toolscore/_api.py) calls the user's function and returns
/// `(score, reason)`; `threshold` is the function's own, which a spec's or
/// the run's overrides.
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
    /// Calls the function with the Python objects `args` builds.
    fn call(
        &self,
        args: impl for<'py> FnOnce(Python<'py>) -> PyResult<(Bound<'py, PyAny>, Bound<'py, PyAny>)>,
    ) -> Outcome {
        Python::attach(|py| {
            let got = args(py)
                .and_then(|(calls, case)| self.adapter.call1(py, (calls, case)))
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
        let case = json!({"id": null, "expected_tools": expected});
        self.call(|py| {
            Ok((
                pythonize::pythonize(py, called)?,
                convert::value(py, &case)?,
            ))
        })
    }

    fn evaluate(&self, input: &MetricInput<'_>) -> Outcome {
        let case = json!({
            "id": input.case.id,
            "expected_tools": input.expected,
            "threshold": input.case.threshold,
        });
        self.call(|py| {
            Ok((
                convert::calls(py, input.calls)?.into_any(),
                convert::value(py, &case)?,
            ))
        })
    }
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add_class::<Run>()?;
    m.add_function(wrap_pyfunction!(run_cli, m)?)?;
    m.add_function(wrap_pyfunction!(evaluate, m)?)?;
    m.add_function(wrap_pyfunction!(inspect, m)?)?;
    m.add_function(wrap_pyfunction!(spans_to_otlp, m)?)?;
    Ok(())
}
