#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# The compiler launcher when ccache is installed (CMakeLists.txt):
#   ccache-launch.sh ccache COMPILER ARGS...
# runs the compile through ccache, and before a precompiled header (-o X.gch or X.pch) is compiled,
# removes the one it replaces. CMake compiles the header with -include X, and ccache (like GCC) takes
# an X.gch lying beside X as an input: it keyed the new header on the stale one's bytes and missed,
# GCC wrote a header whose bytes differ from one compile to the next, and every file compiled with
# it missed in turn (a whole rebuild after any change of the header's flags in an existing build).
args=("$@")
for ((i = 0; i + 1 < ${#args[@]}; ++i)); do
    if [ "${args[i]}" = -o ]; then
        case "${args[i + 1]}" in
        *.gch | *.pch) rm -f -- "${args[i + 1]}" ;;
        esac
        break
    fi
done
exec "$@"
