#!/usr/bin/env bash
# The test command (README): installs what the tests need on a fresh Debian
# machine, then runs every check. Safe to re-run; installs are skipped when
# already present.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"

start=$(date +%s)
# Each step prints the seconds since the start, so a slow step is visible.
step() { printf '\n==> [%ss] %s\n' "$(($(date +%s) - start))" "$*"; }

# --- set-up --------------------------------------------------------------
if [ ! -f /usr/include/infiniband/mlx5dv.h ]; then
  step "installing libibverbs-dev (vendor header infiniband/mlx5dv.h)"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq libibverbs-dev >/dev/null
fi
if ! rustup target list --installed | grep -q '^x86_64-unknown-none$'; then
  step "adding the x86_64-unknown-none target"
  rustup target add x86_64-unknown-none
fi
if ! rustup run nightly rustc --version >/dev/null 2>&1; then
  step "installing nightly"
  rustup toolchain install nightly --profile minimal
fi
if ! rustup component list --toolchain nightly --installed | grep -q '^miri'; then
  step "adding miri and rust-src to nightly"
  rustup component add --toolchain nightly miri rust-src
fi
if ! command -v python3 >/dev/null 2>&1; then
  step "installing python3 (the import-cycle check)"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq python3-minimal >/dev/null
fi
if ! command -v cargo-fuzz >/dev/null 2>&1; then
  step "installing cargo-fuzz"
  cargo install cargo-fuzz --locked
fi

# --- checks --------------------------------------------------------------
# The C comparison loop (perf compare-c, perf post --c-loop, the C side of
# the post bench) is a cargo feature, off by default: CI builds, lints and
# tests with it on, and once more without it and without mlx5dv.h.
c_loop=bareverbs-tool/c-loop,bareverbs-bench/c-loop

step "cargo fmt --check"
cargo fmt --all -- --check

step "no import cycle between the modules of any crate"
python3 scripts/module-cycles.py

step "cargo clippy (workspace, all targets, the c-loop feature, -D warnings)"
cargo clippy --workspace --all-targets --features "$c_loop" -- -D warnings

step "the tool builds without the c-loop feature and without mlx5dv.h"
MLX5DV_INCLUDE=/nonexistent cargo clippy -q -p bareverbs-tool -p bareverbs-bench --all-targets -- -D warnings

step "cargo doc (workspace, no warnings)"
RUSTDOCFLAGS=-Dwarnings cargo doc -q --no-deps --workspace --features "$c_loop"

step "no_std build of the core for x86_64-unknown-none"
cargo build -p bareverbs --target x86_64-unknown-none

step "workspace tests with the c-loop feature (unit, integration, vendor-header conformance, vector replays, corpus replays)"
cargo test --workspace --release --features "$c_loop"

step "the tool's command-line tests without the c-loop feature and without mlx5dv.h"
MLX5DV_INCLUDE=/nonexistent cargo test --release -q -p bareverbs-tool --test cli_errors

step "the newcomer's example (safe verbs API, no unsafe): loopback WRITE, SEND/RECV, READ"
if grep -nw 'unsafe' sim/examples/loopback.rs; then
  echo "the newcomer's example must not use unsafe" >&2
  exit 1
fi
cargo run --release -q -p bareverbs-sim --example loopback

step "compile-fail proofs with their error codes (rustdoc checks codes on nightly)"
cargo +nightly test -p bareverbs --doc

if ! ls fuzz/fuzz_targets/*.rs >/dev/null 2>&1; then
  echo "no fuzz targets in fuzz/fuzz_targets: the smoke runs would be skipped" >&2
  exit 1
fi
# Miri runs on one core: build the fuzz targets (AddressSanitizer, debug
# assertions) on the other meanwhile.
logs_dir=$(mktemp -d)
fuzz_log="$logs_dir/build.log"
(cd fuzz && cargo +nightly fuzz build >"$fuzz_log" 2>&1) &
fuzz_build=$!
# If a step fails first, stop the build and drop the logs.
# (pkill -P: the subshell's cargo too, not only the subshell.)
trap 'pkill -P "$fuzz_build" 2>/dev/null || true; kill "$fuzz_build" 2>/dev/null || true; rm -rf "$logs_dir"' EXIT

step "miri on the core"
cargo +nightly miri test -p bareverbs --lib

step "fuzz smoke runs (time-boxed, two at a time)"
if ! wait "$fuzz_build"; then
  cat "$fuzz_log" >&2
  echo "building the fuzz targets failed" >&2
  exit 1
fi
secs=${FUZZ_SECONDS:-10}
smoke() {
  (cd fuzz && cargo +nightly fuzz run "$1" -- -max_total_time="$secs" -rss_limit_mb=4096 >"$2" 2>&1)
}
targets=(fuzz/fuzz_targets/*.rs)
failed=0
for ((i = 0; i < ${#targets[@]}; i += 2)); do
  pids=()
  logs=()
  for t in "${targets[@]:i:2}"; do
    name=$(basename "$t" .rs)
    log="$logs_dir/$name.log"
    smoke "$name" "$log" &
    pids+=($!)
    logs+=("$name:$log")
  done
  for k in "${!pids[@]}"; do
    name=${logs[k]%%:*}
    log=${logs[k]#*:}
    if wait "${pids[k]}"; then
      echo "$name: $(grep -E '^Done [0-9]+ runs' "$log" || tail -n 1 "$log")"
    else
      echo "$name FAILED:" >&2
      tail -n 40 "$log" >&2
      failed=1
    fi
  done
done
[ "$failed" = 0 ] || exit 1

step "all checks passed"
