// SPDX-License-Identifier: BSL-1.0

#include <letterbox/in_memory_unit_of_work.hpp>

#include <letterbox/concepts/unit_of_work.hpp>
#include <letterbox/inbox/in_memory_inbox_store.hpp>
#include <letterbox/outbox/in_memory_outbox_store.hpp>

#include <catch2/catch.hpp>

#include <chrono>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace unit_in_memory_unit_of_work {

static_assert(letterbox::unit_of_work<letterbox::in_memory_unit_of_work>);
static_assert(letterbox::savepoint_unit_of_work<letterbox::in_memory_unit_of_work>);

namespace {

using letterbox::errc;

letterbox::store_time t0() {
    return letterbox::store_time{std::chrono::sys_days{std::chrono::year{2024} / 1 / 1}};
}

letterbox::outbox_entry event(const letterbox::message_id& id) {
    letterbox::outbox_entry e;
    e.msg.id = id;
    e.msg.type = "payment.taken";
    return e;
}

} // namespace

TEST_CASE("in_memory_unit_of_work runs on_commit callbacks in order after commit",
          "[in_memory_unit_of_work]") {
    letterbox::in_memory_unit_of_work uow;
    std::vector<int> order;
    REQUIRE_FALSE(uow.on_commit([&] { order.push_back(1); }));
    REQUIRE_FALSE(uow.on_commit([&] { order.push_back(2); }));
    CHECK(order.empty());
    CHECK_FALSE(uow.commit()); // an empty unit commits
    CHECK(order == std::vector<int>{1, 2});
    CHECK_FALSE(uow.is_open());
}

TEST_CASE("in_memory_unit_of_work refuses a second commit and use after finishing",
          "[in_memory_unit_of_work]") {
    letterbox::in_memory_unit_of_work uow;
    REQUIRE_FALSE(uow.commit());
    CHECK(uow.commit() == errc::transaction_closed);
    CHECK(uow.rollback() == errc::transaction_closed);
    bool ran = false;
    CHECK(uow.on_commit([&] { ran = true; }) == errc::transaction_closed);
    CHECK_FALSE(ran);

    letterbox::in_memory_unit_of_work rolled;
    REQUIRE_FALSE(rolled.rollback());
    CHECK(rolled.rollback() == errc::transaction_closed);
    CHECK(rolled.commit() == errc::transaction_closed);
}

TEST_CASE("in_memory_unit_of_work spans the inbox and the outbox, all or nothing",
          "[in_memory_unit_of_work]") {
    letterbox::in_memory_inbox_store inbox;
    letterbox::in_memory_outbox_store outbox;
    letterbox::message_id_generator ids{1};
    const auto incoming = ids();
    const auto outgoing_1 = ids();
    const auto outgoing_2 = ids();
    std::error_code ec;

    // Two deliveries of one message, handled in overlapping units.
    letterbox::in_memory_unit_of_work first;
    letterbox::in_memory_unit_of_work second;
    REQUIRE_FALSE(inbox.try_record(first, "billing", incoming, t0()));
    REQUIRE_FALSE(outbox.add(first, event(outgoing_1), t0()));
    REQUIRE_FALSE(inbox.try_record(second, "billing", incoming, t0()));
    REQUIRE_FALSE(outbox.add(second, event(outgoing_2), t0()));
    bool second_woke = false;
    REQUIRE_FALSE(second.on_commit([&] { second_woke = true; }));

    REQUIRE_FALSE(first.commit());
    CHECK(second.commit() == errc::already_processed);
    CHECK_FALSE(second_woke);
    CHECK(outbox.find(outgoing_1, ec).has_value());
    CHECK_FALSE(outbox.find(outgoing_2, ec).has_value()); // no effect from the duplicate
    CHECK(inbox.size(ec) == 1);
}

TEST_CASE("in_memory_unit_of_work rolls back when destroyed or replaced unfinished",
          "[in_memory_unit_of_work]") {
    letterbox::in_memory_inbox_store inbox;
    letterbox::message_id_generator ids{2};
    const auto a = ids();
    const auto b = ids();
    std::error_code ec;
    {
        letterbox::in_memory_unit_of_work uow;
        REQUIRE_FALSE(inbox.try_record(uow, "billing", a, t0()));
    }
    CHECK(inbox.size(ec) == 0);

    letterbox::in_memory_unit_of_work target;
    REQUIRE_FALSE(inbox.try_record(target, "billing", a, t0()));
    letterbox::in_memory_unit_of_work source;
    REQUIRE_FALSE(inbox.try_record(source, "billing", b, t0()));
    target = std::move(source); // target's record of `a` is rolled back
    CHECK(source.commit() == errc::transaction_closed);
    REQUIRE_FALSE(target.commit());
    CHECK_FALSE(inbox.contains("billing", a, ec));
    CHECK(inbox.contains("billing", b, ec));
}

