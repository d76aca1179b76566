#!/usr/bin/env bash
# End to end behind a real collector: corpus requests -> rotel (OTLP/HTTP in)
# -> rotel's OTLP exporter (gRPC, then HTTP; gzip) -> `toolscore serve`, and
# the per-trace results must equal `toolscore replay` on the same files.
#
# rotel (a Rust OpenTelemetry collector) comes from PyPI: `rotel==0.0.1a15`
# ships the `rotel-agent` binary inside its wheel. It is installed into a venv
# under target/ (reused when present). Everything listens on 127.0.0.1.
#
# Usage: scripts/e2e-rotel.sh            (from anywhere; builds toolscore)
# Env:   TOOLSCORE_BIN   use this binary instead of building one
#        E2E_DIR        work folder (default: target/e2e-rotel)
#        E2E_SOURCES    corpus sources (default: all under tests/data/corpus)
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
WORK="${E2E_DIR:-$ROOT/target/e2e-rotel}"
CORPUS="$ROOT/tests/data/corpus"
mkdir -p "$WORK"
START=$(date +%s)

log() { echo "e2e-rotel: $*" >&2; }
die() { log "FAIL: $*"; exit 1; }

# ---------------------------------------------------------------- rotel
VENV="$WORK/venv"
AGENT=$(ls "$VENV"/lib/python3*/site-packages/rotel/rotel-agent 2>/dev/null | head -1 || true)
if [[ -z "$AGENT" ]]; then
    log "installing rotel==0.0.1a15 into $VENV"
    python3 -m venv "$VENV"
    "$VENV/bin/pip" install --quiet --disable-pip-version-check rotel==0.0.1a15
    AGENT=$(ls "$VENV"/lib/python3*/site-packages/rotel/rotel-agent | head -1)
fi
[[ -x "$AGENT" ]] || die "no rotel-agent binary in the rotel wheel"
log "$("$AGENT" --version)"

# ------------------------------------------------------------- toolscore
if [[ -n "${TOOLSCORE_BIN:-}" ]]; then
    BIN="$TOOLSCORE_BIN"
else
    (cd "$ROOT" && cargo build --locked --quiet --bin toolscore)
    BIN="$ROOT/target/debug/toolscore"
fi
[[ -x "$BIN" ]] || die "no toolscore binary at $BIN"

# --------------------------------------------------------------- inputs
if [[ -n "${E2E_SOURCES:-}" ]]; then
    read -r -a SOURCES <<<"$E2E_SOURCES"
