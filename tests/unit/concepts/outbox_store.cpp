// SPDX-License-Identifier: BSL-1.0
// Near misses: each clause of outbox_store is necessary. Every type below has all the parts of
// a model but one, and the concept must reject it.

#include <letterbox/concepts/outbox_store.hpp>

#include "unit/concepts/store_parts.hpp"

#include <catch2/catch.hpp>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string_view>
#include <system_error>
#include <vector>

namespace unit_concepts_outbox_store {

namespace {

using letterbox::message_id;
using letterbox::outbox_entry;
using letterbox::outbox_query;
using letterbox::outbox_record;
using letterbox::outbox_stats;
using letterbox::store_time;

using unit_concepts_store_parts::has_bad_uow;
using unit_concepts_store_parts::has_uow;
using unit_concepts_store_parts::store_of;
using unit_concepts_store_parts::uow;

// One part per clause; a store is the sum of its parts.
struct opted_in {
    using outbox_store_concept = letterbox::outbox_store_tag;
};
struct opted_in_elsewhere {
    struct other_tag {};
    using outbox_store_concept = other_tag;
};
struct with_add {
    std::error_code add(uow&, const outbox_entry&, store_time) { return {}; }
};
struct with_add_without_time {
    std::error_code add(uow&, const outbox_entry&) { return {}; }
};
struct with_claim {
    std::vector<outbox_record> claim(std::string_view, std::size_t, store_time::duration,
                                     store_time, std::error_code&) {
        return {};
    }
};
struct with_claim_without_error {
    std::vector<outbox_record> claim(std::string_view, std::size_t, store_time::duration,
                                     store_time) {
        return {};
    }
};
struct with_release {
    std::size_t release_expired_leases(store_time, std::error_code&) { return {}; }
};
struct with_mark_published {
    std::error_code mark_published(const message_id&, std::string_view, store_time) { return {}; }
};
struct with_record_failure {
    std::error_code record_failure(const message_id&, std::string_view, std::string_view,
                                   store_time, std::uint32_t, store_time) {
        return {};
    }
};
struct with_park {
    std::error_code park(const message_id&, std::string_view) { return {}; }
};
struct with_unpark {
    std::error_code unpark(const message_id&, store_time) { return {}; }
};
struct with_purge {
    std::size_t purge_published(store_time, std::error_code&) { return {}; }
};
struct with_find {
    std::optional<outbox_record> find(const message_id&, std::error_code&) { return {}; }
};
struct with_list {
    std::vector<outbox_record> list(const outbox_query&, std::error_code&) { return {}; }
};
struct with_stats {
    outbox_stats stats(store_time, std::error_code&) { return {}; }
};

using complete = store_of<opted_in, has_uow, with_add, with_claim, with_release,
                          with_mark_published, with_record_failure, with_park, with_unpark,
                          with_purge, with_find, with_list, with_stats>;

} // namespace

TEST_CASE("a type with the outbox_store tag and every member is an outbox_store",
          "[concepts][outbox_store]") {
    STATIC_REQUIRE(letterbox::outbox_store<complete>);
}

TEST_CASE("a type that does not opt in is not an outbox_store", "[concepts][outbox_store]") {
    using t = store_of<has_uow, with_add, with_claim, with_release, with_mark_published,
                       with_record_failure, with_park, with_unpark, with_purge, with_find,
                       with_list, with_stats>;
    STATIC_REQUIRE(!letterbox::outbox_store<t>);
}

TEST_CASE("a type opted in with an unrelated tag is not an outbox_store",
          "[concepts][outbox_store]") {
    using t = store_of<opted_in_elsewhere, has_uow, with_add, with_claim, with_release,
                       with_mark_published, with_record_failure, with_park, with_unpark, with_purge,
                       with_find, with_list, with_stats>;
    STATIC_REQUIRE(!letterbox::outbox_store<t>);
}

TEST_CASE("a type without unit_of_work_type is not an outbox_store", "[concepts][outbox_store]") {
    using t = store_of<opted_in, with_add, with_claim, with_release, with_mark_published,
                       with_record_failure, with_park, with_unpark, with_purge, with_find,
                       with_list, with_stats>;
    STATIC_REQUIRE(!letterbox::outbox_store<t>);
}

TEST_CASE("a type whose unit_of_work_type is not a unit_of_work is not an outbox_store",
          "[concepts][outbox_store]") {
    using t = store_of<opted_in, has_bad_uow, with_add, with_claim, with_release,
                       with_mark_published, with_record_failure, with_park, with_unpark, with_purge,
                       with_find, with_list, with_stats>;
    STATIC_REQUIRE(!letterbox::outbox_store<t>);
}

TEST_CASE("a type without add is not an outbox_store", "[concepts][outbox_store]") {
    using t = store_of<opted_in, has_uow, with_claim, with_release, with_mark_published,
                       with_record_failure, with_park, with_unpark, with_purge, with_find,
                       with_list, with_stats>;
    STATIC_REQUIRE(!letterbox::outbox_store<t>);
}

TEST_CASE("a type whose add takes no time is not an outbox_store", "[concepts][outbox_store]") {
    using t = store_of<opted_in, has_uow, with_add_without_time, with_claim, with_release,
                       with_mark_published, with_record_failure, with_park, with_unpark, with_purge,
                       with_find, with_list, with_stats>;
    STATIC_REQUIRE(!letterbox::outbox_store<t>);
}

TEST_CASE("a type without claim is not an outbox_store", "[concepts][outbox_store]") {
    using t = store_of<opted_in, has_uow, with_add, with_release, with_mark_published,
                       with_record_failure, with_park, with_unpark, with_purge, with_find,
                       with_list, with_stats>;
    STATIC_REQUIRE(!letterbox::outbox_store<t>);
}

TEST_CASE("a type whose claim reports no error is not an outbox_store",
          "[concepts][outbox_store]") {
    using t = store_of<opted_in, has_uow, with_add, with_claim_without_error, with_release,
                       with_mark_published, with_record_failure, with_park, with_unpark, with_purge,
                       with_find, with_list, with_stats>;
    STATIC_REQUIRE(!letterbox::outbox_store<t>);
}

TEST_CASE("a type without release_expired_leases is not an outbox_store",
          "[concepts][outbox_store]") {
    using t =
        store_of<opted_in, has_uow, with_add, with_claim, with_mark_published, with_record_failure,
                 with_park, with_unpark, with_purge, with_find, with_list, with_stats>;
    STATIC_REQUIRE(!letterbox::outbox_store<t>);
}

TEST_CASE("a type without mark_published is not an outbox_store", "[concepts][outbox_store]") {
    using t = store_of<opted_in, has_uow, with_add, with_claim, with_release, with_record_failure,
                       with_park, with_unpark, with_purge, with_find, with_list, with_stats>;
    STATIC_REQUIRE(!letterbox::outbox_store<t>);
}

TEST_CASE("a type without record_failure is not an outbox_store", "[concepts][outbox_store]") {
    using t = store_of<opted_in, has_uow, with_add, with_claim, with_release, with_mark_published,
                       with_park, with_unpark, with_purge, with_find, with_list, with_stats>;
    STATIC_REQUIRE(!letterbox::outbox_store<t>);
}

TEST_CASE("a type without park is not an outbox_store", "[concepts][outbox_store]") {
    using t =
        store_of<opted_in, has_uow, with_add, with_claim, with_release, with_mark_published,
                 with_record_failure, with_unpark, with_purge, with_find, with_list, with_stats>;
    STATIC_REQUIRE(!letterbox::outbox_store<t>);
}

TEST_CASE("a type without unpark is not an outbox_store", "[concepts][outbox_store]") {
    using t =
        store_of<opted_in, has_uow, with_add, with_claim, with_release, with_mark_published,
                 with_record_failure, with_park, with_purge, with_find, with_list, with_stats>;
    STATIC_REQUIRE(!letterbox::outbox_store<t>);
}

TEST_CASE("a type without purge_published is not an outbox_store", "[concepts][outbox_store]") {
    using t =
        store_of<opted_in, has_uow, with_add, with_claim, with_release, with_mark_published,
                 with_record_failure, with_park, with_unpark, with_find, with_list, with_stats>;
    STATIC_REQUIRE(!letterbox::outbox_store<t>);
}

TEST_CASE("a type without find is not an outbox_store", "[concepts][outbox_store]") {
    using t =
        store_of<opted_in, has_uow, with_add, with_claim, with_release, with_mark_published,
                 with_record_failure, with_park, with_unpark, with_purge, with_list, with_stats>;
    STATIC_REQUIRE(!letterbox::outbox_store<t>);
}

TEST_CASE("a type without list is not an outbox_store", "[concepts][outbox_store]") {
    using t =
        store_of<opted_in, has_uow, with_add, with_claim, with_release, with_mark_published,
                 with_record_failure, with_park, with_unpark, with_purge, with_find, with_stats>;
    STATIC_REQUIRE(!letterbox::outbox_store<t>);
}

TEST_CASE("a type without stats is not an outbox_store", "[concepts][outbox_store]") {
    using t =
        store_of<opted_in, has_uow, with_add, with_claim, with_release, with_mark_published,
                 with_record_failure, with_park, with_unpark, with_purge, with_find, with_list>;
    STATIC_REQUIRE(!letterbox::outbox_store<t>);
}

} // namespace unit_concepts_outbox_store
