// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/commit_group.hpp>
#include <letterbox/concepts/clock.hpp>
#include <letterbox/concepts/inbox_store.hpp>
#include <letterbox/concepts/unit_of_work.hpp>
#include <letterbox/config.hpp>
#include <letterbox/error.hpp>
#include <letterbox/failpoint.hpp>
#include <letterbox/idempotency_key.hpp>
#include <letterbox/message.hpp>
#include <letterbox/middleware/after_call.hpp>
#include <letterbox/middleware/detail/check_idempotent.hpp>
#include <letterbox/store_time.hpp>

#include <boost/asio/awaitable.hpp>

#include <atomic>
#include <chrono>
#include <concepts>
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <system_error>
#include <type_traits>
#include <utility>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE {

/// Application code that applies one message's effect inside a unit of work `u`: its business
/// writes go through `u` (for SQLite: `u.connection()`), and so do the events it emits
/// (`outbox.add(u, entry, now)`), so that they commit together with the inbox record.
///
/// Requirements, for `e` of type `E&`, `m` of type `const message&` and `u` of type `U&`:
/// `e(m, u)` is valid and returns `void` or `std::error_code`. Success is returning normally
/// (or an empty `error_code`); failure is an exception or a non-empty `error_code`, and then
/// nothing the effect wrote is kept.
///
/// Does not require: that the effect commits or rolls back `u` (the middleware does), copying,
/// or thread safety.
template <class E, class U>
concept transactional_effect = std::invocable<E&, const message&, U&> &&
    (std::is_void_v<std::invoke_result_t<E&, const message&, U&>> ||
     std::same_as<std::invoke_result_t<E&, const message&, U&>, std::error_code>);

namespace middleware {

/// What an idempotent handler has seen, for metrics and tests.
struct idempotent_stats {
    /// Messages whose effect was committed with their inbox record.
    std::uint64_t processed = 0;
    /// Messages skipped because the inbox already held them (found by `try_record` or by
    /// `commit`).
    std::uint64_t duplicates = 0;
    /// Attempts that failed and left nothing behind (the effect failed, or the commit did).
    std::uint64_t failed = 0;
    /// Messages refused because they have no idempotency key
    /// (`idempotency_key::missing_key_action::refuse`): nothing ran, nothing was recorded.
    std::uint64_t refused = 0;
    /// Messages without a key whose effect was committed without an inbox record
    /// (`idempotency_key::missing_key_action::handle_without_dedup`).
    std::uint64_t unkeyed = 0;

    friend bool operator==(const idempotent_stats&, const idempotent_stats&) = default;
};

/// The handler that `idempotent(...)` returns: for each message, in one unit of work, it
/// records (consumer id, idempotency key) in the inbox, runs the effect with the unit, and
/// commits. See `idempotent` for the contract. Copies share their statistics.
template <class Inbox, class Begin, class Effect, class Clock>
class idempotent_handler {
    // Each requirement on its own, with a message that names what is missing
    // (docs/design/requirement-checks.md).
    static_assert(detail::check_idempotent<Inbox, Begin, Effect, Clock>());

public:
    using unit_of_work_type = typename Inbox::unit_of_work_type;

    idempotent_handler(Effect effect, Inbox& inbox, Begin begin, std::string consumer_id,
                       Clock& clock)
        : effect_(std::move(effect))
        , inbox_(&inbox)
        , begin_(std::move(begin))
        , consumer_id_(std::move(consumer_id))
        , clock_(&clock)
        , counters_(std::make_shared<counters>()) {}

    /// Handles one delivery of `m`. Returns success when the effect committed now or had
    /// committed before (a duplicate), so the caller acknowledges; returns the failure
    /// otherwise, leaving no effect and no inbox record, so a redelivery tries again.
    /// Exceptions from the effect propagate after the unit of work is rolled back. A message
    /// without an idempotency key is refused with `errc::missing_idempotency_key` before
    /// anything runs, unless `on_missing_key` said to handle it without deduplication.
    std::error_code operator()(const message& m) requires(!detail::is_after_call<Effect>) {
        return (*this)(m, nullptr);
    }

