// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/config.hpp>
#include <letterbox/message.hpp>
#include <letterbox/store_time.hpp>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE {

/// Where an outbox row is in its life. A row is born `pending`; the relay makes it
/// `published` once the broker confirmed and routed it; it becomes `parked` after too many
/// failures or by an operator, and waits there for `unpark`. Being leased is not a status: a
/// leased row is `pending` with a lease owner.
enum class outbox_status : std::uint8_t {
    pending,
    published,
    parked,
};

/// The name of a status as written in logs and by the ops endpoint: "pending", "published"
/// or "parked".
inline constexpr std::string_view to_string(outbox_status s) noexcept {
    switch (s) {
    case outbox_status::pending:
        return "pending";
    case outbox_status::published:
        return "published";
    case outbox_status::parked:
        return "parked";
    }
    return "unknown";
}

/// What a caller appends to the outbox: an event and the aggregate it belongs to.
///
/// `msg.id` must be set (not nil): it is the message id the event keeps for life. `msg.type`
/// is the event type. Events of one (aggregate type, aggregate id) are published in the order
/// they were added; an empty `aggregate_id` means "no ordering constraint".
struct outbox_entry {
    message msg;
    std::string aggregate_type;
    std::string aggregate_id;

    friend bool operator==(const outbox_entry&, const outbox_entry&) = default;
};

/// One outbox row as a store hands it out: the entry plus the bookkeeping of its delivery.
struct outbox_record {
    /// The event: id, type, exchange, routing key, headers, body, properties.
    message msg;
    std::string aggregate_type;
    std::string aggregate_id;
    /// Creation order, assigned by the store: strictly increasing in the order rows become
    /// visible (commit order), never reused while the row exists.
    std::uint64_t sequence = 0;
    /// The `now` passed to `add`.
    store_time created_at{};
    outbox_status status = outbox_status::pending;
    /// Failures recorded since the row was created or last unparked.
    std::uint32_t attempts = 0;
    /// The row is not claimed before this time.
    store_time next_attempt_at{};
    /// The last failure text, or the reason it was parked; empty if none.
    std::string last_error;
    /// When the last failure was recorded, if any.
    std::optional<store_time> last_failure_at;
    /// Who holds the lease; empty when the row is not leased.
    std::string lease_owner;
    /// When the lease ends (meaningful only when `lease_owner` is not empty). The lease is
    /// held while `now < lease_expires_at`.
    store_time lease_expires_at{};
    /// When it was marked published, if it was.
    std::optional<store_time> published_at;

    friend bool operator==(const outbox_record&, const outbox_record&) = default;
};

/// Counts and lag of an outbox at one instant, as reported by `stats(now)`.
struct outbox_stats {
    /// Rows waiting to be published, including leased ones and ones waiting for a retry.
    std::size_t pending = 0;
    /// The pending rows whose lease has not expired.
    std::size_t leased = 0;
    std::size_t parked = 0;
    /// Published rows not yet purged.
    std::size_t published = 0;
    /// `now` minus the creation time of the oldest pending row; zero when none is pending.
    /// This is the relay's lag.
    store_time::duration oldest_pending_age{};

    friend bool operator==(const outbox_stats&, const outbox_stats&) = default;
};

/// Which rows `list` returns: those with `status` (any status when empty) and a sequence
/// greater than `after_sequence`, in creation order, at most `limit` of them. To page, pass
/// the last sequence of the previous page as `after_sequence`.
struct outbox_query {
    std::optional<outbox_status> status;
    std::uint64_t after_sequence = 0;
    std::size_t limit = 100;
};

} // namespace letterbox
