// SPDX-License-Identifier: BSL-1.0
// Near misses: each clause of inbox_store is necessary. Every type below has all the parts of
// a model but one, and the concept must reject it.

#include <letterbox/concepts/inbox_store.hpp>

#include "unit/concepts/store_parts.hpp"

#include <catch2/catch.hpp>

#include <cstddef>
#include <functional>
#include <string_view>
#include <system_error>

namespace unit_concepts_inbox_store {

namespace {

using letterbox::message_id;
using letterbox::store_time;

using unit_concepts_store_parts::has_bad_uow;
using unit_concepts_store_parts::has_uow;
using unit_concepts_store_parts::store_of;
using unit_concepts_store_parts::uow;

// One part per clause; a store is the sum of its parts.
struct opted_in {
    using inbox_store_concept = letterbox::inbox_store_tag;
};
struct opted_in_elsewhere {
    struct other_tag {};
    using inbox_store_concept = other_tag;
};
struct with_try_record {
    std::error_code try_record(uow&, std::string_view, const message_id&, store_time) { return {}; }
};
struct with_try_record_returning_bool {
    bool try_record(uow&, std::string_view, const message_id&, store_time) { return {}; }
};
struct with_contains {
    bool contains(std::string_view, const message_id&, std::error_code&) { return {}; }
};
struct with_size {
    std::size_t size(std::error_code&) { return {}; }
};
struct with_purge {
    std::size_t purge(store_time, std::error_code&) { return {}; }
};

using complete = store_of<opted_in, has_uow, with_try_record, with_contains, with_size, with_purge>;

} // namespace

TEST_CASE("a type with the inbox_store tag and every member is an inbox_store",
          "[concepts][inbox_store]") {
    STATIC_REQUIRE(letterbox::inbox_store<complete>);
}

TEST_CASE("a type that does not opt in is not an inbox_store", "[concepts][inbox_store]") {
    STATIC_REQUIRE(!letterbox::inbox_store<
                   store_of<has_uow, with_try_record, with_contains, with_size, with_purge>>);
}

TEST_CASE("a type opted in with an unrelated tag is not an inbox_store",
          "[concepts][inbox_store]") {
    STATIC_REQUIRE(!letterbox::inbox_store<store_of<opted_in_elsewhere, has_uow, with_try_record,
                                                    with_contains, with_size, with_purge>>);
}

TEST_CASE("a type without unit_of_work_type is not an inbox_store", "[concepts][inbox_store]") {
    STATIC_REQUIRE(!letterbox::inbox_store<
                   store_of<opted_in, with_try_record, with_contains, with_size, with_purge>>);
}

TEST_CASE("a type whose unit_of_work_type is not a unit_of_work is not an inbox_store",
          "[concepts][inbox_store]") {
    STATIC_REQUIRE(!letterbox::inbox_store<store_of<opted_in, has_bad_uow, with_try_record,
                                                    with_contains, with_size, with_purge>>);
}

TEST_CASE("a type without try_record is not an inbox_store", "[concepts][inbox_store]") {
    STATIC_REQUIRE(
        !letterbox::inbox_store<store_of<opted_in, has_uow, with_contains, with_size, with_purge>>);
}

TEST_CASE("a type whose try_record returns no error_code is not an inbox_store",
          "[concepts][inbox_store]") {
    STATIC_REQUIRE(
        !letterbox::inbox_store<store_of<opted_in, has_uow, with_try_record_returning_bool,
                                         with_contains, with_size, with_purge>>);
}

TEST_CASE("a type without contains is not an inbox_store", "[concepts][inbox_store]") {
    STATIC_REQUIRE(!letterbox::inbox_store<
                   store_of<opted_in, has_uow, with_try_record, with_size, with_purge>>);
}

TEST_CASE("a type without size is not an inbox_store", "[concepts][inbox_store]") {
    STATIC_REQUIRE(!letterbox::inbox_store<
                   store_of<opted_in, has_uow, with_try_record, with_contains, with_purge>>);
}

TEST_CASE("a type without purge is not an inbox_store", "[concepts][inbox_store]") {
    STATIC_REQUIRE(!letterbox::inbox_store<
                   store_of<opted_in, has_uow, with_try_record, with_contains, with_size>>);
}

} // namespace unit_concepts_inbox_store
