#!/usr/bin/env python3
"""Writes the inputs of the run-store figures (docs/performance.md, "Run
store"; scripts/bench.sh store).

Usage: make-store-bench.py traces N TRACES FIXTURE
       make-store-bench.py store RUNS CASES DB SCHEMA_RS

traces: N traces as OTLP/JSON lines (an agent span and one tool call each)
        and a fixture of N cases joined by trace id (every 7th fails), so a
        replay writes N evaluation rows.
store:  a SQLite run store (schema of toolscore's migration 1) holding RUNS
        finished runs of one fixture with CASES results each, as `runs` and
        `trend` read them; each run keeps only its summary row.
"""
import json
import random
import re
import sqlite3
import sys


def traces(n: int, traces_out: str, fixture_out: str) -> None:
    rng = random.Random(7)
    with open(traces_out, "w") as t, open(fixture_out, "w") as f:
        for i in range(n):
            tid = "%032x" % rng.getrandbits(128)
            root, call = "%016x" % (2 * i + 1), "%016x" % (2 * i + 2)
            spans = [
                {"traceId": tid, "spanId": root, "name": "invoke_agent planner", "kind": 2,
                 "startTimeUnixNano": "1000", "endTimeUnixNano": "9000",
                 "attributes": [{"key": "gen_ai.operation.name", "value": {"stringValue": "invoke_agent"}}]},
                {"traceId": tid, "spanId": call, "parentSpanId": root, "name": "execute_tool search",
                 "kind": 1, "startTimeUnixNano": "2000", "endTimeUnixNano": "3000",
                 "attributes": [
                     {"key": "gen_ai.operation.name", "value": {"stringValue": "execute_tool"}},
                     {"key": "gen_ai.tool.name", "value": {"stringValue": "search"}},
                     {"key": "gen_ai.tool.call.arguments", "value": {"stringValue": json.dumps({"q": "query %d" % i})}},
                 ]},
            ]
            t.write(json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": spans}]}]}) + "\n")
            tool = "lookup" if i % 7 == 0 else "search"
            f.write('{"id":"case-%d","trace_id":"%s","expected_tools":["%s"]}\n' % (i, tid, tool))


def store(runs: int, cases: int, db_path: str, schema_sql: str) -> None:
    db = sqlite3.connect(db_path)
    db.executescript(schema_sql)
    rng = random.Random(7)
    for r in range(runs):
        passes = [rng.random() > 0.1 for _ in range(cases)]
        passed = sum(passes)
        cur = db.execute(
            "INSERT INTO runs (id, started_ms, ended_ms, finished, version, command, fixture, settings,"
            " inputs, traces, spans, rejected, cases, passed, failed, mean_score, exit_code)"
            " VALUES (?, ?, ?, 1, '0.1.0', '[]', 'cases.jsonl', '{}', 1, ?, ?, 0, ?, ?, ?, ?, 1)",
            ("20260101-000000-%06x" % r, 1_767_225_600_000 + r * 60_000, 1_767_225_601_000 + r * 60_000,
             cases, 2 * cases, cases, passed, cases - passed, passed / cases),
        )
        seq = cur.lastrowid
        db.execute("INSERT INTO rows (run_seq, n, line) VALUES (?, 0, '{\"type\":\"summary\"}')", (seq,))
        db.executemany(
            "INSERT INTO results (run_seq, n, case_id, target, pass, score) VALUES (?, ?, ?, ?, ?, ?)",
            ((seq, c, "case-%d" % c, "%032x" % c, p, 1.0 if p else 0.5) for c, p in enumerate(passes)),
        )
    db.commit()


def main() -> None:
    if sys.argv[1] == "traces":
        traces(int(sys.argv[2]), sys.argv[3], sys.argv[4])
    elif sys.argv[1] == "store":
        # The schema comes from the source (every migration, in order), so
        # the two cannot drift apart.
        src = open(sys.argv[5], encoding="utf-8").read()
        schema, at = "", 0
        while 'sqlite: "' in src[at:]:
            start = src.index('sqlite: "', at) + len('sqlite: "')
            at = src.index('",', start)
            schema += src[start:at]
        latest = re.search(r"pub const LATEST: i64 = (\d+);", src).group(1)
        schema = "CREATE TABLE toolscore_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);" \
            "INSERT INTO toolscore_meta VALUES ('schema_version', '%s');" % latest + schema
        store(int(sys.argv[2]), int(sys.argv[3]), sys.argv[4], schema)
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
