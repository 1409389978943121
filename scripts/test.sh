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
for t in x86_64-unknown-none aarch64-unknown-none; do
  if ! rustup target list --installed | grep -q "^$t\$"; then
    step "adding the $t target"
    rustup target add "$t"
  fi
done
# The published crates' stated minimum Rust (workspace rust-version).
msrv=$(sed -n 's/^rust-version = "\(.*\)"/\1/p' Cargo.toml)
if ! rustup run "$msrv" rustc --version >/dev/null 2>&1; then
  step "installing Rust $msrv (the crates' rust-version)"
  rustup toolchain install "$msrv" --profile minimal
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
# Every check runs even when an earlier one failed (cargo test with
# --no-fail-fast runs every test binary); the failures are listed at the end
# and the script exits non-zero if there was any.
failures=()
check() {
  local name=$1
  shift
  step "$name"
  if ! "$@"; then
    echo "FAILED: $name" >&2
    failures+=("$name")
  fi
}

# Scratch space for this run, removed at exit.
work_root=$(mktemp -d)
trap 'rm -rf "$work_root"' EXIT

# The tree must be as clean after the run as before it (no test or fuzz run
# may write into the repository); what was already there is not ours to judge.
in_git=false
if git -C "$root" rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  in_git=true
  status_before=$(git -C "$root" status --porcelain --untracked-files=all)
fi

# The C comparison loop (perf compare-c, perf post --c-loop, the C side of
# the post bench) is a cargo feature, off by default: CI builds, lints and
# tests with it on, and once more without it and without mlx5dv.h.
c_loop=bareverbs-tool/c-loop,bareverbs-bench/c-loop

check "cargo fmt --check" cargo fmt --all -- --check

check "dependencies: nothing outside the repository, no toml_edit, one bitflags major" \
  bash scripts/check-deps.sh

check "no import cycle between the modules of any crate" python3 scripts/module-cycles.py

check "cargo clippy (workspace, all targets, the c-loop feature, -D warnings)" \
  cargo clippy --workspace --all-targets --features "$c_loop" -- -D warnings

check "the tool builds without the c-loop feature and without mlx5dv.h" \
  env MLX5DV_INCLUDE=/nonexistent cargo clippy -q -p bareverbs-tool -p bareverbs-bench --all-targets -- -D warnings

check "cargo doc (workspace, no warnings)" \
  env RUSTDOCFLAGS=-Dwarnings cargo doc -q --no-deps --workspace --features "$c_loop"

check "no_std build of the core for x86_64-unknown-none" \
  cargo build -q -p bareverbs --target x86_64-unknown-none

check "DMA barriers per architecture in the emitted instructions (aarch64, x86_64), volatile/memoffset rules" \
  bash scripts/check-barriers.sh

check "workspace tests with the c-loop feature (unit, integration, vendor-header conformance, vector replays, corpus replays)" \
  cargo test --workspace --release --no-fail-fast --features "$c_loop"

check "the tool's command-line tests without the c-loop feature and without mlx5dv.h" \
  env MLX5DV_INCLUDE=/nonexistent cargo test --release -q --no-fail-fast -p bareverbs-tool --test cli_errors

# Every published crate packages and builds from its package alone (the
# tool with the crates it depends on, as a workspace publish orders them),
# and the tool installs as a user installs it.
# A separate target folder: another toolchain's artifacts are not reusable.
check "the published crates build on their rust-version ($msrv)" \
  cargo "+$msrv" check -q --target-dir "${CARGO_TARGET_DIR:-target}/msrv" \
  -p bareverbs -p bareverbs-sim -p bareverbs-vfio -p bareverbs-conformance -p bareverbs-tool

