// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/concepts/clock.hpp>
#include <letterbox/concepts/detail/check_clock.hpp>
#include <letterbox/concepts/detail/check_outbox_store.hpp>
#include <letterbox/concepts/detail/check_transport.hpp>
#include <letterbox/concepts/outbox_store.hpp>
#include <letterbox/concepts/transport.hpp>
#include <letterbox/config.hpp>
#include <letterbox/outbox/relay_counters.hpp>
#include <letterbox/outbox/relay_options.hpp>
#include <letterbox/outbox/relay_point.hpp>

#include <boost/asio/any_io_executor.hpp>

#include <functional>
#include <memory>
#include <string>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE {

namespace detail {
template <class OutboxStore, class Transport, class Clock>
class relay_engine;
} // namespace detail

/// Publishes the rows of an OutboxStore through a Transport: the relay of the transactional
/// outbox. A row is marked published only after the broker confirmed **and** routed its message,
/// so delivery is at-least-once; consumers deduplicate by message id (the inbox).
///
/// How it works (DESIGN §5):
/// - **Claim.** It claims up to `batch_size` due rows under a lease of `lease` (owner
///   `relay_options::owner`) whenever it has room, when woken (`wake()`), every
///   `poll_interval` (the fallback for rows nobody announced), and when a failed row's retry
///   time comes. A second relay on the same store claims other rows; when a relay dies, its
///   rows are claimed again once their leases expire.
/// - **Publish, pipelined.** Up to `window` publishes await their outcome at once (never one
///   round trip per row). The message is `record.msg`, unchanged: its id is the AMQP
///   `message-id` for life.
/// - **Settle.** Success (confirmed and routed) -> `mark_published`. A return
///   (`errc::no_route`), a nack (`errc::publish_nacked`) or another refusal of the message ->
///   `record_failure` with the next attempt at now plus the `row_retry` back-off; the store parks
///   the row when it reaches `max_attempts`, with the failure's text as the reason.
/// - **Batched marks.** When the store also models `outbox_batch_settler`, confirmed rows are
///   marked published in batches: one `mark_published(ids, ...)` call (one transaction) for all
///   the confirms that were already queued on the executor, and at most `window` rows per call.
///   The `after_confirm` hook runs for each row before it joins a batch, `after_mark` for each
///   row the batch marked. Other stores get one `mark_published` per row.
/// - **Order.** The store hands out at most one unpublished event per aggregate, and the relay
///   only publishes what it claimed; so a later event of an aggregate is never published
///   before the earlier one is confirmed and marked.
/// - **Transport down.** A connection-level failure (connection or channel closed, outcome
///   unknown, CONNECTION_FORCED, a timeout; see `relay_counters::transport_failures`) is not the
///   row's fault and never counts as an attempt, so a long outage parks nothing. The relay pauses
///   instead (the `transport_retry` back-off: exponential, capped, with seeded jitter), then
///   probes with one publish at a time until one gets through, and never spins. Rows it still
///   holds are republished after the pause while their lease lasts (see Leases). A publish
///   whose outcome was unknown may have been stored: republishing it is at-least-once.
/// - **Leases.** A claimed row is the relay's while its lease lasts, and the lease is also the
///   deadline of its publish: a row still unsent when its lease runs out is dropped from memory
///   (any relay's next claim takes the expired lease over, this one's included), and when a claim
///   hands the relay back a row whose publish is still awaiting its outcome, the relay gives up on
///   that publish (ignoring its late outcome) and publishes the row again. A mark that arrives
///   after another relay took the row over fails with `errc::lease_lost`.
/// - **Store errors.** A failed `claim`, `mark_published` or `record_failure` pauses the relay
///   the same way and is retried (a settlement is retried while the relay holds the row);
///   `errc::lease_lost` means another relay owns the row now: counted, and left to it.
/// - **Housekeeping.** Every `purge_interval` it purges published rows older than `retention`;
///   at every poll it reads `stats` for `relay_counters::lag`, the oldest pending row's age.
///
/// Execution: everything runs on the transport's executor, which must be single-threaded or a
/// strand. By default the store calls are made there too, synchronously: a SQLite store then
/// blocks that executor for each call (a claim, a batch of marks, a failure record), a few
/// milliseconds for a large batch and up to its `busy_timeout` under contention. With
/// `relay_options::store_executor` set, they run on that executor instead, one at a time, while
/// the relay goes on publishing; the relay also claims the next batch while its window is
/// full, and its executor counts a store call as work until the result is back. Without a
/// store executor, with a `virtual_clock` on a single-threaded `io_context`, the relay is
/// deterministic: the same seed (`relay_options::seed`) and the same schedule give the same
/// trace. The relay does not count as outstanding work on its executor: with a virtual clock,
/// `io_context::run` returns when only its timers remain.
///
/// Lifetime: the store, the transport and the clock must outlive the relay and every
/// operation it started. Destroying the relay aborts it abruptly, as if its process died: no
/// further store or transport calls, leases stay held, and a pending `async_run` completes with
/// `errc::closed`. A store call already out on the store executor still returns first:
/// `async_run` completes after it (after a stop, too), so the store may go once `async_run`
/// completed. Destroy it on its executor's thread, or while that executor runs nothing
/// (e.g. after `stop()` completed).
///
/// Thread safety: `wake()`, `waker()`, `stop()` and `counters()` may be called from any thread.
/// The other members must not be called concurrently with each other.
///
/// @tparam OutboxStore a model of `outbox_store`.
/// @tparam Transport a model of `transport`.
/// @tparam Clock a model of `clock`.
///
/// Example:
///
///     letterbox::relay_options options;
///     options.window = 128;
///     letterbox::outbox_relay relay(outbox, transport, clock, options);
///     relay.async_run([](std::error_code ec) { /* stopped */ });
///     // In a business transaction: the relay wakes when it commits.
///     if (auto ec = outbox.add(uow, {order_placed, "order", order_id}, clock.wall_now()))
///         return ec; // the unit rolls back: no order without its event
///     if (auto ec = uow.on_commit(relay.waker()))
///         return ec;
///     return uow.commit();
///     // At shutdown:
///     relay.stop();
template <class OutboxStore, class Transport, class Clock>
class outbox_relay {
    // Each requirement on its own, with a message that names what is missing
    // (docs/design/requirement-checks.md).
    static_assert(detail::check_outbox_store<OutboxStore>());
    static_assert(detail::check_transport<Transport>());
    static_assert(detail::check_clock<Clock>());

public:
    /// The transport's executor, on which the relay runs.
    using executor_type = boost::asio::any_io_executor;

