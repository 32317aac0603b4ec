// SPDX-License-Identifier: BSL-1.0
// The PostgreSQL component against a real server (LETTERBOX_POSTGRES_URL): connection strings and
// the errors of a bad one (never with the password), the schema and its versions, the unit of
// work's contract where PostgreSQL differs from SQLite (a failed business statement, a
// serialization failure, overlapping units), and the outbox with several claimers at once.

#include <letterbox/message.hpp>
#include <letterbox/outbox_record.hpp>
#include <letterbox/postgres/database.hpp>
#include <letterbox/postgres/inbox_store.hpp>
#include <letterbox/postgres/outbox_store.hpp>
#include <letterbox/postgres/schema.hpp>
#include <letterbox/postgres/unit_of_work.hpp>

#include "integration/postgres_server.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

namespace integration_postgres_database {

namespace {

using namespace std::chrono_literals;
using letterbox::errc;
namespace pg = letterbox::postgres;

const letterbox::store_time t0{std::chrono::sys_days{std::chrono::year{2026} / 12 / 7}};

/// The password of LETTERBOX_POSTGRES_URL (postgresql://user:password@host...).
std::string password_of(const std::string& url) {
    const auto scheme = url.find("://");
    const auto at = url.find('@');
    const auto colon = url.find(':', scheme + 3);
    REQUIRE(scheme != std::string::npos);
    REQUIRE(at != std::string::npos);
    REQUIRE(colon < at);
    return url.substr(colon + 1, at - colon - 1);
}

/// The URL with its password replaced by `other`.
std::string with_password(const std::string& url, const std::string& other) {
    const auto colon = url.find(':', url.find("://") + 3);
    return url.substr(0, colon + 1) + other + url.substr(url.find('@'));
}

letterbox::outbox_entry event(letterbox::message_id_generator& ids, std::string aggregate_id,
                              std::string body = "{}") {
    letterbox::outbox_entry e;
    e.msg.id = ids();
    e.msg.type = "order.placed";
    e.msg.exchange = "orders";
    e.msg.routing_key = "order.placed";
    e.msg.body = std::move(body);
    e.aggregate_type = "order";
    e.aggregate_id = std::move(aggregate_id);
    return e;
}

} // namespace

TEST_CASE("postgres: a business write and its event commit together (docs/postgres.md)",
          "[integration][postgres]") {
    test_support::scratch_schema schema;
    const std::string url = test_support::postgres_url();
    //[postgres_open
    letterbox::postgres::database_options options;
    options.schema = schema.name(); // letterbox's tables live in a schema of their own
    std::error_code ec;
    auto db = letterbox::postgres::database::open(url, options, ec);
    if (ec) // errc::store_unavailable, store_connection_lost, store_schema_too_new, ...
        FAIL(ec.message() << ": " << db.last_error_message()); // never shows the password
    letterbox::postgres::outbox_store outbox(db);
    //]
    {
        auto u = db.begin();
        REQUIRE_FALSE(u.connection().exec("CREATE TABLE " + schema.name() +
                                          ".orders (id text PRIMARY KEY, total bigint)"));
        REQUIRE_FALSE(u.commit());
    }
    letterbox::message_id_generator ids{6};
    const std::string order_id = "42";
    letterbox::outbox_entry placed = event(ids, order_id, R"({"total":1999})");
    const std::string insert_order = "INSERT INTO " + schema.name() + ".orders VALUES ($1, $2)";
    //[postgres_unit_of_work
    auto uow = db.begin(ec);
    REQUIRE_FALSE(ec);
    uow.connection().exec(insert_order,
                          {letterbox::postgres::param::text(order_id),
                           letterbox::postgres::param(std::int64_t{1999})},
                          ec);
    REQUIRE_FALSE(ec); // on failure the unit rolls back when destroyed
    REQUIRE_FALSE(outbox.add(uow, placed, std::chrono::system_clock::now()));
    REQUIRE_FALSE(uow.commit()); // the order and its event, or neither
    //]
    CHECK(outbox.find(placed.msg.id, ec).has_value());
}

TEST_CASE("postgres: a wrong password is refused at open, and no message shows a password",
          "[integration][postgres]") {
    const auto url = test_support::postgres_url();
    const std::string wrong = "wrong-Secret-4711";
    test_support::scratch_schema schema;
    std::error_code ec;
    auto db = pg::database::open(with_password(url, wrong), schema.options(), ec);
    CHECK(ec == errc::store_unavailable);
    CHECK_FALSE(db.is_open());
    const auto text = db.last_error_message();
    INFO(text);
    CHECK(text.find("password authentication failed") != std::string::npos);
    CHECK(text.find(wrong) == std::string::npos);
    CHECK(text.find(password_of(url)) == std::string::npos);
    try {
        (void)pg::database::open(with_password(url, wrong), schema.options());
        FAIL("open did not throw");
    } catch (const letterbox::error& e) {
        CHECK(e.code() == errc::store_unavailable);
        CHECK(std::string(e.what()).find(wrong) == std::string::npos);
    }
}

TEST_CASE("postgres: a malformed connection string is refused without repeating it",
          "[integration][postgres]") {
    const std::string secret = "s3cret%zzpass";
    std::error_code ec;
    auto db = pg::database::open("postgresql://app:" + secret + "@127.0.0.1:1/x", {}, ec);
    CHECK(ec == errc::invalid_argument);
    INFO(db.last_error_message());
    CHECK(db.last_error_message().find("malformed") != std::string::npos);
    CHECK(db.last_error_message().find("s3cret") == std::string::npos);
}

TEST_CASE("postgres: an unreachable server and a missing database are typed errors",
          "[integration][postgres]") {
    std::error_code ec;
    pg::database_options options;
    options.connect_timeout = 2s;
    // Nothing listens on port 1 of the loopback interface.
    (void)pg::database::open("host=127.0.0.1 port=1 dbname=x user=x", options, ec);
    CHECK(ec == errc::store_connection_lost);
    CHECK(ec == letterbox::condition::store_error);

    const auto url = test_support::postgres_url();
    const auto slash = url.rfind('/');
    (void)pg::database::open(url.substr(0, slash) + "/letterbox_no_such_database", options, ec);
    CHECK(ec == errc::store_unavailable);
}

TEST_CASE("postgres: the schema name is checked, and the schema is created once, versioned",
          "[integration][postgres]") {
    const auto url = test_support::postgres_url();
    for (const char* bad : {"", "Orders", "1orders", "or-ders", "a\"; DROP SCHEMA public; --"}) {
        pg::database_options options;
        options.schema = bad;
        std::error_code ec;
        (void)pg::database::open(url, options, ec);
        CHECK(ec == errc::invalid_argument);
    }

    test_support::scratch_schema schema;
    auto refuse = schema.options();
    refuse.create_schema_if_missing = false;
    std::error_code ec;
    (void)pg::database::open(url, refuse, ec);
    CHECK(ec == errc::store_not_a_database);

    // Two opens at once: the advisory lock lets one migrate; both succeed.
    std::vector<std::thread> openers;
    std::atomic<int> opened{0};
    for (int i = 0; i < 2; ++i)
        openers.emplace_back([&] {
            std::error_code e;
            auto db = pg::database::open(url, schema.options(), e);
            if (!e)
                ++opened;
        });
    for (auto& t : openers)
        t.join();
    CHECK(opened == 2);

    auto db = pg::database::open(url, schema.options());
    {
        auto u = db.begin();
        std::error_code e;
        const auto version = pg::schema::installed_version(u.connection(), schema.name(), e);
        CHECK_FALSE(e);
        CHECK(version == pg::schema::latest_version());
        // A newer letterbox wrote this schema: refused, untouched.
        u.connection().exec("UPDATE " + schema.name() +
                                ".letterbox_schema_version SET version = version + 1",
                            {}, e);
        REQUIRE_FALSE(e);
        REQUIRE_FALSE(u.commit());
    }
    (void)pg::database::open(url, schema.options(), ec);
    CHECK(ec == errc::store_schema_too_new);
}

TEST_CASE("postgres: a failed business statement makes commit fail, never succeed",
          "[integration][postgres]") {
    test_support::scratch_schema schema;
    auto db = pg::database::open(test_support::postgres_url(), schema.options());
    pg::outbox_store outbox(db);
    letterbox::message_id_generator ids{7};
    const auto e = event(ids, "1");
    {
        auto u = db.begin();
        REQUIRE_FALSE(outbox.add(u, e, t0));
        std::error_code ec;
        u.connection().exec("INSERT INTO no_such_table VALUES (1)", {}, ec);
        CHECK(ec == errc::store_error);
        CHECK(u.connection().in_failed_transaction());
        // The caller ignores the error and commits: the unit reports it, and nothing is kept.
        CHECK(u.commit() == errc::store_error);
    }
    std::error_code ec;
    CHECK_FALSE(outbox.find(e.msg.id, ec).has_value());
    CHECK(db.last_error_message().find("no_such_table") != std::string::npos);

    // A savepoint takes a failed statement back, and the unit goes on.
    {
        auto u = db.begin();
        REQUIRE_FALSE(u.savepoint());
        u.connection().exec("INSERT INTO no_such_table VALUES (1)", {}, ec);
        CHECK(ec == errc::store_error);
        REQUIRE_FALSE(u.rollback_to_savepoint());
        REQUIRE_FALSE(outbox.add(u, e, t0));
        REQUIRE_FALSE(u.commit());
    }
    CHECK(outbox.find(e.msg.id, ec).has_value());
}

TEST_CASE("postgres: a serialization failure is reported to the caller, not retried",
          "[integration][postgres]") {
    test_support::scratch_schema schema;
    auto options = schema.options();
    options.isolation = pg::database_options::isolation_level::serializable;
    auto db = pg::database::open(test_support::postgres_url(), options);
    {
        auto u = db.begin();
        REQUIRE_FALSE(u.connection().exec("CREATE TABLE " + schema.name() +
                                          ".account (id int PRIMARY KEY, balance int)"));
        REQUIRE_FALSE(u.connection().exec("INSERT INTO " + schema.name() +
                                          ".account VALUES (1, 100), (2, 100)"));
        REQUIRE_FALSE(u.commit());
    }
    // Write skew: each unit reads both rows and updates the other one.
    const std::string sum = "SELECT sum(balance) FROM " + schema.name() + ".account";
    auto a = db.begin();
    auto b = db.begin();
    std::error_code ec;
    a.connection().exec(sum, {}, ec);
    REQUIRE_FALSE(ec);
    b.connection().exec(sum, {}, ec);
    REQUIRE_FALSE(ec);
    a.connection().exec("UPDATE " + schema.name() + ".account SET balance = 0 WHERE id = 1", {},
                        ec);
    REQUIRE_FALSE(ec);
    b.connection().exec("UPDATE " + schema.name() + ".account SET balance = 0 WHERE id = 2", {},
                        ec);
    REQUIRE_FALSE(ec);
    CHECK_FALSE(a.commit());
    const auto second = b.commit();
    CHECK(second == errc::store_serialization_failure);
    CHECK(second == letterbox::condition::store_error);
}

TEST_CASE("postgres: an open unit's rows are invisible to the stores until it commits",
          "[integration][postgres]") {
    test_support::scratch_schema schema;
    auto db = pg::database::open(test_support::postgres_url(), schema.options());
    pg::outbox_store outbox(db);
    pg::inbox_store inbox(db);
    letterbox::message_id_generator ids{8};
    const auto e = event(ids, "1");
    auto u = db.begin();
    REQUIRE_FALSE(outbox.add(u, e, t0));
    REQUIRE_FALSE(inbox.try_record(u, "billing", e.msg.id, t0));
    std::error_code ec;
    CHECK_FALSE(outbox.find(e.msg.id, ec).has_value());
    CHECK(outbox.claim("relay-a", 10, 30s, t0, ec).empty());
    CHECK(outbox.stats(t0, ec) == letterbox::outbox_stats{});
    CHECK_FALSE(inbox.contains("billing", e.msg.id, ec));
    CHECK(inbox.size(ec) == 0);
    // Another unit adds another aggregate's event meanwhile: it waits for nothing.
    {
        auto other = db.begin();
        REQUIRE_FALSE(outbox.add(other, event(ids, "2"), t0));
        REQUIRE_FALSE(other.commit());
    }
    REQUIRE_FALSE(u.commit());
    CHECK(outbox.claim("relay-a", 10, 30s, t0, ec).size() == 2);
    CHECK(inbox.contains("billing", e.msg.id, ec));
}

TEST_CASE("postgres: of two units adding one id at once, the second learns the duplicate",
          "[integration][postgres][threads]") {
    test_support::scratch_schema schema;
    auto db = pg::database::open(test_support::postgres_url(), schema.options());
    pg::outbox_store outbox(db);
    letterbox::message_id_generator ids{9};
    const auto e = event(ids, "");
    auto first = db.begin();
    REQUIRE_FALSE(outbox.add(first, e, t0));
    std::error_code second;
    std::atomic<bool> done{false};
    std::thread t([&] {
        auto u = db.begin();
        second = outbox.add(u, e, t0); // waits for `first`
        if (!second)
            second = u.commit();
        done = true;
    });
    // The second add is blocked on the unique key until the first unit ends.
    const auto deadline = std::chrono::steady_clock::now() + 300ms;
    while (std::chrono::steady_clock::now() < deadline && !done)
        std::this_thread::yield();
    CHECK_FALSE(done);
    REQUIRE_FALSE(first.commit());
    t.join();
    CHECK(second == errc::duplicate_message_id);
}

TEST_CASE("postgres: claimers at once share the rows, and each aggregate keeps its order",
          "[integration][postgres][threads]") {
    test_support::scratch_schema schema;
    auto options = schema.options();
    options.max_connections = 16;
    auto db = pg::database::open(test_support::postgres_url(), options);
    pg::outbox_store outbox(db);
    letterbox::message_id_generator ids{10};

    // 4 writers add 50 events each, to 10 shared aggregates, while 4 relays claim and publish.
    constexpr int writers = 4, per_writer = 50, aggregates = 10, relays = 4;
    std::mutex m;
    std::map<std::string, std::vector<std::uint64_t>> published; // per aggregate, in publish order
    std::map<letterbox::message_id, int> times_published;
    std::atomic<int> writers_done{0};
    std::vector<std::string> failures; // Catch2 assertions are for the main thread only
    const auto failed = [&](std::string what, std::error_code ec) {
        std::lock_guard lock(m);
        failures.push_back(what + ": " + ec.message());
    };
    std::vector<std::thread> threads;
    for (int w = 0; w < writers; ++w)
        threads.emplace_back([&, w] {
            letterbox::message_id_generator mine(100 + static_cast<std::uint64_t>(w));
            for (int i = 0; i < per_writer; ++i) {
                std::error_code ec;
                auto u = db.begin(ec);
                if (!ec)
                    ec = outbox.add(u, event(mine, std::to_string((w + i) % aggregates)), t0);
                if (!ec)
                    ec = u.commit();
                if (ec)
                    failed("add", ec);
            }
            ++writers_done;
        });
    for (int r = 0; r < relays; ++r)
        threads.emplace_back([&, r] {
            const std::string owner = "relay-" + std::to_string(r);
            const auto deadline = std::chrono::steady_clock::now() + 60s;
            while (std::chrono::steady_clock::now() < deadline) {
                std::error_code ec;
                const bool writing = writers_done < writers;
                auto batch = outbox.claim(owner, 8, 30s, t0, ec);
                if (ec)
                    return failed("claim", ec);
                if (batch.empty() && !writing) {
                    if (outbox.stats(t0, ec).pending == 0)
                        return;
                    std::this_thread::yield();
                    continue;
                }
                for (const auto& row : batch) {
                    {
                        std::lock_guard lock(m);
                        published[row.aggregate_id].push_back(row.sequence);
                        ++times_published[row.msg.id];
                    }
                    if (auto e = outbox.mark_published(row.msg.id, owner, t0))
                        failed("mark_published", e);
                }
            }
        });
    for (auto& t : threads)
        t.join();

    for (const auto& f : failures)
        UNSCOPED_INFO(f);
    CHECK(failures.empty());
    std::error_code ec;
    CHECK(outbox.stats(t0, ec).published == std::size_t{writers * per_writer});
    CHECK(times_published.size() == std::size_t{writers * per_writer});
    for (const auto& [id, n] : times_published)
        CHECK(n == 1); // each lease went to one claimer
    for (const auto& [aggregate, sequences] : published) {
        INFO("aggregate " << aggregate);
        CHECK(std::is_sorted(sequences.begin(), sequences.end()));
    }
}

TEST_CASE("postgres: with a lock_timeout, a unit waiting for another's aggregate gives up",
          "[integration][postgres]") {
    test_support::scratch_schema schema;
    auto options = schema.options();
    options.lock_timeout = 200ms;
    auto db = pg::database::open(test_support::postgres_url(), options);
    pg::outbox_store outbox(db);
    letterbox::message_id_generator ids{11};
    auto first = db.begin();
    REQUIRE_FALSE(outbox.add(first, event(ids, "42"), t0));
    // Same thread, same aggregate: without the timeout this would wait for `first` forever.
    auto second = db.begin();
    const auto started = std::chrono::steady_clock::now();
    CHECK(outbox.add(second, event(ids, "42"), t0) == errc::store_busy);
    CHECK(std::chrono::steady_clock::now() - started < 5s);
    CHECK(second.commit() == errc::store_busy); // the failed add failed the unit
    // Another aggregate does not wait at all.
    auto third = db.begin();
    CHECK_FALSE(outbox.add(third, event(ids, "43"), t0));
    CHECK_FALSE(third.commit());
    CHECK_FALSE(first.commit());
}

TEST_CASE("postgres: the pool lends at most max_connections and says when none came free",
          "[integration][postgres]") {
    test_support::scratch_schema schema;
    auto options = schema.options();
    options.max_connections = 2;
    options.acquire_timeout = 200ms;
    auto db = pg::database::open(test_support::postgres_url(), options);
    auto a = db.begin();
    auto b = db.begin();
    CHECK(db.open_connections() == 2);
    std::error_code ec;
    auto c = db.begin(ec);
    CHECK(ec == errc::store_busy);
    CHECK_FALSE(c.is_open());
    REQUIRE_FALSE(a.rollback());
    auto d = db.begin(ec);
    CHECK_FALSE(ec);
    CHECK(d.is_open());
}

} // namespace integration_postgres_database
