// SPDX-License-Identifier: BSL-1.0
#pragma once

// Hand-built histories for the checker tests: a script that records pipeline events one after
// the other, a microsecond of virtual time apart, with message ids made from small numbers.

#include <letterbox/message.hpp>
#include <letterbox/testing/history.hpp>
#include <letterbox/testing/history_event.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>

namespace history_test {

using namespace letterbox::testing;
using std::chrono::nanoseconds;

/// Message id number `n`: 00000000-0000-0000-0000-0000000000nn.
inline letterbox::message_id id(std::uint8_t n) {
    letterbox::message_id u{};
    u.data[15] = n;
    return u;
}

struct script {
    history h;
    nanoseconds now{0};
    nanoseconds step{1'000};

    /// Index of the event recorded last.
    std::size_t last() const { return h.size() - 1; }

    script& record(history_event_payload what) {
        h.record(now, std::move(what));
        now += step;
        return *this;
    }
    /// Moves virtual time to `t` (forward only) for the next event.
    script& at(nanoseconds t) {
        now = t;
        return *this;
    }

    script& commit(std::uint8_t n, std::string aggregate = "order/1", std::uint64_t sequence = 1) {
        return record(transaction_committed{{outbox_row{id(n), std::move(aggregate), sequence}}});
    }
    script& rollback(std::uint8_t n, std::string aggregate = "order/1",
                     std::uint64_t sequence = 1) {
        return record(transaction_rolled_back{{outbox_row{id(n), std::move(aggregate), sequence}}});
    }
    /// The relay's publish, confirm and mark.
    script& relay(std::uint8_t n) {
        record(relay_published{.id = id(n), .attempt = 1});
        record(relay_confirmed{.id = id(n)});
        return record(relay_marked{.id = id(n)});
    }
    script& deliver(const std::string& consumer, std::uint8_t n, std::uint32_t attempt = 1) {
        return record(broker_delivered{
            .consumer = consumer, .id = id(n), .redelivered = attempt > 1, .attempt = attempt});
    }
    script& nack(const std::string& consumer, std::uint8_t n) {
        return record(delivery_nacked{.consumer = consumer, .id = id(n), .requeue = true});
    }
    /// The effect only.
    script& effect(const std::string& consumer, std::uint8_t n, std::string aggregate = "order/1",
                   std::uint64_t sequence = 1) {
        return record(effect_applied{.consumer = consumer,
                                     .id = id(n),
                                     .aggregate = std::move(aggregate),
                                     .sequence = sequence});
    }
    /// The effect, then the inbox commit and the ack.
    script& apply(const std::string& consumer, std::uint8_t n, std::string aggregate = "order/1",
                  std::uint64_t sequence = 1) {
        effect(consumer, n, std::move(aggregate), sequence);
        record(inbox_committed{.consumer = consumer, .id = id(n)});
        return record(delivery_acked{.consumer = consumer, .id = id(n)});
    }
    script& defer(const std::string& consumer, std::uint8_t n, std::string why = "retried") {
        return record(delivery_deferred{.consumer = consumer, .id = id(n), .why = std::move(why)});
    }
    script& dead_letter(const std::string& consumer, std::uint8_t n, std::string reason) {
        return record(
            dead_lettered{.consumer = consumer, .id = id(n), .reason = std::move(reason)});
    }
    script& fault(fault_kind kind, std::optional<std::uint8_t> n = std::nullopt,
                  std::string detail = {}) {
        std::optional<letterbox::message_id> target;
        if (n) {
            target = id(*n);
        }
        return record(fault_injected{.kind = kind, .id = target, .detail = std::move(detail)});
    }

    /// Commit, relay, one delivery and the effect: the happy path of one message to one
    /// consumer.
    script& happy(const std::string& consumer, std::uint8_t n, std::string aggregate = "order/1",
                  std::uint64_t sequence = 1) {
        commit(n, aggregate, sequence);
        relay(n);
        deliver(consumer, n);
        return apply(consumer, n, std::move(aggregate), sequence);
    }
};

} // namespace history_test
