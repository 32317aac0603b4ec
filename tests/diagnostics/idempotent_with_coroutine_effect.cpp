// SPDX-License-Identifier: BSL-1.0
// An idempotent effect that is a coroutine: it would wait inside the unit of work.
#include <letterbox/in_memory_unit_of_work.hpp>
#include <letterbox/inbox/in_memory_inbox_store.hpp>
#include <letterbox/middleware/idempotent.hpp>
#include <letterbox/virtual_clock.hpp>

#include <boost/asio/awaitable.hpp>

// expect: letterbox: this effect is a coroutine
// expect: middleware::after_call(call, effect)

void build(letterbox::in_memory_inbox_store& inbox, letterbox::virtual_clock& clock) {
    auto h = letterbox::middleware::idempotent(
        [](const letterbox::message&,
           letterbox::in_memory_unit_of_work&) -> boost::asio::awaitable<void> { co_return; },
        inbox, "c", clock);
    (void)h;
}
