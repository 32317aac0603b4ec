// SPDX-License-Identifier: BSL-1.0
#pragma once

// The checks of the transport conformance suite about queue_reader: async_get and async_queue_depth
// (run only for models of queue_reader; the others skip with a warning). One function template
// each, constrained by `letterbox::transport`, so that tests/archetypes/transport.cpp can
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

#include <cstddef>
#include <cstdint>
#include <set>
#include <utility>
#include <vector>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::testing::detail {

/// queue_reader: gets hand out the queue's messages in order, each once, with manual
/// acknowledgement; an empty queue answers `std::nullopt`; acked messages are gone.
template <transport Transport>
void transport_check_get_fetches_in_order_until_empty(transport_harness<Transport>& h) {
    if constexpr (!queue_reader<Transport>) {
        LETTERBOX_DETAIL_SKIP("the transport does not model queue_reader");
    } else {
        auto t = h.make();
        const auto queue = declare_fresh_queue(h, t, "get-order");
        check_get_finds_empty(h, t, queue);

        const auto messages = publish_new_messages(h, t, queue, 3);
        std::vector<delivery> got;
        for (std::size_t i = 0; i < messages.size(); ++i) {
            INFO("get " << i);
            got.push_back(require_get(h, t, queue));
        }
        check_get_finds_empty(h, t, queue);

        for (std::size_t i = 0; i < got.size(); ++i) {
            INFO("delivery " << i);
            if (h.features.guaranteed_order)
                CHECK(got[i].msg.id == messages[i].id);
            const auto* m = find_message(messages, got[i].msg.id);
            REQUIRE(m != nullptr);
            CHECK(got[i].msg == *m);
            CHECK(got[i].queue == queue);
            CHECK(got[i].consumer_tag.empty());
            CHECK_FALSE(got[i].redelivered);
            CHECK(describe(ack(h, t, got[i])) == success);
        }
        check_ready(queue_depth(h, t, queue), 0);
        h.quiet();
        const auto later = get(h, t, queue);
        CHECK_FALSE(later.d.has_value());
    }
}

/// queue_reader: a fetched message nacked with requeue comes back marked redelivered (at its
/// original position when the transport guarantees order); one rejected without requeue is
/// gone.
template <transport Transport>
void transport_check_get_then_nack_requeues(transport_harness<Transport>& h) {
    if constexpr (!queue_reader<Transport>) {
        LETTERBOX_DETAIL_SKIP("the transport does not model queue_reader");
    } else {
        if (!h.features.redelivery_on_nack)
            LETTERBOX_DETAIL_SKIP("the transport does not redeliver after a nack");
        auto t = h.make();
        const auto queue = declare_fresh_queue(h, t, "get-nack");
        const auto messages = publish_new_messages(h, t, queue, 3);

        const auto first = require_get(h, t, queue);
        const auto second = require_get(h, t, queue);
        // Back in reverse order: a classic queue still restores the original order.
        CHECK(describe(nack(h, t, second, true)) == success);
        CHECK(describe(nack(h, t, first, true)) == success);

        std::vector<delivery> again;
        for (std::size_t i = 0; i < messages.size(); ++i)
            again.push_back(require_get(h, t, queue));
        std::set<message_id> ids;
        for (const auto& d : again)
            ids.insert(d.msg.id);
        const auto published = ids_of(messages);
        CHECK(ids == std::set<message_id>(published.begin(), published.end()));
        for (const auto& d : again) {
            const bool was_fetched = d.msg.id == first.msg.id || d.msg.id == second.msg.id;
            CHECK(d.redelivered == was_fetched);
        }
        if (h.features.guaranteed_order)
            for (std::size_t i = 0; i < messages.size(); ++i)
                CHECK(again[i].msg.id == messages[i].id);

        auto reject = await_completion(
            h, [&](auto done) { t.async_reject(again[0], false, std::move(done)); });
        CHECK(describe(reject) == success);
        CHECK(describe(ack(h, t, again[1])) == success);
        CHECK(describe(nack(h, t, again[2], true)) == success);
        check_ready(queue_depth_settled(h, t, queue, 1), 1);
    }
}

