// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <cstddef>

namespace letterbox::dlq {

/// Which of the matching entries a browse returns: it skips the first `offset` matches and
/// returns at most `limit` after them. Positions count matching entries only, in queue order.
struct page {
    std::size_t offset = 0;
    std::size_t limit = 100;
};

} // namespace letterbox::dlq
