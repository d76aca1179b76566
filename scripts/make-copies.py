#!/usr/bin/env python3
"""Writes N copies of Collector JSON-lines trace files, each copy with fresh
trace and span ids, to measure replay at scale (issue: replay at scale).

    python3 scripts/make-copies.py 50 /tmp/big.jsonl              # the test corpus
    python3 scripts/make-copies.py 200 /tmp/big.jsonl a.jsonl ...  # other files

Ids are rewritten wherever they appear as "traceId"/"spanId"/"parentSpanId"
(hex), so parents, links and traces stay consistent within a copy and never
collide across copies. Deterministic: the same N gives the same bytes.
"""
import glob
import hashlib
import os
import re
import sys

ID = re.compile(rb'"(traceId|spanId|parentSpanId)":"([0-9a-fA-F]+)"')


def main() -> None:
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    copies, out = int(sys.argv[1]), sys.argv[2]
    here = os.path.dirname(os.path.abspath(__file__))
    sources = sys.argv[3:] or sorted(
        glob.glob(os.path.join(here, "..", "tests", "data", "corpus", "*", "traces.jsonl"))
    )
    lines = []
    for path in sources:
        with open(path, "rb") as f:
            lines.extend(l.rstrip(b"\n") for l in f if l.strip())
    with open(out, "wb") as f:
        for k in range(copies):
            salt = k.to_bytes(4, "big")
            memo = {}

            def fresh(m):
                old = m.group(2)
                new = memo.get(old)
                if new is None:
                    digest = hashlib.blake2b(salt + old.lower(), digest_size=16).hexdigest()
                    new = memo[old] = digest[: len(old)].encode()
                return b'"' + m.group(1) + b'":"' + new + b'"'

            for line in lines:
                f.write(ID.sub(fresh, line))
                f.write(b"\n")
    print(f"{out}: {copies} copies of {len(lines)} lines from {len(sources)} files, "
          f"{os.path.getsize(out) / 1e6:.1f} MB", file=sys.stderr)


if __name__ == "__main__":
    main()
