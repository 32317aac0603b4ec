// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/config.hpp>

#include <string>
#include <utility>
#include <vector>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::ops {

/// The labels of one time series, as `(name, value)` pairs in the order they are written:
/// `{{"queue", "orders.dlq"}}`. Names follow Prometheus' rules (`[a-zA-Z_][a-zA-Z0-9_]*`, not
/// starting with `__`); values are any text, escaped when rendered.
using metric_labels = std::vector<std::pair<std::string, std::string>>;

} // namespace letterbox::ops
