#!/usr/bin/env bash
# The Python install end to end: build an x86_64 manylinux wheel the way
# `pip install .` does (pip -> the maturin build backend pinned in
# pyproject.toml), check it with `auditwheel show`, install it into a fresh
# virtualenv with no Rust toolchain on PATH, run the README's quick-start
# replay with the `toolscore` that pip put there, and `python -m toolscore`;
# then the Python module's own tests (python/tests, pytest) against that
# installed wheel, with opentelemetry-sdk and pytest beside it.
#
# The wheel is built for this machine with Cargo's dev profile by default:
# packaging is what is under test, and the dev build shares the
# dependencies `cargo test` already built (a dist build takes many minutes
# here). maturin tags it with the manylinux level the module's glibc symbols
# allow, which auditwheel confirms. WHEEL_PROFILE=dist builds the binary that releases ship;
# scripts/release.sh builds the published, cross-compiled wheels.
#
# Idempotent: the virtualenvs are recreated and the wheel rebuilt on every
# run; the Python packages (the build backend, auditwheel, and the tests'
# pytest and opentelemetry-sdk) are downloaded once into $WHEEL_DIR/backend and
# Cargo keeps the build, so a second run takes seconds and needs no network.
# The wheel stays at the path printed last (also in $WHEEL_DIR/WHEEL) for
# later stages to reuse.
#
# Usage: scripts/test-wheel.sh            (from anywhere)
# Env:   WHEEL_PROFILE  Cargo profile of the wheel's binary (default: dev)
#        WHEEL_DIR      work folder (default: target/wheel-test)
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
WORK="${WHEEL_DIR:-$ROOT/target/wheel-test}"
PROFILE="${WHEEL_PROFILE:-dev}"
AUDITWHEEL=6.8.2
PYTEST=9.2.0
OTEL_SDK=1.45.2
MYPY=2.4.1
START=$(date +%s)

log() { echo "test-wheel: $*" >&2; }
die() { log "FAIL: $*"; exit 1; }

VERSION=$(sed -n 's/^version = "\(.*\)"$/\1/p' "$ROOT/Cargo.toml" | head -1)
[[ -n "$VERSION" ]] || die "no version in Cargo.toml"
[[ "$(uname -m)" == x86_64 ]] || die "this test builds an x86_64 wheel for the machine it runs on; this is $(uname -m)"

# ----------------------------------------------- the tools' virtualenv
TOOLS="$WORK/tools"
mkdir -p "$WORK"
python3 -m venv --clear "$TOOLS"
PIP=("$TOOLS/bin/python" -m pip --disable-pip-version-check --quiet)

# The pinned maturin and auditwheel, downloaded once: pip's own cache does not
# keep them behind every index, and later runs then need no network.
MATURIN=$(sed -n 's/.*"maturin==\([0-9][0-9.]*\)".*/\1/p' "$ROOT/pyproject.toml")
[[ -n "$MATURIN" ]] || die "no maturin==X pin in pyproject.toml"
BACKEND="$WORK/backend"
if ! ls "$BACKEND"/maturin-"$MATURIN"-*.whl >/dev/null 2>&1; then
    log "downloading maturin==$MATURIN into $BACKEND"
    "${PIP[@]}" download --no-deps --only-binary=:all: --dest "$BACKEND" "maturin==$MATURIN"
fi
if ! ls "$BACKEND"/auditwheel-"$AUDITWHEEL"-*.whl >/dev/null 2>&1; then
    log "downloading auditwheel==$AUDITWHEEL and its dependencies into $BACKEND"
    "${PIP[@]}" download --only-binary=:all: --dest "$BACKEND" "auditwheel==$AUDITWHEEL"
fi
# What python/tests runs with, pinned: the fixture's span capture is tested
# against one known SDK; mypy checks the installed package's types; the
# README's exporter recipe (test_docs.py) uses the SDK's OTLP encoder.
TEST_DEPS=("pytest==$PYTEST" "opentelemetry-sdk==$OTEL_SDK" "mypy==$MYPY"
    "opentelemetry-exporter-otlp-proto-common==$OTEL_SDK")
