// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/concepts/outbox_store.hpp>
#include <letterbox/config.hpp>
#include <letterbox/testing/archetypes/unit_of_work.hpp>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>
#include <system_error>
#include <vector>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::testing {

/// Exactly what `letterbox::outbox_store` requires, with trivial bodies: generic code
/// instantiated with it proves it uses nothing else.
//[outbox_store_archetype
struct outbox_store_archetype {
    using outbox_store_concept = outbox_store_tag;
    using unit_of_work_type = unit_of_work_archetype;

    [[nodiscard]] std::error_code add(unit_of_work_type&, const outbox_entry&, store_time) {
        return {};
    }
    std::vector<outbox_record> claim(std::string_view, std::size_t, store_time::duration,
                                     store_time, std::error_code&) {
        return {};
    }
    std::size_t release_expired_leases(store_time, std::error_code&) { return {}; }
    [[nodiscard]] std::error_code mark_published(const message_id&, std::string_view, store_time) {
        return {};
    }
    [[nodiscard]] std::error_code record_failure(const message_id&, std::string_view,
                                                 std::string_view, store_time, std::uint32_t,
                                                 store_time) {
        return {};
    }
    [[nodiscard]] std::error_code park(const message_id&, std::string_view) { return {}; }
    [[nodiscard]] std::error_code unpark(const message_id&, store_time) { return {}; }
    std::size_t purge_published(store_time, std::error_code&) { return {}; }
    std::optional<outbox_record> find(const message_id&, std::error_code&) { return {}; }
    std::vector<outbox_record> list(const outbox_query&, std::error_code&) { return {}; }
    outbox_stats stats(store_time, std::error_code&) { return {}; }
};
//]

} // namespace letterbox::testing
