// SPDX-License-Identifier: BSL-1.0

#include <letterbox/sqlite/database.hpp>

#include <letterbox/sqlite/inbox_store.hpp>
#include <letterbox/sqlite/outbox_store.hpp>

#include "unit/sqlite/temp_directory.hpp"

#include <catch2/catch.hpp>

#include <sqlite3.h>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <mutex>
#include <optional>
#include <random>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

namespace unit_sqlite_database {

namespace {

using namespace std::chrono_literals;
using letterbox::errc;
using letterbox::sqlite::database;
using letterbox::sqlite::database_options;
using letterbox_sqlite_test::t0;
using letterbox_sqlite_test::temp_directory;

letterbox::outbox_entry event(letterbox::message_id_generator& ids, std::string aggregate_id) {
    letterbox::outbox_entry e;
    e.msg.id = ids();
    e.msg.type = "order.created";
    e.msg.body = "payload";
    e.aggregate_type = "order";
    e.aggregate_id = std::move(aggregate_id);
    return e;
}

void write_file(const std::string& path, const std::string& bytes) {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    REQUIRE(out.good());
}

std::string read_file(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

/// A healthy letterbox database with a few committed rows, closed (its WAL checkpointed into
/// the main file), returned as the file's bytes.
std::string healthy_database_bytes(const temp_directory& dir) {
    const auto path = dir.file("healthy.db");
    {
        auto db = database::open(path);
        letterbox::sqlite::outbox_store outbox(db);
        letterbox::message_id_generator ids{7};
        auto uow = db.begin();
        for (int i = 0; i < 20; ++i)
            REQUIRE_FALSE(outbox.add(uow, event(ids, std::to_string(i)), t0()));
        REQUIRE_FALSE(uow.commit());
    }
    REQUIRE_FALSE(std::filesystem::exists(path + "-wal"));
    return read_file(path);
}

std::error_code open_error(const std::string& path, const database_options& options = {}) {
    std::error_code ec;
    auto db = database::open(path, options, ec);
    INFO("open: " << ec.message() << " / " << db.last_error_message());
    CHECK_FALSE(db.is_open());
    if (ec)
        CHECK_FALSE(db.last_error_message().empty());
    return ec;
}

/// Reads one byte from `fd`, waiting at most `timeout`; '\0' if none came.
char read_byte(int fd, std::chrono::milliseconds timeout) {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(timeout.count())) != 1)
        return '\0';
    char c = '\0';
    return ::read(fd, &c, 1) == 1 ? c : '\0';
}

/// The forked child: holds the database's write lock (an open BEGIN IMMEDIATE with an insert)
/// with a raw SQLite connection until the parent writes to `release_fd`, then commits. Tells
/// the parent with 'L' (locked) or 'E' (error) on `ready_fd`. Waits at most 30 s for the
/// parent, so it never outlives a failed test by long.
[[noreturn]] void hold_write_lock(const std::string& path, int ready_fd, int release_fd) {
    sqlite3* db = nullptr;
    int status = 0;
    if (sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READWRITE, nullptr) != SQLITE_OK)
        status = 10;
    else if (sqlite3_exec(db,
                          "BEGIN IMMEDIATE; INSERT INTO letterbox_inbox (consumer_id, message_id, "
                          "recorded_at) VALUES ('child', 'held', 0)",
                          nullptr, nullptr, nullptr) != SQLITE_OK)
        status = 11;
    const char state = status == 0 ? 'L' : 'E';
    if (::write(ready_fd, &state, 1) != 1)
        status = 12;
    if (status == 0) {
        if (read_byte(release_fd, 30s) != 'R')
            status = 13;
        if (sqlite3_exec(db, "COMMIT", nullptr, nullptr, nullptr) != SQLITE_OK)
            status = 14;
    }
    sqlite3_close(db);
    ::_exit(status);
}

//[sqlite_open
std::optional<letterbox::sqlite::database> open_orders(const std::string& path) {
    letterbox::sqlite::database_options options;
    options.busy_timeout = std::chrono::milliseconds(2000); // SQLite waits this long for a lock
    options.max_busy_retries = 3;                           // then letterbox retries 3 times
    std::error_code ec;
    auto db = letterbox::sqlite::database::open(path, options, ec);
    if (ec) { // store_not_a_database, store_corrupt, store_unavailable, store_schema_too_new...
        std::cerr << "cannot open " << path << ": " << ec.message() << " ("
                  << db.last_error_message() << ")\n";
        return std::nullopt;
    }
    return db;
}
//]

} // namespace

