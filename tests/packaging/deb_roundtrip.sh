#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# The .deb as a user gets it: build it with cpack from the already-built tree, check its control
# data and file list, install it with dpkg -i, run the installed attnviz (--version, compute on the
# installed example, export to PNG offscreen when the build has the export verb), check the desktop
# integration the package triggers (MIME glob), then dpkg -r and check nothing of it is left.
#   bash tests/packaging/deb_roundtrip.sh BUILD_DIR VERSION APP_ID
# Exit 0: passed; 77: skipped (not root, no dpkg, or an attnviz package this test did not install is
# present); anything else: failed. Needs dpkg-dev (dpkg-shlibdeps) for the Depends line.
set -euo pipefail
BUILD_DIR=$(cd "$1" && pwd)
VERSION=$2
APP_ID=$3

skip() { echo "SKIP deb_roundtrip: $*"; exit 77; }
fail() { echo "FAIL deb_roundtrip: $*" >&2; exit 1; }
step() { echo "-- $*"; }

command -v dpkg >/dev/null && command -v dpkg-deb >/dev/null || skip "no dpkg (not a Debian system)"
[ "$(id -u)" -eq 0 ] || skip "installing a package needs root (CI runs as root; 'sudo ctest --test-dir build -R deb_roundtrip' tries it here)"
command -v dpkg-shlibdeps >/dev/null || fail "dpkg-shlibdeps missing: install dpkg-dev (bash packaging/dev.sh deps)"
# One round trip per machine at a time: two build trees testing at once would install and remove
# the same package under each other.
LOCK_DIR=/run/lock
[ -d "$LOCK_DIR" ] || LOCK_DIR=/tmp
exec 9>"$LOCK_DIR/attnviz-deb-roundtrip.lock"
if ! flock -n 9; then
    echo "-- waiting for another deb_roundtrip on this machine"
    flock -w 600 9 || fail "another deb_roundtrip held the lock for 10 minutes"
fi
if dpkg-query -W -f='${db:Status-Status}' attnviz 2>/dev/null | grep -qv '^not-installed$'; then
    skip "a package named attnviz is already installed here; not replacing it"
fi

WORK=$(mktemp -d)
installed=0
cleanup() {
    if [ $installed -eq 1 ]; then
        echo "-- cleanup: removing the test's attnviz package"
        dpkg_locked --purge attnviz >/dev/null 2>&1 || true
    fi
    rm -rf "$WORK"
}
trap cleanup EXIT

# dpkg refuses to run while another dpkg or apt holds its lock; wait up to two minutes for it.
dpkg_locked() {
    local tries=0 out rc
    while :; do
        rc=0
        out=$(dpkg "$@" 2>&1) || rc=$?
        if [ $rc -ne 0 ] && grep -q "lock" <<<"$out" && [ $tries -lt 24 ]; then
            tries=$((tries + 1))
            sleep 5
            continue
        fi
        printf '%s\n' "$out"
        return $rc
    done
}

step "cpack -G DEB (from $BUILD_DIR)"
cpack --config "$BUILD_DIR/CPackConfig.cmake" -G DEB -B "$WORK/out" >"$WORK/cpack.log" 2>&1 \
    || { cat "$WORK/cpack.log"; fail "cpack failed"; }
ARCH=$(dpkg --print-architecture)
DEB="$WORK/out/attnviz_${VERSION}_${ARCH}.deb"
[ -f "$DEB" ] || { ls -l "$WORK/out"; fail "expected $DEB"; }
echo "   $(basename "$DEB"): $(stat -c %s "$DEB") bytes"

