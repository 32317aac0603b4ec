// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/concepts/outbox_store.hpp>
#include <letterbox/config.hpp>
#include <letterbox/error.hpp>
#include <letterbox/in_memory_unit_of_work.hpp>
#include <letterbox/message.hpp>
#include <letterbox/outbox_record.hpp>
#include <letterbox/store_time.hpp>

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string_view>
#include <system_error>
#include <vector>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE {

/// An `outbox_store` that keeps its rows in process memory, for tests, simulations and
/// single-process prototypes.
///
/// Limits, plainly: **not durable** (rows die with the process), **not for distributed use**
/// (relays in other processes cannot see it), and every operation scans the rows, so it is
/// meant for thousands of rows, not millions. Writes go through an `in_memory_unit_of_work`,
/// which can span an `in_memory_inbox_store` too; sequences are assigned at commit, so they
/// follow commit order.
///
/// Fault injection: `fail_nth(n, ec)` makes the `n`-th operation from now (0 = the next one)
/// fail with `ec` and no effect, like Beast's `fail_count`. Every public operation counts as
/// one, and so does the commit of a unit of work that wrote to this store (the commit then
/// fails and applies nothing, in any store).
///
/// Thread safety: every member function may be called concurrently.
///
/// Example:
///
///     letterbox::in_memory_outbox_store outbox;
///     letterbox::in_memory_unit_of_work uow;
///     if (auto ec = outbox.add(uow, {msg, "order", "42"}, clock.wall_now()))
///         return ec; // ignored, the commit below would commit without the event
///     if (auto ec = uow.commit())
///         return ec;
///     std::error_code ec;
///     auto batch = outbox.claim("relay-1", 100, std::chrono::seconds(30), clock.wall_now(), ec);
class in_memory_outbox_store {
public:
    using outbox_store_concept = outbox_store_tag;
    using unit_of_work_type = in_memory_unit_of_work;

    in_memory_outbox_store() = default;
    in_memory_outbox_store(const in_memory_outbox_store&) = delete;
    in_memory_outbox_store& operator=(const in_memory_outbox_store&) = delete;

    /// Stages `entry` in `uow`; it becomes a pending row when `uow` commits. Fails with
    /// `errc::duplicate_message_id` when the id is held or already staged in `uow` (checked
    /// again at commit), `errc::precondition_failed` for a nil id, `errc::payload_malformed`
    /// for a body invalid for its content type (`validate_payload`), or
    /// `errc::transaction_closed` when `uow` is finished.
    [[nodiscard]] std::error_code add(in_memory_unit_of_work& uow, const outbox_entry& entry,
                                      store_time now);

    /// Leases up to `max_rows` claimable rows to `owner` until `now + lease`, in creation
    /// order, at most one per aggregate (see `outbox_store` for the rules). An empty `owner`
    /// fails with `errc::precondition_failed`.
    std::vector<outbox_record> claim(std::string_view owner, std::size_t max_rows,
                                     store_time::duration lease, store_time now,
                                     std::error_code& ec);

    /// Marks a row leased by `owner` as published at `now`.
    [[nodiscard]] std::error_code mark_published(const message_id& id, std::string_view owner,
                                                 store_time now);

    /// Marks the rows `ids` leased by `owner` as published at `now`, as one operation (one
    /// lock, one count for `fail_nth`): `outbox_batch_settler`. `results` gets each row's
    /// outcome; an injected fault fails the whole batch with no effect.
    [[nodiscard]] std::error_code mark_published(std::span<const message_id> ids,
                                                 std::string_view owner, store_time now,
                                                 std::vector<std::error_code>& results);

    /// Records a failed attempt by `owner`: retried at `next_attempt_at`, or parked once
    /// `max_attempts` is reached.
    [[nodiscard]] std::error_code record_failure(const message_id& id, std::string_view owner,
                                                 std::string_view error, store_time next_attempt_at,
                                                 std::uint32_t max_attempts, store_time now);

    /// Parks a pending row with `reason`.
    [[nodiscard]] std::error_code park(const message_id& id, std::string_view reason);

    /// Makes a parked row pending again, due at `now`, with its attempts reset.
    [[nodiscard]] std::error_code unpark(const message_id& id, store_time now);

    /// Drops every lease that expired at or before `now`; returns how many.
    std::size_t release_expired_leases(store_time now, std::error_code& ec);

    /// Deletes published rows published before `older_than`; returns how many.
    std::size_t purge_published(store_time older_than, std::error_code& ec);

    /// The row with this message id, if the store holds it.
    std::optional<outbox_record> find(const message_id& id, std::error_code& ec);

    /// The rows selected by `query`, in creation order.
    std::vector<outbox_record> list(const outbox_query& query, std::error_code& ec);

    /// Counts by status and the age of the oldest pending row at `now`.
    outbox_stats stats(store_time now, std::error_code& ec);

    /// Makes operation `n` from now (0 = the next one) fail once with `ec`; replaces any
    /// earlier request.
    void fail_nth(std::size_t n, std::error_code ec = errc::internal_error);

    /// How many operations were counted so far (including failed ones and commits).
    std::size_t operation_count();

private:
    outbox_record* find_row(const message_id& id);
    /// The pending row `id` leased to `owner`; otherwise null and `record_not_found` or
    /// `lease_lost` in `ec`. Only the lease owner may settle a row.
    outbox_record* leased_row(const message_id& id, std::string_view owner, std::error_code& ec);
    /// With the lock held, for a single-row settlement: the next injected fault in `ec` (and
    /// null), or else `leased_row`.
    outbox_record* leased_row_unless_faulted(const message_id& id, std::string_view owner,
                                             std::error_code& ec);
    /// For `park` and `unpark`, one counted operation under the lock: unless faulted, applies
    /// `change` to the row `id` if `may_change(its status)`; else `errc::record_not_found` or
    /// `errc::invalid_state`, with no effect.
    template <class MayChange, class Change>
    std::error_code change_row(const message_id& id, MayChange may_change, Change change);
    /// Marks a leased `row` published at `now` and drops its lease.
    static void publish(outbox_record& row, store_time now);

    detail::in_memory_participant core_;          // mutex + fault counter, shared with commits
    std::map<std::uint64_t, outbox_record> rows_; // by sequence: creation order
    std::map<message_id, std::uint64_t> by_id_;
    std::uint64_t last_sequence_ = 0;
};

} // namespace letterbox

#if LETTERBOX_HEADER_ONLY
#include <letterbox/outbox/impl/in_memory_outbox_store.hpp>
#endif
