// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/concepts/snapshot_store.hpp>
#include <letterbox/config.hpp>
#include <letterbox/snapshot.hpp>
#include <letterbox/store_time.hpp>
#include <letterbox/testing/archetypes/unit_of_work.hpp>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>
#include <system_error>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::testing {

/// Exactly what `letterbox::snapshot_store` requires, with trivial bodies: generic code
/// instantiated with it proves it uses nothing else.
//[snapshot_store_archetype
struct snapshot_store_archetype {
    using snapshot_store_concept = snapshot_store_tag;
    using unit_of_work_type = unit_of_work_archetype;

    [[nodiscard]] std::error_code save(unit_of_work_type&, const snapshot&) { return {}; }
    std::optional<snapshot> latest(std::string_view, std::uint64_t, store_time, std::error_code&) {
        return {};
    }
    std::size_t drop(std::string_view, std::error_code&) { return {}; }
};
//]

} // namespace letterbox::testing
