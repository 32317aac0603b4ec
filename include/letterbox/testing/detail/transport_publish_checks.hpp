// SPDX-License-Identifier: BSL-1.0
#pragma once

// The checks of the transport conformance suite about publish and subscribe: what is published
// arrives, whole, in order, to competing consumers and from concurrent publishers. One function
// template each, constrained by `letterbox::transport`, so that tests/archetypes/transport.cpp can
// instantiate them with `transport_archetype`. Included by letterbox/testing/transport_suite.hpp,
// which lists them in LETTERBOX_TRANSPORT_SUITE.

#include <letterbox/concepts/transport.hpp>
#include <letterbox/config.hpp>
#include <letterbox/delivery.hpp>
#include <letterbox/error.hpp>
#include <letterbox/message.hpp>
#include <letterbox/testing/detail/describe.hpp>
#include <letterbox/testing/detail/transport_harness.hpp>
#include <letterbox/testing/detail/transport_suite_support.hpp>
#include <letterbox/testing/transport_features.hpp>

#include <catch2/catch.hpp>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::testing::detail {

/// Adapter checklist: publish/subscribe round trip.
template <transport Transport>
void transport_check_round_trip(transport_harness<Transport>& h) {
    auto t = h.make();
    const auto queue = declare_fresh_queue(h, t, "round-trip");

    message m;
    m.id = message_id_generator{}();
    m.type = "letterbox.suite.round_trip";
    m.routing_key = queue;
    m.headers.set("x-suite-text", "text");
    m.headers.set("x-suite-count", std::int64_t{7});
    m.headers.set("x-suite-flag", true);
    m.headers.set("x-suite-table", field_table{{"nested", std::int64_t{1}}, {"name", "n"}});
    m.body = std::string("body\0with a NUL", 15) + "\xff\xfe binary tail";
    m.properties.content_type = "application/octet-stream";
    m.properties.content_encoding = "identity";
    m.properties.correlation_id = "correlation-1";
    m.properties.reply_to = "reply-queue";
    m.properties.timestamp = timestamp{std::chrono::seconds{1767225600}};
    m.properties.priority = 3;
    m.properties.app_id = "letterbox-suite";
    // Not set: `expiration` (it is a TTL, which another check would have to wait out) and
    // `user_id` (RabbitMQ refuses one that differs from the connection's user).
    m.properties.persistent = true;

    REQUIRE(describe(publish(h, t, m)) == success);
    auto log = consume(h, t, consume_from(queue), ack_all());
    REQUIRE(collect_unique(h, {log}, 1));

    const auto& d = log->deliveries.front();
    CHECK(d.msg.id == m.id);
    CHECK(d.msg.type == m.type);
    CHECK(d.msg.exchange == m.exchange);
    CHECK(d.msg.routing_key == m.routing_key);
    CHECK(d.msg.headers == m.headers);
    CHECK(d.msg.body == m.body);
    CHECK(d.msg.properties == m.properties);
    CHECK(d.msg == m);
    CHECK_FALSE(d.redelivered);
    CHECK(d.queue == queue);
    CHECK(d.consumer_tag == log->consumer_tag);
    CHECK(d.delivery_tag != 0);
    REQUIRE(collect_until(h, [&] { return log->settled == 1; }));
    CHECK(log->settle_errors.empty());
}

/// A message published with the nil id is published with a fresh id (message.hpp): no message
/// leaves letterbox without one, since an inbox deduplicates on it. Two such publishes get two
/// ids, and the caller's message is left as it was.
template <transport Transport>
void transport_check_publish_assigns_an_id_to_the_nil_id(transport_harness<Transport>& h) {
    auto t = h.make();
    const auto queue = declare_fresh_queue(h, t, "nil-id");
    message m;
    m.routing_key = queue;
    for (const char* body : {"first", "second"}) {
        m.body = body;
        REQUIRE(describe(publish(h, t, m)) == success);
    }
    CHECK(m.id.is_nil());
    auto log = consume(h, t, consume_from(queue), ack_all());
    REQUIRE(collect_unique(h, {log}, 2));
    REQUIRE(log->deliveries.size() >= 2);
    CHECK_FALSE(log->deliveries[0].msg.id.is_nil());
    CHECK_FALSE(log->deliveries[1].msg.id.is_nil());
    CHECK(log->deliveries[0].msg.id != log->deliveries[1].msg.id);
    REQUIRE(collect_until(h, [&] { return log->settled >= 2; }));
}

