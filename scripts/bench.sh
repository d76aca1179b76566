#!/usr/bin/env bash
# Reproduces the figures of docs/performance.md with the project's own
# benches and the release binary, and keeps the raw output of every run
# under benches/runs/<date>-<name>.txt (see benches/runs/README.md).
#
# Usage: scripts/bench.sh COMMAND [ARGS...]      (from anywhere)
#
#   replay          cargo bench --bench replay: replay end to end, and the
#                   decode + assembly and extraction stages alone
#   presets         cargo bench --bench presets: 43 presets x 1000 cases
#   otlp-json       cargo bench --bench otlp_json: the OTLP/JSON decoder
#                   (TOOLSCORE_BENCH_COPIES, default 20; TOOLSCORE_BENCH_ROUNDS)
#   decode          cargo bench --bench decode: the protobuf decoder
#   scale           cargo bench --bench scale on the release binary:
#                   TOOLSCORE_BENCH_MB (here default 300) of Collector JSON
#                   lines and the same spans as protobuf records
#   serve [PART]    cargo bench --bench serve; PART is one of side_by_side,
#                   stages, sustained, memory, forwarding, serve_alone
#                   (TOOLSCORE_BENCH_SERVE); TOOLSCORE_BENCH_SPANS passes through
#   memory          /usr/bin/time -v of `inspect --format jsonl` on 50, 100,
#                   200 and 400 copies of the test corpus, 100 copies with
#                   --hold-window-mib 0 and all, and a gzip bomb
#   inspect100      /usr/bin/time -v of `inspect` on 100 copies, once
#   flat            /usr/bin/time -v of `inspect` on one agent run of 10,000
#                   to 60,000 calls of one tool (scripts/make-flat.py),
#                   BENCH_REPEAT runs each
#   fixtures        /usr/bin/time -v of `replay` with a big fixture (3.2M
#                   small cases, 500k fuller ones; scripts/make-fixture.py)
#                   in each report format, and of `serve` started with it and
#                   stopped: peak RSS against the file's size
#   store           the run store: replay of 100,000 evaluations with no
#                   store and saving to a new SQLite file, paired runs
#                   (BENCH_REPEAT); `runs` and `trend` over a store of 1,000
#                   runs x 1,000 cases (scripts/make-store-bench.py)
#   inflight        scripts/inflight-rss.py: serve's peak RSS under 200 slow
#                   uploads, with Content-Length and chunked bodies
#   judge-prompts   counts the judge prompts of sample-traces (dry run, no
#                   request is sent)
#   python          benches/python/overhead.py: toolscore.evaluate against the
#                   binary's replay on 100 copies of the test corpus, and
#                   10,000 OpenTelemetry SDK spans converted and scored
#                   (BENCH_PYTHON: a Python with the wheel built in the same
#                   profile and opentelemetry-sdk installed; default python3)
#   all             every command above, one after another
#
# Anything after `--` goes to the criterion bench (e.g. `replay -- --quick`).
#
# Env:
#   TOOLSCORE_BIN   the binary to measure (default: build the release one)
#   BENCH_PROFILE   Cargo profile of that build (default: dist, what ships)
#   BENCH_REPEAT    runs per input for `memory` (default: 5)
#   BENCH_TMP       folder for generated inputs, kept and reused by later runs
#                   (default: a new folder per run, removed when it ends, so
#                   two runs at once never share or clash on a file)
#   BENCH_RUNS      where raw output goes (default: benches/runs)
#   BENCH_PYTHON    the Python of `python` (default: python3)
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
RUNS="${BENCH_RUNS:-$ROOT/benches/runs}"
if [[ -n "${BENCH_TMP:-}" ]]; then
    TMP="$BENCH_TMP"
    mkdir -p "$TMP"
else
    TMP=$(mktemp -d "${TMPDIR:-/tmp}/toolscore-bench.XXXXXX")
    trap 'rm -rf "$TMP"' EXIT
fi
REPEAT="${BENCH_REPEAT:-5}"
PROFILE="${BENCH_PROFILE:-dist}"
TARGET="${CARGO_TARGET_DIR:-$ROOT/target}"

