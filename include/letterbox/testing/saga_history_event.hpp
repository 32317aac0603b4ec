// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/config.hpp>

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::testing {

/// One thing that happened to a saga, as the saga simulation records it and
/// `check_saga_history` reads it. Each is recorded when its transaction commits (what rolls
/// back never happened), at its time on the virtual clock.
struct saga_history_event {
    enum class kind : std::uint8_t {
        /// A participant did `step` for `saga` (its effect committed).
        applied,
        /// A participant undid `step` (the compensation's effect committed).
        undone,
        /// A participant declined `step` (a business failure: nothing done).
        declined,
        /// A participant refused `step`'s command because the step's compensation came first.
        refused,
        /// The orchestrator committed a move of `saga` from state `from` to state `to`
        /// (`from` empty for the start), because of `cause`: `start`, `reply <step> <phase>
        /// <outcome>` or `timeout <name>`.
        moved,
        /// A fault was injected (`cause` says which); `saga` and `step` are empty.
        fault,
    };

    std::chrono::nanoseconds at{};
    kind what = kind::applied;
    std::string saga{};
    std::string step{};
    std::string from{};
    std::string to{};
    std::string cause{};

    friend bool operator==(const saga_history_event&, const saga_history_event&) = default;
};

/// The kind's name: "applied", "undone", ...
constexpr std::string_view to_string(saga_history_event::kind k) noexcept {
    using kind = saga_history_event::kind;
    switch (k) {
    case kind::applied:
        return "applied";
    case kind::undone:
        return "undone";
    case kind::declined:
        return "declined";
    case kind::refused:
        return "refused";
    case kind::moved:
        return "moved";
    case kind::fault:
        return "fault";
    }
    return "unknown";
}

/// One line: `12.500ms saga order-3 moved charge-payment -> compensating:charge-payment
/// (timeout step)`, `... saga order-3 applied reserve-stock`, `... fault connection drop`.
inline std::string to_string(const saga_history_event& e) {
    const auto us = std::chrono::duration_cast<std::chrono::microseconds>(e.at).count();
    std::string out = std::to_string(us / 1000) + '.';
    const auto frac = std::to_string(us % 1000);
    out += std::string(3 - frac.size(), '0') + frac + "ms ";
    if (e.what == saga_history_event::kind::fault)
        return out + "fault " + e.cause;
    out += "saga " + e.saga + ' ' + std::string(to_string(e.what));
    if (e.what == saga_history_event::kind::moved)
        return out + ' ' + (e.from.empty() ? "(new)" : e.from) + " -> " + e.to + " (" + e.cause +
               ')';
    return out + ' ' + e.step;
}

} // namespace letterbox::testing
