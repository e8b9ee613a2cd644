#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# The relocatable .tar.gz: build it with cpack from the already-built tree, unpack it into a
# temporary folder, and run the program from there (no root, nothing installed).
#   bash tests/tgz_archive.sh BUILD_DIR VERSION APP_ID
set -euo pipefail
BUILD_DIR=$(cd "$1" && pwd)
VERSION=$2
APP_ID=$3
fail() { echo "FAIL tgz_archive: $*" >&2; exit 1; }

WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
cpack --config "$BUILD_DIR/CPackConfig.cmake" -G TGZ -B "$WORK/out" >"$WORK/cpack.log" 2>&1 \
    || { cat "$WORK/cpack.log"; fail "cpack failed"; }
TGZ=$(ls "$WORK/out"/attnviz-"$VERSION"-*.tar.gz 2>/dev/null | head -1)
[ -n "$TGZ" ] || { ls -l "$WORK/out"; fail "no attnviz-$VERSION-*.tar.gz"; }
mkdir "$WORK/x"
tar -xzf "$TGZ" -C "$WORK/x"
TOP="$WORK/x/$(basename "$TGZ" .tar.gz)"
[ -d "$TOP" ] || fail "the archive does not unpack into $(basename "$TOP")/"
for f in bin/attnviz share/attnviz/examples/journey_causal.json share/man/man1/attnviz.1.gz \
         share/attnviz/models/attnviz-tiny/config.json share/attnviz/models/attnviz-tiny/model.safetensors \
         share/attnviz/models/attnviz-tiny/vocab.json share/attnviz/models/attnviz-tiny/merges.txt \
         share/attnviz/models/attnviz-tiny/MANIFEST.md \
         share/attnviz/models/attnviz-tiny-2/config.json share/attnviz/models/attnviz-tiny-2/model.safetensors \
         share/attnviz/models/attnviz-tiny-2/tokenizer.json share/attnviz/models/attnviz-tiny-2/tokenizer_config.json \
         share/attnviz/models/attnviz-tiny-2/MANIFEST.md \
         share/attnviz/models/attnviz-dates/config.json share/attnviz/models/attnviz-dates/model.safetensors \
         share/attnviz/models/attnviz-dates/spiece.model share/attnviz/models/attnviz-dates/tokenizer_config.json \
         share/attnviz/models/attnviz-dates/MANIFEST.md \
         "share/applications/$APP_ID.desktop" "share/icons/hicolor/scalable/apps/$APP_ID.svg"; do
    [ -e "$TOP/$f" ] || fail "the archive lacks $f"
done
# lib/: the core library, one build per x86-64 level (lib/attnviz/glibc-hwcaps/), when the build
# dispatches at run time.
if find "$TOP" -mindepth 1 -maxdepth 1 | grep -vE "/(bin|lib|share)$" | grep -q .; then
    fail "unexpected top-level entries: $(find "$TOP" -mindepth 1 -maxdepth 1 -printf '%f ')"
fi
out=$("$TOP/bin/attnviz" --version)
# The unpacked program finds its core through $ORIGIN, and the loader the best level of it.
dev=$("$TOP/bin/attnviz" bench --sizes 16:64:4 --seconds 0 | head -1)
echo "   $dev"
grep -q "AVX\|SSE\|generic" <<<"$dev" || fail "the bench device line names no ISA: $dev"
[ "$out" = "attnviz $VERSION" ] || fail "--version printed '$out'"
(cd "$WORK" && "$TOP/bin/attnviz" compute "$TOP/share/attnviz/examples/journey_causal.json" --check \
    -o "$WORK/result.json" 2>/dev/null) || fail "compute --check on the unpacked example failed"
[ ! -e "$TOP/share/attnviz/models/attnviz-tiny/recipe" ] && [ ! -e "$TOP/share/attnviz/models/attnviz-tiny-2/recipe" ] \
    && [ ! -e "$TOP/share/attnviz/models/attnviz-dates/recipe" ] \
    || fail "the archive carries a bundled model's recipe/"
# The unpacked program finds the bundled model beside it (share/attnviz/models), not in a source tree.
info=$(cd "$WORK" && "$TOP/bin/attnviz" model info bundled --json) || fail "model info bundled failed"
grep -qF "\"source\": \"$TOP/share/attnviz/models/attnviz-tiny-2\"" <<<"$info" \
    || fail "model info bundled does not read the unpacked share/attnviz/models/attnviz-tiny-2: $info"
info=$(cd "$WORK" && "$TOP/bin/attnviz" model info bundled-gpt2 --json) || fail "model info bundled-gpt2 failed"
grep -qF "\"source\": \"$TOP/share/attnviz/models/attnviz-tiny\"" <<<"$info" \
    || fail "model info bundled-gpt2 does not read the unpacked share/attnviz/models/attnviz-tiny: $info"
echo "PASS tgz_archive: $(basename "$TGZ") unpacks and runs"
