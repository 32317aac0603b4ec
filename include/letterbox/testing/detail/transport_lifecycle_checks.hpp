// SPDX-License-Identifier: BSL-1.0
#pragma once

// The checks of the transport conformance suite about close, cancel and reconnect: what stopping a
// consumer, closing a transport or restarting the broker does to deliveries and publishes in
// flight. One function template each, constrained by `letterbox::transport`, so that
// tests/archetypes/transport.cpp can instantiate them with `transport_archetype`. Included
// by letterbox/testing/transport_suite.hpp, which lists them in LETTERBOX_TRANSPORT_SUITE.

#include <letterbox/concepts/transport.hpp>
#include <letterbox/config.hpp>
#include <letterbox/delivery.hpp>
#include <letterbox/error.hpp>
#include <letterbox/message.hpp>
#include <letterbox/testing/detail/describe.hpp>
#include <letterbox/testing/detail/transport_harness.hpp>
#include <letterbox/testing/detail/transport_suite_support.hpp>
#include <letterbox/testing/transport_features.hpp>
#include <letterbox/topology/queue_arguments.hpp>

#include <boost/asio/steady_timer.hpp>

#include <catch2/catch.hpp>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <system_error>
#include <vector>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::testing::detail {

using std::chrono::milliseconds;

/// WM-07 TestContinueAfterSubscribeClose: consumers that stop mid-stream (closing with
/// unacknowledged deliveries) lose nothing.
template <transport Transport>
void transport_check_no_loss_when_consumers_stop(transport_harness<Transport>& h) {
    if (!h.features.persistent)
        LETTERBOX_DETAIL_SKIP("the transport is not persistent");
    if (h.features.exactly_once_delivery)
        LETTERBOX_DETAIL_SKIP("exactly-once transports redeliver nothing to check");
    const auto sizes = sizes_for(h.features.size);
    auto publisher = h.make();
    const auto queue = declare_fresh_queue(h, publisher, "wm07");
    const auto messages = publish_new_messages(h, publisher, queue, sizes.resumed_messages);

    std::vector<std::shared_ptr<consumer_log>> logs;
    const auto all_acked = [&] {
        return holds_distinct(logs, messages.size(), true);
    };
    for (std::size_t round = 0; round < sizes.rounds && !all_acked(); ++round) {
        INFO("round " << round);
        auto t = h.make();
        const auto batch = sizes.batch;
        auto log =
            consume(h, t, consume_from(queue), [batch](const delivery&, const consumer_log& l) {
                return l.deliveries.size() <= batch ? settle_action::ack : settle_action::hold;
            });
        logs.push_back(log);
        REQUIRE(collect_until(h, [&] { return log->acked.size() >= batch || all_acked(); }));
        // Stop mid-stream: what is held unacknowledged goes back to the queue.
        CHECK(describe(close(h, t)) == success);
    }
    auto catch_up = h.make();
    logs.push_back(consume(h, catch_up, consume_from(queue), ack_all()));
    CHECK(collect_until(h, all_acked));
    check_ids(ids_of(messages), logs, id_source::acked, true);
}

/// WM-08 TestConcurrentClose: consumers started and closed all at once break nothing.
template <transport Transport>
void transport_check_concurrent_close(transport_harness<Transport>& h) {
    constexpr std::size_t racers = 10;
    constexpr std::size_t n = 50;
    auto admin = h.make();
    const auto queue = declare_fresh_queue(h, admin, "wm08");
    std::deque<Transport> transports;
    std::vector<std::shared_ptr<consumer_log>> logs;
    auto closed = std::make_shared<std::vector<std::error_code>>();
    for (std::size_t i = 0; i < racers; ++i) {
        transports.emplace_back(h.make());
        logs.push_back(begin_consume(transports.back(), consume_from(queue), ack_all()));
        transports.back().async_close([closed](std::error_code ec) { closed->push_back(ec); });
    }
    REQUIRE(h.wait([&] {
        return closed->size() == racers && std::all_of(logs.begin(), logs.end(), [](const auto& l) {
                   return l->consume_result.has_value();
               });
    }));
    for (const auto& ec : *closed)
        CHECK(describe(ec) == success);

    auto publisher = h.make();
    const auto messages = publish_new_messages(h, publisher, queue, n);
    auto reader = h.make();
    consume_checked(h, reader, queue, messages);
    for (const auto& l : logs)
        CHECK(l->acked.empty());
}