publish_dry_run() {
  # A workspace publish serves the crates it packages to each other from a
  # scratch registry, and cargo unpacks them under $CARGO_HOME/registry/src
  # in a folder named after that registry's path. A folder left by an
  # earlier run at the same path is reused as is, so a dependent would be
  # verified against the earlier sources: drop those folders first.
  local src="${CARGO_HOME:-$HOME/.cargo}/registry/src"
  rm -rf "$src"/-*/bareverbs-*
  cargo publish --dry-run --allow-dirty -q -p bareverbs -p bareverbs-sim -p bareverbs-vfio \
    -p bareverbs-conformance -p bareverbs-tool
}
check "cargo publish --dry-run of every published crate" publish_dry_run
install_tool() {
  local dest="$work_root/install"
  cargo install -q --locked --path benches/tool --root "$dest" --target-dir "${CARGO_TARGET_DIR:-target}" &&
    "$dest/bin/bareverbs" --version
}
check "cargo install --path benches/tool" install_tool

newcomer_example() {
  if grep -nw 'unsafe' sim/examples/loopback.rs; then
    echo "the newcomer's example must not use unsafe" >&2
    return 1
  fi
  cargo run --release -q -p bareverbs-sim --example loopback
}
check "the newcomer's example (safe verbs API, no unsafe): loopback WRITE, SEND/RECV, READ" newcomer_example

check "compile-fail proofs with their error codes (rustdoc checks codes on nightly)" \
  cargo +nightly test -p bareverbs --doc --no-fail-fast

if ! ls fuzz/fuzz_targets/*.rs >/dev/null 2>&1; then
  echo "no fuzz targets in fuzz/fuzz_targets: the smoke runs would be skipped" >&2
  exit 1
fi
# Miri runs on one core: build the fuzz targets (AddressSanitizer, debug
# assertions) on the other meanwhile.
work_dir="$work_root/fuzz"
mkdir -p "$work_dir"
fuzz_log="$work_dir/build.log"
(cd fuzz && cargo +nightly fuzz build >"$fuzz_log" 2>&1) &
fuzz_build=$!
# If the script stops early, stop the build and drop the scratch files.
# (pkill -P: the subshell's cargo too, not only the subshell.)
trap 'pkill -P "$fuzz_build" 2>/dev/null || true; kill "$fuzz_build" 2>/dev/null || true; rm -rf "$work_root"' EXIT

check "miri on the core" cargo +nightly miri test -p bareverbs --lib --no-fail-fast

# Each target fuzzes a scratch copy of its committed corpus, and writes any
# crash artifact to the scratch directory, so the run leaves fuzz/ as it was
# (a crash's input is printed with the failure).
fuzz_smoke() {
  if ! wait "$fuzz_build"; then
    cat "$fuzz_log" >&2
    echo "building the fuzz targets failed" >&2
    return 1
  fi
  local secs=${FUZZ_SECONDS:-10}
  smoke() {
    local name=$1 log=$2 corpus="$work_dir/corpus/$1" artifacts="$work_dir/artifacts/$1/"
    mkdir -p "$corpus" "$artifacts" || return 1
    if [ -d "fuzz/corpus/$name" ]; then
      cp -R "fuzz/corpus/$name/." "$corpus/" || return 1
    fi
    (cd fuzz && cargo +nightly fuzz run "$name" "$corpus" -- -max_total_time="$secs" \
      -rss_limit_mb=4096 -artifact_prefix="$artifacts" >"$log" 2>&1)
  }
  local targets=(fuzz/fuzz_targets/*.rs) failed=0 i k
  for ((i = 0; i < ${#targets[@]}; i += 2)); do
    local pids=() logs=() t name log
    for t in "${targets[@]:i:2}"; do
      name=$(basename "$t" .rs)
      log="$work_dir/$name.log"
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
  [ "$failed" = 0 ]
}
check "fuzz smoke runs (time-boxed, two at a time, on scratch copies of the corpora)" fuzz_smoke

tree_unchanged() {
  $in_git || return 0
  local now
  now=$(git -C "$root" status --porcelain --untracked-files=all)
  if [ "$now" != "$status_before" ]; then
    echo "the run changed the working tree (git status before vs after):" >&2
    diff <(printf '%s\n' "$status_before") <(printf '%s\n' "$now") >&2 || true
    return 1
  fi
}
check "the run left the working tree as it found it" tree_unchanged

if [ ${#failures[@]} -gt 0 ]; then
  step "${#failures[@]} check(s) failed:"
  printf '  - %s\n' "${failures[@]}" >&2
  exit 1
fi
step "all checks passed"
