# The native module's functions; the package's public API wraps them (_api.py).
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

__version__: str

class Run:
    exit_code: int
    notes: List[str]
    run_id: Optional[str]
    def rows(self) -> Dict[str, List[Dict[str, Any]]]: ...
    def table(self) -> str: ...

def run_cli(argv: Sequence[str]) -> int: ...
def evaluate(
    paths: Sequence[str],
    sources: Sequence[Tuple[str, bytes]],
    expected: Tuple[str, str, str],
    metrics: Sequence[str],
    config: Optional[str],
    custom: Sequence[
        Tuple[str, Optional[float], Callable[[List[Dict[str, Any]], Dict[str, Any]], Tuple[float, str]]]
    ],
    store: Optional[str],
    labels: Sequence[Tuple[str, str]],
    command: str,
) -> Run: ...
def inspect(paths: Sequence[str], sources: Sequence[Tuple[str, bytes]], config: Optional[str]) -> List[Dict[str, Any]]: ...
def spans_to_otlp(spans: List[Any]) -> bytes: ...
