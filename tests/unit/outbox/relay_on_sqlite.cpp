// SPDX-License-Identifier: BSL-1.0
// outbox_relay over the SQLite outbox store (a real file) and the in-memory broker: the broker
// faults and the competing relays of the issue, end to end. The relay's own unit tests, over the
// in-memory store, are in outbox_relay.cpp.

#include <letterbox/sqlite.hpp>

#include <letterbox/outbox/outbox_relay.hpp>

#include "support/pipeline_world.hpp"

#include <catch2/catch.hpp>

#include <map>
#include <memory>
#include <optional>
#include <string>

namespace unit_outbox_relay_on_sqlite {

namespace {

using namespace std::chrono_literals;
using letterbox::errc;

letterbox::relay_options options_for(std::string owner) {
    letterbox::relay_options o;
    o.owner = std::move(owner);
    o.batch_size = 16;
    o.window = 8;
    o.lease = 30s;
    o.poll_interval = 1s;
    o.max_attempts = 3;
    o.row_retry = {1s, 2.0, 10s, 0.0};
    o.transport_retry = {100ms, 2.0, 2s, 0.2};
    o.seed = 42;
    return o;
}

using pipeline::relay_process;

/// Counts deliveries per message id on the access queue, acking each.
struct delivery_counter {
    letterbox::in_memory::transport transport;
    std::map<letterbox::message_id, int> seen;

    explicit delivery_counter(pipeline::world& w)
        : transport(w.broker, "counter") {
        letterbox::consume_options o;
        o.queue = pipeline::queue_name;
        bool started = false;
        transport.async_consume(
            o,
            [this](letterbox::delivery d) {
                ++seen[d.msg.id];
                transport.async_ack(d, [](std::error_code) {});
            },
            [&started](std::error_code ec, std::string) {
                REQUIRE_FALSE(ec);
                started = true;
            });
        REQUIRE(w.drive_until([&] { return started; }));
    }

