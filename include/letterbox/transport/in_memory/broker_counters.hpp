// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/config.hpp>

#include <array>
#include <cstddef>
#include <cstdint>
#include <numeric>
#include <string_view>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::in_memory {

/// Why a message left a queue through dead-lettering (the `reason` of `x-death`).
enum class dead_letter_reason { rejected, expired, maxlen, delivery_limit };
inline constexpr std::size_t dead_letter_reason_count = 4;

inline constexpr std::string_view to_string(dead_letter_reason r) noexcept {
    switch (r) {
    case dead_letter_reason::rejected:
        return "rejected";
    case dead_letter_reason::expired:
        return "expired";
    case dead_letter_reason::maxlen:
        return "maxlen";
    case dead_letter_reason::delivery_limit:
        return "delivery_limit";
    }
    return "rejected";
}

/// Why a message left a queue without being delivered or dead-lettered.
enum class drop_kind {
    purged,         ///< `queue.purge`
    queue_deleted,  ///< the queue was deleted (or an exclusive/auto-delete queue went away)
    broker_restart, ///< a transient message or a non-durable queue did not survive a restart
    queue_expired   ///< the queue was unused for its `x-expires` period and went away
};
inline constexpr std::size_t drop_kind_count = 4;

/// Why a dead letter, after it left its queue, reached no queue.
enum class dead_letter_drop {
    exchange_missing, ///< the dead-letter exchange does not exist (counted in `discarded`,
                      ///< not `dead_lettered`, as RabbitMQ does: DLX-14)
    unroutable,       ///< the dead-letter exchange routed it nowhere
    cycle,            ///< it would cycle back without a rejection in the cycle
    refused           ///< every target refused it (reject-publish overflow)
};
inline constexpr std::size_t dead_letter_drop_count = 4;

/// Totals kept by the broker since it was created (a restart keeps them).
///
/// Every message copy that enters a queue (`enqueued`) ends in exactly one place, so at every
/// step: `enqueued == ready + unacked + acked + dead_lettered_total() + discarded_total()
/// + dropped_total()` (the conservation invariant the state-machine test checks).
struct broker_counters {
    std::uint64_t published = 0;   ///< publishes that passed validation
    std::uint64_t enqueued = 0;    ///< copies stored in queues (publishes and dead letters)
    std::uint64_t refused = 0;     ///< copies refused by `reject-publish` overflow
    std::uint64_t unroutable = 0;  ///< publishes that reached no queue
    std::uint64_t returned = 0;    ///< unroutable mandatory publishes returned
    std::uint64_t delivered = 0;   ///< deliveries and `basic.get` replies
    std::uint64_t redelivered = 0; ///< of `delivered`, those with the redelivered flag
    std::uint64_t acked = 0;       ///< settled by ack or auto-ack
    std::uint64_t requeued = 0;    ///< returned to their queue (nack/reject/recover/close)
    std::uint64_t confirms_acked = 0;
    std::uint64_t confirms_nacked = 0;
    std::uint64_t confirms_lost = 0; ///< lost by the `lose_confirm` fault
    /// Left a queue towards its dead-letter exchange, per reason.
    std::array<std::uint64_t, dead_letter_reason_count> dead_lettered{};
    /// Left a queue for a dead-letter reason while the queue had no dead-letter exchange.
    std::array<std::uint64_t, dead_letter_reason_count> discarded{};
    /// Left a queue without a dead-letter reason, per kind.
    std::array<std::uint64_t, drop_kind_count> dropped{};
    /// Dead letters that reached no queue, per cause. All but `exchange_missing` are also in
    /// `dead_lettered`; a missing exchange is known when the message leaves its queue, so that
    /// drop is in `discarded` instead.
    std::array<std::uint64_t, dead_letter_drop_count> dead_letters_dropped{};

    std::uint64_t dead_lettered_of(dead_letter_reason r) const noexcept {
        return dead_lettered[static_cast<std::size_t>(r)];
    }
    std::uint64_t discarded_of(dead_letter_reason r) const noexcept {
        return discarded[static_cast<std::size_t>(r)];
    }
    std::uint64_t dropped_of(drop_kind k) const noexcept {
        return dropped[static_cast<std::size_t>(k)];
    }
    std::uint64_t dead_letters_dropped_of(dead_letter_drop d) const noexcept {
        return dead_letters_dropped[static_cast<std::size_t>(d)];
    }
    std::uint64_t dead_lettered_total() const noexcept {
        return std::accumulate(dead_lettered.begin(), dead_lettered.end(), std::uint64_t{0});
    }
    std::uint64_t discarded_total() const noexcept {
        return std::accumulate(discarded.begin(), discarded.end(), std::uint64_t{0});
    }
    std::uint64_t dropped_total() const noexcept {
        return std::accumulate(dropped.begin(), dropped.end(), std::uint64_t{0});
    }
};

} // namespace letterbox::in_memory
