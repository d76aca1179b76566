#!/usr/bin/env bash
# Fuzzes one target for a time, then merges what it found into the saved
# corpus (fuzz/corpus/<target>/, only inputs that add coverage are kept).
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
nice -n 19 "$bin" "$work" "corpus/$target" "${seeds[@]}" \
  -max_total_time="$secs" -rss_limit_mb=2048 -timeout=10 \
  -artifact_prefix=artifacts/"$target"- -print_final_stats=1 "$@" 2>&1 | tee "$target.log" | grep -E "^#|DONE|ERROR|panicked|stat::" | tail -25
# Minimize: keep the inputs of the old corpus, the seeds and the new ones
# that add coverage.
mkdir -p "corpus/$target.new"
nice -n 19 "$bin" -merge=1 "corpus/$target.new" "corpus/$target" "$work" "${seeds[@]}" \
  -rss_limit_mb=2048 -timeout=10 >"$target.merge.log" 2>&1
rm -rf "corpus/$target"
mv "corpus/$target.new" "corpus/$target"
echo "$target: $(ls "corpus/$target" | wc -l) inputs, $(du -sh "corpus/$target" | cut -f1) saved"
