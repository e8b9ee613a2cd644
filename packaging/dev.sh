#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# The README's two commands live here:
#   bash packaging/dev.sh run    install what is missing, build, launch attnviz
#   bash packaging/dev.sh test   install what is missing, build, run every test headless
# Also: deps (install only), build (configure + build). BUILD_DIR (default build) and
# JOBS (default: number of CPUs) may be set in the environment.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build}
JOBS=${JOBS:-$(nproc)}

# Debian 12 / Ubuntu package names. Everything the build, the app and the tests need.
PACKAGES=(
    build-essential cmake ninja-build pkg-config
    qt6-base-dev qt6-base-private-dev qt6-shadertools-dev qt6-svg-dev libqcustomplot-dev
    libeigen3-dev nlohmann-json3-dev
    mesa-vulkan-drivers libgl1-mesa-dri libvulkan1 xvfb xauth
    fonts-dejavu-core
    librsvg2-bin # tests: the SVG export in a real renderer (rsvg-convert)
    dpkg-dev desktop-file-utils appstream groff-base shared-mime-info
)

deps() {
    local missing=()
    for p in "${PACKAGES[@]}"; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
    done
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

case "${1:-}" in
    deps) deps ;;
    build) deps; build ;;
    run)
        deps; build
        shift
        exec "$BUILD_DIR/app/attnviz" "$@"
        ;;
    test) deps; build; run_tests ;;
    *) echo "usage: bash packaging/dev.sh run|test|build|deps" >&2; exit 2 ;;
esac
