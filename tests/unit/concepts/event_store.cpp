// SPDX-License-Identifier: BSL-1.0
// Near misses: each clause of event_store is necessary. Every type below has all the parts of a
// model but one, and the concept must reject it.

#include <letterbox/concepts/event_store.hpp>

#include "unit/concepts/store_parts.hpp"

#include <catch2/catch.hpp>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <string_view>
#include <system_error>
#include <vector>

namespace unit_concepts_event_store {

namespace {

using letterbox::append_result;
using letterbox::event_data;
using letterbox::expected_version;
using letterbox::recorded_event;
using letterbox::store_time;

using unit_concepts_store_parts::has_bad_uow;
using unit_concepts_store_parts::has_uow;
using unit_concepts_store_parts::store_of;
using unit_concepts_store_parts::uow;

// One part per clause; a store is the sum of its parts.
struct opted_in {
    using event_store_concept = letterbox::event_store_tag;
};
struct opted_in_elsewhere {
    struct other_tag {};
    using event_store_concept = other_tag;
};
struct with_append {
    std::error_code append(uow&, std::string_view, expected_version, std::span<const event_data>,
                           store_time, append_result&) {
        return {};
    }
};
struct with_append_returning_the_result {
    append_result append(uow&, std::string_view, expected_version, std::span<const event_data>,
                         store_time, std::error_code&) {
        return {};
    }
};
struct with_append_without_a_time {
    std::error_code append(uow&, std::string_view, expected_version, std::span<const event_data>,
                           append_result&) {
        return {};
    }
};
struct with_read_stream {
    std::vector<recorded_event> read_stream(std::string_view, std::uint64_t, std::size_t,
                                            std::error_code&) {
        return {};
    }
};
struct with_read_stream_without_limit {
    std::vector<recorded_event> read_stream(std::string_view, std::uint64_t, std::error_code&) {
        return {};
    }
};
struct with_read_all {
    std::vector<recorded_event> read_all(std::uint64_t, std::size_t, std::error_code&) {
        return {};
    }
};
struct with_read_all_returning_data {
    std::vector<event_data> read_all(std::uint64_t, std::size_t, std::error_code&) { return {}; }
};
struct with_stream_version {
    std::uint64_t stream_version(std::string_view, std::error_code&) { return {}; }
};
struct with_head_position {
    std::uint64_t head_position(std::error_code&) { return {}; }
};

} // namespace

TEST_CASE("a type with the event_store tag and every member is an event_store",
          "[concepts][event_store]") {
    STATIC_REQUIRE(
        letterbox::event_store<store_of<opted_in, has_uow, with_append, with_read_stream,
                                        with_read_all, with_stream_version, with_head_position>>);
}

TEST_CASE("a type that misses one clause of event_store is not an event_store",
          "[concepts][event_store]") {
    using letterbox::event_store;
    // No opt-in, or an unrelated tag.
    STATIC_REQUIRE(!event_store<store_of<has_uow, with_append, with_read_stream, with_read_all,
                                         with_stream_version, with_head_position>>);
    STATIC_REQUIRE(!event_store<store_of<opted_in_elsewhere, has_uow, with_append, with_read_stream,
                                         with_read_all, with_stream_version, with_head_position>>);
    // No unit of work, or one that is not a unit_of_work.
    STATIC_REQUIRE(!event_store<store_of<opted_in, with_append, with_read_stream, with_read_all,
                                         with_stream_version, with_head_position>>);
    STATIC_REQUIRE(!event_store<store_of<opted_in, has_bad_uow, with_append, with_read_stream,
                                         with_read_all, with_stream_version, with_head_position>>);
    // Each member missing, or of the wrong shape.
    STATIC_REQUIRE(!event_store<store_of<opted_in, has_uow, with_read_stream, with_read_all,
                                         with_stream_version, with_head_position>>);
    STATIC_REQUIRE(
        !event_store<store_of<opted_in, has_uow, with_append_returning_the_result, with_read_stream,
                              with_read_all, with_stream_version, with_head_position>>);
    STATIC_REQUIRE(
        !event_store<store_of<opted_in, has_uow, with_append_without_a_time, with_read_stream,
                              with_read_all, with_stream_version, with_head_position>>);
    STATIC_REQUIRE(!event_store<store_of<opted_in, has_uow, with_append, with_read_all,
                                         with_stream_version, with_head_position>>);
    STATIC_REQUIRE(
        !event_store<store_of<opted_in, has_uow, with_append, with_read_stream_without_limit,
                              with_read_all, with_stream_version, with_head_position>>);
    STATIC_REQUIRE(!event_store<store_of<opted_in, has_uow, with_append, with_read_stream,
                                         with_stream_version, with_head_position>>);
    STATIC_REQUIRE(
        !event_store<
            store_of<opted_in, has_uow, with_append, with_read_stream, with_read_all_returning_data,
                     with_stream_version, with_head_position>>);
    STATIC_REQUIRE(!event_store<store_of<opted_in, has_uow, with_append, with_read_stream,
                                         with_read_all, with_head_position>>);
    STATIC_REQUIRE(!event_store<store_of<opted_in, has_uow, with_append, with_read_stream,
                                         with_read_all, with_stream_version>>);
}

TEST_CASE("expected_version admits what it names", "[concepts][event_store]") {
    STATIC_REQUIRE(expected_version::any().admits(0));
    STATIC_REQUIRE(expected_version::any().admits(7));
    STATIC_REQUIRE(expected_version::no_stream().admits(0));
    STATIC_REQUIRE_FALSE(expected_version::no_stream().admits(1));
    STATIC_REQUIRE(expected_version::no_stream() == expected_version::exactly(0));
    STATIC_REQUIRE(expected_version::exactly(3).admits(3));
    STATIC_REQUIRE_FALSE(expected_version::exactly(3).admits(2));
    STATIC_REQUIRE_FALSE(expected_version::exactly(3).admits(4));
    STATIC_REQUIRE(expected_version::any().is_any());
    STATIC_REQUIRE_FALSE(expected_version::exactly(0).is_any());
    STATIC_REQUIRE(expected_version::exactly(5).version() == 5);
}

} // namespace unit_concepts_event_store
