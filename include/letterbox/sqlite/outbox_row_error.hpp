// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/config.hpp>

#include <cstdint>
#include <string>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::sqlite {

/// A row of `letterbox_outbox` that could not be read as an `outbox_record`, as
/// `outbox_store::list` reports it when it lists the other rows anyway: which row, and what is
/// wrong with it.
///
/// Such a row was not written by letterbox's stores (or was damaged since): a `message_id`
/// that is not a UUID, a `headers` or `properties` blob that is not letterbox's encoding, a
/// status or an attempt count out of range.
///
/// Example:
///
///     std::vector<letterbox::sqlite::outbox_row_error> unreadable;
///     auto rows = outbox.list(query, unreadable, ec);
///     for (const auto& bad : unreadable)
///         log("outbox row " + std::to_string(bad.sequence) + ": " + bad.what);
struct outbox_row_error {
    /// The row's `sequence`, which identifies it even when its message id is unreadable.
    std::uint64_t sequence = 0;
    /// The row's `message_id` column as stored: any bytes, not necessarily UTF-8 or printable.
    /// Escape it before showing it.
    std::string message_id{};
    /// What is wrong, in words: "message_id is not a UUID", "headers are not letterbox's
    /// encoding", ... (several, separated by "; ", when several columns are wrong).
    std::string what{};
};

} // namespace letterbox::sqlite
