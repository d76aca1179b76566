"""The pytest plugin (entry point `pytest11`): the `toolscore_spans` fixture.

    def test_weather(toolscore_spans):
        run_my_agent("weather in Paris?")
        toolscore_spans.assert_tools([{"name": "get_weather", "args": {"city": "Paris"}}])

Spans are taken from the global OpenTelemetry TracerProvider (the SDK's is
installed if none is set) by a span processor that only keeps them in memory:
nothing is exported anywhere else.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any, Dict, List, Optional, Sequence, Union

import pytest

if TYPE_CHECKING:
    from toolscore._api import Report


class _Collector:
    """A span processor that appends finished spans to the open captures."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._open: List[List[Any]] = []

    def open(self, spans: List[Any]) -> None:
        with self._lock:
            self._open.append(spans)

    def close(self, spans: List[Any]) -> None:
        with self._lock:
            self._open = [s for s in self._open if s is not spans]

    # The SpanProcessor interface (duck-typed, so this module imports without the SDK).
    def on_start(self, span: Any, parent_context: Any = None) -> None:
        pass

    def _on_ending(self, span: Any) -> None:
        pass

    def on_end(self, span: Any) -> None:
        with self._lock:
            for spans in self._open:
                spans.append(span)

    def shutdown(self) -> None:
        pass

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return True


_collector: Optional[_Collector] = None
_install_lock = threading.Lock()


def _install() -> _Collector:
    """Adds the collector to the global SDK TracerProvider once, installing
    one when the global provider is not set."""
    global _collector
    with _install_lock:
        if _collector is not None:
            return _collector
        try:
            from opentelemetry import trace
            from opentelemetry.sdk.trace import TracerProvider
        except ImportError as e:  # pragma: no cover - depends on the environment
            raise RuntimeError(
                "toolscore_spans needs the OpenTelemetry SDK: pip install opentelemetry-sdk"
            ) from e
        provider = trace.get_tracer_provider()
        if not hasattr(provider, "add_span_processor"):
            trace.set_tracer_provider(TracerProvider())
            provider = trace.get_tracer_provider()
        if not hasattr(provider, "add_span_processor"):
            raise RuntimeError(
                f"the global TracerProvider is a {type(provider).__name__}, which takes no span "
                "processor: set the OpenTelemetry SDK's TracerProvider before the test runs"
            )
        collector = _Collector()
        provider.add_span_processor(collector)
        _collector = collector
        return collector


#: `assert_tools`'s default threshold: the listed calls, exactly.
_EXACT = 1.0


class SpanCapture:
    """The spans finished during one test, and how to score them."""

    def __init__(self) -> None:
        #: Finished spans (`ReadableSpan`), in the order they ended.
        self.spans: List[Any] = []

    def clear(self) -> None:
        """Forgets the spans captured so far."""
        self.spans.clear()

    def inspect(self) -> List[Dict[str, Any]]:
        """The tool calls found per trace (`toolscore.inspect` rows)."""
        from toolscore import inspect

        return inspect(self._spans()) if self.spans else []

    def evaluate(self, expected: Any, metrics: Optional[Sequence[Any]] = None, **kwargs: Any) -> "Report":
        """`toolscore.evaluate` on the spans captured so far."""
        from toolscore import evaluate

        return evaluate(self._spans(), expected, metrics=metrics, **kwargs)

    def assert_tools(
        self,
        expected: Any,
        metric: Union[str, Any, None] = None,
        threshold: Optional[float] = None,
    ) -> "Report":
        """Fails the test unless every captured trace made exactly the expected
        calls (`expected`: tools every trace should call, cases, or a fixture
        path): each listed call made, no other call, arguments as listed (a
        subset, with the fixture format's matchers). `threshold=` or `metric=`
        loosen it. The failure message names what was missing, unexpected or
        had wrong arguments."""
        if not self.spans:
            pytest.fail("toolscore: no spans were captured during this test: is the agent instrumented "
                        "with OpenTelemetry, and does it use the global TracerProvider?", pytrace=False)
        if metric is None:
            # Exact: tool_correctness's F1 is 1 only when every expected call
            # matched a made call and no made call was left over.
            metric = "tool_correctness"
            if threshold is None:
                threshold = _EXACT
        spec = metric
        if threshold is not None and isinstance(metric, str):
            spec = f"{metric}:threshold={threshold}"
        report = self.evaluate(expected, metrics=[spec])
        if not report.passed:
            pytest.fail(failure_message(report), pytrace=False)
        return report

    def _spans(self) -> List[Any]:
        return list(self.spans)


def failure_message(report: "Report") -> str:
    """What failed, per trace: missing, unexpected and wrong-argument calls."""
    lines = []
    for e in report.evaluations:
        m = e.get("metrics", {}).get(e.get("metric", ""), {})
        if e.get("pass"):
            continue
        score = e.get("score")
        head = f"toolscore: {e.get('metric')} "
        head += "could not score" if score is None else f"{score:.3f} < threshold {e.get('threshold')}"
        lines.append(f"{head} for trace {e.get('trace_id')} (case {e.get('case')})")
        for key, label in (("missing", "missing"), ("unexpected", "unexpected"), ("wrong_args", "wrong arguments")):
            items = e.get(key) or []
            if items:
                lines.append(f"  {label}: " + "; ".join(_call_text(x) for x in items))
        reason = m.get("error") or e.get("explanation") or m.get("reason")
        if reason:
            lines.append(f"  why: {reason}")
        called = [_call_text(c) for c in e.get("tools_called") or []]
        lines.append("  called: " + (", ".join(called) if called else "no tools"))
    for c in report.unmatched_cases:
        lines.append(f"toolscore: case {c.get('case')} found no trace: {c.get('explanation') or ''}".rstrip())
    for r in report.rejected:
        lines.append(f"toolscore: rejected {r.get('source')}: {r.get('reason')}")
    if not lines:
        lines.append("toolscore: the run did not pass:\n" + report.explain())
    return "\n".join(lines)


def _call_text(x: Any) -> str:
    """`name(args)` of a call, or of a wrong-argument entry `name: expected
    {...}, got {...}`."""
    import json

    if not isinstance(x, dict):
        return str(x)
    name = x.get("name") or "?"
    if "expected" in x or "called" in x:
        return f"{name}: expected {json.dumps(x.get('expected'), sort_keys=True)}, got {json.dumps(x.get('called'), sort_keys=True)}"
    args = x.get("args")
    return name if args is None else f"{name}({json.dumps(args, sort_keys=True)})"


@pytest.fixture
def toolscore_spans() -> Any:
    """The spans finished during this test (see SpanCapture)."""
    collector = _install()
    capture = SpanCapture()
    collector.open(capture.spans)
    try:
        yield capture
    finally:
        collector.close(capture.spans)
