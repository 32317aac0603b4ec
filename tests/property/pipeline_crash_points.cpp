// SPDX-License-Identifier: BSL-1.0
// Crash points of the whole pipeline, on real SQLite files: the enrollment service commits
// enrollments with their outbox rows, a relay publishes them to the in-memory broker, and the
// access service applies them through its inbox. A "crash" halts a relay or a consumer exactly
// where a killed process would stop, at each named step:
//   relay:    commit -> claim -> publish -> confirm -> mark
//   consumer: effect -> inbox commit -> ack
// Then a fresh relay or consumer (the restarted process) takes over. Whatever the point,
// nothing is lost (every enrollment grants access) and no effect happens twice (one grant per
// message), though messages may be delivered twice.

#include <letterbox/sqlite.hpp>

#include <letterbox/outbox/outbox_relay.hpp>
#include <letterbox/testing/seed.hpp>

#include "support/pipeline_world.hpp"

#include <catch2/catch.hpp>

#include <functional>
#include <memory>
#include <random>
#include <string>
#include <vector>

namespace property_pipeline_crash_points {

namespace {

using namespace std::chrono_literals;
using letterbox::errc;

constexpr int enrollments = 24;
const char* const students[] = {"ana", "bruno", "carla", "davi"};

letterbox::relay_options relay_options_for(std::string owner, std::uint64_t seed) {
    letterbox::relay_options o;
    o.owner = std::move(owner);
    o.batch_size = 8;
    o.window = 4;
    o.lease = 30s;
    o.poll_interval = 1s;
    o.seed = seed;
    return o;
}

using pipeline::relay_process;

/// The broker with its topology, both services' files, the enrollments committed with their
/// events, and a relay publishing them: what the consumer crash tests start from.
struct relayed_enrollments {
    pipeline::temp_dir dir;
    pipeline::world w;
    bool declared = (w.declare_topology(), true);
    pipeline::enrollment_service enrollment;
    pipeline::access_service access;
    relay_process relay;

