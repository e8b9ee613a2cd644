#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# Every program and library of the build loads: the range the loader makes read-only after
# relocation (PT_GNU_RELRO, rounded down to pages at both ends, as glibc's _dl_protect_relro does)
# lies on pages that a PT_LOAD maps. Debian 12's mold (1.10) can start that range at a lone .tbss
# placed just below the writable segment, on a page nothing maps; the program then never starts
# ("cannot apply additional memory protection after relocation: Cannot allocate memory"), which
# depends on where the text happens to end, so a test may pass on one link and fail on the next.
# Usage: elf_layout.sh BUILD_DIR
set -euo pipefail
build=$1
page=4096
checked=0
bad=0
while IFS= read -r -d '' f; do
    head -c 4 "$f" 2>/dev/null | grep -q $'^\x7fELF' || continue
    checked=$((checked + 1))
    los=() his=() relro=""
    while read -r type _ vaddr _ _ memsz _; do
        case "$type" in
            LOAD) los+=($(( vaddr / page * page ))); his+=($(( vaddr + memsz ))) ;;
            GNU_RELRO) relro="$vaddr $memsz" ;;
        esac
    done < <(readelf -lW "$f" | awk '$1 == "LOAD" || $1 == "GNU_RELRO" { print $1, $2, $3, $4, $5, $6, $7 }')
    [ -n "$relro" ] || continue
    read -r rs rsize <<<"$relro"
    for ((p = rs / page * page; p < (rs + rsize) / page * page; p += page)); do
        mapped=0
        for i in "${!los[@]}"; do
            if (( p >= los[i] && p < his[i] )); then mapped=1; break; fi
        done
        if [ $mapped -eq 0 ]; then
            printf 'elf_layout: %s: RELRO starts at 0x%x; its page 0x%x is in no LOAD segment\n' "${f#"$build"/}" $((rs)) $p >&2
            bad=$((bad + 1))
            break
        fi
    done
done < <(find "$build" -type f \( -perm -u+x -o -name '*.so' -o -name '*.so.*' \) -not -path '*/CMakeFiles/*' -print0)
if [ "$checked" -eq 0 ]; then
    echo "elf_layout: no program found under $build" >&2
    exit 1
fi
echo "elf_layout: $checked programs and libraries, $bad whose RELRO range the loader cannot protect"
[ "$bad" -eq 0 ]