    int duplicates() const {
        int n = 0;
        for (const auto& [id, count] : seen)
            n += count - 1;
        return n;
    }
};

} // namespace

TEST_CASE("relay on SQLite: while the broker is down it backs off, then publishes everything",
          "[outbox][outbox_relay][sqlite]") {
    pipeline::temp_dir dir;
    pipeline::world w;
    w.declare_topology();
    pipeline::enrollment_service enrollment(dir.file("enrollment.db"), 1);
    delivery_counter counter(w);
    relay_process relay(w, enrollment.outbox, options_for("relay-1"));

    // The seeds' incident: the broker is unreachable while enrollments are confirmed.
    w.broker.go_down();
    const auto outage_start = w.clock.now();
    for (int i = 1; i <= 20; ++i)
        enrollment.confirm(i, "student-" + std::to_string(i % 5), w.clock.wall_now(),
                           relay.relay.waker());
    // Two minutes of virtual time without a broker.
    REQUIRE(w.drive_until([&] { return w.clock.now() - outage_start >= 2min; }));
    const auto during = relay.relay.counters();
    CHECK(during.published == 0);
    CHECK(during.transport_failures >= 1);
    // It never spins: attempts are spaced by the back-off (100 ms doubling, capped at 2 s with
    // 20% jitter), so two minutes hold about 120 s / 1.8 s + the ramp, some 70 attempts.
    CHECK(during.transport_failures >= 30);
    CHECK(during.transport_failures <= 100);
    // Each attempt costs at most one connection attempt (plus one automatic recovery attempt
    // of the relay's and of the counter's transport right after the outage began).
    CHECK(w.broker.refused_connections() <= during.transport_failures + 2);
    auto stats = enrollment.stats(w.clock.wall_now());
    CHECK(stats.pending == 20);
    CHECK(stats.parked == 0); // an outage is not the rows' fault
    CHECK(stats.oldest_pending_age >= 2min);

    w.broker.come_back();
    REQUIRE(w.drive_until([&] { return counter.seen.size() == 20; }));
    REQUIRE(w.drive_until([&] { return enrollment.stats(w.clock.wall_now()).pending == 0; }));
    stats = enrollment.stats(w.clock.wall_now());
    CHECK(stats.published == 20);
    CHECK(stats.parked == 0);
    std::error_code ec;
    for (const auto& row : enrollment.outbox.list({}, ec))
        CHECK(row.attempts == 0);
    relay.stop(w);
}

TEST_CASE("relay on SQLite: an unroutable event is retried, then parked, never published",
          "[outbox][outbox_relay][sqlite]") {
    pipeline::temp_dir dir;
    pipeline::world w;
    w.declare_topology();
    pipeline::enrollment_service enrollment(dir.file("enrollment.db"), 2);
    delivery_counter counter(w);
    relay_process relay(w, enrollment.outbox, options_for("relay-1"));

    // No binding matches "refund.issued": the broker returns it (and still confirms it).
    const auto lost =
        enrollment.confirm(1, "ana", w.clock.wall_now(), relay.relay.waker(), "refund.issued");
    const auto fine = enrollment.confirm(2, "bruno", w.clock.wall_now(), relay.relay.waker());

    std::error_code ec;
    REQUIRE(w.drive_until([&] {
        auto row = enrollment.outbox.find(lost, ec);
        return row && row->status == letterbox::outbox_status::parked;
    }));
    const auto row = enrollment.outbox.find(lost, ec);
    REQUIRE(row);
    CHECK(row->attempts == 3);
    CHECK(row->last_error.find("no route") != std::string::npos);
    CHECK_FALSE(row->published_at);
    CHECK(counter.seen.count(lost) == 0);
    REQUIRE(w.drive_until([&] { return counter.seen.count(fine) == 1; }));
    CHECK(enrollment.outbox.find(fine, ec)->status == letterbox::outbox_status::published);
    const auto c = relay.relay.counters();
    CHECK(c.returned == 3);
    CHECK(c.parked == 1);
    CHECK(enrollment.stats(w.clock.wall_now()).parked == 1);
    relay.stop(w);
}

TEST_CASE("relay on SQLite: two relays on one file publish no row twice while both are healthy",
          "[outbox][outbox_relay][sqlite]") {
    pipeline::temp_dir dir;
    pipeline::world w;
    w.declare_topology();
    pipeline::enrollment_service enrollment(dir.file("enrollment.db"), 3);
    // The second relay process opens the same file with its own connections.
    auto second_db = letterbox::sqlite::database::open(dir.file("enrollment.db"));
    letterbox::sqlite::outbox_store second_store(second_db);
    delivery_counter counter(w);
    relay_process a(w, enrollment.outbox, options_for("relay-a"));
    relay_process b(w, second_store, options_for("relay-b"));

    constexpr int rows = 300;
    for (int i = 1; i <= rows; ++i) {
        // Each wave wakes both relays, so they compete for the same rows.
        enrollment.confirm(i, "student-" + std::to_string(i % 37), w.clock.wall_now(), [&] {
            a.relay.wake();
            b.relay.wake();
        });
        if (i % 25 == 0)
            REQUIRE(w.drive_until([&] { return counter.seen.size() == std::size_t(i); }));
    }
    REQUIRE(w.drive_until([&] {
        return counter.seen.size() == rows &&
               a.relay.counters().published + b.relay.counters().published == rows;
    }));
    CHECK(counter.duplicates() == 0);
    const auto ca = a.relay.counters();
    const auto cb = b.relay.counters();
    CHECK(ca.published + cb.published == rows);
    CHECK(ca.published > 0); // both took part
    CHECK(cb.published > 0);
    CHECK(ca.lease_lost + cb.lease_lost == 0);
    CHECK(enrollment.stats(w.clock.wall_now()).published == rows);
    a.stop(w);
    b.stop(w);
}

TEST_CASE("relay on SQLite: when one relay stops abruptly the other finishes after the lease",
          "[outbox][outbox_relay][sqlite]") {
    pipeline::temp_dir dir;
    pipeline::world w;
    w.declare_topology();
    pipeline::enrollment_service enrollment(dir.file("enrollment.db"), 4);
    auto second_db = letterbox::sqlite::database::open(dir.file("enrollment.db"));
    letterbox::sqlite::outbox_store second_store(second_db);
    delivery_counter counter(w);

    constexpr int rows = 100;
    for (int i = 1; i <= rows; ++i)
        enrollment.confirm(i, "student-" + std::to_string(i % 11), w.clock.wall_now());

    // Relay A dies right after it claimed its second batch: those rows stay leased to it.
    auto a_options = options_for("relay-a");
    int claims = 0;
    a_options.failpoint = [&](letterbox::relay_point p, const letterbox::outbox_record&) {
        return p == letterbox::relay_point::after_claim && ++claims == 20;
    };
    auto a = std::make_unique<relay_process>(w, enrollment.outbox, std::move(a_options));
    REQUIRE(w.drive_until([&] { return a->finished.has_value(); }));
    CHECK(*a->finished == errc::internal_error);
    const auto died_at = w.clock.now();
    a->transport.async_close([](std::error_code) {});
    a.reset();
    const auto stranded = enrollment.stats(w.clock.wall_now()).leased;
    CHECK(stranded > 0);

    relay_process b(w, second_store, options_for("relay-b"));
    REQUIRE(w.drive_until([&] { return enrollment.stats(w.clock.wall_now()).pending == 0; }));
    // The stranded rows waited for the lease to expire.
    CHECK(w.clock.now() - died_at >= 30s);
    REQUIRE(w.drive_until([&] { return counter.seen.size() == rows; }));
    CHECK(enrollment.stats(w.clock.wall_now()).published == rows);
    b.stop(w);
}

} // namespace unit_outbox_relay_on_sqlite
