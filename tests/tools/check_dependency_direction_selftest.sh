#!/usr/bin/env bash
# Proves check_dependency_direction.sh can fail: runs it on small planted trees and checks that
# it accepts the good ones and rejects each planted bad include.
# usage: check_dependency_direction_selftest.sh <checker> <scratch dir>
set -euo pipefail
checker=$1
scratch=$2
# shellcheck disable=SC2054 # the commas separate a component's header prefixes
args=(testing=catch2/,rapidcheck sqlite=sqlite3.h amqp=openssl/ ops=boost/beast)
failures=0

# plant <case> <file relative to include/letterbox> <line>: a fresh tree with one planted line
plant() {
    local dir="$scratch/$1"
    rm -rf "$dir"
    mkdir -p "$dir/letterbox/testing" "$dir/letterbox/sqlite" "$dir/letterbox/detail"
    printf '#pragma once\n#include <string>\n#include <boost/asio/io_context.hpp>\n' >"$dir/letterbox/message.hpp"
    printf '#pragma once\n#include <letterbox/message.hpp>\n' >"$dir/letterbox/detail/x.hpp"
    printf '#pragma once\n#include <letterbox/message.hpp>\n#include <catch2/catch.hpp>\n' >"$dir/letterbox/testing/suite.hpp"
    printf '#pragma once\n#include <letterbox/testing/suite.hpp>\n' >"$dir/letterbox/testing.hpp"
    printf '#pragma once\n#include <sqlite3.h>\n#include "letterbox/message.hpp"\n' >"$dir/letterbox/sqlite/store.hpp"
    if [ -n "$2" ]; then
        mkdir -p "$(dirname "$dir/letterbox/$2")"
        printf '%s\n' "$3" >>"$dir/letterbox/$2"
    fi
    printf '%s' "$dir/letterbox"
}

expect() { # <pass|fail> <case> <file> <line>
    local want=$1 name=$2 tree output status=0
    tree=$(plant "$name" "$3" "$4")
    output=$(bash "$checker" "$tree" "${args[@]}" 2>&1) || status=$?
    if { [ "$want" = pass ] && [ $status -ne 0 ]; } || { [ "$want" = fail ] && [ $status -ne 1 ]; }; then
        printf 'selftest %s: expected %s, got exit %d\n%s\n' "$name" "$want" "$status" "$output"
        failures=$((failures + 1))
    else
        printf 'selftest %s: %s as expected\n' "$name" "$want"
    fi
}

expect pass clean "" ""
expect pass core_includes_core detail/y.hpp '#include <letterbox/detail/x.hpp>'
expect pass testing_includes_rapidcheck testing/prop.hpp '#include <rapidcheck/catch.h>'
expect fail core_includes_sqlite3 message.hpp '#include <sqlite3.h>'
expect fail core_includes_catch detail/x.hpp '#  include <catch2/catch.hpp>'
expect fail core_includes_beast message.hpp '#include <boost/beast/http.hpp>'
expect fail core_includes_openssl message.hpp '#include <openssl/ssl.h>'
expect fail core_includes_testing_header message.hpp '#include <letterbox/testing/suite.hpp>'
expect fail core_includes_umbrella message.hpp '#include "letterbox/sqlite.hpp"'
expect fail core_includes_unknown_component message.hpp '#include <letterbox/ops/endpoint.hpp>'
expect fail sqlite_includes_amqp sqlite/store.hpp '#include <letterbox/amqp.hpp>'
expect fail sqlite_includes_catch sqlite/store.hpp '#include <catch2/catch.hpp>'
expect fail testing_includes_sqlite testing/suite.hpp '#include <letterbox/sqlite/store.hpp>'
expect fail testing_includes_sqlite3 testing.hpp '#include <sqlite3.h>'
expect fail umbrella_includes_other sqlite.hpp '#include <letterbox/testing.hpp>'

if [ $failures -ne 0 ]; then
    echo "selftest: $failures case(s) wrong"
    exit 1
fi
echo "selftest: ok"
