"""The wheel's `toolscore` command (the command line run in process by the
native module) as users run it: exit codes, and a clean stop of `serve`."""

from __future__ import annotations

import selectors
import signal
import subprocess
import time


def test_version_and_usage_errors(cli: str) -> None:
    done = subprocess.run([cli, "--version"], capture_output=True, text=True)
    assert done.returncode == 0 and done.stdout.startswith("toolscore "), done
    done = subprocess.run([cli, "replay"], capture_output=True, text=True)
    assert done.returncode == 2 and "required" in done.stderr, done.stderr


def test_quick_start_exits_1_with_the_table(cli: str, repo: str) -> None:
    done = subprocess.run(
        [cli, "replay", "sample-traces", "--expected", "sample-traces/expected.jsonl"],
        cwd=repo, capture_output=True, text=True,
    )
    assert done.returncode == 1, done.stderr
    assert "mlflow-trip-wrong-city" in done.stdout


def test_serve_stops_cleanly_on_sigint(cli: str) -> None:
    # Python ignores SIGINT while native code runs unless the command line
    # takes it over: serve must shut down as the binary does.
    serve = subprocess.Popen(
        [cli, "serve", "--grpc-endpoint", "127.0.0.1:0", "--http-endpoint", "127.0.0.1:0", "--admin-endpoint", "off"],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
    )
    try:
        seen = ""
        with selectors.DefaultSelector() as sel:
            sel.register(serve.stderr, selectors.EVENT_READ)  # type: ignore[arg-type]
            deadline = time.monotonic() + 30
            while "Listening." not in seen:
                left = deadline - time.monotonic()
                assert left > 0, f"serve did not start listening within 30 s: {seen}"
                if sel.select(timeout=left):
                    line = serve.stderr.readline()  # type: ignore[union-attr]
                    assert line, f"serve exited before listening: {seen}"
                    seen += line
        serve.send_signal(signal.SIGINT)
        rest = serve.communicate(timeout=30)[1]
        assert serve.returncode == 0, seen + rest
        assert "Shut down." in rest, rest
    finally:
        if serve.poll() is None:
            serve.kill()
            serve.wait()
