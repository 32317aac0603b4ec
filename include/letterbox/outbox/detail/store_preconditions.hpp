// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/config.hpp>
#include <letterbox/error.hpp>
#include <letterbox/outbox_record.hpp>
#include <letterbox/payload.hpp>

#include <string_view>
#include <system_error>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::detail {

/// What every outbox_store model checks of an entry before it stages it, so that the in-memory,
/// SQLite and PostgreSQL stores refuse the same entries with the same codes: a message without
/// an id is `precondition_failed` (the relay and the inbox key on it), and a payload the stores
/// cannot hold is what `validate_payload` says.
inline std::error_code check_outbox_entry(const outbox_entry& entry) noexcept {
    if (entry.msg.id.is_nil())
        return errc::precondition_failed;
    return validate_payload(entry.msg);
}

/// What every outbox_store model checks before a claim reads anything: a store that is not open
/// is `closed`, and an empty owner is `precondition_failed` (a lease needs a name).
inline std::error_code check_claim(bool open, std::string_view owner) noexcept {
    if (!open)
        return errc::closed;
    if (owner.empty())
        return errc::precondition_failed;
    return {};
}

} // namespace letterbox::detail
