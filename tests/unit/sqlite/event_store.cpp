// SPDX-License-Identifier: BSL-1.0

#include <letterbox/sqlite/event_store.hpp>

#include <letterbox/error.hpp>
#include <letterbox/message.hpp>
#include <letterbox/sqlite/connection.hpp>
#include <letterbox/sqlite/database.hpp>
#include <letterbox/sqlite/saga_store.hpp>
#include <letterbox/sqlite/schema.hpp>

#include "unit/sqlite/temp_directory.hpp"

#include <catch2/catch.hpp>

#include <sqlite3.h>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <limits>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

namespace unit_sqlite_event_store {

static_assert(letterbox::event_store<letterbox::sqlite::event_store>);

namespace {

using letterbox_sqlite_test::install_schema;
using letterbox_sqlite_test::open_raw;
using namespace std::chrono_literals;
using namespace std::string_literals;
using letterbox::append_result;
using letterbox::errc;
using letterbox::event_data;
using letterbox::expected_version;
using letterbox::recorded_event;
using letterbox::sqlite::connection;
using letterbox::sqlite::database;
using letterbox::sqlite::database_options;
using letterbox::sqlite::schema;
using letterbox_sqlite_test::int_of;
using letterbox_sqlite_test::t0;
using letterbox_sqlite_test::temp_directory;

/// Events of `type` with bodies {"n":0}, {"n":1}, ..., each with an id of its own.
std::vector<event_data> events_of(const std::string& type, std::size_t count) {
    static letterbox::message_id_generator ids(7);
    std::vector<event_data> events;
    for (std::size_t i = 0; i < count; ++i)
        events.push_back({ids(), type, R"({"n":)" + std::to_string(i) + "}", ""});
    return events;
}

/// Appends `events` to `stream` in a unit of its own, committed; returns the result.
append_result append_committed(database& db, letterbox::sqlite::event_store& store,
                               const std::string& stream, const std::vector<event_data>& events,
                               letterbox::store_time now = t0(),
                               expected_version expected = expected_version::any()) {
    append_result result;
    auto uow = db.begin();
    REQUIRE_FALSE(store.append(uow, stream, expected, events, now, result));
    REQUIRE_FALSE(uow.commit());
    return result;
}

/// The committed events of `stream`, every one.
std::vector<recorded_event> stream_of(letterbox::sqlite::event_store& store,
                                      const std::string& stream) {
    std::error_code ec;
    auto events = store.read_stream(stream, 0, 1000, ec);
    REQUIRE_FALSE(ec);
    return events;
}

/// The positions of the committed events, every one.
std::vector<std::uint64_t> positions(letterbox::sqlite::event_store& store) {
    std::error_code ec;
    std::vector<std::uint64_t> p;
    for (const auto& e : store.read_all(0, 1000, ec))
        p.push_back(e.position);
    REQUIRE_FALSE(ec);
    return p;
}

} // namespace

TEST_CASE("sqlite event_store: schema step 5 adds the event, snapshot and checkpoint tables to a "
          "version 4 database and keeps its rows",
          "[sqlite][event_store]") {
    REQUIRE(schema::migrations().size() >= 5);
    CHECK(schema::migrations()[4].version == 5);
    CHECK(schema::migrations()[4].description ==
          "event streams, snapshots and projection checkpoints");

    temp_directory dir;
    const auto path = dir.file("v4.db");
    {
        // Version 4, as the previous release left it, with a saga instance.
        auto c = open_raw(path);
        REQUIRE_FALSE(c.exec("BEGIN"));
        install_schema(c, 4);
        REQUIRE_FALSE(c.exec("INSERT INTO letterbox_saga VALUES ('order', 'o-1', 'order-1', "
                             "'started', 1, '{}', 0, 0)"));
        REQUIRE_FALSE(c.exec("COMMIT"));
        CHECK(int_of(c, "SELECT count(*) FROM sqlite_master WHERE name IN ('letterbox_event', "
                        "'letterbox_snapshot', 'letterbox_checkpoint')") == 0);
    }

    auto db = database::open(path); // migrates
    auto c = open_raw(path);
    CHECK(int_of(c, "SELECT version FROM letterbox_schema_version") == schema::latest_version());
    CHECK(int_of(c, "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name IN "
                    "('letterbox_event', 'letterbox_snapshot', 'letterbox_checkpoint')") == 3);
    CHECK(int_of(c, "SELECT count(*) FROM letterbox_snapshot") == 0);
    CHECK(int_of(c, "SELECT count(*) FROM letterbox_checkpoint") == 0);
    CHECK(int_of(c, "SELECT count(*) FROM letterbox_saga") == 1);
    letterbox::sqlite::saga_store sagas(db);
    std::error_code ec;
    CHECK(sagas.find("order", "o-1", ec).has_value());

    letterbox::sqlite::event_store store(db);
    CHECK(append_committed(db, store, "account-1", events_of("opened", 1)) == append_result{1, 1});
    CHECK(int_of(c, "SELECT count(*) FROM letterbox_event") == 1);
    // The id is stored as its 16 bytes.
    CHECK(int_of(c, "SELECT length(id) FROM letterbox_event") == 16);
    CHECK(int_of(c, "SELECT typeof(id) = 'blob' FROM letterbox_event") == 1);
}

TEST_CASE("sqlite event_store: a database of a newer schema is refused and left untouched",
          "[sqlite][event_store]") {
    temp_directory dir;
    const auto path = dir.file("newer.db");
    {
        auto db = database::open(path);
        letterbox::sqlite::event_store store(db);
        append_committed(db, store, "account-1", events_of("opened", 1));
    }
    {
        auto c = open_raw(path);
        REQUIRE_FALSE(c.exec("UPDATE letterbox_schema_version SET version = " +
                             std::to_string(schema::latest_version() + 1)));
    }
    std::error_code ec;
    auto db = database::open(path, database_options{}, ec);
    CHECK(ec == errc::store_schema_too_new);
    CHECK_FALSE(db.is_open());
    auto c = open_raw(path);
    CHECK(int_of(c, "SELECT count(*) FROM letterbox_event") == 1);
    CHECK(int_of(c, "SELECT version FROM letterbox_schema_version") ==
          schema::latest_version() + 1);
}

TEST_CASE("sqlite event_store numbers versions per stream and positions across streams, and "
          "reads them back in order",
          "[sqlite][event_store]") {
    temp_directory dir;
    auto db = database::open(dir.file("events.db"));
    letterbox::sqlite::event_store store(db);
    std::error_code ec;
    CHECK(store.head_position(ec) == 0);
    CHECK(store.stream_version("a", ec) == 0);
    CHECK_FALSE(ec);

    const auto a = events_of("deposited", 3);
    const auto b = events_of("opened", 2);
    CHECK(append_committed(db, store, "a", a, t0(), expected_version::no_stream()) ==
          append_result{3, 3});
    CHECK(append_committed(db, store, "b", b, t0(), expected_version::exactly(0)) ==
          append_result{2, 5});
    CHECK(append_committed(db, store, "a", {a[0]}, t0(), expected_version::exactly(3)) ==
          append_result{4, 6});

    CHECK(store.head_position(ec) == 6);
    CHECK(store.stream_version("a", ec) == 4);
    CHECK(store.stream_version("b", ec) == 2);
    CHECK(store.stream_version("c", ec) == 0);
    CHECK_FALSE(ec);

    const auto stream_a = stream_of(store, "a");
    REQUIRE(stream_a.size() == 4);
    for (std::size_t i = 0; i < 3; ++i) {
        CHECK(stream_a[i].stream == "a");
        CHECK(stream_a[i].version == i + 1);
        CHECK(stream_a[i].position == i + 1);
        CHECK(stream_a[i].id == a[i].id);
        CHECK(stream_a[i].type == a[i].type);
        CHECK(stream_a[i].data == a[i].data);
        CHECK(stream_a[i].metadata == a[i].metadata);
        CHECK(stream_a[i].recorded_at == t0());
    }
    CHECK(stream_a[3].version == 4);
    CHECK(stream_a[3].position == 6);

    // After a version, at most `limit`.
    const auto tail = store.read_stream("a", 1, 2, ec);
    REQUIRE(tail.size() == 2);
    CHECK(tail[0].version == 2);
    CHECK(tail[1].version == 3);
    CHECK(store.read_stream("a", 4, 10, ec).empty());
    CHECK(store.read_stream("a", 0, 0, ec).empty());
    CHECK(store.read_stream("a", std::numeric_limits<std::uint64_t>::max(), 10, ec).empty());
    CHECK(store.read_stream("a", 0, std::numeric_limits<std::size_t>::max(), ec).size() == 4);
    CHECK_FALSE(ec);

    CHECK(positions(store) == std::vector<std::uint64_t>{1, 2, 3, 4, 5, 6});
    const auto page = store.read_all(2, 3, ec);
    REQUIRE(page.size() == 3);
    CHECK(page[0].position == 3);
    CHECK(page[0].stream == "a");
    CHECK(page[1].position == 4);
    CHECK(page[1].stream == "b");
    CHECK(page[1].version == 1);
    CHECK(page[2].position == 5);
    CHECK(store.read_all(6, 10, ec).empty());
    CHECK(store.read_all(std::numeric_limits<std::uint64_t>::max(), 10, ec).empty());
    CHECK_FALSE(ec);
}

TEST_CASE("sqlite event_store: a version mismatch is a concurrency_conflict from append that "
          "writes nothing and leaves the unit usable",
          "[sqlite][event_store]") {
    temp_directory dir;
    auto db = database::open(dir.file("events.db"));
    letterbox::sqlite::event_store store(db);
    append_committed(db, store, "a", events_of("deposited", 2));

    auto uow = db.begin();
    append_result result{99, 99};
    CHECK(store.append(uow, "a", expected_version::exactly(1), events_of("x", 1), t0(), result) ==
          errc::concurrency_conflict);
    CHECK(result == append_result{2, 0});
    CHECK(store.append(uow, "a", expected_version::no_stream(), events_of("x", 1), t0(), result) ==
          errc::concurrency_conflict);
    CHECK(result == append_result{2, 0});
    CHECK(store.append(uow, "new", expected_version::exactly(1), events_of("x", 1), t0(), result) ==
          errc::concurrency_conflict);
    CHECK(result == append_result{0, 0});
    CHECK(uow.is_open());

    // Several appends in one unit: each expected version counts the earlier ones.
    CHECK_FALSE(
        store.append(uow, "a", expected_version::exactly(2), events_of("y", 2), t0(), result));
    CHECK(result == append_result{4, 4});
    CHECK(store.append(uow, "a", expected_version::exactly(2), events_of("z", 1), t0(), result) ==
          errc::concurrency_conflict);
    CHECK(result == append_result{4, 0});
    CHECK_FALSE(
        store.append(uow, "a", expected_version::exactly(4), events_of("z", 1), t0(), result));
    CHECK(result == append_result{5, 5});
    CHECK_FALSE(store.append(uow, "a", expected_version::any(), events_of("w", 1), t0(), result));
    CHECK(result == append_result{6, 6});

    // Reads see committed events only.
    std::error_code ec;
    CHECK(store.stream_version("a", ec) == 2);
    CHECK(store.head_position(ec) == 2);
    REQUIRE_FALSE(uow.commit());
    CHECK(store.stream_version("a", ec) == 6);
    CHECK(store.head_position(ec) == 6);
    CHECK(positions(store) == std::vector<std::uint64_t>{1, 2, 3, 4, 5, 6});
    std::vector<std::string> types;
    for (const auto& e : stream_of(store, "a"))
        types.push_back(e.type);
    CHECK(types == std::vector<std::string>{"deposited", "deposited", "y", "y", "z", "w"});
}

TEST_CASE("sqlite event_store: of two units appending at one expected version on two threads, "
          "exactly one commits",
          "[sqlite][event_store][threads]") {
    temp_directory dir;
    const auto path = dir.file("events.db");
    auto db = database::open(path);
    auto other = database::open(path); // a second database object: its own pool
    letterbox::sqlite::event_store store(db);
    letterbox::sqlite::event_store other_store(other);
    append_committed(db, store, "a", events_of("opened", 1));

    std::atomic<int> committed{0};
    std::atomic<int> conflicts{0};
    // Made here: the ids come from one generator, which the two threads must not share.
    const auto first_events = events_of("deposited", 1);
    const auto second_events = events_of("deposited", 1);
    const auto writer = [&](letterbox::sqlite::event_store& s,
                            const std::vector<event_data>& events) {
        append_result result;
        auto uow = s.begin();
        auto ec = s.append(uow, "a", expected_version::exactly(1), events, t0(), result);
        if (!ec)
            ec = uow.commit();
        if (!ec)
            ++committed;
        else if (ec == errc::concurrency_conflict)
            ++conflicts;
    };
    std::thread first(writer, std::ref(store), std::cref(first_events));
    std::thread second(writer, std::ref(other_store), std::cref(second_events));
    first.join();
    second.join();
    CHECK(committed == 1);
    CHECK(conflicts == 1);
    CHECK(positions(store) == std::vector<std::uint64_t>{1, 2});
    std::error_code ec;
    CHECK(store.stream_version("a", ec) == 2);
}

TEST_CASE("sqlite event_store refuses invalid arguments, a foreign or finished unit and a closed "
          "database, writing nothing",
          "[sqlite][event_store]") {
    temp_directory dir;
    auto db = database::open(dir.file("events.db"));
    letterbox::sqlite::event_store store(db);
    append_result result{7, 7};
    {
        auto uow = db.begin();
        const auto any = expected_version::any();
        CHECK(store.append(uow, "", any, events_of("x", 1), t0(), result) ==
              errc::invalid_argument);
        CHECK(store.append(uow, "a", any, {}, t0(), result) == errc::invalid_argument);
        auto untyped = events_of("x", 3);
        untyped[2].type.clear();
        CHECK(store.append(uow, "a", any, untyped, t0(), result) == errc::invalid_argument);
        CHECK(result == append_result{7, 7});
        CHECK(uow.is_open());
        REQUIRE_FALSE(store.append(uow, "a", any, events_of("x", 1), t0(), result));
        CHECK(result == append_result{1, 1});
        REQUIRE_FALSE(uow.commit());
        // The unit is finished.
        CHECK(store.append(uow, "a", any, events_of("x", 1), t0(), result) ==
              errc::transaction_closed);
    }
    std::error_code ec;
    CHECK(positions(store) == std::vector<std::uint64_t>{1});

    // A unit of another database.
    auto other = database::open(dir.file("other.db"));
    {
        auto uow = other.begin();
        CHECK(store.append(uow, "a", expected_version::any(), events_of("x", 1), t0(), result) ==
              errc::precondition_failed);
        CHECK(uow.is_open());
    }
    CHECK(store.head_position(ec) == 1);
    CHECK_FALSE(ec);

    // A database that failed to open.
    auto closed_db = database::open(dir.file("no/such/dir.db"), {}, ec);
    REQUIRE(ec);
    letterbox::sqlite::event_store closed(closed_db);
    letterbox::sqlite::unit_of_work none;
    CHECK(closed.append(none, "a", expected_version::any(), events_of("x", 1), t0(), result) ==
          errc::closed);
    CHECK(closed.read_stream("a", 0, 10, ec).empty());
    CHECK(ec == errc::closed);
    CHECK(closed.read_all(0, 10, ec).empty());
    CHECK(ec == errc::closed);
    CHECK(closed.stream_version("a", ec) == 0);
    CHECK(ec == errc::closed);
    CHECK(closed.head_position(ec) == 0);
    CHECK(ec == errc::closed);
}

TEST_CASE("sqlite event_store keeps stream names, data and metadata byte for byte, NUL bytes "
          "and UTF-8 included",
          "[sqlite][event_store]") {
    temp_directory dir;
    auto db = database::open(dir.file("events.db"));
    letterbox::sqlite::event_store store(db);
    const auto with_nul = "konto\0 42"s;
    const auto other_nul = "konto\0 43"s;
    const auto utf8 = "Überweisung-口座-🧾"s;
    auto events = events_of("eingezahlt \xE2\x82\xAC", 1);
    events[0].data = "{\"note\":\"NUL \0 inside\"}"s;
    events[0].metadata = R"({"correlation_id":"ä"})";
    append_committed(db, store, with_nul, events);
    append_committed(db, store, other_nul, events_of("x", 2));
    append_committed(db, store, utf8, events_of("y", 3));

    const auto read = stream_of(store, with_nul);
    REQUIRE(read.size() == 1);
    CHECK(read[0].stream == with_nul);
    CHECK(read[0].stream.size() == 9);
    CHECK(read[0].type == events[0].type);
    CHECK(read[0].data == events[0].data);
    CHECK(read[0].metadata == events[0].metadata);
    CHECK(read[0].id == events[0].id);

    std::error_code ec;
    CHECK(store.stream_version(with_nul, ec) == 1);
    CHECK(store.stream_version(other_nul, ec) == 2);
    CHECK(store.stream_version("konto"s, ec) == 0); // not a prefix match
    CHECK(store.stream_version(utf8, ec) == 3);
    CHECK(stream_of(store, utf8).at(2).stream == utf8);
    CHECK_FALSE(ec);
}

TEST_CASE("sqlite event_store keeps times in microseconds, and never lets them decrease along "
          "positions",
          "[sqlite][event_store]") {
    temp_directory dir;
    auto db = database::open(dir.file("events.db"));
    letterbox::sqlite::event_store store(db);
    // Finer than a microsecond: dropped, rounding toward the past.
    const auto fine = t0() + 1500us + std::chrono::nanoseconds(999);
    append_committed(db, store, "a", events_of("x", 1), fine);
    // Earlier than the store's latest time: stamped with the latest.
    append_committed(db, store, "b", events_of("x", 2), t0() - 1h);
    append_committed(db, store, "a", events_of("x", 1), t0() + 2s + 7us);

    std::error_code ec;
    const auto all = store.read_all(0, 10, ec);
    REQUIRE_FALSE(ec);
    REQUIRE(all.size() == 4);
    CHECK(all[0].recorded_at == t0() + 1500us);
    CHECK(all[1].recorded_at == t0() + 1500us);
    CHECK(all[2].recorded_at == t0() + 1500us);
    CHECK(all[3].recorded_at == t0() + 2s + 7us);
}

TEST_CASE("sqlite event_store: a rolled-back unit leaves no event, version or position",
          "[sqlite][event_store]") {
    temp_directory dir;
    auto db = database::open(dir.file("events.db"));
    letterbox::sqlite::event_store store(db);
    append_committed(db, store, "a", events_of("x", 2));
    append_result result;
    {
        auto uow = db.begin();
        REQUIRE_FALSE(
            store.append(uow, "a", expected_version::any(), events_of("y", 3), t0(), result));
        REQUIRE_FALSE(
            store.append(uow, "b", expected_version::any(), events_of("y", 1), t0(), result));
        CHECK(result == append_result{1, 6});
        REQUIRE_FALSE(uow.rollback());
    }
    {
        auto uow = db.begin();
        REQUIRE_FALSE(
            store.append(uow, "b", expected_version::any(), events_of("y", 1), t0(), result));
        // Destroyed open: rolled back too.
    }
    std::error_code ec;
    CHECK(store.stream_version("a", ec) == 2);
    CHECK(store.stream_version("b", ec) == 0);
    CHECK(store.head_position(ec) == 2);

    CHECK(append_committed(db, store, "b", events_of("z", 1), t0(),
                           expected_version::no_stream()) == append_result{1, 3});
    CHECK(append_committed(db, store, "a", events_of("z", 1), t0(), expected_version::exactly(2)) ==
          append_result{3, 4});
    CHECK(positions(store) == std::vector<std::uint64_t>{1, 2, 3, 4});
}

TEST_CASE("sqlite event_store: reads on other connections see committed events only",
          "[sqlite][event_store]") {
    temp_directory dir;
    const auto path = dir.file("events.db");
    auto db = database::open(path);
    auto second = database::open(path); // another pool on the same file
    letterbox::sqlite::event_store store(db);
    letterbox::sqlite::event_store reader(second);
    append_committed(db, store, "a", events_of("x", 1));

    auto uow = db.begin();
    append_result result;
    REQUIRE_FALSE(
        store.append(uow, "a", expected_version::exactly(1), events_of("y", 2), t0(), result));
    REQUIRE_FALSE(
        store.append(uow, "b", expected_version::no_stream(), events_of("y", 1), t0(), result));
    // The unit's own connection sees its events.
    CHECK(int_of(uow.connection(), "SELECT count(*) FROM letterbox_event") == 4);
    std::error_code ec;
    for (auto* s : {&store, &reader}) {
        CHECK(s->head_position(ec) == 1);
        CHECK(s->stream_version("a", ec) == 1);
        CHECK(s->stream_version("b", ec) == 0);
        CHECK(s->read_all(0, 10, ec).size() == 1);
        CHECK(s->read_stream("a", 0, 10, ec).size() == 1);
        CHECK(s->read_stream("b", 0, 10, ec).empty());
        CHECK_FALSE(ec);
    }
    auto raw = open_raw(path);
    CHECK(int_of(raw, "SELECT count(*) FROM letterbox_event") == 1);

    REQUIRE_FALSE(uow.commit());
    for (auto* s : {&store, &reader}) {
        CHECK(s->head_position(ec) == 4);
        CHECK(s->stream_version("a", ec) == 3);
        CHECK(s->stream_version("b", ec) == 1);
        CHECK(s->read_all(0, 10, ec).size() == 4);
        CHECK_FALSE(ec);
    }
}

TEST_CASE("sqlite event_store keeps events across closing and reopening the file",
          "[sqlite][event_store]") {
    temp_directory dir;
    const auto path = dir.file("events.db");
    const auto events = events_of("deposited", 3);
    std::vector<recorded_event> before;
    {
        auto db = database::open(path);
        letterbox::sqlite::event_store store(db);
        append_committed(db, store, "a", events, t0() + 1us);
        append_committed(db, store, "b", events_of("opened", 1), t0() + 2us);
        std::error_code ec;
        before = store.read_all(0, 100, ec);
        REQUIRE_FALSE(ec);
        REQUIRE(before.size() == 4);
    }
    auto db = database::open(path);
    letterbox::sqlite::event_store store(db);
    std::error_code ec;
    CHECK(store.read_all(0, 100, ec) == before);
    CHECK(store.head_position(ec) == 4);
    CHECK(store.stream_version("a", ec) == 3);
    CHECK_FALSE(ec);
    // Versions, positions and times carry on.
    CHECK(append_committed(db, store, "a", events_of("withdrawn", 1), t0(),
                           expected_version::exactly(3)) == append_result{4, 5});
    CHECK(stream_of(store, "a").back().recorded_at == t0() + 2us);
}

TEST_CASE("sqlite event_store: a database error in append fails the unit, which then commits "
          "nothing",
          "[sqlite][event_store]") {
    temp_directory dir;
    auto db = database::open(dir.file("events.db"));
    letterbox::sqlite::event_store store(db);
    append_result result;
    {
        auto uow = db.begin();
        REQUIRE_FALSE(
            store.append(uow, "a", expected_version::any(), events_of("x", 1), t0(), result));
        // Break the schema inside the unit: the next append has nowhere to go.
        REQUIRE_FALSE(uow.connection().exec("DROP TABLE letterbox_event"));
        const auto failed =
            store.append(uow, "a", expected_version::any(), events_of("x", 1), t0(), result);
        CHECK(failed == errc::store_error);
        CHECK(store.append(uow, "b", expected_version::any(), events_of("x", 1), t0(), result) ==
              failed); // the unit is failed
        CHECK(uow.commit() == failed);
    }
    std::error_code ec;
    CHECK(store.head_position(ec) == 0); // the append and the DROP were rolled back
    CHECK_FALSE(ec);
    CHECK(append_committed(db, store, "a", events_of("x", 1)) == append_result{1, 1});
}

TEST_CASE("sqlite event_store: the table's keys back the version check, and a row they refuse "
          "fails the unit with concurrency_conflict",
          "[sqlite][event_store]") {
    temp_directory dir;
    auto db = database::open(dir.file("events.db"));
    letterbox::sqlite::event_store store(db);
    append_result result;
    auto uow = db.begin();
    // A writer the version check cannot see: every event of stream "a" is followed, in the same
    // statement, by a copy at the next version, so the next event of the append finds its
    // version taken.
    REQUIRE_FALSE(uow.connection().exec(
        "CREATE TEMP TRIGGER letterbox_test_interloper AFTER INSERT ON main.letterbox_event "
        "WHEN NEW.stream = 'a' AND NEW.version = 1 BEGIN "
        "INSERT INTO letterbox_event (stream, version, id, type, data, metadata, recorded_at) "
        "VALUES ('a', 2, NEW.id, 'interloper', '', '', 0); END"));
    CHECK(store.append(uow, "a", expected_version::no_stream(), events_of("x", 2), t0(), result) ==
          errc::concurrency_conflict);
    CHECK(store.append(uow, "b", expected_version::any(), events_of("x", 1), t0(), result) ==
          errc::concurrency_conflict); // the unit is failed
    CHECK(uow.commit() == errc::concurrency_conflict);
    std::error_code ec;
    CHECK(store.head_position(ec) == 0);
    CHECK_FALSE(ec);
}

} // namespace unit_sqlite_event_store
