// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/concepts/checkpoint_store.hpp>
#include <letterbox/config.hpp>
#include <letterbox/sqlite/database.hpp>
#include <letterbox/sqlite/detail/database_state.hpp>
#include <letterbox/sqlite/unit_of_work.hpp>

#include <cstdint>
#include <memory>
#include <string_view>
#include <system_error>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::sqlite {

/// A `checkpoint_store` in the `letterbox_checkpoint` table of an SQLite database (schema
/// version 5): durable, and shared by every process that opens the file. Keep it in the read
/// model's database, so that a projection's checkpoint and its update commit in one unit.
///
/// `save` writes inside the caller's `unit_of_work`, and the table decides, never a read
/// followed by a write: a move from `expected` is `UPDATE ... SET position = ? WHERE name = ?
/// AND position = ?`, and a move from 0 is `INSERT ... ON CONFLICT (name) DO UPDATE ... WHERE
/// position = 0`, which takes both a projection without a row and one whose row is at 0 (a
/// save back to 0 keeps the row, at 0). When the statement changes no row the answer is
/// `errc::concurrency_conflict`, nothing is written and the unit stays usable. Because a unit
/// holds the database's write lock from `BEGIN IMMEDIATE` to its end, units run one after the
/// other, so the conflict is known when `save` returns: `commit()` never reports one. A second
/// save of one name in a unit (which the concept does not allow) compares with the first one's
/// position, which the unit sees. `position` is one `SELECT` on a pooled connection: committed
/// checkpoints only, never waiting.
///
/// Names are stored as given (TEXT, NUL bytes included). Positions are at most 2^63 - 1
/// (SQLite's integers): `save` refuses a larger one with `errc::invalid_argument`, and a larger
/// `expected` is a conflict (no checkpoint is there). The table keeps no time: `save` is given
/// none. Delete a row by hand only to rebuild its projection from the start.
///
/// Limits: one writer at a time (see `database`).
///
/// Thread safety: every member function may be called concurrently.
///
/// Example (a projection's step: apply the events after its checkpoint, then move it):
///
///     letterbox::sqlite::checkpoint_store checkpoints(db);
///     std::error_code ec;
///     const auto from = checkpoints.position("balances", ec);
///     if (ec)
///         return ec;
///     const auto page = events.read_all(from, 100, ec);
///     if (ec || page.empty())
///         return ec;
///     auto uow = db.begin();
///     for (const auto& e : page)
///         apply(uow.connection(), e); // the read model's writes
///     if (auto e = checkpoints.save(uow, "balances", from, page.back().position);
///         e == letterbox::errc::concurrency_conflict)
///         return retry(); // another runner moved it first: its update stands, ours rolls back
///     else if (e)
///         return e;
///     return uow.commit();
class checkpoint_store {
public:
    using checkpoint_store_concept = checkpoint_store_tag;
    using unit_of_work_type = sqlite::unit_of_work;

    /// A store on `db`'s checkpoint table. It shares `db`'s pool (and keeps it alive).
    /// Precondition: `db.is_open()`.
    explicit checkpoint_store(const database& db) noexcept
        : db_(db.state()) {}

    /// Begins a unit of work on the store's database (`database::begin`): throws
    /// `letterbox::error` when the database stays locked or cannot be written.
    unit_of_work begin() { return database::attach(db_).begin(); }

    /// The committed checkpoint of the projection `name`; 0 when it has none.
    std::uint64_t position(std::string_view name, std::error_code& ec);

    /// Moves `name`'s checkpoint from `expected` to `position` (back to 0 for a rebuild) in
    /// `uow`'s transaction. Returns `errc::concurrency_conflict` when it is not at `expected`
    /// (another unit moved it, or, for `expected` 0, it has moved from 0): nothing is written,
    /// the unit stays usable. Also `errc::invalid_argument` for an empty `name` or a `position`
    /// above 2^63 - 1 (nothing is written, the unit stays usable), `errc::precondition_failed`
    /// for a unit of another database, `errc::transaction_closed` when `uow` is finished, or a
    /// database error (which fails the unit, see `unit_of_work`).
    [[nodiscard]] std::error_code save(unit_of_work& uow, std::string_view name,
                                       std::uint64_t expected, std::uint64_t position);

private:
    std::shared_ptr<detail::database_state> db_;
};

} // namespace letterbox::sqlite

#if LETTERBOX_HEADER_ONLY
#include <letterbox/sqlite/impl/checkpoint_store.hpp>
#endif
