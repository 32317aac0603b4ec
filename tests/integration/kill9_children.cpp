// SPDX-License-Identifier: BSL-1.0
// The two processes the kill -9 campaigns (kill9_campaigns.cpp) start, kill and restart: hidden
// test cases that this executable runs when a driver starts it again by name, configured by
// the LETTERBOX_KILL9_* environment (kill9_support.hpp). Run on their own they do nothing.
//
// - The relay: an outbox_relay over the outbox SQLite file and the real broker, until the
//   outbox has nothing pending; then it stops gracefully and exits 0.
// - The consumer: a letterbox::consumer with prefetch N over the idempotent middleware (the
//   inbox and an `effects` row in one unit of work, in one SQLite file); its effect takes a few
//   milliseconds of real time so that deliveries pile up unacknowledged. It runs until killed.
//
// Either may be told to die at the n-th hit of a failpoint: it raises SIGKILL there, so it
// stops exactly where a killed process would, with nothing cleaned up.

#include <letterbox/amqp/transport.hpp>
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

#include <catch2/catch.hpp>

#include <chrono>
#include <cstdint>
#include <iostream>
#include <optional>
#include <string>
#include <system_error>
#include <thread>

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

/// Closes `transport`, running `io` until the close completed (bounded).
void close(letterbox::amqp::transport& transport, boost::asio::io_context& io) {
    bool closed = false;
    transport.async_close([&](std::error_code) { closed = true; });
    const auto deadline = std::chrono::steady_clock::now() + 10s;
    while (!closed && std::chrono::steady_clock::now() < deadline)
        io.run_for(10ms);
}

} // namespace

TEST_CASE("kill9 child: relay", "[.kill9_child]") {
    if (!started_by_a_campaign())
        return;
    const auto owner = kill9::env(kill9::env_owner);
    REQUIRE_FALSE(owner.empty());
    const auto fp = kill9::failpoint::parse(kill9::env(kill9::env_failpoint));

    auto db = letterbox::sqlite::database::open(kill9::env(kill9::env_database));
    letterbox::sqlite::outbox_store outbox(db);
    letterbox::steady_clock clock;
    boost::asio::io_context io;
    auto work = boost::asio::make_work_guard(io);
    letterbox::amqp::transport_options to;
    to.connection_name = owner;
    to.reconnect_delay_max = 500ms;
    letterbox::amqp::transport transport(io.get_executor(), kill9::env("LETTERBOX_AMQP_URL"), to);

    letterbox::relay_options o;
    o.owner = owner;
    o.batch_size = 16;
    o.window = 4;
    // Short leases and polls: a killed relay's rows are taken over soon, so a campaign of a
    // few kills stays within seconds.
    o.lease = 500ms;
    o.poll_interval = 50ms;
    o.row_retry = {100ms, 2.0, 1s, 0.0};
    o.transport_retry = {50ms, 2.0, 1s, 0.2};
    o.stop_timeout = 5s;
    o.retention = std::nullopt; // the driver counts the published rows at the end
    o.seed = std::stoull(kill9::env(kill9::env_seed));
    std::uint64_t hits = 0;
    o.failpoint = [&](letterbox::relay_point p, const letterbox::outbox_record&) {
        if (fp && letterbox::to_string(p) == fp->point && ++hits == fp->hit)
            ::raise(SIGKILL); // dies here, exactly as a killed process would
        return false;
    };
    letterbox::outbox_relay relay(outbox, transport, clock, o);
    std::optional<std::error_code> finished;
    relay.async_run([&](std::error_code ec) { finished = ec; });

    // Run until nothing is pending (rows leased by a killed relay included: they are taken
    // over when their leases expire), then stop gracefully.
    const auto deadline = std::chrono::steady_clock::now() + kill9::child_lifetime;
    bool stopping = false;
    while (!finished && std::chrono::steady_clock::now() < deadline) {
        io.run_for(20ms);
        std::error_code ec;
        if (!stopping && outbox.stats(clock.wall_now(), ec).pending == 0 && !ec) {
            relay.stop();
            stopping = true;
        }
    }
    REQUIRE(finished.has_value());
    CHECK_FALSE(*finished);
    const auto c = relay.counters();
    std::cout << "relay " << owner << ": published " << c.published << ", publish attempts "
              << c.publish_attempts << ", leases lost " << c.lease_lost << ", leases expired "
              << c.leases_expired << std::endl;
    close(transport, io);
}

TEST_CASE("kill9 child: consumer", "[.kill9_child]") {
    if (!started_by_a_campaign())
        return;
    const auto fp = kill9::failpoint::parse(kill9::env(kill9::env_failpoint));
    const auto effect_time = std::chrono::milliseconds(std::stoi(kill9::env(kill9::env_effect_ms)));
    const auto pid = static_cast<std::int64_t>(::getpid());

    auto db = letterbox::sqlite::database::open(kill9::env(kill9::env_database));
    letterbox::sqlite::inbox_store inbox(db);
    letterbox::steady_clock clock;
    boost::asio::io_context io;
    auto work = boost::asio::make_work_guard(io);
    letterbox::amqp::transport_options to;
    to.connection_name = "kill9-consumer";
    letterbox::amqp::transport transport(io.get_executor(), kill9::env("LETTERBOX_AMQP_URL"), to);

    // The effect: one `effects` row, then some real work time, in the idempotent unit.
    std::uint64_t effect_hits = 0;
    auto effect = [&](const letterbox::message& m,
                      letterbox::sqlite::unit_of_work& u) -> std::error_code {
        std::error_code ec;
        auto st =
            u.connection().prepare("INSERT INTO effects(message_id, pid) VALUES (?1, ?2)", ec);
        if (ec)
            return ec;
        st->bind_text(1, letterbox::to_string(m.id));
        st->bind_int64(2, pid);
        if (auto failed = st->execute())
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
    // With group commit, the log goes into the batch's unit (the database has one writer, and
    // the batch holds it), before the message's savepoint: a crash before the batch's commit
    // loses those rows with the rest of the batch.
    auto log_delivery = [pid](letterbox::sqlite::connection& c,
                              const letterbox::middleware::handling& x) {
        std::error_code ec;
        auto st = c.prepare(
            "INSERT INTO deliveries(message_id, redelivered, pid) VALUES (?1, ?2, ?3)", ec);
        if (ec)
            return ec;
        st->bind_text(1, letterbox::to_string(x.d.msg.id));
        st->bind_int64(2, x.d.redelivered ? 1 : 0);
        st->bind_int64(3, pid);
        return st->execute();
    };
    auto handler = [&](const letterbox::middleware::handling& x) {
        letterbox::middleware::handler_failure failure;
        try {
            std::error_code ec;
            if (x.group != nullptr) {
                // The owner is the inbox store, as for the idempotent handler: one shared unit.
                auto* batch = x.group->unit<letterbox::sqlite::unit_of_work>(begin, &inbox);
                ec = batch != nullptr ? log_delivery(batch->connection(), x)
                                      : make_error_code(letterbox::errc::transaction_closed);
                if (!ec)
                    ec = applied(x.d.msg, x.group);
            } else {
                auto u = db.begin();
                ec = log_delivery(u.connection(), x);
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
    const auto deadline = std::chrono::steady_clock::now() + kill9::child_lifetime;
    while (std::chrono::steady_clock::now() < deadline) {
        io.run_for(50ms);
        if (started && *started)
            break;
    }
    REQUIRE(started.has_value());
    REQUIRE_FALSE(*started);
    FAIL("the consumer ran for " << kill9::child_lifetime.count() << " s and nobody killed it");
}

} // namespace integration_kill9_children