TEST_CASE("database refuses a file that is not a database at open", "[sqlite][database]") {
    temp_directory dir;
    SECTION("a text file") {
        write_file(dir.file("notes.db"), "These are my notes, not a database.\n");
        CHECK(open_error(dir.file("notes.db")) == errc::store_not_a_database);
    }
    SECTION("random bytes") {
        std::mt19937 rng(1234);
        std::string bytes(16384, '\0');
        for (auto& c : bytes)
            c = static_cast<char>(rng() & 0xff);
        write_file(dir.file("random.db"), bytes);
        CHECK(open_error(dir.file("random.db")) == errc::store_not_a_database);
    }
    SECTION("a database whose header magic was overwritten") {
        auto bytes = healthy_database_bytes(dir);
        bytes.replace(0, 16, "Not a database!!");
        write_file(dir.file("bad-magic.db"), bytes);
        CHECK(open_error(dir.file("bad-magic.db")) == errc::store_not_a_database);
    }
    SECTION("a database whose page size field is invalid") {
        auto bytes = healthy_database_bytes(dir);
        bytes[16] = '\x03'; // 768: not a power of two
        bytes[17] = '\x00';
        write_file(dir.file("bad-page-size.db"), bytes);
        CHECK(open_error(dir.file("bad-page-size.db")) == errc::store_not_a_database);
    }
}

TEST_CASE("database refuses a corrupt database at open", "[sqlite][database]") {
    temp_directory dir;
    auto bytes = healthy_database_bytes(dir);
    const std::size_t page_size =
        (static_cast<unsigned char>(bytes[16]) << 8) | static_cast<unsigned char>(bytes[17]);
    REQUIRE(page_size >= 512);
    REQUIRE(bytes.size() >= 4 * page_size);

    SECTION("the schema page's b-tree header is damaged") {
        bytes[100] = '\x07'; // not a b-tree page type
        write_file(dir.file("bad-schema.db"), bytes);
        CHECK(open_error(dir.file("bad-schema.db")) == errc::store_corrupt);
    }
    SECTION("the schema page's cells are garbage") {
        for (std::size_t i = 108; i < page_size; ++i)
            bytes[i] = '\xff';
        write_file(dir.file("garbage-schema.db"), bytes);
        CHECK(open_error(dir.file("garbage-schema.db")) == errc::store_corrupt);
    }
    SECTION("a data page is garbage: found at open by quick_check_on_open") {
        for (std::size_t i = 2 * page_size; i < 4 * page_size; ++i)
            bytes[i] = '\xa5';
        write_file(dir.file("bad-page.db"), bytes);
        database_options checked;
        checked.quick_check_on_open = true;
        CHECK(open_error(dir.file("bad-page.db"), checked) == errc::store_corrupt);
    }
}

TEST_CASE("database reports an unreachable file as unavailable", "[sqlite][database]") {
    temp_directory dir;
    CHECK(open_error(dir.file("missing/dir/a.db")) == errc::store_unavailable);
    database_options no_create;
    no_create.create_if_missing = false;
    CHECK(open_error(dir.file("absent.db"), no_create) == errc::store_unavailable);
    CHECK_THROWS_AS(database::open(dir.file("missing/dir/a.db")), letterbox::error);
}

namespace {

/// A file's bytes and modification time, to show that an open changed nothing.
struct file_snapshot {
    std::string bytes;
    std::filesystem::file_time_type mtime;
    friend bool operator==(const file_snapshot&, const file_snapshot&) = default;
};

file_snapshot snapshot(const std::string& path) {
    return {read_file(path), std::filesystem::last_write_time(path)};
}

/// Sets a file's modification time an hour back, so that any write would move it.
void age(const std::string& path) {
    std::filesystem::last_write_time(path, std::filesystem::file_time_type::clock::now() - 1h);
}

/// Another application's database: a table of its own, in rollback-journal mode.
std::string foreign_database(const temp_directory& dir) {
    const auto path = dir.file("other-app.db");
    sqlite3* raw = nullptr;
    REQUIRE(sqlite3_open(path.c_str(), &raw) == SQLITE_OK);
    REQUIRE(sqlite3_exec(raw,
                         "CREATE TABLE customers (id INTEGER PRIMARY KEY, name TEXT);"
                         "INSERT INTO customers (name) VALUES ('acme'), ('globex');",
                         nullptr, nullptr, nullptr) == SQLITE_OK);
    sqlite3_close(raw);
    return path;
}

} // namespace

