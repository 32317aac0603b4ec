// SPDX-License-Identifier: BSL-1.0
// Near misses: each clause of saga_store is necessary. Every type below has all the parts of a
// model but one, and the concept must reject it.

#include <letterbox/concepts/saga_store.hpp>

#include "unit/concepts/store_parts.hpp"

#include <catch2/catch.hpp>

#include <cstddef>
#include <functional>
#include <optional>
#include <string_view>
#include <system_error>
#include <vector>

namespace unit_concepts_saga_store {

namespace {

using letterbox::saga_instance;
using letterbox::saga_timeout_due;
using letterbox::store_time;

using unit_concepts_store_parts::has_bad_uow;
using unit_concepts_store_parts::has_uow;
using unit_concepts_store_parts::store_of;
using unit_concepts_store_parts::uow;

// One part per clause; a store is the sum of its parts.
struct opted_in {
    using saga_store_concept = letterbox::saga_store_tag;
};
struct opted_in_elsewhere {
    struct other_tag {};
    using saga_store_concept = other_tag;
};
struct with_insert {
    std::error_code insert(uow&, const saga_instance&) { return {}; }
};
struct with_insert_returning_bool {
    bool insert(uow&, const saga_instance&) { return {}; }
};
struct with_update {
    std::error_code update(uow&, const saga_instance&) { return {}; }
};
struct with_update_taking_a_version {
    std::error_code update(uow&, const saga_instance&, std::uint64_t) { return {}; }
};
struct with_find {
    std::optional<saga_instance> find(std::string_view, std::string_view, std::error_code&) {
        return {};
    }
};
struct with_find_returning_a_pointer {
    const saga_instance* find(std::string_view, std::string_view, std::error_code&) { return {}; }
};
struct with_find_by_correlation {
    std::optional<saga_instance> find_by_correlation(std::string_view, std::string_view,
                                                     std::error_code&) {
        return {};
    }
};
struct with_size {
    std::size_t size(std::error_code&) { return {}; }
};
struct with_due_timeouts {
    std::vector<saga_timeout_due> due_timeouts(store_time, std::size_t, std::error_code&) {
        return {};
    }
};
struct with_purge_finished {
    std::size_t purge_finished(store_time, std::error_code&) { return {}; }
};

} // namespace

TEST_CASE("a type with the saga_store tag and every member is a saga_store",
          "[concepts][saga_store]") {
    STATIC_REQUIRE(
        letterbox::saga_store<
            store_of<opted_in, has_uow, with_insert, with_update, with_find,
                     with_find_by_correlation, with_size, with_due_timeouts, with_purge_finished>>);
}

TEST_CASE("a type that misses one clause of saga_store is not a saga_store",
          "[concepts][saga_store]") {
    // No opt-in, or an unrelated tag.
    STATIC_REQUIRE(!letterbox::saga_store<
                   store_of<has_uow, with_insert, with_update, with_find, with_find_by_correlation,
                            with_size, with_due_timeouts, with_purge_finished>>);
    STATIC_REQUIRE(
        !letterbox::saga_store<
            store_of<opted_in_elsewhere, has_uow, with_insert, with_update, with_find,
                     with_find_by_correlation, with_size, with_due_timeouts, with_purge_finished>>);
    // No unit of work, or one that is not a unit_of_work.
    STATIC_REQUIRE(!letterbox::saga_store<
                   store_of<opted_in, with_insert, with_update, with_find, with_find_by_correlation,
                            with_size, with_due_timeouts, with_purge_finished>>);
    STATIC_REQUIRE(
        !letterbox::saga_store<
            store_of<opted_in, has_bad_uow, with_insert, with_update, with_find,
                     with_find_by_correlation, with_size, with_due_timeouts, with_purge_finished>>);
    // Each member missing, or of the wrong shape.
    STATIC_REQUIRE(!letterbox::saga_store<
                   store_of<opted_in, has_uow, with_update, with_find, with_find_by_correlation,
                            with_size, with_due_timeouts, with_purge_finished>>);
    STATIC_REQUIRE(
        !letterbox::saga_store<
            store_of<opted_in, has_uow, with_insert_returning_bool, with_update, with_find,
                     with_find_by_correlation, with_size, with_due_timeouts, with_purge_finished>>);
    STATIC_REQUIRE(!letterbox::saga_store<
                   store_of<opted_in, has_uow, with_insert, with_find, with_find_by_correlation,
                            with_size, with_due_timeouts, with_purge_finished>>);
    STATIC_REQUIRE(
        !letterbox::saga_store<
            store_of<opted_in, has_uow, with_insert, with_update_taking_a_version, with_find,
                     with_find_by_correlation, with_size, with_due_timeouts, with_purge_finished>>);
    STATIC_REQUIRE(!letterbox::saga_store<
                   store_of<opted_in, has_uow, with_insert, with_update, with_find_by_correlation,
                            with_size, with_due_timeouts, with_purge_finished>>);
    STATIC_REQUIRE(
        !letterbox::saga_store<
            store_of<opted_in, has_uow, with_insert, with_update, with_find_returning_a_pointer,
                     with_find_by_correlation, with_size, with_due_timeouts, with_purge_finished>>);
    STATIC_REQUIRE(
        !letterbox::saga_store<store_of<opted_in, has_uow, with_insert, with_update, with_find,
                                        with_size, with_due_timeouts, with_purge_finished>>);
    STATIC_REQUIRE(!letterbox::saga_store<
                   store_of<opted_in, has_uow, with_insert, with_update, with_find,
                            with_find_by_correlation, with_due_timeouts, with_purge_finished>>);
    STATIC_REQUIRE(
        !letterbox::saga_store<store_of<opted_in, has_uow, with_insert, with_update, with_find,
                                        with_find_by_correlation, with_size, with_purge_finished>>);
    STATIC_REQUIRE(
        !letterbox::saga_store<store_of<opted_in, has_uow, with_insert, with_update, with_find,
                                        with_find_by_correlation, with_size, with_due_timeouts>>);
}

} // namespace unit_concepts_saga_store
