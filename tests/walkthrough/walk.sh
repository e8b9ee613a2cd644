#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# The lecturer's and researcher's walk-through, driven as a new user would (keys and clicks through
# xdotool) under a real X server (Xvfb), with or without a window manager (openbox): a screenshot of
# each step for looking at, the file each Ctrl+E writes, and presentation mode's idle CPU, Esc time
# and memory. Not a test that CI runs: the next session reruns it and looks at the pictures.
#   bash tests/walkthrough/walk.sh [WxH] [wm|nowm] [OUT_DIR]   (default 1920x1080 nowm build/walk-WxH-WM)
#   bash tests/walkthrough/walk.sh all [OUT_ROOT]               (the four setups, one after another)
# Needs Xvfb (xvfb-run), xdotool, xwd and, for the wm setups, openbox; python3 converts the dumps.
# Each setup writes OUT_DIR/NN-step.png, OUT_DIR/exports/ (Ctrl+E's files), OUT_DIR/slides/ and
# OUT_DIR/measures.txt (one "name value" a line).
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT=$PWD
BIN=${BIN:-$ROOT/build/app/attnviz}

if [ "${1:-}" = all ]; then
    out=${2:-build/walk}
    for screen in 1920x1080 1280x720; do
        for wm in nowm wm; do
            bash "$0" "$screen" "$wm" "$out/$screen-$wm" || echo "walk $screen $wm: failed ($?)"
        done
    done
    exit 0
fi

SCREEN=${1:-1920x1080}
WM=${2:-nowm}
OUT=$(realpath -m "${3:-build/walk-$SCREEN-$WM}")

if [ -z "${WALK_INNER:-}" ]; then
    rm -rf "$OUT"
    mkdir -p "$OUT/exports" "$OUT/slides"
    WALK_INNER=1 exec xvfb-run -a -s "-screen 0 ${SCREEN}x24" bash "$0" "$SCREEN" "$WM" "$OUT"
fi

# ---- inside the X server ----
# the server's cookie kept beside the screenshots: xvfb-run's own copy lies in /tmp/xvfb-run.*, which
# another session's clean-up of /tmp can remove mid-walk (every later xdotool then "Can't open display")
if [ -n "${XAUTHORITY:-}" ] && [ -f "$XAUTHORITY" ]; then
    cp "$XAUTHORITY" "$OUT/Xauthority"
    export XAUTHORITY=$OUT/Xauthority
fi
export HOME=$OUT/home # a true first start: no settings, no recent models
export XDG_CONFIG_HOME=$HOME/.config XDG_CACHE_HOME=$HOME/.cache XDG_DATA_HOME=$HOME/.local/share
export XDG_RUNTIME_DIR=$HOME/runtime
mkdir -p "$HOME" "$XDG_RUNTIME_DIR"
chmod 700 "$XDG_RUNTIME_DIR"
MEASURES=$OUT/measures.txt
: >"$MEASURES"
measure() { echo "$1 $2" | tee -a "$MEASURES"; }
n=0
shot() { # name: the whole screen, as the user sees it
    n=$((n + 1))
    local f
    f=$(printf '%s/%02d-%s.png' "$OUT" "$n" "$1")
    # a window that goes while xwd walks the tree (a menu closing) fails the dump: once more, then on
    if xwd -root -silent | python3 "$ROOT/tests/walkthrough/xwd2png.py" "$f" ||
        { sleep 0.5 && xwd -root -silent | python3 "$ROOT/tests/walkthrough/xwd2png.py" "$f"; }; then
        echo "shot $f"
    else
        echo "shot $f: failed"
    fi
}
winraw() { xwd -id "$WID" -silent | tail -c +200 | md5sum | cut -c1-32; } # the window's pixels, for "exactly as before"
key() { xdotool key --clearmodifiers "$@"; sleep "${PAUSE:-1}"; }
geometry() { xdotool getwindowgeometry --shell "$WID" | awk -F= '/^(X|Y|WIDTH|HEIGHT)=/{printf "%s ", $2}'; }
clickat() { # x y, in the window's own pixels
    xdotool mousemove --window "$WID" "$1" "$2" click 1
    sleep 0.5
}
cpu_ticks() { awk '{print $14 + $15}' "/proc/$PID/stat"; }
rss_mb() { awk '/^VmRSS/{printf "%.0f", $2 / 1024}' "/proc/$PID/status"; }
idle_cpu() { # seconds: the process's CPU share over them, per cent of one core
    local t0 c0 c1 t1
    c0=$(cpu_ticks)
    t0=$(date +%s.%N)
    sleep "$1"
    c1=$(cpu_ticks)
    t1=$(date +%s.%N)
    awk -v c="$((c1 - c0))" -v hz="$(getconf CLK_TCK)" -v t0="$t0" -v t1="$t1" 'BEGIN{printf "%.1f", 100 * c / hz / (t1 - t0)}'
}
windows() { { xdotool search --onlyvisible --pid "$PID" 2>/dev/null || true; } | wc -l; } # attnviz's shown windows
export_current() { # tab name: Ctrl+E, (the Pipeline's stage, Compare's part,) the figure dialog's OK, the file dialog's default name
    local before shown
    before=$(ls "$OUT/exports")
    shown=$(windows)
    key ctrl+e
    # where Ctrl+E is disabled nothing opens: Return would go to the sentence editor (two new lines)
    if [ "$(windows)" -gt "$shown" ]; then
        case $1 in pipeline | compare) key Return ;; esac
        key Return
        key Return
    fi
    sleep 1
    local written
    written=$(comm -13 <(echo "$before") <(ls "$OUT/exports") | tr '\n' ' ')
    measure "export-$1" "${written:-none (Ctrl+E disabled: the tab draws no figure)}"
}

