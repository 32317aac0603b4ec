// SPDX-License-Identifier: BSL-1.0

#include <letterbox/sqlite/schema.hpp>

#include <letterbox/detail/row_codec.hpp>
#include <letterbox/error.hpp>
#include <letterbox/sqlite/database.hpp>
#include <letterbox/sqlite/detail/time.hpp>
#include <letterbox/sqlite/inbox_store.hpp>
#include <letterbox/sqlite/outbox_store.hpp>

#include "unit/sqlite/temp_directory.hpp"

#include <catch2/catch.hpp>

#include <sqlite3.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

namespace unit_sqlite_schema {

namespace {

using letterbox::errc;
using letterbox::sqlite::connection;
using letterbox::sqlite::database;
using letterbox::sqlite::database_options;
using letterbox::sqlite::schema;
using letterbox_sqlite_test::install_schema;
using letterbox_sqlite_test::int_of;
using letterbox_sqlite_test::open_raw;
using letterbox_sqlite_test::t0;
using letterbox_sqlite_test::temp_directory;
using namespace std::chrono_literals;

} // namespace

TEST_CASE("schema lists its migrations from version 1 without gaps", "[sqlite][schema]") {
    const auto steps = schema::migrations();
    REQUIRE_FALSE(steps.empty());
    for (std::size_t i = 0; i < steps.size(); ++i) {
        CHECK(steps[i].version == static_cast<int>(i) + 1);
        CHECK_FALSE(steps[i].description.empty());
        CHECK_FALSE(steps[i].sql.empty());
    }
    CHECK(schema::latest_version() == steps.back().version);
}

TEST_CASE("schema records its version and creates the tables", "[sqlite][schema]") {
    temp_directory dir;
    auto c = open_raw(dir.file("a.db"));
    std::error_code ec;
    CHECK(schema::installed_version(c, ec) == 0);
    CHECK_FALSE(ec);
    REQUIRE_FALSE(schema::migrate(c));
    CHECK(schema::installed_version(c, ec) == schema::latest_version());
    CHECK(int_of(c, "SELECT count(*) FROM letterbox_schema_version WHERE component = "
                    "'letterbox.sqlite'") == 1);
    CHECK(int_of(c, "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name IN "
                    "('letterbox_outbox', 'letterbox_inbox')") == 2);
    CHECK_FALSE(c.in_transaction());
}

TEST_CASE("schema migrations are idempotent across opens", "[sqlite][schema]") {
    temp_directory dir;
    auto first = open_raw(dir.file("a.db"));
    auto second = open_raw(dir.file("a.db"));
    REQUIRE_FALSE(schema::migrate(first));
    REQUIRE_FALSE(first.exec("INSERT INTO letterbox_inbox VALUES ('c', 'm', 0)"));
    // Already at the latest version: nothing runs again, nothing is lost.
    REQUIRE_FALSE(schema::migrate(second));
    REQUIRE_FALSE(schema::migrate(first));
    CHECK(int_of(second, "SELECT count(*) FROM letterbox_inbox") == 1);
    CHECK(int_of(second, "SELECT count(*) FROM letterbox_schema_version") == 1);

    // And through database::open, twice at once.
    std::error_code ec;
    auto a = database::open(dir.file("a.db"), database_options{}, ec);
    REQUIRE_FALSE(ec);
    auto b = database::open(dir.file("a.db"), database_options{}, ec);
    REQUIRE_FALSE(ec);
    CHECK(int_of(second, "SELECT count(*) FROM letterbox_inbox") == 1);
}

TEST_CASE("schema migrates a new file opened by two threads at once exactly once",
          "[sqlite][schema][threads]") {
    // The race (a lock upgrade SQLite refuses without waiting) shows about once in 150 rounds.
    for (int round = 0; round < 60; ++round) {
        INFO("round " << round);
        temp_directory dir;
        std::error_code ec_a, ec_b;
        std::thread a([&] { (void)database::open(dir.file("new.db"), database_options{}, ec_a); });
        std::thread b([&] { (void)database::open(dir.file("new.db"), database_options{}, ec_b); });
        a.join();
        b.join();
        CHECK_FALSE(ec_a);
        CHECK_FALSE(ec_b);
        auto c = open_raw(dir.file("new.db"));
        std::error_code ec;
        CHECK(schema::installed_version(c, ec) == schema::latest_version());
    }
}

TEST_CASE("schema refuses a database written by a newer letterbox and leaves it untouched",
          "[sqlite][schema]") {
    temp_directory dir;
    const auto newer = schema::latest_version() + 1;
    {
        auto c = open_raw(dir.file("a.db"));
        REQUIRE_FALSE(schema::migrate(c));
        REQUIRE_FALSE(
            c.exec("UPDATE letterbox_schema_version SET version = " + std::to_string(newer)));
        CHECK(schema::migrate(c) == errc::store_schema_too_new);
    }
    std::error_code ec;
    auto db = database::open(dir.file("a.db"), database_options{}, ec);
    CHECK(ec == errc::store_schema_too_new);
    CHECK_FALSE(db.is_open());
    CHECK(db.last_error_message().find(std::to_string(newer)) != std::string::npos);
    CHECK_THROWS_AS(database::open(dir.file("a.db")), letterbox::error);

    auto c = open_raw(dir.file("a.db"));
    CHECK(schema::installed_version(c, ec) == newer);
}

TEST_CASE("schema keeps other components' rows in the version table", "[sqlite][schema]") {
    temp_directory dir;
    auto c = open_raw(dir.file("a.db"));
    REQUIRE_FALSE(c.exec("CREATE TABLE letterbox_schema_version (component TEXT PRIMARY KEY, "
                         "version INTEGER NOT NULL); INSERT INTO letterbox_schema_version "
                         "VALUES ('someone.else', 99)"));
    std::error_code ec;
    CHECK(schema::installed_version(c, ec) == 0);
    REQUIRE_FALSE(schema::migrate(c));
    CHECK(schema::installed_version(c, ec) == schema::latest_version());
    CHECK(int_of(c, "SELECT version FROM letterbox_schema_version WHERE component = "
                    "'someone.else'") == 99);
}

namespace {

/// A database at schema version 1 (as the previous release left it), with rows in every
/// state, written the way that release wrote them: its own SQL, its triggers.
struct version_1_outbox {
    temp_directory dir;
    std::string path = dir.file("v1.db");
    letterbox::message_id_generator ids{77};
    std::map<std::string, letterbox::message_id> id; // by name: a1, a2, ...

