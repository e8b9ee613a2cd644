#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# Rebuilds resources/embeddings/attnviz-en50.avec from Debian-packaged English texts.
#
#   bash resources/wordvectors/build.sh [STEP...]      STEP: fetch corpus train export check (default: all)
#
# Environment: WORK (scratch folder, default /tmp/attnviz-wordvectors; needs ~1 GB),
# ATTNVIZ (the attnviz binary, default build/app/attnviz; build it first),
# OUT (where the table goes, default resources/embeddings/attnviz-en50.avec).
# Needs: apt-get (download only, no root), dpkg-deb, mod2imp (libsword-utils), python3, fasttext.
# Training is single-threaded with a fixed seed, so a rerun gives the same bytes: `check` compares
# the corpus and the table with the checksums in resources/embeddings/MANIFEST.md.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
WORK=${WORK:-/tmp/attnviz-wordvectors}
ATTNVIZ=${ATTNVIZ:-$REPO/build/app/attnviz}
OUT=${OUT:-$REPO/resources/embeddings/attnviz-en50.avec}
MANIFEST=$REPO/resources/embeddings/MANIFEST.md
SAMPLE=$REPO/tests/fixtures/wordvectors/attnviz-en50-sample.vec
CORPUS_SAMPLE=$REPO/tests/fixtures/wordvectors/corpus-sample.tsv
TOP=50000
SWORD_MODULES=(engWEB2015eb engKJV2006eb MHCC TDavid Scofield)
# The one training command (recorded in MANIFEST.md).
FASTTEXT_ARGS=(skipgram -dim 50 -epoch 5 -minCount 5 -maxn 0 -thread 1 -seed 1)

export LC_ALL=C.UTF-8
mkdir -p "$WORK"
log() { echo "build.sh: $*" >&2; }

fetch() {
    mkdir -p "$WORK/debs" "$WORK/root"
    cd "$WORK/debs"
    grep -v '^#' "$HERE/sources.txt" | while read -r pkg version sha; do
        local file
        file=$(ls "${pkg}"_*.deb 2>/dev/null | head -1 || true)
        if [ -z "$file" ]; then
            log "downloading $pkg=$version"
            apt-get download -q "$pkg=$version" >/dev/null
            file=$(ls "${pkg}"_*.deb | head -1)
        fi
        echo "$sha  $file" | sha256sum -c --quiet - || { log "$file: checksum differs from sources.txt"; exit 1; }
        dpkg-deb -x "$file" "$WORK/root"
    done
    mkdir -p "$WORK/imp"
    for m in "${SWORD_MODULES[@]}"; do
        SWORD_PATH="$WORK/root/usr/share/sword" mod2imp "$m" >"$WORK/imp/$m.imp" 2>/dev/null
        log "mod2imp $m: $(wc -c <"$WORK/imp/$m.imp") bytes"
    done
}

corpus() {
    python3 "$HERE/extract_corpus.py" "$WORK/root" "$WORK/imp" >"$WORK/sentences.txt"
    "$ATTNVIZ" tokenize <"$WORK/sentences.txt" >"$WORK/corpus.txt"
    log "corpus: $(wc -l <"$WORK/corpus.txt") lines, $(wc -w <"$WORK/corpus.txt") tokens," \
        "sha256 $(sha256sum "$WORK/corpus.txt" | cut -d' ' -f1)"
}

train() {
    local t0=$SECONDS
    fasttext "${FASTTEXT_ARGS[@]}" -input "$WORK/corpus.txt" -output "$WORK/model" -verbose 1
    log "trained in $((SECONDS - t0)) s; model.vec sha256 $(sha256sum "$WORK/model.vec" | cut -d' ' -f1)"
}

export_table() {
    mkdir -p "$(dirname "$OUT")"
    "$ATTNVIZ" vectors export "$WORK/model.vec" "$OUT" --top "$TOP" --tokenizable
    python3 "$HERE/float_sample.py" "$WORK/model.vec" "$SAMPLE"
    python3 "$HERE/corpus_sample.py" "$WORK/sentences.txt" "$WORK/corpus.txt" "$CORPUS_SAMPLE"
    log "table sha256 $(sha256sum "$OUT" | cut -d' ' -f1)"
}

check() {
    local ok=0
    for f in corpus.txt:"$WORK/corpus.txt" table:"$OUT"; do
        local name=${f%%:*} path=${f#*:}
        local want got
        want=$(sed -n "s/^- ${name} sha256: \`\([0-9a-f]*\)\`.*/\1/p" "$MANIFEST")
        got=$(sha256sum "$path" | cut -d' ' -f1)
        if [ "$want" = "$got" ]; then
            log "$name: sha256 $got matches MANIFEST.md"
        else
            log "$name: sha256 $got, MANIFEST.md says ${want:-nothing}"
            ok=1
        fi
    done
    return $ok
}

steps=("$@")
[ ${#steps[@]} -eq 0 ] && steps=(fetch corpus train export check)
for s in "${steps[@]}"; do
    case "$s" in
        fetch) fetch ;;
        corpus) corpus ;;
        train) train ;;
        export) export_table ;;
        check) check ;;
        *) echo "usage: build.sh [fetch|corpus|train|export|check]..." >&2; exit 2 ;;
    esac
done
