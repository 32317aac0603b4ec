// SPDX-License-Identifier: BSL-1.0
// An idempotent effect that forgot the unit of work it must write in.
#include <letterbox/in_memory_unit_of_work.hpp>
#include <letterbox/inbox/in_memory_inbox_store.hpp>
#include <letterbox/middleware/idempotent.hpp>
#include <letterbox/virtual_clock.hpp>

// expect: letterbox::idempotent: the effect must be callable as `effect(const letterbox::message&,
// unit_of_work&)`

void build(letterbox::in_memory_inbox_store& inbox, letterbox::virtual_clock& clock) {
    auto h = letterbox::middleware::idempotent([](const letterbox::message&) {}, inbox,
                                               [] { return letterbox::in_memory_unit_of_work{}; },
                                               "svc", clock);
    (void)h;
}
