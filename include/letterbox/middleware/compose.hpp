// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/concepts/detail/check_handler.hpp>
#include <letterbox/config.hpp>
#include <letterbox/detail/run_inner.hpp>
#include <letterbox/detail/saturating.hpp>
#include <letterbox/error.hpp>
#include <letterbox/middleware/detail/duration_text.hpp>
#include <letterbox/middleware/detail/wrappable.hpp>
#include <letterbox/middleware/stage.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::middleware {

/// A middleware layer: a value with a `stage` that wraps a handler into a delivery handler
/// (`retry_layer`, `redelivery_layer`, `dead_letter_layer`).
template <class L>
concept layer = requires {
    { L::stage } -> std::convertible_to<middleware::stage>;
};

namespace detail {

template <stage S, class... L>
constexpr std::size_t index_of_stage() {
    constexpr stage stages[] = {L::stage..., stage::dead_letter};
    for (std::size_t i = 0; i < sizeof...(L); ++i)
        if (stages[i] == S)
            return i;
    return sizeof...(L);
}

template <class... L>
constexpr bool stages_unique() {
    constexpr stage stages[] = {L::stage..., stage::dead_letter};
    for (std::size_t i = 0; i < sizeof...(L); ++i)
        for (std::size_t j = i + 1; j < sizeof...(L); ++j)
            if (stages[i] == stages[j])
                return false;
    return true;
}

template <stage S, class H, class... L>
auto wrap_stage(H h, const std::tuple<L...>& layers) {
    constexpr std::size_t i = index_of_stage<S, L...>();
    if constexpr (i == sizeof...(L))
        return h;
    else
        return std::get<i>(layers).wrap(std::move(h));
}

} // namespace detail

/// The redelivery horizon of a set of layers: the longest time between a message's first
/// delivery and its last redelivery, counting the broker-level delays of a `redelivery`
/// layer and, for each of its deliveries, the in-process delays of a `retry` layer.
template <layer... L>
std::chrono::milliseconds redelivery_horizon(const L&... layers) {
    std::chrono::milliseconds broker{0}, in_process{0};
    std::uint32_t deliveries = 1;
    auto add = [&](const auto& l) {
        using T = std::decay_t<decltype(l)>;
        if constexpr (T::stage == stage::redelivery) {
            broker = l.horizon();
            deliveries = l.max_attempts();
        } else if constexpr (T::stage == stage::retry) {
            in_process = l.horizon();
        }
    };
    (add(layers), ...);
    (void)add; // with no layers, nothing calls it
    return letterbox::detail::saturating_add(
        broker, letterbox::detail::saturating_mul(in_process, deliveries));
}

/// Refuses a pipeline whose inbox forgets a message before its last redelivery (DESIGN
/// §3.8): throws `letterbox::error(errc::dedup_window_too_short)` with both durations in its
/// text when `retention` is shorter than `horizon`.
inline void check_dedup_window(std::chrono::milliseconds retention,
                               std::chrono::milliseconds horizon) {
    if (retention >= horizon)
        return;
    throw error(errc::dedup_window_too_short,
                "inbox retention " + detail::duration_text(retention) +
                    " is shorter than the redelivery horizon " + detail::duration_text(horizon) +
                    ": keep inbox records at least " + detail::duration_text(horizon) +
                    " or shorten the retry schedule");
}

namespace detail {
/// The dedup-window check of `compose` and `compose_in_order`: when `h` reports an inbox
/// retention, refuses it if it is shorter than the layers' redelivery horizon.
template <class H, class... L>
void check_retention(H& h, const L&... layers) {
    if constexpr (requires { h.retention(); })
        if (const std::optional<std::chrono::milliseconds> r = h.retention())
            check_dedup_window(*r, redelivery_horizon(layers...));
}
} // namespace detail

/// Builds a pipeline around `h` in the documented order (DESIGN §3.6), whatever order the
/// layers are given in, outermost first:
///
///     dead_letter  >  redelivery  >  retry  >  h (the idempotent unit of work, the handler)
///
/// so that a failed attempt leaves no effect, no inbox record and no outgoing message, the
/// short in-process retries happen inside each broker delivery, the broker-level retries
/// hold no prefetch slot, and only what all of them gave up on is dead-lettered.
///
/// Each layer may appear at most once, and any may be left out. When `h` reports an inbox
/// retention (`idempotent(...).with_retention(d)`), the pipeline is refused with
/// `errc::dedup_window_too_short` if that retention is shorter than the layers'
/// `redelivery_horizon`.
///
/// For another order, nest the layers by hand (`dead_letter(...)(retry(...)(h))`) or use
/// `compose_in_order`.
template <class H, layer... L>
auto compose(H h, L... layers) {
    static_assert(letterbox::detail::check_handler<H>());
    static_assert(detail::stages_unique<L...>(), "compose: each middleware stage at most once");
    detail::check_retention(h, layers...);
    const std::tuple<L...> all(std::move(layers)...);
    auto a = detail::wrap_stage<stage::retry>(std::move(h), all);
    auto b = detail::wrap_stage<stage::redelivery>(std::move(a), all);
    return detail::wrap_stage<stage::dead_letter>(std::move(b), all);
}

namespace detail {
template <class H>
H wrap_in_order(H h) {
    return h;
}
template <class H, class First, class... Rest>
auto wrap_in_order(H h, const First& outer, const Rest&... rest) {
    return outer.wrap(wrap_in_order(std::move(h), rest...));
}
} // namespace detail

/// Like `compose`, but in exactly the order given, outermost first. The dedup-window check
/// still applies.
template <class H, layer... L>
auto compose_in_order(H h, L... layers) {
    static_assert(letterbox::detail::check_handler<H>());
    detail::check_retention(h, layers...);
    return detail::wrap_in_order(std::move(h), layers...);
}

} // namespace letterbox::middleware