    /// The same as a member of `group` (a consumer's group commit, docs/group-commit.md),
    /// when the unit of work has savepoints (`savepoint_unit_of_work`): the first message
    /// begins the unit that the group shares, and each one records its key and runs its effect
    /// in a savepoint of it. Success means staged: the consumer acknowledges after the group's
    /// commit. A failure rolls back this message's savepoint alone. With a null `group`, a
    /// group that holds another type of unit, or a unit without savepoints, it commits on its
    /// own as above. In a group that a crash point abandoned it returns
    /// `errc::transaction_closed` and runs nothing.
    std::error_code operator()(const message& m,
                               commit_group* group) requires(!detail::is_after_call<Effect>) {
        std::optional<message_id> key;
        if (const std::error_code refused = admit(m, key))
            return refused;
        auto effect = [&](unit_of_work_type& uow) {
            return run_effect(effect_, m, uow);
        };
        if constexpr (savepoint_unit_of_work<unit_of_work_type>) {
            if (group && group->finished())
                return errc::transaction_closed;
            if (group) {
                // Expired records go before the group's unit begins: an SQLite purge waits for
                // the write lock, which that unit then holds.
                if (!group->has_unit())
                    purge_expired(clock_->wall_now());
                if (unit_of_work_type* shared =
                        group->template unit<unit_of_work_type>(begin_, inbox_))
                    return stage_in(*group, *shared, m, key, effect);
            }
        }
        return commit(m, key, effect);
    }

    /// The same for an effect made with `after_call(call, effect)`: a coroutine that makes the
    /// call first, with no unit of work open, unless the inbox already holds the message, then
    /// runs the effect with the call's result and commits (see `after_call`). An exception from
    /// the call propagates, and nothing is recorded.
    boost::asio::awaitable<std::error_code>
    operator()(const message& m) requires detail::is_after_call<Effect> {
        std::optional<message_id> key;
        if (const std::error_code refused = admit(m, key))
            co_return refused;
        if (key) {
            // Expired records go first, as they would before `commit`: a message whose record
            // expired is not a duplicate.
            purge_expired(clock_->wall_now());
            std::error_code ec;
            const bool seen = inbox_->contains(consumer_id_, *key, ec);
            if (ec)
                co_return ec; // the store failed: the consumer handles it again later
            if (seen) {
                counted_duplicate(m);
                co_return std::error_code{};
            }
        }
        // Only the call's failure is counted here: `commit` counts its own.
        using result = detail::call_result_t<decltype(effect_.call)>;
        std::exception_ptr call_failed;
        if constexpr (std::is_void_v<result>) {
            try {
                co_await letterbox::detail::await_call(effect_.call, m);
            } catch (...) {
                call_failed = std::current_exception();
            }
            if (!call_failed)
                co_return commit(m, key, [&](unit_of_work_type& uow) {
                    return run_effect(effect_.effect, m, uow);
                });
        } else {
            std::optional<result> r;
            try {
                r.emplace(co_await letterbox::detail::await_call(effect_.call, m));
            } catch (...) {
                call_failed = std::current_exception();
            }
            if (!call_failed)
                co_return commit(m, key, [&](unit_of_work_type& uow) {
                    const result& value = *r;
                    return run_effect(effect_.effect, m, value, uow);
                });
        }
        counters_->failed.fetch_add(1, std::memory_order_relaxed);
        std::rethrow_exception(call_failed);
    }

    /// The consumer id this handler records under.
    const std::string& consumer_id() const noexcept { return consumer_id_; }