    explicit relayed_enrollments(std::mt19937_64& rng)
        : enrollment(dir.file("enrollment.db"), rng())
        , access(dir.file("access.db"))
        , relay(w, enrollment.outbox, relay_options_for("relay-1", rng())) {
        for (int i = 1; i <= enrollments; ++i)
            enrollment.confirm(i, students[i % 4], w.clock.wall_now(), relay.relay.waker());
    }
};

} // namespace

TEST_CASE("pipeline: a relay killed at any step loses nothing and duplicates no effect",
          "[property][pipeline][crash_points]") {
    const auto seed = letterbox::testing::derive_seed(letterbox::testing::test_seed(),
                                                      "property/pipeline_crash_points/relay");
    INFO("derived seed " << seed << " (replay with LETTERBOX_SEED)");
    std::mt19937_64 rng(seed);

    const auto point =
        GENERATE(letterbox::relay_point::after_claim, letterbox::relay_point::before_publish,
                 letterbox::relay_point::after_publish_sent, letterbox::relay_point::after_confirm,
                 letterbox::relay_point::after_mark);
    // Four rounds per point; in each, the relay dies at this point of its k-th row.
    const int round = GENERATE(range(0, 4));
    rng.seed(seed + static_cast<std::uint64_t>(round) * 1000 + static_cast<std::uint64_t>(point));
    const int victim = std::uniform_int_distribution<int>(1, enrollments - 4)(rng);
    INFO("crash at " << letterbox::to_string(point) << " of row " << victim);

    pipeline::temp_dir dir;
    pipeline::world w;
    w.declare_topology();
    pipeline::enrollment_service enrollment(dir.file("enrollment.db"), rng());
    pipeline::access_service access(dir.file("access.db"));

    // Step "commit": every enrollment and its event are committed before the relay starts.
    for (int i = 1; i <= enrollments; ++i)
        enrollment.confirm(i, students[i % 4], w.clock.wall_now());

    letterbox::in_memory::transport consumer_transport(w.broker, "access-service");
    auto handler = access.handler(w.clock);
    letterbox::consumer_options co;
    co.consume.queue = pipeline::queue_name;
    letterbox::consumer consumer(consumer_transport, handler, co);
    std::optional<std::string> tag;
    consumer.async_start([&](std::error_code ec, std::string t) {
        REQUIRE_FALSE(ec);
        tag = t;
    });

    auto first_options = relay_options_for("relay-1", rng());
    int hits = 0;
    first_options.failpoint = [&](letterbox::relay_point p, const letterbox::outbox_record&) {
        return p == point && ++hits == victim;
    };
    auto first = std::make_unique<relay_process>(w, enrollment.outbox, std::move(first_options));
    REQUIRE(w.drive_until([&] { return first->finished.has_value(); }));
    CHECK(*first->finished == errc::internal_error); // halted at the failpoint
    // The process is gone: its connection drops, its leases stay in the database.
    first->transport.async_close([](std::error_code) {});
    first.reset();

    // The restarted process: a new relay, a new owner. It takes the dead relay's rows over
    // when their leases expire (the world moves virtual time forward while idle).
    relay_process second(w, enrollment.outbox, relay_options_for("relay-2", rng()));
    REQUIRE(w.drive_until([&] {
        return handler.stats().processed == enrollments && w.broker.total_ready() == 0 &&
               w.broker.total_unacked() == 0 && enrollment.stats(w.clock.wall_now()).pending == 0;
    }));

    // Nothing lost, nothing applied twice.
    const auto stats = enrollment.stats(w.clock.wall_now());
    CHECK(stats.published == enrollments);
    CHECK(stats.parked == 0);
    CHECK(access.grants() == enrollments);
    CHECK(access.distinct_grants() == enrollments);
    CHECK(access.max_grants_per_message() == 1);
    CHECK(w.broker.queue(pipeline::dead_letter_queue)->ready == 0);
    // Every delivery beyond the first of each message was absorbed by the inbox.
    CHECK(consumer.stats().delivered == enrollments + handler.stats().duplicates);
    if (point == letterbox::relay_point::after_publish_sent ||
        point == letterbox::relay_point::after_confirm)
        CHECK(handler.stats().duplicates >= 1); // the victim itself was published twice

    second.stop(w);
}

TEST_CASE("pipeline: a consumer killed at any step loses nothing and duplicates no effect",
          "[property][pipeline][crash_points]") {
    const auto seed = letterbox::testing::derive_seed(letterbox::testing::test_seed(),
                                                      "property/pipeline_crash_points/consumer");
    INFO("derived seed " << seed << " (replay with LETTERBOX_SEED)");
    std::mt19937_64 rng(seed);

    enum class step { during_effect, after_commit_before_ack, after_ack };
    const auto point =
        GENERATE(step::during_effect, step::after_commit_before_ack, step::after_ack);
    const int round = GENERATE(range(0, 4));
    rng.seed(seed + static_cast<std::uint64_t>(round) * 1000 + static_cast<std::uint64_t>(point));
    const int victim = std::uniform_int_distribution<int>(1, enrollments)(rng);
    INFO("crash at step " << static_cast<int>(point) << " of delivery " << victim);

    relayed_enrollments r(rng);
    auto& w = r.w;
    auto& enrollment = r.enrollment;
    auto& access = r.access;
    auto& relay = r.relay;

    // The first consumer process settles by hand so that it can die between any two steps.
    struct crash {};
    auto handler = access.handler(w.clock);
    int deliveries = 0;
    bool dead = false;
    auto crashing_effect = letterbox::idempotent(
        [&](const letterbox::message& m, letterbox::sqlite::unit_of_work& u) {
            pipeline::access_service::grant(m, u);
            if (point == step::during_effect && deliveries == victim)
                throw crash{}; // dies before the commit: the unit rolls back
        },
        access.inbox, [&] { return access.db.begin(); }, "access-service", w.clock);
    auto first_transport = std::make_unique<letterbox::in_memory::transport>(w.broker, "access-1");
    auto die = [&] {
        dead = true;
        first_transport->async_close([](std::error_code) {}); // unacked deliveries requeue
    };
    letterbox::consume_options co;
    co.queue = pipeline::queue_name;
    co.prefetch = 4;
    first_transport->async_consume(
        co,
        [&](letterbox::delivery d) {
            if (dead)
                return; // a dead process handles nothing
            ++deliveries;
            std::error_code handled;
            try {
                handled = crashing_effect(d.msg);
            } catch (const crash&) {
                return die();
            }
            REQUIRE_FALSE(handled);
            if (point == step::after_commit_before_ack && deliveries == victim)
                return die();
            first_transport->async_ack(d, [](std::error_code) {});
            if (point == step::after_ack && deliveries == victim)
                return die();
        },
        [](std::error_code ec, std::string) { REQUIRE_FALSE(ec); });
    REQUIRE(w.drive_until([&] { return dead; }));

    // The restarted consumer process.
    letterbox::in_memory::transport second_transport(w.broker, "access-2");
    letterbox::consumer_options options;
    options.consume = co;
    letterbox::consumer consumer(second_transport, handler, options);
    consumer.async_start([](std::error_code ec, const std::string&) { REQUIRE_FALSE(ec); });
    REQUIRE(w.drive_until([&] {
        return crashing_effect.stats().processed + handler.stats().processed == enrollments &&
               w.broker.total_ready() == 0 && w.broker.total_unacked() == 0 &&
               enrollment.stats(w.clock.wall_now()).pending == 0;
    }));
    CHECK(access.grants() == enrollments);

    CHECK(access.distinct_grants() == enrollments);
    CHECK(access.max_grants_per_message() == 1);
    CHECK(crashing_effect.stats().processed + handler.stats().processed == enrollments);
    if (point == step::after_commit_before_ack)
        CHECK(handler.stats().duplicates >= 1); // the committed, unacked one came back
    if (point == step::during_effect)
        CHECK(crashing_effect.stats().failed == 1);

    relay.stop(w);
}

TEST_CASE("pipeline: a group-committing consumer killed before or after a batch's commit loses "
          "nothing and duplicates no effect",
          "[property][pipeline][crash_points][group_commit]") {
    const auto seed = letterbox::testing::derive_seed(
        letterbox::testing::test_seed(), "property/pipeline_crash_points/group_commit");
    INFO("derived seed " << seed << " (replay with LETTERBOX_SEED)");
    std::mt19937_64 rng(seed);

    const auto point = GENERATE(letterbox::failpoint::after_effect_before_inbox_commit,
                                letterbox::failpoint::after_inbox_commit_before_ack);
    const int round = GENERATE(range(0, 4));
    rng.seed(seed + static_cast<std::uint64_t>(round) * 1000 + static_cast<std::uint64_t>(point));
    const int victim = std::uniform_int_distribution<int>(1, enrollments)(rng);
    INFO("crash at " << letterbox::to_string(point) << " of message " << victim);

    relayed_enrollments r(rng);
    auto& w = r.w;
    auto& enrollment = r.enrollment;
    auto& access = r.access;
    auto& relay = r.relay;

    letterbox::consumer_options options;
    options.consume.queue = pipeline::queue_name;
    options.consume.prefetch = 4;
    options.group_commit = {.max_messages = 4, .max_delay = 5ms};
    // A failure the dying process still settles is requeued, never dead-lettered: whether it
    // reaches the broker before the close or not, nothing is lost either way.
    options.on_failure = letterbox::failure_action::requeue;

    // The first consumer process dies at `point` of its `victim`-th message.
    auto first_transport = std::make_unique<letterbox::in_memory::transport>(w.broker, "access-1");
    int hits = 0;
    bool dead = false;
    std::uint64_t processed_at_death = 0; // each one committed one grant
    // A dead process runs nothing more: what it had received stays unsettled (a store error
    // holds a delivery for the back-off) until its connection is closed and the broker requeues
    // it.
    std::function<std::uint64_t()> dying_stats;
    auto dying =
        letterbox::idempotent(
            [&](const letterbox::message& m, letterbox::sqlite::unit_of_work& u) {
                if (dead)
                    throw letterbox::error(errc::store_unavailable, "the process is dead");
                pipeline::access_service::grant(m, u);
            },
            access.inbox, [&] { return access.db.begin(); }, "access-service", w.clock)
            .with_failpoint([&](letterbox::failpoint p, const letterbox::message_id&) {
                if (dead || p != point || ++hits != victim)
                    return false;
                dead = true;
                processed_at_death = dying_stats();
                first_transport->async_close([](std::error_code) {}); // unacked deliveries requeue
                return true;
            });
    dying_stats = [&] {
        return dying.stats().processed;
    }; // copies share their counts
    letterbox::consumer first(*first_transport, dying, w.clock, options);
    first.async_start([](std::error_code ec, const std::string&) { REQUIRE_FALSE(ec); });
    REQUIRE(w.drive_until([&] { return dead; }));
    REQUIRE(w.drive_until([&] { return w.broker.total_unacked() == 0; }));
    // Before the commit, the batch died with its transaction: nothing of it was kept.
    if (point == letterbox::failpoint::after_effect_before_inbox_commit) {
        CHECK(access.grants() == static_cast<std::int64_t>(processed_at_death));
        CHECK(dying.stats().processed == processed_at_death);
    }

    // The restarted consumer process.
    letterbox::in_memory::transport second_transport(w.broker, "access-2");
    auto handler = access.handler(w.clock);
    letterbox::consumer second(second_transport, handler, w.clock, options);
    second.async_start([](std::error_code ec, const std::string&) { REQUIRE_FALSE(ec); });
    REQUIRE(w.drive_until([&] {
        return access.distinct_grants() == enrollments && w.broker.total_ready() == 0 &&
               w.broker.total_unacked() == 0 && enrollment.stats(w.clock.wall_now()).pending == 0;
    }));
    CHECK(access.grants() == enrollments);
    CHECK(access.max_grants_per_message() == 1);
    CHECK(dying.stats().processed + handler.stats().processed == enrollments);
    if (point == letterbox::failpoint::after_inbox_commit_before_ack)
        CHECK(handler.stats().duplicates >= 1); // the committed, unacked batch came back

    relay.stop(w);
}

} // namespace property_pipeline_crash_points
