"""`toolscore.evaluate(..., store=...)`: the run saved as `replay` saves it,
read back with the `toolscore` command."""

from __future__ import annotations

import glob
import json
import os
import shutil
import socket
import subprocess
import tempfile
from typing import Any, Dict, Iterator, List, Optional

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
        os.path.join(repo, "sample-traces"),
        os.path.join(repo, "sample-traces/expected.jsonl"),
        store=db,
        labels={"ci": "local"},
    )
    assert report.run_id, report.notes
    assert f"run {report.run_id} saved to {db}" in report.notes
    assert report.exit_code == 1, report.notes

    listed = run(cli, "runs", "--store", db, "-f", "jsonl", cwd=repo)
    assert listed.returncode == 0, listed.stderr
    (saved,) = [json.loads(line) for line in listed.stdout.splitlines()]
    assert saved["run"] == report.run_id and saved["finished"] is True
    assert saved["labels"] == {"ci": "local"}
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


def pg_program(name: str) -> Optional[str]:
    """A PostgreSQL program, on PATH or where Debian puts it."""
    found = sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}"))
    return shutil.which(name) or (found[-1] if found else None)


@pytest.fixture
def postgres() -> Iterator[str]:
    """A PostgreSQL server of the test's own on 127.0.0.1, as tests/store.rs
    starts one: its URL. Missing PostgreSQL skips the test, or fails it under
    CI=true (a CI run must check what it claims to)."""
    initdb, pg_ctl = pg_program("initdb"), pg_program("pg_ctl")
    if not (initdb and pg_ctl):
        missing = "PostgreSQL (initdb, pg_ctl) is not installed (Debian's postgresql package)"
        if os.environ.get("CI") == "true":
            pytest.fail(f"{missing} (CI=true: a missing tool fails the run)")
        pytest.skip(missing)
    # PostgreSQL refuses to run as root: then as the `postgres` user, in a
    # directory it can reach.
    runuser = shutil.which("runuser", path=os.pathsep.join([os.environ.get("PATH", ""), "/usr/sbin", "/sbin"]))
    as_user = [runuser or "runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []
    top = tempfile.mkdtemp(prefix="toolscore-pytest-pg-")
    os.chmod(top, 0o777)
    data = os.path.join(top, "data")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]

    def run(*args: str) -> None:
        done = subprocess.run([*as_user, *args], capture_output=True, stdin=subprocess.DEVNULL)
        assert done.returncode == 0, (args, done.stderr.decode(errors="replace"))

    try:
        run(initdb, "-D", data, "-A", "trust", "-U", "toolscore", "--no-sync")
        options = f"-p {port} -k {top} -c listen_addresses=127.0.0.1 -c fsync=off"
        # -w: pg_ctl returns once the server takes connections.
        run(pg_ctl, "-D", data, "-o", options, "-l", os.path.join(top, "log"), "-w", "-t", "120", "start")
        yield f"postgres://toolscore@127.0.0.1:{port}/postgres"
    finally:
        subprocess.run([*as_user, pg_ctl, "-D", data, "-m", "immediate", "-w", "stop"], capture_output=True)
        shutil.rmtree(top, ignore_errors=True)


def test_labels_are_saved_with_the_run_in_postgres(cli: str, repo: str, postgres: str) -> None:
    traces = os.path.join(repo, "sample-traces")
    fixture = os.path.join(repo, "sample-traces/expected.jsonl")
    labelled = toolscore.evaluate(traces, fixture, store=postgres, labels={"ci": "nightly", "model": "m 1"})
    assert labelled.run_id, labelled.notes
    other = toolscore.evaluate(traces, fixture, store=postgres, labels={"ci": "weekly"})
    assert other.run_id and other.run_id != labelled.run_id, other.notes

    def listed(*label: str) -> List[Dict[str, Any]]:
        args = [a for kv in label for a in ("--label", kv)]
        done = run(cli, "runs", "--store", postgres, "-f", "jsonl", *args, cwd=repo)
        assert done.returncode == 0, done.stderr
        return [json.loads(line) for line in done.stdout.splitlines()]

    (found,) = listed("ci=nightly")
    assert found["run"] == labelled.run_id
    assert found["labels"] == {"ci": "nightly", "model": "m 1"}
    assert [r["run"] for r in listed("model=m 1")] == [labelled.run_id]
    assert {r["run"] for r in listed()} == {labelled.run_id, other.run_id}


def test_bad_labels_raise_and_save_nothing(repo: str, tmp_path: Any) -> None:
    traces = os.path.join(repo, "sample-traces")
    db = tmp_path / "runs.db"
    with pytest.raises(ValueError, match=r"labels: 'k': 1 is not a text key and value"):
        toolscore.evaluate(traces, ["get_weather"], store=str(db), labels={"k": 1})
    with pytest.raises(ValueError, match=r"labels: \['k=v'\] is not a dict"):
        toolscore.evaluate(traces, ["get_weather"], store=str(db), labels=["k=v"])
    with pytest.raises(ValueError, match=r"labels: the key of \"v\" is empty"):
        toolscore.evaluate(traces, ["get_weather"], store=str(db), labels={" ": "v"})
    assert not db.exists()
