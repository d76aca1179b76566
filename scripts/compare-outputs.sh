#!/usr/bin/env bash
# Compares two builds' `inspect --format jsonl` rows and stderr on every trace file of the
# repository's data, sample-traces and ../shared/corpus (when it is there): what a refactor
# must leave unchanged, and what a reader changes. Lists the files that differ.
#
#   scripts/compare-outputs.sh OLD_BINARY NEW_BINARY [OUT_DIR]
#
# OUT_DIR (default target/compare-outputs) keeps both sides' rows, `<file>.err` their stderr
# and exit code, for `diff`.
set -euo pipefail
if [ $# -lt 2 ]; then
  sed -n '2,9p' "$0" >&2
  exit 2
fi
old=$(realpath "$1")
new=$(realpath "$2")
cd "$(dirname "$0")/.."
out=${3:-target/compare-outputs}
rm -rf "$out"
mkdir -p "$out/old" "$out/new"
dirs=(tests/data sample-traces)
[ -d ../shared/corpus ] && dirs+=(../shared/corpus)
files=0
differ=0
while IFS= read -r f; do
  key=$(printf '%s' "$f" | tr '/' '_')
  for side in old new; do
    bin=$old
    [ "$side" = new ] && bin=$new
    rc=0
    TOOLSCORE_STORE=off "$bin" inspect --format jsonl -q "$f" >"$out/$side/$key" 2>"$out/$side/$key.err" || rc=$?
    echo "rc=$rc" >>"$out/$side/$key.err"
  done
  files=$((files + 1))
  if ! cmp -s "$out/old/$key" "$out/new/$key" || ! cmp -s "$out/old/$key.err" "$out/new/$key.err"; then
    differ=$((differ + 1))
    echo "differs: $f"
  fi
done < <(find "${dirs[@]}" -type f \( -name '*.jsonl' -o -name '*.json' -o -name '*.pb' \) \
  ! -name '*truth*' | sort)
echo "$files files, $differ differ (rows and stderr in $out)"
