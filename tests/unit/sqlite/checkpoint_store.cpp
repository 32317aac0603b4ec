// SPDX-License-Identifier: BSL-1.0

#include <letterbox/sqlite/checkpoint_store.hpp>

#include <letterbox/error.hpp>
#include <letterbox/sqlite/connection.hpp>
#include <letterbox/sqlite/database.hpp>

#include "unit/sqlite/temp_directory.hpp"

#include <catch2/catch.hpp>

#include <atomic>
#include <cstdint>
#include <functional>
#include <limits>
#include <string>
#include <system_error>
#include <thread>

namespace unit_sqlite_checkpoint_store {

static_assert(letterbox::checkpoint_store<letterbox::sqlite::checkpoint_store>);

namespace {

using letterbox_sqlite_test::open_raw;
using namespace std::string_literals;
using letterbox::errc;
using letterbox::sqlite::connection;
using letterbox::sqlite::database;
using letterbox::sqlite::database_options;
using letterbox_sqlite_test::int_of;
using letterbox_sqlite_test::temp_directory;

/// Moves `name` from `expected` to `position` in a unit of its own; returns what the save said
/// (the unit is committed after a success, and must commit).
std::error_code save(database& db, letterbox::sqlite::checkpoint_store& store,
                     const std::string& name, std::uint64_t expected, std::uint64_t position) {
    auto uow = db.begin();
    if (auto ec = store.save(uow, name, expected, position))
        return ec;
    REQUIRE_FALSE(uow.commit());
    return {};
}

/// The committed checkpoint of `name`, which must be read without error.
std::uint64_t position_of(letterbox::sqlite::checkpoint_store& store, const std::string& name) {
    std::error_code ec;
    const auto p = store.position(name, ec);
    REQUIRE_FALSE(ec);
    return p;
}

} // namespace

TEST_CASE("sqlite checkpoint_store: a checkpoint at 0 and no checkpoint are one state",
          "[sqlite][checkpoint_store]") {
    temp_directory dir;
    const auto path = dir.file("checkpoints.db");
    auto db = database::open(path);
    letterbox::sqlite::checkpoint_store store(db);
    auto c = open_raw(path);
    const auto rows = [&] {
        return int_of(c, "SELECT count(*) FROM letterbox_checkpoint");
    };

    // No row: 0, and a move from 0 inserts the row; a move from elsewhere conflicts.
    CHECK(position_of(store, "balances") == 0);
    CHECK(save(db, store, "balances", 3, 4) == errc::concurrency_conflict);
    CHECK(rows() == 0);
    CHECK_FALSE(save(db, store, "balances", 0, 0)); // a row at 0
    CHECK(rows() == 1);
    CHECK(position_of(store, "balances") == 0);
    // A row at 0: a move from 0 updates it.
    CHECK_FALSE(save(db, store, "balances", 0, 5));
    CHECK(rows() == 1);
    CHECK(position_of(store, "balances") == 5);
    CHECK(save(db, store, "balances", 0, 6) == errc::concurrency_conflict);
    // Back to 0 for a rebuild: the row stays, at 0.
    CHECK_FALSE(save(db, store, "balances", 5, 0));
    CHECK(rows() == 1);
    CHECK(int_of(c, "SELECT position FROM letterbox_checkpoint WHERE name = 'balances'") == 0);
    CHECK(position_of(store, "balances") == 0);
    CHECK(save(db, store, "balances", 5, 6) == errc::concurrency_conflict);
    CHECK_FALSE(save(db, store, "balances", 0, 3));
    CHECK(position_of(store, "balances") == 3);
    // A row deleted by hand is a projection to rebuild: back to 0, and a move from 0 inserts.
    REQUIRE_FALSE(c.exec("DELETE FROM letterbox_checkpoint"));
    CHECK(position_of(store, "balances") == 0);
    CHECK(save(db, store, "balances", 3, 4) == errc::concurrency_conflict);
    CHECK_FALSE(save(db, store, "balances", 0, 2));
    CHECK(position_of(store, "balances") == 2);
}

TEST_CASE("sqlite checkpoint_store: a conflict writes nothing and leaves the unit usable, and "
          "commit never reports one",
          "[sqlite][checkpoint_store]") {
    temp_directory dir;
    const auto path = dir.file("checkpoints.db");
    auto db = database::open(path);
    letterbox::sqlite::checkpoint_store store(db);
    REQUIRE_FALSE(save(db, store, "balances", 0, 5));

    auto uow = db.begin();
    REQUIRE_FALSE(uow.connection().exec("CREATE TABLE read_model (n INTEGER)"));
    REQUIRE_FALSE(uow.connection().exec("INSERT INTO read_model VALUES (1)"));
    CHECK(store.save(uow, "balances", 4, 9) == errc::concurrency_conflict);
    CHECK(store.save(uow, "balances", 0, 9) == errc::concurrency_conflict);
    CHECK(uow.is_open());
    REQUIRE_FALSE(store.save(uow, "statements", 0, 2));
    REQUIRE_FALSE(uow.commit());
    CHECK(position_of(store, "balances") == 5);
    CHECK(position_of(store, "statements") == 2);
    auto c = open_raw(path);
    CHECK(int_of(c, "SELECT count(*) FROM read_model") == 1);
}

TEST_CASE("sqlite checkpoint_store: a second save of one name in a unit compares with the first "
          "one's position",
          "[sqlite][checkpoint_store]") {
    // The concept allows one save per name per unit; this is what the SQLite model does with a
    // second one, as documented.
    temp_directory dir;
    auto db = database::open(dir.file("checkpoints.db"));
    letterbox::sqlite::checkpoint_store store(db);
    auto uow = db.begin();
    REQUIRE_FALSE(store.save(uow, "balances", 0, 5));
    CHECK(store.save(uow, "balances", 0, 7) == errc::concurrency_conflict);
    REQUIRE_FALSE(store.save(uow, "balances", 5, 7));
    REQUIRE_FALSE(uow.commit());
    CHECK(position_of(store, "balances") == 7);
}

TEST_CASE("sqlite checkpoint_store keeps names byte for byte, NUL bytes and UTF-8 included",
          "[sqlite][checkpoint_store]") {
    temp_directory dir;
    auto db = database::open(dir.file("checkpoints.db"));
    letterbox::sqlite::checkpoint_store store(db);
    const auto with_nul = "balances\0v2"s;
    const auto utf8 = "Kontostände-口座-🧾"s;
    REQUIRE_FALSE(save(db, store, with_nul, 0, 11));
    REQUIRE_FALSE(save(db, store, utf8, 0, 12));
    CHECK(position_of(store, with_nul) == 11);
    CHECK(position_of(store, utf8) == 12);
    CHECK(position_of(store, "balances") == 0); // not a prefix match
    CHECK_FALSE(save(db, store, "balances", 0, 1));
    CHECK(position_of(store, with_nul) == 11);
}

TEST_CASE("sqlite checkpoint_store keeps checkpoints across closing and reopening the file",
          "[sqlite][checkpoint_store]") {
    temp_directory dir;
    const auto path = dir.file("checkpoints.db");
    {
        auto db = database::open(path);
        letterbox::sqlite::checkpoint_store store(db);
        REQUIRE_FALSE(save(db, store, "balances", 0, 42));
        REQUIRE_FALSE(save(db, store, "statements", 0, 0));
    }
    auto db = database::open(path);
    letterbox::sqlite::checkpoint_store store(db);
    CHECK(position_of(store, "balances") == 42);
    CHECK(position_of(store, "statements") == 0);
    CHECK(save(db, store, "balances", 0, 43) == errc::concurrency_conflict);
    CHECK_FALSE(save(db, store, "balances", 42, 43));
    CHECK(position_of(store, "balances") == 43);
}

TEST_CASE("sqlite checkpoint_store: reads see committed checkpoints only",
          "[sqlite][checkpoint_store]") {
    temp_directory dir;
    const auto path = dir.file("checkpoints.db");
    auto db = database::open(path);
    auto second = database::open(path); // another pool on the same file
    letterbox::sqlite::checkpoint_store store(db);
    letterbox::sqlite::checkpoint_store reader(second);
    REQUIRE_FALSE(save(db, store, "balances", 0, 5));

    auto uow = db.begin();
    REQUIRE_FALSE(store.save(uow, "balances", 5, 8));
    REQUIRE_FALSE(store.save(uow, "statements", 0, 1));
    for (auto* s : {&store, &reader}) {
        CHECK(position_of(*s, "balances") == 5);
        CHECK(position_of(*s, "statements") == 0);
    }
    REQUIRE_FALSE(uow.commit());
    for (auto* s : {&store, &reader}) {
        CHECK(position_of(*s, "balances") == 8);
        CHECK(position_of(*s, "statements") == 1);
    }
}

TEST_CASE("sqlite checkpoint_store: of two runners on two database objects moving one checkpoint, "
          "exactly one commits",
          "[sqlite][checkpoint_store][threads]") {
    temp_directory dir;
    const auto path = dir.file("checkpoints.db");
    auto db = database::open(path);
    auto other = database::open(path); // a second database object: its own pool
    letterbox::sqlite::checkpoint_store store(db);
    letterbox::sqlite::checkpoint_store other_store(other);
    REQUIRE_FALSE(save(db, store, "balances", 0, 5));

    std::atomic<int> committed{0};
    std::atomic<int> conflicts{0};
    const auto runner = [&](letterbox::sqlite::checkpoint_store& s, std::uint64_t to) {
        auto uow = s.begin();
        auto ec = s.save(uow, "balances", 5, to);
        if (!ec)
            ec = uow.commit();
        if (!ec)
            ++committed;
        else if (ec == errc::concurrency_conflict)
            ++conflicts;
    };
    std::thread first(runner, std::ref(store), 7);
    std::thread second(runner, std::ref(other_store), 8);
    first.join();
    second.join();
    CHECK(committed == 1);
    CHECK(conflicts == 1);
    const auto at = position_of(store, "balances");
    CHECK((at == 7 || at == 8));
}

TEST_CASE("sqlite checkpoint_store refuses invalid saves, a foreign or finished unit and a closed "
          "database, writing nothing",
          "[sqlite][checkpoint_store]") {
    temp_directory dir;
    auto db = database::open(dir.file("checkpoints.db"));
    letterbox::sqlite::checkpoint_store store(db);
    constexpr auto largest = static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max());
    {
        auto uow = db.begin();
        CHECK(store.save(uow, "", 0, 1) == errc::invalid_argument);
        CHECK(store.save(uow, "balances", 0, largest + 1) == errc::invalid_argument);
        CHECK(store.save(uow, "balances", largest + 1, 1) == errc::concurrency_conflict);
        CHECK(uow.is_open());
        REQUIRE_FALSE(store.save(uow, "balances", 0, largest)); // the largest SQLite stores
        REQUIRE_FALSE(uow.commit());
        CHECK(store.save(uow, "balances", largest, 1) == errc::transaction_closed);
    }
    CHECK(position_of(store, "balances") == largest);
    CHECK(position_of(store, "") == 0);

