// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/basic_properties.hpp>
#include <letterbox/config.hpp>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::amqp::codec {

/// The 14 properties of the AMQP basic class, exactly as they travel in a content header:
/// `letterbox::basic_properties`, which the core defines so that the in-memory broker takes the
/// same raw properties as the wire (`to_message` and `to_basic_properties` in
/// message_mapping.hpp translate to and from a `letterbox::message`).
using letterbox::basic_properties;

} // namespace letterbox::amqp::codec