if [ "$WM" = wm ]; then
    openbox >"$OUT/openbox.log" 2>&1 &
    sleep 1.5
fi

cd "$OUT/exports" # the export dialogs' default names are relative: they land here
start() { # attnviz's arguments
    "$BIN" "$@" >>"$OUT/attnviz.log" 2>&1 &
    PID=$!
    # xdotool's search stops with BadWindow where a window it walks goes meanwhile (a splash, a
    # tooltip): once more, up to five times
    WID=
    for _ in 1 2 3 4 5; do
        WID=$({ xdotool search --sync --onlyvisible --pid "$PID" --name 'attnviz' 2>/dev/null || true; } | head -1)
        [ -n "$WID" ] && break
        sleep 0.5
    done
    sleep 4
}
stop() {
    kill "$PID" 2>/dev/null || true
    wait "$PID" 2>/dev/null || true
}
trap stop EXIT
menu() { # the menu bar's title at x (the menus sit at the same place on every screen), then keys
    local x=$1
    shift
    clickat "$x" 10
    sleep 0.5
    key "$@"
}
MENU_FILE=20 MENU_MODEL=100 MENU_COMPARE=261 MENU_HELP=316

# Ctrl+E on every tab, each opened as a user who picked it: each writes its own view, named after it
for tab in weights grid embeddings lines pipeline residual layers headRoles rollout lens dla compare patching; do
    start --no-restore --model bundled --tab "$tab"
    read -r _ _ W H <<<"$(geometry)"
    clickat $((W / 2)) $((H - 8)) # the status bar: the window takes the keys, no editor does
    export_current "$tab"
    shot "tab-$tab"
    stop
done

start
measure window "$(geometry)"
shot first-start
read -r _ _ W H <<<"$(geometry)"

# the bundled model from the Model menu (its second entry), then a sentence in the editor
menu $MENU_MODEL Down Down # the first Down selects the first entry
shot model-menu
key Return
sleep 4
clickat $((W / 2)) 60
key ctrl+a
xdotool type --delay 40 "The lecturer wrote the answer on the board and the students copied it"
sleep 3
shot bundled-sentence

# presentation mode: F11, idle 20 s, Esc back to the exact layout
clickat $((W / 2)) 60
PAUSE=2 key Escape
sleep 2
before_geom=$(geometry)
before_pixels=$(winraw)
measure rss-before-mb "$(rss_mb)"
measure idle-cpu-before-pct "$(idle_cpu 10)"
shot before-presentation
key F11
sleep 3
shot presentation
measure presentation-geometry "$(geometry)"
measure rss-presenting-mb "$(rss_mb)"
measure idle-cpu-presenting-pct "$(idle_cpu 20)"
t0=$(date +%s%N)
xdotool key Escape
ms=timeout
for _ in $(seq 1 2000); do
    if [ "$(geometry)" = "$before_geom" ]; then
        ms=$((($(date +%s%N) - t0) / 1000000))
        break
    fi
    sleep 0.005
done
measure esc-ms "$ms" # the window's geometry back; where it filled the screen before, only the first look
sleep 3
measure after-geometry "$(geometry)"
measure before-geometry "$before_geom"
after_pixels=$(winraw)
measure same-pixels-after-esc "$([ "$before_pixels" = "$after_pixels" ] && echo yes || echo no)"
measure rss-after-mb "$(rss_mb)"
measure idle-cpu-after-pct "$(idle_cpu 10)"
shot after-esc

# View ▸ Larger text x3, then back
for _ in 1 2 3; do key ctrl+equal; done
sleep 2
shot larger-text-x3
key ctrl+0

# Generate: one step, then play, following the newest token
key ctrl+shift+Return
sleep 2
shot generate-step
key ctrl+Return
sleep 4
shot generate-play
key ctrl+Return # stops it, where it still runs
sleep 1

# a lesson (Help ▸ Start the lessons: its first), its slides (File ▸ Export lesson as slides)
menu $MENU_HELP l
sleep 3
shot lesson
menu $MENU_FILE s s Return # the second item whose key is s (Save, then slides)
xdotool type --delay 20 "$OUT/slides"
key Return
sleep 6
measure slides "$(ls "$OUT/slides" | wc -l) files"
shot slides-written
key F11
sleep 3
shot lesson-presentation
key Escape
sleep 3

# Compare (the Compare menu's first comparison)
menu $MENU_COMPARE Down Return # the first Down selects the first entry
sleep 4
shot compare

# a Hugging Face folder (File ▸ Open model: the folder's path typed)
key ctrl+shift+o
xdotool type --delay 20 "$ROOT/tests/fixtures/models/gpt2-tiny"
key Return
sleep 5
clickat $((W / 2)) 60
key ctrl+a
xdotool type --delay 40 "When Mary and John went to the store, John gave a drink to"
sleep 3
shot hf-gpt2-tiny

# the Layers grid at 1400 x 900 (where the screen has room for it)
menu $MENU_MODEL Down Down Return
sleep 4
shot layers-grid-window
stop
# the grid as a user opens it (the Layers tab) at 1400 x 900
start --no-restore --model bundled --tab headRoles --size 1400x900 # the Layers tab of a model
measure layers-window "$(geometry)"
shot layers-grid
stop
echo "walk $SCREEN $WM: $OUT"
