// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/config.hpp>

#include <cstddef>
#include <mutex>
#include <system_error>
#include <type_traits>

// The steps every operation of an in-memory store repeats: take the store's lock, count the
// operation for fault injection, and on an injected fault stop with no effect. `Participant`
// is the store's `in_memory_participant` (its `mutex` and its `fault_counter faults`), a
// template parameter so that this vocabulary header does not include the unit of work.
namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::detail {

/// One counted operation of an in-memory store that reports through `ec`: under `core`'s
/// lock, the next injected fault (see `fault_counter`) fails it with no effect (`ec` holds the
/// fault and the result is value-initialised: 0, false, empty); otherwise `ec` is cleared and
/// the result is `body()`'s, which may set `ec` itself.
template <class Participant, class Body>
std::invoke_result_t<Body&> in_memory_store_operation(Participant& core, std::error_code& ec,
                                                      Body&& body) {
    std::lock_guard lock(core.mutex);
    ec = core.faults.next();
    if (ec)
        return {};
    return body();
}

/// `fail_nth` of an in-memory store: operation `n` from now fails once with `ec`.
template <class Participant>
void in_memory_store_fail_nth(Participant& core, std::size_t n, std::error_code ec) {
    std::lock_guard lock(core.mutex);
    core.faults.fail_nth(n, ec);
}

/// `operation_count` of an in-memory store: the operations counted so far.
template <class Participant>
std::size_t in_memory_store_operation_count(Participant& core) {
    std::lock_guard lock(core.mutex);
    return core.faults.count();
}

} // namespace letterbox::detail
