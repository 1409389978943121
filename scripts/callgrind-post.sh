#!/usr/bin/env bash
# Instruction counts of the data path (send post, poll, receive post),
# measured with valgrind --tool=callgrind by difference of two iteration
# counts (so process start-up, queue setup and exit cancel out), printed
# beside the anchors and the goals of the hot-path work:
#
#   vendor    rdma-core's mlx5 provider for the same work (ibv_post_send /
#             ibv_poll_cq), measured once on this machine class
#   C loop    benches/tool/c/post_loop.c, a lean mlx5dv.h loop (counted here, in
#             the same run, by the same method)
#   list /    the Rust post forms: a slice of WRs per post_rdma_raw call, or
#   pushed    each WR pushed into a SendBatch (sq::batch) as it is formed
#   goal      what the hot path is meant to reach
#
#   scripts/callgrind-post.sh [path/to/bareverbs]
#
# Without a path the tool is built (profile `measure`: release with one
# codegen unit for bareverbs and bareverbs-tool, so the figures do not move
# when code moves between modules; with the c-loop feature the C loop needs);
# a given binary must have been built the same way.
# Env: N1 / N2 (iteration counts, default 20000 / 120000),
#      CARGO_TARGET_DIR (default target) when the binary is not given.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${1:-${CARGO_TARGET_DIR:-target}/measure/bareverbs}
N1=${N1:-20000}
N2=${N2:-120000}
command -v valgrind >/dev/null || { echo "valgrind not found (apt-get install valgrind)" >&2; exit 1; }
if [ "$#" -eq 0 ]; then
  cargo build --profile measure -p bareverbs-tool --features c-loop >&2
fi
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

# total_ir ARGS... -> the program's total instruction count (or only the
# functions VG_EXTRA's --toggle-collect names)
total_ir() {
  valgrind --tool=callgrind ${VG_EXTRA:-} --callgrind-out-file="$TMP/cg.out" "$BIN" "$@" >/dev/null 2>"$TMP/cg.err" \
    || { cat "$TMP/cg.err" >&2; exit 1; }
  grep -E '^(summary|totals):' "$TMP/cg.out" | head -1 | awk '{print $2}'
}

# per_op ARGS... -> instructions per operation: (Ir(N2) - Ir(N1)) / (N2 - N1)
per_op() {
  local a b
  a=$(total_ir "$@" --iters "$N1")
  b=$(total_ir "$@" --iters "$N2")
  awk -v a="$a" -v b="$b" -v n1="$N1" -v n2="$N2" 'BEGIN { printf "%.1f", (b - a) / (n2 - n1) }'
}

# verdict VALUE GOAL -> "met" / "not met"
verdict() {
  awk -v v="$1" -v g="$2" 'BEGIN { print (v <= g) ? "met" : "not met" }'
}

echo "Send post: RC RDMA WRITE into a memory-backed ring, full doorbell sequence (instructions per WR)"
printf "%-30s %7s %7s %9s %7s %7s %6s  %s\n" "case" "list" "pushed" "push only" "C loop" "vendor" "goal" ""
send_row() {
  local name=$1 vendor=$2 goal=$3; shift 3
  local list pushed only c
  list=$(per_op perf post --opcode write --signal-every 16 "$@")
  pushed=$(per_op perf post --pushed --opcode write --signal-every 16 "$@")
  only=$(VG_EXTRA='--toggle-collect=*push_rdma_once*' per_op perf post --pushed --isolate --opcode write --signal-every 16 "$@")
  c=$(per_op perf post --c-loop --opcode write --signal-every 16 "$@")
  printf "%-30s %7s %7s %9s %7s %7s %6s  %s\n" "$name" "$list" "$pushed" "$only" "$c" "$vendor" "<=$goal" "$(verdict "$pushed" "$goal")"
}
send_row "1 SGE, 16 WRs per doorbell" 192 40 --sge 1 --batch 16
send_row "1 SGE, 1 WR per doorbell" 322 80 --sge 1 --batch 1
send_row "16 SGEs, 16 WRs per doorbell" 657 120 --sge 16 --batch 16
echo "  list, pushed and C loop: the whole benchmark loop per WR (forming wr_id and"
echo "  signaled, the post inlined, the retire a poller does); list: a slice of"
echo "  RdmaWr per post_rdma_raw call; pushed: each WR pushed into a SendBatch as it"
echo "  is formed, one ring per batch (the goal's measure); push only: the batch"
echo "  call alone (out of line, --isolate)."
echo

echo "Poll: requester CQEs, each checked against the WR in flight (instructions per CQE, poll calls only)"
printf "%-30s %9s %9s %9s %7s %6s  %s\n" "case" "lean" "each" "full" "vendor" "goal" ""
poll_row() {
  local name=$1 vendor=$2 goal=$3; shift 3
  local lean each full
  lean=$(VG_EXTRA='--toggle-collect=*poll_once*' per_op perf poll "$@")
  each=$(VG_EXTRA='--toggle-collect=*poll_once*' per_op perf poll --each "$@")
  full=$(VG_EXTRA='--toggle-collect=*poll_once*' per_op perf poll --full "$@")
  printf "%-30s %9s %9s %9s %7s %6s  %s\n" "$name" "$lean" "$each" "$full" "$vendor" "<=$goal" "lean $(verdict "$lean" "$goal"), each $(verdict "$each" "$goal")"
}
poll_row "16 CQEs per poll" 111 30 --batch 16
poll_row "1 CQE per poll" 184 60 --batch 1
echo "  lean: poll_completions (cqe::Completion); each: poll_each, the consumer"
echo "  reading wr_id and status (no output array); full: poll (WorkCompletion)."
echo

echo "Receive post: 1-SGE receive WRs (instructions per WR)"
printf "%-30s %9s %9s %6s  %s\n" "case" "bareverbs" "post only" "goal" ""
recv_row() {
  local name=$1 goal=$2; shift 2
  local all only
  all=$(per_op perf post-recv --sge 1 "$@")
  only=$(VG_EXTRA='--toggle-collect=*RecvBench*post*' per_op perf post-recv --sge 1 "$@")
  if [ "$goal" = "-" ]; then
    printf "%-30s %9s %9s %6s\n" "$name" "$all" "$only" "-"
  else
    printf "%-30s %9s %9s %6s  %s\n" "$name" "$all" "$only" "<=$goal" "$(verdict "$only" "$goal")"
  fi
}
recv_row "RQ, 16 WRs per doorbell rec" 30 --queue rq --batch 16
recv_row "SRQ, 16 WRs per doorbell rec" 30 --queue srq --batch 16
recv_row "RQ, 1 WR per doorbell rec" - --queue rq --batch 1
recv_row "SRQ, 1 WR per doorbell rec" - --queue srq --batch 1
echo "  bareverbs: the whole loop per WR (wr_id, post, the oldest-first retire);"
echo "  post only: the post calls alone (the goal's measure)."
