#!/bin/bash
# SPDX-License-Identifier: GPL-3.0-or-later
# The encoder-decoder table of README.md: model_bench and torch_seq2seq_peer.py interleaved on the
# seeded t5-small and opus-mt-en-de shapes (64 source + 64 target tokens), ROUNDS rounds, each row
# attnviz ms, PyTorch ms, their ratio and the load average as the round started. PyTorch's BLAS:
# Debian's torch calls whichever libblas.so.3 the system selects (the reference BLAS unless OpenBLAS
# is installed): OPENBLAS=DIR puts DIR (OpenBLAS's libblas.so.3, e.g. /usr/lib/x86_64-linux-gnu/
# openblas-pthread, or that folder unpacked from libopenblas0-pthread's .deb) first for the peer.
#   [REPEAT=5] bash tests/bench/seq2seq_table.sh [BUILD_DIR] [ROUNDS]   (each row: the median of REPEAT)
set -e
here=$(cd "$(dirname "$0")" && pwd)
build=${1:-build}
rounds=${2:-3}
echo "| shape | what | attnviz ms | PyTorch ms | ratio | load (1 min) |"
echo "|---|---|---:|---:|---:|---:|"
for r in $(seq "$rounds"); do
    for shape in t5-small opus-mt-en-de; do
        load=$(cut -d' ' -f1 /proc/loadavg)
        ours=$("$build/tests/bench/model_bench" --seeded "$shape" --tokens 64 --repeat "${REPEAT:-5}")
        theirs=$(cd "$here" && LD_LIBRARY_PATH=${OPENBLAS:+$OPENBLAS:}$LD_LIBRARY_PATH /usr/bin/python3 torch_seq2seq_peer.py "$shape" --tokens 64 --repeat "${REPEAT:-5}")
        python3 - "$shape" "$load" "$ours" "$theirs" <<'EOF'
import json, sys
shape, load, ours, theirs = sys.argv[1], sys.argv[2], json.loads(sys.argv[3]), json.loads(sys.argv[4])
for a, t in zip(ours['rows'], theirs['rows']):
    print('| %s | %s | %.1f | %.1f | %.2f× | %s |' % (shape, a['what'], a['ms'], t['ms'], t['ms'] / a['ms'], load))
EOF
    done
done