log() { echo "bench: $*" >&2; }
die() { log "$*"; exit 2; }

usage() {
    sed -n '/^# Usage/,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//' >&2
    exit 2
}

# The binary under test: TOOLSCORE_BIN, or the one built here.
binary() {
    if [[ -n "${TOOLSCORE_BIN:-}" ]]; then
        [[ -x "$TOOLSCORE_BIN" ]] || die "TOOLSCORE_BIN=$TOOLSCORE_BIN is not an executable"
        echo "$TOOLSCORE_BIN"
        return
    fi
    local dir="$PROFILE"
    [[ "$PROFILE" == dev ]] && dir=debug
    log "building the $PROFILE binary"
    cargo build --profile "$PROFILE" --bin toolscore >&2
    echo "$TARGET/$dir/toolscore"
}

# A new file under $RUNS named <date>-<name>[-N].txt, headed with what was run where.
new_run() {
    local name="$1" day file n=1
    day=$(date -u +%Y-%m-%d)
    mkdir -p "$RUNS"
    file="$RUNS/$day-$name.txt"
    while [[ -e "$file" ]]; do
        n=$((n + 1))
        file="$RUNS/$day-$name-$n.txt"
    done
    {
        echo "# scripts/bench.sh $name"
        echo "# date:    $(date -u +%Y-%m-%dT%H:%M:%SZ)"
        echo "# commit:  $(git rev-parse HEAD 2>/dev/null || echo unknown)$(git diff --quiet HEAD 2>/dev/null || echo ' (uncommitted changes)')"
        echo "# machine: $(uname -srm), $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg)"
        echo "# rustc:   $(rustc -V 2>/dev/null || echo unknown)"
        echo "# profile: $PROFILE${TOOLSCORE_BIN:+ (binary: $TOOLSCORE_BIN)}"
        echo
    } >"$file"
    echo "$file"
}

# Runs a criterion bench, its output shown and appended to a new run file.
criterion() {
    local name="$1" bench="$2"
    shift 2
    local file
    file=$(new_run "$name")
    echo "# cargo bench --bench $bench $*" >>"$file"
    log "cargo bench --bench $bench (raw output: ${file#"$ROOT"/})"
    cargo bench --bench "$bench" -- "$@" 2>&1 | tee -a "$file"
}

# Runs a command under /usr/bin/time -v, stdout discarded; the timing goes
# to the run file and "label wall_s rss_kib exit" to the summary file.
timed() {
    local file="$1" summary="$2" label="$3"
    shift 3
    local out code wall rss
    out=$(mktemp)
    echo "## $label: $*" >>"$file"
    set +e
    /usr/bin/time -v "$@" >/dev/null 2>"$out"
    code=$?
    set -e
    cat "$out" >>"$file"
    echo >>"$file"
    # "Elapsed (wall clock) time (h:mm:ss or m:ss): 0:00.15" -> seconds.
    wall=$(awk -F': ' '/Elapsed \(wall clock\)/ {
        n = split($2, p, ":"); s = 0
        for (i = 1; i <= n; i++) s = s * 60 + p[i]
        print s }' "$out")
    rss=$(awk -F': ' '/Maximum resident set size/ {print $2}' "$out")
    rm -f "$out"
    echo "$label ${wall:-?} ${rss:-?} $code" >>"$summary"
}

# `timed`, REPEAT times.
timed_repeat() {
    local i
    for ((i = 0; i < REPEAT; i++)); do
        timed "$@"
    done
}

# Median wall time and largest peak RSS per label, appended to the run file.
summarize() {
    local file="$1" summary="$2"
    {
        echo "# summary: label, runs, median wall s, max peak RSS MiB, exit codes"
        sort -k1,1V -k2,2n "$summary" | awk '
            function flush() {
                if (label == "") return
                m = (n % 2) ? w[(n + 1) / 2] : (w[n / 2] + w[n / 2 + 1]) / 2
                printf "%-28s %3d  %8.3f  %7.1f  %s\n", label, n, m, rss / 1024, codes
            }
            $1 != label { flush(); label = $1; n = 0; rss = 0; codes = "" }
            { w[++n] = $2; if ($3 > rss) rss = $3; codes = codes (codes == "" ? "" : ",") $4 }
            END { flush() }'
    } | tee -a "$file"
}

