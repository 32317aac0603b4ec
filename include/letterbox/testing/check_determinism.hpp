// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/config.hpp>
#include <letterbox/testing/history.hpp>
#include <letterbox/testing/invariant_violation.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::testing {

/// I-21 determinism: two runs of the same seed give the same history, and so the same trace
/// hash. Compares the text forms line by line.
///
/// Empty when they are equal; otherwise one violation that gives both trace hashes and the
/// first line where the runs differ (or the first extra line of the longer run). Its `events`
/// holds that line's index.
inline std::vector<invariant_violation> check_determinism(const history& first,
                                                          const history& second) {
    const auto hash_text = [](std::uint64_t hash) {
        std::ostringstream os;
        os << "0x" << std::hex << hash;
        return os.str();
    };
    const auto common = std::min(first.size(), second.size());
    for (std::size_t i = 0; i <= common; ++i) {
        std::string a;
        std::string b;
        if (i < common) {
            a = to_string(first[i]);
            b = to_string(second[i]);
            if (a == b) {
                continue;
            }
        } else if (first.size() == second.size()) {
            break;
        } else {
            a = i < first.size() ? to_string(first[i]) : std::string{"(end of history)"};
            b = i < second.size() ? to_string(second[i]) : std::string{"(end of history)"};
        }
        invariant_violation v{invariant::determinism, {}, {}, {}, {}, {i}};
        v.explanation = "the runs differ (trace hashes " + hash_text(first.trace_hash()) + " and " +
                        hash_text(second.trace_hash()) + "), first at event #" + std::to_string(i) +
                        "\n  first run:  " + a + "\n  second run: " + b;
        return {std::move(v)};
    }
    return {};
}

} // namespace letterbox::testing
