// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/config.hpp>
#include <letterbox/ops/readiness.hpp>
#include <letterbox/transport/in_memory/profile_for_version.hpp>

#include <concepts>
#include <functional>
#include <string>

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

/// `T` also tells, from any thread and without blocking, which broker it is connected to:
/// `t.broker()` returns an optional (a `std::optional`, or anything testable and dereferenced
/// the same way) of an `in_memory::profile_match` (the broker's version and the profile
/// assumed for it), or of a type derived from it with a string `product`.
///
/// Model: `letterbox::amqp::transport` (`broker()` gives an `amqp::broker_info`).
template <class T>
concept broker_version_reporter = connection_state_reporter<T> && requires(const T& t) {
    static_cast<bool>(t.broker());
    { *t.broker() } -> std::convertible_to<const in_memory::profile_match&>;
};

namespace detail {

/// "RabbitMQ 3.10.8 (broker profile 3.10)", as `amqp::broker_info::describe` says it, followed
/// by "; warning: " and the note when the profile is not the version's own.
template <class Broker>
std::string describe_broker(const Broker& b) {
    const in_memory::profile_match& m = b;
    std::string out;
    if constexpr (requires {
                      { b.product } -> std::convertible_to<const std::string&>;
                  })
        out = b.product;
    if (out.empty())
        out = "the broker";
    out += m.version.empty() ? std::string(" of an unknown version") : " " + m.version;
    out += " (broker profile ";
    out += m.profile.name;
    out += ')';
    if (!m.exact)
        out += "; warning: " + m.note;
    return out;
}

} // namespace detail

/// A readiness check that passes while `transport` is connected: detail "connected", or
/// "not connected to the broker" (a transport that is reconnecting, or closed).
///
/// A transport that also says which broker it reached (`broker_version_reporter`, such as
/// `amqp::transport`) gets it in the detail while connected: "connected to RabbitMQ 3.10.8
/// (broker profile 3.10)". When letterbox has no profile of that version and assumes the nearest,
/// the detail ends with "; warning: " and why (the check still passes: the broker works; the
/// behaviours letterbox expects of it may differ). See docs/amqp.md, "Broker version".
///
/// `transport` must outlive the check (and so the `http_server` it is added to).
///
/// Example:
///
///     server.add_readiness_check("transport", letterbox::ops::connection_check(transport));
template <connection_state_reporter Transport>
std::function<readiness()> connection_check(const Transport& transport) {
    return [t = &transport] {
        if (!t->is_connected())
            return readiness{false, "not connected to the broker"};
        if constexpr (broker_version_reporter<Transport>) {
            if (const auto b = t->broker())
                return readiness{true, "connected to " + detail::describe_broker(*b)};
        }
        return readiness{true, "connected"};
    };
}

} // namespace letterbox::ops
