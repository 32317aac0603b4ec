// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/concepts/inbox_store.hpp>
#include <letterbox/config.hpp>
#include <letterbox/error.hpp>
#include <letterbox/inbox/detail/purge_schedule.hpp>
#include <letterbox/inbox/inbox_retention.hpp>
#include <letterbox/message.hpp>
#include <letterbox/sqlite/database.hpp>
#include <letterbox/sqlite/detail/database_state.hpp>
#include <letterbox/sqlite/detail/time.hpp>
#include <letterbox/sqlite/unit_of_work.hpp>
#include <letterbox/store_time.hpp>

#include <chrono>
#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <system_error>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::sqlite {

/// An `inbox_store` in the `letterbox_inbox` table of an SQLite database: durable, and shared
/// by every consumer process that opens the file.
///
/// `try_record` inserts the key `(consumer_id, message_id)` in the caller's `unit_of_work`,
/// with `INSERT ... ON CONFLICT DO NOTHING`: the table's primary key decides, never a read
/// followed by a write, and a key that is already there (committed, or recorded earlier in the
/// same unit) is `errc::already_processed` with the unit still usable. Because a unit holds the
/// database's write lock from `BEGIN IMMEDIATE` to its end, two units recording the same key
/// run one after the other: the second learns `errc::already_processed` from `try_record`. A
/// rolled-back unit leaves no record. `purge`, `contains` and `size` borrow a connection from
/// the pool; reads see committed records only and never wait.
///
/// The store keeps its records for `inbox_retention::keep` (7 days unless told otherwise) and
/// purges older ones itself (`purge_expired`, which the idempotent middleware calls), so the
/// table does not grow without bound and `middleware::compose` checks the dedup window against
/// it. `begin()` begins a unit of work on the store's database.
///
/// Limits: one writer at a time (see `database`); `size` counts the table.
///
/// Thread safety: every member function may be called concurrently.
///
/// Example:
///
///     letterbox::sqlite::inbox_store inbox(db);
///     auto uow = db.begin();
///     const auto ec = inbox.try_record(uow, "billing", delivery.msg.id, clock.wall_now());
///     if (ec == letterbox::errc::already_processed)
///         return ack(); // a duplicate: the effect already happened
///     if (ec)
///         return ec; // the unit rolls back when destroyed
///     apply_effect(uow.connection(), delivery.msg);
///     return uow.commit();
class inbox_store {
public:
    using inbox_store_concept = inbox_store_tag;
    using unit_of_work_type = sqlite::unit_of_work;

    /// A store on `db`'s `letterbox_inbox` table that keeps records as `retention` says. It
    /// shares `db`'s pool (and keeps it alive); copies share the purge schedule.
    /// Precondition: `db.is_open()`.
    explicit inbox_store(const database& db, inbox_retention retention = {})
        : db_(db.state())
        , schedule_(std::make_shared<letterbox::detail::purge_schedule>(retention)) {}

    /// Begins a unit of work on the store's database (`database::begin`): throws
    /// `letterbox::error` when the database stays locked or cannot be written.
    unit_of_work begin() { return database::attach(db_).begin(); }

    /// How long records are kept (`inbox_retention::keep`).
    std::chrono::milliseconds retention() const noexcept { return schedule_->retention().keep; }

    /// Deletes the records older than `now - retention()` when a purge is due
    /// (`inbox_retention::purge_every`), on a connection of its own; returns how many. Call it
    /// outside any unit of work on this database: it waits for the write lock.
    std::size_t purge_expired(store_time now, std::error_code& ec) {
        ec.clear();
        return schedule_->due(now) ? purge(schedule_->horizon(now), ec) : 0;
    }

    /// Records (`consumer_id`, `id`), stamped `now`, in `uow`'s transaction. Returns
    /// `errc::already_processed` when the key is already recorded (the unit stays usable),
    /// `errc::missing_idempotency_key` for the nil id, which names no message (nothing is
    /// written, the unit stays usable), `errc::transaction_closed` when `uow` is finished,
    /// `errc::precondition_failed` for a unit of another database, or a database error
    /// (which fails the unit).
    [[nodiscard]] std::error_code try_record(unit_of_work& uow, std::string_view consumer_id,
                                             const message_id& id, store_time now) {
        if (!db_)
            return errc::closed;
        if (id.is_nil()) // every id-less message has it: recording it would merge them all
            return errc::missing_idempotency_key;
        if (auto ec = uow.check_writable(*db_))
            return ec;
        auto& conn = uow.connection();
        std::error_code ec;
        {
            auto st = detail::prepare_bound(
                conn,
                "INSERT INTO letterbox_inbox (consumer_id, message_id, recorded_at) "
                "VALUES (?1, ?2, ?3) ON CONFLICT DO NOTHING",
                ec, consumer_id, key_of(id), detail::to_column(now));
            if (!ec)
                ec = st->execute();
        }
        if (ec) {
            uow.fail(ec);
            return ec;
        }
        return conn.changes() == 0 ? make_error_code(errc::already_processed) : std::error_code{};
    }

    /// Whether (`consumer_id`, `id`) is recorded (committed).
    bool contains(std::string_view consumer_id, const message_id& id, std::error_code& ec) {
        return detail::run_for_result<bool>(
            db_.get(), ec, [&](connection& c, bool& found) -> std::error_code {
                std::error_code e;
                auto st = detail::prepare_bound(c,
                                                "SELECT 1 FROM letterbox_inbox WHERE consumer_id = "
                                                "?1 AND message_id = ?2",
                                                e, consumer_id, key_of(id));
                if (e)
                    return e;
                found = st->step(e);
                return e;
            });
    }

    /// Deletes records stamped before `older_than`; returns how many.
    std::size_t purge(store_time older_than, std::error_code& ec) {
        return detail::count_changes_at(
            db_.get(), "DELETE FROM letterbox_inbox WHERE recorded_at < ?1", older_than, ec);
    }

    /// How many records the store holds.
    std::size_t size(std::error_code& ec) {
        return detail::count_rows(db_.get(), "SELECT count(*) FROM letterbox_inbox", ec);
    }

private:
    /// The stored form of an id: its 16 bytes (schema step 3).
    static detail::blob key_of(const message_id& id) noexcept {
        return {std::string_view(reinterpret_cast<const char*>(id.data), id.size())};
    }

    std::shared_ptr<detail::database_state> db_;
    std::shared_ptr<letterbox::detail::purge_schedule> schedule_;
};

} // namespace letterbox::sqlite
