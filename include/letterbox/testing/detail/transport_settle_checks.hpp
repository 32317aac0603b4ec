// SPDX-License-Identifier: BSL-1.0
#pragma once

// The checks of the transport conformance suite about acknowledgement and redelivery: ack, nack and
// reject, the redelivered flag, prefetch, and the requeue loop. One function template each,
// constrained by `letterbox::transport`, so that tests/archetypes/transport.cpp can instantiate
// them with `transport_archetype`. Included by letterbox/testing/transport_suite.hpp, which lists
// them in LETTERBOX_TRANSPORT_SUITE.

#include <letterbox/concepts/transport.hpp>
#include <letterbox/config.hpp>
#include <letterbox/delivery.hpp>
#include <letterbox/testing/detail/describe.hpp>
#include <letterbox/testing/detail/transport_harness.hpp>
#include <letterbox/testing/detail/transport_suite_support.hpp>
#include <letterbox/testing/transport_features.hpp>

#include <catch2/catch.hpp>

#include <cstddef>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::testing::detail {

/// WM-05 TestResendOnError: nacked messages come back; none is lost.
template <transport Transport>
void transport_check_resend_on_nack(transport_harness<Transport>& h) {
    if (!h.features.redelivery_on_nack)
        LETTERBOX_DETAIL_SKIP("the transport does not redeliver after a nack");
    const auto n = sizes_for(h.features.size).messages;
    auto t = h.make();
    const auto queue = declare_fresh_queue(h, t, "wm05");
    const auto messages = publish_new_messages(h, t, queue, n);

    auto log = consume(h, t, consume_from(queue), nack_first(2));
    CHECK(collect_acked(h, {log}, n));
    check_ids(ids_of(messages), {log}, id_source::acked, !h.features.exactly_once_delivery);
    REQUIRE(log->deliveries.size() >= 2);
    for (std::size_t i = 0; i < 2; ++i) {
        const auto& nacked = log->deliveries[i];
        INFO("nacked delivery " << i);
        CHECK(log->times(nacked.msg.id) >= 2);
    }
    CHECK(log->settle_errors.empty());
}

/// Adapter checklist: redelivery after nack (and reject) has the redelivered flag.
template <transport Transport>
void transport_check_redelivery_is_flagged(transport_harness<Transport>& h) {
    if (!h.features.redelivery_on_nack)
        LETTERBOX_DETAIL_SKIP("the transport does not redeliver after a nack");
    auto t = h.make();
    for (const auto first : {settle_action::nack_requeue, settle_action::reject_requeue}) {
        INFO((first == settle_action::nack_requeue ? "nack" : "reject") << " with requeue");
        const auto queue = declare_fresh_queue(h, t, "redelivered");
        const auto messages = publish_new_messages(h, t, queue, 1);
        auto log =
            consume(h, t, consume_from(queue), [first](const delivery&, const consumer_log& l) {
                return l.deliveries.size() == 1 ? first : settle_action::ack;
            });
        REQUIRE(collect_until(h, [&] { return log->deliveries.size() >= 2; }));
        const auto& a = log->deliveries[0];
        const auto& b = log->deliveries[1];
        CHECK_FALSE(a.redelivered);
        CHECK(b.redelivered);
        CHECK(b.msg.id == messages.front().id);
        CHECK(b.msg.type == messages.front().type);
        CHECK(b.msg.body == messages.front().body);
        REQUIRE(collect_until(h, [&] { return log->settled >= 2; }));
        CHECK(log->settle_errors.empty());
    }
}

/// Adapter checklist: ack and nack. An ack, or a nack or reject without requeue, settles the
/// message for good (no dead-letter exchange: it is dropped).
template <transport Transport>
void transport_check_ack_and_nack_settle(transport_harness<Transport>& h) {
    auto t = h.make();
    const auto queue = declare_fresh_queue(h, t, "settle");
    auto messages = make_messages(3, "", queue);
    require_published(h, t, messages);
    // Message 0 is acked, 1 nacked without requeue, 2 rejected without requeue.
    auto log = consume(h, t, consume_from(queue), [](const delivery& d, const consumer_log&) {
        return d.msg.body == "0"   ? settle_action::ack
               : d.msg.body == "1" ? settle_action::nack_drop
                                   : settle_action::reject_drop;
    });
    REQUIRE(collect_until(h, [&] { return log->settled >= 3; }));
    CHECK(log->settle_errors.empty());
    h.quiet();
    check_ids(ids_of(messages), {log}, id_source::delivered, false);

    auto other = h.make();
    auto late = consume(h, other, consume_from(queue), ack_all());
    h.quiet();
    CHECK(late->deliveries.empty());
}