# Paired runs of labels A and B (run alternately, A first), from the run
# file: each pair's wall and CPU (user + sys) seconds, the ratio B/A of
# each, and the median ratios, appended to the run file.
pairs() {
    local file="$1" a="$2" b="$3"
    awk -v a="$a" -v b="$b" '
        function median(v, n,   i, j, t) {
            for (i = 2; i <= n; i++) for (j = i; j > 1 && v[j - 1] > v[j]; j--) {
                t = v[j]; v[j] = v[j - 1]; v[j - 1] = t
            }
            return (n % 2) ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2
        }
        /^## / { label = substr($2, 1, length($2) - 1) }
        /User time/ { user = $NF }
        /System time/ { sys = $NF }
        /Elapsed \(wall clock\)/ {
            k = split($NF, p, ":"); w = 0
            for (i = 1; i <= k; i++) w = w * 60 + p[i]
            if (label == a) { aw[++na] = w; ac[na] = user + sys }
            if (label == b) { bw[++nb] = w; bc[nb] = user + sys }
        }
        END {
            printf "# pairs: %s then %s; wall s, CPU s (user + sys), ratios %s/%s\n", a, b, b, a
            n = (na < nb) ? na : nb
            for (i = 1; i <= n; i++) {
                rw[i] = bw[i] / aw[i]; rc[i] = bc[i] / ac[i]
                printf "pair %2d  wall %6.2f %6.2f  ratio %.3f   cpu %6.2f %6.2f  ratio %.3f\n",
                    i, aw[i], bw[i], rw[i], ac[i], bc[i], rc[i]
            }
            if (n > 0) printf "median ratio: wall %.3f, cpu %.3f (%d pairs)\n", median(rw, n), median(rc, n), n
        }' "$file" | tee -a "$file"
}

copies() {
    local n="$1"
    local out="$TMP/c$n.jsonl"
    [[ -s "$out" ]] || python3 scripts/make-copies.py "$n" "$out" >&2
    echo "$out"
}

cmd_memory() {
    local bin file summary input bomb
    bin=$(binary)
    file=$(new_run memory)
    summary=$(mktemp)
    for n in 50 100 200 400; do
        input=$(copies "$n")
        echo "# input: $input, $(stat -c %s "$input") bytes" >>"$file"
        timed_repeat "$file" "$summary" "copies-$n" "$bin" inspect "$input" --format jsonl -q
    done
    input=$(copies 100)
    for hold in 0 all; do
        timed_repeat "$file" "$summary" "copies-100-hold-$hold" \
            "$bin" inspect "$input" --format jsonl -q --hold-window-mib "$hold"
    done
    # 1 GiB of spaces, gzipped to about 1 MB: rejected at the 512 MiB cap (exit 2).
    bomb="$TMP/bomb.json.gz"
    [[ -s "$bomb" ]] || head -c 1073741824 /dev/zero | tr '\0' ' ' | gzip -9 >"$bomb"
    echo "# input: $bomb, $(stat -c %s "$bomb") bytes" >>"$file"
    timed_repeat "$file" "$summary" "gzip-bomb" "$bin" inspect "$bomb" --format jsonl -q
    summarize "$file" "$summary"
    rm -f "$summary"
    log "raw output: ${file#"$ROOT"/}"
}

cmd_inspect100() {
    local bin file summary input
    bin=$(binary)
    file=$(new_run inspect100)
    summary=$(mktemp)
    input=$(copies 100)
    timed "$file" "$summary" "copies-100" "$bin" inspect "$input" --format jsonl -q
    summarize "$file" "$summary"
    rm -f "$summary"
    log "raw output: ${file#"$ROOT"/}"
}

