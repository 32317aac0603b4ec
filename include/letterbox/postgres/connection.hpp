// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/config.hpp>
#include <letterbox/postgres/param.hpp>
#include <letterbox/postgres/result.hpp>

#include <libpq-fe.h>

#include <chrono>
#include <initializer_list>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <system_error>
#include <unordered_map>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::postgres {

/// One libpq connection to a PostgreSQL server, with the statements it has prepared.
///
/// - `open` takes a libpq connection string, as key/value pairs (`host=127.0.0.1 port=5432
///   dbname=orders user=app password=...`) or as a URI (`postgresql://app:...@127.0.0.1/orders`),
///   with every libpq parameter and environment variable (`PGHOST`, `PGPASSWORD`, ...). Unless
///   the string says otherwise, it waits at most `connect_timeout` for the server and names itself
///   `application_name` (what `pg_stat_activity` shows).
/// - `exec(sql, params, ec)` runs one statement with `$1`, `$2`, ... bound to `params`, preparing
///   it on first use: the next runs of the same text reuse the server's plan.
/// - Errors are `errc::store_*` codes (`to_error_code` maps the SQLSTATE);
///   `last_error_message()` keeps the server's text. **No message this class keeps or returns
///   holds the password**: a connection string libpq cannot parse is reported without its text,
///   and the password is replaced by `***` wherever the server or libpq repeats it.
///
/// Blocking: every call waits for the server. letterbox never calls a store on an I/O thread
/// (the relay's store calls run on `relay_options::store_executor`); see docs/postgres.md.
///
/// Thread safety: one thread at a time (the database's pool lends each connection to one user).
class connection {
public:
    /// A closed connection (`is_open()` is false).
    connection() noexcept = default;

    /// Connects. On failure returns a closed connection and sets `ec`
    /// (`errc::invalid_argument` for a malformed string, `errc::store_unavailable` when the
    /// server refuses the login or the database does not exist, `errc::store_connection_lost`
    /// when it cannot be reached); `error_message` (if given) receives why, without the password.
    static connection open(std::string_view conninfo, std::chrono::seconds connect_timeout,
                           std::string_view application_name, std::error_code& ec,
                           std::string* error_message = nullptr);

    connection(connection&&) noexcept = default;
    connection& operator=(connection&&) noexcept = default;
    connection(const connection&) = delete;
    connection& operator=(const connection&) = delete;
    /// Closes the connection; the server rolls back a transaction left open.
    ~connection() = default;

    bool is_open() const noexcept { return state_ != nullptr; }
    PGconn* native_handle() const noexcept { return state_ ? state_->conn : nullptr; }

    /// Runs one or more `;`-separated statements without parameters (the simple query
    /// protocol), discarding any rows.
    [[nodiscard]] std::error_code exec(std::string_view sql);

    /// Runs one statement with its parameters, preparing it on this connection on first use.
    /// On failure returns an empty result and sets `ec`.
    result exec(std::string_view sql, std::span<const param> params, std::error_code& ec);
    result exec(std::string_view sql, std::initializer_list<param> params, std::error_code& ec) {
        return exec(sql, std::span<const param>(params.begin(), params.size()), ec);
    }

    /// Whether a transaction is open (`BEGIN` was run and not yet ended), failed or not.
    bool in_transaction() const noexcept;
    /// Whether the open transaction failed: the server refuses every statement until it is
    /// rolled back, and a `COMMIT` would roll it back.
    bool in_failed_transaction() const noexcept;
    /// Whether the connection to the server is lost (or was never made).
    bool is_broken() const noexcept;

    /// The server's or libpq's text for the most recent failure, without the password; empty
    /// if none.
    const std::string& last_error_message() const noexcept;
    /// The SQLSTATE of the most recent failure, empty if there was none or no server reply.
    const std::string& last_sqlstate() const noexcept;

private:
    struct state {
        PGconn* conn = nullptr;
        std::unordered_map<std::string, std::string> prepared; // SQL text -> statement name
        std::string password;                                  // to scrub from messages
        std::string last_error;
        std::string last_sqlstate;
        state() = default;
        state(const state&) = delete;
        state& operator=(const state&) = delete;
        ~state() {
            if (conn)
                PQfinish(conn);
        }
    };

    std::error_code fail_with(PGresult* r, std::error_code fallback);

    std::unique_ptr<state> state_;
};

} // namespace letterbox::postgres

#if LETTERBOX_HEADER_ONLY
#include <letterbox/postgres/impl/connection.hpp>
#endif
