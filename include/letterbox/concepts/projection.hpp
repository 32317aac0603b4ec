// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/concepts/unit_of_work.hpp>
#include <letterbox/config.hpp>
#include <letterbox/recorded_event.hpp>

#include <concepts>
#include <system_error>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE {

/// A read model kept up to date from an `event_store` by a `projection_runner` (the query side
/// of CQRS): it applies events, in position order, inside a unit of work of its own database,
/// the same unit in which the runner moves the projection's checkpoint.
///
/// Requirements, for `p` of type `P&`, `u` of type `P::unit_of_work_type&` and `e` a
/// `const recorded_event&`:
/// 1. `P::unit_of_work_type` models `unit_of_work`;
/// 2. `p.begin()` -> `P::unit_of_work_type`: a unit on the read model's database;
/// 3. `p.apply(u, e)` -> `std::error_code`: stages the read model's update for `e` in `u`;
/// 4. `p.reset(u)` -> `std::error_code`: stages the deletion of the whole read model in `u`, so
///    that a rebuild from position 0 starts from nothing.
///
/// Semantics: `apply` writes only through `u` (what it did rolls back with it) and depends on
/// the read model and the event only, so a rebuild from 0 gives the read model the live runner
/// kept. An event it does not know changes nothing. An error it returns rolls the whole batch
/// back; the runner reports it and tries again later.
template <class P>
concept projection = has_unit_of_work<P> &&
    requires(P& p, typename P::unit_of_work_type& u, const recorded_event& e) {
    { p.begin() } -> std::same_as<typename P::unit_of_work_type>;
    { p.apply(u, e) } -> std::same_as<std::error_code>;
    { p.reset(u) } -> std::same_as<std::error_code>;
};

} // namespace letterbox
