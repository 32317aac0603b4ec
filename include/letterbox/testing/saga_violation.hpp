// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/config.hpp>
#include <letterbox/testing/saga_invariant.hpp>

#include <cstddef>
#include <ostream>
#include <string>
#include <vector>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::testing {

/// One violation of a saga invariant found in a saga history (`check_saga_history`).
/// `saga` is the saga's correlation; `explanation` is a sentence for a human that quotes the
/// events it rests on (`#<index> <text>`); `events` holds their indexes in the history.
struct saga_violation {
    saga_invariant which = saga_invariant::outcome;
    std::string saga;
    std::string explanation;
    std::vector<std::size_t> events;

    friend bool operator==(const saga_violation&, const saga_violation&) = default;
};

/// `S-01 outcome: <explanation>`.
inline std::string to_string(const saga_violation& v) {
    std::string out{catalogue_id(v.which)};
    out += ' ';
    out += to_string(v.which);
    out += ": ";
    out += v.explanation;
    return out;
}

/// Writes `to_string(v)`.
inline std::ostream& operator<<(std::ostream& os, const saga_violation& v) {
    return os << to_string(v);
}

} // namespace letterbox::testing
