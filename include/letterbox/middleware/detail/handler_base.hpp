// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/config.hpp>
#include <letterbox/detail/run_inner.hpp>
#include <letterbox/detail/run_inner_async.hpp>
#include <letterbox/disposition.hpp>
#include <letterbox/handling.hpp>
#include <letterbox/middleware/detail/wrappable.hpp>

#include <boost/asio/awaitable.hpp>

#include <cstdint>
#include <optional>
#include <utility>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::middleware::detail {

/// What every layer's handler shares (`retry_handler`, `redelivery_handler`,
/// `dead_letter_handler`): the inner handler it wraps, `inner()`, and the one way a layer runs
/// it, whether it is synchronous or not.
///
/// `Derived` (CRTP) decides, from what one run of the inner handler gave, what the layer
/// returns: `decide(x, run, r)` gives that disposition, or nothing to run the inner handler
/// again at once with `run + 1` (an immediate retry; it calls `x.rerun` first). A layer's
/// handler is a `delivery_handler` around a synchronous inner handler, and an
/// `async_delivery_handler` (its call returns `asio::awaitable<disposition>`) around an
/// asynchronous one.
template <class Derived, wrappable Inner>
class handler_base {
public:
    const Inner& inner() const noexcept { return inner_; }

    disposition operator()(const handling& x) requires(!wraps_async<Inner>) {
        // Bounded: `decide` returns a disposition once its policy's attempts are spent.
        for (std::uint32_t run = x.run;; ++run) {
            disposition r = letterbox::detail::run_inner(inner_, x.with_run(run));
            if (std::optional<disposition> d = derived().decide(x, run, r))
                return std::move(*d);
        }
    }

    boost::asio::awaitable<disposition> operator()(handling x) requires wraps_async<Inner> {
        for (std::uint32_t run = x.run;; ++run) {
            const handling this_run = x.with_run(run);
            disposition r = co_await letterbox::detail::run_inner_async(inner_, this_run);
            if (std::optional<disposition> d = derived().decide(x, run, r))
                co_return std::move(*d);
        }
    }

protected:
    explicit handler_base(Inner inner)
        : inner_(std::move(inner)) {}

private:
    Derived& derived() noexcept { return static_cast<Derived&>(*this); }

    Inner inner_;
};

} // namespace letterbox::middleware::detail
