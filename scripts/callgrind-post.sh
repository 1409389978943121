#!/usr/bin/env bash
# Instructions per posted WR on the Rust post path, measured with
# valgrind --tool=callgrind by difference of two iteration counts (so
# process start-up, queue setup and exit cancel out), printed beside the
# vendor-provider anchors.
#
#   scripts/callgrind-post.sh [path/to/bareverbs]
#
# Env: N1 / N2 (iteration counts, default 20000 / 220000),
#      CARGO_TARGET_DIR (default target) when the binary is not given.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${1:-${CARGO_TARGET_DIR:-target}/release/bareverbs}
N1=${N1:-20000}
N2=${N2:-220000}
command -v valgrind >/dev/null || { echo "valgrind not found (apt-get install valgrind)" >&2; exit 1; }
if [ ! -x "$BIN" ]; then
  cargo build --release -p bareverbs-bench >&2
fi
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

# total_ir ARGS... -> prints the program's total instruction count
total_ir() {
  valgrind --tool=callgrind ${VG_EXTRA:-} --callgrind-out-file="$TMP/cg.out" "$BIN" "$@" >/dev/null 2>"$TMP/cg.err"
  grep -E '^(summary|totals):' "$TMP/cg.out" | head -1 | awk '{print $2}'
}

# per_wr NAME ANCHOR ARGS... -> one table row
per_wr() {
  local name=$1 anchor=$2; shift 2
  local a b
  a=$(total_ir perf post "$@" --iters "$N1")
  b=$(total_ir perf post "$@" --iters "$N2")
  awk -v n="$name" -v a="$a" -v b="$b" -v n1="$N1" -v n2="$N2" -v anc="$anchor" \
    'BEGIN { d = (b - a) / (n2 - n1); printf "%-34s %10.1f %14s %8.2f\n", n, d, anc, d / anc }'
}

printf "%-34s %10s %14s %8s\n" "case (RC RDMA WRITE)" "instr/WR" "vendor anchor" "ratio"
per_wr "1 SGE, 16 WRs per doorbell" 192 --opcode write --sge 1 --batch 16 --signal-every 16
per_wr "1 SGE, 1 WR per doorbell"   322 --opcode write --sge 1 --batch 1 --signal-every 16
per_wr "16 SGEs, 16 WRs per doorbell" 657 --opcode write --sge 16 --batch 16 --signal-every 16
# per_cqe NAME ANCHOR ARGS... -> one row for the poll path
per_cqe() {
  local name=$1 anchor=$2; shift 2
  local a b
  a=$(VG_EXTRA='--toggle-collect=*poll_once*' total_ir perf poll "$@" --iters "$N1")
  b=$(VG_EXTRA='--toggle-collect=*poll_once*' total_ir perf poll "$@" --iters "$N2")
  awk -v n="$name" -v a="$a" -v b="$b" -v n1="$N1" -v n2="$N2" -v anc="$anchor" \
    'BEGIN { d = (b - a) / (n2 - n1); printf "%-34s %10.1f %14s %8.2f\n", n, d, anc, d / anc }'
}
echo
printf "%-34s %10s %14s %8s\n" "case (requester CQEs)" "instr/CQE" "vendor anchor" "ratio"
per_cqe "16 CQEs per poll" 111 --batch 16
per_cqe "1 CQE per poll" 184 --batch 1
echo
echo "Post rows include the benchmark's own loop (setting wr_id/signaled) and the"
echo "retire step; poll rows count only the poll calls (callgrind --toggle-collect"
echo "on poll_once). Floor ~20 instructions per WR (WQE stores only)."
