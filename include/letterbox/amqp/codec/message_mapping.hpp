// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/amqp/codec/basic_properties.hpp>
#include <letterbox/amqp/codec/command.hpp>
#include <letterbox/basic_properties.hpp>
#include <letterbox/config.hpp>
#include <letterbox/error.hpp>
#include <letterbox/foreign_message_id.hpp>
#include <letterbox/message.hpp>

#include <system_error>
#include <type_traits>
#include <utility>
#include <variant>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::amqp::codec {

// The mapping between `letterbox::message` and the basic properties is the core's
// (letterbox/basic_properties.hpp, letterbox/foreign_message_id.hpp), so that the in-memory
// broker maps a foreign publisher's properties exactly as this transport does. Named here too,
// where the codec's users have always found them.
using letterbox::cluster_id_header;
using letterbox::foreign_message_id;
using letterbox::foreign_message_id_header;
using letterbox::foreign_message_id_namespace;
using letterbox::to_basic_properties;
using letterbox::to_message;

/// The message a content-bearing command carries (basic.deliver, basic.get-ok, basic.return,
/// basic.publish), with `exchange` and `routing_key` taken from its method (see
/// `letterbox::to_message` for the properties). The body is moved out of `c`. Errors:
/// `errc::invalid_argument` for a command without content.
inline message to_message(command&& c, std::error_code& ec);

inline message to_message(command&& c, std::error_code& ec) {
    ec.clear();
    if (!c.header) {
        ec = errc::invalid_argument;
        return {};
    }
    auto m = to_message(c.header->properties, std::move(c.body));
    std::visit(
        [&m](auto& x) {
            using T = std::decay_t<decltype(x)>;
            if constexpr (T::has_content) {
                m.exchange = std::move(x.exchange);
                m.routing_key = std::move(x.routing_key);
            }
        },
        c.method);
    return m;
}

} // namespace letterbox::amqp::codec
