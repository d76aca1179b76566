#!/usr/bin/env python3
"""Write a captured first-sight pair anew, as tests/data/firstsight/ keeps them.

    python3 anew.py PAIR_DIR OUT_STEM TAG SUBS.json

PAIR_DIR holds `spans.jsonl` (and maybe `logs.jsonl`) and `truth.json`, as
`receiver.py` and a run leave them. Writes OUT_STEM.jsonl (compact OTLP/JSON
lines of the spans), OUT_STEM.logs.jsonl (of the logs, when the run wrote any)
and OUT_STEM.truth.json with:

- ids of our own: every trace and span id, hex or base64, becomes TAG (a few hex
  digits) followed by a counter, the same id the same new one everywhere;
- times moved so that the earliest is a fixed base, the gaps kept;
- the resource attributes that name the machine or process dropped;
- every string (attribute values, names, the truth) rewritten by SUBS.json, an
  object of old -> new texts applied longest first. Give both spellings of a
  text that also sits JSON-escaped inside another JSON text.

What the substitutions do not reach (a number inside the truth's arguments,
say) is fixed by hand; read the output for the run's own words before
committing it (docs/first-sight.md: pairs are written anew, with values of
our own).
"""

import base64
import binascii
import json
import os
import string
import sys

BASE_NANOS = 1796600000000000000
ID_KEYS = ("traceId", "spanId", "parentSpanId")
TIME_KEYS = ("startTimeUnixNano", "endTimeUnixNano", "timeUnixNano", "observedTimeUnixNano")
MACHINE_KEYS = ("service.instance.id", "host.name", "host.id", "process.pid")


def hex_id(v):
    if len(v) in (16, 32) and all(c in string.hexdigits for c in v):
        return v.lower()
    try:
        return base64.b64decode(v, validate=True).hex()
    except (binascii.Error, ValueError):
        return v


class Rewriter:
    def __init__(self, tag, subs):
        self.tag, self.subs = tag, subs
        self.order = sorted(subs, key=len, reverse=True)
        self.ids = {}
        self.t0 = None

    def text(self, s):
        for k in self.order:
            s = s.replace(k, self.subs[k])
        return s

    def new_id(self, v):
        h = hex_id(v)
        if not h:
            return v
        n = self.ids.setdefault(h, len(self.ids) + 1)
        body = format(n, "x")
        return (self.tag + "0" * len(h))[: len(h) - len(body)] + body

    def earliest(self, v):
        if isinstance(v, dict):
            for k, x in v.items():
                if k in TIME_KEYS and x and int(x) > 0:
                    self.t0 = int(x) if self.t0 is None else min(self.t0, int(x))
                self.earliest(x)
        elif isinstance(v, list):
            for x in v:
                self.earliest(x)

    def value(self, v):
        if isinstance(v, dict):
            if v.get("key") in MACHINE_KEYS:
                return None
            out = {}
            for k, x in v.items():
                if k in ID_KEYS and isinstance(x, str):
                    out[k] = self.new_id(x)
                elif k in TIME_KEYS and x and int(x) > 0:
                    out[k] = str(BASE_NANOS + int(x) - self.t0)
                else:
                    out[k] = self.value(x)
            return out
        if isinstance(v, list):
            return [r for r in (self.value(x) for x in v) if r is not None]
        if isinstance(v, str):
            return self.text(v)
        return v

    def truth(self, v):
        if isinstance(v, dict):
            return {self.text(k): self.truth(x) for k, x in v.items()}
        if isinstance(v, list):
            return [self.truth(x) for x in v]
        return self.text(v) if isinstance(v, str) else v


def main():
    if len(sys.argv) != 5:
        print(__doc__, file=sys.stderr)
        return 2
    pair, stem, tag, subs_file = sys.argv[1:]
    with open(subs_file, encoding="utf-8") as f:
        r = Rewriter(tag, json.load(f))
    # Spans to OUT_STEM.jsonl, logs to OUT_STEM.logs.jsonl: the tests send
    # each file to its own OTLP path.
    files = {}
    for name, out in (("spans.jsonl", stem + ".jsonl"), ("logs.jsonl", stem + ".logs.jsonl")):
        path = os.path.join(pair, name)
        if os.path.exists(path):
            with open(path, encoding="utf-8") as f:
                files[out] = [json.loads(line) for line in f if line.strip()]
    docs = [d for ds in files.values() for d in ds]
    for d in docs:
        r.earliest(d)
    for out, ds in files.items():
        if not ds:
            continue
        with open(out, "w", encoding="utf-8") as f:
            for d in ds:
                f.write(json.dumps(r.value(d), separators=(",", ":"), ensure_ascii=False) + "\n")
    with open(os.path.join(pair, "truth.json"), encoding="utf-8") as f:
        truth = r.truth(json.load(f))
    with open(stem + ".truth.json", "w", encoding="utf-8") as f:
        json.dump(truth, f, indent=1, ensure_ascii=False)
        f.write("\n")
    print(f"{stem}: {len(docs)} lines, {len(r.ids)} ids")
    return 0


if __name__ == "__main__":
    sys.exit(main())
