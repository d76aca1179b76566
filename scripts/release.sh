#!/usr/bin/env bash
# Builds every published artifact into dist/, with Cargo's `dist` profile:
#
#   toolscore-VERSION.tar.gz                      the sdist (maturin sdist)
#   toolscore-VERSION-py3-none-manylinux2014_{x86_64,aarch64}.manylinux_2_17_*.whl
#                                                 manylinux wheels (maturin --zig),
#                                                 checked with `auditwheel show`
#   toolscore-VERSION-{x86_64,aarch64}-unknown-linux-musl.tar.gz (+ .sha256)
#                                                 static binaries (cargo zigbuild)
#   SHA256SUMS                                    all of the above
#
# Cross-compiling needs no system toolchain beyond rustup: zig (the `ziglang`
# package) is the C compiler and linker for every target, and the tools come
# from PyPI at pinned versions into a virtualenv under the Cargo target dir.
# Missing rustup targets are added. Each artifact is checked: the wheels'
# platform tag, the binaries' static linking, `--version` of every binary
# where it can run here (aarch64 needs qemu-aarch64 or qemu-aarch64-static on
# PATH, and its glibc wheel Debian's libc6-arm64-cross), and the metadata with
# `twine check`.
#
# Idempotent: dist/ is emptied first; Cargo keeps the builds, so a rerun with
# nothing changed only repackages.
#
# Usage: scripts/release.sh            (from anywhere; four fat-LTO builds
#                                       from cold take about an hour on 2 cores)
# Env:   DIST_DIR         output folder (default: dist)
#        WHEEL_TARGETS    wheel targets (default: x86_64- and aarch64-unknown-linux-gnu)
#        BINARY_TARGETS   static binary targets (default: x86_64- and aarch64-unknown-linux-musl)
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
DIST="${DIST_DIR:-$ROOT/dist}"
WHEEL_TARGETS="${WHEEL_TARGETS-x86_64-unknown-linux-gnu aarch64-unknown-linux-gnu}"
BINARY_TARGETS="${BINARY_TARGETS-x86_64-unknown-linux-musl aarch64-unknown-linux-musl}"
# glibc 2.17: the oldest that manylinux2014 (manylinux_2_17) allows, which zig links against.
COMPATIBILITY=manylinux2014
START=$(date +%s)

log() { echo "release: $*" >&2; }
die() { log "FAIL: $*"; exit 1; }
SUMMARY=()
note() { SUMMARY+=("$*"); log "$*"; }

VERSION=$(sed -n 's/^version = "\(.*\)"$/\1/p' Cargo.toml | head -1)
[[ -n "$VERSION" ]] || die "no version in Cargo.toml"
TARGET_DIR="${CARGO_TARGET_DIR:-$ROOT/target}"

# ------------------------------------------------------------- tools
# maturin as pinned in pyproject.toml; the others pinned here.
MATURIN=$(sed -n 's/.*"maturin==\([0-9][0-9.]*\)".*/\1/p' pyproject.toml)
[[ -n "$MATURIN" ]] || die "no maturin==X pin in pyproject.toml"
PINS="maturin==$MATURIN ziglang==0.17.0 cargo-zigbuild==0.24.0 auditwheel==6.8.2 twine==7.0.0"
TOOLS="$TARGET_DIR/release-tools"
if [[ "$(cat "$TOOLS/pins" 2>/dev/null)" != "$PINS" ]]; then
    log "installing $PINS into $TOOLS"
    python3 -m venv --clear "$TOOLS"
    # shellcheck disable=SC2086 # one argument per pin
    "$TOOLS/bin/python" -m pip --disable-pip-version-check --quiet install $PINS
    echo "$PINS" >"$TOOLS/pins"
fi
# maturin and cargo-zigbuild find zig as `python3 -m ziglang` through this PATH.
export PATH="$TOOLS/bin:$PATH"

for target in $WHEEL_TARGETS $BINARY_TARGETS; do
    if ! rustup target list --installed | grep -qx "$target"; then
        log "rustup target add $target"
        rustup target add "$target"
    fi
done

rm -rf "$DIST"
mkdir -p "$DIST"

# ------------------------------------------------------------- sdist
t0=$(date +%s)
maturin sdist --out "$DIST" >&2
SDIST="$DIST/toolscore-$VERSION.tar.gz"
[[ -f "$SDIST" ]] || die "maturin sdist wrote no $SDIST: $(ls "$DIST")"
listing=$(tar -tzf "$SDIST")
# Cargo.lock too: pip builds the sdist with `locked = true` (pyproject.toml).
for want in pyproject.toml Cargo.toml Cargo.lock LICENSE README.md build.rs src/main.rs python/toolscore/__main__.py; do
    grep -qx "toolscore-$VERSION/$want" <<<"$listing" || die "$want is not in the sdist"
done
note "sdist $(basename "$SDIST"): $(du -k "$SDIST" | cut -f1) KiB, $(($(date +%s) - t0)) s"