/// WM-13 TestMessageCtx, in transport terms: an ack completes with success; once the
/// transport is closed, its deliveries can no longer be settled, and the unsettled one comes
/// back to another consumer.
template <transport Transport>
void transport_check_settling_after_close_fails(transport_harness<Transport>& h) {
    auto t = h.make();
    const auto queue = declare_fresh_queue(h, t, "wm13");
    const auto messages = publish_new_messages(h, t, queue, 2);
    auto log = consume_held(h, t, consume_from(queue), 2);
    CHECK(describe(ack(h, t, log->deliveries[0])) == success);
    CHECK(describe(close(h, t)) == success);
    CHECK(describe(ack(h, t, log->deliveries[1])) != success);

    auto other = h.make();
    auto log2 = consume(h, other, consume_from(queue), ack_all());
    REQUIRE(collect_acked(h, {log2}, 1));
    h.quiet();
    check_ids({log->deliveries[1].msg.id}, {log2}, id_source::acked,
              !h.features.exactly_once_delivery);
    CHECK(log2->deliveries.front().redelivered);
}

/// WM-14 TestSubscribeCtx, in transport terms: a consumer cancelled at once, whose deliveries
/// are nacked, leaves every message to the next consumer.
template <transport Transport>
void transport_check_cancel_right_after_consume(transport_harness<Transport>& h) {
    if (!h.features.redelivery_on_nack)
        LETTERBOX_DETAIL_SKIP("the transport does not redeliver after a nack");
    constexpr std::size_t n = 20;
    auto t = h.make();
    const auto queue = declare_fresh_queue(h, t, "wm14");
    const auto messages = publish_new_messages(h, t, queue, n);

    auto options = consume_from(queue);
    options.consumer_tag = h.unique_name("wm14-consumer");
    auto first = begin_consume(t, options, [](const delivery&, const consumer_log&) {
        return settle_action::nack_requeue;
    });
    auto cancelled = std::make_shared<std::optional<std::error_code>>();
    auto seen_at_cancel = std::make_shared<std::size_t>(0);
    t.async_cancel(options.consumer_tag, [cancelled, seen_at_cancel, first](std::error_code ec) {
        *cancelled = ec;
        *seen_at_cancel = first->deliveries.size();
    });
    REQUIRE(h.wait([&] { return cancelled->has_value() && first->consume_result.has_value(); }));
    CHECK(describe(*first->consume_result) == success);
    CHECK(describe(**cancelled) == success);
    REQUIRE(h.wait([&] { return first->settled == first->deliveries.size(); }));
    CHECK(first->settle_errors.empty());
    h.quiet();
    CHECK(first->deliveries.size() == *seen_at_cancel);

    consume_checked(h, t, queue, messages);
}

