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


def test_no_spans_is_a_clear_failure(pytester: Any) -> None:
    pytester.makepyfile(test_empty="def test_nothing(toolscore_spans):\n    toolscore_spans.assert_tools(['x'])\n")
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-q")
    assert result.ret == 1
    assert "no spans were captured" in result.stdout.str()
