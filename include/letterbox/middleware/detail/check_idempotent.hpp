// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/concepts/detail/check_clock.hpp>
#include <letterbox/concepts/detail/check_handler.hpp>
#include <letterbox/concepts/detail/check_inbox_store.hpp>
#include <letterbox/concepts/inbox_store.hpp>
#include <letterbox/config.hpp>
#include <letterbox/message.hpp>

#include <concepts>
#include <type_traits>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::middleware::detail {

/// Checks the arguments of `idempotent(effect, inbox, begin, consumer_id, clock)` one
/// requirement at a time, each with a message that names what is missing (see
/// `letterbox::detail::check_transport`).
template <class Inbox, class Begin, class Effect, class Clock>
consteval bool check_idempotent() {
    static_assert(letterbox::detail::check_inbox_store<Inbox>());
    static_assert(letterbox::detail::check_clock<Clock>());
    if constexpr (has_unit_of_work<Inbox>) {
        using unit = typename Inbox::unit_of_work_type;
        static_assert(
            requires(Begin & begin) {
                { begin() } -> std::same_as<unit>;
            },
            "letterbox::idempotent: `begin` must be callable with no argument and return the "
            "inbox store's unit_of_work_type, e.g. `[&] { return db.begin(); }`");
        if constexpr (std::invocable<Effect&, const message&, unit&>) {
            static_assert(letterbox::detail::check_handler_result<
                          std::invoke_result_t<Effect&, const message&, unit&>>());
        } else {
            static_assert(std::invocable<Effect&, const message&, unit&>,
                          "letterbox::idempotent: the effect must be callable as "
                          "`effect(const letterbox::message&, unit_of_work&)`, with the inbox "
                          "store's unit_of_work_type: it stages its writes in that unit, which "
                          "idempotent commits together with the inbox record");
        }
    }
    return true;
}

} // namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::middleware::detail
