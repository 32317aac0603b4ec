// SPDX-License-Identifier: BSL-1.0
// `letterbox outbox status|retry|purge` run as a child process on a real SQLite file in a
// temporary directory: two parked rows, one pending row, two published rows (one published two
// hours ago, one now).

#include <letterbox/message.hpp>
#include <letterbox/outbox_record.hpp>
#include <letterbox/sqlite/database.hpp>
#include <letterbox/sqlite/outbox_store.hpp>
#include <letterbox/testing/temp_directory.hpp>

#include "cli_support.hpp"

#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include <sqlite3.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <system_error>
#include <vector>

namespace integration_cli_outbox {

namespace {

using namespace cli_test;

struct outbox_world {
    letterbox::testing::temp_directory dir;
    std::string path = (dir.path() / "orders.db").string();
    letterbox::sqlite::database db = letterbox::sqlite::database::open(path);
    letterbox::sqlite::outbox_store store{db};
    letterbox::message_id_generator ids;
    letterbox::store_time now = std::chrono::system_clock::now();
    std::vector<letterbox::message_id> parked, published;
    letterbox::message_id pending{};

    letterbox::message_id add(const std::string& aggregate) {
        letterbox::outbox_entry e;
        e.msg.id = ids();
        e.msg.type = "order.placed";
        e.msg.exchange = "orders";
        e.msg.routing_key = "order.placed";
        e.msg.body = "{}";
        e.msg.properties.content_type = "application/json";
        e.aggregate_type = "order";
        e.aggregate_id = aggregate;
        auto uow = db.begin();
        REQUIRE_FALSE(store.add(uow, e, now - std::chrono::hours{3}));
        REQUIRE_FALSE(uow.commit());
        return e.msg.id;
    }

    outbox_world() {
        published = {add("p1"), add("p2")};
        std::error_code ec;
        const auto claimed = store.claim("relay", 10, std::chrono::seconds{30}, now, ec);
        REQUIRE_FALSE(ec);
        REQUIRE(claimed.size() == 2);
        REQUIRE_FALSE(store.mark_published(published[0], "relay", now - std::chrono::hours{2}));
        REQUIRE_FALSE(store.mark_published(published[1], "relay", now));
        parked = {add("a"), add("b")};
        for (const auto& id : parked)
            REQUIRE_FALSE(store.park(id, "exchange orders not found"));
        pending = add("c");
    }

