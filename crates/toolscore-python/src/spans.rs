//! OpenTelemetry SDK spans (`ReadableSpan`) as one OTLP protobuf request,
//! read straight from the Python objects: no exporter package, no JSON in
//! between, and the decoder then reads them like any export.

use std::collections::HashMap;

use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::{
    any_value, AnyValue, ArrayValue, InstrumentationScope, KeyValue, KeyValueList,
};
use opentelemetry_proto::tonic::resource::v1::Resource;
use opentelemetry_proto::tonic::trace::v1::{span, ResourceSpans, ScopeSpans, Span, Status};
use prost::Message;
use pyo3::exceptions::PyTypeError;
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyBytes, PyFloat, PyInt, PyList, PyMapping, PyString, PyTuple};

/// Nesting kept in attribute values (lists of mappings of lists ...); deeper
/// values are written as their `str()`.
const MAX_DEPTH: usize = 16;

/// Encodes `spans` as one ExportTraceServiceRequest, grouped by resource
/// (object identity) and instrumentation scope (name, version).
pub fn to_otlp(spans: &Bound<'_, PyList>) -> PyResult<Vec<u8>> {
    let py = spans.py();
    let mut resources: Vec<ResourceSpans> = Vec::new();
    // Resource object -> its index; (resource index, scope) -> scope index.
    let mut by_resource: HashMap<usize, usize> = HashMap::new();
    let mut by_scope: HashMap<(usize, String, String), usize> = HashMap::new();
    for (i, s) in spans.iter().enumerate() {
        let at = |e: PyErr| PyTypeError::new_err(format!("traces: span {i}: {e}"));
        let resource = s.getattr(intern!(py, "resource")).map_err(at)?;
        let r = *by_resource
            .entry(resource.as_ptr() as usize)
            .or_insert_with(|| {
                resources.push(ResourceSpans::default());
                resources.len() - 1
            });
        if resources[r].resource.is_none() {
            let attributes = match resource.getattr(intern!(py, "attributes")) {
                Ok(a) if !a.is_none() => key_values(&a, 0).map_err(at)?,
                _ => Vec::new(),
            };
            resources[r].resource = Some(Resource {
                attributes,
                ..Resource::default()
            });
        }
        let (name, version) = scope_of(&s).map_err(at)?;
        let key = (r, name, version);
        let sc = match by_scope.get(&key) {
            Some(&sc) => sc,
            None => {
                resources[r].scope_spans.push(ScopeSpans {
                    scope: Some(InstrumentationScope {
                        name: key.1.clone(),
                        version: key.2.clone(),
                        ..InstrumentationScope::default()
                    }),
                    ..ScopeSpans::default()
                });
                let sc = resources[r].scope_spans.len() - 1;
                by_scope.insert(key, sc);
                sc
            }
        };
        let span = span_of(&s).map_err(at)?;
        resources[r].scope_spans[sc].spans.push(span);
    }
    Ok(ExportTraceServiceRequest {
        resource_spans: resources,
    }
    .encode_to_vec())
}

fn scope_of(s: &Bound<'_, PyAny>) -> PyResult<(String, String)> {
    let py = s.py();
    let scope = s.getattr(intern!(py, "instrumentation_scope"))?;
    if scope.is_none() {
        return Ok((String::new(), String::new()));
    }
    let text = |name: &Bound<'_, PyString>| -> PyResult<String> {
        let v = scope.getattr(name)?;
        Ok(if v.is_none() {
            String::new()
        } else {
            v.extract()?
        })
    };
    Ok((text(intern!(py, "name"))?, text(intern!(py, "version"))?))
}

