// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/concepts/outbox_store.hpp>
#include <letterbox/config.hpp>
#include <letterbox/message.hpp>
#include <letterbox/outbox_record.hpp>
#include <letterbox/sqlite/database.hpp>
#include <letterbox/sqlite/detail/database_state.hpp>
#include <letterbox/sqlite/outbox_row_error.hpp>
#include <letterbox/sqlite/unit_of_work.hpp>
#include <letterbox/store_time.hpp>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string_view>
#include <system_error>
#include <vector>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::sqlite {

/// An `outbox_store` in the `letterbox_outbox` tables of an SQLite database: durable, and
/// shared by every process that opens the file.
///
/// `add` inserts into the table inside the caller's `unit_of_work`, next to the business
/// writes; the row exists if and only if the unit commits. Every other operation runs on a
/// connection borrowed from the database's pool. Operations that write (`claim`, settling,
/// `park`, `unpark`, `release_expired_leases`, `purge_published`) are each one atomic
/// statement or one `BEGIN IMMEDIATE` transaction, retried after a backoff while the database
/// is locked and then reported as `errc::store_busy`, with nothing written. Database errors
/// are `errc::store_*` codes; the driver's text is `database::last_error_message()`.
///
/// Semantics are those of the concept, exactly as `in_memory_outbox_store` models them:
/// `claim` hands out pending, due, unleased rows in sequence order (taking over expired
/// leases), never a row behind an unpublished (pending, leased, retrying or parked) earlier row
/// of its aggregate; only the lease owner settles a row (`errc::lease_lost`,
/// `errc::record_not_found`); `park` and `unpark` refuse a row in the wrong status with
/// `errc::invalid_state`. Sequences are SQLite rowids (`AUTOINCREMENT`): since a unit holds
/// the write lock from `BEGIN IMMEDIATE` to `COMMIT`, their order is commit order, and they
/// are never reused. Times are stored as microseconds since the epoch (a finer part is
/// dropped, rounding toward the past). Headers and properties round-trip exactly.
///
/// The event row is written once; its delivery state (status, lease, attempts) lives in narrow
/// tables of its own (schema version 2, docs/sqlite.md), so claims and marks rewrite a few
/// bytes, not the payload. `claim` reads only the rows that head their aggregate (an indexed
/// flag, set by `add` and handed to the next row of the aggregate when a head is published), so
/// events queued behind an unpublished one cost it nothing; heads that are leased or waiting
/// for a retry are skipped one by one. Claiming a batch, and marking one published
/// (`mark_published` of a span), are each a few set-based statements in one transaction. Write the
/// tables only through the stores.
///
/// Limits: one writer at a time (see `database`); an open unit of work makes every write of
/// this store wait, including one from the thread that holds the unit. Reads never wait.
///
/// Thread safety: every member function may be called concurrently.
///
/// Example:
///
///     auto db = letterbox::sqlite::database::open("orders.db");
///     letterbox::sqlite::outbox_store outbox(db);
///     auto uow = db.begin();
///     if (auto ec = uow.connection().exec("INSERT INTO orders(id) VALUES (42)"))
///         return ec; // the unit rolls back when destroyed
///     if (auto ec = outbox.add(uow, {msg, "order", "42"}, clock.wall_now()))
///         return ec; // ignored, the commit below would commit the order without its event
///     if (auto ec = uow.commit())
///         return ec;
///     std::error_code ec;
///     auto batch = outbox.claim("relay-1", 256, std::chrono::seconds(30), clock.wall_now(), ec);
class outbox_store {
public:
    using outbox_store_concept = outbox_store_tag;
    using unit_of_work_type = sqlite::unit_of_work;

    /// A store on `db`'s `letterbox_outbox` table. It shares `db`'s pool (and keeps it alive).
    /// Precondition: `db.is_open()`.
    explicit outbox_store(const database& db) noexcept
        : db_(db.state()) {}

    /// Inserts `entry` in `uow`'s transaction; it becomes a pending row when `uow` commits.
    /// Fails with `errc::duplicate_message_id` when the id is already held or added in `uow`
    /// (the unit stays usable), `errc::precondition_failed` for a nil id or a unit of another
    /// database, `errc::payload_malformed` for a body invalid for its content type
    /// (`validate_payload`), `errc::payload_unencodable` for headers nested more than 100
    /// levels deep, `errc::transaction_closed` when `uow` is finished, or a database error
    /// (which fails the unit, see `unit_of_work`).
    [[nodiscard]] std::error_code add(unit_of_work& uow, const outbox_entry& entry, store_time now);

