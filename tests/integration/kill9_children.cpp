// SPDX-License-Identifier: BSL-1.0
// The two processes the kill -9 campaigns (kill9_campaigns.cpp) start, kill and restart: hidden
// test cases that this executable runs when a driver starts it again by name, configured by
// the LETTERBOX_KILL9_* environment (kill9_support.hpp). Run on their own they do nothing.
// Each works on SQLite (a file) or on PostgreSQL (a schema), as LETTERBOX_KILL9_STORE says.
//
// - The relay: an outbox_relay over the outbox and the real broker, until the outbox has
//   nothing pending (or, with LETTERBOX_KILL9_RUN_UNTIL=terminated, until SIGTERM: how
//   postgres_relays.cpp runs four of them while its producers write); then it stops gracefully
//   and exits 0. On PostgreSQL its store calls run on a thread pool of one thread
//   (`relay_options::store_executor`), never on the I/O thread, and an `outbox_listener` on the
//   I/O thread wakes it when another process commits rows.
// - The consumer: a letterbox::consumer with prefetch N over the idempotent middleware (the
//   inbox and an `effects` row in one unit of work, in one SQLite file or one PostgreSQL
//   transaction); its effect takes a few milliseconds of real time so that deliveries pile up
//   unacknowledged. It runs until killed.
//
// Either may be told to die at the n-th hit of a failpoint: it raises SIGKILL there, so it
// stops exactly where a killed process would, with nothing cleaned up.

#include <letterbox/amqp/transport.hpp>
#include <letterbox/postgres/database.hpp>
#include <letterbox/postgres/inbox_store.hpp>
#include <letterbox/postgres/outbox_listener.hpp>
#include <letterbox/postgres/outbox_store.hpp>
#include <letterbox/postgres/unit_of_work.hpp>
#include <letterbox/sqlite.hpp>

#include <letterbox/commit_group.hpp>
#include <letterbox/consumer.hpp>
#include <letterbox/disposition.hpp>
#include <letterbox/handler_failure.hpp>
#include <letterbox/handling.hpp>
#include <letterbox/middleware/idempotent.hpp>
#include <letterbox/outbox/outbox_relay.hpp>
#include <letterbox/steady_clock.hpp>

#include "kill9_support.hpp"

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/thread_pool.hpp>

#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <fstream>
#include <functional>
#include <initializer_list>
#include <iostream>
#include <optional>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#include <signal.h>
#include <unistd.h>

namespace integration_kill9_children {

namespace {

using namespace std::chrono_literals;

/// Whether this process is a campaign's child; otherwise the case returns at once.
bool started_by_a_campaign() {
    if (!kill9::env(kill9::env_database).empty() && !kill9::env("LETTERBOX_AMQP_URL").empty())
        return true;
    WARN("a child process of the [kill9] campaigns: it runs only when they start it");
    return false;
}

std::chrono::steady_clock::time_point lifetime_deadline() {
    return std::chrono::steady_clock::now() +
           std::chrono::seconds(
               kill9::env_int(kill9::env_lifetime_s, kill9::child_lifetime.count()));
}

/// Closes `transport`, running `io` until the close completed (bounded).
void close(letterbox::amqp::transport& transport, boost::asio::io_context& io) {
    bool closed = false;
    transport.async_close([&](std::error_code) { closed = true; });
    const auto deadline = std::chrono::steady_clock::now() + 10s;
    while (!closed && std::chrono::steady_clock::now() < deadline)
        io.run_for(10ms);
}

/// The PostgreSQL database of a child: the schema of `env_database`, its connections named by
/// `env_owner`.
letterbox::postgres::database open_postgres(const std::string& application_name) {
    letterbox::postgres::database_options options;
    options.schema = kill9::env(kill9::env_database);
    options.application_name = application_name;
    options.max_connections = 4;
    return letterbox::postgres::database::open(kill9::postgres_url(), options);
}

// ---- the relay's stores ----------------------------------------------------------------------

/// A relay on a SQLite file: its store calls run on the relay's executor (synchronously), as
/// the campaigns have always run it.
struct sqlite_relay_store {
    letterbox::sqlite::database db =
        letterbox::sqlite::database::open(kill9::env(kill9::env_database));
    letterbox::sqlite::outbox_store outbox{db};

    explicit sqlite_relay_store(const std::string&) {}
    boost::asio::any_io_executor store_executor() { return {}; }
    void listen(boost::asio::io_context&, std::function<void()>) {}
    void stop() {}
    void report(std::ostream&) const {}
};

/// A relay on a PostgreSQL schema: its store calls run on a thread of their own, and a listener
/// on the relay's executor wakes it when rows are committed (by any process).
struct postgres_relay_store {
    letterbox::postgres::database db;
    letterbox::postgres::outbox_store outbox{db};
    boost::asio::thread_pool pool{1};
    std::optional<letterbox::postgres::outbox_listener> listener;
    std::uint64_t notifications = 0; // the listener's counts, kept when it is gone
    std::uint64_t connections = 0;

