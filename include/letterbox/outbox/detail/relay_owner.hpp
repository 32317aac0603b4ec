// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/config.hpp>
#include <letterbox/message.hpp>

#include <string>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::detail {

/// A lease owner no other relay instance uses: "relay-" and a time-ordered UUID, whose 73
/// random bits keep two relays started in the same millisecond apart (message-ids.md).
inline std::string new_relay_owner() {
    message_id_generator ids; // the system clock, random bits seeded from std::random_device
    return "relay-" + letterbox::to_string(ids());
}

} // namespace letterbox::detail
