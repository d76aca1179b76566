#!/usr/bin/env python3
"""Writes one OTLP/JSON document holding one agent run with N tool calls of
one tool, each started 1 ns after the last and overlapping the next
thousand, to measure how `inspect` scales with the calls of one run
(tests/treewalks.rs builds the same shape).

    python3 scripts/make-flat.py 60000 /tmp/flat60000.json

Deterministic: the same N gives the same bytes.
"""
import json
import sys

TRACE = "0123456789abcdef0123456789abcdef"


def span(k, parent, when, name, attrs):
    s = {
        "traceId": TRACE,
        "spanId": "%016x" % (k + 1),
        "name": name,
        "kind": 1,
        "startTimeUnixNano": str(when[0]),
        "endTimeUnixNano": str(when[1]),
        "attributes": [{"key": a, "value": {"stringValue": v}} for a, v in attrs],
    }
    if parent is not None:
        s["parentSpanId"] = "%016x" % (parent + 1)
    return s


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    n, out = int(sys.argv[1]), sys.argv[2]
    agent = [
        ("gen_ai.operation.name", "invoke_agent"),
        ("gen_ai.agent.name", "planner"),
        ("gen_ai.agent.id", "agent-planner"),
        ("gen_ai.provider.name", "microsoft.agent_framework"),
    ]
    spans = [span(0, None, (1_000, 10_000_000), "invoke_agent planner", agent)]
    for k in range(1, n + 1):
        tool = [
            ("gen_ai.operation.name", "execute_tool"),
            ("gen_ai.tool.name", "lookup"),
            ("gen_ai.tool.call.id", "call_%d" % k),
            ("gen_ai.tool.type", "function"),
        ]
        spans.append(span(k, 0, (2_000 + k, 3_000 + k), "execute_tool lookup", tool))
    resource = {"attributes": [{"key": "service.name", "value": {"stringValue": "treewalks"}}]}
    doc = {
        "resourceSpans": [
            {"resource": resource, "scopeSpans": [{"scope": {"name": "agent_framework"}, "spans": spans}]}
        ]
    }
    with open(out, "w") as f:
        json.dump(doc, f, separators=(",", ":"))


if __name__ == "__main__":
    main()
