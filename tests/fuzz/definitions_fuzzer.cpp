// SPDX-License-Identifier: BSL-1.0
// libFuzzer target for the reader of RabbitMQ definitions exports (`lint::parse_definitions`,
// include/letterbox/lint/parse_definitions.hpp), the JSON of `rabbitmqctl export_definitions`
// and of the management API's `GET /api/definitions[/{vhost}]`.
//
// Input: the export's bytes, as they are.
//
// Oracles (a failure aborts, which libFuzzer and the replay test report):
// - parsing ends in topologies or in `letterbox::error` with `errc::invalid_argument`, never in
//   another exception, a crash or a stack overflow (the nesting depth is bounded on the raw text
//   before the JSON parser runs);
// - a failure's message starts with "definitions: ", holds no control character (names from the
//   input are escaped) and stays short whatever the input (names are cut, paths bounded);
// - the topologies come one per virtual host, sorted by name without repeats, at least one;
// - every table nests no deeper than `lint::max_definitions_field_depth` and has at most
//   `lint::max_definitions_table_members` members, so the AMQP codec can encode it.
// Build and run: docs/testing.md, "Fuzzing".

#include <letterbox/lint/parse_definitions.hpp>

#include <letterbox/error.hpp>
#include <letterbox/field_table.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string_view>
#include <type_traits>
#include <variant>

namespace {

namespace lint = letterbox::lint;

[[noreturn]] void oracle_failed(const char* what, int line) {
    std::fprintf(stderr, "definitions_fuzzer: oracle failed at line %d: %s\n", line, what);
    std::abort();
}

#define DEFINITIONS_FUZZ_CHECK(condition)                                                          \
    do {                                                                                           \
        if (!(condition))                                                                          \
            oracle_failed(#condition, __LINE__);                                                   \
    } while (false)

bool table_within_limits(const letterbox::field_table& t, std::size_t depth);

/// Whether `v`, at nesting level `depth`, and everything in it are within the limits.
bool value_within_limits(const letterbox::field_value& v, std::size_t depth) {
    return std::visit(
        [depth](const auto& x) -> bool {
            using T = std::decay_t<decltype(x)>;
            if constexpr (std::is_same_v<T, letterbox::field_table>) {
                return table_within_limits(x, depth + 1);
            } else if constexpr (std::is_same_v<T, letterbox::field_array>) {
                if (depth + 1 > lint::max_definitions_field_depth)
                    return false;
                return std::all_of(x.begin(), x.end(), [depth](const auto& element) {
                    return value_within_limits(element, depth + 1);
                });
            } else {
                return true;
            }
        },
        v.variant());
}

/// Whether the table `t`, at nesting level `depth` (1 for `arguments`), is within the limits.
bool table_within_limits(const letterbox::field_table& t, std::size_t depth) {
    if (depth > lint::max_definitions_field_depth || t.size() > lint::max_definitions_table_members)
        return false;
    return std::all_of(t.begin(), t.end(), [depth](const auto& entry) {
        return value_within_limits(entry.second, depth);
    });
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string_view text(reinterpret_cast<const char*>(data), size);
    try {
        const auto topologies = lint::parse_definitions(text);
        DEFINITIONS_FUZZ_CHECK(!topologies.empty());
        for (std::size_t i = 1; i < topologies.size(); ++i)
            DEFINITIONS_FUZZ_CHECK(topologies[i - 1].vhost < topologies[i].vhost);
        for (const auto& t : topologies) {
            for (const auto& x : t.exchanges)
                DEFINITIONS_FUZZ_CHECK(table_within_limits(x.arguments, 1));
            for (const auto& q : t.queues)
                DEFINITIONS_FUZZ_CHECK(table_within_limits(q.arguments, 1));
            for (const auto& b : t.bindings)
                DEFINITIONS_FUZZ_CHECK(table_within_limits(b.arguments, 1));
            for (const auto& p : t.policies)
                DEFINITIONS_FUZZ_CHECK(table_within_limits(p.definition, 1));
        }
    } catch (const letterbox::error& e) {
        const std::string_view message = e.what();
        DEFINITIONS_FUZZ_CHECK(e.code() == letterbox::errc::invalid_argument);
        DEFINITIONS_FUZZ_CHECK(message.starts_with("definitions: "));
        DEFINITIONS_FUZZ_CHECK(message.size() <= 8192);
        DEFINITIONS_FUZZ_CHECK(std::none_of(message.begin(), message.end(), [](char c) {
            return static_cast<unsigned char>(c) < 0x20 || c == 0x7F;
        }));
    }
    return 0;
}
