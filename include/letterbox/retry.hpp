// SPDX-License-Identifier: BSL-1.0
#pragma once

// `letterbox::retry`, the old name of `letterbox::backoff` (the retry policies: `none`,
// `immediate`, `fixed`, `exponential`, their jitter and classifier). Renamed because
// `middleware::retry`, the in-process retry layer, has the same name: inside
// `letterbox::middleware`, or under `using namespace letterbox::middleware`, `retry::fixed`
// named the function. Kept so that existing code compiles; new code writes `backoff::`.
#include <letterbox/config.hpp>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE {

namespace backoff {}
namespace retry = backoff;

} // namespace letterbox
