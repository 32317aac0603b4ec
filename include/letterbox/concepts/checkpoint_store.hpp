// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/concepts/unit_of_work.hpp>
#include <letterbox/config.hpp>

#include <concepts>
#include <cstdint>
#include <string_view>
#include <system_error>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE {

/// The opt-in tag of `checkpoint_store`: a model declares
/// `using checkpoint_store_concept = letterbox::checkpoint_store_tag;`.
struct checkpoint_store_tag {};

/// Where each projection keeps its checkpoint: the global position of the last event it
/// applied. It lives in the read model's database and is written in the same unit of work as
/// the read model's update, so a projection applies each event exactly once, whatever crashes.
///
/// Requirements, for `s` of type `S&`, `u` of type `S::unit_of_work_type&`, `name` a
/// `std::string_view`, `expected` and `position` `std::uint64_t`s and `ec` a
/// `std::error_code&`:
/// 1. `S::checkpoint_store_concept` names `checkpoint_store_tag` (opt-in);
/// 2. `S::unit_of_work_type` models `unit_of_work`;
/// 3. `s.position(name, ec)` -> `std::uint64_t`;
/// 4. `s.save(u, name, expected, position)` -> `std::error_code`.
///
/// Semantics:
/// - **position** is the committed checkpoint of the projection `name`; 0 when it has none.
/// - **save** stages the move of `name`'s checkpoint from `expected` to `position` (back to 0
///   for a rebuild), on the condition that it is still at `expected` when `u` commits. Else
///   `errc::concurrency_conflict`, from `save` (nothing staged, `u` usable) or from
///   `u.commit()` (nothing applied): of two runners of one projection that read one
///   checkpoint, only one moves it, and the other's read-model update rolls back with it.
///   An empty `name` is `errc::invalid_argument`. Save a name once per unit: what a second
///   save of it in the same unit does is the model's to decide (the in-memory model refuses it
///   as a conflict; SQLite compares it with the first save's position).
/// - Errors are reported, never thrown for expected failures; `ec` is cleared on success.
///   Every operation may be called concurrently from several threads.
///
/// Models: `in_memory_checkpoint_store`; `sqlite::checkpoint_store` (component
/// `letterbox::sqlite`).
template <class S>
concept checkpoint_store =
    std::derived_from<typename S::checkpoint_store_concept, checkpoint_store_tag> &&
    has_unit_of_work<S> && requires(S& s, typename S::unit_of_work_type& u, std::string_view name,
                                    std::uint64_t p, std::error_code& ec) {
    { s.position(name, ec) } -> std::same_as<std::uint64_t>;
    { s.save(u, name, p, p) } -> std::same_as<std::error_code>;
};

} // namespace letterbox
