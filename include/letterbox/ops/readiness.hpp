// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/config.hpp>

#include <string>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::ops {

/// The outcome of one readiness check, as `GET /health/ready` lists it:
/// `{"name": ..., "ok": ..., "detail": ...}`. `detail` says what was seen, in words an operator
/// can act on ("connected", "oldest pending row is 75s old (threshold 60s)").
struct readiness {
    bool ok = false;
    std::string detail{};
};

} // namespace letterbox::ops
