// SPDX-License-Identifier: BSL-1.0
// What the saga_store conformance suite does not cover of the in-memory model: its fault
// injection, and a unit of work that spans it and the in-memory inbox. The suite runs on it in
// tests/conformance/in_memory_stores.cpp.

#include <letterbox/saga/in_memory_saga_store.hpp>

#include <letterbox/error.hpp>
#include <letterbox/in_memory_unit_of_work.hpp>
#include <letterbox/inbox/in_memory_inbox_store.hpp>
#include <letterbox/message.hpp>

#include <catch2/catch.hpp>

#include <system_error>

namespace unit_saga_in_memory_saga_store {

namespace {

letterbox::saga_instance instance(std::string id, std::string correlation) {
    return {.saga_type = "order", .id = std::move(id), .correlation = std::move(correlation)};
}

} // namespace

TEST_CASE("in_memory_saga_store: an injected fault fails one operation with no effect",
          "[saga_store][in_memory]") {
    letterbox::in_memory_saga_store store;
    store.fail_nth(0, letterbox::errc::store_io_error);
    letterbox::in_memory_unit_of_work u;
    CHECK(store.insert(u, instance("s-1", "order-1")) == letterbox::errc::store_io_error);
    REQUIRE_FALSE(store.insert(u, instance("s-1", "order-1"))); // nothing was staged
    // The commit counts as an operation of the store: failing it applies nothing.
    store.fail_nth(0, letterbox::errc::store_busy);
    CHECK(u.commit() == letterbox::errc::store_busy);
    std::error_code ec;
    CHECK_FALSE(store.find("order", "s-1", ec));
    store.fail_nth(0, letterbox::errc::store_io_error);
    CHECK(store.size(ec) == 0);
    CHECK(ec == letterbox::errc::store_io_error);
    CHECK(store.size(ec) == 0);
    CHECK_FALSE(ec);
    CHECK(store.operation_count() == 6);
}

TEST_CASE("in_memory_saga_store: a step's saga write and inbox record commit together or not "
          "at all",
          "[saga_store][in_memory]") {
    letterbox::in_memory_saga_store sagas;
    letterbox::in_memory_inbox_store inbox;
    letterbox::message_id_generator ids{9};
    const auto reply = ids();
    {
        letterbox::in_memory_unit_of_work u;
        REQUIRE_FALSE(sagas.insert(u, instance("s-1", "order-1")));
        REQUIRE_FALSE(u.commit());
    }
    std::error_code ec;
    const auto read = sagas.find("order", "s-1", ec);
    REQUIRE(read);
    // A stale writer moved first: the step's unit fails at commit, and its inbox record goes
    // with it, so the reply counts as new when it is redelivered.
    auto step = *read;
    step.state = "paid";
    letterbox::in_memory_unit_of_work u;
    REQUIRE_FALSE(inbox.try_record(u, "orders-saga", reply, {}));
    REQUIRE_FALSE(sagas.update(u, step));
    {
        auto other = *read;
        other.state = "cancelled";
        letterbox::in_memory_unit_of_work v;
        REQUIRE_FALSE(sagas.update(v, other));
        REQUIRE_FALSE(v.commit());
    }
    CHECK(u.commit() == letterbox::errc::concurrency_conflict);
    CHECK_FALSE(inbox.contains("orders-saga", reply, ec));
    CHECK(sagas.find("order", "s-1", ec)->state == "cancelled");
}

} // namespace unit_saga_in_memory_saga_store
