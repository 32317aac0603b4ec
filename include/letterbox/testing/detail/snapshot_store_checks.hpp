// SPDX-License-Identifier: BSL-1.0
#pragma once

// The checks of the snapshot_store conformance suite, one function template each, so that
// tests/archetypes can instantiate them with `snapshot_store_archetype`. Included by
// letterbox/testing/snapshot_store_suite.hpp.

#include <letterbox/concepts/snapshot_store.hpp>
#include <letterbox/config.hpp>
#include <letterbox/error.hpp>
#include <letterbox/snapshot.hpp>
#include <letterbox/store_time.hpp>
#include <letterbox/testing/detail/store_suite_support.hpp>
#include <letterbox/testing/snapshot_store_suite.hpp>

#include <catch2/catch.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::testing::detail {

namespace store_suite {

/// The snapshot of `stream` at `version`, recorded `after` t0, by fold `fold` (1 unless told),
/// whose state names them all.
inline snapshot numbered_snapshot(std::string stream, std::uint64_t version,
                                  std::chrono::seconds after, std::uint32_t fold = 1) {
    snapshot s;
    s.state = R"({"stream":")" + stream + R"(","version":)" + std::to_string(version) +
              R"(,"fold":)" + std::to_string(fold) + "}";
    s.stream = std::move(stream);
    s.version = version;
    s.recorded_at = t0 + after;
    s.fold_version = fold;
    return s;
}

/// A snapshot, or none, in words, so that a failed comparison shows both.
inline std::string shown(const std::optional<snapshot>& s) {
    if (!s)
        return "none";
    const auto since_t0 =
        std::chrono::duration_cast<std::chrono::microseconds>(s->recorded_at - t0).count();
    return s->stream + "@" + std::to_string(s->version) + " t0+" + std::to_string(since_t0) +
           "us fold " + std::to_string(s->fold_version) + " " + s->state;
}

/// The version and time bounds that admit every snapshot.
inline constexpr std::uint64_t any_version = std::numeric_limits<std::uint64_t>::max();
inline constexpr store_time any_time = store_time::max();

/// The latest committed snapshot of `stream` under `version` and `time`, in words.
template <snapshot_store Store>
std::string latest_of(snapshot_store_harness<Store>& h, std::string_view stream,
                      std::uint64_t version = any_version, store_time time = any_time) {
    std::error_code ec;
    const auto found = h.store.latest(stream, version, time, ec);
    REQUIRE(describe(ec) == success);
    return shown(found);
}

/// Saves `snap` in a unit of its own, which must commit.
template <snapshot_store Store>
void save_committed(snapshot_store_harness<Store>& h, const snapshot& snap) {
    auto u = h.begin();
    REQUIRE(describe(h.store.save(u, snap)) == success);
    commit_unit(u);
}

/// Drops the snapshots of `stream`, which must succeed; returns how many.
template <snapshot_store Store>
std::size_t dropped(snapshot_store_harness<Store>& h, std::string_view stream) {
    std::error_code ec;
    const auto n = h.store.drop(stream, ec);
    REQUIRE(describe(ec) == success);
    return n;
}

} // namespace store_suite

/// Runs `check` against a fresh context of `Fixture`.
template <class Fixture>
void run_snapshot_store_check(
    void (*check)(snapshot_store_harness<store_suite::fixture_store_t<Fixture>>&)) {
    store_suite::run_check<Fixture>(check);
}

template <snapshot_store Store>
void snapshot_check_save_then_latest(snapshot_store_harness<Store>& h) {
    using namespace store_suite;
    CHECK(latest_of(h, "account-1") == "none");
    const auto s = numbered_snapshot("account-1", 3, 1s);
    auto u = h.begin();
    REQUIRE(describe(h.store.save(u, s)) == success);
    if (h.features.overlapping_units_of_work)
        CHECK(latest_of(h, "account-1") == "none"); // not before commit
    commit_unit(u);
    CHECK(latest_of(h, "account-1") == shown(s));
    CHECK(latest_of(h, "account-2") == "none");
    CHECK(latest_of(h, "account-") == "none"); // streams are whole names, never prefixes
    CHECK(latest_of(h, "account-10") == "none");
}

template <snapshot_store Store>
void snapshot_check_latest_under_both_bounds(snapshot_store_harness<Store>& h) {
    using namespace store_suite;
    // Times follow versions, as the times of a stream's events do.
    const auto v3 = numbered_snapshot("a", 3, 10s);
    const auto v5 = numbered_snapshot("a", 5, 20s);
    const auto v8 = numbered_snapshot("a", 8, 30s);
    save_committed(h, v5);
    save_committed(h, v8); // not in version order
    save_committed(h, v3);
    save_committed(h, numbered_snapshot("b", 9, 5s)); // another stream, never an answer for "a"

    // The version bound alone.
    CHECK(latest_of(h, "a") == shown(v8));
    CHECK(latest_of(h, "a", 9) == shown(v8));
    CHECK(latest_of(h, "a", 8) == shown(v8));
    CHECK(latest_of(h, "a", 7) == shown(v5));
    CHECK(latest_of(h, "a", 5) == shown(v5));
    CHECK(latest_of(h, "a", 4) == shown(v3));
    CHECK(latest_of(h, "a", 2) == "none");
    CHECK(latest_of(h, "a", 0) == "none");
    // The time bound alone.
    CHECK(latest_of(h, "a", any_version, t0 + 30s) == shown(v8));
    CHECK(latest_of(h, "a", any_version, t0 + 29s) == shown(v5));
    CHECK(latest_of(h, "a", any_version, t0 + 20s) == shown(v5));
    CHECK(latest_of(h, "a", any_version, t0 + 10s) == shown(v3));
    CHECK(latest_of(h, "a", any_version, t0 + 9s) == "none");
    CHECK(latest_of(h, "a", any_version, store_time::min()) == "none");
    // Both: the tighter one decides.
    CHECK(latest_of(h, "a", 7, t0 + 30s) == shown(v5));
    CHECK(latest_of(h, "a", 8, t0 + 25s) == shown(v5));
    CHECK(latest_of(h, "a", 4, t0 + 25s) == shown(v3));
    CHECK(latest_of(h, "a", 8, t0 + 5s) == "none");
    CHECK(latest_of(h, "b", 9, t0 + 5s) == shown(numbered_snapshot("b", 9, 5s)));
}

