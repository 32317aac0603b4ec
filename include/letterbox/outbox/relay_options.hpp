// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/config.hpp>
#include <letterbox/failpoint.hpp>
#include <letterbox/outbox/detail/relay_owner.hpp>
#include <letterbox/outbox/relay_event.hpp>
#include <letterbox/outbox/relay_point.hpp>
#include <letterbox/outbox_record.hpp>

#include <boost/asio/any_io_executor.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE {

/// How an `outbox_relay` claims, publishes, retries, stops and purges. Every field has a usable
/// default, written next to it; no value means "use the default" (there is no magic zero).
/// The relay's constructor checks the values and throws `letterbox::error` with
/// `errc::precondition_failed` naming the first bad field.
///
/// Example:
///
///     letterbox::relay_options options;
///     options.owner = "billing-relay-1";         // default: "relay-<random uuid>"
///     options.window = 128;                      // publishes awaiting their confirm
///     options.row_retry = {.initial = std::chrono::seconds(5), .multiplier = 3.0,
///                          .max = std::chrono::minutes(30), .jitter = 0.0};
///     options.retention = std::chrono::hours(24); // purge published rows after a day
struct relay_options {
    /// An exponential back-off: the k-th wait (k = 1, 2, ...) is
    /// `min(max, initial * multiplier^(k-1))`, then shortened by a random fraction of itself
    /// of at most `jitter` (0 = exact, 0.2 = between 80 % and 100 %), so waits never exceed
    /// `max` and never fall under `(1 - jitter) * initial`.
    /// Requires `initial > 0`, `multiplier >= 1`, `max >= initial`, `0 <= jitter < 1`.
    struct backoff {
        std::chrono::milliseconds initial{1000};
        double multiplier = 2.0;
        std::chrono::milliseconds max{300'000};
        double jitter = 0.0;
    };

    /// The lease owner written into claimed rows. It must be unique per relay instance (two
    /// relays with one owner would settle each other's rows). Not empty.
    std::string owner = detail::new_relay_owner();
    /// Rows asked for per `claim`. At least 1.
    std::size_t batch_size = 100;
    /// Publishes awaiting their outcome at once (the pipelining window). At least 1.
    std::size_t window = 64;
    /// How long a claimed row stays leased to this relay. It must cover the publish of a whole
    /// batch; when it runs out, another relay may publish the row too (a duplicate, absorbed by
    /// the consumers' inbox). Greater than zero.
    std::chrono::milliseconds lease{std::chrono::seconds(30)};
    /// The fallback wake-up for rows nobody announced with `wake()` (e.g. written by another
    /// process): the relay claims at least this often. Greater than zero.
    std::chrono::milliseconds poll_interval{std::chrono::seconds(1)};
    /// When a failed row (returned, nacked, refused) is due again: failure k of a row sets its
    /// `next_attempt_at` to now plus the k-th wait of this back-off.
    backoff row_retry{std::chrono::seconds(1), 2.0, std::chrono::minutes(5), 0.0};
    /// The failure that brings a row's attempts to this number parks it, with the failure's
    /// text as its reason. At least 1.
    std::uint32_t max_attempts = 10;
    /// The relay-wide pause after the transport failed (connection lost, outcome unknown, ...)
    /// or the store failed; it grows with consecutive failures and resets on success. Such
    /// failures never count as a row's attempts.
    backoff transport_retry{std::chrono::milliseconds(100), 2.0, std::chrono::seconds(30), 0.2};
    /// How long a graceful `stop()` waits for the publishes in flight before abandoning them.
    std::chrono::milliseconds stop_timeout{std::chrono::seconds(10)};
    /// Published rows older than this are purged; `std::nullopt` keeps them forever.
    std::optional<std::chrono::milliseconds> retention{std::chrono::hours(24 * 7)};
    /// How often the purge runs (when `retention` is set). Greater than zero.
    std::chrono::milliseconds purge_interval{std::chrono::minutes(1)};
    /// Where the relay makes its store calls (claim, mark, record a failure, stats, purge).
    /// Empty (the default): on the relay's executor, synchronously, which suits a store that
    /// never blocks (`in_memory_outbox_store`) and keeps a simulation deterministic. Give a
    /// store that blocks (SQLite, a network database) an executor of its own, e.g. a
    /// `boost::asio::thread_pool` of one thread: the relay then makes one store call at a time
    /// there and goes on publishing and handling confirms on its own executor meanwhile. The
    /// store must then allow calls from that executor's threads while the application uses it
    /// from others (both SQLite stores do), and it must outlive the relay's last store call:
    /// `async_run` completes only after it returned.
    boost::asio::any_io_executor store_executor{};
    /// Seeds the back-off jitter, so that a simulation replays exactly; `std::nullopt` seeds
    /// from `std::random_device`.
    std::optional<std::uint64_t> seed{};
    /// For tests only (needs `LETTERBOX_FAILPOINTS`, see failpoint.hpp; otherwise a hook here
    /// is refused): called at each `relay_point` with the row concerned. Returning true makes
    /// the relay halt there as if its process died: it makes no further store or transport call,
    /// its leases stay held, and `async_run` completes with `errc::internal_error`. Called on the
    /// relay's executor; it must not call the relay.
    std::function<bool(relay_point, const outbox_record&)> failpoint{};
    /// Observes what the relay does with each row (`relay_event`): for metrics, such as
    /// `letterbox::ops::letterbox_metrics`. Called on the relay's executor, synchronously; it must
    /// be quick, must not throw and must not call the relay.
    std::function<void(const relay_event&)> on_event{};
};

} // namespace letterbox
