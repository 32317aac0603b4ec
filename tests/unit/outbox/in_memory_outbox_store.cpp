// SPDX-License-Identifier: BSL-1.0

#include <letterbox/outbox/in_memory_outbox_store.hpp>

#include <letterbox/inbox/in_memory_inbox_store.hpp>

#include <catch2/catch.hpp>

#include <chrono>
#include <cstddef>
#include <span>
#include <string>
#include <system_error>
#include <vector>

namespace unit_outbox_in_memory_outbox_store {

static_assert(letterbox::outbox_store<letterbox::in_memory_outbox_store>);
static_assert(letterbox::outbox_batch_settler<letterbox::in_memory_outbox_store>);

namespace {

using namespace std::chrono_literals;
using letterbox::errc;

letterbox::store_time t0() {
    return letterbox::store_time{std::chrono::sys_days{std::chrono::year{2024} / 1 / 1}};
}

letterbox::outbox_entry entry(letterbox::message_id_generator& ids, std::string aggregate_id) {
    letterbox::outbox_entry e;
    e.msg.id = ids();
    e.msg.type = "order.created";
    e.aggregate_type = "order";
    e.aggregate_id = std::move(aggregate_id);
    return e;
}

} // namespace

TEST_CASE("in_memory_outbox_store fails the n-th operation once, with no effect",
          "[outbox][in_memory_outbox_store]") {
    letterbox::in_memory_outbox_store store;
    letterbox::message_id_generator ids{1};
    const auto e = entry(ids, "1");
    {
        letterbox::in_memory_unit_of_work uow;
        REQUIRE_FALSE(store.add(uow, e, t0()));
        REQUIRE_FALSE(uow.commit());
    }
    const auto before = store.operation_count();
    store.fail_nth(1, errc::timed_out);

    std::error_code ec;
    CHECK(store.stats(t0(), ec).pending == 1); // operation 0 succeeds
    CHECK_FALSE(ec);
    CHECK(store.claim("relay", 10, 30s, t0(), ec).empty()); // operation 1 fails
    CHECK(ec == errc::timed_out);
    CHECK(store.find(e.msg.id, ec)->lease_owner.empty());       // and claimed nothing
    CHECK(store.claim("relay", 10, 30s, t0(), ec).size() == 1); // only once
    CHECK_FALSE(ec);
    CHECK(store.operation_count() == before + 4);
}

TEST_CASE("in_memory_outbox_store counts a commit that wrote to it as one operation",
          "[outbox][in_memory_outbox_store]") {
    letterbox::in_memory_outbox_store outbox;
    letterbox::in_memory_inbox_store inbox;
    letterbox::message_id_generator ids{2};
    const auto e = entry(ids, "1");

    letterbox::in_memory_unit_of_work uow;
    REQUIRE_FALSE(inbox.try_record(uow, "billing", e.msg.id, t0()));
    REQUIRE_FALSE(outbox.add(uow, e, t0()));
    outbox.fail_nth(0, errc::internal_error); // the commit
    CHECK(uow.commit() == errc::internal_error);

    std::error_code ec;
    CHECK_FALSE(outbox.find(e.msg.id, ec).has_value());
    CHECK_FALSE(inbox.contains("billing", e.msg.id, ec)); // nothing applied anywhere
}

TEST_CASE("in_memory_outbox_store survives a fault at every operation of a publish cycle",
          "[outbox][in_memory_outbox_store]") {
    // Beast's fault matrix: for n = 0, 1, ..., fail operation n of a small relay cycle that
    // retries each step; the row must end published exactly once.
    letterbox::message_id_generator ids{3};
    for (std::size_t n = 0;; ++n) {
        INFO("failing operation " << n);
        letterbox::in_memory_outbox_store store;
        const auto e = entry(ids, "1");
        store.fail_nth(n, errc::internal_error);
        int failures = 0;
        for (;;) {
            letterbox::in_memory_unit_of_work uow;
            if (!store.add(uow, e, t0()) && !uow.commit())
                break;
            ++failures;
        }
        std::error_code ec;
        int marks = 0;
        while (marks == 0) {
            auto batch = store.claim("relay", 10, 30s, t0(), ec);
            failures += ec ? 1 : 0;
            for (const auto& r : batch) {
                // After a failed mark the lease is still ours: mark again.
                while (store.mark_published(r.msg.id, "relay", t0()))
                    ++failures;
                ++marks;
            }
        }
        CHECK(marks == 1);
        const auto stats = store.stats(t0(), ec);
        failures += ec ? 1 : 0;
        if (!ec)
            CHECK(stats.published == 1);
        if (failures == 0)
            break; // n is past the last operation: every position has been tried
        CHECK(failures == 1);
    }
}

TEST_CASE("in_memory_outbox_store refuses a nil message id and an empty lease owner",
          "[outbox][in_memory_outbox_store]") {
    letterbox::in_memory_outbox_store store;
    letterbox::in_memory_unit_of_work uow;
    letterbox::outbox_entry nil_id;
    CHECK(store.add(uow, nil_id, t0()) == errc::precondition_failed);
    std::error_code ec;
    CHECK(store.claim("", 10, 30s, t0(), ec).empty());
    CHECK(ec == errc::precondition_failed);
}

TEST_CASE("in_memory_outbox_store assigns sequences in commit order",
          "[outbox][in_memory_outbox_store]") {
    letterbox::in_memory_outbox_store store;
    letterbox::message_id_generator ids{4};
    const auto first_added = entry(ids, "");
    const auto second_added = entry(ids, "");
    letterbox::in_memory_unit_of_work u1;
    letterbox::in_memory_unit_of_work u2;
    REQUIRE_FALSE(store.add(u1, first_added, t0()));
    REQUIRE_FALSE(store.add(u2, second_added, t0()));
    REQUIRE_FALSE(u2.commit());
    REQUIRE_FALSE(u1.commit());

    // A relay never sees a row appear behind one it may already have published.
    std::error_code ec;
    const auto batch = store.claim("relay", 10, 30s, t0(), ec);
    REQUIRE(batch.size() == 2);
    CHECK(batch[0].msg.id == second_added.msg.id);
    CHECK(batch[1].msg.id == first_added.msg.id);
    CHECK(batch[0].sequence < batch[1].sequence);
}

TEST_CASE("in_memory_outbox_store marks a batch as one operation, a fault fails all of it",
          "[outbox][in_memory_outbox_store]") {
    letterbox::in_memory_outbox_store store;
    letterbox::message_id_generator ids{5};
    std::vector<letterbox::message_id> batch;
    {
        letterbox::in_memory_unit_of_work uow;
        for (int i = 0; i < 5; ++i) {
            const auto e = entry(ids, "");
            REQUIRE_FALSE(store.add(uow, e, t0()));
            batch.push_back(e.msg.id);
        }
        REQUIRE_FALSE(uow.commit());
    }
    std::error_code ec;
    REQUIRE(store.claim("relay", 10, 30s, t0(), ec).size() == 5);
    REQUIRE_FALSE(ec);
    batch.push_back(ids()); // unknown

    // An injected fault: the whole batch fails, every result is the fault, nothing changed.
    std::vector<std::error_code> results;
    auto before = store.operation_count();
    store.fail_nth(0, errc::timed_out);
    CHECK(store.mark_published(std::span<const letterbox::message_id>(batch), "relay", t0() + 1s,
                               results) == errc::timed_out);
    CHECK(store.operation_count() == before + 1);
    REQUIRE(results.size() == batch.size());
    for (const auto& r : results)
        CHECK(r == errc::timed_out);
    CHECK(store.stats(t0(), ec).published == 0);
    CHECK(store.find(batch[0], ec)->lease_owner == "relay");

    // Again: one operation for six rows.
    before = store.operation_count();
    CHECK_FALSE(store.mark_published(std::span<const letterbox::message_id>(batch), "relay",
                                     t0() + 1s, results));
    CHECK(store.operation_count() == before + 1);
    REQUIRE(results.size() == batch.size());
    for (std::size_t i = 0; i < 5; ++i) {
        CHECK_FALSE(results[i]);
        const auto row = store.find(batch[i], ec);
        REQUIRE(row);
        CHECK(row->status == letterbox::outbox_status::published);
        CHECK(row->published_at == t0() + 1s);
        CHECK(row->lease_owner.empty());
    }
    CHECK(results[5] == errc::record_not_found);

    // Settled rows are no longer the owner's to mark.
    CHECK_FALSE(store.mark_published(std::span<const letterbox::message_id>(batch).first(2),
                                     "relay", t0() + 2s, results));
    REQUIRE(results.size() == 2);
    CHECK(results[0] == errc::lease_lost);
    CHECK(results[1] == errc::lease_lost);
    CHECK(store.find(batch[0], ec)->published_at == t0() + 1s);
}

} // namespace unit_outbox_in_memory_outbox_store
