# The native module's functions; the package's public API wraps them (_api.py).
from typing import Any, Callable, List, Optional, Sequence, Tuple

__version__: str

def run_cli(argv: Sequence[str]) -> int: ...
def evaluate(
    flags: Sequence[str],
    sources: Sequence[Tuple[str, bytes]],
    expected: Tuple[str, str, str],
    custom: Sequence[Tuple[str, Optional[float], Callable[[str, str], Tuple[float, str]]]],
) -> Tuple[str, str, int, List[str]]: ...
def inspect(flags: Sequence[str], sources: Sequence[Tuple[str, bytes]]) -> str: ...
def spans_to_otlp(spans: List[Any]) -> bytes: ...
