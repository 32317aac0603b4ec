// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/config.hpp>

#include <cstdint>
#include <string>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE {

/// An instance of an orchestrated saga as its orchestrator reads it: the stored instance with
/// its data decoded.
///
/// `state` is the step whose reply the saga waits for (its name), `compensating:<step>` while
/// it waits for that step's compensation, or a final state: `completed`, `failed` (every
/// completed step compensated), or `compensation_failed` (a compensation kept failing; the
/// saga is parked, visible, until an operator acts). `reason` says why it failed, empty
/// otherwise. `conversation_id` is the conversation its messages carry
/// (`x-letterbox-conversation-id`): give it to `causal_tree` to see what happened to it.
template <class Data>
struct saga_view {
    std::string id{};
    std::string correlation{};
    std::string state{};
    std::uint64_t version = 0;
    bool finished = false;
    Data data{};
    std::string reason{};
    std::string conversation_id{};
};

} // namespace letterbox
