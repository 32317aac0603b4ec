// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/config.hpp>
#include <letterbox/error.hpp>

#include <string>
#include <system_error>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::in_memory {

/// Why a channel or connection closed: the error (a reply code, or `errc::closed` for a
/// close asked by the client) and RabbitMQ's reply text, e.g.
/// `PRECONDITION_FAILED - unknown delivery tag 3`.
struct close_reason {
    std::error_code code{};
    std::string text{};
};

} // namespace letterbox::in_memory
