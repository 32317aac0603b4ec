// SPDX-License-Identifier: BSL-1.0

#include <letterbox/sqlite/inbox_store.hpp>

#include <letterbox/sqlite/database.hpp>

#include "unit/sqlite/temp_directory.hpp"

#include <catch2/catch.hpp>

#include <chrono>
#include <latch>
#include <string>
#include <system_error>
#include <thread>

namespace unit_sqlite_inbox_store {

static_assert(letterbox::inbox_store<letterbox::sqlite::inbox_store>);

namespace {

using namespace std::string_literals;
using letterbox::errc;
using letterbox::sqlite::database;
using letterbox_sqlite_test::t0;
using letterbox_sqlite_test::temp_directory;

} // namespace

TEST_CASE("sqlite inbox_store: two database objects on one file record a key exactly once",
          "[sqlite][inbox_store][threads]") {
    temp_directory dir;
    // Two consumers, as two processes would: each its own database object and pool.
    auto first = database::open(dir.file("inbox.db"));
    auto second = database::open(dir.file("inbox.db"));
    letterbox::sqlite::inbox_store inboxes[2] = {letterbox::sqlite::inbox_store(first),
                                                 letterbox::sqlite::inbox_store(second)};
    database* dbs[2] = {&first, &second};
    letterbox::message_id_generator ids{31};

    constexpr int rounds = 40;
    int committed[2] = {0, 0};
    int duplicates[2] = {0, 0};
    int errors = 0;
    for (int round = 0; round < rounds; ++round) {
        const auto id = ids();
        std::latch start(2);
        std::string outcome[2];
        auto consume = [&](int who) {
            start.arrive_and_wait();
            std::error_code ec;
            auto uow = dbs[who]->begin(ec);
            if (ec) {
                outcome[who] = "begin: " + ec.message();
                return;
            }
            const auto recorded = inboxes[who].try_record(uow, "billing", id, t0());
            if (recorded == errc::already_processed) {
                outcome[who] = "duplicate";
                return; // the unit rolls back
            }
            if (recorded) {
                outcome[who] = "try_record: " + recorded.message();
                return;
            }
            const auto c = uow.commit();
            outcome[who] = c ? "commit: " + c.message() : "committed";
        };
        std::thread a(consume, 0);
        std::thread b(consume, 1);
        a.join();
        b.join();
        INFO("round " << round << ": " << outcome[0] << " / " << outcome[1]);
        for (int who = 0; who < 2; ++who) {
            committed[who] += outcome[who] == "committed";
            duplicates[who] += outcome[who] == "duplicate";
            errors += outcome[who] != "committed" && outcome[who] != "duplicate";
        }
        REQUIRE(errors == 0);
        REQUIRE((outcome[0] == "committed") != (outcome[1] == "committed"));
    }
    CHECK(committed[0] + committed[1] == rounds);
    CHECK(duplicates[0] + duplicates[1] == rounds);
    std::error_code ec;
    CHECK(inboxes[0].size(ec) == rounds);
    CHECK(inboxes[1].size(ec) == rounds);
}

TEST_CASE("sqlite inbox_store keeps its records across a reopen", "[sqlite][inbox_store]") {
    temp_directory dir;
    letterbox::message_id_generator ids{32};
    const auto id = ids();
    const auto consumer = "consumer \0 with NUL \xff"s;
    {
        auto db = database::open(dir.file("inbox.db"));
        letterbox::sqlite::inbox_store inbox(db);
        auto uow = db.begin();
        REQUIRE_FALSE(inbox.try_record(uow, consumer, id, t0()));
        REQUIRE_FALSE(uow.commit());
    }
    auto db = database::open(dir.file("inbox.db"));
    letterbox::sqlite::inbox_store inbox(db);
    std::error_code ec;
    CHECK(inbox.contains(consumer, id, ec));
    CHECK_FALSE(inbox.contains("consumer ", id, ec)); // the whole id counts, NUL and all
    auto uow = db.begin();
    CHECK(inbox.try_record(uow, consumer, id, t0()) == errc::already_processed);
    CHECK(uow.is_open()); // still usable
    REQUIRE_FALSE(uow.rollback());
}

TEST_CASE("sqlite inbox_store on a database that failed to open reports closed",
          "[sqlite][inbox_store]") {
    temp_directory dir;
    std::error_code ec;
    auto db = database::open(dir.file("no/such/dir.db"), {}, ec);
    REQUIRE(ec);
    letterbox::sqlite::inbox_store inbox(db);
    letterbox::sqlite::unit_of_work uow;
    letterbox::message_id_generator ids{33};
    CHECK(inbox.try_record(uow, "c", ids(), t0()) == errc::closed);
    CHECK_FALSE(inbox.contains("c", ids(), ec));
    CHECK(ec == errc::closed);
    CHECK(inbox.size(ec) == 0);
    CHECK(ec == errc::closed);
    CHECK(inbox.purge(t0(), ec) == 0);
    CHECK(ec == errc::closed);
}

TEST_CASE("sqlite inbox_store begins units on its database, keeps records 7 days by default and "
          "purges older ones itself",
          "[sqlite][inbox_store]") {
    temp_directory dir;
    auto db = database::open(dir.file("inbox.db"));
    CHECK(letterbox::sqlite::inbox_store(db).retention() == std::chrono::hours(24 * 7));

    letterbox::sqlite::inbox_store inbox(
        db, {.keep = std::chrono::hours(1), .purge_every = std::chrono::minutes(10)});
    CHECK(inbox.retention() == std::chrono::hours(1));
    letterbox::message_id_generator ids{41};
    const letterbox::store_time start = t0();
    const auto old = ids();
    {
        auto uow = inbox.begin();
        REQUIRE_FALSE(inbox.try_record(uow, "c", old, start));
        REQUIRE_FALSE(uow.commit());
    }
    std::error_code ec;
    CHECK(inbox.purge_expired(start, ec) == 0); // the first call starts the period
    CHECK_FALSE(ec);
    CHECK(inbox.purge_expired(start + std::chrono::hours(2), ec) == 1);
    CHECK_FALSE(ec);
    CHECK_FALSE(inbox.contains("c", old, ec));

    const auto recent = ids();
    {
        auto uow = inbox.begin();
        REQUIRE_FALSE(inbox.try_record(uow, "c", recent, start + std::chrono::hours(2)));
        REQUIRE_FALSE(uow.commit());
    }
    // Not due again before ten minutes, and then only what is older than an hour goes.
    CHECK(inbox.purge_expired(start + std::chrono::hours(2) + std::chrono::minutes(5), ec) == 0);
    CHECK(inbox.purge_expired(start + std::chrono::hours(2) + std::chrono::minutes(30), ec) == 0);
    CHECK(inbox.contains("c", recent, ec));
    CHECK(inbox.size(ec) == 1);
}

} // namespace unit_sqlite_inbox_store
