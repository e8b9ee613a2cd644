#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# The compiler launcher when ccache is installed (CMakeLists.txt):
#   ccache-launch.sh CHECKOUT ccache COMPILER ARGS...
# runs the compile through ccache, and after a precompiled header (-o X.gch or X.pch) writes X.sum.
# ccache keys every file compiled with a precompiled header on the header's bytes, and GCC's .gch
# holds the build folder's path: a clean clone in another folder missed each such file. With
# pch_external_checksum (set beside this launcher) ccache hashes X.sum instead, so X.sum must change
# exactly when the compiled header would mean something else: it is made of every file the header
# read (its depfile), by content, named with the checkout's path taken out, and the command line
# with that path taken out. The compiler and the flags of each file compiled with the header are
# hashed by ccache anyway.
set -uo pipefail
base=$1
shift
out="" dep=""
args=("$@")
for ((i = 0; i + 1 < ${#args[@]}; ++i)); do
    case "${args[i]}" in
    -o) out=${args[i + 1]} ;;
    -MF) dep=${args[i + 1]} ;;
    esac
done
"$@" || exit $?
case "$out" in
*.gch | *.pch) ;;
*) exit 0 ;;
esac
rm -f "$out.sum"
# Without a depfile no .sum: ccache then hashes the compiled header itself (correct, not shared).
[ -n "$dep" ] && [ -f "$dep" ] || exit 0
{
    printf '%s\n' "${args[@]}" | sed "s|$base|@|g"
    sed -e '1s/^[^:]*://' -e 's/\\$//' "$dep" | tr ' \t' '\n\n' | grep -v '^$' | sort -u |
        xargs -d '\n' sha256sum | sed "s|$base|@|g" | sort
} | sha256sum > "$out.sum.tmp" && mv -f "$out.sum.tmp" "$out.sum"
exit 0
