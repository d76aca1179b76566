"""`evaluate` and `inspect`: arguments shaped for the native module, which
builds the run from them and hands results back as Python values."""
from __future__ import annotations

import functools
import json
import os
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple, Union

from toolscore import _native

Row = Dict[str, Any]
Traces = Union[str, "os.PathLike[str]", bytes, Sequence[Any]]
MetricFn = Callable[[List[Row], Row], Union[float, Tuple[float, str]]]

#: Keys that make a dict a fixture case rather than an expected tool.
_CASE_KEYS = {"id", "expected_tools", "expected_tool_calls", "trace_id", "match", "session_id", "user_text"}


class Report:
    """The result of `evaluate`: the rows `toolscore replay --format jsonl`
    writes, by type, and the table it prints. Rows are built from the
    library's results on first use."""

    def __init__(self, run: _native.Run) -> None:
        self._run = run
        #: The command line's exit code: 0 pass, 1 a case failed, 2 could not evaluate.
        self.exit_code: int = run.exit_code
        #: What the command line would note on stderr (fixture records skipped, hints, where the run was saved).
        self.notes: List[str] = run.notes
        #: The id of the run in the run store (`evaluate(..., store=...)`), else None.
        self.run_id: Optional[str] = run.run_id

    @functools.cached_property
    def _by_type(self) -> Dict[str, List[Row]]:
        return self._run.rows()

    @functools.cached_property
    def _table(self) -> str:
        return self._run.table()

    @property
    def evaluations(self) -> List[Row]:
        """One dict per (case, trace) scored: the JSONL `evaluation` rows."""
        return self._by_type.get("evaluation", [])

    @property
    def unmatched_cases(self) -> List[Row]:
        """Cases no trace joined (they fail the run)."""
        return self._by_type.get("unmatched_case", [])

    @property
    def unmatched_traces(self) -> List[Row]:
        """Traces no case joined (not scored)."""
        return self._by_type.get("unmatched_trace", [])

    @property
    def rejected(self) -> List[Row]:
        """Input that could not be read, with where and why."""
        return self._by_type.get("rejected", [])

    @property
    def summary(self) -> Row:
        """The run's counts: the JSONL `summary` row."""
        return self._by_type.get("summary", [{}])[-1]

    @property
    def passed(self) -> bool:
        """Every case passed, every case found its trace, nothing was rejected."""
        return self.exit_code == 0

    def explain(self) -> str:
        """The report as `toolscore replay` prints it."""
        return self._table

    def __repr__(self) -> str:
        return (
            f"<toolscore.Report passed={self.passed} evaluations={len(self.evaluations)} "
            f"unmatched_cases={len(self.unmatched_cases)} rejected={len(self.rejected)}>"
        )


def metric(name: Optional[str] = None, *, threshold: Optional[float] = None) -> Callable[[MetricFn], MetricFn]:
    """Names a custom metric and sets its pass threshold (default 0.5):

        @toolscore.metric(threshold=1.0)
        def no_retries(calls, case): ...
    """

    def mark(fn: MetricFn) -> MetricFn:
        fn.__toolscore_name__ = name or fn.__name__  # type: ignore[attr-defined]
        fn.__toolscore_threshold__ = threshold  # type: ignore[attr-defined]
        return fn

    return mark