    explicit postgres_relay_store(const std::string& owner)
        : db(open_postgres(owner)) {}
    boost::asio::any_io_executor store_executor() { return pool.get_executor(); }
    void listen(boost::asio::io_context& io, std::function<void()> wake) {
        listener.emplace(io.get_executor(), db, std::move(wake));
        listener->start();
    }
    /// After the relay's `async_run` completed (no store call is out any more).
    void stop() {
        if (listener) {
            listener->stop();
            notifications = listener->notifications();
            connections = listener->connections();
            listener.reset();
        }
        pool.join();
    }
    void report(std::ostream& out) const {
        out << "listener_notifications=" << notifications
            << "\nlistener_connections=" << connections << '\n';
    }
};

template <class Store>
void run_relay() {
    const auto owner = kill9::env(kill9::env_owner);
    REQUIRE_FALSE(owner.empty());
    const auto fp = kill9::failpoint::parse(kill9::env(kill9::env_failpoint));
    const bool until_drained = kill9::env(kill9::env_run_until) != "terminated";

    // Before the store: the store's listener is an I/O object of this context, and must be
    // destroyed before it.
    boost::asio::io_context io;
    auto work = boost::asio::make_work_guard(io);
    Store store(owner);
    auto& outbox = store.outbox;
    letterbox::steady_clock clock;
    letterbox::amqp::transport_options to;
    to.connection_name = owner;
    to.reconnect_delay_max = 500ms;
    letterbox::amqp::transport transport(io.get_executor(), kill9::env("LETTERBOX_AMQP_URL"), to);

    letterbox::relay_options o;
    o.owner = owner;
    o.batch_size = static_cast<std::size_t>(kill9::env_int(kill9::env_batch, 16));
    o.window = static_cast<std::size_t>(kill9::env_int(kill9::env_window, 4));
    // Short leases and polls: a killed relay's rows are taken over soon, so a campaign of a
    // few kills stays within seconds.
    o.lease = std::chrono::milliseconds(kill9::env_int(kill9::env_lease_ms, 500));
    o.poll_interval = std::chrono::milliseconds(kill9::env_int(kill9::env_poll_ms, 50));
    o.row_retry = {100ms, 2.0, 1s, 0.0};
    o.transport_retry = {50ms, 2.0, 1s, 0.2};
    o.stop_timeout = 5s;
    o.retention = std::nullopt; // the driver counts the published rows at the end
    o.seed = std::stoull(kill9::env(kill9::env_seed));
    o.store_executor = store.store_executor();
    std::uint64_t hits = 0;
    o.failpoint = [&](letterbox::relay_point p, const letterbox::outbox_record&) {
        if (fp && letterbox::to_string(p) == fp->point && ++hits == fp->hit)
            ::raise(SIGKILL); // dies here, exactly as a killed process would
        return false;
    };
    letterbox::outbox_relay relay(outbox, transport, clock, o);
    std::optional<std::error_code> finished;
    relay.async_run([&](std::error_code ec) { finished = ec; });
    store.listen(io, relay.waker());
    boost::asio::signal_set terminate(io, SIGTERM);
    terminate.async_wait([&](const boost::system::error_code& ec, int) {
        if (!ec)
            relay.stop();
    });

    // Run until nothing is pending (rows leased by a killed relay included: they are taken
    // over when their leases expire), then stop gracefully. The check is a store call: it runs
    // where the relay's store calls run (on PostgreSQL, not on this I/O thread).
    std::atomic<bool> drained{false};
    std::atomic<bool> checking{false};
    const auto check_drained = [&] {
        std::error_code ec;
        if (outbox.stats(clock.wall_now(), ec).pending == 0 && !ec)
            drained = true;
        checking = false;
    };
    const auto store_ex = store.store_executor();
    const auto deadline = lifetime_deadline();
    bool stopping = false;
    while (!finished && std::chrono::steady_clock::now() < deadline) {
        io.run_for(20ms);
        if (!until_drained || stopping || finished)
            continue;
        if (drained) {
            relay.stop();
            stopping = true;
        } else if (!checking.exchange(true)) {
            if (store_ex)
                boost::asio::post(store_ex, check_drained);
            else
                check_drained();
        }
    }
    // The store's thread has run its last call (a drain check included) when this returns.
    store.stop();
    terminate.cancel();
    REQUIRE(finished.has_value());
    CHECK_FALSE(*finished);
    const auto c = relay.counters();
    std::cout << "relay " << owner << ": published " << c.published << ", publish attempts "
              << c.publish_attempts << ", leases lost " << c.lease_lost << ", leases expired "
              << c.leases_expired << std::endl;
    if (const auto path = kill9::env(kill9::env_counters); !path.empty()) {
        std::ofstream out(path);
        out << "claims=" << c.claims << "\nclaimed=" << c.claimed
            << "\npublish_attempts=" << c.publish_attempts << "\npublished=" << c.published
            << "\nfailed=" << c.failed << "\ntransport_failures=" << c.transport_failures
            << "\nstore_errors=" << c.store_errors << "\nlease_lost=" << c.lease_lost
            << "\nleases_expired=" << c.leases_expired << "\nabandoned=" << c.abandoned
            << "\nmax_in_flight=" << c.max_in_flight << '\n';
        store.report(out);
    }
    close(transport, io);
}

// ---- the consumer's stores -------------------------------------------------------------------

/// The consumer's database on a SQLite file.
struct sqlite_consumer_store {
    using unit_type = letterbox::sqlite::unit_of_work;
    letterbox::sqlite::database db =
        letterbox::sqlite::database::open(kill9::env(kill9::env_database));
    letterbox::sqlite::inbox_store inbox{db};
    const std::string effect_sql = "INSERT INTO effects(message_id, pid) VALUES (?1, ?2)";
    const std::string delivery_sql =
        "INSERT INTO deliveries(message_id, redelivered, pid) VALUES (?1, ?2, ?3)";