    letterbox::outbox_status status_of(const letterbox::message_id& id) {
        std::error_code ec;
        const auto row = store.find(id, ec);
        REQUIRE_FALSE(ec);
        REQUIRE(row.has_value());
        return row->status;
    }
};

} // namespace

TEST_CASE("outbox status counts the rows and lists the parked ones", "[integration][cli]") {
    outbox_world w;
    const auto human = run_cli({"outbox", "status", "--db", w.path});
    REQUIRE(human.status == 0);
    CHECK(human.out.find("parked:     2") != std::string::npos);
    CHECK(human.out.find(letterbox::to_string(w.parked[0])) != std::string::npos);
    CHECK(human.out.find("exchange orders not found") != std::string::npos);

    const auto json = run_cli({"outbox", "status", "--db", w.path, "--json"});
    REQUIRE(json.status == 0);
    const auto j = nlohmann::json::parse(json.out);
    CHECK(j.at("stats").at("pending") == 1);
    CHECK(j.at("stats").at("parked") == 2);
    CHECK(j.at("stats").at("published") == 2);
    CHECK(j.at("stats").at("oldest_pending_age_seconds").get<long>() >= 3 * 3600 - 60);
    REQUIRE(j.at("rows").size() == 2);
    std::set<std::string> rows;
    for (const auto& r : j.at("rows")) {
        rows.insert(r.at("id").get<std::string>());
        CHECK(r.at("status") == "parked");
    }
    CHECK(rows == std::set<std::string>{letterbox::to_string(w.parked[0]),
                                        letterbox::to_string(w.parked[1])});
}

TEST_CASE("outbox retry unparks a row by id, or every parked row", "[integration][cli]") {
    outbox_world w;
    const auto one =
        run_cli({"outbox", "retry", "--db", w.path, letterbox::to_string(w.parked[0])});
    REQUIRE(one.status == 0);
    CHECK(one.out.find("retried 1 row") != std::string::npos);
    CHECK(w.status_of(w.parked[0]) == letterbox::outbox_status::pending);
    CHECK(w.status_of(w.parked[1]) == letterbox::outbox_status::parked);

    const auto not_parked =
        run_cli({"outbox", "retry", "--db", w.path, letterbox::to_string(w.pending)});
    CHECK(not_parked.status == 1);
    CHECK(not_parked.out.find("not parked") != std::string::npos);

    const auto unknown =
        run_cli({"outbox", "retry", "--db", w.path, "00000000-0000-4000-8000-000000000000"});
    CHECK(unknown.status == 4);

    const auto all = run_cli({"outbox", "retry", "--db", w.path, "--all-parked", "--json"});
    REQUIRE(all.status == 0);
    CHECK(nlohmann::json::parse(all.out).at("retried") == 1);
    CHECK(w.status_of(w.parked[1]) == letterbox::outbox_status::pending);
}

TEST_CASE("outbox purge deletes published rows older than --older-than", "[integration][cli]") {
    outbox_world w;
    const auto missing = run_cli({"outbox", "purge", "--db", w.path});
    CHECK(missing.status == 2);
    CHECK(missing.err.find("--older-than") != std::string::npos);
    const auto bad = run_cli({"outbox", "purge", "--db", w.path, "--older-than", "7 days"});
    CHECK(bad.status == 2);

    const auto r = run_cli({"outbox", "purge", "--db", w.path, "--older-than", "1h"});
    REQUIRE(r.status == 0);
    CHECK(r.out.find("removed 1 published row") != std::string::npos);
    std::error_code ec;
    CHECK_FALSE(w.store.find(w.published[0], ec).has_value());
    CHECK(w.store.find(w.published[1], ec).has_value());
    CHECK(w.status_of(w.pending) == letterbox::outbox_status::pending);
}

TEST_CASE("outbox on a database file that does not exist is exit code 3", "[integration][cli]") {
    letterbox::testing::temp_directory dir;
    const auto path = (dir.path() / "missing.db").string();
    const auto r = run_cli({"outbox", "status", "--db", path});
    CHECK(r.status == 3);
    CHECK(r.err.find("check --db") != std::string::npos);
    CHECK_FALSE(std::filesystem::exists(path)); // it did not create one
}

namespace {

/// A file's bytes and modification time, to show that a command changed nothing.
struct file_state {
    std::string bytes;
    std::filesystem::file_time_type mtime;
    friend bool operator==(const file_state&, const file_state&) = default;
};

file_state state_of(const std::string& path) {
    return {read_file(path), std::filesystem::last_write_time(path)};
}

/// Runs SQL on the file with a raw SQLite connection (rows letterbox's stores would never
/// write, another application's tables).
void raw_sql(const std::string& path, const std::string& sql) {
    sqlite3* db = nullptr;
    REQUIRE(sqlite3_open(path.c_str(), &db) == SQLITE_OK);
    char* message = nullptr;
    const int rc = sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &message);
    INFO((message ? message : ""));
    sqlite3_free(message);
    sqlite3_close(db);
    REQUIRE(rc == SQLITE_OK);
}

} // namespace

TEST_CASE("outbox commands refuse a 0-byte file and another application's database and leave "
          "them as they were",
          "[integration][cli]") {
    letterbox::testing::temp_directory dir;
    const auto empty = (dir.path() / "empty.db").string();
    std::ofstream(empty).close();
    const auto foreign = (dir.path() / "crm.db").string();
    raw_sql(foreign, "CREATE TABLE customers (id INTEGER PRIMARY KEY, name TEXT);"
                     "INSERT INTO customers (name) VALUES ('acme')");
    for (const auto& path : {empty, foreign}) {
        // An hour back, so that any write would move it.
        std::filesystem::last_write_time(path, std::filesystem::file_time_type::clock::now() -
                                                   std::chrono::hours{1});
        const auto before = state_of(path);
        for (const auto& args : std::vector<std::vector<std::string>>{
                 {"outbox", "status", "--db", path},
                 {"outbox", "status", "--db", path, "--json"},
                 {"outbox", "retry", "--db", path, "--all-parked"},
                 {"outbox", "purge", "--db", path, "--older-than", "1d"}}) {
            CAPTURE(path, args[1]);
            const auto r = run_cli(args);
            CHECK(r.status == 6);
            CHECK(r.out.empty());
            CHECK_THAT(r.err, Catch::Contains("is not a letterbox database"));
            CHECK_THAT(r.err, Catch::Contains("not changed"));
            CHECK(state_of(path) == before);
            CHECK_FALSE(std::filesystem::exists(path + "-wal"));
            CHECK_FALSE(std::filesystem::exists(path + "-journal"));
        }
    }
}