if ! ls "$BACKEND"/pytest-"$PYTEST"-*.whl "$BACKEND"/opentelemetry_sdk-"$OTEL_SDK"-*.whl \
    "$BACKEND"/mypy-"$MYPY"-*.whl \
    "$BACKEND"/opentelemetry_exporter_otlp_proto_common-"$OTEL_SDK"-*.whl >/dev/null 2>&1; then
    log "downloading ${TEST_DEPS[*]} and their dependencies into $BACKEND"
    "${PIP[@]}" download --only-binary=:all: --dest "$BACKEND" "${TEST_DEPS[@]}"
fi
"${PIP[@]}" install --no-index --find-links "$BACKEND" "auditwheel==$AUDITWHEEL"

# -------------------------------------------------------------- wheel
DIST="$WORK/dist"
rm -rf "$DIST"
log "building the wheel (Cargo profile $PROFILE)"
# pip runs the build backend pyproject.toml names in an isolated
# environment, as `pip install .` does; --no-index: from $BACKEND only.
# `--compatibility pypi`: a tag an index accepts (the lowest manylinux one the
# binary allows) where the backend would otherwise tag it plain `linux`.
(cd "$ROOT" && "${PIP[@]}" wheel . --no-deps --wheel-dir "$DIST" \
    --no-index --find-links "$BACKEND" \
    --config-settings "build-args=--locked --profile $PROFILE --compatibility pypi") ||
    die "pip could not build the wheel"
