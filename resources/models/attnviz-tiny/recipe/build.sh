#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# Rebuilds resources/models/attnviz-tiny/ (a Hugging Face GPT-2 folder) from Debian-packaged texts.
#
#   bash resources/models/attnviz-tiny/recipe/build.sh [STEP...]
#   STEP: fetch corpus bpe prepare train export evaluate check (default: all)
#
# Environment: WORK (scratch folder, default /tmp/attnviz-tiny; ~1.5 GB), OUT (the model folder,
# default resources/models/attnviz-tiny), STEPS (training steps, default 16000, the shipped model; the learning rate has
# no end date, so STEPS=k gives exactly the checkpoint a longer run wrote at step k), THREADS (1).
# Needs Debian 12: python3, python3-torch, python3-numpy, python3-regex, libsword-utils (mod2imp),
# dpkg-deb, apt-get (download only). The corpus is the word-vector recipe's (resources/wordvectors:
# the same packages, versions and sha256s in sources.txt, the same extract_corpus.py).
# Training is seeded and deterministic on a fixed thread count: the same machine and the same
# torch give the same model.safetensors; `check` compares the files with MANIFEST.md's sha256s.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$HERE/../../../.." && pwd)
WORK=${WORK:-/tmp/attnviz-tiny}
OUT=${OUT:-$REPO/resources/models/attnviz-tiny}
STEPS=${STEPS:-16000}
THREADS=${THREADS:-1}
VOCAB=4096
MANIFEST=$OUT/MANIFEST.md
PY=${PYTHON:-/usr/bin/python3}

export LC_ALL=C.UTF-8 PYTHONHASHSEED=0
mkdir -p "$WORK"
log() { echo "build.sh: $*" >&2; }

fetch() { WORK="$WORK" bash "$REPO/resources/wordvectors/build.sh" fetch; }

corpus() {
    "$PY" "$REPO/resources/wordvectors/extract_corpus.py" "$WORK/root" "$WORK/imp" \
        >"$WORK/sentences.txt" 2>"$WORK/sources.log"
    cat "$WORK/sources.log" >&2
    log "sentences.txt sha256 $(sha256sum "$WORK/sentences.txt" | cut -d' ' -f1)"
}

bpe() {
    mkdir -p "$WORK/tok"
    "$PY" "$HERE/bpe.py" train "$WORK/sentences.txt" "$VOCAB" "$WORK/tok"
}

prepare() { "$PY" "$HERE/prepare.py" "$WORK/sentences.txt" "$WORK/sources.log" "$WORK/tok" "$WORK/data"; }

train() {
    rm -rf "$WORK/run"
    local t0=$SECONDS
    "$PY" "$HERE/train.py" "$WORK/data" "$WORK/run" --steps "$STEPS" --threads "$THREADS"
    log "trained $STEPS steps in $((SECONDS - t0)) s"
}

export_folder() { "$PY" "$HERE/export.py" "$WORK/run/model.pt" "$WORK/tok" "$OUT"; }

evaluate() { "$PY" "$HERE/evaluate.py" "$OUT" "$WORK/data" --json "$WORK/evaluation.json"; }

check() {
    # MANIFEST.md lists "- FILE sha256: `HEX`" for the folder's files; sha256sum -c compares them.
    sed -n 's/^- \([a-z.]*\) sha256: `\([0-9a-f]*\)`.*/\2  \1/p' "$MANIFEST" | (cd "$OUT" && sha256sum -c -)
}

steps=("$@")
[ ${#steps[@]} -eq 0 ] && steps=(fetch corpus bpe prepare train export evaluate check)
for s in "${steps[@]}"; do
    case "$s" in
        fetch) fetch ;;
        corpus) corpus ;;
        bpe) bpe ;;
        prepare) prepare ;;
        train) train ;;
        export) export_folder ;;
        evaluate) evaluate ;;
        check) check ;;
        *) echo "usage: build.sh [fetch|corpus|bpe|prepare|train|export|evaluate|check]..." >&2; exit 2 ;;
    esac
done
