// SPDX-License-Identifier: BSL-1.0
#pragma once

// Definitions of letterbox/sqlite/snapshot_store.hpp; included at its end.

#include <letterbox/config.hpp>
#include <letterbox/error.hpp>
#include <letterbox/sqlite/detail/database_state.hpp>
#include <letterbox/sqlite/detail/time.hpp>
#include <letterbox/sqlite/snapshot_store.hpp>
#include <letterbox/sqlite/statement.hpp>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <string>
#include <string_view>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::sqlite {

LETTERBOX_DECL std::error_code snapshot_store::save(unit_of_work& uow, const snapshot& snap) {
    if (!db_)
        return errc::closed;
    if (auto ec = uow.check_writable(*db_))
        return ec;
    constexpr auto max_version =
        static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max());
    if (snap.stream.empty() || snap.version == 0 || snap.version > max_version)
        return errc::invalid_argument;
    auto& conn = uow.connection();
    std::error_code ec;
    {
        auto st = detail::prepare_bound(
            conn,
            "INSERT INTO letterbox_snapshot (stream, version, recorded_at, fold_version, state) "
            "VALUES (?1, ?2, ?3, ?4, ?5) ON CONFLICT (stream, version) DO UPDATE SET "
            "recorded_at = excluded.recorded_at, fold_version = excluded.fold_version, "
            "state = excluded.state",
            ec, snap.stream, static_cast<std::int64_t>(snap.version),
            detail::to_column(snap.recorded_at), std::int64_t{snap.fold_version}, snap.state);
        if (!ec)
            ec = st->execute();
    } // the statement is reset before anything else runs on the connection
    if (ec)
        uow.fail(ec); // a database error: nothing the caller wrote in the unit may commit
    return ec;
}

LETTERBOX_DECL std::optional<snapshot> snapshot_store::latest(std::string_view stream,
                                                              std::uint64_t version,
                                                              store_time time,
                                                              std::error_code& ec) {
    // A bound beyond what an INTEGER holds admits every stored version.
    constexpr auto max_version =
        static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max());
    const auto bound = static_cast<std::int64_t>(std::min(version, max_version));
    return detail::run_for_result<std::optional<snapshot>>(
        db_.get(), ec, [&](connection& c, std::optional<snapshot>& found) -> std::error_code {
            found.reset(); // a retry starts over
            std::error_code e;
            // Backwards along the primary key from `bound`: the first row recorded by `time`.
            auto st = detail::prepare_bound(
                c,
                "SELECT stream, version, recorded_at, fold_version, state FROM letterbox_snapshot "
                "WHERE stream = ?1 AND version <= ?2 AND recorded_at <= ?3 "
                "ORDER BY version DESC LIMIT 1",
                e, stream, bound, detail::to_column(time));
            if (e)
                return e;
            if (!st->step(e))
                return e; // none, or a failure
            found.emplace();
            found->stream = std::string(st->column_text(0));
            found->version = static_cast<std::uint64_t>(st->column_int64(1)); // >= 1 (a CHECK)
            found->recorded_at = detail::from_column(st->column_int64(2));
            found->fold_version = static_cast<std::uint32_t>(st->column_int64(3));
            found->state = std::string(st->column_text(4));
            return {};
        });
}

LETTERBOX_DECL std::size_t snapshot_store::drop(std::string_view stream, std::error_code& ec) {
    if (stream.empty()) {
        ec = errc::invalid_argument; // never "every stream"
        return 0;
    }
    return detail::run_for_result<std::size_t>(
        db_.get(), ec, [&](connection& c, std::size_t& dropped) -> std::error_code {
            std::error_code e;
            auto st = detail::prepare_bound(c, "DELETE FROM letterbox_snapshot WHERE stream = ?1",
                                            e, stream);
            if (e)
                return e;
            if (auto failed = st->execute())
                return failed;
            dropped = static_cast<std::size_t>(c.changes());
            return {};
        });
}

} // namespace letterbox::sqlite
