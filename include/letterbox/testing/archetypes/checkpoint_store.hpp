// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/concepts/checkpoint_store.hpp>
#include <letterbox/config.hpp>
#include <letterbox/testing/archetypes/unit_of_work.hpp>

#include <cstdint>
#include <string_view>
#include <system_error>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::testing {

/// Exactly what `letterbox::checkpoint_store` requires, with trivial bodies: generic code
/// instantiated with it proves it uses nothing else.
//[checkpoint_store_archetype
struct checkpoint_store_archetype {
    using checkpoint_store_concept = checkpoint_store_tag;
    using unit_of_work_type = unit_of_work_archetype;

    std::uint64_t position(std::string_view, std::error_code&) { return {}; }
    [[nodiscard]] std::error_code save(unit_of_work_type&, std::string_view, std::uint64_t,
                                       std::uint64_t) {
        return {};
    }
};
//]

} // namespace letterbox::testing
