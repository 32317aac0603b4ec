// SPDX-License-Identifier: BSL-1.0

#include <letterbox/sqlite/unit_of_work.hpp>

#include <letterbox/concepts/unit_of_work.hpp>
#include <letterbox/sqlite/database.hpp>
#include <letterbox/sqlite/inbox_store.hpp>
#include <letterbox/sqlite/outbox_store.hpp>

#include "unit/sqlite/temp_directory.hpp"

#include <catch2/catch.hpp>

#include <sqlite3.h>

#include <functional>
#include <stdexcept>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

namespace unit_sqlite_unit_of_work {

static_assert(letterbox::unit_of_work<letterbox::sqlite::unit_of_work>);
static_assert(letterbox::savepoint_unit_of_work<letterbox::sqlite::unit_of_work>);
static_assert(!std::is_copy_constructible_v<letterbox::sqlite::unit_of_work>);
static_assert(std::is_nothrow_move_constructible_v<letterbox::sqlite::unit_of_work>);

namespace {

using letterbox::errc;
using letterbox::sqlite::database;
using letterbox::sqlite::database_options;
using letterbox::sqlite::unit_of_work;
using letterbox_sqlite_test::t0;
using letterbox_sqlite_test::temp_directory;

/// A database with a business table `orders(id INTEGER PRIMARY KEY, note TEXT)`.
struct shop {
    temp_directory dir;
    database db;
    letterbox::sqlite::outbox_store outbox;
    letterbox::message_id_generator ids{11};

    explicit shop(database_options options = {})
        : db(open(dir, std::move(options)))
        , outbox(db) {}

    static database open(const temp_directory& dir, database_options options) {
        auto db = database::open(dir.file("shop.db"), options);
        auto uow = db.begin();
        REQUIRE_FALSE(uow.connection().exec(
            "CREATE TABLE IF NOT EXISTS orders (id INTEGER PRIMARY KEY, note TEXT)"));
        REQUIRE_FALSE(uow.commit());
        return db;
    }

    static std::error_code insert_order(unit_of_work& uow, std::int64_t id,
                                        const std::string& note = "") {
        std::error_code ec;
        auto st = uow.connection().prepare("INSERT INTO orders (id, note) VALUES (?1, ?2)", ec);
        if (ec)
            return ec;
        st->bind_int64(1, id);
        st->bind_text(2, note);
        return st->execute();
    }

    std::int64_t orders() {
        auto uow = db.begin();
        std::error_code ec;
        auto st = uow.connection().prepare("SELECT count(*) FROM orders", ec);
        REQUIRE_FALSE(ec);
        REQUIRE(st->step(ec));
        return st->column_int64(0);
    }

    letterbox::outbox_entry event(std::string body = "{}") {
        letterbox::outbox_entry e;
        e.msg.id = ids();
        e.msg.type = "order.placed";
        e.msg.body = std::move(body);
        e.aggregate_type = "order";
        e.aggregate_id = "1";
        return e;
    }

