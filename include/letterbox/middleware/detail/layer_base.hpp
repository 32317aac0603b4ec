// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/config.hpp>
#include <letterbox/detail/run_inner.hpp>
#include <letterbox/middleware/detail/wrappable.hpp>
#include <letterbox/middleware/stage.hpp>

#include <tuple>
#include <utility>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::middleware::detail {

/// What every layer class shares (`retry_layer`, `redelivery_layer`, `dead_letter_layer`): its
/// `stage`, and making its handler of an inner handler, as `layer.wrap(inner)` or
/// `layer(inner)`.
///
/// `Derived` (CRTP) names its handler `handler_type<Inner>` and returns, from
/// `handler_arguments()`, a tuple of references to what the handler's constructor takes before
/// the inner handler; each `wrap` builds a new handler from copies of them. Both may be private
/// if `Derived` befriends this base.
template <class Derived, middleware::stage S>
class layer_base {
public:
    static constexpr middleware::stage stage = S;

    // The return types are deduced: `Derived` is incomplete where this base is instantiated.
    template <wrappable Inner>
    auto wrap(Inner inner) const {
        using handler = typename Derived::template handler_type<Inner>;
        return std::apply(
            [&inner](auto&... arguments) { return handler(arguments..., std::move(inner)); },
            static_cast<const Derived&>(*this).handler_arguments());
    }
    template <wrappable Inner>
    auto operator()(Inner inner) const {
        return wrap(std::move(inner));
    }
};

} // namespace letterbox::middleware::detail
