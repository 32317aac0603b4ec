// SPDX-License-Identifier: BSL-1.0
#pragma once

// The counts that `pipeline_result` (one run) and `pipeline_report` (summed over runs) share:
// their common base. Private; the fields are read through those two structs.

#include <letterbox/config.hpp>

#include <cstddef>
#include <string>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::testing::detail {

/// What pipeline runs did, counted from their histories.
struct pipeline_counts {
    std::size_t committed = 0;
    std::size_t rolled_back = 0;
    std::size_t effects = 0;
    std::size_t dead_letters = 0;
    std::size_t deliveries = 0;
    std::size_t faults_injected = 0;

    /// Adds `other`'s counts to these.
    void add_counts(const pipeline_counts& other) noexcept {
        committed += other.committed;
        rolled_back += other.rolled_back;
        effects += other.effects;
        dead_letters += other.dead_letters;
        deliveries += other.deliveries;
        faults_injected += other.faults_injected;
    }

    /// "committed=3 rolled_back=1 effects=3 dead_letters=0 deliveries=5 faults=2".
    std::string counts_text() const {
        return "committed=" + std::to_string(committed) +
               " rolled_back=" + std::to_string(rolled_back) +
               " effects=" + std::to_string(effects) +
               " dead_letters=" + std::to_string(dead_letters) +
               " deliveries=" + std::to_string(deliveries) +
               " faults=" + std::to_string(faults_injected);
    }
};

} // namespace letterbox::testing::detail