    /// A relay over `store`, publishing through `transport`, reading time from `clock`. It
    /// does nothing until `async_run`. Throws `letterbox::error` (`errc::precondition_failed`)
    /// when an option is invalid (see `relay_options`).
    outbox_relay(OutboxStore& store, Transport& transport, Clock& clock,
                 relay_options options = {});

    outbox_relay(const outbox_relay&) = delete;
    outbox_relay& operator=(const outbox_relay&) = delete;

    /// Aborts the relay (see Lifetime above).
    ~outbox_relay();

    executor_type get_executor() const noexcept;

    /// The lease owner this relay writes into the rows it claims.
    const std::string& owner() const noexcept;

    /// Runs the relay until it stops; completes with `void(error_code)` on the token's
    /// associated executor (by default the relay's):
    /// - success after `stop()` (also when `stop()` came before `async_run`);
    /// - `errc::internal_error` when a `relay_options::failpoint` hook halted it;
    /// - `errc::closed` when the relay was destroyed first, or had already run;
    /// - `errc::precondition_failed` when it is already running.
    ///
    /// A relay runs once. Cancellation (the token's cancellation slot): `terminal`; it stops
    /// the relay as `stop()` does, gracefully, and `async_run` then completes with
    /// `std::errc::operation_canceled` instead of success. A pending `async_run` does not count
    /// as outstanding work on its executor (see Execution above).
    template <class Token>
    auto async_run(Token&& token);

    /// Makes the relay claim now instead of at its next poll. Thread-safe (it posts to the
    /// relay's executor); does nothing once the relay stopped.
    void wake();

    /// A callable that calls `wake()`, for `unit_of_work::on_commit`. It may outlive the relay
    /// (it then does nothing), but not the relay's execution context.
    std::function<void()> waker() const;

    /// Stops gracefully: claims and publishes nothing more, waits up to
    /// `relay_options::stop_timeout` for the publishes in flight and settles those that
    /// complete (confirmed rows waiting for a batch of marks are marked first), then completes
    /// `async_run`. Rows not settled by then are abandoned: they stay
    /// pending and leased, and any relay claims them when the lease expires. Thread-safe
    /// (it posts to the relay's executor); idempotent.
    void stop();

    /// A snapshot of the counters. Thread-safe.
    relay_counters counters() const noexcept;

private:
    std::shared_ptr<detail::relay_engine<OutboxStore, Transport, Clock>> engine_;
};

} // namespace letterbox

#include <letterbox/outbox/impl/outbox_relay.hpp>
