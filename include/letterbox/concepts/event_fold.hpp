// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/config.hpp>
#include <letterbox/recorded_event.hpp>

#include <concepts>
#include <cstdint>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE {

/// How an event-sourced aggregate's state is computed from its events: a left fold.
///
/// Requirements, for `f` a `const F&`, `s` a `F::state_type&` and `e` a
/// `const recorded_event&`:
/// 1. `F::state_type` is default-constructible: the state before the first event;
/// 2. `F::fold_version` converts to `std::uint32_t`: the version of the rules. Change it
///    whenever `apply` would compute another state from the same events; snapshots taken by
///    another version are then ignored, never applied;
/// 3. `f.apply(s, e)` folds `e` into `s`.
///
/// Semantics: `apply` depends on the state and the event only (no clock, no I/O), so a replay
/// computes the same state; an event it does not know leaves the state alone. An exception it
/// throws (an event whose data does not parse) propagates to the caller of the load.
template <class F>
concept event_fold = std::default_initializable<typename F::state_type> &&
    std::copy_constructible<F> &&
    requires(const F& f, typename F::state_type& s, const recorded_event& e) {
    { F::fold_version } -> std::convertible_to<std::uint32_t>;
    f.apply(s, e);
};

} // namespace letterbox
