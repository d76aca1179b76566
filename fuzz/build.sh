#!/usr/bin/env bash
# Builds the fuzz targets with libFuzzer on the stable toolchain: the flags
# `cargo fuzz build --sanitizer none` passes, set by hand (no nightly, no
# cargo-fuzz install needed). `--target` keeps build scripts uninstrumented.
set -euo pipefail
cd "$(dirname "$0")"
host=$(rustc -vV | sed -n 's/^host: //p')
export RUSTFLAGS="-Cpasses=sancov-module \
 -Cllvm-args=-sanitizer-coverage-level=4 \
 -Cllvm-args=-sanitizer-coverage-inline-8bit-counters \
 -Cllvm-args=-sanitizer-coverage-pc-table \
 -Cllvm-args=-sanitizer-coverage-trace-compares \
 --cfg fuzzing -Cdebug-assertions -Coverflow-checks"
exec cargo build --release --target "$host" --bins "$@"
