// SPDX-License-Identifier: BSL-1.0
//
// Property: the history checkers accept every valid history and catch every injected defect.
// A tiny model of a pipeline run generates the histories: N messages over a few aggregates are
// committed (in transactions of 1 to 3 rows, with some rolled-back transactions in between),
// the relay publishes, confirms and marks each (sometimes after an unknown outcome), and each
// consumer takes the messages in order, receiving each 1..k times (nacking all but the last)
// and then applying it once, or dead-lettering it when the message is poison. Consumer
// streams interleave at random, and a connection drop happens somewhere.
// - Every such history passes check_all, with the bound k and a deadline as long as the run.
// - Dropping one effect is caught by no-loss, for that (consumer, message); duplicating one by
//   no-duplicate-effect, and nothing else; swapping two effects of one aggregate for one
//   consumer by aggregate-order, and nothing else.
// - Building a history twice gives the same trace; moving one event by 1 ns is caught by
//   determinism at that event.
//
// Randomness comes only from RapidCheck, seeded with LETTERBOX_SEED by the shared test main.
// Replay: LETTERBOX_SEED=<n> ./letterbox_property_tests "[history]", or the
// RC_PARAMS="reproduce=..." line RapidCheck prints. RC_PARAMS max_success overrides the
// default of 500 runs per property.

#include <letterbox/testing/check_all.hpp>

#include <letterbox/message.hpp>
#include <letterbox/testing/history.hpp>
#include <letterbox/testing/history_event.hpp>
#include <letterbox/testing/seed.hpp>

#include "support/check_property.hpp"

#include <catch2/catch.hpp>
#include <rapidcheck.h>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <ostream>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

