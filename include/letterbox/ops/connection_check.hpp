// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/config.hpp>
#include <letterbox/ops/readiness.hpp>

#include <concepts>
#include <functional>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::ops {

/// `T` tells, from any thread and without blocking, whether it is connected to its broker:
/// `t.is_connected()` is `noexcept` and returns something convertible to `bool`.
///
/// Models: `letterbox::in_memory::transport`, `letterbox::amqp::transport`.
template <class T>
concept connection_state_reporter = requires(const T& t) {
    { t.is_connected() }
    noexcept->std::convertible_to<bool>;
};

/// A readiness check that passes while `transport` is connected: detail "connected", or
/// "not connected to the broker" (a transport that is reconnecting, or closed).
///
/// `transport` must outlive the check (and so the `http_server` it is added to).
///
/// Example:
///
///     server.add_readiness_check("transport", letterbox::ops::connection_check(transport));
template <connection_state_reporter Transport>
std::function<readiness()> connection_check(const Transport& transport) {
    return [t = &transport] {
        if (t->is_connected())
            return readiness{true, "connected"};
        return readiness{false, "not connected to the broker"};
    };
}

} // namespace letterbox::ops
