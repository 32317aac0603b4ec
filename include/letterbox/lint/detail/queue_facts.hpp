// SPDX-License-Identifier: BSL-1.0
#pragma once

// What the lint reads from a queue's arguments, tolerant of values RabbitMQ would refuse (a
// definitions file is not validated): private to lint/.

#include <letterbox/config.hpp>
#include <letterbox/field_table.hpp>
#include <letterbox/topology/queue_arguments.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::lint::detail {

/// A queue's type, from `x-queue-type` (classic when absent or unknown).
enum class queue_kind : std::uint8_t { classic, quorum, stream };

inline queue_kind kind_of(const field_table& arguments) {
    if (const auto t = arguments.get<std::string>(topology::args::queue_type)) {
        if (*t == "quorum")
            return queue_kind::quorum;
        if (*t == "stream")
            return queue_kind::stream;
    }
    return queue_kind::classic;
}

inline std::optional<std::string> text_of(const field_table& t, std::string_view name) {
    return t.get<std::string>(name);
}

inline std::optional<std::int64_t> integer_of(const field_table& t, std::string_view name) {
    if (const auto* v = t.find(name))
        return v->as_integer();
    return std::nullopt;
}

/// An object of a finding: `queue 'orders'`, `exchange 'dlx'`, `policy 'ttl'`.
inline std::string object(std::string_view kind, std::string_view name) {
    std::string out(kind);
    out.append(" '").append(name).append("'");
    return out;
}

/// `binding 'src' -> 'dst'`.
inline std::string binding_object(std::string_view source, std::string_view destination) {
    return "binding '" + std::string(source) + "' -> '" + std::string(destination) + "'";
}

/// `consumer of 'orders'`.
inline std::string consumer_object(std::string_view queue) {
    return object("consumer of", queue);
}

} // namespace letterbox::lint::detail