TEST_CASE("in_memory_unit_of_work hands its writes to the unit it is moved into",
          "[in_memory_unit_of_work]") {
    letterbox::in_memory_inbox_store inbox;
    letterbox::message_id_generator ids{3};
    const auto id = ids();
    letterbox::in_memory_unit_of_work original;
    REQUIRE_FALSE(inbox.try_record(original, "billing", id, t0()));
    int woke = 0;
    REQUIRE_FALSE(original.on_commit([&] { ++woke; }));

    letterbox::in_memory_unit_of_work moved(std::move(original));
    CHECK_FALSE(original.is_open());
    CHECK(original.commit() == errc::transaction_closed);
    CHECK(moved.staged() == 1);
    REQUIRE_FALSE(moved.commit());
    CHECK(woke == 1);
    std::error_code ec;
    CHECK(inbox.contains("billing", id, ec));
}

TEST_CASE("in_memory_unit_of_work lets a callback's exception escape after applying the writes",
          "[in_memory_unit_of_work]") {
    letterbox::in_memory_inbox_store inbox;
    letterbox::message_id_generator ids{4};
    const auto id = ids();
    letterbox::in_memory_unit_of_work uow;
    REQUIRE_FALSE(inbox.try_record(uow, "billing", id, t0()));
    bool later_ran = false;
    REQUIRE_FALSE(uow.on_commit([] { throw std::runtime_error("wake failed"); }));
    REQUIRE_FALSE(uow.on_commit([&] { later_ran = true; }));
    CHECK_THROWS_AS(uow.commit(), std::runtime_error);
    CHECK_FALSE(later_ran);
    std::error_code ec;
    CHECK(inbox.contains("billing", id, ec));
    CHECK(uow.commit() == errc::transaction_closed);
}

TEST_CASE("in_memory_unit_of_work commits spanning two stores concurrently without deadlock",
          "[in_memory_unit_of_work][threads]") {
    // The two threads stage into the stores in opposite orders; commits lock by address.
    letterbox::in_memory_inbox_store inbox;
    letterbox::in_memory_outbox_store outbox;
    constexpr int rounds = 500;
    auto worker = [&](std::uint64_t seed, bool inbox_first) {
        letterbox::message_id_generator ids{seed};
        for (int i = 0; i < rounds; ++i) {
            letterbox::in_memory_unit_of_work uow;
            const auto id = ids();
            if (inbox_first) {
                (void)inbox.try_record(uow, "c", id, t0());
                (void)outbox.add(uow, event(id), t0());
            } else {
                (void)outbox.add(uow, event(id), t0());
                (void)inbox.try_record(uow, "c", id, t0());
            }
            (void)uow.commit();
        }
    };
    std::thread a(worker, 10, true);
    std::thread b(worker, 20, false);
    a.join();
    b.join();
    std::error_code ec;
    CHECK(inbox.size(ec) == 2 * rounds);
    CHECK(outbox.stats(t0(), ec).pending == 2 * rounds);
}

TEST_CASE("in_memory_unit_of_work savepoints keep or discard what was staged after them",
          "[in_memory_unit_of_work][savepoint]") {
    letterbox::in_memory_inbox_store inbox;
    letterbox::message_id_generator ids{3};
    const auto kept = ids();
    const auto dropped = ids();
    const auto released = ids();
    std::error_code ec;
    std::vector<int> ran;

    letterbox::in_memory_unit_of_work uow;
    CHECK(uow.release_savepoint() == errc::precondition_failed); // no mark yet
    CHECK(uow.rollback_to_savepoint() == errc::precondition_failed);
    REQUIRE_FALSE(inbox.try_record(uow, "billing", kept, t0()));
    REQUIRE_FALSE(uow.on_commit([&] { ran.push_back(1); }));

    REQUIRE_FALSE(uow.savepoint());
    REQUIRE_FALSE(inbox.try_record(uow, "billing", dropped, t0()));
    REQUIRE_FALSE(uow.on_commit([&] { ran.push_back(2); }));
    REQUIRE_FALSE(uow.rollback_to_savepoint());
    CHECK(uow.staged() == 1);
    // The discarded key counts as new again in this unit.
    CHECK_FALSE(inbox.try_record(uow, "billing", dropped, t0()));
    CHECK(uow.rollback_to_savepoint() == errc::precondition_failed); // the mark ended

    REQUIRE_FALSE(uow.savepoint());
    REQUIRE_FALSE(inbox.try_record(uow, "billing", released, t0()));
    REQUIRE_FALSE(uow.on_commit([&] { ran.push_back(3); }));
    REQUIRE_FALSE(uow.release_savepoint());
    REQUIRE_FALSE(uow.commit());

    CHECK(ran == std::vector<int>{1, 3});
    CHECK(inbox.contains("billing", kept, ec));
    CHECK(inbox.contains("billing", dropped, ec)); // staged again after the rollback
    CHECK(inbox.contains("billing", released, ec));
    CHECK(uow.savepoint() == errc::transaction_closed);
}

} // namespace unit_in_memory_unit_of_work