step "control data"
field() { dpkg-deb -f "$DEB" "$1"; }
[ "$(field Package)" = attnviz ] || fail "Package: $(field Package)"
[ "$(field Version)" = "$VERSION" ] || fail "Version: $(field Version), expected $VERSION"
[ "$(field Architecture)" = "$ARCH" ] || fail "Architecture: $(field Architecture)"
[ -n "$(field Maintainer)" ] || fail "no Maintainer"
[ "$(field Section)" = science ] || fail "Section: $(field Section)"
DEPENDS=$(field Depends)
echo "   Depends: $DEPENDS"
for lib in libc6 libstdc++6 libqt6core6 libgcc-s1; do
    tr ',|' '\n\n' <<<"$DEPENDS" | sed 's/^ *//; s/ .*//' | grep -qxF "$lib" \
        || fail "Depends lacks $lib (dpkg-shlibdeps did not run?)"
done
# ICU (the subword tokenizers' Unicode data): libicu72 on Debian 12, the number follows the release.
tr ',|' '\n\n' <<<"$DEPENDS" | sed 's/^ *//; s/ .*//' | grep -qE '^libicu[0-9]+$' \
    || fail "Depends lacks libicuNN (the tokenizers link ICU)"

step "file list"
dpkg-deb -c "$DEB" | awk '{print $6}' | sed 's|^\./|/|' >"$WORK/contents"
for f in /usr/bin/attnviz \
         "/usr/share/applications/$APP_ID.desktop" \
         "/usr/share/metainfo/$APP_ID.metainfo.xml" \
         /usr/share/mime/packages/attnviz.xml \
         "/usr/share/icons/hicolor/scalable/apps/$APP_ID.svg" \
         "/usr/share/icons/hicolor/16x16/apps/$APP_ID.png" \
         "/usr/share/icons/hicolor/256x256/apps/$APP_ID.png" \
         /usr/share/man/man1/attnviz.1.gz \
         /usr/share/attnviz/examples/journey_causal.json \
         /usr/share/attnviz/models/attnviz-tiny/config.json \
         /usr/share/attnviz/models/attnviz-tiny/model.safetensors \
         /usr/share/attnviz/models/attnviz-tiny/vocab.json \
         /usr/share/attnviz/models/attnviz-tiny/merges.txt \
         /usr/share/attnviz/models/attnviz-tiny/MANIFEST.md \
         /usr/share/attnviz/models/attnviz-tiny-2/config.json \
         /usr/share/attnviz/models/attnviz-tiny-2/model.safetensors \
         /usr/share/attnviz/models/attnviz-tiny-2/tokenizer.json \
         /usr/share/attnviz/models/attnviz-tiny-2/tokenizer_config.json \
         /usr/share/attnviz/models/attnviz-tiny-2/MANIFEST.md \
         /usr/share/attnviz/models/attnviz-dates/config.json \
         /usr/share/attnviz/models/attnviz-dates/model.safetensors \
         /usr/share/attnviz/models/attnviz-dates/spiece.model \
         /usr/share/attnviz/models/attnviz-dates/tokenizer_config.json \
         /usr/share/attnviz/models/attnviz-dates/MANIFEST.md \
         /usr/share/doc/attnviz/copyright /usr/share/doc/attnviz/changelog.gz; do
    grep -qxF "$f" "$WORK/contents" || fail "the package lacks $f"
done
if grep -q '/usr/share/attnviz/models/attnviz-[^/]*/recipe' "$WORK/contents"; then
    fail "the package carries the bundled model's recipe/ (only the model folder belongs in it)"
fi
if grep -vE '^/usr/' "$WORK/contents" | grep -v '^/$' | grep -q .; then
    fail "files outside /usr: $(grep -vE '^/usr/' "$WORK/contents" | grep -v '^/$' | head -3 | tr '\n' ' ')"
fi

step "dpkg -i"
dpkg_locked -i "$DEB" >"$WORK/install.log" || { cat "$WORK/install.log"; fail "dpkg -i failed"; }
installed=1
[ "$(dpkg-query -W -f='${db:Status-Status}' attnviz)" = installed ] || fail "dpkg does not list attnviz as installed"
dpkg -L attnviz >"$WORK/owned"