    version_1_outbox() {
        auto c = open_raw(path);
        REQUIRE_FALSE(c.exec("BEGIN"));
        install_schema(c, 1);
        // In sequence order: a1 a2 a3 b1 b2 c1 n1 x1.
        for (const auto* name : {"a1", "a2", "a3", "b1", "b2", "c1", "n1", "x1"})
            insert(c, name);
        // a1 published; a2 leased by a relay of the old release; b1 parked after 5 attempts;
        // c1 failed twice and waits for its retry; x1 published and purged.
        exec(c, "UPDATE letterbox_outbox SET lease_owner = 'relay-old', lease_expires_at = " +
                    at(60s) + " WHERE message_id IN (" + quoted({"a1", "a2"}) + ")");
        exec(c, "UPDATE letterbox_outbox SET status = 1, published_at = " + at(1s) +
                    ", lease_owner = '', lease_expires_at = 0, aggregate_head = 0 "
                    "WHERE message_id IN (" +
                    quoted({"a1", "x1"}) + ")");
        exec(c, "DELETE FROM letterbox_outbox WHERE message_id = " + quoted({"x1"}));
        exec(c, "UPDATE letterbox_outbox SET status = 2, attempts = 5, last_error = 'poison', "
                "last_failure_at = " +
                    at(2s) + " WHERE message_id = " + quoted({"b1"}));
        exec(c, "UPDATE letterbox_outbox SET attempts = 2, last_error = 'timeout', "
                "last_failure_at = " +
                    at(3s) + ", next_attempt_at = " + at(10s) +
                    " WHERE message_id = " + quoted({"c1"}));
        REQUIRE_FALSE(c.exec("COMMIT"));
        REQUIRE(int_of(c, "SELECT seq FROM sqlite_sequence WHERE name = 'letterbox_outbox'") == 8);
    }

    static std::string at(std::chrono::seconds after) {
        return std::to_string(letterbox::sqlite::detail::to_column(t0() + after));
    }
    std::string quoted(std::initializer_list<const char*> names) {
        std::string text;
        for (const auto* name : names)
            text += (text.empty() ? "'" : ", '") + letterbox::to_string(id.at(name)) + "'";
        return text;
    }
    static void exec(connection& c, const std::string& sql) { REQUIRE_FALSE(c.exec(sql)); }

