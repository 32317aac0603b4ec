// SPDX-License-Identifier: BSL-1.0
#pragma once

// The out-of-line functions of ../payload.hpp: where nlohmann's parser and serialiser are
// instantiated.

#include <letterbox/config.hpp>
#include <letterbox/payload.hpp>

#include <nlohmann/json.hpp>

#include <string>
#include <string_view>
#include <system_error>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE {

LETTERBOX_DECL std::string detail::dump_json_strict(const nlohmann::json& j) {
    return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::strict);
}

LETTERBOX_DECL nlohmann::json detail::parse_json_body(std::string_view body) {
    return nlohmann::json::parse(body, nullptr, /*allow_exceptions=*/false);
}

LETTERBOX_DECL std::error_code validate_payload(const message& m) noexcept {
    if (!m.properties.content_type || !is_json_content_type(*m.properties.content_type))
        return {};
    try {
        return nlohmann::json::accept(m.body) ? std::error_code{}
                                              : make_error_code(errc::payload_malformed);
    } catch (...) {
        return errc::payload_malformed;
    }
}

} // namespace letterbox