/// WM-15 TestReconnect: the broker restarts twice during a publish stream; every publish that
/// completed with success is received. Failed publishes are retried with the same id, after a
/// back-off, until they succeed; outcome-unknown ones may therefore arrive twice.
template <transport Transport>
void transport_check_publish_through_broker_restarts(transport_harness<Transport>& h) {
    if (!h.features.restartable)
        LETTERBOX_DETAIL_SKIP("the fixture cannot restart the broker");
    if (!h.features.persistent)
        LETTERBOX_DETAIL_SKIP("the transport is not persistent");
    REQUIRE(h.restart_broker);
    const auto sizes = sizes_for(h.features.size);
    auto publisher = h.make();
    auto subscriber = h.make();
    const auto queue = declare_fresh_queue(h, publisher, "wm15");
    auto log = consume(h, subscriber, consume_from(queue), ack_all());

    struct stream {
        Transport* t = nullptr;
        std::vector<std::vector<message>> lanes;
        std::vector<std::size_t> next;
        std::vector<std::unique_ptr<boost::asio::steady_timer>> timers;
        std::vector<std::chrono::steady_clock::time_point> first_attempt;
        std::vector<milliseconds> backoff;
        std::map<message_id, std::vector<std::error_code>> outcomes;
        std::set<message_id> succeeded;
        std::vector<message_id> given_up;
        std::size_t lanes_done = 0;
        milliseconds give_up_after{};

        static void send(const std::shared_ptr<stream>& s, std::size_t lane) {
            if (s->next[lane] == s->lanes[lane].size()) {
                ++s->lanes_done;
                return;
            }
            const auto& m = s->lanes[lane][s->next[lane]];
            if (s->backoff[lane] == milliseconds{0})
                s->first_attempt[lane] = std::chrono::steady_clock::now();
            std::weak_ptr<stream> weak = s;
            s->t->async_publish(m, [weak, lane, id = m.id](std::error_code ec) {
                auto s = weak.lock();
                if (!s)
                    return;
                s->outcomes[id].push_back(ec);
                if (!ec) {
                    s->succeeded.insert(id);
                } else if (std::chrono::steady_clock::now() - s->first_attempt[lane] <
                           s->give_up_after) {
                    // Retry the same message after a back-off that doubles up to 250 ms.
                    s->backoff[lane] = std::min(milliseconds{250},
                                                std::max(milliseconds{1}, 2 * s->backoff[lane]));
                    auto& timer = *s->timers[lane];
                    timer.expires_after(s->backoff[lane]);
                    timer.async_wait([weak, lane](const boost::system::error_code& wait_ec) {
                        if (auto s = weak.lock(); s && !wait_ec)
                            send(s, lane);
                    });
                    return;
                } else {
                    s->given_up.push_back(id);
                }
                s->backoff[lane] = milliseconds{0};
                ++s->next[lane];
                send(s, lane);
            });
        }
    };
    auto s = std::make_shared<stream>();
    s->t = &publisher;
    s->give_up_after = h.features.timeout;
    std::vector<message_id> all;
    for (std::size_t lane = 0; lane < sizes.lanes; ++lane) {
        s->lanes.push_back(make_messages(sizes.messages_per_lane, "", queue));
        for (const auto& m : s->lanes.back())
            all.push_back(m.id);
        s->timers.push_back(std::make_unique<boost::asio::steady_timer>(publisher.get_executor()));
    }
    s->next.assign(sizes.lanes, 0);
    s->first_attempt.resize(sizes.lanes);
    s->backoff.assign(sizes.lanes, milliseconds{0});
    for (std::size_t lane = 0; lane < sizes.lanes; ++lane)
        stream::send(s, lane);

    // watermill restarts the broker when a third and when half of the messages are through.
    for (const auto fraction : {3, 2}) {
        const auto target = all.size() / static_cast<std::size_t>(fraction);
        CHECK(collect_until(h, [&] { return s->succeeded.size() >= target; }));
        INFO("restart at " << s->succeeded.size() << " of " << all.size());
        h.restart_broker();
    }
    REQUIRE(collect_until(h, [&] { return s->lanes_done == sizes.lanes; }));
    CHECK(s->given_up.empty());
    std::size_t failures = 0;
    for (const auto& [id, outcomes] : s->outcomes)
        failures += static_cast<std::size_t>(std::count_if(
            outcomes.begin(), outcomes.end(), [](std::error_code ec) { return !!ec; }));
    INFO(s->succeeded.size() << " of " << all.size() << " succeeded, after " << failures
                             << " failed attempts");
    CHECK(collect_until(h, [&] {
        return std::all_of(s->succeeded.begin(), s->succeeded.end(),
                           [&](const message_id& id) { return log->acked.contains(id); });
    }));
    std::size_t missing = 0;
    for (const auto& id : s->succeeded)
        missing += log->acked.contains(id) ? 0 : 1;
    CHECK(missing == 0);
    check_only_published(all, *log);
}