cmd_flat() {
    local bin file summary input n
    bin=$(binary)
    file=$(new_run flat)
    summary=$(mktemp)
    for n in 10000 20000 40000 60000; do
        input="$TMP/flat$n.json"
        [[ -s "$input" ]] || python3 scripts/make-flat.py "$n" "$input"
        timed_repeat "$file" "$summary" "flat-$n" "$bin" inspect "$input" --format jsonl -q
    done
    summarize "$file" "$summary"
    rm -f "$summary"
    log "raw output: ${file#"$ROOT"/}"
}

cmd_fixtures() {
    local bin file summary input shape cases format i results log
    bin=$(binary)
    file=$(new_run fixtures)
    summary=$(mktemp)
    for spec in small:3200000 full:500000; do
        shape=${spec%%:*}
        cases=${spec##*:}
        input="$TMP/fixture-$shape-$cases.jsonl"
        [[ -s "$input" ]] || python3 scripts/make-fixture.py "$shape" "$cases" "$input"
        echo "# input: $input, $(stat -c %s "$input") bytes" >>"$file"
        for format in jsonl table junit html; do
            timed_repeat "$file" "$summary" "$shape-$format" "$bin" replay --no-store \
                sample-traces/pydantic-ai -e "$input" -q -f "$format" -o /dev/null
        done
        # serve with the fixture, stopped with SIGINT once it listens: it
        # writes every unmatched case to its results file as it shuts down.
        results=$(mktemp)
        log=$(mktemp)
        for ((i = 0; i < REPEAT; i++)); do
            timed "$file" "$summary" "$shape-serve" sh -c '
                : >"$3"
                "$0" serve --expected "$1" --grpc-endpoint off --admin-endpoint off \
                    --http-endpoint 127.0.0.1:0 --output "$2" >/dev/null 2>"$3" &
                pid=$!
                n=0
                until grep -q "Listening\." "$3" || [ $n -ge 6000 ]; do n=$((n + 1)); sleep 0.05; done
                kill -INT $pid
                wait $pid' "$bin" "$input" "$results" "$log"
            rm -f "$results"
        done
        rm -f "$log"
    done
    summarize "$file" "$summary"
    rm -f "$summary"
    log "raw output: ${file#"$ROOT"/}"
}

cmd_store() {
    local bin file summary traces fixture db i
    bin=$(binary)
    file=$(new_run store)
    summary=$(mktemp)
    traces="$TMP/store-traces-100k.jsonl"
    fixture="$TMP/store-cases-100k.jsonl"
    [[ -s "$traces" && -s "$fixture" ]] ||
        python3 scripts/make-store-bench.py traces 100000 "$traces" "$fixture"
    # Paired: each round runs both, so a change in the machine's load hits both.
    for ((i = 0; i < REPEAT; i++)); do
        timed "$file" "$summary" "replay-no-store" "$bin" replay "$traces" -e "$fixture" \
            -q -f jsonl -o /dev/null --no-store
        rm -f "$TMP/store-bench-run.db"
        timed "$file" "$summary" "replay-sqlite-store" "$bin" replay "$traces" -e "$fixture" \
            -q -f jsonl -o /dev/null --store "$TMP/store-bench-run.db"
    done
    pairs "$file" replay-no-store replay-sqlite-store
    db="$TMP/store-bench-1000x1000.db"
    [[ -s "$db" ]] || python3 scripts/make-store-bench.py store 1000 1000 "$db" src/store/schema.rs
    for ((i = 0; i < REPEAT; i++)); do
        timed "$file" "$summary" "runs" "$bin" runs --store "$db"
        timed "$file" "$summary" "runs-limit-1000" "$bin" runs --store "$db" --limit 1000
        timed "$file" "$summary" "trend" "$bin" trend --store "$db"
        timed "$file" "$summary" "trend-last-1000" "$bin" trend --store "$db" --last 1000
    done
    summarize "$file" "$summary"
    rm -f "$summary" "$TMP/store-bench-run.db"
    log "raw output: ${file#"$ROOT"/}"
}

cmd_python() {
    local bin file input py="${BENCH_PYTHON:-python3}"
    bin=$(binary)
    "$py" -c 'import toolscore, opentelemetry.sdk' ||
        die "$py cannot import toolscore and opentelemetry.sdk: install the wheel (maturin build --profile $PROFILE) and opentelemetry-sdk, or set BENCH_PYTHON"
    input=$(copies 100)
    file=$(new_run python)
    "$py" benches/python/overhead.py --binary "$bin" --copies "$input" --runs "$REPEAT" 2>&1 | tee -a "$file"
    log "raw output: ${file#"$ROOT"/}"
}

cmd_scale() {
    local bin
    bin=$(binary)
    TOOLSCORE_BIN="$bin" TOOLSCORE_BENCH_MB="${TOOLSCORE_BENCH_MB:-300}" \
        criterion scale scale "$@"
}

cmd_serve() {
    local part="" name=serve
    if [[ $# -gt 0 && "$1" != -- ]]; then
        part="$1"
        shift
        case "$part" in
            side_by_side | stages | sustained | memory | forwarding | serve_alone) ;;
            *) die "serve: unknown part '$part'" ;;
        esac
        name="serve-$part"
    fi
    [[ "${1:-}" == -- ]] && shift
    if [[ -n "$part" ]]; then
        TOOLSCORE_BENCH_SERVE="$part" criterion "$name" serve "$@"
    else
        criterion "$name" serve "$@"
    fi
}

cmd_inflight() {
    local bin file
    bin=$(binary)
    file=$(new_run inflight)
    for mode in "" --chunked; do
        echo "## python3 scripts/inflight-rss.py --bin $bin $mode" >>"$file"
        # shellcheck disable=SC2086 # $mode is one flag or nothing
        python3 scripts/inflight-rss.py --bin "$bin" $mode 2>&1 | tee -a "$file" ||
            log "inflight-rss.py $mode: the peak was over its target (see above)"
    done
    log "raw output: ${file#"$ROOT"/}"
}

cmd_judge_prompts() {
    local bin file prompts
    bin=$(binary)
    file=$(new_run judge-prompts)
    prompts=$(mktemp)
    set +e # sample cases fail by design: exit 1
    "$bin" replay --no-store sample-traces --expected sample-traces/expected.jsonl \
        --metric mlflow.llm_fuzzy --metric mlflow.llm_no_expectations \
        --metric mlflow.llm_efficiency --metric cubeo \
        --judge-model any --judge-dry-run >/dev/null 2>"$prompts"
    set -e
    python3 - "$prompts" <<'EOF' | tee -a "$file"
import re, sys
text = open(sys.argv[1], encoding="utf-8").read()
parts = re.split(r"(?m)^=== judge prompt: .*===\n", text)[1:]
sizes = [len(p) for p in parts]
if not sizes:
    sys.exit("no judge prompt printed")
print(f"prompts: {len(sizes)}, characters: {sum(sizes)}, "
      f"each {min(sizes)} to {max(sizes)}, mean {sum(sizes) / len(sizes):.0f}")
EOF
    rm -f "$prompts"
    log "raw output: ${file#"$ROOT"/}"
}

[[ $# -gt 0 ]] || usage
command="$1"
shift
if [[ "$command" != serve ]]; then
    [[ "${1:-}" == -- ]] && shift
fi
case "$command" in
    replay) criterion replay replay "$@" ;;
    presets) criterion presets presets "$@" ;;
    otlp-json) criterion otlp-json otlp_json "$@" ;;
    decode) criterion decode decode "$@" ;;
    scale) cmd_scale "$@" ;;
    serve) cmd_serve "$@" ;;
    memory) cmd_memory ;;
    inspect100) cmd_inspect100 ;;
    flat) cmd_flat ;;
    fixtures) cmd_fixtures ;;
    store) cmd_store ;;
    inflight) cmd_inflight ;;
    judge-prompts) cmd_judge_prompts ;;
    python) cmd_python ;;
    all)
        # One folder of inputs for every command of the run.
        for c in replay presets otlp-json decode scale serve memory inspect100 flat fixtures store inflight judge-prompts python; do
            BENCH_TMP="$TMP" "$0" "$c"
        done
        ;;
    -h | --help | help) usage ;;
    *) log "unknown command '$command'"; usage ;;
esac
