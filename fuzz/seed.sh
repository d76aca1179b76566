#!/usr/bin/env bash
# Writes seed inputs for each fuzz target into fuzz/seeds/<target>/ from the
# repository's own test data and docs. The fuzzer's minimized corpora
# (fuzz/corpus/, committed) start from these.
set -euo pipefail
cd "$(dirname "$0")/.."
out=fuzz/seeds
rm -rf "$out"
mkdir -p "$out"/{otlp_protobuf,otlp_json,file,fixtures,config,http_request}
n=0
put() { # target file-name, content on stdin
  cat > "$out/$1/$2"
}
for f in tests/data/corpus/*/otlp/*.pb; do
  id=$(basename "$(dirname "$(dirname "$f")")")-$(basename "$f" .pb)
  cp "$f" "$out/otlp_protobuf/$id"
  { printf 'content-type: application/x-protobuf\n\n'; cat "$f"; } | put http_request "$id-pb"
done
for f in tests/data/corpus/*/otlp/*.json; do
  id=$(basename "$(dirname "$(dirname "$f")")")-$(basename "$f" .json)
  cp "$f" "$out/otlp_json/$id"
  { printf 'content-type: application/json\n\n'; cat "$f"; } | put http_request "$id-json"
done
# gzip bodies for a few requests (Content-Encoding: gzip).
for f in tests/data/corpus/galtea/otlp/req-000[12].{pb,json}; do
  ct=application/json; [[ $f == *.pb ]] && ct=application/x-protobuf
  { printf 'content-type: %s\ncontent-encoding: gzip\n\n' "$ct"; gzip -9nc "$f"; } \
    | put http_request "gzip-$(basename "$f")"
done
# Whole files: Collector JSONL (first lines only: size), MLflow, Jaeger,
# Zipkin, console, length-prefixed protobuf records, gzip.
for f in tests/data/corpus/*/traces.jsonl; do
  id=$(basename "$(dirname "$f")")
  head -n 3 "$f" | put file "$id-jsonl"
done
for f in tests/data/corpus/mlflow/mlflow-native/*.json tests/data/formats/*; do
  cp "$f" "$out/file/$(basename "$f")"
done
for f in tests/data/corpus/strands/otlp/req-000[1-3].pb; do
  cp "$f" "$out/file/strands-$(basename "$f")"
done
python3 - "$out/file/records.pb" tests/data/corpus/strands/otlp/req-0001.pb tests/data/corpus/strands/otlp/req-0002.pb <<'PY'
import struct, sys
with open(sys.argv[1], "wb") as o:
    for p in sys.argv[2:]:
        b = open(p, "rb").read()
        o.write(struct.pack(">I", len(b)) + b)
PY
head -n 2 tests/data/corpus/galtea/traces.jsonl | gzip -9nc | put file galtea-jsonl.gz
# Fixtures: the corpora's truth files (first cases), the oracle's cases.
for f in tests/data/corpus/*/truth.jsonl; do
  head -n 5 "$f" | put fixtures "$(basename "$(dirname "$f")")-truth"
done
head -n 20 tests/data/oracle/cases.jsonl | put fixtures oracle-cases
head -n 20 tests/data/presets-extra/cases.jsonl | put fixtures presets-cases
# Config: every toml/yaml/json block of the README and docs, the built-in rules.
for md in README.md docs/*.md; do
  awk -v dir="$out/config" -v base="$(basename "$md" .md)" '
    /^```(toml|yaml|yml|json)$/ { n++; f = sprintf("%s/%s-%d", dir, base, n); on = 1; next }
    /^```/ { on = 0; next }
    on { print > f }' "$md"
done
cp src/extract/builtin.toml "$out/config/builtin.toml"
for t in "$out"/*; do echo "$(basename "$t"): $(ls "$t" | wc -l) files, $(du -sh "$t" | cut -f1)"; done