    // A unit of another database.
    auto other = database::open(dir.file("other.db"));
    {
        auto uow = other.begin();
        CHECK(store.save(uow, "statements", 0, 1) == errc::precondition_failed);
        CHECK(uow.is_open());
    }
    CHECK(position_of(store, "statements") == 0);

    // A database that failed to open.
    std::error_code ec;
    auto closed_db = database::open(dir.file("no/such/dir.db"), {}, ec);
    REQUIRE(ec);
    letterbox::sqlite::checkpoint_store closed(closed_db);
    letterbox::sqlite::unit_of_work none;
    CHECK(closed.save(none, "balances", 0, 1) == errc::closed);
    CHECK(closed.position("balances", ec) == 0);
    CHECK(ec == errc::closed);
}

TEST_CASE("sqlite checkpoint_store: a database error in save fails the unit, which then commits "
          "nothing",
          "[sqlite][checkpoint_store]") {
    temp_directory dir;
    auto db = database::open(dir.file("checkpoints.db"));
    letterbox::sqlite::checkpoint_store store(db);
    {
        auto uow = db.begin();
        REQUIRE_FALSE(store.save(uow, "statements", 0, 1));
        // Break the schema inside the unit: the next save has nowhere to go.
        REQUIRE_FALSE(uow.connection().exec("DROP TABLE letterbox_checkpoint"));
        const auto failed = store.save(uow, "balances", 0, 1);
        CHECK(failed == errc::store_error);
        CHECK(store.save(uow, "other", 0, 1) == failed); // the unit is failed
        CHECK(uow.commit() == failed);
    }
    CHECK(position_of(store, "statements") == 0); // the save and the DROP were rolled back
    CHECK_FALSE(save(db, store, "balances", 0, 1));
    CHECK(position_of(store, "balances") == 1);
}

} // namespace unit_sqlite_checkpoint_store