fn span_of(s: &Bound<'_, PyAny>) -> PyResult<Span> {
    let py = s.py();
    let ctx = s.getattr(intern!(py, "context"))?;
    let trace_id: u128 = ctx.getattr(intern!(py, "trace_id"))?.extract()?;
    let span_id: u64 = ctx.getattr(intern!(py, "span_id"))?.extract()?;
    let parent = s.getattr(intern!(py, "parent"))?;
    let parent_span_id = if parent.is_none() {
        Vec::new()
    } else {
        let id: u64 = parent.getattr(intern!(py, "span_id"))?.extract()?;
        id.to_be_bytes().to_vec()
    };
    let time = |name: &Bound<'_, PyString>| -> PyResult<u64> {
        let v = s.getattr(name)?;
        Ok(if v.is_none() { 0 } else { v.extract()? })
    };
    let start = time(intern!(py, "start_time"))?;
    let end = time(intern!(py, "end_time"))?;
    // The SDK's SpanKind counts from INTERNAL = 0; OTLP's from UNSPECIFIED = 0.
    let kind = s.getattr(intern!(py, "kind"))?;
    let kind = if kind.is_none() {
        0
    } else {
        kind.getattr(intern!(py, "value"))?.extract::<i32>()? + 1
    };
    let mut events = Vec::new();
    for e in s.getattr(intern!(py, "events"))?.try_iter()? {
        let e = e?;
        events.push(span::Event {
            name: e.getattr(intern!(py, "name"))?.extract()?,
            time_unix_nano: e.getattr(intern!(py, "timestamp"))?.extract().unwrap_or(0),
            attributes: key_values(&e.getattr(intern!(py, "attributes"))?, 0)?,
            ..span::Event::default()
        });
    }
    Ok(Span {
        trace_id: trace_id.to_be_bytes().to_vec(),
        span_id: span_id.to_be_bytes().to_vec(),
        parent_span_id,
        name: s.getattr(intern!(py, "name"))?.extract()?,
        kind,
        start_time_unix_nano: start,
        end_time_unix_nano: if end == 0 { start } else { end },
        attributes: key_values(&s.getattr(intern!(py, "attributes"))?, 0)?,
        events,
        status: status_of(s)?,
        ..Span::default()
    })
}

/// StatusCode: UNSET 0, OK 1, ERROR 2, as in OTLP.
fn status_of(s: &Bound<'_, PyAny>) -> PyResult<Option<Status>> {
    let py = s.py();
    let status = s.getattr(intern!(py, "status"))?;
    if status.is_none() {
        return Ok(None);
    }
    let code: i32 = status
        .getattr(intern!(py, "status_code"))?
        .getattr(intern!(py, "value"))?
        .extract()?;
    let description = status.getattr(intern!(py, "description"))?;
    Ok((code != 0).then(|| Status {
        code,
        message: description.extract().unwrap_or_default(),
    }))
}

/// A mapping's items as key/values; `None` or empty gives none.
fn key_values(attrs: &Bound<'_, PyAny>, depth: usize) -> PyResult<Vec<KeyValue>> {
    if attrs.is_none() {
        return Ok(Vec::new());
    }
    let items = attrs.call_method0(intern!(attrs.py(), "items"))?;
    let mut out = Vec::new();
    for item in items.try_iter()? {
        let (key, value): (Bound<'_, PyAny>, Bound<'_, PyAny>) = item?.extract()?;
        out.push(KeyValue {
            key: key.str()?.to_string(),
            value: Some(any_value(&value, depth)?),
            ..KeyValue::default()
        });
    }
    Ok(out)
}

fn any_value(v: &Bound<'_, PyAny>, depth: usize) -> PyResult<AnyValue> {
    use any_value::Value;
    let value = if let Ok(b) = v.cast::<PyBool>() {
        Value::BoolValue(b.is_true())
    } else if v.is_instance_of::<PyInt>() {
        match v.extract::<i64>() {
            Ok(i) => Value::IntValue(i),
            // Beyond 64 bits: the digits, as text.
            Err(_) => Value::StringValue(v.str()?.to_string()),
        }
    } else if let Ok(f) = v.cast::<PyFloat>() {
        Value::DoubleValue(f.value())
    } else if let Ok(s) = v.cast::<PyString>() {
        Value::StringValue(s.to_string_lossy().into_owned())
    } else if let Ok(b) = v.cast::<PyBytes>() {
        Value::BytesValue(b.as_bytes().to_vec())
    } else if depth < MAX_DEPTH && v.cast::<PyMapping>().is_ok() {
        Value::KvlistValue(KeyValueList {
            values: key_values(v, depth + 1)?,
        })
    } else if depth < MAX_DEPTH && (v.is_instance_of::<PyList>() || v.is_instance_of::<PyTuple>()) {
        let mut values = Vec::new();
        for x in v.try_iter()? {
            values.push(any_value(&x?, depth + 1)?);
        }
        Value::ArrayValue(ArrayValue { values })
    } else {
        Value::StringValue(v.str()?.to_string_lossy().into_owned())
    };
    Ok(AnyValue { value: Some(value) })
}