else
    SOURCES=()
    for d in "$CORPUS"/*/; do
        [[ -d "$d/otlp" ]] && SOURCES+=("$(basename "$d")")
    done
fi
FILES=()
for s in "${SOURCES[@]}"; do
    while IFS= read -r f; do FILES+=("$f"); done < <(ls "$CORPUS/$s"/otlp/req-*.pb | sort)
done
[[ ${#FILES[@]} -gt 0 ]] || die "no .pb files found"

# One case per trace, from each source's truth.
FIXTURE="$WORK/cases.jsonl"
python3 - "$CORPUS" "${SOURCES[@]}" >"$FIXTURE" <<'EOF'
import json, sys
corpus, sources = sys.argv[1], sys.argv[2:]
for s in sources:
    for line in open(f"{corpus}/{s}/truth.jsonl"):
        t = json.loads(line)
        print(json.dumps({"id": f"{s}/{t['scenario']}", "trace_id": t["trace_id"],
                          "expected_tools": t["tools_in_order"]}))
EOF

# What replay says: the reference.
"$BIN" replay --format jsonl -q --no-store --expected "$FIXTURE" "${FILES[@]}" >"$WORK/replay.jsonl" || [[ $? -eq 1 ]]

# N free ports, all different: every socket stays bound until all are, so
# the kernel cannot hand the same port out twice (one port per call could:
# a released port may come back at once).
free_ports() { # n
    python3 -c 'import socket, sys
socks = [socket.socket() for _ in range(int(sys.argv[1]))]
for s in socks:
    s.bind(("127.0.0.1", 0))
print(" ".join(str(s.getsockname()[1]) for s in socks))' "$1"
}

wait_port() { # port, what
    for _ in $(seq 1 100); do
        if (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; then return 0; fi
        sleep 0.1
    done
    die "$2 is not listening on 127.0.0.1:$1"
}

wait_exit() { # pid, what, seconds
    for _ in $(seq 1 $(($3 * 10))); do
        kill -0 "$1" 2>/dev/null || { wait "$1"; return $?; }
        sleep 0.1
    done
    kill -KILL "$1" 2>/dev/null || true
    die "$2 did not exit within $3 s of SIGTERM"
}

PIDS=()
cleanup() {
    for p in "${PIDS[@]:-}"; do
        [[ -n "$p" ]] && kill -KILL "$p" 2>/dev/null || true
    done
}
trap cleanup EXIT

run() { # exporter protocol: grpc | http
    local proto=$1 tg th rh rg dh out down
    read -r tg th rh rg dh < <(free_ports 5)
    out="$WORK/serve-$proto.jsonl"
    down="$WORK/downstream-$proto.jsonl"
    rm -f "$out" "$down"
    # A downstream backend: a second toolscore that only lists what it gets.
    "$BIN" serve --grpc-endpoint off --http-endpoint "127.0.0.1:$dh" --admin-endpoint off \
        --decision-wait 1s --output "$down" --quiet 2>"$WORK/downstream-$proto.log" &
    local down_pid=$!
    PIDS+=("$down_pid")
    wait_port "$dh" "downstream toolscore (HTTP)"
    "$BIN" serve --grpc-endpoint "127.0.0.1:$tg" --http-endpoint "127.0.0.1:$th" --admin-endpoint off \
        --decision-wait 2s --expected "$FIXTURE" --output "$out" --quiet \
        --forward "http://127.0.0.1:$dh" --results-otlp off \
        2>"$WORK/serve-$proto.log" &
    local serve_pid=$!
    PIDS+=("$serve_pid")
    wait_port "$tg" "toolscore serve (gRPC)"
    wait_port "$th" "toolscore serve (HTTP)"
    local target=$tg
    [[ $proto == http ]] && target=$th
    "$AGENT" start --otlp-http-endpoint "127.0.0.1:$rh" --otlp-grpc-endpoint "127.0.0.1:$rg" \
        --exporter otlp --otlp-exporter-endpoint "http://127.0.0.1:$target" \
        --otlp-exporter-protocol "$proto" \
        --pid-file "$WORK/rotel-$proto.pid" --log-file "$WORK/rotel-$proto.log" \
        >"$WORK/rotel-$proto.out" 2>&1 &
    local rotel_pid=$!
    PIDS+=("$rotel_pid")
    wait_port "$rh" "rotel (OTLP/HTTP receiver)"

    # The corpus, in arrival order, through rotel.
    local f code
    for f in "${FILES[@]}"; do
        code=$(curl -s -o /dev/null -w '%{http_code}' --max-time 10 \
            -H 'Content-Type: application/x-protobuf' --data-binary "@$f" \
            "http://127.0.0.1:$rh/v1/traces")
        [[ $code == 200 ]] || die "rotel answered $code for $f"
    done
    # rotel batches (200 ms) then exports; SIGTERM flushes what is left.
    sleep 1
    kill -TERM "$rotel_pid"
    wait_exit "$rotel_pid" rotel 20 || true
    # toolscore: stop accepting, score everything buffered, exit 0.
    kill -TERM "$serve_pid"
    wait_exit "$serve_pid" "toolscore serve" 30 || die "toolscore serve exited non-zero (see $WORK/serve-$proto.log)"
    kill -TERM "$down_pid"
    wait_exit "$down_pid" "downstream toolscore" 30 || die "downstream toolscore exited non-zero"
    python3 - "$WORK/replay.jsonl" "$down" <<'EOF' || die "downstream ($proto) did not get every trace"
import json, sys
ids = lambda p, t: {r["trace_id"] for r in map(json.loads, open(p)) if r.get("type") in t}
want = ids(sys.argv[1], ("evaluation", "unmatched_trace"))
got = ids(sys.argv[2], ("unmatched_trace",))
missing = want - got
assert not missing, f"{len(missing)} trace(s) not forwarded, e.g. {sorted(missing)[:3]}"
print(f"e2e-rotel: forwarded: the downstream got all {len(want)} traces")
EOF

    python3 - "$WORK/replay.jsonl" "$out" "$proto" <<'EOF' || die "serve ($1) differs from replay"
import json, sys
def rows(path, serve):
    out = {}
    for line in open(path):
        r = json.loads(line)
        if r["type"] not in ("evaluation", "unmatched_trace"):
            continue
        if serve:
            r.pop("revision", None)
            r.pop("default_expectation", None)
            if r["type"] == "evaluation":
                r.pop("spans", None)
        out[(r["trace_id"], r["case"])] = r
    return out
want, got = rows(sys.argv[1], False), rows(sys.argv[2], True)
proto = sys.argv[3]
missing = sorted(set(want) - set(got))
extra = sorted(set(got) - set(want))
diff = [k for k in want if k in got and want[k] != got[k]]
if missing or extra or diff:
    print(f"missing {missing[:5]}, extra {extra[:5]}, different {diff[:5]}", file=sys.stderr)
    for k in diff[:2]:
        print("want", json.dumps(want[k])[:400], "\ngot ", json.dumps(got[k])[:400], file=sys.stderr)
    sys.exit(1)
evals = sum(1 for r in want.values() if r["type"] == "evaluation")
print(f"e2e-rotel: {proto}: {len(want)} per-trace results equal replay's ({evals} evaluations)", file=sys.stderr)
EOF
}

run grpc
run http
log "ok: ${#FILES[@]} requests from ${#SOURCES[@]} sources, both exporter protocols, $(( $(date +%s) - START )) s"
