"""toolscore: scores AI agents on tool correctness from OpenTelemetry traces.

The same engine as the `toolscore` command, in process:

    report = toolscore.evaluate("traces/", "expected.jsonl")
    assert report.passed, report.explain()

`evaluate` takes paths, OTLP request bytes or OpenTelemetry SDK spans;
`inspect` lists the tool calls found. With pytest, the `toolscore_spans`
fixture captures the spans a test makes (docs/python.md).
"""

from __future__ import annotations

from toolscore._api import Report, evaluate, inspect, metric, spans_to_otlp
from toolscore._native import __version__

__all__ = ["Report", "__version__", "evaluate", "inspect", "metric", "spans_to_otlp"]