    explicit sqlite_consumer_store(const std::string&) {}

    /// Runs `sql` in `u` with the message id and `values` as its parameters.
    static std::error_code insert(unit_type& u, const std::string& sql, const std::string& id,
                                  std::initializer_list<std::int64_t> values) {
        std::error_code ec;
        auto st = u.connection().prepare(sql, ec);
        if (ec)
            return ec;
        st->bind_text(1, id);
        int i = 2;
        for (const auto v : values)
            st->bind_int64(i++, v);
        return st->execute();
    }
    /// Prepares the unit that logs a delivery on its own.
    static std::error_code log_unit(unit_type&) { return {}; }
};

/// The consumer's database on a PostgreSQL schema: the effect and the inbox record in one
/// PostgreSQL transaction.
struct postgres_consumer_store {
    using unit_type = letterbox::postgres::unit_of_work;
    letterbox::postgres::database db;
    letterbox::postgres::inbox_store inbox{db};
    const std::string effect_sql;
    const std::string delivery_sql;

    explicit postgres_consumer_store(const std::string& name)
        : db(open_postgres(name))
        , effect_sql("INSERT INTO " + kill9::env(kill9::env_database) +
                     ".effects(message_id, pid) VALUES ($1, $2)")
        , delivery_sql("INSERT INTO " + kill9::env(kill9::env_database) +
                       ".deliveries(message_id, redelivered, pid) VALUES ($1, $2, $3)") {}

