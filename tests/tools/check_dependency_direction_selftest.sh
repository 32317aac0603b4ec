#!/usr/bin/env bash
# Proves check_dependency_direction.sh can fail: runs it on small planted trees and checks that
# it accepts the good ones (includes that point down the layers, docs/design/layers.md) and rejects
# each planted bad include, naming the file it was planted in.
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
    mkdir -p "$dir/letterbox/testing" "$dir/letterbox/sqlite" "$dir/letterbox/detail" \
        "$dir/letterbox/concepts" "$dir/letterbox/topology" "$dir/letterbox/middleware" \
        "$dir/letterbox/transport"
    printf '#pragma once\n#include <string>\n#include <boost/asio/io_context.hpp>\n' >"$dir/letterbox/message.hpp"
    printf '#pragma once\n#include <letterbox/message.hpp>\n' >"$dir/letterbox/detail/x.hpp"
    printf '#pragma once\n#include <letterbox/detail/x.hpp>\n' >"$dir/letterbox/topology/queue.hpp"
    printf '#pragma once\n#include <letterbox/message.hpp>\n#include <letterbox/topology/queue.hpp>\n#include <nlohmann/json.hpp>\n' \
        >"$dir/letterbox/concepts/transport.hpp"
    printf '#pragma once\n#include <letterbox/concepts/transport.hpp>\n' >"$dir/letterbox/transport/async_declare_all.hpp"
    printf '#pragma once\n#include <letterbox/transport/async_declare_all.hpp>\n' >"$dir/letterbox/topology/async_declare_all.hpp"
    printf '#pragma once\n#include <letterbox/concepts/transport.hpp>\n#include <letterbox/detail/x.hpp>\n' \
        >"$dir/letterbox/middleware/retry.hpp"
    printf '#pragma once\n#include <letterbox/middleware/retry.hpp>\n' >"$dir/letterbox/consumer.hpp"
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
    # A failure must name the planted line's file, so it is that line that was caught.
    if { [ "$want" = pass ] && [ $status -ne 0 ]; } ||
        { [ "$want" = fail ] && { [ $status -ne 1 ] || [[ $output != *"letterbox/$3:"* ]]; }; }; then
        printf 'selftest %s: expected %s, got exit %d\n%s\n' "$name" "$want" "$status" "$output"
        failures=$((failures + 1))
    else
        printf 'selftest %s: %s as expected\n' "$name" "$want"
    fi
}

expect pass clean "" ""
expect pass core_includes_core detail/y.hpp '#include <letterbox/detail/x.hpp>'
expect pass concept_includes_concept concepts/handler.hpp '#include <letterbox/concepts/transport.hpp>'
expect pass concept_includes_detail concepts/handler.hpp '#include <letterbox/detail/x.hpp>'
expect pass concept_includes_std_boost concepts/handler.hpp '#include <boost/asio/post.hpp>'
expect pass vocabulary_includes_topology message.hpp '#include <letterbox/topology/queue.hpp>'
expect pass layer_includes_layer middleware/dead_letter.hpp '#include <letterbox/middleware/retry.hpp>'
expect pass impl_includes_its_header impl/consumer.hpp '#include <letterbox/consumer.hpp>'
expect pass listed_root_header_includes_layer clock.hpp '#include <letterbox/middleware/retry.hpp>'
expect pass testing_includes_rapidcheck testing/prop.hpp '#include <rapidcheck/catch.h>'
expect fail concept_includes_layer concepts/transport.hpp '#include <letterbox/middleware/retry.hpp>'
expect fail concept_includes_listed_root_header concepts/transport.hpp '#include <letterbox/consumer.hpp>'
expect fail concept_includes_impl concepts/transport.hpp '#include "letterbox/impl/consumer.hpp"'
expect fail concept_includes_forwarder concepts/transport.hpp '#include <letterbox/topology/async_declare_all.hpp>'
expect fail vocabulary_includes_concept message.hpp '#include <letterbox/concepts/transport.hpp>'
expect fail vocabulary_includes_layer message.hpp '#include <letterbox/transport/async_declare_all.hpp>'
expect fail vocabulary_includes_listed_root_header message.hpp '#include <letterbox/consumer.hpp>'
expect fail detail_includes_concept detail/x.hpp '  #  include <letterbox/concepts/transport.hpp>'
expect fail topology_includes_layer topology/queue.hpp '#include <letterbox/middleware/retry.hpp>'
expect fail concept_includes_component concepts/transport.hpp '#include <letterbox/testing/suite.hpp>'
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
