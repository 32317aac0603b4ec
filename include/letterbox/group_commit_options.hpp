// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/config.hpp>

#include <chrono>
#include <cstddef>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE {

/// Group commit for a consumer (`consumer_options::group_commit`, docs/group-commit.md): the
/// deliveries that arrive within `max_delay` of the first one, up to `max_messages`, are
/// handled together, their inbox records, effects and outbox rows staged in one unit of work,
/// committed once, and acknowledged after that commit.
///
/// The guarantees stay those of one transaction per message: a failing message is rolled back
/// to its savepoint and takes the retry and dead-letter path alone; a crash before the commit
/// leaves the whole batch unacknowledged and unrecorded, so it is delivered and applied again;
/// a crash after it leaves it recorded, so the redeliveries are absorbed by the inbox.
struct group_commit_options {
    /// At most this many deliveries per commit, and at most the consumer's prefetch (a batch
    /// cannot wait for more deliveries than the broker sends before the acks). 0 or 1: off,
    /// each delivery commits on its own (the default).
    std::size_t max_messages = 0;
    /// A batch that is not full is committed this long after its first delivery arrived, on the
    /// consumer's clock: the most a delivery waits for its batch-mates. Greater than zero.
    std::chrono::milliseconds max_delay{5};

    /// Whether group commit is on.
    constexpr bool enabled() const noexcept { return max_messages > 1; }
};

} // namespace letterbox
