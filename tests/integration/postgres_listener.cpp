// SPDX-License-Identifier: BSL-1.0
// postgres::outbox_listener against a real server (LETTERBOX_POSTGRES_URL): a commit in another
// connection wakes it, a rollback or another schema's commit does not, and it comes back after
// the server dropped its connection. And the rule it exists for: a database that answers slowly
// never stalls the io_context that a relay and an AMQP transport share (the relay's store calls
// run on relay_options::store_executor), so heartbeats and confirms keep flowing
// (LETTERBOX_AMQP_URL).

#include <letterbox/amqp/transport.hpp>
#include <letterbox/amqp/url.hpp>
#include <letterbox/message.hpp>
#include <letterbox/outbox/outbox_relay.hpp>
#include <letterbox/postgres/database.hpp>
#include <letterbox/postgres/outbox_listener.hpp>
#include <letterbox/postgres/outbox_store.hpp>
#include <letterbox/steady_clock.hpp>
#include <letterbox/topology/queue.hpp>

#include "integration/amqp_broker.hpp"
#include "integration/postgres_server.hpp"

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/thread_pool.hpp>

#include <catch2/catch.hpp>

#include <algorithm>
#include <chrono>
#include <functional>
#include <optional>
#include <string>

namespace integration_postgres_listener {

namespace {

using namespace std::chrono_literals;
namespace pg = letterbox::postgres;

/// Runs `io` until `done()` or `timeout`; whether `done()` held.
bool run_until(boost::asio::io_context& io, const std::function<bool()>& done,
               std::chrono::milliseconds timeout) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (!done()) {
        const auto now = std::chrono::steady_clock::now();
        if (now >= deadline)
            return false;
        io.run_one_for(std::min<std::chrono::steady_clock::duration>(deadline - now, 50ms));
    }
    return true;
}

letterbox::outbox_entry event(letterbox::message_id_generator& ids, std::string aggregate_id,
                              std::string routing_key = "nowhere") {
    letterbox::outbox_entry e;
    e.msg.id = ids();
    e.msg.type = "order.placed";
    e.msg.routing_key = std::move(routing_key);
    e.msg.body = "{}";
    e.aggregate_type = "order";
    e.aggregate_id = std::move(aggregate_id);
    return e;
}

/// Adds `e` in a unit of its own and commits it, or rolls it back.
void add(pg::database& db, pg::outbox_store& outbox, const letterbox::outbox_entry& e,
         bool commit = true) {
    auto u = db.begin();
    REQUIRE_FALSE(outbox.add(u, e, std::chrono::system_clock::now()));
    if (commit)
        REQUIRE_FALSE(u.commit());
    else
        REQUIRE_FALSE(u.rollback());
}

} // namespace

TEST_CASE("postgres: a commit in another connection wakes the outbox listener",
          "[integration][postgres]") {
    test_support::scratch_schema schema, other_schema;
    const auto url = test_support::postgres_url();
    auto db = pg::database::open(url, schema.options());
    auto other_db = pg::database::open(url, other_schema.options());
    pg::outbox_store outbox(db), other_outbox(other_db);
    letterbox::message_id_generator ids{21};

    boost::asio::io_context io;
    int woken = 0;
    pg::outbox_listener listener(io.get_executor(), db, [&] { ++woken; });
    listener.start();
    // Once when it starts listening: rows committed while nobody listened.
    REQUIRE(run_until(
        io, [&] { return listener.listening(); }, 10s));
    CHECK(woken == 1);

    add(db, outbox, event(ids, "1"));
    REQUIRE(run_until(
        io, [&] { return woken == 2; }, 10s));
    CHECK(listener.notifications() == 1);

    // A rollback announces nothing; another schema's commit is not ours. The commit after them
    // is the next announcement this listener sees.
    add(db, outbox, event(ids, "2"), false);
    add(other_db, other_outbox, event(ids, "3"));
    add(db, outbox, event(ids, "4"));
    REQUIRE(run_until(
        io, [&] { return woken == 3; }, 10s));
    CHECK(listener.notifications() == 2);

    // One unit with several rows: one announcement.
    {
        auto u = db.begin();
        for (int i = 0; i < 5; ++i)
            REQUIRE_FALSE(outbox.add(u, event(ids, "5"), std::chrono::system_clock::now()));
        REQUIRE_FALSE(u.commit());
    }
    add(db, outbox, event(ids, "6"));
    REQUIRE(run_until(
        io, [&] { return woken == 5; }, 10s));
    CHECK(listener.notifications() == 4);

    listener.stop();
    add(db, outbox, event(ids, "7"));
    io.run_for(200ms);
    CHECK(woken == 5);
}

TEST_CASE("postgres: the outbox listener comes back after the server dropped its connection",
          "[integration][postgres]") {
    test_support::scratch_schema schema;
    auto db = pg::database::open(test_support::postgres_url(), schema.options());
    pg::outbox_store outbox(db);
    letterbox::message_id_generator ids{22};

    boost::asio::io_context io;
    int woken = 0;
    pg::outbox_listener listener(io.get_executor(), db, [&] { ++woken; });
    listener.set_retry_delays(50ms, 200ms);
    listener.start();
    REQUIRE(run_until(
        io, [&] { return listener.listening(); }, 10s));

    {
        auto u = db.begin();
        std::error_code ec;
        auto r = u.connection().exec(
            "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
            "WHERE application_name = 'letterbox-listener' AND pid <> pg_backend_pid()",
            {}, ec);
        REQUIRE_FALSE(ec);
        REQUIRE(r.int64(0, 0).value_or(0) >= 1);
        REQUIRE_FALSE(u.commit());
    }
    REQUIRE(run_until(
        io, [&] { return listener.connections() == 2; }, 10s));
    CHECK(woken == 2); // once per connection
    add(db, outbox, event(ids, "1"));
    REQUIRE(run_until(
        io, [&] { return woken == 3; }, 10s));
}

