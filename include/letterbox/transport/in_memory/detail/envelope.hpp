// SPDX-License-Identifier: BSL-1.0
#pragma once

// A published message as the in-memory broker stores it: one `envelope` shared by every queue
// it was routed to, one `queued` copy per queue. Private to the in-memory broker
// (broker_state.hpp).

#include <letterbox/config.hpp>
#include <letterbox/message.hpp>

#include <cstddef>
#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <vector>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::in_memory::detail {

inline constexpr std::int64_t no_expiry = std::numeric_limits<std::int64_t>::max();

/// A published message as stored: shared by every queue it was routed to.
struct envelope {
    envelope() = default;
    explicit envelope(message&& m)
        : msg(std::move(m)) {}

    message msg;                  // as delivered: BCC removed
    std::vector<std::string> cc;  // sender-selected keys (CC header, still present)
    std::vector<std::string> bcc; // sender-selected keys (BCC header, removed)
    bool history_is_ours = true;  // false: a client-supplied x-death the profile ignores
};

/// One copy of a message in one queue.
struct queued {
    std::shared_ptr<const envelope> env;
    std::uint64_t seq = 0; // enqueue order: a classic queue's "original position"
    std::int64_t expires_at = no_expiry;
    std::uint32_t delivery_count = 0; // quorum x-delivery-count
    std::uint32_t acquired = 0;       // quorum x-acquired-count (4.3)
    std::uint8_t priority = 0;        // classic priority queue: filed_priority (priority_order.hpp)
    bool redelivered = false;
    std::size_t bytes() const noexcept { return env->msg.body.size(); }
};

} // namespace letterbox::in_memory::detail