WHEELS=("$DIST"/toolscore-"$VERSION"-*.whl)
[[ ${#WHEELS[@]} -eq 1 && -f "${WHEELS[0]}" ]] || die "expected one toolscore-$VERSION wheel in $DIST: $(ls "$DIST")"
WHEEL="${WHEELS[0]}"
log "built $(basename "$WHEEL") ($(du -k "$WHEEL" | cut -f1) KiB)"

# The native module, the Python package (typed), the licence, the command
# and the pytest plugin as entry points; nothing else.
"$TOOLS/bin/python" - "$WHEEL" "$VERSION" "$ROOT/python/toolscore" <<'EOF' || die "unexpected wheel contents"
import os, sys, zipfile
wheel, version, package = sys.argv[1], sys.argv[2], sys.argv[3]
archive = zipfile.ZipFile(wheel)
names = archive.namelist()
info = f"toolscore-{version}.dist-info/"
want = ["toolscore/_native.abi3.so", f"{info}licenses/LICENSE"]
want += [f"toolscore/{f}" for f in sorted(os.listdir(package)) if not f.startswith((".", "__pycache__"))]
missing = [n for n in want if n not in names]
assert not missing, f"{missing} not in {names}"
assert "toolscore/py.typed" in names and "toolscore/_native.pyi" in names
meta = archive.read(f"{info}METADATA").decode()
for line in ("Name: toolscore", f"Version: {version}", "License-Expression: Apache-2.0"):
    assert line in meta.splitlines(), f"no '{line}' in METADATA:\n{meta[:600]}"
points = archive.read(f"{info}entry_points.txt").decode()
for line in ("toolscore=toolscore._cli:main", "toolscore=toolscore.pytest_plugin"):
    assert line in points.splitlines(), f"no '{line}' in entry_points.txt:\n{points}"
extra = [n for n in names if n not in want and not n.startswith(info)]
assert not extra, f"unexpected files in the wheel: {extra}"
EOF

# What a package index checks: auditwheel, not the file name, decides.
AUDIT=$("$TOOLS/bin/auditwheel" show "$WHEEL" 2>&1) || die "auditwheel show failed on $WHEEL:"$'\n'"$AUDIT"
TAG=$(grep -Eo 'consistent with the following platform tag: "manylinux_[0-9]+_[0-9]+_x86_64"' <<<"${AUDIT//$'\n'/ }" |
    grep -Eo 'manylinux_[0-9]+_[0-9]+_x86_64') || die "auditwheel reports no manylinux tag:"$'\n'"$AUDIT"
# The file name must carry it too: an index reads the tag from there.
[[ "$(basename "$WHEEL")" == *"-$TAG.whl" || "$(basename "$WHEEL")" == *".$TAG.whl" ]] ||
    die "$(basename "$WHEEL") is not tagged $TAG, which auditwheel reports"
log "auditwheel: $TAG"

# ------------------------------------------------------------ install
# A fresh virtualenv, with only it and the system on PATH: no Cargo, no
# rustc, no Cargo target dir, so nothing can be built or found elsewhere.
VENV="$WORK/venv"
python3 -m venv --clear "$VENV"
export PATH="$VENV/bin:/usr/bin:/bin"
hash -r
! command -v cargo >/dev/null || die "cargo is on PATH: $(command -v cargo)"
! command -v rustc >/dev/null || die "rustc is on PATH: $(command -v rustc)"
[[ ! -e "$VENV/bin/toolscore" ]] || die "toolscore is in the fresh virtualenv before the install"
t0=$(date +%s%N)
python -m pip --disable-pip-version-check --quiet install --no-index --no-deps "$WHEEL"
log "pip install took $(( ($(date +%s%N) - t0) / 1000000 )) ms"
hash -r
[[ "$(command -v toolscore)" == "$VENV/bin/toolscore" ]] || die "toolscore on PATH is $(command -v toolscore || echo nothing)"
got=$(toolscore --version)
[[ "$got" == "toolscore $VERSION" ]] || die "toolscore --version says '$got'"
got=$(cd "$WORK" && python -m toolscore --version)
[[ "$got" == "toolscore $VERSION" ]] || die "python -m toolscore --version says '$got'"

# ---------------------------------------- the README's quick start
OUT="$WORK/replay.txt"
set +e
# The run store off: no .toolscore/ in the checkout.
(cd "$ROOT" && TOOLSCORE_STORE=off toolscore replay sample-traces --expected sample-traces/expected.jsonl) >"$OUT" 2>"$WORK/replay.err"
code=$?
set -e
[[ $code -eq 1 ]] || die "replay exited $code, want 1 (some sample cases fail by design); see $OUT and $WORK/replay.err"
head -1 "$OUT" | grep -Eq '^CASE +TRACE +JOINED BY +tool_correctness +PASS +DETAILS' || die "no table header in $OUT"
grep -Eq '^mlflow-weather-must-format +5e5e3251271865ab32c5c2f650a10a43 +trace_id +1\.000 +pass' "$OUT" || die "mlflow-weather-must-format does not pass in $OUT"
grep -Eq '^mlflow-trip-wrong-city +e50f3f7064a97fff4b026dd0c3a9e4cc +trace_id +0\.500 +FAIL' "$OUT" || die "mlflow-trip-wrong-city does not fail in $OUT"

# ------------------------------------------- the Python module's tests
# From the installed wheel, never the source tree: the tests run from a copy
# outside it, and `toolscore` must be imported from the virtualenv.
python -m pip --disable-pip-version-check --quiet install --no-index --find-links "$BACKEND" "${TEST_DEPS[@]}"
where=$(cd "$WORK" && python -c 'import toolscore, os; print(os.path.dirname(toolscore.__file__))')
[[ "$where" == "$VENV"/lib/python*/site-packages/toolscore ]] || die "toolscore imported from $where"
# The package is typed (py.typed, the native module's stub): its own
# annotations must hold as installed.
(cd "$WORK" && python -m mypy --strict --no-incremental --package toolscore) ||
    die "mypy --strict fails on the installed package"
rm -rf "$WORK/pytests" && cp -r "$ROOT/python/tests" "$WORK/pytests"
t0=$(date +%s)
(cd "$WORK/pytests" && TOOLSCORE_REPO="$ROOT" python -m pytest -q -p no:cacheprovider .) ||
    die "the Python tests failed against the installed wheel"
log "python/tests passed against the installed wheel in $(( $(date +%s) - t0 )) s"

python -m pip --disable-pip-version-check --quiet uninstall --yes toolscore
[[ ! -e "$VENV/bin/toolscore" ]] || die "pip uninstall left $VENV/bin/toolscore"
echo "$WHEEL" >"$WORK/WHEEL"
log "ok: auditwheel passed, pip installed toolscore $VERSION from its wheel with no Rust toolchain on PATH; the README replay exits 1 with the expected table; python/tests passed; $(( $(date +%s) - START )) s"
echo "$WHEEL"
