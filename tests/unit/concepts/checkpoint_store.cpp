// SPDX-License-Identifier: BSL-1.0
// Near misses: each clause of checkpoint_store is necessary. Every type below has all the parts
// of a model but one, and the concept must reject it.

#include <letterbox/concepts/checkpoint_store.hpp>

#include "unit/concepts/store_parts.hpp"

#include <catch2/catch.hpp>

#include <cstdint>
#include <functional>
#include <string_view>
#include <system_error>

namespace unit_concepts_checkpoint_store {

namespace {

using unit_concepts_store_parts::has_bad_uow;
using unit_concepts_store_parts::has_uow;
using unit_concepts_store_parts::store_of;
using unit_concepts_store_parts::uow;

// One part per clause; a store is the sum of its parts.
struct opted_in {
    using checkpoint_store_concept = letterbox::checkpoint_store_tag;
};
struct opted_in_elsewhere {
    struct other_tag {};
    using checkpoint_store_concept = other_tag;
};
struct with_position {
    std::uint64_t position(std::string_view, std::error_code&) { return {}; }
};
struct with_position_without_an_error {
    std::uint64_t position(std::string_view) { return {}; }
};
struct with_save {
    std::error_code save(uow&, std::string_view, std::uint64_t, std::uint64_t) { return {}; }
};
struct with_save_without_expected {
    std::error_code save(uow&, std::string_view, std::uint64_t) { return {}; }
};
struct with_save_without_a_unit {
    std::error_code save(std::string_view, std::uint64_t, std::uint64_t) { return {}; }
};

} // namespace

TEST_CASE("a type with the checkpoint_store tag and every member is a checkpoint_store",
          "[concepts][checkpoint_store]") {
    STATIC_REQUIRE(
        letterbox::checkpoint_store<store_of<opted_in, has_uow, with_position, with_save>>);
}

TEST_CASE("a type that misses one clause of checkpoint_store is not a checkpoint_store",
          "[concepts][checkpoint_store]") {
    using letterbox::checkpoint_store;
    // No opt-in, or an unrelated tag.
    STATIC_REQUIRE(!checkpoint_store<store_of<has_uow, with_position, with_save>>);
    STATIC_REQUIRE(
        !checkpoint_store<store_of<opted_in_elsewhere, has_uow, with_position, with_save>>);
    // No unit of work, or one that is not a unit_of_work.
    STATIC_REQUIRE(!checkpoint_store<store_of<opted_in, with_position, with_save>>);
    STATIC_REQUIRE(!checkpoint_store<store_of<opted_in, has_bad_uow, with_position, with_save>>);
    // Each member missing, or of the wrong shape.
    STATIC_REQUIRE(!checkpoint_store<store_of<opted_in, has_uow, with_save>>);
    STATIC_REQUIRE(
        !checkpoint_store<store_of<opted_in, has_uow, with_position_without_an_error, with_save>>);
    STATIC_REQUIRE(!checkpoint_store<store_of<opted_in, has_uow, with_position>>);
    STATIC_REQUIRE(
        !checkpoint_store<store_of<opted_in, has_uow, with_position, with_save_without_expected>>);
    STATIC_REQUIRE(
        !checkpoint_store<store_of<opted_in, has_uow, with_position, with_save_without_a_unit>>);
}

} // namespace unit_concepts_checkpoint_store
