#!/bin/bash
# SPDX-License-Identifier: GPL-3.0-or-later
# The model benchmark table: attnviz and PyTorch interleaved on the same shapes (GPT-2 small at 128
# and 1,024 tokens and one token appended to 128; BERT-base at 128), ROUNDS times, then the peak
# memory of a 1,024-token GPT-2 run with every layer's attention kept (scores kept / dropped).
#   bash tests/bench/models_table.sh [BUILD_DIR] [ROUNDS]
set -euo pipefail
build=${1:-build}; rounds=${2:-2}
bin=$build/app/attnviz
here=$(dirname "$0")
for r in $(seq "$rounds"); do
    echo "== round $r"
    ATTNVIZ_THREADS=2 "$bin" bench --seeded gpt2-small --tokens 128,1024 --repeat 5 --json
    /usr/bin/python3 "$here/torch_models.py" gpt2-small --tokens 128,1024 --repeat 5
    ATTNVIZ_THREADS=2 "$bin" bench --seeded bert-base --tokens 128 --repeat 5 --json
    /usr/bin/python3 "$here/torch_models.py" bert-base --tokens 128 --repeat 5
done
echo "== memory"
ATTNVIZ_THREADS=2 "$bin" bench --seeded gpt2-small --tokens 1024 --repeat 1 --json | grep -E 'peak|scores'
ATTNVIZ_THREADS=2 "$bin" bench --seeded gpt2-small --tokens 1024 --repeat 1 --no-scores --json | grep -E 'peak|scores'
