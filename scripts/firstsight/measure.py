#!/usr/bin/env python3
"""Measure a held-out set of first-sight runs (docs/first-sight.md).

Each pair is a folder holding `spans.jsonl` (OTLP/JSON lines), optionally
`logs.jsonl`, and `truth.json`: the calls the tool functions received, in the
order they began, as tests/data/firstsight/*.truth.json (`name`, `args`,
`result`, or `"status": "error"` with `error_message`; `"ran": false` for a
call answered without a tool function running). A pair with a file
`out-of-rates.txt` (its reason inside) is listed and left out of the rates.

    python3 measure.py TOOLSCORE SET_DIR [SET_DIR...]

A pair is read when `inspect` gives exactly the truth's calls, as
tests/firstsight.rs compares them, with two allowances the measure has always
made: calls that ran at the same time (one span, or overlapping spans) may
come in any order, and a framework's handoff tools are left out on both sides
(the harness does not run them). With MEASURE_ERRORS=1, a call the truth says
raised is read when it is reported failed with the error's text, whatever
result text the framework sent the model.
"""

import base64
import binascii
import json
import os
import re
import string
import subprocess
import sys

HANDOFF = re.compile(r"^(transfer_to_.*|transfer_back_to_.*|handoff|handoff_to_agent|"
                     r"final_answer|delegate_task)$")


def decoded(v):
    for _ in range(4):
        if not isinstance(v, str):
            break
        try:
            v = json.loads(v.strip())
        except (json.JSONDecodeError, ValueError):
            break
    return v


def inspect(binary, pair):
    files = [os.path.join(pair, "spans.jsonl")]
    logs = os.path.join(pair, "logs.jsonl")
    if os.path.exists(logs):
        files.append(logs)
    env = dict(os.environ, TOOLSCORE_STORE="off")
    out = subprocess.run([binary, "inspect", "--format", "jsonl", "-q", *files],
                         capture_output=True, text=True, env=env, check=False)
    if out.returncode != 0:
        return None, out.stderr.strip()[:300]
    calls = []
    for line in out.stdout.splitlines():
        if line.strip():
            calls.extend(json.loads(line).get("tools") or [])
    calls.sort(key=lambda c: c.get("start_time_unix_nano") or 0)
    return calls, None


def span_times(pair):
    times = {}
    path = os.path.join(pair, "spans.jsonl")
    with open(path, encoding="utf-8") as f:
        for line in f:
            try:
                doc = json.loads(line)
            except json.JSONDecodeError:
                continue
            for rs in doc.get("resourceSpans", []):
                for ss in rs.get("scopeSpans", []):
                    for s in ss.get("spans", []):
                        times[hex_id(s.get("spanId") or "")] = (
                            int(s.get("startTimeUnixNano", 0)), int(s.get("endTimeUnixNano", 0)))
    return times


def hex_id(span_id):
    """A span id as `inspect` prints it: hex. OTLP/JSON writes hex; protobuf's JSON
    mapping (the receiver's `MessageToJson`) writes base64."""
    if len(span_id) == 16 and all(c in string.hexdigits for c in span_id):
        return span_id.lower()
    try:
        return base64.b64decode(span_id, validate=True).hex()
    except (binascii.Error, ValueError):
        return span_id


def call_difference(n, got, want, errors_mode):
    if got.get("name") != want.get("name"):
        return f"call {n}: name {got.get('name')!r}, want {want.get('name')!r}"
    if decoded(got.get("args")) != decoded(want.get("args")):
        return f"call {n}: args {json.dumps(got.get('args'))}, want {json.dumps(want.get('args'))}"
    failed = want.get("status") == "error"
    if not (errors_mode and failed) and "result" in want and want["result"] is not None:
        if decoded(got.get("result")) != decoded(want["result"]):
            return f"call {n}: result {json.dumps(got.get('result'))[:200]}, want " \
                   f"{json.dumps(want['result'])[:200]}"
    if failed and got.get("status") != "error":
        return f"call {n}: status {got.get('status')!r}, want 'error'"
    message = want.get("error_message")
    if message:
        reported = got.get("error_message") or ""
        if errors_mode and not reported:
            reported = json.dumps(got.get("result"))
        if message not in reported:
            return f"call {n}: error message {reported[:200]!r}, want one holding {message!r}"
    return None


def groups(calls, times):
    out, end = [], 0
    for c in calls:
        st, en = times.get(c.get("span_id"), (c.get("start_time_unix_nano") or 0, 0))
        same = out and out[-1][-1][0].get("span_id") == c.get("span_id")
        if out and (same or st < end):
            out[-1].append((c, st))
        else:
            out.append([(c, st)])
            end = 0
        end = max(end, en)
    return out


def difference(calls, truth, times, errors_mode):
    if len(calls) != len(truth):
        got = ", ".join(f"{c.get('name')} [{c.get('convention')}]" for c in calls)
        return f"{len(calls)} calls, want {len(truth)}: {got}"
    first = None
    for i, (g, w) in enumerate(zip(calls, truth)):
        first = call_difference(i + 1, g, w, errors_mode)
        if first:
            break
    if not first:
        return None
    # Calls that ran at the same time: the truth's order among them is the scheduler's.
    at = 0
    for group in groups(calls, times):
        wants = list(truth[at:at + len(group)])
        for c, _ in group:
            hit = next((w for w in wants if not call_difference(0, c, w, errors_mode)), None)
            if hit is None:
                return first
            wants.remove(hit)
        at += len(group)
    return None


def measure_pair(binary, pair, errors_mode):
    with open(os.path.join(pair, "truth.json"), encoding="utf-8") as f:
        truth = [t for t in json.load(f) if not HANDOFF.match(t.get("name", ""))]
    calls, err = inspect(binary, pair)
    if calls is None:
        return f"inspect failed: {err}"
    calls = [c for c in calls if not HANDOFF.match(c.get("name") or "")]
    times = span_times(pair)
    diff = difference(calls, truth, times, errors_mode)
    ran = [t for t in truth if t.get("ran") is not False]
    if diff and len(ran) != len(truth) and not difference(calls, ran, times, errors_mode):
        return None
    return diff


def main():
    if len(sys.argv) < 3:
        print(__doc__, file=sys.stderr)
        return 2
    binary, sets = sys.argv[1], sys.argv[2:]
    errors_mode = os.environ.get("MEASURE_ERRORS") == "1"
    read = total = out = 0
    for s in sets:
        for name in sorted(os.listdir(s)):
            pair = os.path.join(s, name)
            if not os.path.exists(os.path.join(pair, "truth.json")):
                continue
            reason_file = os.path.join(pair, "out-of-rates.txt")
            if os.path.exists(reason_file):
                with open(reason_file, encoding="utf-8") as f:
                    print(f"OUT   {name}: {f.read().strip()}")
                out += 1
                continue
            total += 1
            diff = measure_pair(binary, pair, errors_mode)
            if diff is None:
                read += 1
                print(f"READ  {name}")
            else:
                print(f"MISS  {name}: {diff}")
    mode = " (MEASURE_ERRORS=1)" if errors_mode else ""
    print(f"read {read}/{total}{mode}; {out} out of the rates")
    return 0


if __name__ == "__main__":
    sys.exit(main())
