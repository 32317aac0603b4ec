// SPDX-License-Identifier: BSL-1.0
#pragma once

// Definitions of letterbox/sqlite/saga_store.hpp; included at its end.

#include <letterbox/config.hpp>
#include <letterbox/error.hpp>
#include <letterbox/sqlite/detail/database_state.hpp>
#include <letterbox/sqlite/detail/time.hpp>
#include <letterbox/sqlite/saga_store.hpp>
#include <letterbox/sqlite/statement.hpp>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::sqlite {

namespace detail {

/// Reads the instance the statement stands on (columns saga_type, id, correlation, state,
/// version, data, finished, updated_at), without its timeouts.
LETTERBOX_DECL saga_instance read_saga_instance(const statement& st) {
    saga_instance instance;
    instance.saga_type = std::string(st.column_text(0));
    instance.id = std::string(st.column_text(1));
    instance.correlation = std::string(st.column_text(2));
    instance.state = std::string(st.column_text(3));
    instance.version = static_cast<std::uint64_t>(st.column_int64(4)); // >= 1 (a CHECK)
    instance.data = std::string(st.column_text(5));
    instance.finished = st.column_int64(6) != 0;
    instance.updated_at = from_column(st.column_int64(7));
    return instance;
}

/// Appends the stored timeouts of the instance (`type`, `id`) to `timeouts`, by due time, then
/// name.
LETTERBOX_DECL std::error_code read_saga_timeouts(connection& c, std::string_view type,
                                                  std::string_view id,
                                                  std::vector<saga_timeout>& timeouts) {
    std::error_code ec;
    auto st = prepare_bound(c,
                            "SELECT name, due_at FROM letterbox_saga_timeout "
                            "WHERE saga_type = ?1 AND id = ?2 ORDER BY due_at, name",
                            ec, type, id);
    if (ec)
        return ec;
    while (st->step(ec))
        timeouts.push_back({std::string(st->column_text(0)), from_column(st->column_int64(1))});
    return ec;
}

} // namespace detail

LETTERBOX_DECL std::error_code saga_store::check_write(const unit_of_work& uow,
                                                       const saga_instance& instance) const {
    if (!db_)
        return errc::closed;
    if (auto ec = uow.check_writable(*db_))
        return ec;
    if (!has_distinct_timeout_names(instance))
        return errc::invalid_argument;
    return {};
}

LETTERBOX_DECL std::error_code saga_store::insert(unit_of_work& uow,
                                                  const saga_instance& instance) {
    if (auto ec = check_write(uow, instance))
        return ec;
    if (instance.version != 0)
        return errc::precondition_failed; // the store numbers versions
    if (instance.saga_type.empty() || instance.id.empty() || instance.correlation.empty())
        return errc::invalid_argument;
    auto& conn = uow.connection();
    std::error_code ec;
    {
        auto st = detail::prepare_bound(
            conn,
            "INSERT INTO letterbox_saga (saga_type, id, correlation, state, version, data, "
            "finished, updated_at) VALUES (?1, ?2, ?3, ?4, 1, ?5, ?6, ?7) ON CONFLICT DO NOTHING",
            ec, instance.saga_type, instance.id, instance.correlation, instance.state,
            instance.data, std::int64_t{instance.finished ? 1 : 0},
            detail::to_column(instance.updated_at));
        if (!ec)
            ec = st->execute();
    } // the statement is reset before anything else runs on the connection
    // The keys (saga_type, id) and (saga_type, correlation) decide, whether the instance that
    // holds them is committed or staged in this unit: a taken key inserts nothing, and only this
    // statement did nothing, so the unit stays usable.
    return settle_write(uow, instance, ec);
}

LETTERBOX_DECL std::error_code saga_store::update(unit_of_work& uow,
                                                  const saga_instance& instance) {
    if (auto ec = check_write(uow, instance))
        return ec;
    auto& conn = uow.connection();
    std::error_code ec;
    {
        // A version beyond what SQLite stores becomes negative here, and matches no instance.
        auto st = detail::prepare_bound(
            conn,
            "UPDATE letterbox_saga SET state = ?3, data = ?4, finished = ?5, updated_at = ?6, "
            "version = version + 1 WHERE saga_type = ?1 AND id = ?2 AND version = ?7",
            ec, instance.saga_type, instance.id, instance.state, instance.data,
            std::int64_t{instance.finished ? 1 : 0}, detail::to_column(instance.updated_at),
            static_cast<std::int64_t>(instance.version));
        if (!ec)
            ec = st->execute();
    }
    // The unit holds the write lock, so the version this statement compared is the one the
    // commit keeps: no other unit can move it on in between. Not at the version the caller read
    // (or absent): nothing was written, and the unit stays usable.
    return settle_write(uow, instance, ec);
}

