"""The pytest plugin as users run it: a test file in a fresh directory, run
by pytest in a child process; its exit status and output are checked."""

from __future__ import annotations

import os
from typing import Any

AGENT_DIR = os.path.dirname(os.path.abspath(__file__))

TESTS = '''
import sys
sys.path.insert(0, {agent_dir!r})
import agent


def test_weather_passes(toolscore_spans):
    agent.run("weather in Paris?", [("get_weather", {{"city": "Paris"}}), ("format_answer", {{"lines": ["x"]}})])
    toolscore_spans.assert_tools([{{"name": "get_weather", "args": {{"city": "Paris"}}}}, "format_answer"])


def test_wrong_city_fails(toolscore_spans):
    agent.run("weather in Paris?", [("get_weather", {{"city": "London"}})])
    toolscore_spans.assert_tools([{{"name": "get_weather", "args": {{"city": "Paris"}}}}, "format_answer"])


def test_spans_do_not_leak_between_tests(toolscore_spans):
    assert toolscore_spans.spans == []
    agent.run("convert", [("convert_currency", {{"amount": 10, "to": "EUR"}})])
    report = toolscore_spans.evaluate(["convert_currency"])
    assert report.passed, report.explain()
    assert len(report.evaluations) == 1
'''


def test_plugin_passes_and_fails_with_the_explanation(pytester: Any) -> None:
    pytester.makepyfile(test_agent=TESTS.format(agent_dir=AGENT_DIR))
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-q")
    assert result.ret == 1, result.stdout.str()
    result.assert_outcomes(passed=2, failed=1)
    out = result.stdout.str()
    assert "FAILED test_agent.py::test_wrong_city_fails" in out
    assert "missing: format_answer" in out, out
    assert 'wrong arguments: get_weather: expected {"city": "Paris"}, got {"city": "London"}' in out, out
    assert "called: get_weather" in out, out


EXACT = '''
import sys
sys.path.insert(0, {agent_dir!r})
import agent


def test_a_listed_tool_missing_fails(toolscore_spans):
    agent.run("weather in Paris?", [("get_weather", {{"city": "Paris"}})])
    toolscore_spans.assert_tools(["get_weather", "format_answer"])


def test_an_unexpected_call_fails(toolscore_spans):
    agent.run("weather in Paris?", [("get_weather", {{"city": "Paris"}}), ("convert_currency", {{"amount": 1, "to": "EUR"}})])
    toolscore_spans.assert_tools(["get_weather"])


def test_wrong_arguments_fail(toolscore_spans):
    agent.run("weather in Paris?", [("get_weather", {{"city": "London"}})])
    toolscore_spans.assert_tools([{{"name": "get_weather", "args": {{"city": "Paris"}}}}])


def test_the_exact_calls_pass(toolscore_spans):
    agent.run("convert", [("get_weather", {{"city": "Paris"}}), ("convert_currency", {{"amount": 10, "to": "EUR"}})])
    # Arguments as listed: the listed ones match, an unlisted one is fine.
    report = toolscore_spans.assert_tools([{{"name": "get_weather", "args": {{"city": "Paris"}}}},
                                           {{"name": "convert_currency", "args": {{"to": "EUR"}}}}])
    assert report.evaluations[0]["score"] == 1.0


def test_a_threshold_loosens(toolscore_spans):
    agent.run("weather in Paris?", [("get_weather", {{"city": "Paris"}})])
    toolscore_spans.assert_tools(["get_weather", "format_answer"], threshold=0.5)


def test_a_metric_loosens(toolscore_spans):
    agent.run("weather in Paris?", [("get_weather", {{"city": "Paris"}})])
    toolscore_spans.assert_tools(["get_weather", "format_answer"], metric="tool_correctness")
'''


def test_assert_tools_is_exact_by_default(pytester: Any) -> None:
    pytester.makepyfile(test_exact=EXACT.format(agent_dir=AGENT_DIR))
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-q")
    out = result.stdout.str()
    assert result.ret == 1, out
    result.assert_outcomes(passed=3, failed=3)
    for name in ("a_listed_tool_missing_fails", "an_unexpected_call_fails", "wrong_arguments_fail"):
        assert f"FAILED test_exact.py::test_{name}" in out, out
    assert "missing: format_answer" in out, out
    assert "unexpected: convert_currency" in out, out
    assert 'wrong arguments: get_weather: expected {"city": "Paris"}, got {"city": "London"}' in out, out
    assert "0.667 < threshold 1.0" in out, out


def test_no_spans_is_a_clear_failure(pytester: Any) -> None:
    pytester.makepyfile(test_empty="def test_nothing(toolscore_spans):\n    toolscore_spans.assert_tools(['x'])\n")
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-q")
    assert result.ret == 1
    assert "no spans were captured" in result.stdout.str()
