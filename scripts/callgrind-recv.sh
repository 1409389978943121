#!/usr/bin/env bash
# Instructions per posted receive WR (RQ and SRQ), measured with
# valgrind --tool=callgrind by difference of two iteration counts exactly
# as scripts/callgrind-post.sh's per_wr does (start-up, queue setup and
# exit cancel out). Rows include the benchmark's own loop (setting wr_id)
# and the retire step (RecvQueue::retire / SharedReceiveQueue::retire for
# every WR, oldest first). The second column counts only the post calls
# (callgrind --toggle-collect on RecvBench::post).
#
#   scripts/callgrind-recv.sh [path/to/bareverbs]
#
# Env: N1 / N2 (iteration counts, default 20000 / 120000),
#      CARGO_TARGET_DIR (default target) when the binary is not given.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${1:-${CARGO_TARGET_DIR:-target}/release/bareverbs}
N1=${N1:-20000}
N2=${N2:-120000}
command -v valgrind >/dev/null || { echo "valgrind not found (apt-get install valgrind)" >&2; exit 1; }
if [ ! -x "$BIN" ]; then
  cargo build --release -p bareverbs-bench >&2
fi
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

total_ir() {
  valgrind --tool=callgrind ${VG_EXTRA:-} --callgrind-out-file="$TMP/cg.out" "$BIN" "$@" >/dev/null 2>"$TMP/cg.err"
  grep -E '^(summary|totals):' "$TMP/cg.out" | head -1 | awk '{print $2}'
}

per_wr() {
  local a b
  a=$(total_ir perf post-recv "$@" --iters "$N1")
  b=$(total_ir perf post-recv "$@" --iters "$N2")
  awk -v a="$a" -v b="$b" -v n1="$N1" -v n2="$N2" 'BEGIN { printf "%.1f", (b - a) / (n2 - n1) }'
}

row() {
  local name=$1; shift
  local all post
  all=$(per_wr "$@")
  post=$(VG_EXTRA='--toggle-collect=*RecvBench*post*' per_wr "$@")
  printf "%-30s %12s %12s\n" "$name" "$all" "$post"
}

printf "%-30s %12s %12s\n" "case (1 SGE)" "instr/WR" "post only"
row "RQ, 16 WRs per doorbell rec"  --queue rq --sge 1 --batch 16
row "RQ, 1 WR per doorbell rec"    --queue rq --sge 1 --batch 1
row "SRQ, 16 WRs per doorbell rec" --queue srq --sge 1 --batch 16
row "SRQ, 1 WR per doorbell rec"   --queue srq --sge 1 --batch 1
