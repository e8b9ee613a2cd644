#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# Rebuilds resources/models/attnviz-tiny-2/ (a Hugging Face Llama folder) from Debian-packaged texts.
#
#   bash resources/models/attnviz-tiny-2/recipe/build.sh [STEP...]
#   STEP: data train cooldown export evaluate check (default: all)
#
# Environment: WORK (scratch folder, default /tmp/attnviz-tiny-2; ~1.5 GB), OUT (the model folder,
# default resources/models/attnviz-tiny-2), DEVICE (cpu or cuda; default cpu), WORKERS (processes
# making batches, default 0), STEPS (the main stage's steps), COOLDOWN (the last stage's steps),
# TRAIN_ARGS (more train.py options: the model's size, the row mixture).
# `data` is attnviz-tiny's recipe (fetch corpus prepare) with attnviz-tiny's own BPE files, so both
# models read the same token streams (its MANIFEST has their sha256s). `train` runs the main stage
# to STEPS; `cooldown` resumes from it and lets the learning rate fall to 0 over COOLDOWN steps.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$HERE/../../../.." && pwd)
WORK=${WORK:-/tmp/attnviz-tiny-2}
OUT=${OUT:-$REPO/resources/models/attnviz-tiny-2}
DEVICE=${DEVICE:-cpu}
WORKERS=${WORKERS:-0}
STEPS=${STEPS:-6000}
COOLDOWN=${COOLDOWN:-300}
TRAIN_ARGS=${TRAIN_ARGS:-}
PY=${PYTHON:-/usr/bin/python3}
TINY=$REPO/resources/models/attnviz-tiny

export LC_ALL=C.UTF-8 PYTHONHASHSEED=0 PYTHONUNBUFFERED=1
mkdir -p "$WORK"
log() { echo "build.sh: $*" >&2; }

data() {
    mkdir -p "$WORK/tok"
    cp "$TINY/vocab.json" "$TINY/merges.txt" "$WORK/tok/"
    WORK="$WORK" bash "$TINY/recipe/build.sh" fetch corpus prepare
}

train() {
    rm -rf "$WORK/run"
    local t0=$SECONDS
    # shellcheck disable=SC2086
    "$PY" "$HERE/train.py" "$WORK/data" "$WORK/run" --steps "$STEPS" --device "$DEVICE" --workers "$WORKERS" $TRAIN_ARGS
    cp "$WORK/run/ckpt.npz" "$WORK/main-stage.npz"
    log "main stage: $STEPS steps in $((SECONDS - t0)) s; main-stage.npz sha256 $(sha256sum "$WORK/main-stage.npz" | cut -d' ' -f1)"
}

cooldown() {
    local t0=$SECONDS n
    n=$("$PY" -c "import numpy as np; print(int(np.load('$WORK/main-stage.npz')['step']))")
    # shellcheck disable=SC2086
    "$PY" "$HERE/train.py" "$WORK/data" "$WORK/run" --resume "$WORK/main-stage.npz" --steps $((n + COOLDOWN)) \
        --cooldown-from "$n" --device "$DEVICE" --rows 8 --context 256 --eval-every 100 --ckpt-every 100 $TRAIN_ARGS
    log "cool-down: $COOLDOWN steps in $((SECONDS - t0)) s"
}

export_folder() { "$PY" "$HERE/export.py" "$WORK/run/ckpt.npz" "$OUT"; }

evaluate() { "$PY" "$HERE/evaluate.py" "$OUT" "$WORK/data" --json "$WORK/evaluation.json"; }

check() {
    sed -n 's/^- \([a-z_.]*\) sha256: `\([0-9a-f]*\)`.*/\2  \1/p' "$OUT/MANIFEST.md" | (cd "$OUT" && sha256sum -c -)
}

steps=("$@")
[ ${#steps[@]} -eq 0 ] && steps=(data train cooldown export evaluate check)
for s in "${steps[@]}"; do
    case "$s" in
        data) data ;;
        train) train ;;
        cooldown) cooldown ;;
        export) export_folder ;;
        evaluate) evaluate ;;
        check) check ;;
        *) echo "usage: build.sh [data|train|cooldown|export|evaluate|check]..." >&2; exit 2 ;;
    esac
done