    void insert(connection& c, const char* name) {
        id[name] = ids();
        const std::string aggregate = name[0] == 'n' ? "" : std::string(1, name[0]);
        std::error_code ec;
        auto st = c.prepare(
            "INSERT INTO letterbox_outbox (message_id, aggregate_type, aggregate_id, event_type, "
            "exchange, routing_key, headers, properties, payload, created_at, status, attempts, "
            "next_attempt_at, aggregate_head) "
            "VALUES (?1, 'order', ?2, 'order.changed', 'orders', ?3, ?4, ?5, ?6, ?7, 0, 0, ?7, "
            "?2 = '' OR NOT EXISTS (SELECT 1 FROM letterbox_outbox WHERE aggregate_type = "
            "'order' AND aggregate_id = ?2 AND status <> 1))",
            ec);
        REQUIRE_FALSE(ec);
        st->bind_text(1, letterbox::to_string(id[name]));
        st->bind_text(2, aggregate);
        st->bind_text(3, name);
        st->bind_blob(4, *letterbox::detail::row_codec::encode_headers({{"name", name}}));
        st->bind_blob(5, letterbox::detail::row_codec::encode_properties({}));
        st->bind_blob(6, std::string("payload of ") + name);
        st->bind_int64(7, letterbox::sqlite::detail::to_column(t0()));
        REQUIRE_FALSE(st->execute());
    }
};

std::vector<std::string> routing_keys(const std::vector<letterbox::outbox_record>& rows) {
    std::vector<std::string> keys;
    for (const auto& r : rows)
        keys.push_back(r.msg.routing_key);
    return keys;
}

} // namespace

TEST_CASE("schema 2 moves the outbox's rows in flight to the delivery-state tables, losing and "
          "republishing nothing",
          "[sqlite][schema]") {
    version_1_outbox v1;
    auto db = database::open(v1.path); // migrates to the latest version
    letterbox::sqlite::outbox_store outbox(db);
    std::error_code ec;
    const auto find = [&](const char* name) {
        auto row = outbox.find(v1.id.at(name), ec);
        REQUIRE_FALSE(ec);
        REQUIRE(row.has_value());
        return *row;
    };

    // Every row kept its event and its state.
    const auto a1 = find("a1");
    CHECK(a1.status == letterbox::outbox_status::published);
    CHECK(a1.published_at == t0() + 1s);
    CHECK(a1.sequence == 1);
    const auto a2 = find("a2");
    CHECK(a2.status == letterbox::outbox_status::pending);
    CHECK(a2.lease_owner == "relay-old");
    CHECK(a2.lease_expires_at == t0() + 60s);
    CHECK(a2.msg.body == "payload of a2");
    CHECK(a2.msg.headers == letterbox::field_table{{"name", "a2"}});
    CHECK(a2.created_at == t0());
    const auto b1 = find("b1");
    CHECK(b1.status == letterbox::outbox_status::parked);
    CHECK(b1.attempts == 5);
    CHECK(b1.last_error == "poison");
    CHECK(b1.last_failure_at == t0() + 2s);
    const auto c1 = find("c1");
    CHECK(c1.attempts == 2);
    CHECK(c1.next_attempt_at == t0() + 10s);
    CHECK_FALSE(outbox.find(v1.id.at("x1"), ec).has_value());
    const auto stats = outbox.stats(t0() + 20s, ec);
    CHECK(stats.pending == 5); // a2 a3 b2 c1 n1
    CHECK(stats.parked == 1);
    CHECK(stats.published == 1);
    CHECK(stats.leased == 1);
    CHECK(stats.oldest_pending_age == 20s);

    // Order and leases hold: a2 is still leased, a3 waits behind it, b2 behind the parked b1.
    CHECK(routing_keys(outbox.claim("relay-new", 10, 30s, t0() + 20s, ec)) ==
          std::vector<std::string>{"c1", "n1"});
    REQUIRE_FALSE(ec);
    // The old relay's lease is still good: it settles a2, and a3 becomes its aggregate's head.
    CHECK_FALSE(outbox.mark_published(v1.id.at("a2"), "relay-old", t0() + 21s));
    CHECK(routing_keys(outbox.claim("relay-new", 10, 30s, t0() + 22s, ec)) ==
          std::vector<std::string>{"a3"});
    REQUIRE_FALSE(outbox.unpark(v1.id.at("b1"), t0() + 23s));
    CHECK(routing_keys(outbox.claim("relay-new", 10, 30s, t0() + 23s, ec)) ==
          std::vector<std::string>{"b1"});
    REQUIRE_FALSE(outbox.mark_published(v1.id.at("b1"), "relay-new", t0() + 24s));
    CHECK(routing_keys(outbox.claim("relay-new", 10, 30s, t0() + 24s, ec)) ==
          std::vector<std::string>{"b2"});

    // No sequence is reused, not even the purged x1's.
    auto uow = db.begin();
    letterbox::outbox_entry later;
    later.msg.id = v1.ids();
    REQUIRE_FALSE(outbox.add(uow, later, t0() + 25s));
    REQUIRE_FALSE(uow.commit());
    CHECK(outbox.find(later.msg.id, ec)->sequence == 9);
    letterbox::outbox_query all;
    CHECK(outbox.list(all, ec).size() == 8);
    CHECK_FALSE(ec);
}

TEST_CASE("schema: a read-only open of a version 1 file is store_schema_too_old and migrates "
          "nothing",
          "[sqlite][schema]") {
    version_1_outbox v1;
    database_options read_only;
    read_only.read_only = true;
    std::error_code ec;
    auto db = database::open(v1.path, read_only, ec);
    CHECK(ec == errc::store_schema_too_old);
    CHECK(letterbox::is_store_error(ec));
    CHECK_THAT(db.last_error_message(),
               Catch::Contains("schema version 1") &&
                   Catch::Contains("reads version " + std::to_string(schema::latest_version())));
    auto c = open_raw(v1.path);
    CHECK(int_of(c, "SELECT version FROM letterbox_schema_version") == 1);
    CHECK(int_of(c, "SELECT count(*) FROM sqlite_master WHERE name = "
                    "'letterbox_outbox_unpublished'") == 0);
}

TEST_CASE("schema 3 keeps every inbox record, its key now the id's 16 bytes, and the inbox "
          "still absorbs the messages it recorded before",
          "[sqlite][schema]") {
    temp_directory dir;
    const auto path = dir.file("v2.db");
    letterbox::message_id_generator ids{78};
    const auto early = ids(), late = ids(), other = ids();
    {
        // Version 2, with the inbox records the previous release wrote: the id's text.
        auto c = open_raw(path);
        REQUIRE_FALSE(c.exec("BEGIN"));
        install_schema(c, 2);
        const auto record = [&](const char* consumer, const std::string& key, std::int64_t at) {
            std::error_code ec;
            auto st = c.prepare("INSERT INTO letterbox_inbox VALUES (?1, ?2, ?3)", ec);
            REQUIRE_FALSE(ec);
            st->bind_text(1, consumer);
            st->bind_text(2, key);
            st->bind_int64(3, at);
            REQUIRE_FALSE(st->execute());
        };
        const auto at = [](std::chrono::seconds after) {
            return letterbox::sqlite::detail::to_column(t0() + after);
        };
        record("billing", letterbox::to_string(early), at(1s));
        record("billing", letterbox::to_string(late), at(5s));
        record("shipping", letterbox::to_string(early), at(2s));
        record("shipping", "held", at(3s)); // written by hand: not an id, kept as it is
        REQUIRE_FALSE(c.exec("COMMIT"));
    }

    auto db = database::open(path); // migrates to the latest version
    auto c = open_raw(path);
    CHECK(int_of(c, "SELECT version FROM letterbox_schema_version") == schema::latest_version());
    CHECK(int_of(c, "SELECT count(*) FROM letterbox_inbox") == 4);
    CHECK(int_of(c, "SELECT count(*) FROM letterbox_inbox WHERE typeof(message_id) = 'blob' "
                    "AND length(message_id) = 16") == 3);
    CHECK(int_of(c, "SELECT count(*) FROM letterbox_inbox WHERE message_id = 'held'") == 1);

    letterbox::sqlite::inbox_store inbox(db);
    std::error_code ec;
    CHECK(inbox.contains("billing", early, ec));
    CHECK(inbox.contains("billing", late, ec));
    CHECK(inbox.contains("shipping", early, ec));
    CHECK_FALSE(inbox.contains("shipping", late, ec));
    CHECK_FALSE(inbox.contains("billing", other, ec));
    CHECK_FALSE(ec);
    {
        // A redelivery of what was recorded before the upgrade is absorbed; a new message is not.
        auto uow = db.begin();
        CHECK(inbox.try_record(uow, "billing", early, t0() + 10s) == errc::already_processed);
        CHECK_FALSE(inbox.try_record(uow, "billing", other, t0() + 10s));
        REQUIRE_FALSE(uow.commit());
    }
    CHECK(inbox.contains("billing", other, ec));
    // Retention still purges by recorded_at, through the index the step re-created.
    CHECK(inbox.purge(t0() + 4s, ec) == 3); // billing/early, shipping/early, shipping/held
    CHECK_FALSE(ec);
    CHECK(inbox.contains("billing", late, ec));
    CHECK(int_of(c, "SELECT count(*) FROM sqlite_master WHERE type = 'index' AND name = "
                    "'letterbox_inbox_recorded_at'") == 1);
}

} // namespace unit_sqlite_schema
