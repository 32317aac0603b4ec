// SPDX-License-Identifier: BSL-1.0
// Near misses: each clause of snapshot_store is necessary. Every type below has all the parts of
// a model but one, and the concept must reject it.

#include <letterbox/concepts/snapshot_store.hpp>

#include "unit/concepts/store_parts.hpp"

#include <catch2/catch.hpp>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string_view>
#include <system_error>
#include <vector>

namespace unit_concepts_snapshot_store {

namespace {

using letterbox::snapshot;
using letterbox::store_time;

using unit_concepts_store_parts::has_bad_uow;
using unit_concepts_store_parts::has_uow;
using unit_concepts_store_parts::store_of;
using unit_concepts_store_parts::uow;

// One part per clause; a store is the sum of its parts.
struct opted_in {
    using snapshot_store_concept = letterbox::snapshot_store_tag;
};
struct opted_in_elsewhere {
    struct other_tag {};
    using snapshot_store_concept = other_tag;
};
struct with_save {
    std::error_code save(uow&, const snapshot&) { return {}; }
};
struct with_save_without_a_unit {
    std::error_code save(const snapshot&) { return {}; }
};
struct with_save_returning_bool {
    bool save(uow&, const snapshot&) { return {}; }
};
struct with_latest {
    std::optional<snapshot> latest(std::string_view, std::uint64_t, store_time, std::error_code&) {
        return {};
    }
};
struct with_latest_without_a_time {
    std::optional<snapshot> latest(std::string_view, std::uint64_t, std::error_code&) { return {}; }
};
struct with_latest_returning_all {
    std::vector<snapshot> latest(std::string_view, std::uint64_t, store_time, std::error_code&) {
        return {};
    }
};
struct with_drop {
    std::size_t drop(std::string_view, std::error_code&) { return {}; }
};
struct with_drop_returning_the_error {
    std::error_code drop(std::string_view) { return {}; }
};

} // namespace

TEST_CASE("a type with the snapshot_store tag and every member is a snapshot_store",
          "[concepts][snapshot_store]") {
    STATIC_REQUIRE(
        letterbox::snapshot_store<store_of<opted_in, has_uow, with_save, with_latest, with_drop>>);
}

TEST_CASE("a type that misses one clause of snapshot_store is not a snapshot_store",
          "[concepts][snapshot_store]") {
    using letterbox::snapshot_store;
    // No opt-in, or an unrelated tag.
    STATIC_REQUIRE(!snapshot_store<store_of<has_uow, with_save, with_latest, with_drop>>);
    STATIC_REQUIRE(
        !snapshot_store<store_of<opted_in_elsewhere, has_uow, with_save, with_latest, with_drop>>);
    // No unit of work, or one that is not a unit_of_work.
    STATIC_REQUIRE(!snapshot_store<store_of<opted_in, with_save, with_latest, with_drop>>);
    STATIC_REQUIRE(
        !snapshot_store<store_of<opted_in, has_bad_uow, with_save, with_latest, with_drop>>);
    // Each member missing, or of the wrong shape.
    STATIC_REQUIRE(!snapshot_store<store_of<opted_in, has_uow, with_latest, with_drop>>);
    STATIC_REQUIRE(!snapshot_store<
                   store_of<opted_in, has_uow, with_save_without_a_unit, with_latest, with_drop>>);
    STATIC_REQUIRE(!snapshot_store<
                   store_of<opted_in, has_uow, with_save_returning_bool, with_latest, with_drop>>);
    STATIC_REQUIRE(!snapshot_store<store_of<opted_in, has_uow, with_save, with_drop>>);
    STATIC_REQUIRE(!snapshot_store<
                   store_of<opted_in, has_uow, with_save, with_latest_without_a_time, with_drop>>);
    STATIC_REQUIRE(!snapshot_store<
                   store_of<opted_in, has_uow, with_save, with_latest_returning_all, with_drop>>);
    STATIC_REQUIRE(!snapshot_store<store_of<opted_in, has_uow, with_save, with_latest>>);
    STATIC_REQUIRE(
        !snapshot_store<
            store_of<opted_in, has_uow, with_save, with_latest, with_drop_returning_the_error>>);
}

} // namespace unit_concepts_snapshot_store
