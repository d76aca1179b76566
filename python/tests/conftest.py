"""Shared setup: one SDK TracerProvider for the whole session (the plugin
adds its collector to it), and the toolscore command the wheel installed."""

from __future__ import annotations

import os
import shutil
import sys

import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider

pytest_plugins = ["pytester"]

# The commands run from the checkout, which must not get a run store (.toolscore/).
os.environ.setdefault("TOOLSCORE_STORE", "off")

if not hasattr(trace.get_tracer_provider(), "add_span_processor"):
    trace.set_tracer_provider(TracerProvider())

# The tests may run from a copy (scripts/test-wheel.sh): TOOLSCORE_REPO names
# the checkout whose data they read.
ROOT = os.environ.get("TOOLSCORE_REPO") or os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@pytest.fixture
def repo() -> str:
    """The repository root (sample-traces/, tests/data/)."""
    return ROOT


@pytest.fixture
def cli() -> str:
    """The `toolscore` command installed with the wheel under test."""
    here = os.path.join(os.path.dirname(sys.executable), "toolscore")
    path = here if os.path.exists(here) else shutil.which("toolscore")
    assert path, "no toolscore command next to this Python or on PATH: install the wheel first"
    return path
