// SPDX-License-Identifier: BSL-1.0
#pragma once

// The SQLite stores' names for the time columns' conversions (detail/time_column.hpp, which the
// PostgreSQL stores share). Private.

#include <letterbox/config.hpp>
#include <letterbox/detail/time_column.hpp>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::sqlite::detail {

using letterbox::detail::from_column;
using letterbox::detail::to_column;

} // namespace letterbox::sqlite::detail