/// WM-01 TestPublishSubscribe: what was published before anyone subscribed is all received.
template <transport Transport>
void transport_check_publish_subscribe(transport_harness<Transport>& h) {
    const auto n = sizes_for(h.features.size).messages;
    auto publisher = h.make();
    auto subscriber = h.make();
    const auto queue = declare_fresh_queue(h, publisher, "wm01");
    const auto messages = publish_new_messages(h, publisher, queue, n);

    auto log = consume_checked(h, subscriber, queue, messages);
    for (const auto& d : log->deliveries) {
        const auto* m = find_message(messages, d.msg.id);
        REQUIRE(m != nullptr);
        CHECK(d.msg.body == m->body);
        CHECK(d.msg.headers == m->headers);
    }

    // After closing, the consumer gets nothing more.
    CHECK(describe(close(h, subscriber)) == success);
    CHECK(describe(close(h, publisher)) == success);
    const auto seen = log->deliveries.size();
    auto late = h.make();
    REQUIRE(describe(publish(h, late, make_messages(1, "", queue).front())) == success);
    h.quiet();
    CHECK(log->deliveries.size() == seen);
}

/// WM-02 TestConcurrentSubscribe (with WM-11's concurrent publishers): several threads
/// publish, several competing consumers consume; nothing is lost.
template <transport Transport>
void transport_check_concurrent_publishers_competing_consumers(transport_harness<Transport>& h) {
    const auto sizes = sizes_for(h.features.size);
    auto admin = h.make();
    const auto queue = declare_fresh_queue(h, admin, "wm02");

    auto fleet = make_publisher_fleet(h, queue, sizes.publishers, sizes.messages_per_publisher);
    const auto& all = fleet.ids;
    struct outcome {
        std::mutex mutex;
        std::size_t completed = 0;
        std::vector<std::error_code> failures;
    };
    auto out = std::make_shared<outcome>();
    publish_from_threads(
        h, fleet,
        [out](Transport& publisher, const std::vector<message>& batch) {
            for (const auto& m : batch)
                publisher.async_publish(m, [out](std::error_code ec) {
                    std::lock_guard lock(out->mutex);
                    ++out->completed;
                    if (ec)
                        out->failures.push_back(ec);
                });
        },
        [&] {
            std::lock_guard lock(out->mutex);
            return out->completed == all.size();
        });
    {
        std::lock_guard lock(out->mutex);
        INFO("first failure: " << (out->failures.empty() ? std::string(success)
                                                         : describe(out->failures.front())));
        REQUIRE(out->completed == all.size());
        REQUIRE(out->failures.empty());
    }

    std::deque<Transport> consumers;
    std::vector<std::shared_ptr<consumer_log>> logs;
    for (std::size_t c = 0; c < sizes.consumers; ++c) {
        consumers.emplace_back(h.make());
        logs.push_back(consume(h, consumers.back(), consume_from(queue, 8), ack_all()));
    }
    CHECK(collect_acked(h, logs, all.size()));
    check_ids(all, logs, id_source::acked, !h.features.exactly_once_delivery);
}

/// WM-03 TestConcurrentSubscribeMultipleTopics: many queues at once, each gets exactly its own
/// copies of the same messages (the same ids in every queue are not de-duplicated across them).
template <transport Transport>
void transport_check_many_queues_at_once(transport_harness<Transport>& h) {
    const auto sizes = sizes_for(h.features.size);
    auto t = h.make();
    auto subscriber = h.make();
    std::vector<std::string> queues;
    auto declared = std::make_shared<std::vector<std::error_code>>();
    for (std::size_t i = 0; i < sizes.queues; ++i) {
        queues.push_back(h.unique_name("wm03"));
        t.async_declare(suite_queue(h.features, queues.back()),
                        [declared](std::error_code ec) { declared->push_back(ec); });
    }
    REQUIRE(h.wait([&] { return declared->size() == queues.size(); }));
    for (const auto& ec : *declared)
        REQUIRE(describe(ec) == success);

    const auto originals = make_messages(sizes.messages_per_queue, "", "");
    std::vector<message> all;
    for (const auto& q : queues)
        for (auto m : originals) {
            m.routing_key = q;
            all.push_back(std::move(m));
        }
    // Consumers first, then every publish at once: consuming and publishing interleave.
    std::vector<std::shared_ptr<consumer_log>> logs;
    for (const auto& q : queues)
        logs.push_back(begin_consume(subscriber, consume_from(q), ack_all()));
    const auto results = publish_all(h, t, all);
    CHECK(std::all_of(results.begin(), results.end(), [](std::error_code ec) { return !ec; }));

    for (std::size_t i = 0; i < queues.size(); ++i) {
        INFO("queue " << queues[i]);
        CHECK(collect_acked(h, {logs[i]}, originals.size()));
        REQUIRE(logs[i]->consume_result.has_value());
        CHECK(describe(*logs[i]->consume_result) == success);
        check_ids(ids_of(originals), {logs[i]}, id_source::acked,
                  !h.features.exactly_once_delivery);
        for (const auto& d : logs[i]->deliveries) {
            CHECK(d.queue == queues[i]);
            CHECK(d.msg.routing_key == queues[i]);
        }
    }
}