/// WM-06 TestNoAck: with prefetch 1 the next message waits for the held one, and an acked
/// message does not come back.
template <transport Transport>
void transport_check_held_delivery_blocks_the_next(transport_harness<Transport>& h) {
    if (!h.features.guaranteed_order)
        LETTERBOX_DETAIL_SKIP("the transport does not guarantee order");
    auto t = h.make();
    const auto queue = declare_fresh_queue(h, t, "wm06");
    const auto messages = publish_new_messages(h, t, queue, 2);

    auto log = consume_held(h, t, consume_from(queue, 1), 1);
    CHECK(log->deliveries.front().msg.id == messages[0].id);
    h.quiet();
    CHECK(log->deliveries.size() == 1);

    REQUIRE(describe(ack(h, t, log->deliveries.front())) == success);
    REQUIRE(collect_until(h, [&] { return log->deliveries.size() >= 2; }));
    CHECK(log->deliveries[1].msg.id == messages[1].id);
    h.quiet();
    CHECK(log->times(messages[0].id) == 1);
    CHECK(describe(ack(h, t, log->deliveries[1])) == success);
}

/// WM-09 TestContinueAfterErrors: consumers that nack again and again, then stop, lose
/// nothing.
template <transport Transport>
void transport_check_continue_after_nacks(transport_harness<Transport>& h) {
    if (!h.features.redelivery_on_nack)
        LETTERBOX_DETAIL_SKIP("the transport does not redeliver after a nack");
    const auto sizes = sizes_for(h.features.size);
    constexpr std::size_t n = 50;
    auto publisher = h.make();
    const auto queue = declare_fresh_queue(h, publisher, "wm09");
    const auto messages = publish_new_messages(h, publisher, queue, n);

    for (std::size_t s = 0; s < sizes.nacking_subscribers; ++s) {
        INFO("nacking subscriber " << s);
        auto t = h.make();
        auto log =
            consume(h, t, consume_from(queue), nack_first(sizes.nacks_each, settle_action::hold));
        CHECK(collect_until(h, [&] { return log->settled >= sizes.nacks_each; }));
        CHECK(log->settle_errors.empty());
        CHECK(describe(close(h, t)) == success);
    }
    auto reader = h.make();
    consume_checked(h, reader, queue, messages);
}

/// Concept (at-least-once, RabbitMQ's requeue loop): a consumer that nacks every delivery
/// with requeue gets the message again and again, and other consumers keep working meanwhile.
template <transport Transport>
void transport_check_requeue_loop_does_not_starve_others(transport_harness<Transport>& h) {
    if (!h.features.redelivery_on_nack)
        LETTERBOX_DETAIL_SKIP("the transport does not redeliver after a nack");
    auto looping = h.make();
    const auto poison = declare_fresh_queue(h, looping, "requeue-loop");
    require_published(h, looping, make_messages(1, "", poison));
    auto loop = consume(h, looping, consume_from(poison), [](const delivery&, const consumer_log&) {
        return settle_action::nack_requeue;
    });
    REQUIRE(collect_until(h, [&] { return loop->deliveries.size() >= 3; }));

    auto other = h.make();
    const auto queue = declare_fresh_queue(h, other, "beside-the-loop");
    const auto messages = publish_new_messages(h, other, queue, 3);
    consume_acked(h, other, queue, messages.size());
    CHECK(describe(close(h, looping)) == success);
    for (std::size_t i = 1; i < loop->deliveries.size(); ++i)
        CHECK(loop->deliveries[i].redelivered);
}

} // namespace letterbox::testing::detail
