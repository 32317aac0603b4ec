// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/config.hpp>
#include <letterbox/message.hpp>
#include <letterbox/testing/detail/history_text.hpp>
#include <letterbox/testing/invariant.hpp>

#include <cstddef>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::testing {

/// One violation of a delivery invariant found in a history by a checker.
///
/// `explanation` is a sentence for a human, and quotes the events it rests on (as
/// `#<index> <text form>`); `events` holds their indexes in the history, in the order cited.
/// `id`, `consumer` and `aggregate` name what the violation concerns, when it concerns one
/// (empty otherwise), so tests can assert on them.
struct invariant_violation {
    invariant which = invariant::no_loss;
    std::optional<message_id> id{};
    std::string consumer;
    std::string aggregate;
    std::string explanation;
    std::vector<std::size_t> events;

    friend bool operator==(const invariant_violation&, const invariant_violation&) = default;
};

/// One line per fact: `I-01 no-loss: <explanation>` (the explanation may span several lines,
/// one per cited event).
inline std::string to_string(const invariant_violation& v) {
    std::string out{catalogue_id(v.which)};
    out += ' ';
    out += to_string(v.which);
    out += ": ";
    out += v.explanation;
    return out;
}

/// Writes `to_string(v)`.
inline std::ostream& operator<<(std::ostream& os, const invariant_violation& v) {
    return os << to_string(v);
}

} // namespace letterbox::testing
