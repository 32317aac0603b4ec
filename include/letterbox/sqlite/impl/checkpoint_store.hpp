// SPDX-License-Identifier: BSL-1.0
#pragma once

// Definitions of letterbox/sqlite/checkpoint_store.hpp; included at its end.

#include <letterbox/config.hpp>
#include <letterbox/error.hpp>
#include <letterbox/sqlite/checkpoint_store.hpp>
#include <letterbox/sqlite/detail/database_state.hpp>
#include <letterbox/sqlite/statement.hpp>

#include <cstdint>
#include <limits>
#include <string_view>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::sqlite {

LETTERBOX_DECL std::uint64_t checkpoint_store::position(std::string_view name,
                                                        std::error_code& ec) {
    return detail::run_for_result<std::uint64_t>(
        db_.get(), ec, [&](connection& c, std::uint64_t& at) -> std::error_code {
            at = 0; // a retry starts over; no row reads as 0
            std::error_code e;
            auto st = detail::prepare_bound(
                c, "SELECT position FROM letterbox_checkpoint WHERE name = ?1", e, name);
            if (e)
                return e;
            if (st->step(e))
                at = static_cast<std::uint64_t>(st->column_int64(0)); // >= 0 (a CHECK)
            return e;
        });
}

LETTERBOX_DECL std::error_code checkpoint_store::save(unit_of_work& uow, std::string_view name,
                                                      std::uint64_t expected,
                                                      std::uint64_t position) {
    if (!db_)
        return errc::closed;
    if (auto ec = uow.check_writable(*db_))
        return ec;
    constexpr auto max = static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max());
    if (name.empty() || position > max)
        return errc::invalid_argument;
    if (expected > max)
        return errc::concurrency_conflict; // no stored checkpoint is there
    auto& conn = uow.connection();
    std::error_code ec;
    {
        // From 0: no row and a row at 0 both qualify (a rebuild keeps its row, at 0), so an
        // insert that finds the name taken updates it only if it is still at 0. From any other
        // position, the row must be there, at that position.
        auto st = expected == 0
                      ? detail::prepare_bound(
                            conn,
                            "INSERT INTO letterbox_checkpoint (name, position) VALUES (?1, ?2) "
                            "ON CONFLICT (name) DO UPDATE SET position = excluded.position "
                            "WHERE letterbox_checkpoint.position = 0",
                            ec, name, static_cast<std::int64_t>(position))
                      : detail::prepare_bound(conn,
                                              "UPDATE letterbox_checkpoint SET position = ?2 "
                                              "WHERE name = ?1 AND position = ?3",
                                              ec, name, static_cast<std::int64_t>(position),
                                              static_cast<std::int64_t>(expected));
        if (!ec)
            ec = st->execute();
    } // the statement is reset before anything else runs on the connection
    if (ec) {
        uow.fail(ec); // a database error: nothing the caller wrote in the unit may commit
        return ec;
    }
    // The unit holds the write lock, so the position this statement compared is the one the
    // commit keeps: no other unit can move it in between. Not at `expected`: nothing was
    // written, and the unit stays usable.
    if (conn.changes() == 0)
        return errc::concurrency_conflict;
    return {};
}

} // namespace letterbox::sqlite
