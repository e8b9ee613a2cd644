#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# Re-makes every performance table (README "Performance") on this machine, from an
# already-built tree (bash packaging/dev.sh build). A benchmark, not a test: run it on a quiet
# machine; on a shared one, raise ROUNDS (each table interleaves attnviz and PyTorch per size and
# prints the median ratio with its min-max spread).
#   bash tests/bench/run_tables.sh [BUILD_DIR]        env: ROUNDS (3), SECONDS_PER (1), OPTIONS (1)
# Tables:
#   0. the machine's ceiling: register-only float FMA throughput, AVX2 and AVX-512 (fma_peak.cpp)
#   1. attention vs PyTorch, the loader's choice of core build (AVX-512 here)  [torch_peer.py]
#   2. the same with AVX-512 hidden from both (AVX2 core build; OpenBLAS Haswell kernels)
#   3. stack 12 x 12 x 768 at 128 and 512 tokens vs a PyTorch pre-norm stack, both ISAs
#   4. keystroke -> repaint (attnviz bench --ui)
#   5. ways of building the core side by side (OPTIONS=1): -march levels and EIGEN_USE_BLAS over
#      OpenBLAS, each compiled here from the core's sources with tests/bench/core_bench.cpp
#   6. a real 12-layer model (GPT-2 small, BERT-base shapes) vs PyTorch (models_table.sh)
# Needs: /usr/bin/python3 with python3-torch, libopenblas0-pthread (and libopenblas-dev for 5).
set -euo pipefail
cd "$(dirname "$0")/../.."
BUILD_DIR=${1:-build}
BIN=$BUILD_DIR/app/attnviz
ROUNDS=${ROUNDS:-3}
SECONDS_PER=${SECONDS_PER:-1}
PEER=(nice -n 0 /usr/bin/python3 tests/bench/torch_peer.py --attnviz "$BIN" --rounds "$ROUNDS" --seconds "$SECONDS_PER")
[ -x "$BIN" ] || { echo "run_tables: no $BIN (build first)" >&2; exit 2; }
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT

echo "## machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg)"
/lib64/ld-linux-x86-64.so.2 --help 2>/dev/null | grep 'x86-64-v' | sed 's/^/## loader: /' || true
echo
echo "## 0. the machine's ceiling: float FMA from registers only, no loads or stores (GFLOP/s)"
g++ -O2 -pthread tests/bench/fma_peak.cpp -o "$OUT/fma_peak"
"$OUT/fma_peak" --rounds "$ROUNDS"
echo
echo "## 1. attention vs PyTorch, default (the loader's choice)"
"${PEER[@]}"
echo
echo "## 2. attention vs PyTorch, AVX2 forced (GLIBC_TUNABLES=glibc.cpu.hwcaps=-AVX512F; OpenBLAS Haswell)"
"${PEER[@]}" --isa avx2
echo
echo "## 3. stack, 12 layers, vs PyTorch pre-norm stack (default, then AVX2 forced)"
"${PEER[@]}" --stack 12
"${PEER[@]}" --stack 12 --isa avx2
echo
echo "## 4. keystroke -> repaint"
QT_QPA_PLATFORM=offscreen "$BIN" bench --ui
echo
if [ "${OPTIONS:-1}" = 1 ]; then
    echo "## 5. ways of building the core, same sources (median ms; 2 threads; OpenBLAS single-threaded"
    echo "##    inside the core's own pool: OPENBLAS_NUM_THREADS=1)"
    SRC=(core/src/attention/attention.cpp core/src/attention/attentionkernels.cpp core/src/attention/linear.cpp
         core/src/attention/projections.cpp core/src/models/transformer.cpp core/src/runtime/bench.cpp core/src/runtime/backend.cpp
         core/src/runtime/parallel.cpp tests/bench/core_bench.cpp)
    FLAGS=(-std=c++17 -O3 -DNDEBUG -DEIGEN_MPL2_ONLY -DEIGEN_DONT_PARALLELIZE -DEIGEN_MAX_ALIGN_BYTES=64
           -DEIGEN_MAX_STATIC_ALIGN_BYTES=64 -DEIGEN_STACK_ALLOCATION_LIMIT=524288 -Icore/include
           -I/usr/include/eigen3 -pthread)
    declare -A OPT=(
        [v2]="-march=x86-64-v2"
        [v3]="-march=x86-64-v3"
        [v4]="-march=x86-64-v4"
        [v2+openblas]="-march=x86-64-v2 -DEIGEN_USE_BLAS"
        [v3+openblas]="-march=x86-64-v3 -DEIGEN_USE_BLAS"
    )
    for name in v2 v3 v4 v2+openblas v3+openblas; do
        libs=()
        [[ $name == *openblas ]] && libs=(-lopenblas)
        start=$(date +%s)
        # shellcheck disable=SC2086
        nice -n 5 g++ "${FLAGS[@]}" ${OPT[$name]} "${SRC[@]}" -o "$OUT/core_bench_$name" "${libs[@]}"
        echo "##    built $name in $(( $(date +%s) - start )) s"
    done
    SIZES=(128:256:4 512:768:12 2048:768:12 4096:768:12 32:1000:256:4)
    printf '%-14s' "option"; for s in "${SIZES[@]}" "stack12@128" "stack12@512"; do printf '%14s' "$s"; done; echo
    for round in $(seq "$ROUNDS"); do
        for name in v2 v3 v4 v2+openblas v3+openblas; do
            printf '%-14s' "$name"
            for s in "${SIZES[@]}"; do
                ms=$(OPENBLAS_NUM_THREADS=1 "$OUT/core_bench_$name" --sizes "$s" | sed 's/.*"median_ms":\([0-9.]*\).*/\1/')
                printf '%14.2f' "$ms"
            done
            for t in 128 512; do
                ms=$(OPENBLAS_NUM_THREADS=1 "$OUT/core_bench_$name" --stack 12 --sizes "$t:768:12" | sed 's/.*"median_ms":\([0-9.]*\).*/\1/')
                printf '%14.2f' "$ms"
            done
            echo "   (round $round)"
        done
    done
fi
echo
echo "## 6. real models: GPT-2 small and BERT-base shapes, seeded weights, vs PyTorch"
bash tests/bench/models_table.sh "$BUILD_DIR" "$ROUNDS"