TEST_CASE("outbox status changes nothing in a letterbox database", "[integration][cli]") {
    letterbox::testing::temp_directory dir;
    const auto path = (dir.path() / "orders.db").string();
    std::string parked;
    {
        auto db = letterbox::sqlite::database::open(path);
        letterbox::sqlite::outbox_store store(db);
        letterbox::outbox_entry e;
        e.msg.id = letterbox::message_id_generator{}();
        e.msg.type = "order.placed";
        e.aggregate_type = "order";
        e.aggregate_id = "1";
        auto uow = db.begin();
        REQUIRE_FALSE(store.add(uow, e, std::chrono::system_clock::now()));
        REQUIRE_FALSE(uow.commit());
        REQUIRE_FALSE(store.park(e.msg.id, "no route"));
        parked = letterbox::to_string(e.msg.id);
    } // closed: the WAL is checkpointed into the file and removed
    std::filesystem::last_write_time(path, std::filesystem::file_time_type::clock::now() -
                                               std::chrono::hours{1});
    const auto before = state_of(path);
    const auto r = run_cli({"outbox", "status", "--db", path, "--json"});
    CHECK(r.status == 0);
    CHECK(nlohmann::json::parse(r.out).at("rows").at(0).at("id") == parked);
    CHECK(state_of(path) == before);
}

TEST_CASE("outbox status on a file of an older schema changes nothing and names what migrates it",
          "[integration][cli]") {
    letterbox::testing::temp_directory dir;
    const auto path = (dir.path() / "orders.db").string();
    { auto db = letterbox::sqlite::database::open(path); }
    // What this check reads of a file an older letterbox left: its version row.
    raw_sql(path, "UPDATE letterbox_schema_version SET version = 1");
    std::filesystem::last_write_time(path, std::filesystem::file_time_type::clock::now() -
                                               std::chrono::hours{1});
    const auto before = state_of(path);
    const auto r = run_cli({"outbox", "status", "--db", path});
    CHECK(r.status == 3);
    CHECK(r.out.empty());
    CHECK_THAT(r.err, Catch::Contains("schema version 1") &&
                          Catch::Contains("older than this version of letterbox") &&
                          Catch::Contains("open it once for writing to migrate it"));
    CHECK_THAT(r.err, !Catch::Contains("run as a user who can write"));
    CHECK(state_of(path) == before);
}

TEST_CASE("outbox status escapes stored control characters and ANSI sequences, and writes "
          "invalid UTF-8 as U+FFFD in JSON",
          "[integration][cli]") {
    outbox_world w;
    const auto id = letterbox::to_string(w.parked[0]);
    raw_sql(w.path, "UPDATE letterbox_outbox_unpublished SET last_error = 'boom' || char(10) || "
                    "'pending: 0' || char(10) || char(27) || '[2J' || char(27) || '[1A' || "
                    "char(13) WHERE sequence = (SELECT sequence FROM letterbox_outbox WHERE "
                    "message_id = '" +
                        id +
                        "'); UPDATE letterbox_outbox SET event_type = CAST(x'6f726465722eff' AS "
                        "TEXT) || char(155) || '31m' WHERE message_id = '" +
                        id + "'");
    const auto human = run_cli({"outbox", "status", "--db", w.path});
    REQUIRE(human.status == 0);
    CHECK(human.out.find('\x1b') == std::string::npos);
    CHECK(human.out.find('\r') == std::string::npos);
    std::istringstream lines(human.out);
    std::string line;
    for (int n = 0; std::getline(lines, line) && n < 100; ++n)
        CHECK(line.rfind("pending: 0", 0) == std::string::npos); // no faked line
    CHECK_THAT(human.out, Catch::Contains("last error: boom\\npending: 0\\n\\x1b[2J\\x1b[1A\\r"));
    CHECK_THAT(human.out, Catch::Contains("order.\\xff\\u{009b}31m"));

    const auto json = run_cli({"outbox", "status", "--db", w.path, "--json"});
    REQUIRE(json.status == 0);
    const auto j = nlohmann::json::parse(json.out); // valid UTF-8, valid JSON
    bool found = false;
    for (const auto& row : j.at("rows"))
        if (row.at("id") == id) {
            found = true;
            CHECK(row.at("event_type") == "order.\xef\xbf\xbd\xc2\x9b"
                                          "31m");
            CHECK(row.at("last_error") == "boom\npending: 0\n\x1b[2J\x1b[1A\r");
        }
    CHECK(found);
}

