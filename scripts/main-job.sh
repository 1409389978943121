#!/usr/bin/env bash
# The main job (README). Builds the bareverbs tool and runs it. Until the
# WQE-size sweep lands, it explains the classic sizing failure and decodes a
# ground-truth CQE; extra arguments are passed to the tool instead.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build -q --release -p bareverbs-bench --bin bareverbs
bv=target/release/bareverbs
if [ "$#" -gt 0 ]; then
  exec "$bv" "$@"
fi
echo "== bareverbs budget --table (memory per RC QP, exact mlx5 bytes vs the 64 B + 16 B/SGE estimate)"
"$bv" budget --table
echo
echo "== bareverbs budget: why 65536 WRs x 16 SGEs fails"
"$bv" budget --qp-type rc --max-send-wr 65536 --max-send-sge 16 --max-recv-wr 0 --max-recv-sge 0 || true
echo
echo "== bareverbs decode cqe (cqe_vectors.txt vector 1)"
"$bv" decode cqe 00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000 \
                 00000005 00000000 00000000 00000077 00000000 00000000 080abcde 00030000
