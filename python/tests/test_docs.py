"""The Python examples of README.md and docs/python.md, run as written
against the installed wheel, so a renamed metric, function or parameter
fails here before a user meets it.

Every ```python block is one of: a signature (`toolscore.NAME(...) -> T`),
checked against the function's; pytest tests (they take the
`toolscore_spans` fixture), run by pytest in a child process with a toy
`my_agent`; the exporter recipe, run with a real SDK provider; or a script,
run in a directory holding `traces/` and `expected.jsonl`."""

from __future__ import annotations

import ast
import inspect
import os
import re
import shutil
from typing import Any, List, Tuple

import pytest

import toolscore

AGENT_DIR = os.path.dirname(os.path.abspath(__file__))
FENCE = re.compile(r"^```python\n(.*?)^```", re.M | re.S)
SIGNATURE = re.compile(r"^toolscore\.(\w+)(\(.*\)) -> .+$")

# The agent the pytest recipes call: the calls each question should make.
MY_AGENT = '''
import sys
sys.path.insert(0, {agent_dir!r})
import agent


class _MyAgent:
    def run(self, question):
        if "weather" in question:
            city = question.rsplit(" ", 1)[-1].rstrip("?")
            return agent.run(question, [("get_weather", {{"city": city}}), ("format_answer", {{"lines": ["x"]}})])
        if "Convert" in question:
            return agent.run(question, [("convert_currency", {{"amount": 10, "to": "EUR"}})])
        raise ValueError(question)


my_agent = _MyAgent()
'''


def blocks(repo: str, name: str) -> List[Tuple[str, str]]:
    """The ```python blocks of a doc, each with where it starts."""
    text = open(os.path.join(repo, name), encoding="utf-8").read()
    return [(f"{name}:{text[: m.start()].count(chr(10)) + 1}", m.group(1)) for m in FENCE.finditer(text)]


def all_blocks(repo: str) -> List[Tuple[str, str]]:
    return blocks(repo, "README.md") + blocks(repo, "docs/python.md")


def kind(code: str) -> str:
    if SIGNATURE.match(code.strip()) and "\n" not in code.strip():
        return "signature"
    if "toolscore_spans" in code and "def test_" in code:
        return "pytest"
    if "SpanExporter)" in code:
        return "exporter"
    return "script"


def test_every_block_is_run(repo: str) -> None:
    """The doc blocks are found, and the kinds below cover every one."""
    found = all_blocks(repo)
    kinds = [kind(code) for _, code in found]
    assert kinds.count("pytest") == 2 and kinds.count("signature") == 3, list(zip(found, kinds))
    assert kinds.count("exporter") == 1 and kinds.count("script") == 2, list(zip(found, kinds))


def params(signature: str) -> List[Tuple[str, str, str]]:
    """(name, kind, default as source) of a signature's parameters."""
    fn = ast.parse(f"def f{signature}: pass").body[0]
    assert isinstance(fn, ast.FunctionDef)
    a = fn.args
    out: List[Tuple[str, str, str]] = []
    plain = a.posonlyargs + a.args
    defaults = [None] * (len(plain) - len(a.defaults)) + list(a.defaults)
    for p, d in zip(plain, defaults):
        out.append((p.arg, "POSITIONAL_OR_KEYWORD", "" if d is None else ast.unparse(d)))
    for p, d in zip(a.kwonlyargs, a.kw_defaults):
        out.append((p.arg, "KEYWORD_ONLY", "" if d is None else ast.unparse(d)))
    return out


def test_signatures_are_the_functions(repo: str) -> None:
    for where, code in all_blocks(repo):
        m = SIGNATURE.match(code.strip())
        if kind(code) != "signature" or not m:
            continue
        fn = getattr(toolscore, m.group(1), None)
        assert fn is not None, f"{where}: toolscore has no {m.group(1)}"
        real = [
            (p.name, p.kind.name, "" if p.default is inspect.Parameter.empty else repr(p.default))
            for p in inspect.signature(fn).parameters.values()
        ]
        assert params(m.group(2)) == real, f"{where}: {code.strip()} is not {inspect.signature(fn)}"


def test_pytest_recipes_pass(repo: str, pytester: Any) -> None:
    recipes = [(where, code) for where, code in all_blocks(repo) if kind(code) == "pytest"]
    for i, (where, code) in enumerate(recipes):
        pytester.makepyfile(**{f"test_doc{i}": MY_AGENT.format(agent_dir=AGENT_DIR) + "\n" + code})
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-q")
    out = result.stdout.str()
    tests = sum(code.count("def test_") for _, code in recipes)
    assert result.ret == 0, out
    result.assert_outcomes(passed=tests)


def test_exporter_recipe_writes_what_replay_reads(repo: str, tmp_path: Any) -> None:
    if os.environ.get("CI") != "true":
        pytest.importorskip("opentelemetry.exporter.otlp.proto.common")
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor

    (where, code), = [b for b in all_blocks(repo) if kind(b[1]) == "exporter"]
    scope: dict = {}
    exec(compile(code, where, "exec"), scope)
    path = str(tmp_path / "spans.jsonl")
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(scope["OtlpJsonLinesExporter"](path)))
    tracer = provider.get_tracer("doc")
    for city in ("Paris", "Oslo"):
        with tracer.start_as_current_span("invoke_agent weather_agent") as root:
            root.set_attribute("gen_ai.operation.name", "invoke_agent")
            with tracer.start_as_current_span("execute_tool get_weather") as span:
                span.set_attribute("gen_ai.operation.name", "execute_tool")
                span.set_attribute("gen_ai.tool.name", "get_weather")
                span.set_attribute("gen_ai.tool.call.arguments", '{"city": "%s"}' % city)
    provider.shutdown()
    assert len(open(path, encoding="utf-8").read().splitlines()) == 4
    report = toolscore.evaluate(path, ["get_weather"])
    assert report.passed and len(report.evaluations) == 2, report.explain()


def test_scripts_run(repo: str, tmp_path: Any, monkeypatch: Any) -> None:
    shutil.copytree(os.path.join(repo, "sample-traces"), tmp_path / "traces")
    shutil.copy(os.path.join(repo, "sample-traces", "expected.jsonl"), tmp_path / "expected.jsonl")
    monkeypatch.chdir(tmp_path)
    for where, code in all_blocks(repo):
        if kind(code) != "script":
            continue
        scope: dict = {"toolscore": toolscore, "__name__": "__doc__"}
        exec(compile(code, where, "exec"), scope)
        report = scope["report"]
        if "store=" in code:
            # The run went to the store the script names.
            assert report.run_id and os.path.exists("runs.db"), f"{where}: {report.notes}"
            continue
        names = {m for e in report.evaluations for m in e["metrics"]}
        assert "no_failed_calls" in names and "tool_correctness" in names, f"{where}: {names}"

