#!/bin/bash
# SPDX-License-Identifier: GPL-3.0-or-later
# Issue 13's model table: attnviz and PyTorch interleaved on the same shapes (GPT-2 small: one token
# appended to 128, full 128, full 1,024; BERT-base: full 128), ROUNDS rounds, medians with their
# spread and PyTorch/attnviz ratios, the load average, and the peak memory of a 1,024-token GPT-2
# trace with every layer's attention kept (tests/bench/models_peer.py does the work).
#   bash tests/bench/models_table.sh [BUILD_DIR] [ROUNDS]        env: REPEAT (3), THREADS (2)
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${1:-build}
[ -x "$build/app/attnviz" ] || { echo "models_table: no $build/app/attnviz (build first)" >&2; exit 2; }
exec /usr/bin/python3 tests/bench/models_peer.py --attnviz "$build/app/attnviz" --rounds "${2:-3}" \
    --repeat "${REPEAT:-3}" --threads "${THREADS:-2}"
