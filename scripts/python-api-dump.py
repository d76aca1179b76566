"""Dumps what the Python API returns over the repository's traces and
fixtures, for comparing two builds of the wheel: a refactor of the Python
module changes none of it.

    python scripts/python-api-dump.py REPO OUT.txt   (with the wheel installed)
    diff old.txt new.txt

Each result is written as its repr(): key order, int against float and
every value count. Runs the public API only: evaluate (paths, bytes, SDK
spans; fixtures, cases, expected tools; built-in and custom metrics),
Report's attributes, explain(), inspect, the pytest plugin's failure
message, and the messages of the errors raised.
"""

from __future__ import annotations

import glob
import json
import os
import sys
from typing import Any, Callable, List

import toolscore
from toolscore import pytest_plugin

REPO, OUT = sys.argv[1], sys.argv[2]
lines: List[str] = []


def at(*parts: str) -> str:
    return os.path.join(REPO, *parts)


def dump_report(label: str, report: toolscore.Report) -> None:
    lines.append(f"== {label}")
    for name in ("exit_code", "passed", "notes", "evaluations", "unmatched_cases", "unmatched_traces", "rejected", "summary"):
        lines.append(f"{name}: {getattr(report, name)!r}")
    lines.append(f"explain: {report.explain()!r}")
    lines.append(f"repr: {report!r}")
    lines.append(f"failure_message: {pytest_plugin.failure_message(report)!r}")


def run(label: str, fn: Callable[[], Any]) -> None:
    try:
        got = fn()
    except Exception as e:  # the message is part of the API
        lines.append(f"== {label}\nraised {type(e).__name__}: {e}")
        return
    if isinstance(got, toolscore.Report):
        dump_report(label, got)
    else:
        lines.append(f"== {label}\n{got!r}")


def truth_cases(path: str) -> List[dict]:
    cases = []
    with open(path) as f:
        for i, line in enumerate(f):
            t = json.loads(line)
            cases.append({"id": f"{t['scenario']}-{i}", "trace_id": t["trace_id"], "expected_tools": t["tools_in_order"]})
    return cases


def no_failed_calls(calls: List[dict], case: dict) -> Any:
    failed = [c["name"] for c in calls if c.get("status") == "error"]
    return (0.0, f"failed: {failed} of {len(case['expected_tools'])}") if failed else 1.0


samples, expected = at("sample-traces"), at("sample-traces", "expected.jsonl")
run("samples", lambda: toolscore.evaluate(samples, expected))
run("samples, metrics", lambda: toolscore.evaluate(samples, expected, metrics=["tool_correctness", "mlflow.exact", "deepeval.default", "adk.exact", no_failed_calls]))
run("samples, matchers", lambda: toolscore.evaluate(samples, expected, metrics=["mlflow.exact"]))
run("samples, every", lambda: toolscore.evaluate(samples, ["get_weather", {"name": "format_answer"}]))
run("samples, one case", lambda: toolscore.evaluate(samples, {"id": "c", "expected_tools": ["get_weather"], "threshold": 0.9}))
for corpus in sorted(glob.glob(at("tests", "data", "corpus", "*", ""))):
    name = os.path.basename(os.path.dirname(corpus))
    cases = truth_cases(os.path.join(corpus, "truth.jsonl"))
    run(f"corpus {name} otlp", lambda: toolscore.evaluate(os.path.join(corpus, "otlp"), cases))
    with open(os.path.join(corpus, "traces.jsonl"), "rb") as f:
        data = f.read()
    run(f"corpus {name} bytes", lambda: toolscore.evaluate(data, cases, metrics=["tool_correctness", "deepeval.default"]))
    run(f"corpus {name} inspect", lambda: toolscore.inspect(os.path.join(corpus, "otlp")))
adk = at("tests", "data", "corpus", "google-adk", "otlp")
run("adk evalset", lambda: toolscore.evaluate(adk, at("tests", "data", "expect", "weather.evalset.json")))
run("trials", lambda: toolscore.evaluate(at("tests", "data", "trials", "traces.jsonl"), at("tests", "data", "trials", "expected.jsonl")))
for path in sorted(glob.glob(at("tests", "data", "conversation", "*.jsonl"))):
    run(f"conversation {os.path.basename(path)}", lambda: toolscore.evaluate(path, ["get_weather"]))
    run(f"conversation {os.path.basename(path)} inspect", lambda: toolscore.inspect(path))
for path in sorted(glob.glob(at("tests", "data", "expect", "bad", "*"))):
    run(f"bad fixture {os.path.basename(path)}", lambda: toolscore.evaluate(samples, path))
run("rejected bytes", lambda: toolscore.evaluate(b'{"resourceSpans": [', ["get_weather"]))
run("inspect samples", lambda: toolscore.inspect(samples))
run("inspect rejected", lambda: toolscore.inspect([b"not otlp", samples]))
run("missing path", lambda: toolscore.evaluate(at("no-such-file.jsonl"), ["x"]))
run("unknown metric", lambda: toolscore.evaluate(samples, ["x"], metrics=["tool_corectness"]))
run("no expectations", lambda: toolscore.evaluate(samples))
run("bad config", lambda: toolscore.evaluate(samples, ["x"], config=at("README.md")))
run("custom metric named as a built-in", lambda: toolscore.evaluate(samples, ["x"], metrics=[toolscore.metric(name="mlflow.exact")(no_failed_calls)]))


def raising(calls: List[dict], case: dict) -> float:
    raise RuntimeError(f"{len(calls)} calls")


run("custom metric raising", lambda: toolscore.evaluate(samples, expected, metrics=[raising]))
try:
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from opentelemetry.sdk.trace.id_generator import IdGenerator

    class Counting(IdGenerator):
        """Ids that are the same on every run, so two builds see the same trace."""

        n = 0

        def generate_span_id(self) -> int:
            Counting.n += 1
            return Counting.n

        def generate_trace_id(self) -> int:
            return 0x0123456789ABCDEF0123456789ABCDEF

    exporter = InMemorySpanExporter()
    provider = TracerProvider(id_generator=Counting())
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("dump")
    t = 1_700_000_000_000_000_000
    root = tracer.start_span("invoke_agent", attributes={"gen_ai.operation.name": "invoke_agent"}, start_time=t)
    from opentelemetry import trace

    with trace.use_span(root, end_on_exit=False):
        for i, city in enumerate(("Paris", "Oslo")):
            args = json.dumps({"city": city, "n": 1.1, "big": 2**70})
            attributes = {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "get_weather", "gen_ai.tool.call.arguments": args}
            span = tracer.start_span("execute_tool get_weather", attributes=attributes, start_time=t + 1000 * (i + 1))
            span.end(end_time=t + 1000 * (i + 1) + 500 * (i + 1))
    root.end(end_time=t + 10_000)
    spans = list(exporter.get_finished_spans())
    run("spans", lambda: toolscore.evaluate(spans, [{"name": "get_weather", "args": {"city": "Paris"}}, "get_weather"]))
    run("spans inspect", lambda: toolscore.inspect(spans))
except ImportError:
    lines.append("== spans: no SDK")
with open(OUT, "w") as f:
    f.write("\n".join(lines) + "\n")
print(f"{len(lines)} lines to {OUT}")
