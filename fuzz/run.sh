#!/usr/bin/env bash
# Fuzzes one target for a time, merges what it found into the full corpus
# (work/full/<target>/, only inputs that add coverage are kept; not
# committed), then refreshes the saved selection (corpus/<target>/, pick.py).
# Usage: fuzz/run.sh TARGET SECONDS [libFuzzer flags...]
set -euo pipefail
cd "$(dirname "$0")"
target=$1 secs=$2
shift 2
host=$(rustc -vV | sed -n 's/^host: //p')
bin=target/$host/release/$target
work=work/$target
mkdir -p "$work" "corpus/$target" artifacts
seeds=()
[[ -d seeds/$target ]] && seeds=("seeds/$target")
# Start from the saved corpus and the seeds; new inputs go to $work.
mkdir -p "work/full/$target"
nice -n 19 "$bin" "$work" "work/full/$target" "corpus/$target" "${seeds[@]}" \
  -max_total_time="$secs" -rss_limit_mb=2048 -timeout=10 \
  -artifact_prefix=artifacts/"$target"- -print_final_stats=1 "$@" 2>&1 | tee "$target.log" | grep -E "^#|DONE|ERROR|panicked|stat::" | tail -25
# Minimize: keep the inputs of the full and saved corpora, the seeds and
# the new ones that add coverage.
full=work/full/$target
mkdir -p "$full" "$full.new"
nice -n 19 "$bin" -merge=1 "$full.new" "$full" "corpus/$target" "$work" "${seeds[@]}" \
  -rss_limit_mb=2048 -timeout=10 >"$target.merge.log" 2>&1
rm -rf "$full"
mv "$full.new" "$full"
./pick.py "$target"
