#!/usr/bin/env bash
# The main job (README): the WQE-size sweep. Builds the bareverbs tool and
# runs `bareverbs sweep --device fw-sim --blueflame` (every feasible row also
# run on the simulated ConnectX through the command path), writing the chart
# to target/sweep-chart.svg and the rows to target/sweep.json. Extra
# arguments are passed to the tool instead.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build -q --release -p bareverbs-tool --bin bareverbs
bv=target/release/bareverbs
if [ "$#" -gt 0 ]; then
  exec "$bv" "$@"
fi
"$bv" sweep --device fw-sim --blueflame --svg target/sweep-chart.svg --json-file target/sweep.json
echo
echo "chart: target/sweep-chart.svg   rows: target/sweep.json"
