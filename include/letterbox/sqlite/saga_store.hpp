// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/concepts/saga_store.hpp>
#include <letterbox/config.hpp>
#include <letterbox/saga_instance.hpp>
#include <letterbox/sqlite/connection.hpp>
#include <letterbox/sqlite/database.hpp>
#include <letterbox/sqlite/detail/database_state.hpp>
#include <letterbox/sqlite/unit_of_work.hpp>
#include <letterbox/store_time.hpp>

#include <cstddef>
#include <memory>
#include <optional>
#include <string_view>
#include <system_error>
#include <vector>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::sqlite {

/// A `saga_store` in the `letterbox_saga` and `letterbox_saga_timeout` tables of an SQLite
/// database (schema version 4): durable, and shared by every process that opens the file.
///
/// `insert` and `update` write inside the caller's `unit_of_work`, next to its inbox record and
/// outbox rows, so a saga step commits whole or not at all. The tables decide every conflict,
/// never a read followed by a write: `insert` is `INSERT ... ON CONFLICT DO NOTHING` on the
/// keys `(saga_type, id)` and `(saga_type, correlation)`, and `update` is an `UPDATE ... WHERE
/// version = ?` of the version the caller read. When either changes no row the answer is
/// `errc::concurrency_conflict`, nothing is written and the unit stays usable. Because a unit
/// holds the database's write lock from `BEGIN IMMEDIATE` to its end, units run one after the
/// other, so the conflict is known when `insert` or `update` returns: `commit()` never reports
/// one. Each write replaces the instance's timeouts (delete, then insert); `purge_finished`
/// deletes instances with their timeouts. Reads (`find`, `find_by_correlation`, `size`,
/// `due_timeouts`) borrow a connection from the pool, see committed instances only and never
/// wait; `find` reads the instance and its timeouts from one snapshot.
///
/// Keys, state and data are stored as given (TEXT, NUL bytes included). Times are stored as
/// microseconds since the epoch (a finer part is dropped, rounding toward the past). `find`
/// lists an instance's timeouts by due time, then name. Write the tables only through the store.
///
/// Limits: one writer at a time (see `database`); `purge_finished` waits for the write lock,
/// so call it outside any unit of work on this database. Timeout names are unique within an
/// instance (two of the same name are `errc::invalid_argument`). `size` counts the table.
///
/// Thread safety: every member function may be called concurrently.
///
/// Example:
///
///     letterbox::sqlite::saga_store sagas(db);
///     auto uow = db.begin();
///     std::error_code ec;
///     auto order = sagas.find_by_correlation("order-fulfilment", order_id, ec);
///     if (!order)
///         return ec; // a database error, or no saga for this order
///     order->state = "awaiting-payment";
///     order->timeouts = {{"payment", clock.wall_now() + 30s}};
///     order->updated_at = clock.wall_now();
///     if (auto e = sagas.update(uow, *order); e == letterbox::errc::concurrency_conflict)
///         return retry(); // another step moved the saga first: read it again
///     else if (e)
///         return e; // the unit rolls back when destroyed
///     return uow.commit();
class saga_store {
public:
    using saga_store_concept = saga_store_tag;
    using unit_of_work_type = sqlite::unit_of_work;

    /// A store on `db`'s saga tables. It shares `db`'s pool (and keeps it alive).
    /// Precondition: `db.is_open()`.
    explicit saga_store(const database& db) noexcept
        : db_(db.state()) {}

    /// Begins a unit of work on the store's database (`database::begin`): throws
    /// `letterbox::error` when the database stays locked or cannot be written.
    unit_of_work begin() { return database::attach(db_).begin(); }

    /// Inserts `instance` with version 1 and its timeouts in `uow`'s transaction. Returns
    /// `errc::concurrency_conflict` when its type already has an instance with this id or this
    /// correlation, committed or inserted earlier in `uow` (nothing is written, the unit stays
    /// usable); `errc::precondition_failed` when `instance.version` is not 0 or `uow` belongs
    /// to another database; `errc::invalid_argument` for an empty `saga_type`, `id` or
    /// `correlation`, or two timeouts of one name (nothing is written, the unit stays usable);
    /// `errc::transaction_closed` when `uow` is finished; or a database error (which fails the
    /// unit, see `unit_of_work`).
    [[nodiscard]] std::error_code insert(unit_of_work& uow, const saga_instance& instance);

    /// Replaces the stored instance of `instance.saga_type` and `instance.id` with `instance`
    /// (its state, data, finished flag, time and timeouts; the correlation is kept) and version
    /// `instance.version + 1`, in `uow`'s transaction. Returns `errc::concurrency_conflict` when
    /// the stored version is not `instance.version` (another unit moved it on, this unit wrote
    /// it already, or there is no such instance): nothing is written, the unit stays usable.
    /// Also `errc::invalid_argument` for two timeouts of one name (nothing is written, the unit
    /// stays usable), `errc::precondition_failed` for a unit of another database,
    /// `errc::transaction_closed` when `uow` is finished, or a database error (which fails the
    /// unit).
    [[nodiscard]] std::error_code update(unit_of_work& uow, const saga_instance& instance);

    /// The committed instance of `type` with this `id`, with its timeouts.
    std::optional<saga_instance> find(std::string_view type, std::string_view id,
                                      std::error_code& ec);

    /// The committed instance of `type` with this `correlation`, with its timeouts.
    std::optional<saga_instance>
    find_by_correlation(std::string_view type, std::string_view correlation, std::error_code& ec);

    /// How many instances the store holds, finished or not.
    std::size_t size(std::error_code& ec);

    /// Up to `limit` timeouts due at or before `now`, earliest first, then by type, id and name.
    std::vector<saga_timeout_due> due_timeouts(store_time now, std::size_t limit,
                                               std::error_code& ec);

    /// Deletes the finished instances last written before `older_than`, with their timeouts, on
    /// a connection of its own; returns how many instances.
    std::size_t purge_finished(store_time older_than, std::error_code& ec);

private:
    /// What `insert` and `update` check before writing: the unit, then the instance's timeouts.
    [[nodiscard]] std::error_code check_write(const unit_of_work& uow,
                                              const saga_instance& instance) const;

    /// The committed instance that `sql` (a SELECT of the instance's columns, with `type` as ?1
    /// and `key` as ?2) finds, with its timeouts, from one snapshot.
    std::optional<saga_instance> find_where(std::string_view sql, std::string_view type,
                                            std::string_view key, std::error_code& ec);

    /// The end of `insert` or `update`, whose statement ran with `ec`: no row changed is
    /// `errc::concurrency_conflict` (nothing written, the unit usable); otherwise the
    /// instance's timeouts are replaced. A database error fails the unit.
    [[nodiscard]] static std::error_code
    settle_write(unit_of_work& uow, const saga_instance& instance, std::error_code ec);

    /// Deletes the stored timeouts of `instance` and inserts its own, on `c`.
    [[nodiscard]] static std::error_code replace_timeouts(connection& c,
                                                          const saga_instance& instance);

    std::shared_ptr<detail::database_state> db_;
};

} // namespace letterbox::sqlite

#if LETTERBOX_HEADER_ONLY
#include <letterbox/sqlite/impl/saga_store.hpp>
#endif
