// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/append_result.hpp>
#include <letterbox/concepts/unit_of_work.hpp>
#include <letterbox/config.hpp>
#include <letterbox/event_data.hpp>
#include <letterbox/expected_version.hpp>
#include <letterbox/recorded_event.hpp>
#include <letterbox/store_time.hpp>

#include <concepts>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>
#include <system_error>
#include <vector>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE {

/// The opt-in tag of `event_store`: a model declares
/// `using event_store_concept = letterbox::event_store_tag;`.
struct event_store_tag {};

/// `S` declares that it keeps the semantic contract of `event_store`.
template <class S>
concept event_store_opted_in = std::derived_from<typename S::event_store_concept, event_store_tag>;

/// `S` appends events to a stream inside the caller's unit of work.
template <class S>
concept event_appender = requires(S& s, typename S::unit_of_work_type& u, std::string_view stream,
                                  expected_version expected, std::span<const event_data> events,
                                  store_time now, append_result& result) {
    { s.append(u, stream, expected, events, now, result) } -> std::same_as<std::error_code>;
};

/// `S` reads one stream by version, all streams by position, and their heads.
template <class S>
concept event_reader = requires(S& s, std::string_view stream, std::uint64_t after,
                                std::size_t limit, std::error_code& ec) {
    { s.read_stream(stream, after, limit, ec) } -> std::same_as<std::vector<recorded_event>>;
    { s.read_all(after, limit, ec) } -> std::same_as<std::vector<recorded_event>>;
    { s.stream_version(stream, ec) } -> std::same_as<std::uint64_t>;
    { s.head_position(ec) } -> std::same_as<std::uint64_t>;
};

/// An append-only log of events in streams (one stream per aggregate: "account-42"), written
/// in the caller's unit of work, so that an event commits with the business write and the
/// outbox rows that publish it, or not at all.
///
/// Requirements, for `s` of type `S&`, `u` of type `S::unit_of_work_type&`, `stream` a
/// `std::string_view`, `expected` an `expected_version`, `events` a
/// `std::span<const event_data>`, `now` a `store_time`, `result` an `append_result&`,
/// `after` a `std::uint64_t`, `limit` a `std::size_t` and `ec` a `std::error_code&`:
/// 1. `S::event_store_concept` names `event_store_tag` (opt-in);
/// 2. `S::unit_of_work_type` models `unit_of_work`;
/// 3. `s.append(u, stream, expected, events, now, result)` -> `std::error_code`;
/// 4. `s.read_stream(stream, after, limit, ec)` -> `std::vector<recorded_event>`;
/// 5. `s.read_all(after, limit, ec)` -> `std::vector<recorded_event>`;
/// 6. `s.stream_version(stream, ec)` -> `std::uint64_t`;
/// 7. `s.head_position(ec)` -> `std::uint64_t`.
///
/// Semantics (what the syntax cannot say):
/// - **Errors.** Operations report failures through the returned or out-param
///   `std::error_code` and do not throw for expected failures (a conflict, a database error);
///   `ec` is cleared on success.
/// - **append** stages `events`, in order, at the end of `stream`, in `u`. Their versions
///   follow the stream's (the first event of a stream is version 1) and their positions follow
///   the store's (the first event of the store is position 1), without gaps. `recorded_at` is
///   `now`, or the latest `recorded_at` already in the store if that is later, so times never
///   decrease along positions. An empty `stream`, no event, or an event with an empty `type`
///   is `errc::invalid_argument`, with nothing staged.
/// - **The expected version decides, at commit.** When the stream (with what `u` already
///   appended to it) is not at the version `expected` names, nothing is written, and the store
///   says `errc::concurrency_conflict` either from `append` (nothing staged, `u` still usable)
///   or from `u.commit()` (which then applies none of `u`'s writes); either way `result` is
///   then {the stream's current version, 0}. Of two units that append to one stream with the same
///   `exactly(n)`, exactly one commits. `expected_version::any()` never conflicts.
/// - **Several appends in one unit** are allowed: each one's expected version counts the
///   events appended to the stream earlier in `u`.
/// - **result holds once `u` commits**: the stream's version after the append and the position
///   of its last event. A model may fill it earlier; so the caller keeps `result` alive until
///   `u` has committed.
/// - **Positions follow commit order.** When a reader has seen every event up to position
///   `p`, no event at a position at or below `p` can appear later: a catch-up reader that keeps
///   `p` as its checkpoint misses nothing.
/// - A rollback leaves no trace: no event, no version, no position consumed.
/// - **Reads** see committed events only. `read_stream` gives the events of `stream` with a
///   version above `after`, `read_all` the events of every stream with a position above
///   `after`, each in order and at most `limit` of them. `stream_version` is the stream's
///   version (0: no event), `head_position` the position of the store's last event (0: none).
/// - **Threads.** Every operation may be called concurrently from several threads.
///
/// Does not require: durability; idempotent appends by event id (a caller unsure whether an
/// append committed reads the stream, or appends with `exactly(n)` so that a second copy
/// conflicts); deleting or truncating streams.
///
/// Models: `in_memory_event_store`; `sqlite::event_store` (component `letterbox::sqlite`).
/// Archetype: `letterbox::testing::event_store_archetype`. Conformance suite:
/// `letterbox/testing/event_store_suite.hpp`.
template <class S>
concept event_store =
    event_store_opted_in<S> && has_unit_of_work<S> && event_appender<S> && event_reader<S>;

} // namespace letterbox
