// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/concepts/saga_store.hpp>
#include <letterbox/config.hpp>
#include <letterbox/saga_instance.hpp>
#include <letterbox/testing/archetypes/unit_of_work.hpp>

#include <cstddef>
#include <optional>
#include <string_view>
#include <system_error>
#include <vector>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::testing {

/// Exactly what `letterbox::saga_store` requires, with trivial bodies: generic code
/// instantiated with it proves it uses nothing else.
//[saga_store_archetype
struct saga_store_archetype {
    using saga_store_concept = saga_store_tag;
    using unit_of_work_type = unit_of_work_archetype;

    [[nodiscard]] std::error_code insert(unit_of_work_type&, const saga_instance&) { return {}; }
    [[nodiscard]] std::error_code update(unit_of_work_type&, const saga_instance&) { return {}; }
    std::optional<saga_instance> find(std::string_view, std::string_view, std::error_code&) {
        return {};
    }
    std::optional<saga_instance> find_by_correlation(std::string_view, std::string_view,
                                                     std::error_code&) {
        return {};
    }
    std::size_t size(std::error_code&) { return {}; }
    std::vector<saga_timeout_due> due_timeouts(store_time, std::size_t, std::error_code&) {
        return {};
    }
    std::size_t purge_finished(store_time, std::error_code&) { return {}; }
};
//]

} // namespace letterbox::testing
