// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/config.hpp>
#include <letterbox/message.hpp>

#include <memory>
#include <string>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::in_memory {

/// A mandatory message that could not be routed (`basic.return`). It reaches the publisher
/// before the publish's confirm.
struct returned_message {
    std::shared_ptr<const message> msg{};
    int reply_code = 312;
    std::string reply_text = "NO_ROUTE";
    /// The publish sequence number it belongs to (0 outside confirm mode).
    std::uint64_t publish_seq = 0;
};

} // namespace letterbox::in_memory