template <snapshot_store Store>
void snapshot_check_same_version_replaced(snapshot_store_harness<Store>& h) {
    using namespace store_suite;
    save_committed(h, numbered_snapshot("a", 4, 10s, 1));
    save_committed(h, numbered_snapshot("a", 2, 5s, 1));
    // A newer fold retakes version 4.
    const auto refolded = numbered_snapshot("a", 4, 10s, 2);
    save_committed(h, refolded);
    CHECK(latest_of(h, "a") == shown(refolded));
    CHECK(latest_of(h, "a", 3) == shown(numbered_snapshot("a", 2, 5s, 1))); // untouched

    // Twice in one unit: the later save stands.
    const auto third = numbered_snapshot("a", 4, 10s, 3);
    auto u = h.begin();
    REQUIRE(describe(h.store.save(u, numbered_snapshot("a", 4, 10s, 7))) == success);
    REQUIRE(describe(h.store.save(u, third)) == success);
    commit_unit(u);
    CHECK(latest_of(h, "a") == shown(third));
    CHECK(dropped(h, "a") == 2); // replaced, never added
}

template <snapshot_store Store>
void snapshot_check_rollback_leaves_no_trace(snapshot_store_harness<Store>& h) {
    using namespace store_suite;
    const auto kept = numbered_snapshot("a", 2, 5s);
    save_committed(h, kept);
    {
        auto u = h.begin();
        REQUIRE(describe(h.store.save(u, numbered_snapshot("a", 6, 9s))) == success);
        REQUIRE(describe(h.store.save(u, numbered_snapshot("a", 2, 5s, 2))) == success);
        roll_back_unit(u);
    }
    {
        auto u = h.begin(); // destroyed unfinished: rolled back
        REQUIRE(describe(h.store.save(u, numbered_snapshot("b", 1, 1s))) == success);
        REQUIRE(describe(h.store.save(u, numbered_snapshot("a", 2, 5s, 3))) == success);
    }
    CHECK(latest_of(h, "a") == shown(kept)); // not replaced either
    CHECK(latest_of(h, "b") == "none");
    CHECK(dropped(h, "a") == 1);
    CHECK(dropped(h, "b") == 0);
}

template <snapshot_store Store>
void snapshot_check_invalid_snapshots_refused(snapshot_store_harness<Store>& h) {
    using namespace store_suite;
    const auto invalid = describe(errc::invalid_argument);
    auto u = h.begin();
    CHECK(describe(h.store.save(u, numbered_snapshot("", 3, 1s))) == invalid);
    CHECK(describe(h.store.save(u, numbered_snapshot("a", 0, 1s))) == invalid);
    // Nothing was staged, and the unit stays usable: its valid save commits.
    const auto good = numbered_snapshot("a", 1, 1s);
    REQUIRE(describe(h.store.save(u, good)) == success);
    commit_unit(u);
    CHECK(latest_of(h, "a") == shown(good));
    CHECK(latest_of(h, "") == "none");
    // A finished unit refuses saves.
    CHECK(describe(h.store.save(u, numbered_snapshot("a", 2, 2s))) ==
          describe(errc::transaction_closed));
    CHECK(latest_of(h, "a") == shown(good));
}

template <snapshot_store Store>
void snapshot_check_drop_deletes_one_stream(snapshot_store_harness<Store>& h) {
    using namespace store_suite;
    save_committed(h, numbered_snapshot("a", 1, 1s));
    save_committed(h, numbered_snapshot("a", 4, 2s));
    const auto b = numbered_snapshot("b", 3, 3s);
    save_committed(h, b);
    const auto longer = numbered_snapshot("ab", 2, 3s);
    save_committed(h, longer);

    // An empty name is refused, never "every stream".
    std::error_code ec;
    CHECK(h.store.drop("", ec) == 0);
    CHECK(describe(ec) == describe(errc::invalid_argument));
    CHECK(latest_of(h, "a") == shown(numbered_snapshot("a", 4, 2s)));
    CHECK(h.store.drop("nobody", ec) == 0);
    CHECK(describe(ec) == success); // cleared

    CHECK(dropped(h, "a") == 2);
    CHECK(latest_of(h, "a") == "none");
    CHECK(latest_of(h, "b") == shown(b));
    CHECK(latest_of(h, "ab") == shown(longer));
    CHECK(dropped(h, "a") == 0);
    CHECK(dropped(h, "nobody") == 0);

    // The stream takes snapshots again.
    const auto again = numbered_snapshot("a", 5, 4s);
    save_committed(h, again);
    CHECK(latest_of(h, "a") == shown(again));
}

} // namespace letterbox::testing::detail
