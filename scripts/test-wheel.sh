#!/usr/bin/env bash
# The Python install end to end: build the wheel the way `pip install .`
# does (pip -> the maturin build backend pinned in pyproject.toml), install
# it into a fresh virtualenv, and run the README's quick-start replay with
# the `toolscore` that pip put on the virtualenv's PATH.
#
# The wheel is built with Cargo's dev profile by default: packaging is what is
# under test, and the dev build is the one `cargo test` already made (a
# release build takes minutes here). WHEEL_PROFILE=release builds what
# `pip install .` ships.
#
# Idempotent: the virtualenv is recreated and the wheel rebuilt on every run;
# the maturin wheel is kept under $WHEEL_DIR/backend and Cargo keeps the build,
# so a second run takes seconds and needs no network.
#
# Usage: scripts/test-wheel.sh            (from anywhere)
# Env:   WHEEL_PROFILE  Cargo profile of the wheel's binary (default: dev)
#        WHEEL_DIR      work folder (default: target/wheel-test)
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
WORK="${WHEEL_DIR:-$ROOT/target/wheel-test}"
PROFILE="${WHEEL_PROFILE:-dev}"
START=$(date +%s)

log() { echo "test-wheel: $*" >&2; }
die() { log "FAIL: $*"; exit 1; }

VERSION=$(sed -n 's/^version = "\(.*\)"$/\1/p' "$ROOT/Cargo.toml" | head -1)
[[ -n "$VERSION" ]] || die "no version in Cargo.toml"

# ------------------------------------------------- a fresh virtualenv
VENV="$WORK/venv"
mkdir -p "$WORK"
python3 -m venv --clear "$VENV"
PIP=("$VENV/bin/python" -m pip --disable-pip-version-check --quiet)

# ------------------------------------------------- the build backend
# The pinned maturin, downloaded once: pip's own cache does not keep it
# behind every index, and the build then needs no network.
MATURIN=$(sed -n 's/.*"maturin==\([0-9][0-9.]*\)".*/\1/p' "$ROOT/pyproject.toml")
[[ -n "$MATURIN" ]] || die "no maturin==X pin in pyproject.toml"
BACKEND="$WORK/backend"
if ! ls "$BACKEND"/maturin-"$MATURIN"-*.whl >/dev/null 2>&1; then
    log "downloading maturin==$MATURIN into $BACKEND"
    "${PIP[@]}" download --no-deps --only-binary=:all: --dest "$BACKEND" "maturin==$MATURIN"
fi

# -------------------------------------------------------------- wheel
DIST="$WORK/dist"
rm -rf "$DIST"
log "building the wheel (Cargo profile $PROFILE)"
# pip runs the build backend pyproject.toml names in an isolated
# environment, as `pip install .` does; --no-index: from $BACKEND only.
(cd "$ROOT" && "${PIP[@]}" wheel . --no-deps --wheel-dir "$DIST" \
    --no-index --find-links "$BACKEND" \
    --config-settings "build-args=--profile $PROFILE") ||
    die "pip could not build the wheel"
WHEELS=("$DIST"/toolscore-"$VERSION"-*.whl)
[[ ${#WHEELS[@]} -eq 1 && -f "${WHEELS[0]}" ]] || die "expected one toolscore-$VERSION wheel in $DIST: $(ls "$DIST")"
WHEEL="${WHEELS[0]}"
log "built $(basename "$WHEEL") ($(du -k "$WHEEL" | cut -f1) KiB)"

# The wheel carries the binary as a script and no Python package.
"$VENV/bin/python" - "$WHEEL" "$VERSION" <<'EOF' || die "unexpected wheel contents"
import sys, zipfile
wheel, version = sys.argv[1], sys.argv[2]
names = zipfile.ZipFile(wheel).namelist()
script = f"toolscore-{version}.data/scripts/toolscore"
assert script in names, f"{script} not in {names}"
meta = zipfile.ZipFile(wheel).read(f"toolscore-{version}.dist-info/METADATA").decode()
assert "Name: toolscore" in meta and f"Version: {version}" in meta, meta[:300]
extra = [n for n in names if not n.startswith((f"toolscore-{version}.data/", f"toolscore-{version}.dist-info/"))]
assert not extra, f"unexpected files in the wheel: {extra}"
EOF

# ------------------------------------------------------------ install
[[ ! -e "$VENV/bin/toolscore" ]] || die "toolscore is in the fresh virtualenv before the install"
"${PIP[@]}" install --no-index --no-deps "$WHEEL"
# Only the virtualenv and the system: no Cargo target dir on PATH.
export PATH="$VENV/bin:/usr/local/bin:/usr/bin:/bin"
hash -r
[[ "$(command -v toolscore)" == "$VENV/bin/toolscore" ]] || die "toolscore on PATH is $(command -v toolscore || echo nothing)"
got=$(toolscore --version)
[[ "$got" == "toolscore $VERSION" ]] || die "toolscore --version says '$got'"

# ---------------------------------------- the README's quick start
OUT="$WORK/replay.txt"
set +e
(cd "$ROOT" && toolscore replay sample-traces --expected sample-traces/expected.jsonl) >"$OUT" 2>"$WORK/replay.err"
code=$?
set -e
[[ $code -eq 1 ]] || die "replay exited $code, want 1 (some sample cases fail by design); see $OUT and $WORK/replay.err"
head -1 "$OUT" | grep -Eq '^CASE +TRACE +JOINED BY +tool_correctness +PASS +DETAILS' || die "no table header in $OUT"
grep -Eq '^mlflow-weather-must-format +5e5e3251271865ab32c5c2f650a10a43 +trace_id +1\.000 +pass' "$OUT" || die "mlflow-weather-must-format does not pass in $OUT"
grep -Eq '^mlflow-trip-wrong-city +e50f3f7064a97fff4b026dd0c3a9e4cc +trace_id +0\.500 +FAIL' "$OUT" || die "mlflow-trip-wrong-city does not fail in $OUT"

"${PIP[@]}" uninstall --yes toolscore
[[ ! -e "$VENV/bin/toolscore" ]] || die "pip uninstall left $VENV/bin/toolscore"
log "ok: pip installed toolscore $VERSION from its wheel; the README replay exits 1 with the expected table; $(( $(date +%s) - START )) s"
