// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/config.hpp>
#include <letterbox/message.hpp>
#include <letterbox/testing/detail/history_text.hpp>

#include <chrono>
#include <cstdint>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <type_traits>
#include <variant>
#include <vector>

/// One event of a pipeline run, as a `history` records it: when it happened in virtual time and
/// what happened. The alternatives below are the event vocabulary; each names the message id it
/// concerns, and the consumer when a consumer did it. Every alternative is a plain aggregate,
/// built with designated initialisers:
///
///     h.record(at, effect_applied{.consumer = "billing", .id = id, .aggregate = "order-7",
///                                 .sequence = 3});
///
/// The text form of an event (`to_string`) is one line, stable across runs, platforms and
/// compilers: the trace hash of a history is computed over it.
namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::testing {

/// Which fault of the catalogue (reliability-anchors C2) a `fault_injected` event injected.
enum class fault_kind {
    connection_drop,           ///< F-02: the client's connection to the broker dropped
    broker_restart,            ///< F-03: the broker restarted; unconfirmed messages in doubt
    lost_confirm,              ///< F-19: a publish's confirm was lost (unknown outcome)
    publish_nack,              ///< F-12: the broker refused (nacked) a publish
    duplicate_delivery,        ///< F-07: the broker delivered a message once more
    handler_transient_failure, ///< F-09: the handler failed once, retryably
    handler_permanent_failure, ///< F-09: the handler failed for good for one message
    poison_message,            ///< F-10: a message that always fails (`id` names it)
    slow_consumer,             ///< F-11: a consumer paused in virtual time
    consumer_cancel,           ///< F-20: a consumer was cancelled mid-stream
    sqlite_busy,               ///< F-17: a store call failed with SQLITE_BUSY
    crash,                     ///< F-04, F-05: a process crashed (at a failpoint, in `detail`)
    binding_removed,           ///< F-21: every binding of the exchange removed, or restored
    queue_deleted,             ///< F-21: the work queues deleted (empty), or restored
    other                      ///< anything else; say what in `detail`
};

/// The name of a fault kind, as the text form of a history spells it.
constexpr std::string_view to_string(fault_kind kind) noexcept {
    switch (kind) {
    case fault_kind::connection_drop:
        return "connection_drop";
    case fault_kind::broker_restart:
        return "broker_restart";
    case fault_kind::lost_confirm:
        return "lost_confirm";
    case fault_kind::publish_nack:
        return "publish_nack";
    case fault_kind::duplicate_delivery:
        return "duplicate_delivery";
    case fault_kind::handler_transient_failure:
        return "handler_transient_failure";
    case fault_kind::handler_permanent_failure:
        return "handler_permanent_failure";
    case fault_kind::poison_message:
        return "poison_message";
    case fault_kind::slow_consumer:
        return "slow_consumer";
    case fault_kind::consumer_cancel:
        return "consumer_cancel";
    case fault_kind::sqlite_busy:
        return "sqlite_busy";
    case fault_kind::crash:
        return "crash";
    case fault_kind::binding_removed:
        return "binding_removed";
    case fault_kind::queue_deleted:
        return "queue_deleted";
    case fault_kind::other:
        return "other";
    }
    return "unknown";
}

/// One outbox row written by a business transaction. `aggregate` is the ordering key (say
/// "order/42" for aggregate type "order", id "42"); empty means "ordered by nothing".
/// `sequence` orders the rows of one aggregate, like `outbox_record::sequence`: a later row has
/// a larger sequence; the numbers need not be contiguous.
struct outbox_row {
    message_id id{};
    std::string aggregate;
    std::uint64_t sequence = 0;

    friend bool operator==(const outbox_row&, const outbox_row&) = default;
};

/// A business transaction committed, with the outbox rows it wrote.
struct transaction_committed {
    std::vector<outbox_row> rows;

    friend bool operator==(const transaction_committed&, const transaction_committed&) = default;
};

/// A business transaction rolled back: the rows it had written must never be observed.
struct transaction_rolled_back {
    std::vector<outbox_row> rows;

    friend bool operator==(const transaction_rolled_back&,
                           const transaction_rolled_back&) = default;
};

/// The relay published a row's message (`attempt` counts from 1 per row).
struct relay_published {
    message_id id{};
    std::uint32_t attempt = 1;

    friend bool operator==(const relay_published&, const relay_published&) = default;
};

/// The broker confirmed a publish.
struct relay_confirmed {
    message_id id{};

    friend bool operator==(const relay_confirmed&, const relay_confirmed&) = default;
};

/// A publish's outcome is unknown (the connection dropped before the confirm): the relay will
/// publish the row again, so the broker may hold it twice.
struct relay_outcome_unknown {
    message_id id{};

    friend bool operator==(const relay_outcome_unknown&, const relay_outcome_unknown&) = default;
};

/// The relay marked the row published in the outbox.
struct relay_marked {
    message_id id{};

    friend bool operator==(const relay_marked&, const relay_marked&) = default;
};

/// The broker delivered a message to a consumer. `attempt` counts this consumer's deliveries of
/// the message from 1; `redelivered` is the broker's flag.
struct broker_delivered {
    std::string consumer;
    message_id id{};
    bool redelivered = false;
    std::uint32_t attempt = 1;

    friend bool operator==(const broker_delivered&, const broker_delivered&) = default;
};

/// A consumer's handler applied its effect for a message, and the effect is durable (it
/// committed). `aggregate` and `sequence` repeat the row's, for the order check.
struct effect_applied {
    std::string consumer;
    message_id id{};
    std::string aggregate;
    std::uint64_t sequence = 0;

    friend bool operator==(const effect_applied&, const effect_applied&) = default;
};

/// A consumer's inbox recorded the message as handled.
struct inbox_committed {
    std::string consumer;
    message_id id{};

    friend bool operator==(const inbox_committed&, const inbox_committed&) = default;
};

/// A consumer acknowledged a delivery.
struct delivery_acked {
    std::string consumer;
    message_id id{};

    friend bool operator==(const delivery_acked&, const delivery_acked&) = default;
};

/// A consumer nacked or rejected a delivery, asking for a redelivery (`requeue`) or not.
struct delivery_nacked {
    std::string consumer;
    message_id id{};
    bool requeue = true;

    friend bool operator==(const delivery_nacked&, const delivery_nacked&) = default;
};

/// A consumer let a delivery fall behind the ones after it: its pipeline decided anything but an
/// ack. `why` says what: "retried" (run again after an in-process delay), "redelivered" (a copy
/// to a retry queue), "dead_lettered" (a copy to the dead-letter queue), "failed" (the consumer
/// settles it itself: it holds it after a failure of its own store, or rejects it),
/// "rejected" or "requeued". The deliveries after it may be handled first, so
/// `check_aggregate_order` does not check its aggregate for that consumer.
struct delivery_deferred {
    std::string consumer;
    message_id id{};
    std::string why;

    friend bool operator==(const delivery_deferred&, const delivery_deferred&) = default;
};

/// A message was dead-lettered, with the reason. `consumer` is the consumer that gave up on it;
/// empty means it was dead-lettered before any consumer (by the relay, or a broker-side
/// dead-letter exchange), which settles it for every consumer.
struct dead_lettered {
    std::string consumer;
    message_id id{};
    std::string reason;

    friend bool operator==(const dead_lettered&, const dead_lettered&) = default;
};

/// The simulation injected a fault. `id` names the message it targets, if it targets one (a
/// poison message, a permanent handler failure); `detail` says anything else (the failpoint, the
/// connection).
struct fault_injected {
    fault_kind kind = fault_kind::other;
    std::optional<message_id> id{};
    std::string detail;

    friend bool operator==(const fault_injected&, const fault_injected&) = default;
};

/// What happened: one of the event alternatives.
using history_event_payload =
    std::variant<transaction_committed, transaction_rolled_back, relay_published, relay_confirmed,
                 relay_outcome_unknown, relay_marked, broker_delivered, effect_applied,
                 inbox_committed, delivery_acked, delivery_nacked, delivery_deferred, dead_lettered,
                 fault_injected>;

/// An event of a pipeline run: when (virtual time since the start of the run, as
/// `virtual_clock::now().time_since_epoch()` gives it) and what.
struct history_event {
    std::chrono::nanoseconds at{};
    history_event_payload what;

    friend bool operator==(const history_event&, const history_event&) = default;
};

namespace detail {

inline void append_row(std::string& out, const outbox_row& row) {
    out += " row(id=";
    out += id_text(row.id);
    out += ", aggregate=";
    append_quoted(out, row.aggregate);
    out += ", sequence=";
    out += std::to_string(row.sequence);
    out += ')';
}

inline void append_consumer_and_id(std::string& out, const std::string& consumer,
                                   const message_id& id) {
    out += " consumer=";
    append_quoted(out, consumer);
    out += " id=";
    out += id_text(id);
}

inline void append_payload(std::string& out, const transaction_committed& e) {
    out += "transaction_committed";
    for (const auto& row : e.rows) {
        append_row(out, row);
    }
}
inline void append_payload(std::string& out, const transaction_rolled_back& e) {
    out += "transaction_rolled_back";
    for (const auto& row : e.rows) {
        append_row(out, row);
    }
}
inline void append_payload(std::string& out, const relay_published& e) {
    out += "relay_published id=" + id_text(e.id) + " attempt=" + std::to_string(e.attempt);
}
inline void append_payload(std::string& out, const relay_confirmed& e) {
    out += "relay_confirmed id=" + id_text(e.id);
}
inline void append_payload(std::string& out, const relay_outcome_unknown& e) {
    out += "relay_outcome_unknown id=" + id_text(e.id);
}
inline void append_payload(std::string& out, const relay_marked& e) {
    out += "relay_marked id=" + id_text(e.id);
}
inline void append_payload(std::string& out, const broker_delivered& e) {
    out += "broker_delivered";
    append_consumer_and_id(out, e.consumer, e.id);
    out += e.redelivered ? " redelivered=true" : " redelivered=false";
    out += " attempt=" + std::to_string(e.attempt);
}
inline void append_payload(std::string& out, const effect_applied& e) {
    out += "effect_applied";
    append_consumer_and_id(out, e.consumer, e.id);
    out += " aggregate=";
    append_quoted(out, e.aggregate);
    out += " sequence=" + std::to_string(e.sequence);
}
inline void append_payload(std::string& out, const inbox_committed& e) {
    out += "inbox_committed";
    append_consumer_and_id(out, e.consumer, e.id);
}
inline void append_payload(std::string& out, const delivery_acked& e) {
    out += "delivery_acked";
    append_consumer_and_id(out, e.consumer, e.id);
}
inline void append_payload(std::string& out, const delivery_nacked& e) {
    out += "delivery_nacked";
    append_consumer_and_id(out, e.consumer, e.id);
    out += e.requeue ? " requeue=true" : " requeue=false";
}
inline void append_payload(std::string& out, const delivery_deferred& e) {
    out += "delivery_deferred";
    append_consumer_and_id(out, e.consumer, e.id);
    out += " why=";
    append_quoted(out, e.why);
}
inline void append_payload(std::string& out, const dead_lettered& e) {
    out += "dead_lettered";
    append_consumer_and_id(out, e.consumer, e.id);
    out += " reason=";
    append_quoted(out, e.reason);
}
inline void append_payload(std::string& out, const fault_injected& e) {
    out += "fault_injected kind=";
    out += to_string(e.kind);
    if (e.id) {
        out += " id=" + id_text(*e.id);
    }
    out += " detail=";
    append_quoted(out, e.detail);
}

} // namespace detail

/// The text form of an event: one line (no newline at the end), `@<nanoseconds> <kind>` and
/// then the fields as `name=value`, strings quoted and escaped. For example
/// `@1500000 delivery_nacked consumer="billing" id=0000…0001 requeue=true`.
inline std::string to_string(const history_event& event) {
    // Not `"@" + std::to_string(...)`: GCC 12 at -O2 reports a false -Wrestrict in
    // `operator+(const char*, std::string&&)` wherever this gets inlined (GCC bug 105651).
    std::string out = "@";
    out += std::to_string(event.at.count());
    out += ' ';
    std::visit([&out](const auto& e) { detail::append_payload(out, e); }, event.what);
    return out;
}

/// Writes `to_string(event)`.
inline std::ostream& operator<<(std::ostream& os, const history_event& event) {
    return os << to_string(event);
}

/// The message id an event concerns, or none for transactions (they concern several rows) and
/// for faults that target no message.
inline std::optional<message_id> event_message_id(const history_event_payload& what) {
    return std::visit(
        [](const auto& e) -> std::optional<message_id> {
            using event_type = std::decay_t<decltype(e)>;
            if constexpr (std::is_same_v<event_type, transaction_committed> ||
                          std::is_same_v<event_type, transaction_rolled_back>) {
                return std::nullopt;
            } else {
                return e.id;
            }
        },
        what);
}

} // namespace letterbox::testing
