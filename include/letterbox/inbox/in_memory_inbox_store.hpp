// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/concepts/inbox_store.hpp>
#include <letterbox/config.hpp>
#include <letterbox/detail/in_memory_store_operation.hpp>
#include <letterbox/error.hpp>
#include <letterbox/in_memory_unit_of_work.hpp>
#include <letterbox/inbox/detail/purge_schedule.hpp>
#include <letterbox/inbox/inbox_retention.hpp>
#include <letterbox/message.hpp>
#include <letterbox/store_time.hpp>

#include <chrono>
#include <cstddef>
#include <map>
#include <mutex>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE {

/// An `inbox_store` that keeps its (consumer id, message id) records in process memory, for
/// tests, simulations and single-process prototypes.
///
/// Limits, plainly: **not durable** (a restart forgets every record, so redeliveries after it
/// repeat their effects), **not for distributed use** (consumers in other processes do not
/// share it), and `purge` scans every record. Records are staged in an
/// `in_memory_unit_of_work`, which can span an `in_memory_outbox_store` too; the unique key is
/// checked again when the unit commits, so of two units that record the same key concurrently
/// exactly one commits.
///
/// Records are kept as `inbox_retention` says (7 days by default): `purge_expired`, which the
/// idempotent middleware calls, deletes older ones itself, and `middleware::compose` checks the
/// dedup window against `retention()`.
///
/// Fault injection: `fail_nth(n, ec)` makes the `n`-th operation from now (0 = the next one)
/// fail with `ec` and no effect. Every public operation counts as one, and so does the commit
/// of a unit of work that wrote to this store (the commit then fails and applies nothing).
///
/// Thread safety: every member function may be called concurrently.
class in_memory_inbox_store {
public:
    using inbox_store_concept = inbox_store_tag;
    using unit_of_work_type = in_memory_unit_of_work;

    in_memory_inbox_store() = default;
    explicit in_memory_inbox_store(inbox_retention retention) noexcept
        : schedule_(retention) {}
    in_memory_inbox_store(const in_memory_inbox_store&) = delete;
    in_memory_inbox_store& operator=(const in_memory_inbox_store&) = delete;

    /// Stages the record of (`consumer_id`, `id`), stamped `now`, in `uow`. Returns
    /// `errc::already_processed` when the key is recorded or already staged in `uow`,
    /// `errc::missing_idempotency_key` for the nil id (nothing is staged), or
    /// `errc::transaction_closed` when `uow` is finished.
    [[nodiscard]] std::error_code try_record(in_memory_unit_of_work& uow,
                                             std::string_view consumer_id, const message_id& id,
                                             store_time now);

    /// Whether (`consumer_id`, `id`) is recorded (committed).
    bool contains(std::string_view consumer_id, const message_id& id, std::error_code& ec);

    /// Deletes records stamped before `older_than`; returns how many.
    std::size_t purge(store_time older_than, std::error_code& ec);

    /// How many records the store holds.
    std::size_t size(std::error_code& ec);

    /// Begins a unit of work for this store (and any other in-memory store it spans).
    in_memory_unit_of_work begin() { return {}; }

    /// How long records are kept (`inbox_retention::keep`).
    std::chrono::milliseconds retention() const noexcept { return schedule_.retention().keep; }

    /// Deletes the records older than `now - retention()` when a purge is due
    /// (`inbox_retention::purge_every`); returns how many. A purge counts as an operation.
    std::size_t purge_expired(store_time now, std::error_code& ec) {
        ec.clear();
        return schedule_.due(now) ? purge(schedule_.horizon(now), ec) : 0;
    }

    /// Makes operation `n` from now (0 = the next one) fail once with `ec`; replaces any
    /// earlier request.
    void fail_nth(std::size_t n, std::error_code ec = errc::internal_error);

    /// How many operations were counted so far (including failed ones and commits).
    std::size_t operation_count();

private:
    using key_type = std::pair<std::string, message_id>;

    static std::string staging_key(std::string_view consumer_id, const message_id& id) {
        // A message id's text has a fixed length, so this is unambiguous.
        return letterbox::to_string(id) + std::string(consumer_id);
    }

    detail::in_memory_participant core_; // mutex + fault counter, shared with commits
    detail::purge_schedule schedule_{inbox_retention{}};
    std::map<key_type, store_time, std::less<>> records_;
};

inline std::error_code in_memory_inbox_store::try_record(in_memory_unit_of_work& uow,
                                                         std::string_view consumer_id,
                                                         const message_id& id, store_time now) {
    std::lock_guard lock(core_.mutex);
    if (auto ec = core_.faults.next())
        return ec;
    if (!uow.is_open())
        return errc::transaction_closed;
    if (id.is_nil()) // every id-less message has it: recording it would merge them all
        return errc::missing_idempotency_key;
    key_type key{std::string(consumer_id), id};
    std::string staged = staging_key(consumer_id, id);
    if (records_.contains(key) || uow.has_staged(core_, staged))
        return errc::already_processed;
    // The unique key decides at commit, not this read: validate runs again under the lock
    // held by the commit, so a concurrent unit that committed first makes this one fail.
    return uow.stage(
        core_, std::move(staged),
        [this, key]() -> std::error_code {
            return records_.contains(key) ? make_error_code(errc::already_processed)
                                          : std::error_code{};
        },
        [this, key, now]() { records_.emplace(key, now); });
}

inline bool in_memory_inbox_store::contains(std::string_view consumer_id, const message_id& id,
                                            std::error_code& ec) {
    return detail::in_memory_store_operation(core_, ec, [&] {
        return records_.contains(key_type{std::string(consumer_id), id});
    });
}

inline std::size_t in_memory_inbox_store::purge(store_time older_than, std::error_code& ec) {
    return detail::in_memory_store_operation(core_, ec, [&] {
        return std::erase_if(records_, [&](const auto& r) { return r.second < older_than; });
    });
}

inline std::size_t in_memory_inbox_store::size(std::error_code& ec) {
    return detail::in_memory_store_operation(core_, ec, [&] { return records_.size(); });
}

inline void in_memory_inbox_store::fail_nth(std::size_t n, std::error_code ec) {
    detail::in_memory_store_fail_nth(core_, n, ec);
}

inline std::size_t in_memory_inbox_store::operation_count() {
    return detail::in_memory_store_operation_count(core_);
}

} // namespace letterbox
