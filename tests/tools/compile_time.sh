#!/usr/bin/env bash
# SPDX-License-Identifier: BSL-1.0
# What including letterbox costs a user, in the figures of issue 17: for each umbrella a user
# includes and for the getting-started program (header-only, then with separate compilation),
# the preprocessed lines and the CPU seconds of a -O0 compile (g++, -std=c++20, the warnings of
# the build, no sanitizer, no ccache).
# With COLD_TEST=1 it also clones the checkout into a temporary directory and times a cold
# `make test` there (CCACHE_DISABLE=1): about an hour on a 2-core machine.
#
# usage: compile_time.sh [repo root]     (make compile-time)
set -euo pipefail
root=$(cd "${1:-.}" && pwd)
cxx=${CXX:-g++}
flags=(-std=c++20 -O0 -Wall -Wextra -Wpedantic -Werror -I "$root/include")
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT

# cpu_seconds <command...>: user+sys CPU seconds of the command (bash's `time`).
cpu_seconds() {
    local TIMEFORMAT='%U %S' times
    times=$({ time "$@" >/dev/null; } 2>&1)
    awk -v t="$times" 'BEGIN{split(t, f, " "); printf "%.1f", f[1] + f[2]}'
}

measure() { # <label> <source file> [extra compiler flags...]
    local label=$1 source=$2 lines seconds
    shift 2
    lines=$("$cxx" "${flags[@]}" "$@" -E -P "$source" | wc -l)
    seconds=$(cpu_seconds "$cxx" "${flags[@]}" "$@" -c "$source" -o "$scratch/out.o")
    printf '| %-45s | %9s | %6s s |\n' "$label" "$lines" "$seconds"
}

umbrella() { # <header>: a translation unit that only includes it
    local header=$1 tu
    tu="$scratch/$(basename "$1" .hpp).cpp"
    printf '#include <%s>\nint main() {}\n' "$header" >"$tu"
    measure "#include <$header>" "$tu"
}

echo "compile time, $("$cxx" --version | head -n 1), $(nproc) cores, $(date -u +%F)"
printf '| %-45s | %9s | %8s |\n' "translation unit" "lines (-E)" "CPU"
printf '| %-45s | %9s | %8s |\n' "---" "---:" "---:"
umbrella letterbox/letterbox.hpp
umbrella letterbox/sqlite.hpp
umbrella letterbox/amqp.hpp
measure "examples/getting_started/main.cpp" "$root/examples/getting_started/main.cpp"
# With separate compilation (docs/separate-compilation.md): the program's own source, then the
# source compiled once per program that holds letterbox's non-template code.
sep=-DLETTERBOX_SEPARATE_COMPILATION
measure "the same, LETTERBOX_SEPARATE_COMPILATION" "$root/examples/getting_started/main.cpp" "$sep"
measure "its letterbox_src.cpp (once per program)" "$root/examples/getting_started/letterbox_src.cpp" "$sep"

if [ "${COLD_TEST:-}" = 1 ]; then
    clone="$scratch/clone"
    git clone -q "$root" "$clone"
    start=$(date +%s)
    status=0
    (cd "$clone" && CCACHE_DISABLE=1 make test >"$scratch/make-test.log" 2>&1) || status=$?
    end=$(date +%s)
    echo "cold make test: $((end - start)) s wall, exit $status (fresh clone of $(git -C "$root" rev-parse --short HEAD))"
    [ "$status" -eq 0 ] || tail -n 40 "$scratch/make-test.log"
fi
