// SPDX-License-Identifier: BSL-1.0
// Property: messages from a foreign publisher that sets no message-id (the seeds' Node.js
// sendToQueue, aio-pika's Message), mixed with letterbox's own, duplicated, failing a few times
// and redelivered through a retry queue, lose no effect and repeat none: each one either has
// its effect as the consumer's key settings say, or sits in the dead-letter queue with the
// reason missing-idempotency-key, once per copy. Never is an id-less message taken for a
// duplicate of another.

#include <letterbox/backoff/fixed.hpp>
#include <letterbox/backoff/immediate.hpp>
#include <letterbox/consumer.hpp>
#include <letterbox/dlq/dead_letter_queue.hpp>
#include <letterbox/idempotency_key.hpp>
#include <letterbox/in_memory_unit_of_work.hpp>
#include <letterbox/inbox/in_memory_inbox_store.hpp>
#include <letterbox/middleware/compose.hpp>
#include <letterbox/middleware/dead_letter.hpp>
#include <letterbox/middleware/idempotent.hpp>
#include <letterbox/middleware/redelivery.hpp>
#include <letterbox/middleware/retry.hpp>
#include <letterbox/testing/seed.hpp>
#include <letterbox/topology/retry_topology.hpp>
#include <letterbox/transport/async_declare_all.hpp>
#include <letterbox/transport/in_memory/transport.hpp>

#include "support/simulation.hpp"

#include <catch2/catch.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <random>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

