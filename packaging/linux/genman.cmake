# SPDX-License-Identifier: GPL-3.0-or-later
# Generates attnviz.1 from packaging/linux/attnviz.1.in and the built program's own help, so the
# COMMANDS section cannot drift from the code:
#   cmake -DBIN=path/to/attnviz -DTEMPLATE=attnviz.1.in -DOUT=attnviz.1 -DPROJECT_VERSION=x.y.z
#         -DATTNVIZ_RELEASE_DATE=YYYY-MM-DD -DATTNVIZ_APP_ID=id -P genman.cmake
# The commands are the lines under "Commands:" in 'attnviz --help' (two spaces, then the name);
# each gets a subsection with its one-line summary and the verbatim text of 'attnviz NAME --help'.
# A help text that cannot be read is a warning here, not a broken build: tst_packaging fails on it.
cmake_minimum_required(VERSION 3.21)
foreach(var BIN TEMPLATE OUT PROJECT_VERSION ATTNVIZ_RELEASE_DATE ATTNVIZ_APP_ID)
    if(NOT DEFINED ${var})
        message(FATAL_ERROR "genman.cmake: -D${var}=... is required")
    endif()
endforeach()

# roff: a backslash is \e, every '-' is \- (so options copy and paste as ASCII), the typographic
# characters help texts use are roff's own names (groff reads its input as Latin-1 unless preconv
# runs first: "×" would be two invalid characters), and a line that starts with '.' or '\'' is
# protected by \&.
function(roff_escape out text)
    string(REPLACE "\\" "\\e" text "${text}")
    string(REPLACE "-" "\\-" text "${text}")
    foreach(pair "×;\\(mu" "—;\\(em" "–;\\(en" "≤;\\(<=" "≥;\\(>=" "→;\\(->" "…;..." "·;\\(pc" "√;\\(sr" "−;\\(mi")
        list(GET pair 0 from)
        list(GET pair 1 to)
        string(REPLACE "${from}" "${to}" text "${text}")
    endforeach()
    string(REGEX REPLACE "(^|\n)([.'])" "\\1\\\\&\\2" text "${text}")
    set(${out} "${text}" PARENT_SCOPE)
endfunction()

# QCommandLineParser prints the program as it was invoked (maybe a build path) and leaves out the
# command; the page says "attnviz COMMAND".
function(normalize_usage out text verb)
    string(REGEX REPLACE "Usage: [^ \n]*attnviz" "Usage: attnviz" text "${text}")
    if(verb AND NOT text MATCHES "Usage: attnviz ${verb}( |\n|$)")
        string(REPLACE "Usage: attnviz" "Usage: attnviz ${verb}" text "${text}")
    endif()
    string(REGEX REPLACE "\n+$" "" text "${text}")
    set(${out} "${text}" PARENT_SCOPE)
endfunction()

execute_process(COMMAND "${BIN}" --help
    OUTPUT_VARIABLE top ERROR_VARIABLE top_err RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
    message(FATAL_ERROR "genman.cmake: '${BIN} --help' failed (${rc}): ${top_err}")
endif()

# Walk the lines by hand: CMake lists would split on ';' and glue lines with unbalanced '['.
set(rest "${top}\n")
set(in_commands OFF)
set(verbs "")
set(verb "")
while(NOT rest STREQUAL "")
    string(FIND "${rest}" "\n" nl)
    string(SUBSTRING "${rest}" 0 ${nl} line)
    math(EXPR next "${nl} + 1")
    string(SUBSTRING "${rest}" ${next} -1 rest)
    if(line MATCHES "^Commands:")
        set(in_commands ON)
    elseif(in_commands AND line STREQUAL "")
        set(in_commands OFF)
    elseif(in_commands AND line MATCHES "^  ([a-z][a-z0-9-]*)( |$)")
        # "  NAME SYNOPSIS   summary"; a command listed twice (two synopses) gets one section whose
        # summary joins both.
        set(verb "${CMAKE_MATCH_1}")
        set(summary "")
        if(line MATCHES "^  [^ ].*[^ ]   *([^ ].*)$")
            set(summary "${CMAKE_MATCH_1}")
        endif()
        if(verb IN_LIST verbs)
            if(summary)
                set(summary_${verb} "${summary_${verb}}; ${summary}")
            endif()
        else()
            list(APPEND verbs "${verb}")
            set(summary_${verb} "${summary}")
        endif()
    elseif(in_commands AND verb AND line MATCHES "^    +([^ ].*)$")
        # a summary continued on the next line
        set(summary_${verb} "${summary_${verb}} ${CMAKE_MATCH_1}")
    endif()
endwhile()
if(NOT verbs)
    message(WARNING "genman.cmake: no 'Commands:' list in '${BIN} --help'; the page has no command sections")
endif()

normalize_usage(top "${top}" "")
roff_escape(top_roff "${top}")
set(commands ".PP\n.nf\n${top_roff}\n.fi\n")
foreach(verb IN LISTS verbs)
    execute_process(COMMAND "${BIN}" ${verb} --help
        OUTPUT_VARIABLE help ERROR_VARIABLE help_err RESULT_VARIABLE rc)
    if(NOT rc EQUAL 0)
        message(WARNING "genman.cmake: 'attnviz --help' lists '${verb}' but 'attnviz ${verb} --help' "
                        "failed (${rc}): ${help_err}")
        continue()
    endif()
    normalize_usage(help "${help}" "${verb}")
    roff_escape(help_roff "${help}")
    roff_escape(summary_roff "${summary_${verb}}")
    string(APPEND commands ".SS \"attnviz ${verb}\"\n")
    if(summary_roff)
        string(APPEND commands "${summary_roff}.\n")
    endif()
    string(APPEND commands ".PP\n.nf\n${help_roff}\n.fi\n")
endforeach()
string(REGEX REPLACE "\n$" "" ATTNVIZ_COMMANDS "${commands}")

file(READ "${TEMPLATE}" page)
string(CONFIGURE "${page}" page @ONLY)
file(WRITE "${OUT}.tmp" "${page}")
file(RENAME "${OUT}.tmp" "${OUT}")