    /// Returns a copy that deduplicates on the key that `key` finds instead of the message
    /// id: a header (`idempotency_key::by_header("x-idempotency-key")`), a field of the body
    /// (`idempotency_key::by_json_field("/payment/id")`) or a function of your own (see
    /// `idempotency_key::function`). A key text that is not a canonical UUID is stored as
    /// `idempotency_key::from_text` of it. Changing the key function of a consumer whose inbox
    /// already holds records makes the messages in flight look new: change it together with
    /// the consumer id. The copy shares the statistics.
    template <idempotency_key::function KeyFunction>
    idempotent_handler with_key(KeyFunction key) const {
        idempotent_handler h = *this;
        h.key_ = [key = std::move(key)](const message& m) -> std::optional<message_id> {
            using result = std::invoke_result_t<const KeyFunction&, const message&>;
            if constexpr (std::same_as<result, std::optional<message_id>>) {
                return std::invoke(key, m);
            } else {
                const std::optional<std::string> text = std::invoke(key, m);
                return text ? idempotency_key::from_text(*text) : std::nullopt;
            }
        };
        return h;
    }

    /// Returns a copy that treats a message without a key as `action` says: refused with
    /// `errc::missing_idempotency_key` (the default: a permanent failure, dead-lettered with
    /// the reason `missing-idempotency-key`), or handled without deduplication. Never is such
    /// a message deduplicated against others. The copy shares the statistics.
    idempotent_handler on_missing_key(idempotency_key::missing_key_action action) const {
        idempotent_handler h = *this;
        h.missing_key_ = action;
        return h;
    }

    /// Declares how long the application keeps inbox records (what it passes to
    /// `inbox.purge`), so that `middleware::compose` can refuse a pipeline whose redelivery
    /// horizon is longer (DESIGN §3.8). Returns a copy that shares the statistics.
    idempotent_handler with_retention(std::chrono::milliseconds retention) const {
        idempotent_handler h = *this;
        h.retention_ = retention;
        return h;
    }
    /// For tests (needs `LETTERBOX_FAILPOINTS`, see failpoint.hpp): returns a copy that asks
    /// `hook` at `failpoint::after_effect_before_inbox_commit` (the effect ran, the unit is not
    /// committed) and `failpoint::after_inbox_commit_before_ack` (committed, success not yet
    /// returned). When the hook says "die", the handler throws `failpoint_halt`, after rolling
    /// the unit back at the first point; the caller must then act as a dead process (no ack, no
    /// nack). The copy shares the statistics.
    template <class Hook = failpoint_hook>
    idempotent_handler with_failpoint(Hook hook) const {
        static_assert(failpoints_enabled && sizeof(Hook) != 0,
                      "idempotent_handler::with_failpoint needs LETTERBOX_FAILPOINTS (link "
                      "letterbox::testing)");
        idempotent_handler h = *this;
        h.failpoint_ = std::move(hook);
        return h;
    }

    /// Returns a copy that calls `observer` with each duplicate it absorbs (after counting it):
    /// for metrics, such as `letterbox::ops::letterbox_metrics::duplicate_observer()`. It runs
    /// where the handler runs; it must be quick and must not throw. The copy shares the
    /// statistics.
    idempotent_handler on_duplicate(std::function<void(const message&)> observer) const {
        idempotent_handler h = *this;
        h.on_duplicate_ = std::move(observer);
        return h;
    }

    /// How long the inbox keeps records: what `with_retention` declared, else the store's own
    /// retention (`inbox_retention`) when it has one. `middleware::compose` refuses a pipeline
    /// whose redelivery horizon is longer.
    std::optional<std::chrono::milliseconds> retention() const noexcept {
        if (retention_)
            return retention_;
        if constexpr (requires { inbox_->retention(); })
            return inbox_->retention();
        else
            return std::nullopt;
    }

    /// A snapshot of the counts, shared by every copy of this handler.
    idempotent_stats stats() const noexcept {
        return {counters_->processed.load(std::memory_order_relaxed),
                counters_->duplicates.load(std::memory_order_relaxed),
                counters_->failed.load(std::memory_order_relaxed),
                counters_->refused.load(std::memory_order_relaxed),
                counters_->unkeyed.load(std::memory_order_relaxed)};
    }

private:
    struct counters {
        std::atomic<std::uint64_t> processed{0};
        std::atomic<std::uint64_t> duplicates{0};
        std::atomic<std::uint64_t> failed{0};
        std::atomic<std::uint64_t> refused{0};
        std::atomic<std::uint64_t> unkeyed{0};
    };

