"""toolscore.evaluate / inspect against the command line, on files, bytes
and SDK spans."""

from __future__ import annotations

import json
import os
import subprocess
from typing import Any, Dict, List

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import ConsoleSpanExporter, SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

import agent
import toolscore


def cli_rows(cli: str, *args: str, cwd: str) -> List[Dict[str, Any]]:
    done = subprocess.run([cli, *args, "--format", "jsonl", "-q"], cwd=cwd, capture_output=True, text=True)
    assert done.returncode in (0, 1), done.stderr
    return [json.loads(line) for line in done.stdout.splitlines()]


def evaluations(rows: List[Dict[str, Any]]) -> List[Dict[str, Any]]:
    return [r for r in rows if r["type"] == "evaluation"]


def test_files_give_the_cli_rows(cli: str, repo: str) -> None:
    rows = cli_rows(cli, "replay", "sample-traces", "--expected", "sample-traces/expected.jsonl", cwd=repo)
    report = toolscore.evaluate(os.path.join(repo, "sample-traces"), os.path.join(repo, "sample-traces/expected.jsonl"))
    assert report.evaluations == evaluations(rows)
    assert [r for r in rows if r["type"] == "unmatched_case"] == report.unmatched_cases
    assert report.summary["passed"] == sum(1 for r in report.evaluations if r["pass"])
    assert not report.passed and report.exit_code == 1
    assert "mlflow-trip-wrong-city" in report.explain()


def test_inspect_gives_the_cli_rows_key_for_key(cli: str, repo: str) -> None:
    # The rows are built from the library's values, not its JSONL text:
    # they must still be those rows, keys in the same order (json.dumps keeps it).
    # py-openai-openlit: each model call is its own trace, a call answered in
    # the next one (joined across traces, as the command line does).
    for traces in (
        "sample-traces",
        "tests/data/corpus/mlflow/otlp",
        "tests/data/conversation/genai-loop.jsonl",
        "tests/data/firstsight/py-openai-openlit.jsonl",
    ):
        want = cli_rows(cli, "inspect", traces, cwd=repo)
        got = toolscore.inspect(os.path.join(repo, traces))
        assert want and [json.dumps(r) for r in got] == [json.dumps(r) for r in want], traces


def test_log_records_beside_their_spans_give_the_calls(cli: str, repo: str) -> None:
    # The OTel GenAI instrumentation writes the messages as log records: read
    # with the spans, from files or bytes, they give the calls, as the CLI does.
    spans = "tests/data/firstsight/py-openai-otel-genai.jsonl"
    logs = "tests/data/firstsight/py-openai-otel-genai.logs.jsonl"
    want = cli_rows(cli, "inspect", spans, logs, cwd=repo)
    got = toolscore.inspect([os.path.join(repo, spans), os.path.join(repo, logs)])
    assert [json.dumps(r) for r in got] == [json.dumps(r) for r in want]
    assert [c["name"] for r in got for c in r["tools"]] == ["find_hotel", "rent_bike"]
    with open(os.path.join(repo, logs), "rb") as fh:
        assert toolscore.inspect([os.path.join(repo, spans), fh.read()]) == got
    alone = toolscore.inspect(os.path.join(repo, spans))
    assert [c for r in alone for c in r["tools"]] == []


def test_bytes_give_the_rows_of_their_file(repo: str) -> None:
    files = sorted(
        os.path.join(d, f)
        for d, _, names in os.walk(os.path.join(repo, "sample-traces"))
        for f in names
        if not f.startswith("expected")
    )
    assert len(files) > 3
    for path in files:
        with open(path, "rb") as fh:
            data = fh.read()
        rows = toolscore.inspect(path)
        assert rows and all(r.get("type") != "rejected" for r in rows), path
        assert toolscore.inspect(data) == rows, path


def test_sdk_spans_give_the_rows_of_their_console_export(cli: str, tmp_path: Any) -> None:
    # The same spans two ways: in memory to evaluate(), and through the SDK's
    # own console exporter to a file the command line reads.
    memory = InMemorySpanExporter()
    console = tmp_path / "console.txt"
    with open(console, "w") as out:
        provider = TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(memory))
        provider.add_span_processor(SimpleSpanProcessor(ConsoleSpanExporter(out=out)))
        from opentelemetry import trace

        tracer = provider.get_tracer("t")
        original = trace.get_tracer
        trace.get_tracer = lambda *a, **k: tracer  # the toy agent asks for a tracer by name
        try:
            agent.run("weather in Paris and Rome?", [("get_weather", {"city": "Paris"}), ("get_weather", {"city": "Rome"})])
        finally:
            trace.get_tracer = original
        provider.shutdown()
    spans = memory.get_finished_spans()
    expected = [{"name": "get_weather", "args": {"city": "Paris"}}, "get_weather"]
    report = toolscore.evaluate(list(spans), expected)
    assert report.passed, report.explain()
    # Argument matchers, for values that change from run to run.
    loose = [{"name": "get_weather", "args": {"city": {"$regex": "^Pa"}}}, {"name": "get_weather", "args": {"city": {"$type": "string"}}}]
    assert toolscore.evaluate(list(spans), loose).passed
    wrong = [{"name": "get_weather", "args": {"city": {"$regex": "^Lo"}}}, "get_weather"]
    failed = toolscore.evaluate(list(spans), wrong, metrics=["tool_correctness:threshold=1"])
    assert not failed.passed and "expected a match of /^Lo/" in failed.evaluations[0]["explanation"], failed.explain()
    fixture = tmp_path / "expected.json"
    fixture.write_text(json.dumps(expected))
    rows = cli_rows(cli, "inspect", str(console), cwd=str(tmp_path))
    # The console exporter writes times in microseconds: compare the rest.
    def calls(rows: List[Dict[str, Any]]) -> List[Any]:
        return [[{k: v for k, v in c.items() if k != "start_time_unix_nano"} for c in r["tools"]] for r in rows]

    assert calls(rows) == calls(toolscore.inspect(list(spans)))
    assert [c["args"] for c in rows[0]["tools"]] == [{"city": "Paris"}, {"city": "Rome"}]


