#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# Rebuilds resources/models/attnviz-dates/ (a Hugging Face T5 folder) from dates this recipe writes.
#
#   bash resources/models/attnviz-dates/recipe/build.sh [STEP...]
#   STEP: tokenizer train export evaluate check (default: all)
#
# Environment: WORK (scratch folder, default /tmp/attnviz-dates), OUT (the model folder, default
# resources/models/attnviz-dates), STEPS (training steps, default 1800), ATTNVIZ (an attnviz binary:
# evaluate compares its greedy ids with torch's; default build/app/attnviz when it exists), FIXTURE
# (where evaluate writes the test's expected json, default tests/fixtures/models/attnviz-dates-expected.json).
# Needs /usr/bin/python3 with torch, numpy and sentencepiece (Debian: python3-torch, python3-numpy,
# python3-sentencepiece); everything runs on one CPU thread.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$HERE/../../../.." && pwd)
WORK=${WORK:-/tmp/attnviz-dates}
OUT=${OUT:-$REPO/resources/models/attnviz-dates}
STEPS=${STEPS:-1800}
ATTNVIZ=${ATTNVIZ:-$REPO/build/app/attnviz}
FIXTURE=${FIXTURE:-$REPO/tests/fixtures/models/attnviz-dates-expected.json}
PY=${PYTHON:-/usr/bin/python3}

export LC_ALL=C.UTF-8 PYTHONHASHSEED=0 PYTHONUNBUFFERED=1
mkdir -p "$WORK"
log() { echo "build.sh: $*" >&2; }

tokenizer() { "$PY" "$HERE/tokenizer.py" "$WORK"; }

train() {
    local t0=$SECONDS
    "$PY" "$HERE/train.py" "$WORK" --steps "$STEPS"
    log "train: $STEPS steps in $((SECONDS - t0)) s; ckpt.npz sha256 $(sha256sum "$WORK/ckpt.npz" | cut -d' ' -f1)"
}

export_folder() { "$PY" "$HERE/export.py" "$WORK/ckpt.npz" "$WORK/spiece.model" "$OUT"; }

evaluate() {
    local with=()
    [ -x "$ATTNVIZ" ] && with=(--attnviz "$ATTNVIZ")
    "$PY" "$HERE/evaluate.py" "$OUT" "${with[@]}" --json "$WORK/evaluation.json" --expected "$FIXTURE" >/dev/null
    log "evaluate: $WORK/evaluation.json, $FIXTURE"
}

check() {
    sed -n 's/^- \([a-z_.]*\) sha256: `\([0-9a-f]*\)`.*/\2  \1/p' "$OUT/MANIFEST.md" | (cd "$OUT" && sha256sum -c -)
}

steps=("$@")
[ ${#steps[@]} -eq 0 ] && steps=(tokenizer train export evaluate check)
for s in "${steps[@]}"; do
    case "$s" in
        tokenizer) tokenizer ;;
        train) train ;;
        export) export_folder ;;
        evaluate) evaluate ;;
        check) check ;;
        *) echo "usage: build.sh [tokenizer|train|export|evaluate|check]..." >&2; exit 2 ;;
    esac
done
