// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/config.hpp>

#include <chrono>
#include <cstddef>
#include <optional>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::testing {

/// How big the conformance suite's scenarios are: watermill's `-short` sizes for every pull
/// request, its full sizes for a nightly or stress run.
enum class suite_size {
    short_sizes, ///< hundreds of messages, a handful of publishers and consumers
    full_sizes   ///< thousands of messages, dozens of publishers and consumers
};

/// What a `transport` model promises beyond the `transport` concept, declared by its suite
/// fixture (watermill's `Features`, reliability-anchors B1). The suite adapts its expectations
/// to them, and skips (with a `WARN`) the scenarios a model does not support.
///
/// Flags of watermill's that do not apply: consumer groups (every transport declares queues
/// and bindings, so a group is a queue: the suite always runs that scenario), "require single
/// instance" (no letterbox transport needs it), "new subscriber receives old messages" (log
/// semantics; not what queues do), and context preservation (no Go contexts).
struct transport_features {
    /// Deliveries from one queue to one consumer arrive in publish order. Runs WM-04 (per-key
    /// order) and WM-06 (the next delivery waits for the held one).
    bool guaranteed_order = true;
    /// Order holds only with a single consumer on the queue: WM-04 uses one consumer instead
    /// of several competing ones.
    bool guaranteed_order_with_single_subscriber = true;
    /// Messages survive the consumers that came and went (and, with `restartable`, a broker
    /// restart): WM-07 and WM-15 need it.
    bool persistent = true;
    /// The model never delivers a message twice. Without it, the suite de-duplicates what it
    /// receives by message id; with it, a duplicate is a failure and WM-07 (which redelivers
    /// what stopped consumers held) is skipped.
    bool exactly_once_delivery = false;
    /// A nack or reject with requeue gives the message back for another delivery, marked
    /// `redelivered`. Runs WM-05, WM-09, WM-14 and the redelivery and requeue-loop checks.
    bool redelivery_on_nack = true;
    /// The fixture has `restart_broker()`: runs WM-15 (publish through broker restarts).
    bool restartable = false;
    /// Scenario sizes.
    suite_size size = suite_size::short_sizes;
    /// The longest the suite waits for something that must happen (watermill: 15 s).
    std::chrono::milliseconds timeout{std::chrono::seconds{15}};
    /// How long the suite watches for something that must *not* happen (watermill: 100 ms):
    /// the next delivery while one is held with prefetch 1, a redelivery after an ack.
    std::chrono::milliseconds quiet_period{100};
    /// When set, every queue the suite declares carries `x-expires` with this value, so a
    /// shared broker forgets the suite's queues some time after a run.
    std::optional<std::chrono::milliseconds> queue_expires{};
};

/// The sizes of the suite's scenarios for one `suite_size`.
struct suite_sizes {
    /// WM-01, WM-05: messages published to one queue.
    std::size_t messages;
    /// WM-02, WM-11: publishing threads (each with its own transport) and messages per thread.
    std::size_t publishers;
    std::size_t messages_per_publisher;
    /// WM-02: competing consumers.
    std::size_t consumers;
    /// WM-03: queues, and messages per queue.
    std::size_t queues;
    std::size_t messages_per_queue;
    /// WM-04: messages in the ordered stream.
    std::size_t ordered_messages;
    /// WM-07: messages, consumer rounds, and acks per round.
    std::size_t resumed_messages;
    std::size_t rounds;
    std::size_t batch;
    /// WM-09: subscribers that nack, and nacks each.
    std::size_t nacking_subscribers;
    std::size_t nacks_each;
    /// WM-15: publishing lanes and messages per lane.
    std::size_t lanes;
    std::size_t messages_per_lane;
};

/// watermill's sizes: its `-short` ones, and its full ones (scaled down where watermill's
/// full size is a Go-goroutine count, not a message count).
constexpr suite_sizes sizes_for(suite_size s) noexcept {
    if (s == suite_size::full_sizes)
        return {.messages = 1000,
                .publishers = 20,
                .messages_per_publisher = 250,
                .consumers = 50,
                .queues = 20,
                .messages_per_queue = 100,
                .ordered_messages = 1000,
                .resumed_messages = 5000,
                .rounds = 20,
                .batch = 250,
                .nacking_subscribers = 3,
                .nacks_each = 100,
                .lanes = 100,
                .messages_per_lane = 100};
    return {.messages = 100,
            .publishers = 4,
            .messages_per_publisher = 25,
            .consumers = 10,
            .queues = 10,
            .messages_per_queue = 50,
            .ordered_messages = 100,
            .resumed_messages = 50,
            .rounds = 8,
            .batch = 25,
            .nacking_subscribers = 3,
            .nacks_each = 5,
            .lanes = 10,
            .messages_per_lane = 30};
}

} // namespace letterbox::testing
