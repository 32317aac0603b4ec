// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/config.hpp>
#include <letterbox/lint/finding.hpp>
#include <letterbox/lint/severity.hpp>

#include <nlohmann/json.hpp>

#include <cstddef>
#include <span>
#include <string>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::lint {

/// How many findings of each severity.
struct finding_counts {
    std::size_t errors = 0;
    std::size_t warnings = 0;
    std::size_t notes = 0;

    friend bool operator==(const finding_counts&, const finding_counts&) = default;
};

inline finding_counts count(std::span<const finding> findings) noexcept {
    finding_counts n;
    for (const auto& f : findings) {
        switch (f.level) {
        case severity::error:
            ++n.errors;
            break;
        case severity::warning:
            ++n.warnings;
            break;
        case severity::info:
            ++n.notes;
            break;
        }
    }
    return n;
}

namespace detail {
inline std::string counted(std::size_t n, const char* one, const char* many) {
    return std::to_string(n) + " " + (n == 1 ? one : many);
}
} // namespace detail

/// The findings for people, one block each, then a summary line:
///
///     error LB-DLX-RING [3.10] queue 'a', queue 'b', queue 'c'
///       why: Queues 'a', 'b' and 'c' form a dead-letter ring ...
///       fix: Put a single expiring queue between two rejections ...
///
///     1 error, 0 warnings, 0 notes
inline std::string text_report(std::span<const finding> findings) {
    std::string out;
    for (const auto& f : findings) {
        out.append(to_string(f.level)).append(" ").append(f.code);
        if (!f.versions.empty()) {
            out += " [";
            for (std::size_t i = 0; i < f.versions.size(); ++i)
                out.append(i ? ", " : "").append(f.versions[i]);
            out += "]";
        }
        for (std::size_t i = 0; i < f.objects.size(); ++i)
            out.append(i ? ", " : " ").append(f.objects[i]);
        out.append("\n  why: ").append(f.why).append("\n  fix: ").append(f.fix).append("\n\n");
    }
    const auto n = count(findings);
    out += detail::counted(n.errors, "error", "errors") + ", " +
           detail::counted(n.warnings, "warning", "warnings") + ", " +
           detail::counted(n.notes, "note", "notes") + "\n";
    return out;
}

/// The findings for machines:
///
///     {"findings": [{"severity": "error", "code": "LB-DLX-RING", "objects": ["queue 'a'"],
///                    "versions": ["3.10"], "why": "...", "fix": "..."}],
///      "counts": {"error": 1, "warning": 0, "info": 0}}
inline nlohmann::json json_report(std::span<const finding> findings) {
    auto list = nlohmann::json::array();
    for (const auto& f : findings)
        list.push_back({{"severity", std::string(to_string(f.level))},
                        {"code", f.code},
                        {"objects", f.objects},
                        {"versions", f.versions},
                        {"why", f.why},
                        {"fix", f.fix}});
    const auto n = count(findings);
    return {{"findings", std::move(list)},
            {"counts", {{"error", n.errors}, {"warning", n.warnings}, {"info", n.notes}}}};
}

/// A process exit status for CI: 2 with any error, 1 with warnings only, else 0 (notes do not
/// fail a build).
inline int exit_status(std::span<const finding> findings) noexcept {
    const auto n = count(findings);
    return n.errors ? 2 : n.warnings ? 1 : 0;
}

} // namespace letterbox::lint