    static std::error_code insert(unit_type& u, const std::string& sql, const std::string& id,
                                  std::initializer_list<std::int64_t> values) {
        std::vector<letterbox::postgres::param> params{letterbox::postgres::param::text(id)};
        for (const auto v : values)
            params.emplace_back(v);
        std::error_code ec;
        (void)u.connection().exec(sql, params, ec);
        return ec;
    }
    /// The delivery log's own unit commits without waiting for the WAL flush (about 4 ms): it
    /// is the campaign's bookkeeping, and only the client is killed, never the server. The
    /// idempotent unit (the effect and the inbox record) commits as an application's would.
    static std::error_code log_unit(unit_type& u) {
        return u.connection().exec("SET LOCAL synchronous_commit TO off");
    }
};

template <class Store>
void run_consumer() {
    using unit_type = typename Store::unit_type;
    const auto fp = kill9::failpoint::parse(kill9::env(kill9::env_failpoint));
    const auto effect_time = std::chrono::milliseconds(std::stoi(kill9::env(kill9::env_effect_ms)));
    const auto pid = static_cast<std::int64_t>(::getpid());
    const auto name = kill9::env(kill9::env_owner).empty() ? std::string("kill9-consumer")
                                                           : kill9::env(kill9::env_owner);

    Store store(name);
    auto& db = store.db;
    auto& inbox = store.inbox;
    letterbox::steady_clock clock;
    boost::asio::io_context io;
    auto work = boost::asio::make_work_guard(io);
    letterbox::amqp::transport_options to;
    to.connection_name = "kill9-consumer";
    letterbox::amqp::transport transport(io.get_executor(), kill9::env("LETTERBOX_AMQP_URL"), to);

    // The effect: one `effects` row, then some real work time, in the idempotent unit.
    std::uint64_t effect_hits = 0;
    auto effect = [&](const letterbox::message& m, unit_type& u) -> std::error_code {
        if (auto failed = Store::insert(u, store.effect_sql, letterbox::to_string(m.id), {pid}))
            return failed;
        std::this_thread::sleep_for(effect_time);
        if (fp && fp->point == kill9::consumer_after_effect && ++effect_hits == fp->hit)
            ::raise(SIGKILL); // the effect is written, the inbox record with it: neither commits
        return {};
    };
    // Each unit of work: after its commit (inbox record and effect durable), before the ack.
    std::uint64_t commit_hits = 0;
    auto begin = [&] {
        auto u = db.begin();
        if (fp && fp->point == kill9::consumer_after_commit) {
            const auto ec = u.on_commit([&] {
                if (++commit_hits == fp->hit)
                    ::raise(SIGKILL); // committed, never acknowledged: the broker redelivers
            });
            if (ec) // the failure of the delivery, like any store error (handler below)
                throw letterbox::error(ec, "on_commit");
        }
        return u;
    };
    auto applied = letterbox::idempotent(effect, inbox, begin, kill9::consumer_id, clock);

    // Every delivery is logged first, in a transaction of its own, so the driver can count
    // broker-level duplicates; then the idempotent unit runs. The consumer acks on success.
    // With group commit, the log goes into the batch's unit (on SQLite the database has one
    // writer, and the batch holds it), before the message's savepoint: a crash before the
    // batch's commit loses those rows with the rest of the batch.
    auto log_delivery = [&](unit_type& u, const letterbox::middleware::handling& x) {
        return Store::insert(u, store.delivery_sql, letterbox::to_string(x.d.msg.id),
                             {x.d.redelivered ? 1 : 0, pid});
    };
    auto handler = [&](const letterbox::middleware::handling& x) {
        letterbox::middleware::handler_failure failure;
        try {
            std::error_code ec;
            if (x.group != nullptr) {
                // The owner is the inbox store, as for the idempotent handler: one shared unit.
                auto* batch = x.group->unit<unit_type>(begin, &inbox);
                ec = batch != nullptr ? log_delivery(*batch, x)
                                      : make_error_code(letterbox::errc::transaction_closed);
                if (!ec)
                    ec = applied(x.d.msg, x.group);
            } else {
                auto u = db.begin();
                ec = Store::log_unit(u);
                if (!ec)
                    ec = log_delivery(u, x);
                if (!ec)
                    ec = u.commit();
                if (!ec)
                    ec = applied(x.d.msg);
            }
            if (!ec)
                return letterbox::middleware::disposition::ack();
            failure.error = ec;
        } catch (const std::system_error& e) {
            failure.error = e.code();
        }
        // A store failure: the message comes back (it is never dropped).
        return letterbox::middleware::disposition::requeue(std::move(failure));
    };

    letterbox::consumer_options co;
    co.consume.queue = kill9::env(kill9::env_queue);
    co.consume.prefetch = static_cast<std::uint16_t>(std::stoi(kill9::env(kill9::env_prefetch)));
    co.on_failure = letterbox::failure_action::requeue;
    const auto group_commit = kill9::env(kill9::env_group_commit);
    co.group_commit.max_messages = group_commit.empty() ? 0 : std::stoul(group_commit);
    co.group_commit.max_delay = 20ms;
    letterbox::consumer consumer(transport, handler, co);
    std::optional<std::error_code> started;
    consumer.async_start([&](std::error_code ec, const std::string&) { started = ec; });

    // Runs until the driver kills it; a consumer nobody killed is a broken campaign.
    const auto deadline = lifetime_deadline();
    while (std::chrono::steady_clock::now() < deadline) {
        io.run_for(50ms);
        if (started && *started)
            break;
    }
    REQUIRE(started.has_value());
    REQUIRE_FALSE(*started);
    FAIL("the consumer ran for its whole lifetime and nobody killed it");
}

} // namespace

TEST_CASE("kill9 child: relay", "[.kill9_child]") {
    if (!started_by_a_campaign())
        return;
    if (kill9::child_store() == kill9::store_kind::postgres)
        run_relay<postgres_relay_store>();
    else
        run_relay<sqlite_relay_store>();
}

TEST_CASE("kill9 child: consumer", "[.kill9_child]") {
    if (!started_by_a_campaign())
        return;
    if (kill9::child_store() == kill9::store_kind::postgres)
        run_consumer<postgres_consumer_store>();
    else
        run_consumer<sqlite_consumer_store>();
}

} // namespace integration_kill9_children
