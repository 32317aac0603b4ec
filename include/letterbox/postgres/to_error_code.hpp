// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/config.hpp>
#include <letterbox/error.hpp>

#include <string_view>
#include <system_error>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::postgres {

/// Maps a PostgreSQL SQLSTATE (the five characters of an error report) to letterbox's error
/// vocabulary. Classes first, then the codes that letterbox tells apart:
///
/// | SQLSTATE | `letterbox::errc` |
/// | --- | --- |
/// | `""` (no error), `00000` | success (an empty code) |
/// | `40001` serialization_failure | `store_serialization_failure` (run the unit again) |
/// | `40P01` deadlock_detected | `store_deadlock` (run the unit again) |
/// | `23505` unique_violation | `store_unique_violation` |
/// | `25006` read_only_sql_transaction, `42501` insufficient_privilege | `store_readonly` |
/// | `53100` disk_full | `store_full` |
/// | `58030` io_error | `store_io_error` |
/// | `XX001` data_corrupted, `XX002` index_corrupted | `store_corrupt` |
/// | `55P03` lock_not_available, `57014` query_canceled (a `lock_timeout` or `statement_timeout`) |
/// `store_busy` | | class `08` (connection exception), `57P01` to `57P03` (the server shutting down
/// or starting), `53300` too_many_connections | `store_connection_lost` | | class `28`
/// (authorization), `3D000` invalid_catalog_name | `store_unavailable` | | anything else |
/// `store_error` |
///
/// An error code cannot carry the server's text: `connection::last_error_message()` and
/// `database::last_error_message()` keep it (without the password). The stores report their own
/// keys' conflicts as `errc::duplicate_message_id` or `errc::already_processed`.
inline std::error_code to_error_code(std::string_view sqlstate) noexcept {
    if (sqlstate.empty() || sqlstate == "00000")
        return {};
    if (sqlstate == "40001")
        return errc::store_serialization_failure;
    if (sqlstate == "40P01")
        return errc::store_deadlock;
    if (sqlstate == "23505")
        return errc::store_unique_violation;
    if (sqlstate == "25006" || sqlstate == "42501")
        return errc::store_readonly;
    if (sqlstate == "53100")
        return errc::store_full;
    if (sqlstate == "58030")
        return errc::store_io_error;
    if (sqlstate == "XX001" || sqlstate == "XX002")
        return errc::store_corrupt;
    if (sqlstate == "55P03" || sqlstate == "57014")
        return errc::store_busy;
    if (sqlstate.substr(0, 2) == "08" || sqlstate == "57P01" || sqlstate == "57P02" ||
        sqlstate == "57P03" || sqlstate == "53300")
        return errc::store_connection_lost;
    if (sqlstate.substr(0, 2) == "28" || sqlstate == "3D000")
        return errc::store_unavailable;
    return errc::store_error;
}

} // namespace letterbox::postgres