namespace property_foreign_publishers {

namespace {

using namespace std::chrono_literals;
namespace mw = letterbox::middleware;
namespace key = letterbox::idempotency_key;

constexpr const char* key_header = "x-idempotency-key";

/// How the consumer finds keys in one run.
enum class key_mode { message_id_refusing, header_refusing, message_id_unguarded };

/// One logical message of a run.
struct planned {
    std::string body; // unique per logical message: effects are counted by it
    bool foreign;     // published without a message-id, on a raw channel
    bool has_key_header;
    int copies;         // how often its publisher sent it (same id, when it has one)
    int failures_first; // its first attempts fail with a transient error
};

struct run_outcome {
    std::map<std::string, int> effects;
    std::map<std::string, std::vector<std::string>> dead; // body -> reasons, one per entry
    std::set<std::string> handles;
    std::size_t dead_entries = 0;
};

run_outcome run_once(std::uint64_t seed, key_mode mode, const std::vector<planned>& plan) {
    test_support::simulation w;
    letterbox::in_memory::transport t(w.broker, "orders-service");
    const letterbox::topology::retry_topology topo{
        .queue = "orders",
        .delays = {1s},
        .rejects = letterbox::topology::rejects_go_to::dead_letter_queue};
    REQUIRE_FALSE(
        w.await([&](auto h) { letterbox::topology::async_declare_all(t, topo.queues(), h); }));

    run_outcome out;
    std::map<std::string, int> attempts;
    letterbox::in_memory_inbox_store inbox;
    auto effect = [&](const letterbox::message& m, letterbox::in_memory_unit_of_work& u) {
        const auto* p = [&]() -> const planned* {
            for (const auto& candidate : plan)
                if (candidate.body == m.body)
                    return &candidate;
            return nullptr;
        }();
        REQUIRE(p != nullptr);
        if (attempts[m.body]++ < p->failures_first)
            throw std::runtime_error("the ledger is briefly unavailable");
        return u.on_commit([&out, body = m.body] { ++out.effects[body]; });
    };
    const auto base = letterbox::idempotent(
        effect, inbox, [] { return letterbox::in_memory_unit_of_work{}; }, "orders", w.clock);
    const auto idem = mode == key_mode::header_refusing ? base.with_key(key::by_header(key_header))
                      : mode == key_mode::message_id_unguarded
                          ? base.on_missing_key(key::missing_key_action::handle_without_dedup)
                          : base;
    auto pipeline = mw::compose(idem, mw::dead_letter({}, w.clock),
                                mw::redelivery(letterbox::backoff::fixed(1s, 4), topo, w.clock),
                                mw::retry(letterbox::backoff::immediate(2)));
    letterbox::consumer c(t, pipeline, w.clock, {.consume = {.queue = "orders", .prefetch = 4}});
    std::optional<std::string> tag;
    c.async_start([&](std::error_code ec, std::string s) {
        REQUIRE_FALSE(ec);
        tag = std::move(s);
    });
    REQUIRE(w.drive_until([&] { return tag.has_value(); }));

    // Publish every copy, in an order shuffled by the seed.
    std::vector<std::size_t> sends;
    for (std::size_t i = 0; i < plan.size(); ++i)
        for (int copy = 0; copy < plan[i].copies; ++copy)
            sends.push_back(i);
    std::mt19937_64 rng(seed);
    std::shuffle(sends.begin(), sends.end(), rng);
    letterbox::message_id_generator ids{seed};
    std::map<std::size_t, letterbox::message_id> id_of;
    auto foreign = w.broker.connect("foreign-publisher");
    auto raw = foreign.open_channel();
    for (const auto i : sends) {
        letterbox::message m;
        m.routing_key = "orders";
        m.body = plan[i].body;
        if (plan[i].has_key_header)
            m.headers.set(key_header, "key-" + plan[i].body);
        if (plan[i].foreign) {
            REQUIRE_FALSE(raw.basic_publish(std::move(m)));
        } else {
            if (!id_of.contains(i))
                id_of[i] = ids();
            m.id = id_of[i];
            REQUIRE_FALSE(w.await([&](auto h) { t.async_publish(m, h); }));
        }
    }
    foreign.close();

    const auto idle = [&] {
        const auto work = w.broker.queue("orders");
        const auto retry = w.broker.queue(topo.retry_queue_name(1s));
        return work && retry && work->total() == 0 && retry->total() == 0;
    };
    REQUIRE(w.drive_until(idle));

    letterbox::dlq::dead_letter_queue<letterbox::in_memory::transport> dlq(
        t, topo.dead_letter_queue_name());
    auto [ec, entries] = w.await2<std::vector<letterbox::dlq::dead_letter_entry>>(
        [&](auto h) { dlq.async_browse({}, {.limit = 10'000}, h); });
    REQUIRE_FALSE(ec);
    out.dead_entries = entries.size();
    for (const auto& e : entries) {
        out.dead[e.msg.body].push_back(e.reason);
        out.handles.insert(e.handle);
    }
    return out;
}

} // namespace

TEST_CASE("id-less messages of a foreign publisher mixed with letterbox's own lose no effect and "
          "repeat none, whatever the consumer's key settings",
          "[property][idempotent][foreign]") {
    const auto seed = letterbox::testing::derive_seed(letterbox::testing::test_seed(),
                                                      "property/foreign_publishers");
    INFO("derived seed " << seed << " (replay with LETTERBOX_SEED)");
    std::mt19937_64 seeds(seed);
    for (int run = 0; run < 120; ++run) {
        const auto run_seed = seeds();
        std::mt19937_64 rng(run_seed);
        const auto mode = static_cast<key_mode>(run % 3);
        std::vector<planned> plan;
        const int messages = std::uniform_int_distribution<int>(1, 12)(rng);
        for (int i = 0; i < messages; ++i) {
            planned p;
            p.body = "order-" + std::to_string(i);
            p.foreign = std::bernoulli_distribution(0.5)(rng);
            // letterbox's own publisher always sets the key header; foreign ones sometimes.
            p.has_key_header = !p.foreign || std::bernoulli_distribution(0.5)(rng);
            p.copies = std::uniform_int_distribution<int>(1, 3)(rng);
            // Fewer than the pipeline's 8 attempts (2 in process x 4 deliveries): it succeeds.
            p.failures_first = std::uniform_int_distribution<int>(0, 3)(rng);
            plan.push_back(p);
        }
        INFO("run " << run << " seed " << run_seed << " mode " << static_cast<int>(mode));
        const auto got = run_once(run_seed, mode, plan);

        std::size_t expected_dead = 0;
        for (const auto& p : plan) {
            INFO(p.body << (p.foreign ? " foreign" : " letterbox") << " copies " << p.copies
                        << (p.has_key_header ? " with" : " without") << " key header");
            const auto effects = got.effects.contains(p.body) ? got.effects.at(p.body) : 0;
            const auto dead =
                got.dead.contains(p.body) ? got.dead.at(p.body) : std::vector<std::string>{};
            const bool keyed = mode == key_mode::header_refusing ? p.has_key_header : !p.foreign;
            if (keyed) {
                CHECK(effects == 1); // once, however many copies
                CHECK(dead.empty());
            } else if (mode == key_mode::message_id_unguarded) {
                CHECK(effects == p.copies); // every copy has its effect, none is dropped
                CHECK(dead.empty());
            } else {
                CHECK(effects == 0); // refused, and every copy is in the dead-letter queue
                CHECK(dead == std::vector<std::string>(static_cast<std::size_t>(p.copies),
                                                       "missing-idempotency-key"));
                expected_dead += static_cast<std::size_t>(p.copies);
            }
        }
        CHECK(got.dead_entries == expected_dead);
        CHECK(got.handles.size() == got.dead_entries); // one handle per entry
    }
}

} // namespace property_foreign_publishers
