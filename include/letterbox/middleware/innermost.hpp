// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/config.hpp>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::middleware {

/// The handler at the centre of a pipeline: `h` itself if it wraps nothing, else the innermost
/// handler of the layers (`inner()`, recursively). To read what the centre counted, such as
/// the idempotent handler's statistics in a consumer that a `receive_endpoint` built:
///
///     const auto duplicates = middleware::innermost(worker.handler()).stats().duplicates;
template <class H>
const auto& innermost(const H& h) noexcept {
    if constexpr (requires { h.inner(); })
        return innermost(h.inner());
    else
        return h;
}

} // namespace letterbox::middleware