def test_custom_metric_is_reported_like_the_built_in_ones(repo: str) -> None:
    seen: List[Any] = []

    @toolscore.metric(threshold=1.0)
    def few_calls(calls: List[Dict[str, Any]], case: Dict[str, Any]) -> Any:
        seen.append((len(calls), case["id"]))
        return (1.0 if len(calls) <= 2 else 0.0, f"{len(calls)} calls")

    fixture = os.path.join(repo, "sample-traces/expected.jsonl")
    report = toolscore.evaluate(os.path.join(repo, "sample-traces"), fixture, metrics=["tool_correctness", few_calls])
    assert seen
    with open(fixture) as fh:
        # A case's own threshold overrides the metric's, as for every metric.
        own = {c["id"]: c.get("threshold") for c in map(json.loads, fh)}
    for e in report.evaluations:
        m = e["metrics"]["few_calls"]
        assert m["threshold"] == (own[e["case"]] or 1.0)
        assert m["pass"] == (len(e["tools_called"]) <= 2), e
        assert m["reason"] == f"{len(e['tools_called'])} calls"
    assert "few_calls" in report.explain()


def test_a_failing_custom_metric_is_an_error_not_a_pass(repo: str) -> None:
    def broken(calls: Any, case: Any) -> Any:
        raise RuntimeError("metric bug")

    report = toolscore.evaluate(
        os.path.join(repo, "sample-traces"), os.path.join(repo, "sample-traces/expected.jsonl"), metrics=[broken]
    )
    assert not report.passed
    assert all("metric bug" in (e["metrics"]["broken"]["error"] or "") for e in report.evaluations)


def test_the_matchers_note_reaches_the_report(cli: str, repo: str) -> None:
    """A preset compares an argument matcher literally: the command line
    notes it on stderr, and the report carries the same note."""
    traces = os.path.join(repo, "sample-traces/pydantic-ai/traces.jsonl")
    case = {"id": "stock", "trace_id": "9d3d86b5eed352d10a377c77a4f5d12b",
            "expected_tools": [{"name": "get_stock_price", "args": {"ticker": {"$regex": "^X+$"}}}]}
    report = toolscore.evaluate(traces, [case], metrics=["mlflow.exact"])
    matcher_notes = [n for n in report.notes if "argument matchers" in n]
    assert len(matcher_notes) == 1, report.notes
    assert "scored by mlflow.exact" in matcher_notes[0]


def test_bad_input_raises_the_cli_message(repo: str, tmp_path: Any) -> None:
    with pytest.raises(ValueError, match="no such file or directory"):
        toolscore.evaluate(str(tmp_path / "missing.jsonl"), ["get_weather"])
    with pytest.raises(ValueError, match="unknown metric `tool_corectness`: did you mean `tool_correctness`"):
        toolscore.evaluate(os.path.join(repo, "sample-traces"), ["get_weather"], metrics=["tool_corectness"])
    with pytest.raises(ValueError, match="nothing would be scored"):
        toolscore.evaluate(os.path.join(repo, "sample-traces"))
    with pytest.raises(ValueError, match="needs a name"):
        toolscore.evaluate(os.path.join(repo, "sample-traces"), ["x"], metrics=[lambda c, k: 1.0])


def test_rejected_input_is_reported_and_fails(tmp_path: Any) -> None:
    report = toolscore.evaluate(b'{"resourceSpans": [', ["get_weather"])
    assert report.rejected and report.rejected[0]["source"] == "bytes"
    assert not report.passed and report.exit_code == 2


def test_record_round_trip(cli: str, tmp_path: Any) -> None:
    # A good run's spans -> `toolscore record` -> a fixture the same spans
    # pass, and a changed argument fails.
    memory = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(memory))
    tracer = provider.get_tracer("t")
    from opentelemetry import trace

    original = trace.get_tracer
    trace.get_tracer = lambda *a, **k: tracer
    try:
        agent.run("weather?", [("get_weather", {"city": "Paris"}), ("format_answer", {"lines": ["18C"]})])
        agent.run("convert", [("convert_currency", {"amount": 10, "to": "EUR"})])
    finally:
        trace.get_tracer = original
    spans = list(memory.get_finished_spans())
    traces = tmp_path / "spans.pb"
    traces.write_bytes(toolscore.spans_to_otlp(spans))
    fixture = tmp_path / "recorded.jsonl"
    done = subprocess.run([cli, "record", str(traces), "-o", str(fixture)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert "recorded 2 cases (3 calls) from 2 traces" in done.stderr, done.stderr
    cases = [json.loads(line) for line in fixture.read_text().splitlines()]
    assert [[t if isinstance(t, str) else t["name"] for t in c["expected_tools"]] for c in cases] == [
        ["get_weather", "format_answer"],
        ["convert_currency"],
    ]
    assert all(c["threshold"] == 1.0 for c in cases)
    report = toolscore.evaluate(spans, str(fixture))
    assert report.passed and len(report.evaluations) == 2, report.explain()
    cases[0]["expected_tools"][0]["args"]["city"] = "Rome"
    report = toolscore.evaluate(spans, cases)
    assert not report.passed
    (failed,) = [e for e in report.evaluations if not e["pass"]]
    assert failed["wrong_args"] == [{"name": "get_weather", "expected": {"city": "Rome"}, "called": {"city": "Paris"}}]
