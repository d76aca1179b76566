#!/usr/bin/env python3
"""Refreshes the saved corpus of a target (corpus/<target>/, committed and
replayed by `cargo test`) from its full merged corpus (work/full/<target>/,
not committed): the 250 smallest inputs plus 150 spread over the larger
ones, under 600 kB, so the repository stays small and the replay fast."""
import os
import shutil
import sys

target = sys.argv[1]
src, dst = f"work/full/{target}", f"corpus/{target}"
files = sorted((os.path.getsize(os.path.join(src, f)), f) for f in os.listdir(src))
pick = files[:250]
rest = files[250:]
if rest:
    pick += rest[:: max(1, len(rest) // 150)][:150]
shutil.rmtree(dst, ignore_errors=True)
os.makedirs(dst)
used = 0
for size, f in sorted(pick):
    if used + size > 600_000:
        break
    shutil.copy(os.path.join(src, f), dst)
    used += size
print(f"{target}: {len(os.listdir(dst))} of {len(files)} inputs saved, {used} bytes")
