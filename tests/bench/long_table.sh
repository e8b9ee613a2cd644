#!/bin/bash
# SPDX-License-Identifier: GPL-3.0-or-later
# Issue 44's goals table (long texts on the CPU) from one run of `attnviz bench`: the Llama-3.2-1B
# shape at 1,024 and 8,192 tokens (peak RSS above the weights, a pooled map of one head), the
# SmolLM2-135M shape at 32,768 (RSS, the map, a zoom to 256 x 256 cells), the GGUF Qwen3-0.6B Q4_K_M
# file at 1,024 (RSS against file + 1 GB), and a full trace / one appended token at 128 tokens for
# every shape of bench --seeded, with goal and met columns (tests/bench/long_table.py does the work).
#   bash tests/bench/long_table.sh [BUILD_DIR]
# env: LONG_TABLE_QUICK=1  only the 1,024- and 128-token rows (minutes; the 8k and 32k traces take
#                          tens of minutes on two cores, the 32k one more under load)
#      LONG_TABLE_BASE=DIR the build of "today" (DIR/app/attnviz): the 128-token rows run A B A B
#                          against it; without it their "no slower" goal is not judged
#      GGUF_FILE=PATH      the Q4_K_M file; default /tmp/attnviz-gguf-bench/qwen3-0.6b-q4_k_m.gguf,
#                          made by tests/bench/make_bench_gguf.py (numpy, minutes) where missing
#      LONG_TABLE_ROWS=LIST  the rows run, of llama1k, llama8k, smol32k, gguf, short (default all)
#      LONG_TABLE_BASE_MEMORY=1  with LONG_TABLE_BASE, the memory and GGUF rows' peak of the base build
#                          too (what it keeps by default; a row it cannot run says why)
#      ROUNDS (3), REPEAT (5), THREADS (2)
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${1:-build}
[ -x "$build/app/attnviz" ] || { echo "long_table: no $build/app/attnviz (build first)" >&2; exit 2; }
args=(--attnviz "$build/app/attnviz" --rounds "${ROUNDS:-3}" --repeat "${REPEAT:-5}" --threads "${THREADS:-2}")
[ "${LONG_TABLE_QUICK:-0}" != 0 ] && args+=(--quick)
[ -n "${LONG_TABLE_ROWS:-}" ] && args+=(--rows "$LONG_TABLE_ROWS")
[ "${LONG_TABLE_BASE_MEMORY:-0}" != 0 ] && args+=(--base-memory)
if [ -n "${LONG_TABLE_BASE:-}" ]; then
    [ -x "$LONG_TABLE_BASE/app/attnviz" ] || { echo "long_table: no $LONG_TABLE_BASE/app/attnviz" >&2; exit 2; }
    args+=(--base "$LONG_TABLE_BASE/app/attnviz")
fi
gguf=${GGUF_FILE:-/tmp/attnviz-gguf-bench/qwen3-0.6b-q4_k_m.gguf}
if [ ! -e "$gguf" ] && [ -z "${GGUF_FILE:-}" ]; then
    if /usr/bin/python3 -c 'import numpy' 2>/dev/null; then
        /usr/bin/python3 tests/bench/make_bench_gguf.py "$(dirname "$gguf")" q4_k_m >&2
    else
        echo "long_table: no numpy for /usr/bin/python3 (python3-numpy): the GGUF row is not run" >&2
    fi
fi
[ -e "$gguf" ] && args+=(--gguf "$gguf")
exec /usr/bin/python3 tests/bench/long_table.py "${args[@]}"
