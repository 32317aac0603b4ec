// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/config.hpp>

#include <cstddef>
#include <limits>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::dlq {

/// Which of the matching entries a browse returns: it skips the first `offset` matches and
/// returns at most `limit` after them, and stops early once the bodies of the entries it
/// returns add up to `max_bytes` or more. Positions count matching entries only, in queue
/// order.
///
/// `max_bytes` bounds the memory of a page of large messages: a page holds at most
/// `max_bytes` plus one message's body (the entry that reaches the bound is returned, so a
/// page is never empty while matches remain, however large they are). A caller that pages
/// through a queue continues at `offset + entries.size()` when the page is full: it holds
/// `limit` entries, or its bodies add up to `max_bytes` or more (the next page may then be
/// empty). Only bodies count: headers are small next to them (AMQP keeps them within one
/// frame, 128 KiB on RabbitMQ).
struct page {
    std::size_t offset = 0;
    std::size_t limit = 100;
    std::size_t max_bytes = std::numeric_limits<std::size_t>::max();
};

} // namespace letterbox::dlq
