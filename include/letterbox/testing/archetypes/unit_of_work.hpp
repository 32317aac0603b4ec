// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/concepts/unit_of_work.hpp>
#include <letterbox/config.hpp>

#include <functional>
#include <system_error>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::testing {

/// Exactly what `letterbox::unit_of_work` requires, with trivial bodies: generic code
/// instantiated with it proves it uses nothing else. It is move-constructible only: not
/// default-constructible, copyable or assignable.
//[unit_of_work_archetype
struct unit_of_work_archetype {
    unit_of_work_archetype(unit_of_work_archetype&&) = default;
    [[nodiscard]] std::error_code commit() { return {}; }
    [[nodiscard]] std::error_code rollback() { return {}; }
    [[nodiscard]] std::error_code on_commit(std::function<void()>) { return {}; }
};
//]

} // namespace letterbox::testing
