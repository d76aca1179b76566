//! The library's results as Python objects, built from the Rust values: a
//! report row's `serde_json::Value` as dicts and lists (keys in the order
//! the JSONL report writes them), and each call as the report's
//! `tools_called` entries write it.

use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};
use serde_json::Value;

use toolscore::extract::{CallArgs, CallResult, ToolCall};
use toolscore::report::{self, InspectRow, Report};

/// The report's rows by their `type` (`evaluation`, `case`,
/// `unmatched_trace`, `unmatched_case`, `rejected`, `summary`), each a list
/// of dicts in the JSONL report's order.
pub fn rows<'py>(py: Python<'py>, report: &Report) -> PyResult<Bound<'py, PyDict>> {
    let by_type = PyDict::new(py);
    let loads = py
        .import(intern!(py, "json"))?
        .getattr(intern!(py, "loads"))?;
    for row in report::rows(report) {
        let kind = row.value.get("type").and_then(Value::as_str).unwrap_or("");
        let obj = value(py, &row.value)?;
        if let Some(calls) = row.calls {
            // Last, as the JSONL row writes it.
            obj.set_item(intern!(py, "tools_called"), calls_with(py, &loads, calls)?)?;
        }
        match by_type.get_item(kind)? {
            Some(list) => list.cast_into::<PyList>()?.append(obj)?,
            None => by_type.set_item(kind, PyList::new(py, [obj])?)?,
        }
    }
    Ok(by_type)
}

/// Calls as the report's `tools_called` list.
pub fn calls<'py>(py: Python<'py>, calls: &[ToolCall]) -> PyResult<Bound<'py, PyList>> {
    let loads = py
        .import(intern!(py, "json"))?
        .getattr(intern!(py, "loads"))?;
    calls_with(py, &loads, calls)
}

fn calls_with<'py>(
    py: Python<'py>,
    loads: &Bound<'py, PyAny>,
    calls: &[ToolCall],
) -> PyResult<Bound<'py, PyList>> {
    let list = PyList::empty(py);
    for c in calls {
        list.append(call(py, loads, c)?)?;
    }
    Ok(list)
}

/// One trace's `inspect` row: the keys the JSONL row has, in its order.
pub fn inspect_row<'py>(py: Python<'py>, row: &InspectRow<'_>) -> PyResult<Bound<'py, PyDict>> {
    // Every field named: a field added to the row does not compile here
    // until it is converted.
    let InspectRow {
        agent_runs,
        available_tools,
        cases,
        orphans,
        request,
        retrievers,
        session,
        spans,
        tools,
        trace_id,
        warnings,
    } = row;
    let d = PyDict::new(py);
    d.set_item(
        intern!(py, "agent_runs"),
        pythonize::pythonize(py, agent_runs)?,
    )?;
    // The definitions themselves: the row's own `Serialize` writes each
    // from its remembered JSON text, which only a JSON writer can take.
    let offered: Vec<_> = available_tools.iter().collect();
    d.set_item(
        intern!(py, "available_tools"),
        pythonize::pythonize(py, &offered)?,
    )?;
    if let Some(c) = cases {
        d.set_item(intern!(py, "cases"), value(py, c)?)?;
    }
    d.set_item(intern!(py, "orphans"), orphans)?;
    d.set_item(intern!(py, "request"), request)?;
    if !retrievers.is_empty() {
        d.set_item(intern!(py, "retrievers"), calls(py, retrievers)?)?;
    }
    if let Some(s) = session {
        d.set_item(intern!(py, "session"), value(py, s)?)?;
    }
    d.set_item(intern!(py, "spans"), spans)?;
    d.set_item(intern!(py, "tools"), calls(py, tools)?)?;
    d.set_item(intern!(py, "trace_id"), trace_id)?;
    if !warnings.is_empty() {
        d.set_item(intern!(py, "warnings"), PyList::new(py, warnings.iter())?)?;
    }
    Ok(d)
}

/// A JSON value as Python's `json` module reads it: dicts keep the order of
/// the keys (serde_json's, as written), integers stay integers.
pub fn value<'py>(py: Python<'py>, v: &Value) -> PyResult<Bound<'py, PyAny>> {
    Ok(pythonize::pythonize(py, v)?)
}

/// One call as the JSONL report's `tools_called` entry writes it: the same
/// keys in the same order. Arguments and results kept as JSON text
/// are read by Python's `json.loads`, as a reader of the report reads them.
fn call<'py>(
    py: Python<'py>,
    loads: &Bound<'py, PyAny>,
    c: &ToolCall,
) -> PyResult<Bound<'py, PyDict>> {
    // Every field named, as `report::write_call` names them: a field added
    // to `ToolCall` does not compile here until it is converted or skipped.
    let ToolCall {
        name,
        args,
        result,
        status,
        error_message,
        error_type,
        span_id,
        start_time_unix_nano,
        depth,
        agent,
        retriever,
        convention,
        from,
        span_name,
        mcp_server,
        within: _,
        end_time_unix_nano: _,
        call_id: _,
    } = c;
    let d = PyDict::new(py);
    d.set_item(intern!(py, "name"), name)?;
    let args = match args {
        CallArgs::None => py.None().into_bound(py),
        CallArgs::Text(text) => loads.call1((&**text,))?,
        CallArgs::Value(v) | CallArgs::Ordered { value: v, .. } => value(py, v)?,
    };
    d.set_item(intern!(py, "args"), args)?;
    match result {
        Some(CallResult::Json(text)) => {
            d.set_item(intern!(py, "result"), loads.call1((&**text,))?)?
        }
        Some(CallResult::Value(v)) => d.set_item(intern!(py, "result"), value(py, v)?)?,
        None => {}
    }
    d.set_item(intern!(py, "status"), pythonize::pythonize(py, status)?)?;
    if let Some(m) = error_message {
        d.set_item(intern!(py, "error_message"), m)?;
    }
    if let Some(t) = error_type {
        d.set_item(intern!(py, "error_type"), t)?;
    }
    d.set_item(intern!(py, "span_id"), span_id.to_string())?;
    d.set_item(intern!(py, "start_time_unix_nano"), start_time_unix_nano)?;
    d.set_item(intern!(py, "depth"), depth)?;
    if let Some(a) = agent {
        d.set_item(intern!(py, "agent"), pythonize::pythonize(py, a)?)?;
    }
    if *retriever {
        d.set_item(intern!(py, "retriever"), true)?;
    }
    d.set_item(intern!(py, "convention"), convention)?;
    if let Some(f) = from {
        d.set_item(intern!(py, "from"), f)?;
    }
    if let Some(n) = span_name {
        d.set_item(intern!(py, "span_name"), n)?;
    }
    if let Some(m) = mcp_server {
        d.set_item(intern!(py, "mcp_server"), m)?;
    }
    Ok(d)
}