def evaluate(
    traces: Traces,
    expected: Any = None,
    *,
    metrics: Optional[Sequence[Union[str, MetricFn]]] = None,
    config: Union[None, str, "os.PathLike[str]"] = None,
    store: Union[None, bool, str, "os.PathLike[str]"] = None,
    labels: Optional[Mapping[str, str]] = None,
) -> Report:
    """Scores the traces against what they should have called.

    traces: a path or list of paths (anything `toolscore replay` reads),
        bytes of an OTLP request (protobuf or JSON), or a list of OpenTelemetry
        SDK spans (`ReadableSpan`).
    expected: a fixture path, a list of case dicts (the fixture format), or
        a list of tools every trace should call (names or {"name", "args"}).
    metrics: metric names or specs as on the command line
        ("deepeval.default:threshold=0.8"), and functions
        fn(calls, case) -> score or (score, reason) as custom metrics.
    config: a config file, as `--config`.
    store: the run store to save the run in, as `replay --store` takes it (a
        SQLite file or a postgres:// URL); None or False saves nothing. The
        report's `run_id` names the saved run.
    labels: {key: value} saved with the run, as `replay --label KEY=VALUE`
        (`toolscore runs --label KEY=VALUE` selects by them); nothing is saved
        without `store`.

    Raises ValueError with the command line's message for bad input.
    """
    paths, sources = _traces(traces)
    names: List[str] = []
    custom: List[Tuple[str, Optional[float], Callable[[List[Row], Row], Tuple[float, str]]]] = []
    for m in metrics or []:
        if isinstance(m, str):
            names.append(m)
        elif callable(m):
            name = _custom_name(m)
            threshold = getattr(m, "__toolscore_threshold__", None)
            custom.append((name, threshold, _adapter(name, m)))
            names.append(name)
        else:
            raise ValueError(f"metrics: {m!r} is neither a metric name nor a function")
    wanted = _expected(expected)
    where = _store(store)
    pairs = _labels(labels)
    command = _command(paths, sources, wanted, names, config) if where is not None else ""
    run = _native.evaluate(paths, sources, wanted, names, _path(config), custom, where, pairs, command)
    return Report(run)


def inspect(traces: Traces, *, config: Union[None, str, "os.PathLike[str]"] = None) -> List[Row]:
    """The tool calls found in each trace: `toolscore inspect --format jsonl`'s
    rows (rejected input as rows of type `rejected`)."""
    paths, sources = _traces(traces)
    return _native.inspect(paths, sources, _path(config))


def spans_to_otlp(spans: Sequence[Any]) -> bytes:
    """OpenTelemetry SDK spans (`ReadableSpan`) as the bytes of one OTLP
    protobuf request: what `evaluate` reads them as, and a file that
    `toolscore replay` and `toolscore record` read."""
    items = list(spans)
    bad = next((i for i, x in enumerate(items) if not is_span(x)), None)
    if bad is not None:
        raise ValueError(f"spans[{bad}]: {type(items[bad]).__name__} is not an OpenTelemetry SDK span")
    return _native.spans_to_otlp(items)


def is_span(x: Any) -> bool:
    """Whether `x` looks like an SDK `ReadableSpan` (duck-typed: the SDK is
    not a dependency of this package)."""
    return hasattr(x, "get_span_context") and hasattr(x, "attributes") and hasattr(x, "start_time")


def _path(path: Union[None, str, "os.PathLike[str]"]) -> Optional[str]:
    return None if path is None else os.fspath(path)


def _store(store: Union[None, bool, str, "os.PathLike[str]"]) -> Optional[str]:
    """Where the run is saved, as `--store` takes it; None: nowhere."""
    if store is None or store is False:
        return None
    if isinstance(store, (str, os.PathLike)) and os.fspath(store).strip():
        return os.fspath(store)
    raise ValueError(f"store: {store!r} is not a SQLite file path, a postgres:// URL, None or False")


def _labels(labels: Optional[Mapping[str, str]]) -> List[Tuple[str, str]]:
    """The labels as (key, value) pairs, both text."""
    if labels is None:
        return []
    if not isinstance(labels, Mapping):
        raise ValueError(f"labels: {labels!r} is not a dict of text keys and values")
    pairs = list(labels.items())
    for key, value in pairs:
        if not isinstance(key, str) or not isinstance(value, str):
            raise ValueError(f"labels: {key!r}: {value!r} is not a text key and value")
    return pairs


