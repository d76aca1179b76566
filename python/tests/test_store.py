"""`toolscore.evaluate(..., store=...)`: the run saved as `replay` saves it,
read back with the `toolscore` command."""

from __future__ import annotations

import json
import os
import subprocess
from typing import Any, Dict, List

import pytest

import toolscore


def run(cli: str, *args: str, cwd: str) -> "subprocess.CompletedProcess[bytes]":
    return subprocess.run([cli, *args], cwd=cwd, capture_output=True)


def dumped(rows: List[Dict[str, Any]]) -> List[str]:
    """Rows as JSON text, key order kept: equal texts mean equal rows in the
    same order with their keys in the same order."""
    return [json.dumps(r) for r in rows]


def test_a_store_path_saves_the_run_replay_would(cli: str, repo: str, tmp_path: Any) -> None:
    db = str(tmp_path / "runs.db")
    report = toolscore.evaluate(
        os.path.join(repo, "sample-traces"), os.path.join(repo, "sample-traces/expected.jsonl"), store=db
    )
    assert report.run_id, report.notes
    assert f"run {report.run_id} saved to {db}" in report.notes
    assert report.exit_code == 1, report.notes

    listed = run(cli, "runs", "--store", db, "-f", "jsonl", cwd=repo)
    assert listed.returncode == 0, listed.stderr
    (saved,) = [json.loads(line) for line in listed.stdout.splitlines()]
    assert saved["run"] == report.run_id and saved["finished"] is True
    assert saved["fixture"] == os.path.join(repo, "sample-traces/expected.jsonl")
    scored = len(report.evaluations) + len(report.unmatched_cases)
    passed = sum(1 for e in report.evaluations if e["pass"])
    assert (saved["cases"], saved["passed"], saved["failed"]) == (scored, passed, scored - passed)

    # Its rows are the report's, and the bytes `replay` prints for the same run.
    shown = run(cli, "runs", "show", report.run_id, "--store", db, "-f", "jsonl", cwd=repo)
    assert shown.returncode == 0, shown.stderr
    replayed = run(
        cli, "replay", os.path.join(repo, "sample-traces"), "-e", os.path.join(repo, "sample-traces/expected.jsonl"),
        "-f", "jsonl", "--no-store", cwd=repo,
    )
    assert replayed.returncode == 1, replayed.stderr
    assert shown.stdout == replayed.stdout
    rows = [json.loads(line) for line in shown.stdout.decode().splitlines()]
    by_type: Dict[str, List[Dict[str, Any]]] = {}
    for r in rows:
        by_type.setdefault(r["type"], []).append(r)
    assert dumped(report.evaluations) == dumped(by_type["evaluation"])
    assert dumped(report.unmatched_traces) == dumped(by_type["unmatched_trace"])
    assert dumped(report.unmatched_cases) == dumped(by_type["unmatched_case"])
    assert dumped([report.summary]) == dumped(by_type["summary"])

    # What the saved run records of the call in place of a command line.
    shown = run(cli, "runs", "show", "last", "--store", db, cwd=repo)
    assert shown.returncode == 0 and report.run_id in shown.stdout.decode(), shown.stderr


def test_no_store_by_default(repo: str, tmp_path: Any, monkeypatch: Any) -> None:
    # Not even where the command line would save: TOOLSCORE_STORE is replay's.
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("TOOLSCORE_STORE", str(tmp_path / "env.db"))
    for store in (None, False, "off"):
        report = toolscore.evaluate(os.path.join(repo, "sample-traces"), ["get_weather"], store=store)
        assert report.run_id is None and not any("saved" in n for n in report.notes), report.notes
    assert os.listdir(tmp_path) == []


def test_a_store_that_cannot_be_written_keeps_the_report(repo: str, tmp_path: Any) -> None:
    db = tmp_path / "no-such-dir" / "runs.db"
    report = toolscore.evaluate(
        os.path.join(repo, "sample-traces"), os.path.join(repo, "sample-traces/expected.jsonl"), store=str(db)
    )
    assert report.run_id is None and report.exit_code == 2 and not report.passed
    (note,) = [n for n in report.notes if "run not saved" in n]
    assert str(db) in note, note
    assert len(report.evaluations) == 9, report.explain()


def test_bad_options_raise_with_their_cause(repo: str, tmp_path: Any, monkeypatch: Any) -> None:
    traces = os.path.join(repo, "sample-traces")
    with pytest.raises(ValueError, match="store: True is not a SQLite file path"):
        toolscore.evaluate(traces, ["get_weather"], store=True)
    config = tmp_path / "bad.toml"
    config.write_text("judge = 3\n")
    # The config names the file, then why (the parser's message).
    with pytest.raises(ValueError, match=r"(?s)config .*bad\.toml: TOML parse error at line 1.*expected struct JudgeConfig"):
        toolscore.evaluate(traces, ["get_weather"], config=config)
    with pytest.raises(ValueError, match="invalid option for metric `tool_correctness`: threshold `abc` is not a number"):
        toolscore.evaluate(traces, ["get_weather"], metrics=["tool_correctness:threshold=abc"])
    monkeypatch.setenv("TOOLSCORE_THRESHOLD", "2")
    with pytest.raises(ValueError, match=r"--threshold 2 is outside 0..=1"):
        toolscore.evaluate(traces, ["get_weather"])