TEST_CASE("database opened read-only refuses a file without letterbox's schema and changes "
          "nothing in it",
          "[sqlite][database]") {
    temp_directory dir;
    database_options read_only;
    read_only.read_only = true;
    SECTION("a 0-byte file") {
        const auto path = dir.file("empty.db");
        write_file(path, "");
        age(path);
        const auto before = snapshot(path);
        std::error_code ec;
        auto db = database::open(path, read_only, ec);
        CHECK(ec == errc::store_not_a_database);
        CHECK_THAT(db.last_error_message(), Catch::Contains("no letterbox schema"));
        CHECK(snapshot(path) == before);
        CHECK(std::filesystem::file_size(path) == 0);
        CHECK_FALSE(std::filesystem::exists(path + "-wal"));
    }
    SECTION("another application's database") {
        const auto path = foreign_database(dir);
        age(path);
        const auto before = snapshot(path);
        CHECK(open_error(path, read_only) == errc::store_not_a_database);
        CHECK(snapshot(path) == before);
        CHECK_FALSE(std::filesystem::exists(path + "-wal"));
    }
    SECTION("a missing file is not created") {
        CHECK(open_error(dir.file("absent.db"), read_only) == errc::store_unavailable);
        CHECK_FALSE(std::filesystem::exists(dir.file("absent.db")));
    }
    SECTION("a file that is not a database") {
        write_file(dir.file("notes.db"), "These are my notes, not a database.\n");
        CHECK(open_error(dir.file("notes.db"), read_only) == errc::store_not_a_database);
    }
}

TEST_CASE("database opened read-only reads a letterbox database and refuses every write",
          "[sqlite][database]") {
    temp_directory dir;
    const auto path = dir.file("healthy.db");
    write_file(path, healthy_database_bytes(dir));
    age(path);
    const auto before = snapshot(path);
    {
        database_options read_only;
        read_only.read_only = true;
        auto db = database::open(path, read_only);
        letterbox::sqlite::outbox_store outbox(db);
        std::error_code ec;
        CHECK(outbox.stats(t0(), ec).pending == 20);
        CHECK_FALSE(ec);
        const auto rows = outbox.list({}, ec);
        CHECK_FALSE(ec);
        REQUIRE(rows.size() == 20);
        CHECK_FALSE(db.begin(ec).is_open());
        CHECK(ec == errc::store_readonly);
        CHECK(outbox.unpark(rows.front().msg.id, t0()) == errc::store_readonly);
        CHECK(outbox.purge_published(t0(), ec) == 0);
        CHECK(ec == errc::store_readonly);
    }
    CHECK(snapshot(path) == before);
}

TEST_CASE("database that may not create the schema refuses a foreign file untouched and opens a "
          "letterbox database",
          "[sqlite][database]") {
    temp_directory dir;
    database_options existing_only;
    existing_only.create_schema_if_missing = false;
    const auto foreign = foreign_database(dir);
    age(foreign);
    const auto before = snapshot(foreign);
    CHECK(open_error(foreign, existing_only) == errc::store_not_a_database);
    CHECK(snapshot(foreign) == before);

    const auto empty = dir.file("empty.db");
    write_file(empty, "");
    CHECK(open_error(empty, existing_only) == errc::store_not_a_database);
    CHECK(std::filesystem::file_size(empty) == 0);

    const auto path = dir.file("healthy.db");
    write_file(path, healthy_database_bytes(dir));
    std::error_code ec;
    auto db = database::open(path, existing_only, ec);
    REQUIRE_FALSE(ec);
    auto uow = db.begin(ec); // a letterbox database opened this way is writable as usual
    CHECK_FALSE(ec);
}

