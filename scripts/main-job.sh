#!/usr/bin/env bash
# The main job (README). Until the WQE-size sweep lands, it decodes a
# ground-truth CQE with the bareverbs tool.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo run -q --release -p bareverbs-bench --bin bareverbs -- "${@:-version}"