TEST_CASE("outbox status and retry --all-parked report an unreadable row and go on with the "
          "others",
          "[integration][cli]") {
    outbox_world w;
    const auto third = w.add("d");
    REQUIRE_FALSE(w.store.park(third, "exchange orders not found"));
    raw_sql(w.path, "UPDATE letterbox_outbox SET message_id = 'not-a-' || char(27) || "
                    "'[2Juuid' WHERE message_id = '" +
                        letterbox::to_string(w.parked[0]) +
                        "'; UPDATE letterbox_outbox SET headers = x'01ff' WHERE message_id = '" +
                        letterbox::to_string(w.parked[1]) + "'");

    const auto human = run_cli({"outbox", "status", "--db", w.path});
    CHECK(human.status == 1);
    CHECK_THAT(human.out, Catch::Contains("parked:     3"));
    CHECK_THAT(human.out, Catch::Contains(letterbox::to_string(third)));
    CHECK_THAT(human.out,
               Catch::Contains("(id \"not-a-\\x1b[2Juuid\") cannot be read: message_id is not a "
                               "UUID"));
    CHECK_THAT(human.out, Catch::Contains("(id \"" + letterbox::to_string(w.parked[1]) +
                                          "\") cannot be read: headers are not letterbox's "
                                          "encoding"));
    CHECK_THAT(human.err, Catch::Contains("2 row(s) could not be read"));

    const auto json = run_cli({"outbox", "status", "--db", w.path, "--json"});
    CHECK(json.status == 1);
    const auto j = nlohmann::json::parse(json.out);
    REQUIRE(j.at("rows").size() == 1);
    CHECK(j.at("rows")[0].at("id") == letterbox::to_string(third));
    REQUIRE(j.at("unreadable_rows").size() == 2);
    CHECK(j.at("unreadable_rows")[0].at("id") == "not-a-\x1b[2Juuid");
    CHECK(j.at("unreadable_rows")[0].at("error") == "message_id is not a UUID");

    const auto retry = run_cli({"outbox", "retry", "--db", w.path, "--all-parked", "--json"});
    CHECK(retry.status == 1);
    const auto rj = nlohmann::json::parse(retry.out);
    CHECK(rj.at("retried") == 1);
    CHECK(rj.at("unreadable_rows").size() == 2);
    CHECK(w.status_of(third) == letterbox::outbox_status::pending);
}

TEST_CASE("outbox retry on a locked database is a database failure (exit code 5), not a partial "
          "retry",
          "[integration][cli]") {
    outbox_world w;
    sqlite3* holder = nullptr;
    REQUIRE(sqlite3_open(w.path.c_str(), &holder) == SQLITE_OK);
    REQUIRE(sqlite3_exec(holder, "BEGIN IMMEDIATE", nullptr, nullptr, nullptr) == SQLITE_OK);
    const auto r = run_cli({"outbox", "retry", "--db", w.path, letterbox::to_string(w.parked[0]),
                            letterbox::to_string(w.parked[1])});
    sqlite3_exec(holder, "ROLLBACK", nullptr, nullptr, nullptr);
    sqlite3_close(holder);
    CHECK(r.status == 5);
    CHECK_THAT(r.out, Catch::Contains("retried 0 rows, not tried 2"));
    CHECK_THAT(r.err, Catch::Contains("another process holds the write lock"));
    CHECK(w.status_of(w.parked[0]) == letterbox::outbox_status::parked);
}

TEST_CASE("outbox retry on a read-only database file is a database failure (exit code 5)",
          "[integration][cli]") {
    if (::geteuid() == 0) {
        WARN("running as root, who can write any file: nothing to check here (the locked "
             "database case covers the same path)");
        return;
    }
    outbox_world w;
    namespace fs = std::filesystem;
    fs::permissions(w.path, fs::perms::owner_write, fs::perm_options::remove);
    fs::permissions(w.dir.path(), fs::perms::owner_write, fs::perm_options::remove);
    const auto r = run_cli({"outbox", "retry", "--db", w.path, "--all-parked"});
    fs::permissions(w.dir.path(), fs::perms::owner_write, fs::perm_options::add);
    fs::permissions(w.path, fs::perms::owner_write, fs::perm_options::add);
    CHECK(r.status != 1);
    CHECK((r.status == 5 || r.status == 3));
}

} // namespace integration_cli_outbox
