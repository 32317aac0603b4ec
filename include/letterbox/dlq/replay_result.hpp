// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/config.hpp>

#include <nlohmann/json.hpp>

#include <cstddef>
#include <string>
#include <system_error>
#include <vector>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::dlq {

/// What `dead_letter_queue::async_replay` did.
struct replay_result {
    /// Why one message could not be replayed; it stayed in the dead-letter queue.
    struct failure {
        /// The message id (text); empty for a message without one.
        std::string id{};
        /// The entry's handle (`dead_letter_entry::handle`).
        std::string handle{};
        /// The publish's error (`errc::no_route`, `errc::publish_nacked`, `errc::not_found`,
        /// ...), or `errc::invalid_argument` when the entry names no original destination.
        std::error_code error{};
    };

    /// Republished, confirmed, and removed from the dead-letter queue.
    std::size_t replayed = 0;
    /// Matched but not republished: they stayed in the dead-letter queue.
    std::size_t failed = 0;
    /// Did not match the filter: left in the dead-letter queue, in place.
    std::size_t skipped = 0;
    /// One per failed message, in queue order.
    std::vector<failure> failures{};

    /// One JSON object for the CLI and the HTTP endpoint:
    /// `{"replayed", "failed", "skipped", "failures": [{"id", "handle", "error"}, ...]}`, where
    /// `id` is null for a message without one and `error` is the error's message.
    nlohmann::json to_json() const {
        auto list = nlohmann::json::array();
        for (const auto& f : failures)
            list.push_back({{"id", f.id.empty() ? nlohmann::json(nullptr) : nlohmann::json(f.id)},
                            {"handle", f.handle},
                            {"error", f.error.message()}});
        return {{"replayed", replayed},
                {"failed", failed},
                {"skipped", skipped},
                {"failures", std::move(list)}};
    }
};

} // namespace letterbox::dlq