TEST_CASE("database retries a locked database a bounded number of times, then store_busy",
          "[sqlite][database]") {
    temp_directory dir;
    const auto path = dir.file("shared.db");
    letterbox::message_id_generator ids{42};
    const auto before = event(ids, "1");
    {
        // Committed before the other process takes the lock; closed before the fork, so the
        // child inherits no SQLite state of this file.
        auto db = database::open(path);
        letterbox::sqlite::outbox_store outbox(db);
        auto uow = db.begin();
        REQUIRE_FALSE(outbox.add(uow, before, t0()));
        REQUIRE_FALSE(uow.commit());
    }

    int ready[2];
    int release[2];
    REQUIRE(::pipe(ready) == 0);
    REQUIRE(::pipe(release) == 0);
    const pid_t child = ::fork();
    REQUIRE(child >= 0);
    if (child == 0) {
        ::close(ready[0]);
        ::close(release[1]);
        hold_write_lock(path, ready[1], release[0]);
    }
    ::close(ready[1]);
    ::close(release[0]);
    auto release_child = [&] {
        const char r = 'R';
        const bool sent = ::write(release[1], &r, 1) == 1;
        ::close(release[1]);
        int status = -1;
        ::waitpid(child, &status, 0);
        return sent && WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    };
    const char state = read_byte(ready[0], 20s);
    ::close(ready[0]);
    if (state != 'L') {
        const int status = release_child();
        FAIL("the child could not take the lock: '" << state << "', exit " << status);
    }

    database_options options;
    options.busy_timeout = 50ms;
    options.max_busy_retries = 3;
    options.busy_retry_base_delay = 8ms;
    options.busy_retry_max_delay = 20ms;
    options.jitter_seed = 99;
    std::mutex m;
    std::vector<std::pair<unsigned, std::chrono::milliseconds>> retries;
    options.on_busy_retry = [&](unsigned retry, std::chrono::milliseconds delay) {
        std::lock_guard lock(m);
        retries.emplace_back(retry, delay);
    };

    std::error_code ec;
    auto db = database::open(path, options, ec); // reading needs no lock (WAL)
    REQUIRE_FALSE(ec);
    letterbox::sqlite::outbox_store outbox(db);

    auto uow = db.begin(ec);
    CHECK(ec == errc::store_busy);
    CHECK_FALSE(uow.is_open());
    CHECK(db.busy_retries() == 3);
    REQUIRE(retries.size() == 3);
    for (unsigned i = 0; i < 3; ++i) {
        INFO("retry " << i + 1);
        CHECK(retries[i].first == i + 1);
        const auto full = std::min<std::chrono::milliseconds>(8ms * (1 << i), 20ms);
        CHECK(retries[i].second >= full / 2);
        CHECK(retries[i].second <= full);
    }
    CHECK(db.last_error_message().find("locked") != std::string::npos);
    CHECK_THROWS_AS(db.begin(), letterbox::error);

    // Store writes outside a unit are retried the same way; reads never wait.
    CHECK(outbox.claim("relay", 10, 30s, t0(), ec).empty());
    CHECK(ec == errc::store_busy);
    CHECK(db.busy_retries() == 9);
    CHECK(outbox.find(before.msg.id, ec).has_value());
    CHECK_FALSE(ec);

    // The same seed gives the same jitter.
    {
        std::vector<std::chrono::milliseconds> first, second;
        for (auto* delays : {&first, &second}) {
            auto same = options;
            same.on_busy_retry = [delays](unsigned, std::chrono::milliseconds d) {
                delays->push_back(d);
            };
            auto other = database::open(path, same, ec);
            REQUIRE_FALSE(ec);
            CHECK(other.begin(ec).is_open() == false);
            CHECK(ec == errc::store_busy);
        }
        CHECK(first.size() == 3);
        CHECK(first == second);
    }

    REQUIRE(release_child() == 0);

    // Released: the write goes through, and nothing committed before was lost.
    const auto after = event(ids, "2");
    {
        auto u = db.begin(ec);
        REQUIRE_FALSE(ec);
        REQUIRE_FALSE(outbox.add(u, after, t0()));
        REQUIRE_FALSE(u.commit());
    }
    CHECK(outbox.find(before.msg.id, ec).has_value());
    CHECK(outbox.find(after.msg.id, ec).has_value());
    letterbox::sqlite::inbox_store inbox(db);
    CHECK(inbox.size(ec) == 1); // the child's committed record
    CHECK(outbox.list({}, ec).size() == 2);
}