step "installed attnviz --version"
out=$(cd "$WORK" && /usr/bin/attnviz --version)
[ "$out" = "attnviz $VERSION" ] || fail "--version printed '$out'"

step "installed attnviz bench: the core build the loader chose"
# The loader's best supported x86-64 level decides which libattnviz_core.so runs (glibc-hwcaps);
# the device line names the ISA that build was compiled for.
isa_for() {
    case "$1" in
        *"x86-64-v4 (supported"*) echo AVX-512 ;;
        *"x86-64-v3 (supported"*) echo AVX2 ;;
        *) echo SSE4.2 ;;
    esac
}
check_bench_isa() { # check_bench_isa EXPECTED [env...]
    local want=$1 line
    shift
    line=$(cd "$WORK" && env "$@" /usr/bin/attnviz bench --sizes 16:64:4 --seconds 0 | head -1)
    echo "   ${*:-(default)}: $line"
    grep -qF ", $want)" <<<"$line" || fail "expected the $want core build, the device line says: $line"
}
LDSO=/lib64/ld-linux-x86-64.so.2
if [ -x "$LDSO" ] && "$LDSO" --help 2>/dev/null | grep -q "x86-64-v2 ("; then
    if grep -q "/attnviz/glibc-hwcaps/x86-64-v[2-4]/libattnviz_core.so" "$WORK/contents"; then
        check_bench_isa "$(isa_for "$("$LDSO" --help)")"
        # The same package with AVX-512 hidden from the loader: the AVX2 build (what an AVX2 CPU runs).
        masked=$(GLIBC_TUNABLES=glibc.cpu.hwcaps=-AVX512F "$LDSO" --help)
        check_bench_isa "$(isa_for "$masked")" GLIBC_TUNABLES=glibc.cpu.hwcaps=-AVX512F
    else
        echo "   (a build without run-time dispatch: $(cd "$WORK" && /usr/bin/attnviz bench --sizes 16:64:4 --seconds 0 | head -1))"
    fi
fi

step "installed attnviz compute /usr/share/attnviz/examples/journey_causal.json --check"
(cd "$WORK" && /usr/bin/attnviz compute /usr/share/attnviz/examples/journey_causal.json --check \
    -o "$WORK/result.json") || fail "compute failed"
grep -q '"weights"' "$WORK/result.json" || fail "the result has no weights"

step "installed attnviz model info bundled / bundled-gpt2: the installed model folders"
info=$(cd "$WORK" && /usr/bin/attnviz model info bundled --json) || fail "model info bundled failed"
grep -q '"source": "/usr/share/attnviz/models/attnviz-tiny-2"' <<<"$info" \
    || fail "model info bundled does not read /usr/share/attnviz/models/attnviz-tiny-2: $info"
info=$(cd "$WORK" && /usr/bin/attnviz model info bundled-gpt2 --json) || fail "model info bundled-gpt2 failed"
grep -q '"source": "/usr/share/attnviz/models/attnviz-tiny"' <<<"$info" \
    || fail "model info bundled-gpt2 does not read /usr/share/attnviz/models/attnviz-tiny: $info"

if command -v man >/dev/null && command -v groff >/dev/null; then
    step "man attnviz"
    MANWIDTH=100 man -P cat attnviz 2>/dev/null | grep -q "attnviz compute" || fail "man attnviz does not show the page"
fi

if command -v update-mime-database >/dev/null; then
    step "MIME database knows *.attnviz"
    grep -q ':application/x-attnviz-session:\*\.attnviz$' /usr/share/mime/globs2 \
        || fail "the dpkg trigger did not register the session MIME type"
fi

