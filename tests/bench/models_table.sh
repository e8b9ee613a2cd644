#!/bin/bash
# SPDX-License-Identifier: GPL-3.0-or-later
# Real-shape model tables: attnviz and PyTorch interleaved on the same shapes, ROUNDS rounds, medians
# with their spread and PyTorch/attnviz ratios, the load average, and the peak memory of a
# 1,024-token trace with every layer's attention kept (tests/bench/models_peer.py does the work).
#   bash tests/bench/models_table.sh [BUILD_DIR] [ROUNDS]        env: REPEAT (3), THREADS (2), SHAPES
# SHAPES picks the table:
#   gpt2-small,bert-base (the default): GPT-2 small one token appended to 128, full 128, full 1,024;
#       BERT-base full 128; GPT-2's memory. Peer: tests/bench/torch_models.py.
#   smollm2-135m,qwen3-0.6b,llama3.2-1b (or `rotary`, the three): the rotary decoders of
#       `attnviz bench --seeded` (grouped-query attention, RMSNorm, SwiGLU, real shapes, seeded
#       weights): full trace of 128 tokens, one token appended to 128, each shape's peak RSS at 1,024
#       tokens, with the goals in ms and as ratios (>= 1.5x PyTorch full, >= 1.8x append); and the
#       machine's sgemm rate (torch.mm 2048^3, measured each round) with the share of it each full
#       trace reaches (FLOPs from the shape). Peer: tests/bench/torch_llama.py, Hugging Face's
#       modeling_llama / modeling_qwen3 in float32 eager with every layer's attention kept and a
#       key/value cache for the append (`/usr/bin/python3 tests/bench/torch_llama.py --check`
#       validates it against the llama-tiny / qwen3-tiny float64 references). The PyTorch side holds
#       Llama-3.2-1B's float32 weights (~5 GB) plus its kept attention at 1,024 tokens (~2 GB): ~8 GB.
#   e.g. SHAPES=rotary bash tests/bench/models_table.sh build 3
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${1:-build}
shapes=${SHAPES:-gpt2-small,bert-base}
[ "$shapes" = rotary ] && shapes=smollm2-135m,qwen3-0.6b,llama3.2-1b
[ -x "$build/app/attnviz" ] || { echo "models_table: no $build/app/attnviz (build first)" >&2; exit 2; }
exec /usr/bin/python3 tests/bench/models_peer.py --attnviz "$build/app/attnviz" --rounds "${2:-3}" \
    --repeat "${REPEAT:-3}" --threads "${THREADS:-2}" --shapes "$shapes"