/// Concept: `async_close` is idempotent.
template <transport Transport>
void transport_check_close_is_idempotent(transport_harness<Transport>& h) {
    auto t = h.make();
    auto results = std::make_shared<std::vector<std::error_code>>();
    t.async_close([results](std::error_code ec) { results->push_back(ec); });
    t.async_close([results](std::error_code ec) { results->push_back(ec); });
    REQUIRE(h.wait([&] { return results->size() == 2; }));
    CHECK(describe((*results)[0]) == success);
    CHECK(describe((*results)[1]) == success);
    CHECK(describe(close(h, t)) == success);
}

/// Concept: `async_close` completes publishes still awaiting their confirm with
/// `outcome_unknown` (or success, if the confirm came first); each completes exactly once,
/// and every success is in the queue.
template <transport Transport>
void transport_check_close_completes_pending_publishes(transport_harness<Transport>& h) {
    const auto n = sizes_for(h.features.size).messages;
    auto admin = h.make();
    const auto queue = declare_fresh_queue(h, admin, "close-pending");
    auto t = h.make();
    const auto messages = make_messages(n, "", queue);
    auto outcomes = std::make_shared<std::map<message_id, std::vector<std::error_code>>>();
    auto completed = std::make_shared<std::size_t>(0);
    for (const auto& m : messages)
        t.async_publish(m, [outcomes, completed, id = m.id](std::error_code ec) {
            (*outcomes)[id].push_back(ec);
            ++*completed;
        });
    auto closed = std::make_shared<std::optional<std::error_code>>();
    t.async_close([closed](std::error_code ec) { *closed = ec; });
    REQUIRE(h.wait([&] { return closed->has_value() && *completed >= n; }));
    CHECK(describe(**closed) == success);
    h.quiet();
    CHECK(*completed == n);
    std::vector<message_id> succeeded;
    for (const auto& m : messages) {
        const auto& o = (*outcomes)[m.id];
        REQUIRE(o.size() == 1);
        CHECK((!o.front() || o.front() == errc::outcome_unknown));
        if (!o.front())
            succeeded.push_back(m.id);
    }
    auto log = consume_acked(h, admin, queue, succeeded.size());
    for (const auto& id : succeeded)
        CHECK(log->acked.contains(id));
}

/// Concept: `async_close` requeues unacknowledged deliveries; they come back marked
/// redelivered, and the closed transport's consumer gets nothing more.
template <transport Transport>
void transport_check_close_requeues_unacked(transport_harness<Transport>& h) {
    auto t = h.make();
    const auto queue = declare_fresh_queue(h, t, "close-requeue");
    const auto messages = publish_new_messages(h, t, queue, 2);
    auto held = consume_held(h, t, consume_from(queue), 2);
    REQUIRE(describe(close(h, t)) == success);

    auto other = h.make();
    auto log = consume_checked(h, other, queue, messages);
    for (const auto& d : log->deliveries)
        CHECK(d.redelivered);
    REQUIRE(describe(publish(h, other, make_messages(1, "", queue).front())) == success);
    CHECK(collect_acked(h, {log}, 3));
    CHECK(held->deliveries.size() == 2);
}

/// Concept: a consumer cancel keeps its unacknowledged deliveries settleable, and stops
/// further deliveries to it.
template <transport Transport>
void transport_check_cancel_keeps_deliveries_settleable(transport_harness<Transport>& h) {
    auto t = h.make();
    const auto queue = declare_fresh_queue(h, t, "cancel");
    const auto messages = publish_new_messages(h, t, queue, 3);
    auto held = consume_held(h, t, consume_from(queue), 3);
    REQUIRE(describe(cancel(h, t, held->consumer_tag)) == success);
    for (const auto& d : held->deliveries)
        CHECK(describe(ack(h, t, d)) == success);

    const auto later = publish_new_messages(h, t, queue, 1);
    auto log = consume_acked(h, t, queue, 1);
    h.quiet();
    CHECK(held->deliveries.size() == 3);
    check_ids(ids_of(later), {log}, id_source::acked, false);
}

} // namespace letterbox::testing::detail
