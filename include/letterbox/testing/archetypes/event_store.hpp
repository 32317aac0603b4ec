// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/append_result.hpp>
#include <letterbox/concepts/event_store.hpp>
#include <letterbox/config.hpp>
#include <letterbox/event_data.hpp>
#include <letterbox/expected_version.hpp>
#include <letterbox/recorded_event.hpp>
#include <letterbox/store_time.hpp>
#include <letterbox/testing/archetypes/unit_of_work.hpp>

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>
#include <system_error>
#include <vector>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::testing {

/// Exactly what `letterbox::event_store` requires, with trivial bodies: generic code
/// instantiated with it proves it uses nothing else.
//[event_store_archetype
struct event_store_archetype {
    using event_store_concept = event_store_tag;
    using unit_of_work_type = unit_of_work_archetype;

    [[nodiscard]] std::error_code append(unit_of_work_type&, std::string_view, expected_version,
                                         std::span<const event_data>, store_time, append_result&) {
        return {};
    }
    std::vector<recorded_event> read_stream(std::string_view, std::uint64_t, std::size_t,
                                            std::error_code&) {
        return {};
    }
    std::vector<recorded_event> read_all(std::uint64_t, std::size_t, std::error_code&) {
        return {};
    }
    std::uint64_t stream_version(std::string_view, std::error_code&) { return {}; }
    std::uint64_t head_position(std::error_code&) { return {}; }
};
//]

} // namespace letterbox::testing
