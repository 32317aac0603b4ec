// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/amqp/broker_info.hpp>
#include <letterbox/amqp/endpoint.hpp>
#include <letterbox/config.hpp>

#include <cstdint>
#include <string_view>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::amqp {

/// Something an `amqp::transport` learned about its broker, as its observer
/// (`transport_options::on_event`) sees it. Each new connection gives `broker_identified`,
/// then, when they apply, the two warnings `broker_version_not_recognised` and
/// `broker_version_changed`.
///
/// Example (warnings to the log):
///
///     options.on_event = [](const letterbox::amqp::transport_event& e) {
///         if (e.is_warning())
///             std::fprintf(stderr, "warning: %.*s\n", int(e.text.size()), e.text.data());
///     };
struct transport_event {
    enum class kind : std::uint8_t {
        /// A connection's handshake completed: `broker` is what its `connection.start` said
        /// (the transport's `broker()` from now on). Once per connection, reconnections too.
        broker_identified,
        /// A warning: letterbox has no profile for the broker's version (missing, unreadable,
        /// older or newer than every profile, or not RabbitMQ), so it assumes the nearest one,
        /// `broker.profile`; `text` is `broker.note`.
        broker_version_not_recognised,
        /// A warning: the broker of this connection announced another version than the one of
        /// the previous connection (a failover to a node of another version, or an upgrade);
        /// `previous` is the one before. Behaviours that depend on the version (the profile)
        /// may have changed under the pipeline.
        broker_version_changed,
    };

    kind what;
    /// The broker of the connection that just opened.
    const broker_info& broker;
    /// The endpoint that connection reached.
    const endpoint& at;
    /// For `broker_version_changed`: the broker of the previous connection; else null.
    const broker_info* previous = nullptr;
    /// One sentence for a log line: what happened, and for a warning what letterbox assumes.
    std::string_view text{};

    /// Whether this event is one of the warnings (not `broker_identified`).
    bool is_warning() const noexcept { return what != kind::broker_identified; }
};

/// The name of an event kind ("broker_identified", ...).
constexpr std::string_view to_string(transport_event::kind k) noexcept {
    switch (k) {
    case transport_event::kind::broker_identified:
        return "broker_identified";
    case transport_event::kind::broker_version_not_recognised:
        return "broker_version_not_recognised";
    case transport_event::kind::broker_version_changed:
        return "broker_version_changed";
    }
    return "unknown";
}

} // namespace letterbox::amqp
