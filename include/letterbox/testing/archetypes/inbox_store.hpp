// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/concepts/inbox_store.hpp>
#include <letterbox/config.hpp>
#include <letterbox/testing/archetypes/unit_of_work.hpp>

#include <cstddef>
#include <string_view>
#include <system_error>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::testing {

/// Exactly what `letterbox::inbox_store` requires, with trivial bodies: generic code
/// instantiated with it proves it uses nothing else.
//[inbox_store_archetype
struct inbox_store_archetype {
    using inbox_store_concept = inbox_store_tag;
    using unit_of_work_type = unit_of_work_archetype;

    [[nodiscard]] std::error_code try_record(unit_of_work_type&, std::string_view,
                                             const message_id&, store_time) {
        return {};
    }
    bool contains(std::string_view, const message_id&, std::error_code&) { return {}; }
    std::size_t size(std::error_code&) { return {}; }
    std::size_t purge(store_time, std::error_code&) { return {}; }
};
//]

} // namespace letterbox::testing
