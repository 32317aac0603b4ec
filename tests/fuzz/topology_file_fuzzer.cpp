// SPDX-License-Identifier: BSL-1.0
// libFuzzer target for the topology file of `letterbox topology declare --file` (docs/cli.md):
// `cli::parse_topology_text`, which parses the JSON and turns it into exchanges, queues (with
// their retry topology) and bindings, nested `arguments` tables included.
//
// Input: the file's bytes, as they are.
//
// Oracles (a failure aborts, which libFuzzer and the replay test report):
// - parsing ends in a plan or in `cli::usage_failure`, never in another exception, a crash or
//   a stack overflow (30,000 nested arrays crashed it once: the depth is now bounded before
//   descending);
// - a failure's message starts with "topology file" and its length is linear in the input's
//   (the path of the member at fault is built once, not grown level by level);
// - every table of the plan nests no deeper than `cli::max_topology_field_depth`, so the AMQP
//   codec can encode it, and every queue's arguments pass RabbitMQ's checks
//   (`topology::queue_arguments::parse`), as the parser promises before anything is declared.
// Build and run: docs/cli.md, "Fuzzing the topology file".

#include "topology_command.hpp"

#include <letterbox/field_table.hpp>
#include <letterbox/topology/queue_arguments.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <system_error>
#include <type_traits>
#include <variant>

namespace {

namespace cli = letterbox::cli;

[[noreturn]] void oracle_failed(const char* what, int line) {
    std::fprintf(stderr, "topology_file_fuzzer: oracle failed at line %d: %s\n", line, what);
    std::abort();
}

#define TOPOLOGY_FUZZ_CHECK(condition)                                                             \
    do {                                                                                           \
        if (!(condition))                                                                          \
            oracle_failed(#condition, __LINE__);                                                   \
    } while (false)

std::size_t depth_of(const letterbox::field_table& t);

/// The nesting level below a value: 0 for a scalar, 1 + its content's for a table or array.
std::size_t depth_of(const letterbox::field_value& v) {
    return std::visit(
        [](const auto& x) -> std::size_t {
            using T = std::decay_t<decltype(x)>;
            if constexpr (std::is_same_v<T, letterbox::field_table>) {
                return depth_of(x);
            } else if constexpr (std::is_same_v<T, letterbox::field_array>) {
                std::size_t deepest = 0;
                for (const auto& element : x)
                    deepest = std::max(deepest, depth_of(element));
                return 1 + deepest;
            } else {
                return 0;
            }
        },
        v.variant());
}

/// The levels of `t` itself and everything in it (1 for a table of scalars).
std::size_t depth_of(const letterbox::field_table& t) {
    std::size_t deepest = 0;
    for (const auto& [name, value] : t)
        deepest = std::max(deepest, depth_of(value));
    return 1 + deepest;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string_view text(reinterpret_cast<const char*>(data), size);
    try {
        const auto plan = cli::parse_topology_text(text, "fuzz.json");
        for (const auto& x : plan.exchanges)
            TOPOLOGY_FUZZ_CHECK(depth_of(x.arguments) <= cli::max_topology_field_depth);
        for (const auto& b : plan.bindings)
            TOPOLOGY_FUZZ_CHECK(depth_of(b.arguments) <= cli::max_topology_field_depth);
        for (const auto& q : plan.queues) {
            TOPOLOGY_FUZZ_CHECK(!q.name.empty());
            TOPOLOGY_FUZZ_CHECK(depth_of(q.arguments) <= cli::max_topology_field_depth);
            std::error_code ec;
            std::string reason;
            TOPOLOGY_FUZZ_CHECK(
                letterbox::topology::queue_arguments::parse(q.arguments, ec, reason));
        }
    } catch (const cli::usage_failure& e) {
        const std::string_view message = e.what();
        TOPOLOGY_FUZZ_CHECK(message.starts_with("topology file"));
        TOPOLOGY_FUZZ_CHECK(message.size() <= 4 * size + 1024);
    }
    return 0;
}
