// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/concepts/inbox_store.hpp>
#include <letterbox/config.hpp>
#include <letterbox/detail/time_column.hpp>
#include <letterbox/error.hpp>
#include <letterbox/inbox/detail/purge_schedule.hpp>
#include <letterbox/inbox/inbox_retention.hpp>
#include <letterbox/message.hpp>
#include <letterbox/postgres/database.hpp>
#include <letterbox/postgres/detail/database_state.hpp>
#include <letterbox/postgres/unit_of_work.hpp>
#include <letterbox/store_time.hpp>

#include <chrono>
#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <system_error>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::postgres {

/// An `inbox_store` in the `<schema>.letterbox_inbox` table of a PostgreSQL database: durable,
/// and shared by every consumer process that connects to it.
///
/// `try_record` inserts the key `(consumer_id, message_id)` in the caller's `unit_of_work` with
/// `INSERT ... ON CONFLICT DO NOTHING`: the primary key decides, never a read followed by a
/// write. A key that is already there (committed, or recorded earlier in the same unit) is
/// `errc::already_processed`, without a server error, so the unit stays usable. When another
/// open unit has recorded the same key, the insert waits for it: if it commits, this one learns
/// `errc::already_processed`; if it rolls back, this one records the key. So of two consumers
/// handling one message at once, exactly one has the effect. A rolled-back unit leaves no
/// record.
///
/// The store keeps its records for `inbox_retention::keep` and purges older ones itself
/// (`purge_expired`, which the idempotent middleware calls).
///
/// Thread safety: every member function may be called concurrently, from any number of
/// processes.
///
/// Example:
///
///     letterbox::postgres::inbox_store inbox(db);
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
    using unit_of_work_type = postgres::unit_of_work;

    /// A store on `db`'s schema that keeps records as `retention` says; copies share the purge
    /// schedule. Precondition: `db.is_open()`.
    explicit inbox_store(const database& db, inbox_retention retention = {})
        : db_(db.state())
        , schedule_(std::make_shared<letterbox::detail::purge_schedule>(retention)) {
        if (db_) {
            const auto& s = db_->schema();
            insert_ = "INSERT INTO " + s +
                      ".letterbox_inbox (consumer_id, message_id, recorded_at) "
                      "VALUES ($1, $2, $3) ON CONFLICT DO NOTHING";
            contains_ = "SELECT 1 FROM " + s +
                        ".letterbox_inbox WHERE consumer_id = $1 AND message_id = $2";
            purge_ = "DELETE FROM " + s + ".letterbox_inbox WHERE recorded_at < $1";
            size_ = "SELECT count(*) FROM " + s + ".letterbox_inbox";
        }
    }

    /// Begins a unit of work on the store's database (`database::begin`); throws
    /// `letterbox::error` on failure.
    unit_of_work begin() { return database::attach(db_).begin(); }

    /// How long records are kept (`inbox_retention::keep`).
    std::chrono::milliseconds retention() const noexcept { return schedule_->retention().keep; }

    /// Deletes the records older than `now - retention()` when a purge is due
    /// (`inbox_retention::purge_every`); returns how many.
    std::size_t purge_expired(store_time now, std::error_code& ec) {
        ec.clear();
        return schedule_->due(now) ? purge(schedule_->horizon(now), ec) : 0;
    }

    /// Records (`consumer_id`, `id`), stamped `now`, in `uow`'s transaction. Returns
    /// `errc::already_processed` when the key is already recorded (the unit stays usable),
    /// `errc::missing_idempotency_key` for the nil id (nothing is written, the unit stays
    /// usable), `errc::transaction_closed` when `uow` is finished, `errc::precondition_failed`
    /// for a unit of another database, or a database error (which fails the unit).
    [[nodiscard]] std::error_code try_record(unit_of_work& uow, std::string_view consumer_id,
                                             const message_id& id, store_time now) {
        if (!db_)
            return errc::closed;
        if (id.is_nil()) // every id-less message has it: recording it would merge them all
            return errc::missing_idempotency_key;
        if (auto ec = uow.check_writable(*db_))
            return ec;
        const std::string key = letterbox::to_string(id);
        std::error_code ec;
        auto r = uow.connection().exec(
            insert_,
            {param::text(consumer_id), param::text(key), param(letterbox::detail::to_column(now))},
            ec);
        if (ec) {
            uow.fail(ec);
            return ec;
        }
        return r.affected() == 0 ? make_error_code(errc::already_processed) : std::error_code{};
    }

    /// Whether (`consumer_id`, `id`) is recorded (committed).
    bool contains(std::string_view consumer_id, const message_id& id, std::error_code& ec) {
        bool found = false;
        const std::string key = letterbox::to_string(id);
        ec = run([&](connection& c) {
            std::error_code e;
            found = c.exec(contains_, {param::text(consumer_id), param::text(key)}, e).rows() > 0;
            return e;
        });
        return !ec && found;
    }

    /// Deletes records stamped before `older_than`; returns how many.
    std::size_t purge(store_time older_than, std::error_code& ec) {
        std::size_t n = 0;
        ec = run([&](connection& c) {
            std::error_code e;
            n = c.exec(purge_, {param(letterbox::detail::to_column(older_than))}, e).affected();
            return e;
        });
        return ec ? 0 : n;
    }

    /// How many records the store holds.
    std::size_t size(std::error_code& ec) {
        std::size_t n = 0;
        ec = run([&](connection& c) {
            std::error_code e;
            auto r = c.exec(size_, {}, e);
            if (!e && r.rows() == 1)
                n = static_cast<std::size_t>(r.int64(0, 0).value_or(0));
            return e;
        });
        return ec ? 0 : n;
    }

private:
    template <class Op>
    std::error_code run(Op&& op) {
        if (!db_)
            return errc::closed;
        return db_->run(std::forward<Op>(op));
    }

    std::shared_ptr<detail::database_state> db_;
    std::shared_ptr<letterbox::detail::purge_schedule> schedule_;
    std::string insert_, contains_, purge_, size_;
};

} // namespace letterbox::postgres