namespace property_history_checkers {

namespace {

using namespace letterbox::testing;
using std::chrono::nanoseconds;

constexpr int kMaxSuccess = 500;

// ---- the model ----------------------------------------------------------------------------

struct run_shape {
    std::size_t messages = 0;
    std::size_t aggregates = 1;
    std::size_t consumers = 1;
    std::uint32_t max_deliveries = 1;
    std::vector<std::size_t> aggregate_of;              // per message
    std::vector<bool> poison;                           // per message
    std::vector<std::vector<std::uint32_t>> deliveries; // per consumer, per message
    std::vector<std::size_t> transaction_sizes;         // they add up to `messages`
    std::vector<bool> rollback_before;                  // per transaction
    std::vector<bool> unknown_outcome;                  // per message
    std::uint64_t seed = 0;                             // interleaving and time steps
};

std::ostream& operator<<(std::ostream& os, const run_shape& s) {
    os << s.messages << " messages over " << s.aggregates << " aggregates, " << s.consumers
       << " consumers, at most " << s.max_deliveries << " deliveries, seed " << s.seed
       << ", poison:";
    for (std::size_t i = 0; i < s.messages; ++i) {
        if (s.poison[i]) {
            os << ' ' << i;
        }
    }
    return os;
}

rc::Gen<run_shape> run_shapes() {
    return rc::gen::exec([] {
        run_shape s;
        s.messages = *rc::gen::inRange<std::size_t>(2, 26);
        s.aggregates = *rc::gen::inRange<std::size_t>(1, 5);
        s.consumers = *rc::gen::inRange<std::size_t>(1, 3);
        s.max_deliveries = *rc::gen::inRange<std::uint32_t>(1, 5);
        for (std::size_t i = 0; i < s.messages; ++i) {
            // The first two messages share aggregate 0 and are never poison, so every history
            // has two effects to swap for every consumer.
            s.aggregate_of.push_back(i < 2 ? 0 : *rc::gen::inRange<std::size_t>(0, s.aggregates));
            s.poison.push_back(i >= 2 && *rc::gen::inRange(0, 10) == 0);
            s.unknown_outcome.push_back(*rc::gen::inRange(0, 8) == 0);
        }
        s.deliveries.resize(s.consumers);
        for (auto& per_message : s.deliveries) {
            for (std::size_t i = 0; i < s.messages; ++i) {
                per_message.push_back(
                    s.poison[i] ? s.max_deliveries
                                : *rc::gen::inRange<std::uint32_t>(1, s.max_deliveries + 1));
            }
        }
        for (std::size_t left = s.messages; left > 0;) {
            const auto size = std::min(left, *rc::gen::inRange<std::size_t>(1, 4));
            s.transaction_sizes.push_back(size);
            s.rollback_before.push_back(*rc::gen::inRange(0, 4) == 0);
            left -= size;
        }
        s.seed = *rc::gen::arbitrary<std::uint64_t>();
        return s;
    });
}

letterbox::message_id message(std::size_t n) {
    letterbox::message_id u{};
    u.data[0] = 0x40; // not nil
    u.data[14] = static_cast<std::uint8_t>(n >> 8U);
    u.data[15] = static_cast<std::uint8_t>(n & 0xffU);
    return u;
}
letterbox::message_id rolled_back_message(std::size_t n) {
    auto u = message(n);
    u.data[1] = 0xbb;
    return u;
}
std::string consumer_name(std::size_t c) {
    return "consumer-" + std::to_string(c);
}
std::string aggregate_name(std::size_t a) {
    return "aggregate-" + std::to_string(a);
}
std::uint64_t sequence_of(std::size_t n) {
    return 10 * (n + 1);
} // gaps are fine

// The events of a run, before they are stamped with times.
std::vector<history_event_payload> events_of(const run_shape& s) {
    std::vector<history_event_payload> out;
    std::size_t next = 0;
    for (std::size_t t = 0; t < s.transaction_sizes.size(); ++t) {
        if (s.rollback_before[t]) {
            out.push_back(transaction_rolled_back{
                {outbox_row{rolled_back_message(t), aggregate_name(0), 0}}});
        }
        transaction_committed tx;
        for (std::size_t k = 0; k < s.transaction_sizes[t]; ++k, ++next) {
            tx.rows.push_back(
                outbox_row{message(next), aggregate_name(s.aggregate_of[next]), sequence_of(next)});
        }
        out.emplace_back(std::move(tx));
    }
    for (std::size_t i = 0; i < s.messages; ++i) {
        if (s.poison[i]) {
            out.push_back(fault_injected{fault_kind::poison_message, message(i), "always throws"});
        }
    }
    for (std::size_t i = 0; i < s.messages; ++i) {
        std::uint32_t attempt = 1;
        if (s.unknown_outcome[i]) {
            out.push_back(relay_published{message(i), attempt++});
            out.push_back(relay_outcome_unknown{message(i)});
        }
        out.push_back(relay_published{message(i), attempt});
        out.push_back(relay_confirmed{message(i)});
        out.push_back(relay_marked{message(i)});
    }

    // Each consumer's stream, in message order; then a random merge of the streams, with a
    // connection drop somewhere.
    std::vector<std::vector<history_event_payload>> streams(s.consumers);
    for (std::size_t c = 0; c < s.consumers; ++c) {
        const auto name = consumer_name(c);
        for (std::size_t i = 0; i < s.messages; ++i) {
            const auto id = message(i);
            const auto times = s.deliveries[c][i];
            for (std::uint32_t attempt = 1; attempt <= times; ++attempt) {
                streams[c].push_back(broker_delivered{name, id, attempt > 1, attempt});
                if (attempt < times) {
                    streams[c].push_back(delivery_nacked{name, id, true});
                }
            }
            if (s.poison[i]) {
                streams[c].push_back(dead_lettered{name, id, "poison: max attempts"});
                streams[c].push_back(delivery_nacked{name, id, false});
            } else {
                streams[c].push_back(
                    effect_applied{name, id, aggregate_name(s.aggregate_of[i]), sequence_of(i)});
                streams[c].push_back(inbox_committed{name, id});
                streams[c].push_back(delivery_acked{name, id});
            }
        }
    }
    std::mt19937_64 rng(s.seed);
    std::vector<std::size_t> position(s.consumers, 0);
    std::size_t left = 0;
    for (const auto& stream : streams) {
        left += stream.size();
    }
    const auto drop_at = std::uniform_int_distribution<std::size_t>(0, left)(rng);
    for (std::size_t taken = 0; left > 0; ++taken) {
        if (taken == drop_at) {
            out.push_back(fault_injected{fault_kind::connection_drop, {}, "seeded"});
        }
        auto c = std::uniform_int_distribution<std::size_t>(0, s.consumers - 1)(rng);
        while (position[c] == streams[c].size()) {
            c = (c + 1) % s.consumers;
        }
        out.push_back(streams[c][position[c]++]);
        --left;
    }
    return out;
}

// Stamps the events with increasing times (0 to 1000 ns apart, from the shape's seed).
history record(const run_shape& s, const std::vector<history_event_payload>& events) {
    std::mt19937_64 rng(s.seed ^ 0x5eedU);
    std::uniform_int_distribution<std::int64_t> step(0, 1000);
    history h;
    nanoseconds now{0};
    for (const auto& e : events) {
        h.record(now, e);
        now += nanoseconds{step(rng)};
    }
    return h;
}

history_expectations expectations(const run_shape& s, const history& h) {
    history_expectations expect{
        {}, s.max_deliveries, h.empty() ? nanoseconds{0} : h.events().back().at};
    for (std::size_t c = 0; c < s.consumers; ++c) {
        expect.consumers.push_back(consumer_name(c));
    }
    return expect;
}

// The positions of the effect events, as (event index, effect).
std::vector<std::pair<std::size_t, effect_applied>>
effects_in(const std::vector<history_event_payload>& events) {
    std::vector<std::pair<std::size_t, effect_applied>> out;
    for (std::size_t i = 0; i < events.size(); ++i) {
        if (const auto* e = std::get_if<effect_applied>(&events[i])) {
            out.emplace_back(i, *e);
        }
    }
    return out;
}

std::string show(const std::vector<invariant_violation>& violations) {
    std::ostringstream os;
    for (const auto& v : violations) {
        os << v << '\n';
    }
    return os.str();
}

/// test_support::check_property with this file's number of cases.
template <class Testable>
void check_property(const char* id, Testable&& testable) {
    test_support::check_property(id, kMaxSuccess, std::forward<Testable>(testable));
}

} // namespace

TEST_CASE("history checkers: every history of the model passes every checker",
          "[property][testing][history]") {
    int with_poison = 0;
    int with_redelivery = 0;
    check_property("history_checkers/valid", [&] {
        const auto shape = *run_shapes();
        RC_LOG() << shape << '\n';
        const auto h = record(shape, events_of(shape));
        const auto violations = check_all(h, expectations(shape, h));
        RC_LOG() << show(violations);
        RC_ASSERT(violations.empty());
        with_poison += std::count(shape.poison.begin(), shape.poison.end(), true) > 0 ? 1 : 0;
        with_redelivery += shape.max_deliveries > 1 ? 1 : 0;
    });
    INFO("runs with poison " << with_poison << ", with redeliveries " << with_redelivery);
    CHECK(with_poison > 0);
    CHECK(with_redelivery > 0);
}

TEST_CASE("history checkers: a dropped effect is caught by no-loss",
          "[property][testing][history]") {
    check_property("history_checkers/drop_effect", [] {
        const auto shape = *run_shapes();
        auto events = events_of(shape);
        const auto effects = effects_in(events);
        const auto pick = *rc::gen::inRange<std::size_t>(0, effects.size());
        const auto& [index, dropped] = effects[pick];
        RC_LOG() << shape << "\ndropping the effect of event #" << index << '\n';
        events.erase(events.begin() + static_cast<std::ptrdiff_t>(index));
        const auto h = record(shape, events);
        const auto violations = check_all(h, expectations(shape, h));
        RC_LOG() << show(violations);
        std::vector<invariant_violation> losses;
        std::copy_if(violations.begin(), violations.end(), std::back_inserter(losses),
                     [](const auto& v) { return v.which == invariant::no_loss; });
        RC_ASSERT(losses.size() == 1U);
        RC_ASSERT(losses[0].id == dropped.id);
        RC_ASSERT(losses[0].consumer == dropped.consumer);
        RC_ASSERT(check_no_loss(h, expectations(shape, h).consumers).size() == 1U);
    });
}

TEST_CASE("history checkers: a duplicated effect is caught by no-duplicate-effect, alone",
          "[property][testing][history]") {
    check_property("history_checkers/duplicate_effect", [] {
        const auto shape = *run_shapes();
        auto events = events_of(shape);
        const auto effects = effects_in(events);
        const auto pick = *rc::gen::inRange<std::size_t>(0, effects.size());
        const auto [index, duplicated] = effects[pick];
        // The copy goes anywhere after the original.
        const auto at = *rc::gen::inRange<std::size_t>(index + 1, events.size() + 1);
        RC_LOG() << shape << "\ncopying the effect of event #" << index << " to #" << at << '\n';
        events.insert(events.begin() + static_cast<std::ptrdiff_t>(at), duplicated);
        const auto h = record(shape, events);
        const auto violations = check_all(h, expectations(shape, h));
        RC_LOG() << show(violations);
        RC_ASSERT(violations.size() == 1U);
        RC_ASSERT(violations[0].which == invariant::no_duplicate_effect);
        RC_ASSERT(violations[0].id == duplicated.id);
        RC_ASSERT(violations[0].consumer == duplicated.consumer);
        RC_ASSERT(violations[0].events.size() == 2U);
    });
}

TEST_CASE("history checkers: two swapped effects of an aggregate are caught by aggregate-order",
          "[property][testing][history]") {
    check_property("history_checkers/swap_effects", [] {
        const auto shape = *run_shapes();
        auto events = events_of(shape);
        // Pairs of effects of one consumer and one aggregate (the model guarantees some).
        const auto effects = effects_in(events);
        std::vector<std::pair<std::size_t, std::size_t>> pairs;
        for (std::size_t a = 0; a < effects.size(); ++a) {
            for (std::size_t b = a + 1; b < effects.size(); ++b) {
                if (effects[a].second.consumer == effects[b].second.consumer &&
                    effects[a].second.aggregate == effects[b].second.aggregate) {
                    pairs.emplace_back(a, b);
                }
            }
        }
        RC_ASSERT(!pairs.empty());
        const auto [a, b] = pairs[*rc::gen::inRange<std::size_t>(0, pairs.size())];
        const auto& earlier = effects[a];
        const auto& later = effects[b];
        RC_LOG() << shape << "\nswapping the effects of events #" << earlier.first << " and #"
                 << later.first << '\n';
        std::swap(events[earlier.first], events[later.first]);
        const auto h = record(shape, events);
        const auto violations = check_all(h, expectations(shape, h));
        RC_LOG() << show(violations);
        RC_ASSERT(!violations.empty());
        for (const auto& v : violations) {
            RC_ASSERT(v.which == invariant::aggregate_order);
            RC_ASSERT(v.consumer == later.second.consumer);
            RC_ASSERT(v.aggregate == later.second.aggregate);
            RC_ASSERT(v.id == later.second.id); // the effect that overtook
        }
    });
}

TEST_CASE("history checkers: the same run twice has the same trace, a 1 ns shift is caught",
          "[property][testing][history]") {
    check_property("history_checkers/determinism", [] {
        const auto shape = *run_shapes();
        const auto first = record(shape, events_of(shape));
        const auto second = record(shape, events_of(shape));
        RC_ASSERT(first.trace_hash() == second.trace_hash());
        RC_ASSERT(check_determinism(first, second).empty());

        const auto shifted_at = *rc::gen::inRange<std::size_t>(0, first.size());
        history shifted;
        for (std::size_t i = 0; i < first.size(); ++i) {
            // Shift this event and everything after it, so time still never goes back.
            shifted.record(first[i].at + nanoseconds{i >= shifted_at ? 1 : 0}, first[i].what);
        }
        const auto violations = check_determinism(first, shifted);
        RC_ASSERT(first.trace_hash() != shifted.trace_hash());
        RC_ASSERT(violations.size() == 1U);
        RC_ASSERT(violations[0].events == std::vector<std::size_t>{shifted_at});
    });
}

} // namespace property_history_checkers
