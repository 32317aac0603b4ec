// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/config.hpp>
#include <letterbox/error.hpp>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::backoff::detail {

/// Throws `letterbox::error(errc::invalid_argument, what)` unless `ok`: the retry policies'
/// constructors reject a configuration outside its documented range at once, rather than
/// scheduling nonsense later.
inline void check_argument(bool ok, const char* what) {
    if (!ok) {
        throw letterbox::error(errc::invalid_argument, what);
    }
}

} // namespace letterbox::backoff::detail