def _command(
    paths: List[str], sources: List[Tuple[str, bytes]], expected: Tuple[str, str, str], metrics: List[str], config: Any
) -> str:
    """The call as the saved run records it in place of a command line."""
    traces = [repr(p) for p in paths] + [f"<{label}: {len(data)} bytes>" for label, data in sources]
    kind, _, text = expected
    parts = [f"[{', '.join(traces)}]", repr(text) if kind == "path" else f"<{kind}>"]
    if metrics:
        parts.append(f"metrics={metrics!r}")
    if config is not None:
        parts.append(f"config={os.fspath(config)!r}")
    return f"python: toolscore.evaluate({', '.join(parts)})"


def _traces(traces: Traces) -> Tuple[List[str], List[Tuple[str, bytes]]]:
    """(paths, in-memory sources) of `traces`."""
    if isinstance(traces, (str, os.PathLike)):
        return [os.fspath(traces)], []
    if isinstance(traces, (bytes, bytearray, memoryview)):
        return [], [("bytes", bytes(traces))]
    items = list(traces)
    if not items:
        raise ValueError("traces: an empty list (no paths, bytes or spans)")
    paths: List[str] = []
    sources: List[Tuple[str, bytes]] = []
    spans: List[Any] = []
    for i, x in enumerate(items):
        if isinstance(x, (str, os.PathLike)):
            paths.append(os.fspath(x))
        elif isinstance(x, (bytes, bytearray, memoryview)):
            sources.append((f"bytes[{i}]", bytes(x)))
        elif is_span(x):
            spans.append(x)
        else:
            raise ValueError(f"traces[{i}]: {type(x).__name__} is not a path, bytes or an OpenTelemetry SDK span")
    if spans:
        # Read straight from the span objects into one OTLP request.
        sources.append(("spans", _native.spans_to_otlp(spans)))
    return paths, sources


def _expected(expected: Any) -> Tuple[str, str, str]:
    """(kind, label, text) for the native module."""
    if expected is None:
        return ("none", "", "")
    if isinstance(expected, (str, os.PathLike)):
        return ("path", "", os.fspath(expected))
    if isinstance(expected, dict):
        expected = [expected]
    if not isinstance(expected, (list, tuple)):
        raise ValueError(f"expected: {type(expected).__name__} is not a path, a list of cases or a list of tools")
    items = list(expected)
    cases = [isinstance(x, dict) and bool(_CASE_KEYS & set(x)) for x in items]
    if items and all(cases):
        if len(items) == 1 and not _joins(items[0]):
            # One case with no join: the expectation for every trace.
            return ("every", "expected", json.dumps(items[0]))
        return ("text", "expected", "\n".join(json.dumps(c) for c in items))
    if any(cases):
        raise ValueError("expected: a list mixing cases (with `id`/`expected_tools`) and tools")
    return ("every", "expected", json.dumps(items))


def _joins(case: Row) -> bool:
    return any(k in case for k in ("trace_id", "match", "session_id", "user_text"))


def _custom_name(fn: Callable[..., Any]) -> str:
    name = str(getattr(fn, "__toolscore_name__", None) or getattr(fn, "__name__", ""))
    if not name or name == "<lambda>" or not all(c.isalnum() or c in "_.-" for c in name):
        raise ValueError(
            f"metrics: {fn!r} needs a name of letters, digits, `_`, `.` or `-`: "
            "use a def, or @toolscore.metric(name=...)"
        )
    return name


def _adapter(name: str, fn: MetricFn) -> Callable[[List[Row], Row], Tuple[float, str]]:
    """What the native module calls: the calls and the case in, (score, reason) out."""

    def call(calls: List[Row], case: Row) -> Tuple[float, str]:
        got = fn(calls, case)
        score, reason = got if isinstance(got, tuple) and len(got) == 2 else (got, "")
        if isinstance(score, bool) or not isinstance(score, (int, float)):
            raise TypeError(f"returned {got!r}; a metric returns a number or (number, reason)")
        score = float(score)
        if not 0.0 <= score <= 1.0:
            raise ValueError(f"returned {score}, outside 0..1")
        return score, str(reason)

    return call
