#!/usr/bin/env bash
# Times `inspect --format jsonl -q` of one file with several builds run in
# turn (docs/performance.md, the inspect budget): two warm-ups of each, then
# ROUNDS rounds (default 21), each build once per round, under
# /usr/bin/time. Prints, per build, its runs' summed user+sys CPU, that sum
# against the first build's, the median run and the median peak RSS.
#
# Usage: scripts/inturn.sh FILE BIN [BIN...]      (ROUNDS=31 for more)
# FILE: e.g. `python3 scripts/make-copies.py 100 /tmp/c100.jsonl`.
set -euo pipefail

if [ $# -lt 2 ]; then
    echo "usage: scripts/inturn.sh FILE BIN [BIN...]" >&2
    exit 2
fi
file=$1
shift
rounds=${ROUNDS:-21}
log=$(mktemp)
trap 'rm -f "$log"' EXIT
export TOOLSCORE_STORE=off

for bin in "$@"; do
    for _ in 1 2; do
        "$bin" inspect "$file" --format jsonl -q >/dev/null
    done
done
for r in $(seq 1 "$rounds"); do
    for i in $(seq 1 $#); do
        bin=${!i}
        /usr/bin/time -f "$i %U %S %M" -a -o "$log" "$bin" inspect "$file" --format jsonl -q >/dev/null
    done
    printf '\rround %d/%d' "$r" "$rounds" >&2
done
printf '\n' >&2

python3 - "$log" "$@" <<'EOF'
import statistics
import sys

log, bins = sys.argv[1], sys.argv[2:]
cpu, rss = {}, {}
for line in open(log):
    i, user, sys_, kib = line.split()
    cpu.setdefault(int(i), []).append(float(user) + float(sys_))
    rss.setdefault(int(i), []).append(int(kib) / 1024)
base = sum(cpu[1])
for i, b in enumerate(bins, 1):
    print(f"{b}: {len(cpu[i])} runs, CPU sum {sum(cpu[i]):.2f} s ({sum(cpu[i]) / base:.3f} x the first),"
          f" median {statistics.median(cpu[i]):.3f} s, peak RSS median {statistics.median(rss[i]):.1f} MiB")
EOF
