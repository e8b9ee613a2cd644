#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# Screenshots of every view, for looking at (and for the README's resources/screenshots/):
# the window under Xvfb (attnviz --screenshot) and the headless figures (attnviz export); every
# preset, every comparison, and presentation mode on 1920 × 1080 and 1280 × 720 screens.
#   bash tests/screenshots.sh [OUT_DIR]     (default: build/screenshots)
#   ONLY=lessons bash tests/screenshots.sh  (only the presets, comparisons and presentation mode)
# Without Xvfb: QT_QPA_PLATFORM=offscreen:configfile=FILE.json (a "screens" list with width and height;
# the offscreen platform has no size= option and otherwise has one 800 × 800 screen).
# Uses the hand-made toy table tests/fixtures/embeddings/toy-en16.txt unless EMBEDDINGS is set.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${BIN:-build/app/attnviz}
OUT=${1:-build/screenshots}
EMB=${EMBEDDINGS:-tests/fixtures/embeddings/toy-en16.txt}
mkdir -p "$OUT"
SHIP="I must go back to my ship and to my crew"
JOURNEY="Your journey starts with one step"

win() { # name, extra args...
    local name=$1
    shift
    xvfb-run -a -s "-screen 0 1600x1000x24" "$BIN" --embeddings "$EMB" --size 1400x900 \
        --screenshot "$OUT/$name.png" "$@"
    echo "$OUT/$name.png"
}
fig() { # name, extra args...
    local name=$1
    shift
    env -u DISPLAY -u WAYLAND_DISPLAY "$BIN" export --embeddings "$EMB" "$@" --out "$OUT/$name"
    echo "$OUT/$name"
}

# Every preset and every comparison as a lecturer opens it (1600 × 1000), with the lesson's own
# table; presentation mode on the two classroom screens.
lesson() { # name, screen WxH, window WxH, extra args...
    local name=$1 screen=$2 size=$3
    shift 3
    xvfb-run -a -s "-screen 0 ${screen}x24" "$BIN" --no-restore --size "$size" --screenshot "$OUT/$name.png" "$@"
    echo "$OUT/$name.png"
}
for id in $("$BIN" --preset list 2>/dev/null | awk '{print $1}'); do
    lesson "preset-$id" 1600x1000 1600x1000 --preset "$id"
done
for id in $("$BIN" --compare list 2>/dev/null | awk '{print $1}'); do
    lesson "compare-$id" 1600x1000 1600x1000 --compare "$id"
done
for screen in 1920x1080 1280x720; do
    lesson "presentation-$screen-causal" "$screen" "$screen" --preset causal-neg-inf --presentation
    lesson "presentation-$screen-pipeline" "$screen" "$screen" --preset journey-scores --presentation
    lesson "presentation-$screen-multihead" "$screen" "$screen" --preset multihead-split --tab grid --presentation
    lesson "presentation-$screen-lesson" "$screen" "$screen" --preset tiny-induction --presentation
done
[ "${ONLY:-}" = lessons ] && exit 0

win window-weights --sentence "$SHIP" --heads 2
win window-grid --sentence "$SHIP" --heads 8 --tab grid
win window-embeddings --sentence "$SHIP" --heads 2 --tab embeddings
win window-causal --sentence "$SHIP" --heads 2 --mask causal
win window-cross --sentence "$SHIP" --key-sentence "we process and ship your order" --heads 2
win window-model-gpt2-tiny --model tests/fixtures/models/gpt2-tiny --layer 1 \
    --sentence "The animal didn't cross the street because it was too tired."
win window-layers --sentence "$SHIP" --heads 4 --depth 4 --positions sinusoidal --tab layers
win window-residual --sentence "$SHIP" --heads 4 --depth 6 --positions sinusoidal --block pre --tab residual
LONG=""
for _ in $(seq 1 200); do LONG+="i must go back to my ship and to my crew the sea is a long journey "; done # 3,000 tokens
win window-long --sentence "$LONG" --heads 4

fig weights-causal-padded.png --sentence "$SHIP" --heads 2 --mask causal+padding --pad 0 --width 1100 --height 800
fig weights-cosine.png --sentence "$SHIP" --norm cosine --width 1100 --height 800
fig grid-8-heads.svg --sentence "$SHIP" --view grid --heads 8 --projection random --seed 1
fig embeddings.pdf --sentence "$SHIP" --view embeddings --heads 2
fig row-journey.png --sentence "$JOURNEY" --view row --query 1 --width 900 --height 500 --dpi 144
fig row-journey-sum.png --sentence "$JOURNEY" --view row --query 1 --norm sum --scale none --width 900 --height 500