    // The key the inbox records; the nil id is never one, whatever the function returned.
    std::optional<message_id> key_of(const message& m) const {
        auto key = key_ ? key_(m) : idempotency_key::by_message_id{}(m);
        if (key && key->is_nil())
            return std::nullopt;
        return key;
    }

    void counted_duplicate(const message& m) const {
        counters_->duplicates.fetch_add(1, std::memory_order_relaxed);
        if (on_duplicate_)
            on_duplicate_(m);
    }

    // A store that purges itself does it here, outside the unit of work (it takes the write
    // lock of its own). Best effort: a failed purge leaves the records to the next one.
    void purge_expired(store_time now) {
        if constexpr (requires(std::error_code & e) { inbox_->purge_expired(now, e); }) {
            std::error_code ignored;
            (void)inbox_->purge_expired(now, ignored);
        }
    }

    bool halts_at(failpoint p, const message_id& id) const {
        if constexpr (failpoints_enabled)
            return failpoint_ && failpoint_(p, id);
        else
            return false;
    }

    // Whether `m` may be handled: its key in `key`, or the refusal of a message without one.
    std::error_code admit(const message& m, std::optional<message_id>& key) const {
        key = key_of(m);
        if (!key && missing_key_ == idempotency_key::missing_key_action::refuse) {
            counters_->refused.fetch_add(1, std::memory_order_relaxed);
            return errc::missing_idempotency_key;
        }
        return {};
    }

    // Records `key` (if any) in `uow` and runs `effect(uow)` unless the key was there. Then
    // `undo()` discards what this message staged (its unit, or its savepoint) if the key was
    // there (a duplicate: success, and `duplicate` is set) or something failed (its error, or
    // its exception, propagated). Otherwise success, with the record and the effect staged.
    // A rollback that fails cannot be acted on: the error to report is the one before it.
    template <class RunEffect, class Undo>
    std::error_code record_and_apply(const message& m, unit_of_work_type& uow,
                                     const std::optional<message_id>& key, store_time now,
                                     RunEffect& effect, Undo undo, bool& duplicate) {
        std::error_code ec;
        if (key)
            ec = inbox_->try_record(uow, consumer_id_, *key, now);
        if (ec == errc::already_processed) {
            undo();
            counted_duplicate(m);
            duplicate = true;
            return {};
        }
        if (!ec) {
            try {
                ec = effect(uow);
            } catch (...) {
                undo();
                counters_->failed.fetch_add(1, std::memory_order_relaxed);
                throw;
            }
        }
        if (ec) {
            undo();
            counters_->failed.fetch_add(1, std::memory_order_relaxed);
        }
        return ec;
    }

    // In one unit of work: records `key` (if any) in the inbox, runs `effect(uow)` unless the
    // key was there, and commits. Success when committed now or before (a duplicate).
    template <class RunEffect>
    std::error_code commit(const message& m, const std::optional<message_id>& key,
                           RunEffect effect) {
        const store_time now = clock_->wall_now();
        purge_expired(now);
        unit_of_work_type uow = begin_();
        bool duplicate = false;
        std::error_code ec = record_and_apply(
            m, uow, key, now, effect, [&uow] { (void)uow.rollback(); }, duplicate);
        if (duplicate || ec)
            return ec;
        if (halts_at(failpoint::after_effect_before_inbox_commit, m.id)) {
            (void)uow.rollback(); // the process died: its open transaction is lost
            throw failpoint_halt(failpoint::after_effect_before_inbox_commit);
        }
        ec = uow.commit();
        if (key && ec == errc::already_processed) {
            // A concurrent delivery of the same message committed first: its effect stands,
            // ours was discarded with this unit.
            counted_duplicate(m);
            return {};
        }
        (ec    ? counters_->failed
         : key ? counters_->processed
               : counters_->unkeyed)
            .fetch_add(1, std::memory_order_relaxed);
        if (!ec && halts_at(failpoint::after_inbox_commit_before_ack, m.id))
            throw failpoint_halt(failpoint::after_inbox_commit_before_ack);
        return ec;
    }