    bool holds(const letterbox::message_id& id) {
        std::error_code ec;
        auto row = outbox.find(id, ec);
        REQUIRE_FALSE(ec);
        return row.has_value();
    }
};

//[sqlite_place_order
// Records an order and the event announcing it in one transaction: both or neither.
std::error_code place_order(letterbox::sqlite::database& db,
                            letterbox::sqlite::outbox_store& outbox, std::int64_t order_id,
                            const letterbox::message& event, letterbox::store_time now,
                            std::function<void()> wake_relay) {
    std::error_code ec;
    auto uow = db.begin(ec); // BEGIN IMMEDIATE, retried while another writer holds the lock
    if (ec)
        return ec; // errc::store_busy: nothing was written
    {
        auto insert =
            uow.connection().prepare("INSERT INTO orders (id, note) VALUES (?1, 'new')", ec);
        if (ec)
            return ec;
        insert->bind_int64(1, order_id);
        if (auto failed = insert->execute())
            return failed; // uow rolls back when it goes out of scope
    }
    if (auto failed = outbox.add(uow, {event, "order", std::to_string(order_id)}, now))
        return failed; // errc::duplicate_message_id, errc::payload_malformed, errc::store_full...
    if (auto failed = uow.on_commit(std::move(wake_relay))) // runs only after a successful commit
        return failed;
    return uow.commit();
}
//]

} // namespace

TEST_CASE("sqlite unit_of_work serves docs/sqlite.md's place_order", "[sqlite][unit_of_work]") {
    shop s;
    const auto e = s.event();
    int woken = 0;
    REQUIRE_FALSE(place_order(s.db, s.outbox, 7, e.msg, t0(), [&] { ++woken; }));
    CHECK(woken == 1);
    CHECK(s.orders() == 1);
    CHECK(s.holds(e.msg.id));
    // The same order again: the business write fails, so no event either.
    const auto again = s.event();
    CHECK(place_order(s.db, s.outbox, 7, again.msg, t0(), [&] { ++woken; }) == errc::store_error);
    CHECK(woken == 1);
    CHECK_FALSE(s.holds(again.msg.id));
}

TEST_CASE("sqlite unit_of_work commits a business write and an outbox row together",
          "[sqlite][unit_of_work]") {
    shop s;
    const auto e = s.event();
    auto uow = s.db.begin();
    REQUIRE(uow.is_open());
    REQUIRE_FALSE(shop::insert_order(uow, 1));
    REQUIRE_FALSE(s.outbox.add(uow, e, t0()));
    // The unit's own connection sees its writes; other connections do not, yet.
    {
        std::error_code ec;
        auto st = uow.connection().prepare("SELECT count(*) FROM letterbox_outbox", ec);
        REQUIRE(st->step(ec));
        CHECK(st->column_int64(0) == 1);
    }
    CHECK_FALSE(s.holds(e.msg.id));
    REQUIRE_FALSE(uow.commit());
    CHECK_FALSE(uow.is_open());
    CHECK(s.orders() == 1);
    CHECK(s.holds(e.msg.id));
}

TEST_CASE("sqlite unit_of_work rolls back both writes on rollback, exception or early return",
          "[sqlite][unit_of_work]") {
    shop s;
    SECTION("rollback") {
        const auto e = s.event();
        auto uow = s.db.begin();
        REQUIRE_FALSE(shop::insert_order(uow, 1));
        REQUIRE_FALSE(s.outbox.add(uow, e, t0()));
        REQUIRE_FALSE(uow.rollback());
        CHECK_FALSE(s.holds(e.msg.id));
    }
    SECTION("an exception") {
        const auto e = s.event();
        CHECK_THROWS_AS(
            [&] {
                auto uow = s.db.begin();
                REQUIRE_FALSE(shop::insert_order(uow, 1));
                REQUIRE_FALSE(s.outbox.add(uow, e, t0()));
                throw std::runtime_error("the handler failed");
            }(),
            std::runtime_error);
        CHECK_FALSE(s.holds(e.msg.id));
    }
    SECTION("an early return") {
        const auto e = s.event();
        auto place = [&](bool stock_ok) -> std::error_code {
            auto uow = s.db.begin();
            if (auto ec = shop::insert_order(uow, 1))
                return ec;
            if (auto ec = s.outbox.add(uow, e, t0()))
                return ec;
            if (!stock_ok)
                return errc::precondition_failed; // returns without commit
            return uow.commit();
        };
        CHECK(place(false) == errc::precondition_failed);
        CHECK_FALSE(s.holds(e.msg.id));
        CHECK(s.orders() == 0);
        CHECK_FALSE(place(true));
        CHECK(s.holds(e.msg.id));
    }
    CHECK(s.orders() <= 1);
}

TEST_CASE("sqlite unit_of_work runs on_commit callbacks in order, only after a commit",
          "[sqlite][unit_of_work]") {
    shop s;
    const auto e = s.event();
    std::vector<std::string> log;
    {
        auto uow = s.db.begin();
        REQUIRE_FALSE(s.outbox.add(uow, e, t0()));
        REQUIRE_FALSE(uow.on_commit(
            [&] { log.push_back(s.holds(e.msg.id) ? "first: visible" : "first: invisible"); }));
        REQUIRE_FALSE(uow.on_commit([&] { log.push_back("second"); }));
        CHECK(log.empty());
        REQUIRE_FALSE(uow.commit());
    }
    CHECK(log == std::vector<std::string>{"first: visible", "second"});

    // Callbacks may write through the stores and begin units: the write lock is released.
    {
        auto uow = s.db.begin();
        REQUIRE_FALSE(uow.on_commit([&] {
            auto next = s.db.begin();
            REQUIRE_FALSE(s.outbox.add(next, s.event(), t0()));
            REQUIRE_FALSE(next.commit());
            log.push_back("wrote");
        }));
        REQUIRE_FALSE(uow.commit());
    }
    CHECK(log.back() == "wrote");

    for (int how = 0; how < 2; ++how) {
        auto uow = s.db.begin();
        REQUIRE_FALSE(uow.on_commit([&] { log.push_back("must not run"); }));
        if (how == 0)
            REQUIRE_FALSE(uow.rollback());
        // how == 1: destroyed open
    }
    CHECK(log.size() == 3);
}

TEST_CASE("sqlite unit_of_work refuses use after it finished", "[sqlite][unit_of_work]") {
    shop s;
    auto uow = s.db.begin();
    REQUIRE_FALSE(uow.commit());
    CHECK(uow.commit() == errc::transaction_closed);
    CHECK(uow.rollback() == errc::transaction_closed);
    CHECK(uow.on_commit([] {}) == errc::transaction_closed);
    CHECK(s.outbox.add(uow, s.event(), t0()) == errc::transaction_closed);

    unit_of_work empty; // what a failed begin returns
    CHECK_FALSE(empty.is_open());
    CHECK(empty.commit() == errc::transaction_closed);
    CHECK(empty.rollback() == errc::transaction_closed);
}

TEST_CASE("sqlite unit_of_work moves its transaction, assigning over an open unit rolls it back",
          "[sqlite][unit_of_work]") {
    shop s;
    const auto kept = s.event();
    const auto dropped = s.event();
    auto a = s.db.begin();
    REQUIRE_FALSE(s.outbox.add(a, dropped, t0()));
    unit_of_work b(std::move(a));
    CHECK_FALSE(a.is_open()); // NOLINT(bugprone-use-after-move)
    CHECK(a.commit() == errc::transaction_closed);
    REQUIRE(b.is_open());
    b = unit_of_work{}; // rolls back
    CHECK_FALSE(b.is_open());
    CHECK_FALSE(s.holds(dropped.msg.id));

    b = s.db.begin();
    REQUIRE_FALSE(s.outbox.add(b, kept, t0()));
    REQUIRE_FALSE(b.commit());
    CHECK(s.holds(kept.msg.id));
}

TEST_CASE("sqlite unit_of_work refuses a store of another database", "[sqlite][unit_of_work]") {
    shop s;
    temp_directory other_dir;
    auto other = database::open(other_dir.file("other.db"));
    letterbox::sqlite::outbox_store other_outbox(other);
    letterbox::sqlite::inbox_store other_inbox(other);
    auto uow = s.db.begin();
    CHECK(other_outbox.add(uow, s.event(), t0()) == errc::precondition_failed);
    CHECK(other_inbox.try_record(uow, "c", s.ids(), t0()) == errc::precondition_failed);
    CHECK(uow.is_open());
    CHECK_FALSE(uow.commit());
}

TEST_CASE("sqlite unit_of_work that fills the disk rolls back atomically with store_full",
          "[sqlite][unit_of_work]") {
    temp_directory dir;
    std::int64_t pages = 0;
    {
        auto db = shop::open(dir, {});
        auto uow = db.begin();
        std::error_code ec;
        auto st = uow.connection().prepare("PRAGMA page_count", ec);
        REQUIRE(st->step(ec));
        pages = st->column_int64(0);
    }
    // Every connection of the pool may grow the file by two pages at most.
    database_options options;
    options.pragmas = {"max_page_count = " + std::to_string(pages + 2)};
    auto db = database::open(dir.file("shop.db"), options);
    letterbox::sqlite::outbox_store outbox(db);
    letterbox::sqlite::inbox_store inbox(db);
    letterbox::message_id_generator ids{5};
    letterbox::outbox_entry big;
    big.msg.id = ids();
    big.msg.type = "report.generated";
    big.msg.body = std::string(256 * 1024, 'x'); // far more than two pages

    SECTION("an outbox row that does not fit undoes the business write too") {
        auto uow = db.begin();
        REQUIRE_FALSE(shop::insert_order(uow, 1, "small"));
        CHECK(outbox.add(uow, big, t0()) == errc::store_full);
        CHECK(db.last_error_message().find("full") != std::string::npos);
        // The unit is failed: nothing can be added, and commit reports why.
        CHECK(inbox.try_record(uow, "c", ids(), t0()) == errc::store_full);
        CHECK(uow.commit() == errc::store_full);
        CHECK_FALSE(uow.is_open());
    }
    SECTION("a business write that does not fit: the caller rolls back") {
        auto uow = db.begin();
        REQUIRE_FALSE(outbox.add(uow, {letterbox::message{.id = ids()}, "a", "1"}, t0()));
        CHECK(shop::insert_order(uow, 1, std::string(256 * 1024, 'y')) == errc::store_full);
        CHECK(uow.connection().last_result_code() == SQLITE_FULL);
        REQUIRE_FALSE(uow.rollback());
    }
    SECTION("writes made on connection() after the unit failed are discarded too") {
        auto uow = db.begin();
        CHECK(outbox.add(uow, big, t0()) == errc::store_full);
        REQUIRE_FALSE(shop::insert_order(uow, 2, "after the failure"));
        CHECK(uow.commit() == errc::store_full);
    }

    std::error_code ec;
    CHECK(outbox.list({}, ec).empty());
    CHECK_FALSE(ec);
    {
        auto uow = db.begin();
        auto st = uow.connection().prepare("SELECT count(*) FROM orders", ec);
        REQUIRE(st->step(ec));
        CHECK(st->column_int64(0) == 0);
    }
    // The database still works for writes that fit.
    auto uow = db.begin();
    REQUIRE_FALSE(inbox.try_record(uow, "c", ids(), t0()));
    REQUIRE_FALSE(uow.commit());
    CHECK(inbox.size(ec) == 1);
}

TEST_CASE("sqlite unit_of_work keeps its connection while statements borrowed from it live",
          "[sqlite][unit_of_work]") {
    shop s;
    std::error_code ec;
    auto uow = s.db.begin();
    auto st = uow.connection().prepare("SELECT 1 UNION ALL SELECT 2", ec);
    REQUIRE(st->step(ec)); // left mid-way
    REQUIRE_FALSE(uow.commit());
    // The committed unit still holds its connection: the next unit gets another one, and the
    // borrowed statement is reset on the right connection when it goes.
    CHECK(s.db.idle_connections() == 0);
    {
        auto next = s.db.begin();
        REQUIRE_FALSE(s.outbox.add(next, s.event(), t0()));
        REQUIRE_FALSE(next.commit());
    }
    REQUIRE(st->step(ec));
    CHECK(st->column_int64(0) == 2);
    st = {};
    uow = {};
    CHECK(s.db.idle_connections() == 2);
}

TEST_CASE("sqlite unit_of_work savepoints keep or discard the writes and callbacks after them",
          "[sqlite][unit_of_work][savepoint]") {
    shop s;
    const auto kept = s.event();
    const auto dropped = s.event();
    std::vector<int> ran;
    auto uow = s.db.begin();
    CHECK(uow.rollback_to_savepoint() == errc::precondition_failed); // no mark yet
    REQUIRE_FALSE(shop::insert_order(uow, 1));
    REQUIRE_FALSE(s.outbox.add(uow, kept, t0()));
    REQUIRE_FALSE(uow.on_commit([&] { ran.push_back(1); }));

    REQUIRE_FALSE(uow.savepoint());
    REQUIRE_FALSE(shop::insert_order(uow, 2));
    REQUIRE_FALSE(s.outbox.add(uow, dropped, t0()));
    REQUIRE_FALSE(uow.on_commit([&] { ran.push_back(2); }));
    REQUIRE_FALSE(uow.rollback_to_savepoint());

    REQUIRE_FALSE(uow.savepoint());
    REQUIRE_FALSE(shop::insert_order(uow, 3));
    REQUIRE_FALSE(uow.on_commit([&] { ran.push_back(3); }));
    REQUIRE_FALSE(uow.release_savepoint());
    CHECK(uow.release_savepoint() == errc::precondition_failed);
    REQUIRE_FALSE(uow.commit());

    CHECK(ran == std::vector<int>{1, 3});
    CHECK(s.orders() == 2);
    CHECK(s.holds(kept.msg.id));
    CHECK_FALSE(s.holds(dropped.msg.id));
    CHECK(uow.savepoint() == errc::transaction_closed);
}

} // namespace unit_sqlite_unit_of_work
