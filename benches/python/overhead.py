#!/usr/bin/env python3
"""The Python module's overhead, measured as docs/performance.md reports it.

    python benches/python/overhead.py --binary target/release/toolscore --copies FILE

1. `toolscore.evaluate(path, fixture)` against the binary's `replay` of the
   same file and fixture, alternated, median of --runs each: the module's
   cost over the command line (same library, same profile if both were
   built with it).
2. 10,000 OpenTelemetry SDK spans (1,000 toy agent traces of 10 spans: an
   agent span, chat spans and tool spans with JSON arguments), captured with
   InMemorySpanExporter, converted and scored by `toolscore.evaluate`
   (the spans' creation is not timed):
   median wall time of --runs.

Needs the installed wheel (`import toolscore`) and opentelemetry-sdk.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

import toolscore


def replay_vs_evaluate(binary: str, path: str, fixture: str, runs: int) -> None:
    cli, module = [], []
    for _ in range(runs):
        t0 = time.perf_counter()
        done = subprocess.run([binary, "replay", "--no-store", path, "--expected", fixture, "--format", "jsonl", "-q"],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        cli.append(time.perf_counter() - t0)
        assert done.returncode in (0, 1), f"replay exited {done.returncode}"
        t0 = time.perf_counter()
        report = toolscore.evaluate(path, fixture)
        module.append(time.perf_counter() - t0)
        assert report.summary["stats"]["spans"] > 0
    c, m = statistics.median(cli), statistics.median(module)
    size = os.path.getsize(path) / 1e6
    print(f"replay {size:.1f} MB: command line {c:.3f} s, toolscore.evaluate {m:.3f} s, "
          f"ratio {m / c:.3f} (median of {runs})")


def sdk_spans(traces: int) -> list:
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    memory = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(memory))
    tracer = provider.get_tracer("bench-agent")
    for i in range(traces):
        with tracer.start_as_current_span("invoke_agent weather_agent") as root:
            root.set_attribute("gen_ai.operation.name", "invoke_agent")
            root.set_attribute("gen_ai.agent.name", "weather_agent")
            for j, city in enumerate(("Paris", "Rome", "Oslo")):
                with tracer.start_as_current_span("chat toy-model") as chat:
                    chat.set_attribute("gen_ai.operation.name", "chat")
                    chat.set_attribute("gen_ai.request.model", "toy-model")
                    chat.set_attribute("gen_ai.usage.input_tokens", 120 + j)
                with tracer.start_as_current_span("execute_tool get_weather") as tool:
                    tool.set_attribute("gen_ai.operation.name", "execute_tool")
                    tool.set_attribute("gen_ai.tool.name", "get_weather")
                    tool.set_attribute("gen_ai.tool.call.id", f"call_{i}_{j}")
                    tool.set_attribute("gen_ai.tool.call.arguments", json.dumps({"city": city, "units": "C"}))
                    tool.set_attribute("gen_ai.tool.call.result", json.dumps({"temp": 18 + j}))
            with tracer.start_as_current_span("chat toy-model") as chat:
                chat.set_attribute("gen_ai.operation.name", "chat")
            with tracer.start_as_current_span("execute_tool format_answer") as tool:
                tool.set_attribute("gen_ai.operation.name", "execute_tool")
                tool.set_attribute("gen_ai.tool.name", "format_answer")
                tool.set_attribute("gen_ai.tool.call.arguments", json.dumps({"lines": ["a", "b", "c"]}))
            with tracer.start_as_current_span("chat toy-model") as chat:
                chat.set_attribute("gen_ai.operation.name", "chat")
    spans = memory.get_finished_spans()
    provider.shutdown()
    return list(spans)


def spans_scored(runs: int) -> None:
    spans = sdk_spans(1000)
    expected = [{"name": "get_weather", "args": {"city": "Paris"}}, "get_weather", "get_weather", "format_answer"]
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        report = toolscore.evaluate(spans, expected)
        times.append(time.perf_counter() - t0)
        assert report.passed and len(report.evaluations) == 1000, report
    print(f"{len(spans)} SDK spans (1000 traces) converted and scored: median {statistics.median(times):.3f} s, "
          f"min {min(times):.3f} s (of {runs})")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--binary", required=True, help="the toolscore binary to compare with")
    ap.add_argument("--copies", required=True, help="a trace file (scripts/make-copies.py 100 FILE)")
    ap.add_argument("--fixture", default="sample-traces/expected.jsonl")
    ap.add_argument("--runs", type=int, default=5)
    args = ap.parse_args()
    print(f"toolscore {toolscore.__version__} from {os.path.dirname(toolscore.__file__)}, Python {sys.version.split()[0]}")
    replay_vs_evaluate(args.binary, args.copies, args.fixture, args.runs)
    spans_scored(args.runs)


if __name__ == "__main__":
    main()