    // In a savepoint of the group's unit `uow`: records `key` (if any), runs `effect(uow)`
    // unless the key was there, and keeps both in the unit for the group's commit. Success
    // when staged or a duplicate; a failure leaves nothing of this message in the unit.
    template <class RunEffect>
    std::error_code stage_in(commit_group& group, unit_of_work_type& uow, const message& m,
                             const std::optional<message_id>& key, RunEffect effect) {
        if (std::error_code ec = uow.savepoint()) {
            counters_->failed.fetch_add(1, std::memory_order_relaxed);
            return ec;
        }
        bool duplicate = false;
        std::error_code ec = record_and_apply(
            m, uow, key, clock_->wall_now(), effect, [&uow] { (void)uow.rollback_to_savepoint(); },
            duplicate);
        if (duplicate || ec)
            return ec;
        if (halts_at(failpoint::after_effect_before_inbox_commit, m.id)) {
            group.abandon(); // the process died: the group's open transaction is lost
            throw failpoint_halt(failpoint::after_effect_before_inbox_commit);
        }
        ec = uow.release_savepoint();
        if (!ec)
            ec = uow.on_commit([counters = counters_, keyed = key.has_value()] {
                (keyed ? counters->processed : counters->unkeyed)
                    .fetch_add(1, std::memory_order_relaxed);
            });
        if (ec) {
            counters_->failed.fetch_add(1, std::memory_order_relaxed);
            return ec;
        }
        if constexpr (failpoints_enabled)
            if (failpoint_)
                group.after_commit([hook = failpoint_, id = m.id] {
                    if (hook(failpoint::after_inbox_commit_before_ack, id))
                        throw failpoint_halt(failpoint::after_inbox_commit_before_ack);
                });
        return {};
    }

    // Runs `f(args...)`: its error code, or success for a `void` effect.
    template <class F, class... Args>
    static std::error_code run_effect(F& f, Args&... args) {
        if constexpr (std::is_void_v<std::invoke_result_t<F&, Args&...>>) {
            std::invoke(f, args...);
            return {};
        } else {
            return std::invoke(f, args...);
        }
    }

