// SPDX-License-Identifier: BSL-1.0
#pragma once

// The checks of the transport conformance suite about topology and routing: bindings, routing keys,
// unroutable publishes, missing exchanges and queues, and redeclaration. One function template
// each, constrained by `letterbox::transport`, so that tests/archetypes/transport.cpp can
// instantiate them with `transport_archetype`. Included by letterbox/testing/transport_suite.hpp,
// which lists them in LETTERBOX_TRANSPORT_SUITE.

#include <letterbox/concepts/transport.hpp>
#include <letterbox/config.hpp>
#include <letterbox/error.hpp>
#include <letterbox/message.hpp>
#include <letterbox/testing/detail/describe.hpp>
#include <letterbox/testing/detail/transport_harness.hpp>
#include <letterbox/testing/detail/transport_suite_support.hpp>
#include <letterbox/testing/transport_features.hpp>
#include <letterbox/topology/binding.hpp>
#include <letterbox/topology/exchange.hpp>
#include <letterbox/topology/queue_arguments.hpp>

#include <catch2/catch.hpp>

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::testing::detail {

/// WM-10 TestConsumerGroups: each group (a queue bound to the exchange) gets every message.
template <transport Transport>
void transport_check_consumer_groups(transport_harness<Transport>& h) {
    constexpr std::size_t n = 50;
    auto t = h.make();
    const auto x = declare_fresh_exchange(h, t, "wm10", topology::exchange_type::fanout);
    std::vector<std::string> groups;
    for (const auto* stem : {"wm10-group-a", "wm10-group-b"}) {
        groups.push_back(declare_fresh_queue(h, t, stem));
        REQUIRE(describe(bind(h, t, suite_binding(x.name, groups.back()))) == success);
    }
    const auto messages = make_messages(n, x.name, "");
    require_published(h, t, messages);
    auto subscriber = h.make();
    for (const auto& group : groups) {
        INFO("group " << group);
        consume_checked(h, subscriber, group, messages);
    }
}

/// WM-12 TestTopic: a message goes only where its routing key leads.
template <transport Transport>
void transport_check_routing_isolates_queues(transport_harness<Transport>& h) {
    auto t = h.make();
    const auto x = declare_fresh_exchange(h, t, "wm12", topology::exchange_type::direct);
    std::vector<std::string> queues;
    std::vector<message> messages;
    for (const auto* key : {"topic-a", "topic-b"}) {
        queues.push_back(declare_fresh_queue(h, t, key));
        REQUIRE(describe(bind(h, t, suite_binding(x.name, queues.back(), key))) == success);
        messages.push_back(make_messages(1, x.name, key).front());
    }
    require_published(h, t, messages);
    auto subscriber = h.make();
    std::vector<std::shared_ptr<consumer_log>> logs;
    for (const auto& q : queues)
        logs.push_back(consume(h, subscriber, consume_from(q), ack_all()));
    REQUIRE(collect_until(h, [&] { return logs[0]->unique() >= 1 && logs[1]->unique() >= 1; }));
    h.quiet();
    for (std::size_t i = 0; i < 2; ++i) {
        INFO("queue " << queues[i]);
        check_ids({messages[i].id}, {logs[i]}, id_source::delivered,
                  !h.features.exactly_once_delivery);
    }
}

/// Concept: an unroutable publish completes with `errc::no_route`, and the transport keeps
/// publishing.
template <transport Transport>
void transport_check_unroutable_publish_is_no_route(transport_harness<Transport>& h) {
    auto t = h.make();
    const auto queue = declare_fresh_queue(h, t, "no-route");
    const auto nowhere = make_messages(1, "", h.unique_name("no-such-queue"));
    CHECK(describe(publish(h, t, nowhere.front())) == describe(errc::no_route));
    const auto routed = make_messages(1, "", queue);
    CHECK(describe(publish(h, t, routed.front())) == success);
}

/// Concept: a publish to a missing exchange completes with `errc::not_found`, and the
/// transport keeps publishing (after the channel error it must use a new channel).
template <transport Transport>
void transport_check_publish_to_missing_exchange_is_not_found(transport_harness<Transport>& h) {
    auto t = h.make();
    const auto queue = declare_fresh_queue(h, t, "not-found");
    const auto lost = make_messages(1, h.unique_name("no-such-exchange"), "key");
    CHECK(describe(publish(h, t, lost.front())) == describe(errc::not_found));
    const auto routed = publish_new_messages(h, t, queue, 3);
    consume_acked(h, t, queue, routed.size());
}

/// Concept: consuming a missing queue completes with `errc::not_found`, and the transport keeps
/// consuming.
template <transport Transport>
void transport_check_consume_from_missing_queue_is_not_found(transport_harness<Transport>& h) {
    auto t = h.make();
    auto missing = begin_consume(t, consume_from(h.unique_name("no-such-queue")), ack_all());
    REQUIRE(h.wait([&] { return missing->consume_result.has_value(); }));
    CHECK(describe(*missing->consume_result) == describe(errc::not_found));

    const auto queue = declare_fresh_queue(h, t, "after-not-found");
    const auto messages = publish_new_messages(h, t, queue, 2);
    consume_acked(h, t, queue, messages.size());
}

/// Concept: declaring the same exchange, queue and binding again is idempotent.
template <transport Transport>
void transport_check_redeclaring_is_idempotent(transport_harness<Transport>& h) {
    auto t = h.make();
    const auto x =
        suite_exchange(h.features, h.unique_name("redeclare"), topology::exchange_type::topic);
    const auto q = suite_queue(h.features, h.unique_name("redeclare"));
    const auto b = suite_binding(x.name, q.name, "suite.#");
    for (int i = 0; i < 2; ++i) {
        INFO("declaration " << i + 1);
        CHECK(describe(declare(h, t, x)) == success);
        CHECK(describe(declare(h, t, q)) == success);
        CHECK(describe(bind(h, t, b)) == success);
    }
    const auto messages = make_messages(1, x.name, "suite.redeclared");
    require_published(h, t, messages);
    auto log = consume_acked(h, t, q.name, 1);
    h.quiet();
    CHECK(log->deliveries.size() == 1);
}

} // namespace letterbox::testing::detail
