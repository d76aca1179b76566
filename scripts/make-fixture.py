#!/usr/bin/env python3
"""Writes a big toolscore fixture for the fixture-memory figures
(docs/formats.md, "Fixture memory"; scripts/bench.sh fixtures).

Usage: make-fixture.py small|full CASES OUT

small: {"trace_id", "expected_tools": ["name"]}, as small as cases get.
full:  an id, two calls (one with two arguments), a threshold.
Trace ids are random (seeded): no case joins a trace of sample-traces.
"""
import random
import sys


def main() -> None:
    shape, cases, out = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    rng = random.Random(7)
    tools = ["search", "get_weather", "lookup_order", "send_email", "calc"]
    with open(out, "w") as f:
        for i in range(cases):
            tid = "%032x" % rng.getrandbits(128)
            if shape == "small":
                f.write('{"trace_id":"%s","expected_tools":["%s"]}\n' % (tid, rng.choice(tools)))
            elif shape == "full":
                f.write(
                    '{"id":"case-%d","trace_id":"%s","expected_tools":[{"name":"get_weather",'
                    '"args":{"city":"City %d","units":"C"}},"format_answer"],"threshold":0.8}\n'
                    % (i, tid, i)
                )
            else:
                sys.exit(f"unknown shape {shape!r}: small or full")


if __name__ == "__main__":
    main()
