# cmake -DEXECUTABLE=<exe> -DSOURCE=<main.cpp> [-DTIMEOUT=<seconds>] -P run_example.cmake
#
# Runs an example and checks its stdout against the "Expected output" block at the end of its
# main.cpp: a line `// Expected output (regex lines):` followed by lines `//   <regex>`. The block
# ends at the first line that is not a `//` comment. Every regex (CMake syntax: `^` and `$`
# anchor the whole output, not a line) must match, in order, each one after the end of the
# previous match. A non-zero exit status fails the test too.
cmake_minimum_required(VERSION 3.25)
if(NOT EXECUTABLE OR NOT SOURCE)
    message(FATAL_ERROR "run_example.cmake: pass -DEXECUTABLE=<exe> -DSOURCE=<main.cpp>")
endif()
if(NOT TIMEOUT)
    set(TIMEOUT 240)
endif()

execute_process(COMMAND "${EXECUTABLE}"
                RESULT_VARIABLE status
                OUTPUT_VARIABLE output
                ERROR_VARIABLE errors
                TIMEOUT ${TIMEOUT})
message("${output}")
if(NOT errors STREQUAL "")
    message("--- stderr ---\n${errors}")
endif()
if(NOT status EQUAL 0)
    message(FATAL_ERROR "example exited with status '${status}'")
endif()

# Walk main.cpp line by line without CMake lists, so regexes may hold `;`, `[` or `]`.
file(READ "${SOURCE}" text)
set(in_block FALSE)
set(count 0)
set(rest "${output}")
while(NOT text STREQUAL "")
    string(FIND "${text}" "\n" newline)
    if(newline EQUAL -1)
        set(line "${text}")
        set(text "")
    else()
        string(SUBSTRING "${text}" 0 ${newline} line)
        math(EXPR next "${newline} + 1")
        string(SUBSTRING "${text}" ${next} -1 text)
    endif()
    string(REGEX REPLACE "\r$" "" line "${line}")
    if(NOT in_block)
        if(line MATCHES "^[ \t]*// Expected output \\(regex lines\\):[ \t]*$")
            set(in_block TRUE)
        endif()
        continue()
    endif()
    if(NOT line MATCHES "^[ \t]*//")
        break()
    endif()
    string(REGEX REPLACE "^[ \t]*// *" "" regex "${line}")
    if(regex STREQUAL "")
        continue()
    endif()
    math(EXPR count "${count} + 1")
    if(NOT rest MATCHES "${regex}")
        message(FATAL_ERROR "expected output regex ${count} not found (after the previous match): ${regex}")
    endif()
    # Move past this match: for a regex without anchors, the first occurrence of the matched
    # text is where the match starts.
    set(match "${CMAKE_MATCH_0}")
    if(NOT match STREQUAL "")
        string(FIND "${rest}" "${match}" position)
        string(LENGTH "${match}" length)
        math(EXPR position "${position} + ${length}")
        string(SUBSTRING "${rest}" ${position} -1 rest)
    endif()
endwhile()
if(count EQUAL 0)
    message(FATAL_ERROR
        "${SOURCE} has no \"// Expected output (regex lines):\" block with at least one regex line")
endif()
message(STATUS "example: all ${count} expected output regexes matched, in order")
