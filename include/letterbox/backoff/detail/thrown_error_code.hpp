// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/config.hpp>

#include <exception>
#include <system_error>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::backoff::detail {

/// The error code of the exception `p` holds when it is a `std::system_error` (so also a
/// `letterbox::error`), or an empty code when `p` is null or holds anything else.
inline std::error_code thrown_error_code(const std::exception_ptr& p) {
    if (!p) {
        return {};
    }
    try {
        std::rethrow_exception(p);
    } catch (const std::system_error& e) {
        return e.code();
    } catch (...) {
        return {};
    }
}

/// Whether `p` holds an exception of type `E` or of a type derived from it (found the only
/// portable way: by rethrowing it).
template <class E>
bool holds_exception(const std::exception_ptr& p) {
    if (!p) {
        return false;
    }
    try {
        std::rethrow_exception(p);
    } catch (const E&) {
        return true;
    } catch (...) {
        return false;
    }
}

} // namespace letterbox::backoff::detail