    Effect effect_;
    Inbox* inbox_;
    Begin begin_;
    std::string consumer_id_;
    Clock* clock_;
    std::shared_ptr<counters> counters_;
    std::optional<std::chrono::milliseconds> retention_{};
    // Empty: the message id (idempotency_key::by_message_id), without a call through it.
    std::function<std::optional<message_id>(const message&)> key_{};
    idempotency_key::missing_key_action missing_key_ = idempotency_key::missing_key_action::refuse;
    failpoint_hook failpoint_{};
    std::function<void(const message&)> on_duplicate_{};
};

/// The idempotent consumer (inbox) middleware: wraps an effect so that each message has its
/// effect once per consumer, however often it is delivered.
///
/// For each message `m`, in one unit of work begun with `begin()`:
/// 1. it records (`consumer_id`, the message's idempotency key) in `inbox`, stamped
///    `clock.wall_now()`; if the key is already there, it skips the effect and returns
///    success, so the caller acks. The key is `m.id` unless `with_key` names another;
/// 2. it runs `effect(m, uow)`, which makes its business writes and appends any outgoing
///    events to the outbox through the same unit;
/// 3. it commits: the inbox record, the effect and the outgoing events become durable
///    together or not at all;
///
/// and only then returns success, which is when the consumer acks (`letterbox::consumer`
/// does). If the effect fails, by exception or `error_code`, the unit rolls back: no effect,
/// no inbox record and no outgoing event, so a redelivery tries again (DESIGN §3.6).
///
/// **A message without a key** (the nil id: a publisher that set no AMQP `message-id`; or a
/// key function that found nothing) is never deduplicated against others. By default it is
/// refused before anything runs: the handler returns `errc::missing_idempotency_key`, a
/// permanent failure that the dead-letter layer dead-letters with the reason
/// `missing-idempotency-key` (and a bare consumer rejects to the queue's dead-letter
/// exchange). `on_missing_key(handle_without_dedup)` runs its effect without an inbox record
/// instead. See `docs/design/idempotency-keys.md`.
///
/// Duplicates are decided by the inbox's unique key, never by a read followed by a write:
/// two copies of one message handled at the same time by two consumers on two connections
/// give one effect. The loser learns it either from `try_record` or from `commit`, and
/// returns success without an effect.
///
/// Requirements: `Inbox` models `inbox_store`; `begin()` returns a new
/// `Inbox::unit_of_work_type` (it may throw, e.g. `letterbox::error(errc::store_busy)`);
/// `Effect` models `transactional_effect` with that unit; `Clock` models `clock`. `inbox` and
/// `clock` must outlive the handler. The result models `handler`.
///
/// Limits: the record protects one consumer id; two different consumers of one message
/// both apply their effects (that is the point of per-consumer keys). Records purged before
/// the last redelivery can no longer absorb it: keep the inbox retention longer than the
/// redelivery horizon. Effects outside the unit of work (an HTTP call, an e-mail) are not
/// covered: make those idempotent themselves or move them behind the outbox. A slow call whose
/// result the effect needs is made before the unit begins with `after_call(call, effect)`, so
/// that no lock is held while it waits (see `after_call`).
///
/// Example:
///
///     auto h = letterbox::middleware::idempotent(
///         [&](const letterbox::message& m, letterbox::sqlite::unit_of_work& u) -> std::error_code
///         {
///             if (auto ec = grant_access(u.connection(), m))            // business write
///                 return ec;
///             return outbox.add(u, access_granted_event(m), clock.wall_now()); // outgoing event
///         },
///         inbox, [&] { return db.begin(); }, "access-service", clock);
///
/// Check what `outbox.add` returns: a refused add (`payload_malformed`, ...) leaves the unit
/// usable, so an effect that ignored it would commit without its outgoing event.
template <class Inbox, class Begin, class Effect, class Clock>
idempotent_handler<Inbox, Begin, Effect, Clock> idempotent(Effect effect, Inbox& inbox, Begin begin,
                                                           std::string consumer_id, Clock& clock) {
    return {std::move(effect), inbox, std::move(begin), std::move(consumer_id), clock};
}

namespace detail {
/// The `begin` of an inbox store that begins its own units of work (`inbox.begin()`).
template <class Inbox>
struct begin_of_store {
    Inbox* inbox;
    auto operator()() const { return inbox->begin(); }
};
} // namespace detail

/// The idempotent middleware on a store that begins its own units of work
/// (`sqlite::inbox_store`, `in_memory_inbox_store`): `inbox.begin()` begins each one.
///
///     auto h = letterbox::middleware::idempotent(effect, inbox, "access-service", clock);
template <class Inbox, class Effect, class Clock>
auto idempotent(Effect effect, Inbox& inbox, std::string consumer_id, Clock& clock) {
    static_assert(
        requires { inbox.begin(); },
        "idempotent: this inbox store does not begin units of work itself; pass a "
        "function that begins one: idempotent(effect, inbox, [&] { return "
        "db.begin(); }, consumer_id, clock)");
    return idempotent(std::move(effect), inbox, detail::begin_of_store<Inbox>{&inbox},
                      std::move(consumer_id), clock);
}

} // namespace middleware

/// Compatibility names: the idempotent unit of work lives in `letterbox::middleware` with the
/// other layers (`retry`, `redelivery`, `dead_letter`); these using-declarations keep the
/// spellings it had in `letterbox` compiling (`letterbox::idempotent(...)`,
/// `letterbox::idempotent_handler<...>`, `letterbox::idempotent_stats`).
using middleware::idempotent;
using middleware::idempotent_handler;
using middleware::idempotent_stats;

} // namespace letterbox
