// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/concepts/unit_of_work.hpp>
#include <letterbox/config.hpp>
#include <letterbox/snapshot.hpp>
#include <letterbox/store_time.hpp>

#include <concepts>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>
#include <system_error>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE {

/// The opt-in tag of `snapshot_store`: a model declares
/// `using snapshot_store_concept = letterbox::snapshot_store_tag;`.
struct snapshot_store_tag {};

/// The snapshots of event-sourced aggregates (`snapshot`), kept apart from the events so that
/// they can be dropped or rebuilt without touching them: a snapshot is a cache of a fold, never
/// a source of truth.
///
/// Requirements, for `s` of type `S&`, `u` of type `S::unit_of_work_type&`, `snap` a
/// `const snapshot&`, `stream` a `std::string_view`, `version` a `std::uint64_t`, `time` a
/// `store_time` and `ec` a `std::error_code&`:
/// 1. `S::snapshot_store_concept` names `snapshot_store_tag` (opt-in);
/// 2. `S::unit_of_work_type` models `unit_of_work`;
/// 3. `s.save(u, snap)` -> `std::error_code`;
/// 4. `s.latest(stream, version, time, ec)` -> `std::optional<snapshot>`;
/// 5. `s.drop(stream, ec)` -> `std::size_t`.
///
/// Semantics:
/// - **save** stages `snap` in `u`. A snapshot of the same stream and version replaces the one
///   stored (a fold of a newer version retaking it). An empty stream, or a version of 0, is
///   `errc::invalid_argument`, with nothing staged.
/// - **latest** gives the committed snapshot of `stream` with the highest version among those
///   whose `version` is at most `version` and whose `recorded_at` is at most `time`, or none.
/// - **drop** deletes every snapshot of `stream` and says how many; the next loads fold from
///   the events. An empty `stream` is `errc::invalid_argument` (never "all streams").
/// - Errors are reported, never thrown for expected failures; `ec` is cleared on success.
///   Every operation may be called concurrently from several threads.
///
/// Models: `in_memory_snapshot_store`; `sqlite::snapshot_store` (component `letterbox::sqlite`).
/// Archetype: `letterbox::testing::snapshot_store_archetype`.
template <class S>
concept snapshot_store =
    std::derived_from<typename S::snapshot_store_concept, snapshot_store_tag> &&
    has_unit_of_work<S> &&
    requires(S& s, typename S::unit_of_work_type& u, const snapshot& snap, std::string_view stream,
             std::uint64_t version, store_time time, std::error_code& ec) {
    { s.save(u, snap) } -> std::same_as<std::error_code>;
    { s.latest(stream, version, time, ec) } -> std::same_as<std::optional<snapshot>>;
    { s.drop(stream, ec) } -> std::same_as<std::size_t>;
};

} // namespace letterbox
