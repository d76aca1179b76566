"""OpenTelemetry SDK spans (`ReadableSpan`) as one OTLP/JSON request, so the
native decoder reads them like any export: no file, no exporter package."""

from __future__ import annotations

import base64
import json
import math
from typing import Any, Dict, List, Mapping, Sequence, Tuple


def is_span(x: Any) -> bool:
    """Whether `x` looks like an SDK `ReadableSpan` (duck-typed: the SDK is
    not a dependency of this package)."""
    return hasattr(x, "get_span_context") and hasattr(x, "attributes") and hasattr(x, "start_time")


def otlp_json(spans: Sequence[Any]) -> bytes:
    """One ExportTraceServiceRequest in OTLP/JSON, spans grouped by
    resource and instrumentation scope."""
    groups: Dict[int, Tuple[Any, Dict[Tuple[str, str], List[Dict[str, Any]]]]] = {}
    for s in spans:
        resource = getattr(s, "resource", None)
        _, scopes = groups.setdefault(id(resource), (resource, {}))
        scope = getattr(s, "instrumentation_scope", None)
        key = (getattr(scope, "name", "") or "", getattr(scope, "version", "") or "")
        scopes.setdefault(key, []).append(_span(s))
    request = {
        "resourceSpans": [
            {
                "resource": {"attributes": _attributes(getattr(resource, "attributes", None))},
                "scopeSpans": [
                    {"scope": {"name": name, "version": version}, "spans": items}
                    for (name, version), items in scopes.items()
                ],
            }
            for resource, scopes in groups.values()
        ]
    }
    return json.dumps(request, separators=(",", ":"), allow_nan=False).encode()


def _span(s: Any) -> Dict[str, Any]:
    ctx = s.get_span_context()
    out: Dict[str, Any] = {
        "traceId": format(ctx.trace_id, "032x"),
        "spanId": format(ctx.span_id, "016x"),
        "name": s.name,
        # The SDK's SpanKind counts from INTERNAL = 0; OTLP's from UNSPECIFIED = 0.
        "kind": s.kind.value + 1 if s.kind is not None else 0,
        "startTimeUnixNano": str(s.start_time or 0),
        "endTimeUnixNano": str(s.end_time or s.start_time or 0),
        "attributes": _attributes(s.attributes),
    }
    if s.parent is not None:
        out["parentSpanId"] = format(s.parent.span_id, "016x")
    if s.events:
        out["events"] = [
            {"name": e.name, "timeUnixNano": str(e.timestamp or 0), "attributes": _attributes(e.attributes)}
            for e in s.events
        ]
    status = s.status
    if status is not None and status.status_code.value:
        # StatusCode: UNSET 0, OK 1, ERROR 2, as in OTLP.
        out["status"] = {"code": status.status_code.value, "message": status.description or ""}
    return out


def _attributes(attrs: Mapping[str, Any] | None) -> List[Dict[str, Any]]:
    if not attrs:
        return []
    return [{"key": str(k), "value": _value(v)} for k, v in attrs.items()]


def _value(v: Any) -> Dict[str, Any]:
    if isinstance(v, bool):
        return {"boolValue": v}
    if isinstance(v, int):
        return {"intValue": str(v)}
    if isinstance(v, float):
        # proto3 JSON spells the non-finite doubles as strings.
        if math.isnan(v):
            return {"doubleValue": "NaN"}
        if math.isinf(v):
            return {"doubleValue": "Infinity" if v > 0 else "-Infinity"}
        return {"doubleValue": v}
    if isinstance(v, str):
        return {"stringValue": v}
    if isinstance(v, (bytes, bytearray)):
        return {"bytesValue": base64.b64encode(bytes(v)).decode()}
    if isinstance(v, Mapping):
        return {"kvlistValue": {"values": _attributes(v)}}
    if isinstance(v, (list, tuple)):
        return {"arrayValue": {"values": [_value(x) for x in v]}}
    return {"stringValue": str(v)}
