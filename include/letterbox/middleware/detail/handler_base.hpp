// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/config.hpp>
#include <letterbox/detail/run_inner.hpp>
#include <letterbox/disposition.hpp>
#include <letterbox/handling.hpp>
#include <letterbox/middleware/detail/wrappable.hpp>

#include <utility>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::middleware::detail {

/// What every layer's handler shares (`retry_handler`, `redelivery_handler`,
/// `dead_letter_handler`): the inner handler it wraps, `inner()`, and running it once.
template <wrappable Inner>
class handler_base {
public:
    const Inner& inner() const noexcept { return inner_; }

protected:
    explicit handler_base(Inner inner)
        : inner_(std::move(inner)) {}

    /// Runs the inner handler once for `x`, its exceptions and error codes turned into
    /// `disposition::fail` (`run_inner`).
    disposition call_inner(const handling& x) { return detail::run_inner(inner_, x); }

private:
    Inner inner_;
};

} // namespace letterbox::middleware::detail