# Checks that BINARY for TARGET prints `toolscore VERSION`, where it can run
# here: natively, or under qemu user mode (a glibc one also needs Debian's
# libc6-arm64-cross). Prints what it found; returns 2 where it cannot run.
version_here() {
    local target=$1 binary=$2 qemu out
    case "$target" in
        "$(uname -m)"-*) out=$("$binary" --version) ;;
        aarch64-*)
            qemu=$(command -v qemu-aarch64 || command -v qemu-aarch64-static) || return 2
            if [[ "$target" == *-gnu ]]; then
                [[ -e /usr/aarch64-linux-gnu/lib/ld-linux-aarch64.so.1 ]] || return 2
                out=$(QEMU_LD_PREFIX=/usr/aarch64-linux-gnu "$qemu" "$binary" --version)
            else
                out=$("$qemu" "$binary" --version)
            fi
            ;;
        *) return 2 ;;
    esac || die "$binary --version failed"
    [[ "$out" == "toolscore $VERSION" ]] || die "$binary --version says '$out'"
    echo "$out"
}
# version_here's answer, or why there is none.
ran() {
    local code=0 out
    out=$(version_here "$@") || code=$?
    case $code in
        0) echo "$out" ;;
        2) echo "not run here (no qemu-aarch64$([[ "$1" == *-gnu ]] && echo " or aarch64 glibc"))" ;;
        *) exit "$code" ;;
    esac
}

# ------------------------------------------------------------ wheels
for target in $WHEEL_TARGETS; do
    t0=$(date +%s)
    log "wheel for $target"
    out="$TARGET_DIR/release-wheels/$target"
    rm -rf "$out"
    maturin build --locked --profile dist --zig --target "$target" --compatibility "$COMPATIBILITY" \
        --out "$out" >&2 || die "maturin could not build the $target wheel"
    wheels=("$out"/toolscore-"$VERSION"-*.whl)
    [[ ${#wheels[@]} -eq 1 && -f "${wheels[0]}" ]] || die "expected one wheel in $out: $(ls "$out")"
    # auditwheel, not the file name, decides whether an index would take it.
    audit=$(auditwheel show "${wheels[0]}") || die "auditwheel show failed on ${wheels[0]}"
    # (auditwheel wraps its lines.)
    tag=$(tr '\n' ' ' <<<"$audit" |
        grep -Eo 'consistent with the following platform tag: "manylinux_[0-9]+_[0-9]+_[a-z0-9_]+"' |
        grep -Eo 'manylinux_[0-9]+_[0-9]+_[a-z0-9_]+') ||
        die "auditwheel reports no manylinux tag for $(basename "${wheels[0]}"):"$'\n'"$audit"
    # An index reads the tag from the file name.
    [[ "$(basename "${wheels[0]}")" == *"$tag"* ]] || die "$(basename "${wheels[0]}") is not tagged $tag"
    # The wheel holds a Python extension: installed, its `toolscore` command
    # runs where the architecture is this machine's.
    if [[ "$target" == "$(uname -m)"-* ]]; then
        venv="$TARGET_DIR/release-stage/venv-$target"
        python3 -m venv --clear "$venv"
        "$venv/bin/python" -m pip --disable-pip-version-check --quiet install --no-deps "${wheels[0]}" ||
            die "pip could not install ${wheels[0]}"
        version=$("$venv/bin/toolscore" --version) || die "the $target wheel's toolscore --version failed"
        [[ "$version" == "toolscore $VERSION" ]] || die "the $target wheel's toolscore --version says '$version'"
    else
        version="not run here (not this machine's architecture)"
    fi
    cp "${wheels[0]}" "$DIST/"
    note "wheel $(basename "${wheels[0]}"): $(du -k "${wheels[0]}" | cut -f1) KiB, auditwheel: $tag, $version, $(($(date +%s) - t0)) s"
done

# --------------------------------------------------- static binaries
for target in $BINARY_TARGETS; do
    t0=$(date +%s)
    log "static binary for $target"
    cargo zigbuild --locked --profile dist --target "$target" --bin toolscore >&2 ||
        die "cargo zigbuild could not build for $target"
    binary="$TARGET_DIR/$target/dist/toolscore"
    # Static: no program interpreter, no shared library.
    ! readelf -lW "$binary" | grep -q 'program interpreter' || die "$binary asks for a dynamic loader"
    ! readelf -dW "$binary" | grep -q '(NEEDED)' || die "$binary needs shared libraries"
    version=$(ran "$target" "$binary")
    name="toolscore-$VERSION-$target"
    stage="$TARGET_DIR/release-stage/$name"
    rm -rf "$stage"
    mkdir -p "$stage"
    cp "$binary" LICENSE README.md "$stage/"
    # Reproducible archive: sorted names, fixed owner and times.
    tar --sort=name --owner=0 --group=0 --numeric-owner --mtime=@0 \
        -C "$(dirname "$stage")" -czf "$DIST/$name.tar.gz" "$name"
    (cd "$DIST" && sha256sum "$name.tar.gz" >"$name.tar.gz.sha256")
    note "binary $name.tar.gz: $(du -k "$DIST/$name.tar.gz" | cut -f1) KiB (binary $(du -k "$binary" | cut -f1) KiB), $version, $(($(date +%s) - t0)) s"
done

# ------------------------------------------------------------ checks
shopt -s nullglob
(cd "$DIST" && twine check --strict -- *.whl "$(basename "$SDIST")" >&2) || die "twine check failed"
(cd "$DIST" && sha256sum -- *.whl *.tar.gz >SHA256SUMS)
shopt -u nullglob

log "dist/ of toolscore $VERSION, $(($(date +%s) - START)) s in all:"
printf '  %s\n' "${SUMMARY[@]}" >&2
ls -l "$DIST" >&2