TEST_CASE("database grows its pool on demand and keeps a bounded number idle",
          "[sqlite][database]") {
    temp_directory dir;
    database_options options;
    options.max_idle_connections = 1;
    std::error_code ec;
    auto db = database::open(dir.file("pool.db"), options, ec);
    REQUIRE_FALSE(ec);
    CHECK(db.open_connections() == 1);
    CHECK(db.idle_connections() == 1);
    letterbox::sqlite::outbox_store outbox(db);
    {
        auto uow = db.begin();
        CHECK(db.idle_connections() == 0);
        CHECK(db.open_connections() == 1);
        // A read while the unit holds its connection opens a second one.
        CHECK(outbox.list({}, ec).empty());
        CHECK(db.open_connections() == 2);
        CHECK(db.idle_connections() == 1);
        auto moved = std::move(uow); // the connection moves with the unit
        CHECK(db.open_connections() == 2);
    }
    CHECK(db.open_connections() == 1); // one idle at most
    CHECK(db.idle_connections() == 1);
}

TEST_CASE("database keeps working for units and stores that outlive it", "[sqlite][database]") {
    temp_directory dir;
    std::error_code ec;
    letterbox::message_id_generator ids{3};
    const auto e = event(ids, "1");
    std::optional<letterbox::sqlite::outbox_store> outbox;
    letterbox::sqlite::unit_of_work uow;
    {
        auto db = database::open(dir.file("a.db"));
        outbox.emplace(db);
        uow = db.begin();
        auto moved = std::move(db);
        CHECK_FALSE(db.is_open()); // NOLINT(bugprone-use-after-move)
        CHECK(db.begin(ec).is_open() == false);
        CHECK(ec == errc::closed);
    }
    REQUIRE_FALSE(outbox->add(uow, e, t0()));
    REQUIRE_FALSE(uow.commit());
    CHECK(outbox->find(e.msg.id, ec).has_value());
}

TEST_CASE("database serves units of work from several threads", "[sqlite][database][threads]") {
    temp_directory dir;
    auto db = database::open(dir.file("threads.db"));
    letterbox::sqlite::outbox_store outbox(db);
    constexpr int threads = 4;
    constexpr int units = 25;
    std::atomic<int> failures{0};
    std::vector<std::thread> workers;
    for (int t = 0; t < threads; ++t) {
        workers.emplace_back([&, t] {
            letterbox::message_id_generator ids{static_cast<std::uint64_t>(100 + t)};
            for (int i = 0; i < units; ++i) {
                std::error_code ec;
                auto uow = db.begin(ec);
                if (ec || outbox.add(uow, event(ids, std::to_string(t)), t0()) || uow.commit())
                    ++failures;
                if (!outbox.find(ids(), ec).has_value() && ec)
                    ++failures;
            }
        });
    }
    for (auto& w : workers)
        w.join();
    CHECK(failures == 0);
    std::error_code ec;
    const auto rows = outbox.list({std::nullopt, 0, 1000}, ec);
    REQUIRE_FALSE(ec);
    CHECK(rows.size() == threads * units);
    CHECK(outbox.stats(t0(), ec).pending == threads * units);
}

TEST_CASE("database opens as docs/sqlite.md shows", "[sqlite][database]") {
    temp_directory dir;
    auto db = open_orders(dir.file("orders.db"));
    REQUIRE(db.has_value());
    letterbox::sqlite::outbox_store outbox(*db);
    letterbox::sqlite::inbox_store inbox(*db);
    std::error_code ec;
    CHECK(outbox.stats(t0(), ec) == letterbox::outbox_stats{});
    CHECK(inbox.size(ec) == 0);
    // A file that is not a database: reported, not opened.
    write_file(dir.file("notes.txt"), "just notes");
    CHECK_FALSE(open_orders(dir.file("notes.txt")).has_value());
}

} // namespace unit_sqlite_database
