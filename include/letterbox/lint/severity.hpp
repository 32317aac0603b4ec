// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/config.hpp>

#include <cstdint>
#include <string_view>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::lint {

/// How bad a topology finding is (docs/topology-lint.md).
enum class severity : std::uint8_t {
    /// Worth knowing; nothing is lost.
    info,
    /// Messages can be lost, duplicated or stuck under some conditions, or a version changes
    /// what the topology does.
    warning,
    /// Messages are lost, or the broker refuses the topology or the consumer.
    error,
};

inline constexpr std::string_view to_string(severity s) noexcept {
    switch (s) {
    case severity::info:
        return "info";
    case severity::warning:
        return "warning";
    case severity::error:
        return "error";
    }
    return "error";
}

} // namespace letterbox::lint