    /// Leases up to `max_rows` claimable rows to `owner` until `now + lease`, in sequence
    /// order, at most one per aggregate, in one transaction. An empty `owner` fails with
    /// `errc::precondition_failed`.
    std::vector<outbox_record> claim(std::string_view owner, std::size_t max_rows,
                                     store_time::duration lease, store_time now,
                                     std::error_code& ec);

    /// Marks a row leased by `owner` as published at `now`.
    [[nodiscard]] std::error_code mark_published(const message_id& id, std::string_view owner,
                                                 store_time now);

    /// Marks the rows `ids` leased by `owner` as published at `now`, in **one** transaction
    /// (the optional `outbox_batch_settler` capability, which `outbox_relay` uses when a store
    /// has it): one commit instead of one per row. Equivalent to `mark_published(id, owner,
    /// now)` for each id in order (a repeated id is `errc::lease_lost` the second time);
    /// `results` gets one outcome per id: success, `errc::lease_lost` or
    /// `errc::record_not_found`. On a database error nothing is marked, the error is returned
    /// and every element of `results` holds it.
    [[nodiscard]] std::error_code mark_published(std::span<const message_id> ids,
                                                 std::string_view owner, store_time now,
                                                 std::vector<std::error_code>& results);

    /// Records a failed attempt by `owner`: retried at `next_attempt_at`, or parked once
    /// `max_attempts` is reached.
    [[nodiscard]] std::error_code record_failure(const message_id& id, std::string_view owner,
                                                 std::string_view error, store_time next_attempt_at,
                                                 std::uint32_t max_attempts, store_time now);

    /// Parks a pending (or parked) row with `reason`.
    [[nodiscard]] std::error_code park(const message_id& id, std::string_view reason);

    /// Makes a parked row pending again, due at `now`, with its attempts reset.
    [[nodiscard]] std::error_code unpark(const message_id& id, store_time now);

    /// Drops every lease that expired at or before `now`; returns how many.
    std::size_t release_expired_leases(store_time now, std::error_code& ec);

    /// Deletes published rows published before `older_than`; returns how many.
    std::size_t purge_published(store_time older_than, std::error_code& ec);

    /// The committed row with this message id, if any.
    std::optional<outbox_record> find(const message_id& id, std::error_code& ec);

    /// The committed rows selected by `query`, in sequence order. A row that cannot be read (see
    /// `outbox_row_error`) fails the whole listing with `errc::store_corrupt`.
    std::vector<outbox_record> list(const outbox_query& query, std::error_code& ec);

    /// Like the other `list`, but a row that cannot be read does not fail the listing: it is
    /// reported in `unreadable` (its sequence, its stored message id and what is wrong), and the
    /// other rows are listed. Unreadable rows count toward `query.limit`; to page, pass the
    /// largest sequence of both results as the next `after_sequence`. For operators' tools,
    /// which must show what they can and name what they cannot.
    std::vector<outbox_record> list(const outbox_query& query,
                                    std::vector<outbox_row_error>& unreadable, std::error_code& ec);

    /// Counts by status and the age of the oldest pending row at `now`, from one snapshot.
    outbox_stats stats(store_time now, std::error_code& ec);

private:
    std::vector<outbox_record> list_rows(const outbox_query& query,
                                         std::vector<outbox_row_error>* unreadable,
                                         std::error_code& ec);

    /// Runs `sql`, an UPDATE of the row whose message id is ?1, with `args` bound to ?2, ...
    /// (see `detail::prepare_bound`): success when it changed the row, else `classify_miss`
    /// with `otherwise`.
    template <class... Args>
    [[nodiscard]] std::error_code update_row(const message_id& id, errc otherwise,
                                             std::string_view sql, const Args&... args);

    /// After an UPDATE by id changed nothing: `errc::record_not_found` if the id is unknown,
    /// else `otherwise`.
    [[nodiscard]] static std::error_code classify_miss(connection& c, std::string_view id,
                                                       errc otherwise);

    std::shared_ptr<detail::database_state> db_;
};

} // namespace letterbox::sqlite

#if LETTERBOX_HEADER_ONLY
#include <letterbox/sqlite/impl/outbox_store.hpp>
#endif