if /usr/bin/attnviz --help | grep -q '^  export'; then
    step "installed attnviz export (offscreen) -> PNG"
    export_png() {
        (cd "$WORK" && QT_QPA_PLATFORM=offscreen XDG_RUNTIME_DIR="$WORK" /usr/bin/attnviz export \
            --sentence "The quick brown fox jumps over the lazy dog" --view weights --out "$WORK/x.png" "$@")
    }
    if ! export_png 2>"$WORK/export.err"; then
        cat "$WORK/export.err" >&2
        # A build with the window but without the bundled word vectors (they come from another
        # part of the project) needs a table: give it a small one, so the export itself is tested.
        grep -q "no bundled word vectors" "$WORK/export.err" || fail "export failed"
        echo "   (this build has no bundled word vectors: exporting with a small table instead)"
        printf '%s\n' "the 0.1 0.2 0.3 0.4" "quick 0.5 -0.1 0.2 0.0" "brown 0.3 0.3 -0.2 0.1" \
            "fox 0.9 0.1 0.0 -0.3" "jumps -0.2 0.4 0.6 0.1" "over 0.0 -0.5 0.2 0.2" \
            "lazy 0.4 0.4 0.1 -0.6" "dog 0.8 0.0 -0.1 -0.2" >"$WORK/tiny.txt"
        export_png --embeddings "$WORK/tiny.txt" || fail "export failed"
    fi
    [ -f "$WORK/x.png" ] || fail "export wrote no file"
    magic=$(head -c 8 "$WORK/x.png" | od -An -tx1 | tr -d ' \n')
    [ "$magic" = 89504e470d0a1a0a ] || fail "x.png is not a PNG (magic $magic)"
    size=$(stat -c %s "$WORK/x.png")
    [ "$size" -gt 2000 ] || fail "x.png is only $size bytes"
    # IHDR: width and height, big-endian, at bytes 16..23
    w=$((16#$(od -An -tx1 -j16 -N4 "$WORK/x.png" | tr -d ' \n')))
    h=$((16#$(od -An -tx1 -j20 -N4 "$WORK/x.png" | tr -d ' \n')))
    [ "$w" -ge 64 ] && [ "$h" -ge 64 ] || fail "x.png is ${w}x${h}"
    echo "   x.png: ${w}x${h}, $size bytes"
else
    echo "-- (this build has no 'export' command yet: the PNG export check is left out)"
fi

step "dpkg -r"
dpkg_locked -r attnviz >"$WORK/remove.log" || { cat "$WORK/remove.log"; fail "dpkg -r failed"; }
installed=0
status=$(dpkg-query -W -f='${db:Status-Status}' attnviz 2>/dev/null || echo not-installed)
if [ "$status" = config-files ]; then
    # dpkg keeps a package with maintainer scripts (our preinst) as "config-files" after -r even when
    # it has no conffiles; it must have none, and --purge then leaves nothing.
    conffiles=$(dpkg-query -W -f='${Conffiles}' attnviz)
    [ -z "$conffiles" ] || fail "after dpkg -r, conffiles are left: $conffiles"
    dpkg_locked --purge attnviz >"$WORK/purge.log" || { cat "$WORK/purge.log"; fail "dpkg --purge failed"; }
    status=$(dpkg-query -W -f='${db:Status-Status}' attnviz 2>/dev/null || echo not-installed)
fi
[ "$status" = not-installed ] || fail "after dpkg -r (and --purge), dpkg status is '$status'"
left=0
while read -r f; do
    if [ -f "$f" ] || [ -L "$f" ]; then
        echo "   left behind: $f" >&2
        left=1
    fi
done <"$WORK/owned"
[ $left -eq 0 ] || fail "files left after dpkg -r"
for d in /usr/share/attnviz /usr/share/doc/attnviz; do
    [ ! -e "$d" ] || fail "$d left after dpkg -r"
done
if command -v update-mime-database >/dev/null && grep -q 'x-attnviz-session' /usr/share/mime/globs2; then
    fail "the MIME database still lists the session type after dpkg -r"
fi
echo "PASS deb_roundtrip: built, installed, ran and removed $(basename "$DEB")"