/// WM-04 TestPublishSubscribeInOrder: per key, messages arrive in publish order.
template <transport Transport>
void transport_check_publish_subscribe_in_order(transport_harness<Transport>& h) {
    if (!h.features.guaranteed_order)
        LETTERBOX_DETAIL_SKIP("the transport does not guarantee order");
    const auto n = sizes_for(h.features.size).ordered_messages;
    constexpr std::size_t keys = 16;
    auto publisher = h.make();
    const auto queue = declare_fresh_queue(h, publisher, "wm04");
    auto messages = make_messages(n, "", queue);
    for (std::size_t i = 0; i < n; ++i)
        messages[i].body = std::to_string(i % keys);
    require_published(h, publisher, messages);

    const std::size_t subscribers = h.features.guaranteed_order_with_single_subscriber ? 1 : 10;
    std::deque<Transport> transports;
    std::vector<std::shared_ptr<consumer_log>> logs;
    // Every consumer's deliveries, in the order the suite saw them.
    auto arrivals = std::make_shared<std::vector<delivery>>();
    for (std::size_t s = 0; s < subscribers; ++s) {
        transports.emplace_back(h.make());
        logs.push_back(consume(h, transports.back(), consume_from(queue),
                               [arrivals](const delivery& d, const consumer_log&) {
                                   arrivals->push_back(d);
                                   return settle_action::ack;
                               }));
    }
    CHECK(collect_acked(h, logs, n));
    check_ids(ids_of(messages), logs, id_source::acked, !h.features.exactly_once_delivery);

    std::map<std::string, std::vector<message_id>> published;
    for (const auto& m : messages)
        published[m.body].push_back(m.id);
    std::map<std::string, std::vector<message_id>> received;
    std::set<message_id> seen;
    for (const auto& d : *arrivals)
        if (seen.insert(d.msg.id).second)
            received[d.msg.body].push_back(d.msg.id);
    for (const auto& [key, ids] : published) {
        INFO("key " << key);
        CHECK(received[key] == ids);
    }
}

/// WM-11 TestPublisherClose: publishers on several threads close right after their last
/// publish; every publish completes, none with success that then goes missing.
template <transport Transport>
void transport_check_publisher_close_after_concurrent_publishes(transport_harness<Transport>& h) {
    const auto sizes = sizes_for(h.features.size);
    auto admin = h.make();
    const auto queue = declare_fresh_queue(h, admin, "wm11");
    auto fleet = make_publisher_fleet(h, queue, sizes.publishers, sizes.messages_per_publisher);
    const auto& all = fleet.ids;
    struct outcome {
        std::mutex mutex;
        std::map<message_id, std::vector<std::error_code>> publishes;
        std::vector<std::error_code> closes;
        std::size_t completed = 0;
    };
    auto out = std::make_shared<outcome>();
    publish_from_threads(
        h, fleet,
        [out](Transport& publisher, const std::vector<message>& batch) {
            for (const auto& m : batch)
                publisher.async_publish(m, [out, id = m.id](std::error_code ec) {
                    std::lock_guard lock(out->mutex);
                    out->publishes[id].push_back(ec);
                    ++out->completed;
                });
            publisher.async_close([out](std::error_code ec) {
                std::lock_guard lock(out->mutex);
                out->closes.push_back(ec);
            });
        },
        [&] {
            std::lock_guard lock(out->mutex);
            return out->completed == all.size() && out->closes.size() == sizes.publishers;
        });
    std::vector<message_id> succeeded;
    {
        std::lock_guard lock(out->mutex);
        REQUIRE(out->completed == all.size());
        REQUIRE(out->closes.size() == sizes.publishers);
        for (const auto& ec : out->closes)
            CHECK(describe(ec) == success);
        for (const auto& id : all) {
            const auto& outcomes = out->publishes[id];
            INFO("message " << letterbox::to_string(id));
            REQUIRE(outcomes.size() == 1);
            const auto ec = outcomes.front();
            CHECK((!ec || ec == errc::outcome_unknown));
            if (!ec)
                succeeded.push_back(id);
        }
    }
    INFO(succeeded.size() << " of " << all.size() << " publishes succeeded");
    auto reader = h.make();
    auto log = consume_acked(h, reader, queue, succeeded.size());
    // Outcome-unknown publishes may or may not have arrived: the log holds every success and
    // nothing that was not published.
    for (const auto& id : succeeded)
        CHECK(log->acked.contains(id));
    check_only_published(all, *log);
}

/// Concept: `on_delivery` runs only after `async_consume` completed, one delivery at a time.
template <transport Transport>
void transport_check_deliveries_follow_consume_completion(transport_harness<Transport>& h) {
    auto t = h.make();
    const auto queue = declare_fresh_queue(h, t, "consume-order");
    const auto messages = publish_new_messages(h, t, queue, 5);
    auto log = consume_acked(h, t, queue, messages.size());
    CHECK(log->early_deliveries == 0);
    CHECK(log->reentered == 0);
}

} // namespace letterbox::testing::detail