TEST_CASE("postgres: a slow database never stalls the relay's io_context: heartbeats and "
          "confirms keep flowing",
          "[integration][postgres][amqp]") {
    test_support::scratch_schema schema;
    auto options = schema.options();
    options.max_connections = 4;
    auto db = pg::database::open(test_support::postgres_url(), options);
    pg::outbox_store outbox(db);
    const std::string s = schema.name();
    {
        // Every UPDATE of the outbox (each claim, each mark) takes 1 s on the server.
        auto u = db.begin();
        REQUIRE_FALSE(u.connection().exec(
            "CREATE FUNCTION " + s +
            ".slow() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN PERFORM pg_sleep(1); "
            "RETURN NULL; END $$; CREATE TRIGGER slow_updates BEFORE UPDATE ON " +
            s + ".letterbox_outbox FOR EACH STATEMENT EXECUTE FUNCTION " + s + ".slow()"));
        REQUIRE_FALSE(u.commit());
    }

    boost::asio::io_context io;
    auto work = boost::asio::make_work_guard(io);
    auto url = letterbox::amqp::parse_url(amqp_test::broker_url());
    url.heartbeat = 1s; // the broker closes the connection after two silent heartbeats
    letterbox::amqp::transport transport(io.get_executor(), url);
    letterbox::testing::unique_names names{"letterbox.pg"};
    letterbox::topology::queue q;
    q.name = names("slow-db");
    q.durable = false;
    q.arguments.set("x-expires", std::int64_t{300000});
    std::optional<std::error_code> declared;
    transport.async_declare(q, [&](std::error_code ec) { declared = ec; });
    REQUIRE(run_until(
        io, [&] { return declared.has_value(); }, 20s));
    REQUIRE_FALSE(*declared);

    constexpr int rows = 12;
    letterbox::message_id_generator ids{23};
    for (int i = 0; i < rows; ++i)
        add(db, outbox, event(ids, std::to_string(i % 3), q.name));

    //[postgres_relay
    boost::asio::thread_pool store_thread(1); // the relay's database calls run here
    letterbox::relay_options o;
    o.store_executor = store_thread.get_executor();
    o.batch_size = 6;
    o.poll_interval = 100ms; // the fallback; the listener wakes it at each commit
    o.retention = std::nullopt;
    letterbox::steady_clock clock;
    letterbox::outbox_relay relay(outbox, transport, clock, o);
    letterbox::postgres::outbox_listener listener(io.get_executor(), db, relay.waker());
    listener.start();
    std::optional<std::error_code> finished;
    relay.async_run([&](std::error_code ec) { finished = ec; });
    //]

    // Meanwhile, on the same io_context: a message every 100 ms, each confirm timed, and the
    // connection watched.
    letterbox::message_id_generator side_ids{24};
    std::chrono::steady_clock::duration worst{};
    int confirmed = 0, sent = 0, disconnected_samples = 0;
    boost::asio::steady_timer tick(io);
    std::function<void()> next = [&] {
        tick.expires_after(100ms);
        tick.async_wait([&](boost::system::error_code ec) {
            if (ec)
                return;
            if (!transport.is_connected())
                ++disconnected_samples;
            letterbox::message m;
            m.id = side_ids();
            m.routing_key = q.name;
            m.body = "side";
            const auto at = std::chrono::steady_clock::now();
            ++sent;
            transport.async_publish(m, [&, at](std::error_code e) {
                if (!e) {
                    ++confirmed;
                    worst = std::max(worst, std::chrono::steady_clock::now() - at);
                }
            });
            next();
        });
    };
    next();
    std::error_code ec;
    REQUIRE(run_until(
        io, [&] { return outbox.stats(clock.wall_now(), ec).published == std::size_t{rows}; },
        90s));
    tick.cancel();
    listener.stop();
    relay.stop();
    REQUIRE(run_until(
        io, [&] { return finished.has_value(); }, 20s));
    CHECK_FALSE(*finished);

    // The relay's store calls took seconds (several UPDATEs of 1 s each) ...
    CHECK(relay.counters().claims >= 2);
    // ... while every side publish was confirmed promptly, and the connection never dropped.
    INFO("side publishes " << sent << ", confirmed " << confirmed << ", worst confirm "
                           << std::chrono::duration_cast<std::chrono::milliseconds>(worst).count()
                           << " ms");
    WARN("slow database: " << relay.counters().claims << " claims of 1 s; side publishes " << sent
                           << ", confirmed " << confirmed << ", worst confirm "
                           << std::chrono::duration_cast<std::chrono::milliseconds>(worst).count()
                           << " ms");
    CHECK(sent >= 20);
    CHECK(confirmed >= sent - 1);
    CHECK(worst < 500ms); // a blocked io_context would wait a whole store call (1 s)
    CHECK(disconnected_samples == 0);
    bool closed = false;
    transport.async_close([&](std::error_code) { closed = true; });
    run_until(
        io, [&] { return closed; }, 10s);
    store_thread.join();
}

} // namespace integration_postgres_listener
