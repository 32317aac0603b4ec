// SPDX-License-Identifier: BSL-1.0

#include <letterbox/inbox/in_memory_inbox_store.hpp>

#include <catch2/catch.hpp>

#include <chrono>

namespace unit_inbox_in_memory_inbox_store {

static_assert(letterbox::inbox_store<letterbox::in_memory_inbox_store>);

namespace {

using letterbox::errc;

letterbox::store_time t0() {
    return letterbox::store_time{std::chrono::sys_days{std::chrono::year{2024} / 1 / 1}};
}

} // namespace

TEST_CASE("in_memory_inbox_store fails the n-th operation once, with no effect",
          "[inbox][in_memory_inbox_store]") {
    letterbox::in_memory_inbox_store store;
    letterbox::message_id_generator ids{1};
    const auto id = ids();
    store.fail_nth(0, errc::timed_out);

    letterbox::in_memory_unit_of_work uow;
    CHECK(store.try_record(uow, "billing", id, t0()) == errc::timed_out);
    CHECK(uow.staged() == 0);
    CHECK_FALSE(store.try_record(uow, "billing", id, t0())); // only once
    CHECK_FALSE(uow.commit());
    std::error_code ec;
    CHECK(store.contains("billing", id, ec));
    CHECK(store.operation_count() == 4); // two try_record, one commit, one contains
}

TEST_CASE("in_memory_inbox_store counts a commit that wrote to it as one operation",
          "[inbox][in_memory_inbox_store]") {
    letterbox::in_memory_inbox_store store;
    letterbox::message_id_generator ids{2};
    const auto id = ids();
    letterbox::in_memory_unit_of_work uow;
    REQUIRE_FALSE(store.try_record(uow, "billing", id, t0()));
    store.fail_nth(0, errc::internal_error);
    CHECK(uow.commit() == errc::internal_error);

    std::error_code ec;
    CHECK_FALSE(store.contains("billing", id, ec));
    CHECK(store.size(ec) == 0);
    // The failed unit is finished; the delivery is retried in a new one.
    letterbox::in_memory_unit_of_work retry;
    CHECK_FALSE(store.try_record(retry, "billing", id, t0()));
    CHECK_FALSE(retry.commit());
    CHECK(store.contains("billing", id, ec));
}

TEST_CASE("in_memory_inbox_store reports an injected error from its reads",
          "[inbox][in_memory_inbox_store]") {
    letterbox::in_memory_inbox_store store;
    letterbox::message_id_generator ids{3};
    std::error_code ec;
    store.fail_nth(0, errc::timed_out);
    CHECK_FALSE(store.contains("billing", ids(), ec));
    CHECK(ec == errc::timed_out);
    store.fail_nth(0, errc::timed_out);
    CHECK(store.size(ec) == 0);
    CHECK(ec == errc::timed_out);
    store.fail_nth(0, errc::timed_out);
    CHECK(store.purge(t0(), ec) == 0);
    CHECK(ec == errc::timed_out);
    CHECK(store.size(ec) == 0);
    CHECK_FALSE(ec);
}

} // namespace unit_inbox_in_memory_inbox_store