/// queue_reader: fetched messages that were never settled return to the queue when the
/// transport closes, marked redelivered.
template <transport Transport>
void transport_check_unsettled_gets_return_on_close(transport_harness<Transport>& h) {
    if constexpr (!queue_reader<Transport>) {
        LETTERBOX_DETAIL_SKIP("the transport does not model queue_reader");
    } else {
        auto admin = h.make();
        const auto queue = declare_fresh_queue(h, admin, "get-close");
        const auto messages = publish_new_messages(h, admin, queue, 2);

        auto t = h.make();
        for (std::size_t i = 0; i < messages.size(); ++i)
            require_get(h, t, queue);
        check_ready(queue_depth(h, admin, queue), 0); // unacknowledged messages are not ready
        REQUIRE(describe(close(h, t)) == success);

        // The requeue may trail the close's completion on a real broker: look a few times.
        std::uint32_t ready = 0;
        for (int attempt = 0; attempt < 20 && ready < messages.size(); ++attempt) {
            if (attempt != 0)
                h.quiet();
            ready = queue_depth(h, admin, queue).ready;
        }
        CHECK(ready == messages.size());
        auto log = consume_checked(h, admin, queue, messages);
        for (const auto& d : log->deliveries)
            CHECK(d.redelivered);
    }
}

/// queue_reader: the depth counts ready messages; a missing queue is `errc::not_found` for
/// both operations, and neither the transport nor the deliveries it holds from other queues
/// suffer from it.
template <transport Transport>
void transport_check_depth_and_missing_queues(transport_harness<Transport>& h) {
    if constexpr (!queue_reader<Transport>) {
        LETTERBOX_DETAIL_SKIP("the transport does not model queue_reader");
    } else {
        auto t = h.make();
        const auto queue = declare_fresh_queue(h, t, "depth");
        check_ready(queue_depth(h, t, queue), 0);
        const auto messages = publish_new_messages(h, t, queue, 3);
        check_ready(queue_depth(h, t, queue), 3);

        const auto held = require_get(h, t, queue);

        const auto missing = h.unique_name("no-such-queue");
        CHECK(describe(queue_depth(h, t, missing).ec) == describe(errc::not_found));
        CHECK(describe(get(h, t, missing).ec) == describe(errc::not_found));

        check_ready(queue_depth(h, t, queue), 2);
        // The held delivery is still settleable: the failures did not close its channel.
        CHECK(describe(ack(h, t, held)) == success);
        auto next = get(h, t, queue);
        CHECK(describe(next.ec) == success);
        CHECK(next.d.has_value());
        if (next.d)
            CHECK(describe(ack(h, t, *next.d)) == success);
        check_ready(queue_depth(h, t, queue), 1);
    }
}

/// queue_reader: a get right after fetched messages were nacked with requeue fetches them
/// again, and its message count (when the transport gives one) counts the rest. A dead-letter
/// scan right after a browse gave everything back takes its bound from that count. Repeated,
/// because on a real broker the wrong answer is a race.
template <transport Transport>
void transport_check_get_sees_own_requeues(transport_harness<Transport>& h) {
    if constexpr (!queue_reader<Transport>) {
        LETTERBOX_DETAIL_SKIP("the transport does not model queue_reader");
    } else {
        if (!h.features.redelivery_on_nack)
            LETTERBOX_DETAIL_SKIP("the transport does not redeliver after a nack");
        auto t = h.make();
        const auto queue = declare_fresh_queue(h, t, "get-requeue");
        const auto messages = publish_new_messages(h, t, queue, 3);
        for (int round = 0; round < 50; ++round) {
            INFO("round " << round);
            std::vector<delivery> held;
            for (std::size_t i = 0; i < messages.size(); ++i) {
                auto d = require_get(h, t, queue);
                if (d.message_count)
                    CHECK(*d.message_count == messages.size() - 1 - i);
                held.push_back(std::move(d));
            }
            for (const auto& d : held)
                REQUIRE(describe(nack(h, t, d, true)) == success);
        }
        const auto depth = queue_depth_settled(h, t, queue, 3);
        CHECK(depth.ready == messages.size());
    }
}

} // namespace letterbox::testing::detail