LETTERBOX_DECL std::error_code
saga_store::settle_write(unit_of_work& uow, const saga_instance& instance, std::error_code ec) {
    if (!ec) {
        if (uow.connection().changes() == 0)
            return errc::concurrency_conflict;
        ec = replace_timeouts(uow.connection(), instance);
    }
    if (ec)
        uow.fail(ec);
    return ec;
}

LETTERBOX_DECL std::error_code saga_store::replace_timeouts(connection& c,
                                                            const saga_instance& instance) {
    std::error_code ec;
    {
        auto st = detail::prepare_bound(
            c, "DELETE FROM letterbox_saga_timeout WHERE saga_type = ?1 AND id = ?2", ec,
            instance.saga_type, instance.id);
        if (!ec)
            ec = st->execute();
    }
    for (const auto& timeout : instance.timeouts) {
        if (ec)
            break;
        auto st = detail::prepare_bound(c,
                                        "INSERT INTO letterbox_saga_timeout (saga_type, id, name, "
                                        "due_at) VALUES (?1, ?2, ?3, ?4)",
                                        ec, instance.saga_type, instance.id, timeout.name,
                                        detail::to_column(timeout.due));
        if (!ec)
            ec = st->execute();
    }
    return ec;
}

LETTERBOX_DECL std::optional<saga_instance>
saga_store::find(std::string_view type, std::string_view id, std::error_code& ec) {
    return find_where("SELECT saga_type, id, correlation, state, version, data, finished, "
                      "updated_at FROM letterbox_saga WHERE saga_type = ?1 AND id = ?2",
                      type, id, ec);
}

LETTERBOX_DECL std::optional<saga_instance>
saga_store::find_by_correlation(std::string_view type, std::string_view correlation,
                                std::error_code& ec) {
    return find_where("SELECT saga_type, id, correlation, state, version, data, finished, "
                      "updated_at FROM letterbox_saga WHERE saga_type = ?1 AND correlation = ?2",
                      type, correlation, ec);
}

LETTERBOX_DECL std::optional<saga_instance> saga_store::find_where(std::string_view sql,
                                                                   std::string_view type,
                                                                   std::string_view key,
                                                                   std::error_code& ec) {
    return detail::run_for_result<std::optional<saga_instance>>(
        db_.get(), ec, [&](connection& c, std::optional<saga_instance>& found) -> std::error_code {
            found.reset();                        // a retry starts over
            detail::read_transaction snapshot(c); // the instance and its timeouts, one state
            if (auto e = snapshot.begin())
                return e;
            std::error_code e;
            {
                auto st = detail::prepare_bound(c, sql, e, type, key);
                if (e)
                    return e;
                if (!st->step(e))
                    return e; // none, or a failure
                found = detail::read_saga_instance(*st);
            }
            return detail::read_saga_timeouts(c, found->saga_type, found->id, found->timeouts);
        });
}

LETTERBOX_DECL std::size_t saga_store::size(std::error_code& ec) {
    return detail::count_rows(db_.get(), "SELECT count(*) FROM letterbox_saga", ec);
}

LETTERBOX_DECL std::vector<saga_timeout_due>
saga_store::due_timeouts(store_time now, std::size_t limit, std::error_code& ec) {
    const auto rows = static_cast<std::int64_t>(std::min<std::size_t>(
        limit, static_cast<std::size_t>(std::numeric_limits<std::int64_t>::max())));
    return detail::run_for_result<std::vector<saga_timeout_due>>(
        db_.get(), ec, [&](connection& c, std::vector<saga_timeout_due>& due) -> std::error_code {
            due.clear(); // a retry starts over
            std::error_code e;
            auto st = detail::prepare_bound(
                c,
                "SELECT saga_type, id, name, due_at FROM letterbox_saga_timeout "
                "WHERE due_at <= ?1 ORDER BY due_at, saga_type, id, name LIMIT ?2",
                e, detail::to_column(now), rows);
            if (e)
                return e;
            while (st->step(e))
                due.push_back({std::string(st->column_text(0)), std::string(st->column_text(1)),
                               std::string(st->column_text(2)),
                               detail::from_column(st->column_int64(3))});
            return e;
        });
}

LETTERBOX_DECL std::size_t saga_store::purge_finished(store_time older_than, std::error_code& ec) {
    // The trigger letterbox_saga_deleted deletes their timeouts in the same statement.
    return detail::count_changes_at(
        db_.get(), "DELETE FROM letterbox_saga WHERE finished = 1 AND updated_at < ?1", older_than,
        ec);
}

} // namespace letterbox::sqlite
