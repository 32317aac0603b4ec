// SPDX-License-Identifier: BSL-1.0
#pragma once

// The checks of the event_store conformance suite that run on one thread, one function
// template each, so that tests/archetypes can instantiate them with `event_store_archetype`.
// Included by letterbox/testing/event_store_suite.hpp; the concurrent checks are in
// event_store_concurrency_checks.hpp, included at the end (they use the helpers here).

#include <letterbox/append_result.hpp>
#include <letterbox/concepts/event_store.hpp>
#include <letterbox/config.hpp>
#include <letterbox/error.hpp>
#include <letterbox/event_data.hpp>
#include <letterbox/expected_version.hpp>
#include <letterbox/message.hpp>
#include <letterbox/recorded_event.hpp>
#include <letterbox/testing/detail/store_suite_support.hpp>
#include <letterbox/testing/event_store_suite.hpp>

#include <catch2/catch.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::testing::detail {

namespace store_suite {

/// An event of `type` whose id and data both say `n`: ids differ between events of a check.
inline event_data numbered_event(std::string type, std::uint32_t n) {
    event_data e;
    for (std::size_t i = 0; i < 4; ++i)
        e.id.data[12 + i] = static_cast<std::uint8_t>(n >> (8 * (3 - i)));
    e.id.data[0] = 0xe7; // never the nil id
    e.type = std::move(type);
    e.data = R"({"n":)" + std::to_string(n) + "}";
    e.metadata = R"({"correlation_id":"c-)" + std::to_string(n) + R"("})";
    return e;
}

/// `count` events numbered from `first`, of type "deposited".
inline std::vector<event_data> numbered_events(std::uint32_t first, std::uint32_t count) {
    std::vector<event_data> events;
    for (std::uint32_t n = first; n < first + count; ++n)
        events.push_back(numbered_event("deposited", n));
    return events;
}

/// Appends `events` to `stream` in a unit of its own, which must commit; returns the result.
template <event_store Store>
append_result append_committed(event_store_harness<Store>& h, std::string_view stream,
                               expected_version expected, std::span<const event_data> events,
                               store_time now = t0) {
    append_result result;
    auto u = h.begin();
    REQUIRE(describe(h.store.append(u, stream, expected, events, now, result)) == success);
    commit_unit(u);
    return result;
}

/// Appends `events` to `stream` in a unit of its own, then commits. A conflict from the
/// append rolls the unit back.
template <event_store Store>
write_outcome append_and_commit(event_store_harness<Store>& h, std::string_view stream,
                                expected_version expected, std::span<const event_data> events,
                                std::string* error = nullptr) {
    append_result result;
    auto u = h.begin();
    return finish_write(u, h.store.append(u, stream, expected, events, t0, result), error);
}

template <event_store Store>
std::vector<recorded_event> stream_events(event_store_harness<Store>& h, std::string_view stream,
                                          std::uint64_t after = 0, std::size_t limit = 1000) {
    std::error_code ec;
    auto events = h.store.read_stream(stream, after, limit, ec);
    REQUIRE(describe(ec) == success);
    return events;
}

template <event_store Store>
std::vector<recorded_event> all_events(event_store_harness<Store>& h, std::uint64_t after = 0,
                                       std::size_t limit = 100000) {
    std::error_code ec;
    auto events = h.store.read_all(after, limit, ec);
    REQUIRE(describe(ec) == success);
    return events;
}

template <event_store Store>
std::uint64_t version_of(event_store_harness<Store>& h, std::string_view stream) {
    std::error_code ec;
    const auto v = h.store.stream_version(stream, ec);
    REQUIRE(describe(ec) == success);
    return v;
}

template <event_store Store>
std::uint64_t head_of(event_store_harness<Store>& h) {
    std::error_code ec;
    const auto p = h.store.head_position(ec);
    REQUIRE(describe(ec) == success);
    return p;
}

/// The versions, or the positions, of `events`.
inline std::vector<std::uint64_t> versions(const std::vector<recorded_event>& events) {
    std::vector<std::uint64_t> v;
    for (const auto& e : events)
        v.push_back(e.version);
    return v;
}
inline std::vector<std::uint64_t> positions(const std::vector<recorded_event>& events) {
    std::vector<std::uint64_t> p;
    for (const auto& e : events)
        p.push_back(e.position);
    return p;
}

/// `event` as the store must give it back at `version`, `position` and `at`.
inline recorded_event recorded(const event_data& event, std::string stream, std::uint64_t version,
                               std::uint64_t position, store_time at = t0) {
    return {std::move(stream), version,    position,       event.id,
            event.type,        event.data, event.metadata, at};
}

} // namespace store_suite

/// Runs `check` against a fresh context of `Fixture`.
template <class Fixture>
void run_event_store_check(
    void (*check)(event_store_harness<store_suite::fixture_store_t<Fixture>>&)) {
    store_suite::run_check<Fixture>(check);
}

template <event_store Store>
void event_check_append_then_read(event_store_harness<Store>& h) {
    using namespace store_suite;
    CHECK(head_of(h) == 0);
    CHECK(version_of(h, "account-1") == 0);
    const auto events = numbered_events(1, 2);
    append_result result;
    auto u = h.begin();
    REQUIRE(describe(h.store.append(u, "account-1", expected_version::no_stream(), events, t0,
                                    result)) == success);
    if (h.features.overlapping_units_of_work) {
        CHECK(stream_events(h, "account-1").empty()); // not before commit
        CHECK(head_of(h) == 0);
    }
    commit_unit(u);
    CHECK(result == append_result{2, 2});

    const std::vector<recorded_event> expected{recorded(events[0], "account-1", 1, 1),
                                               recorded(events[1], "account-1", 2, 2)};
    CHECK(stream_events(h, "account-1") == expected);
    CHECK(all_events(h) == expected);
    CHECK(version_of(h, "account-1") == 2);
    CHECK(head_of(h) == 2);
    CHECK(stream_events(h, "account-2").empty());
    CHECK(version_of(h, "account-2") == 0);
}

template <event_store Store>
void event_check_stale_append_conflicts(event_store_harness<Store>& h) {
    using namespace store_suite;
    append_committed(h, "account-1", expected_version::no_stream(), numbered_events(1, 1));
    // Two writers read version 1; the first appends and commits.
    append_committed(h, "account-1", expected_version::exactly(1), numbered_events(2, 1));

    // The second: never appended after the first's event.
    append_result result;
    auto u = h.begin();
    REQUIRE(describe(h.store.append(u, "account-2", expected_version::no_stream(),
                                    numbered_events(10, 1), t0, result)) == success);
    const auto ec = h.store.append(u, "account-1", expected_version::exactly(1),
                                   numbered_events(3, 1), t0, result);
    if (ec) {
        CHECK(describe(ec) == describe(errc::concurrency_conflict));
        CHECK(result == append_result{2, 0}); // the current version is reported
        commit_unit(u);                       // the unit stays usable: its other append commits
        CHECK(version_of(h, "account-2") == 1);
    } else {
        CHECK(describe(u.commit()) == describe(errc::concurrency_conflict));
        CHECK(result == append_result{2, 0});   // the current version is reported
        CHECK(version_of(h, "account-2") == 0); // the loser applies none of its appends
    }
    CHECK(versions(stream_events(h, "account-1")) == std::vector<std::uint64_t>{1, 2});
    CHECK(stream_events(h, "account-1").back().id == numbered_event("deposited", 2).id);
}

template <event_store Store>
void event_check_expected_versions(event_store_harness<Store>& h) {
    using namespace store_suite;
    const auto one = numbered_events(1, 1);
    const auto refused = [&](std::string_view stream, expected_version expected,
                             std::uint64_t current) {
        append_result result;
        auto u = h.begin();
        CHECK(describe(h.store.append(u, stream, expected, one, t0, result)) ==
              describe(errc::concurrency_conflict));
        CHECK(result == append_result{current, 0});
        roll_back_unit(u);
    };
    // A new stream: no_stream, exactly(0) and any admit it; exactly(1) does not.
    refused("a", expected_version::exactly(1), 0);
    CHECK(append_committed(h, "a", expected_version::no_stream(), one).version == 1);
    CHECK(append_committed(h, "b", expected_version::exactly(0), one).version == 1);
    CHECK(append_committed(h, "c", expected_version::any(), one).version == 1);
    // An existing stream at 1.
    refused("a", expected_version::no_stream(), 1);
    refused("a", expected_version::exactly(0), 1);
    refused("a", expected_version::exactly(2), 1);
    CHECK(append_committed(h, "a", expected_version::exactly(1), one).version == 2);
    CHECK(append_committed(h, "a", expected_version::any(), one).version == 3);
    CHECK(version_of(h, "a") == 3);
    CHECK(head_of(h) == 5);
}

template <event_store Store>
void event_check_appends_in_one_unit(event_store_harness<Store>& h) {
    using namespace store_suite;
    const auto first = numbered_events(1, 2);
    const auto second = numbered_events(3, 1);
    append_result r1;
    append_result r2;
    append_result r3;
    auto u = h.begin();
    REQUIRE(describe(h.store.append(u, "a", expected_version::no_stream(), first, t0, r1)) ==
            success);
    // The second append's expectation counts the first's two events.
    CHECK(describe(h.store.append(u, "a", expected_version::no_stream(), second, t0, r3)) ==
          describe(errc::concurrency_conflict));
    CHECK(r3 == append_result{2, 0});
    REQUIRE(describe(h.store.append(u, "a", expected_version::exactly(2), second, t0, r2)) ==
            success);
    commit_unit(u);
    CHECK(r1 == append_result{2, 2});
    CHECK(r2 == append_result{3, 3});
    CHECK(stream_events(h, "a") == std::vector<recorded_event>{recorded(first[0], "a", 1, 1),
                                                               recorded(first[1], "a", 2, 2),
                                                               recorded(second[0], "a", 3, 3)});
}

template <event_store Store>
void event_check_reads_after_with_limit(event_store_harness<Store>& h) {
    using namespace store_suite;
    append_committed(h, "a", expected_version::no_stream(), numbered_events(1, 5));
    append_committed(h, "b", expected_version::no_stream(), numbered_events(6, 2));
    CHECK(versions(stream_events(h, "a", 2, 2)) == std::vector<std::uint64_t>{3, 4});
    CHECK(versions(stream_events(h, "a", 3)) == std::vector<std::uint64_t>{4, 5});
    CHECK(stream_events(h, "a", 5).empty());
    CHECK(stream_events(h, "a", 99).empty());
    CHECK(stream_events(h, "a", 0, 0).empty());
    CHECK(stream_events(h, "nobody").empty());
    CHECK(positions(all_events(h, 3, 2)) == std::vector<std::uint64_t>{4, 5});
    CHECK(positions(all_events(h, 5)) == std::vector<std::uint64_t>{6, 7});
    CHECK(all_events(h, 7).empty());
    CHECK(all_events(h, 0, 0).empty());
}

template <event_store Store>
void event_check_positions_are_global(event_store_harness<Store>& h) {
    using namespace store_suite;
    CHECK(append_committed(h, "a", expected_version::any(), numbered_events(1, 2)) ==
          append_result{2, 2});
    CHECK(append_committed(h, "b", expected_version::any(), numbered_events(3, 1)) ==
          append_result{1, 3});
    CHECK(append_committed(h, "a", expected_version::any(), numbered_events(4, 1)) ==
          append_result{3, 4});
    const auto all = all_events(h);
    CHECK(positions(all) == std::vector<std::uint64_t>{1, 2, 3, 4});
    CHECK(versions(all) == std::vector<std::uint64_t>{1, 2, 1, 3});
    std::vector<std::string> streams;
    for (const auto& e : all)
        streams.push_back(e.stream);
    CHECK(streams == std::vector<std::string>{"a", "a", "b", "a"});
    CHECK(positions(stream_events(h, "a")) == std::vector<std::uint64_t>{1, 2, 4});
}

template <event_store Store>
void event_check_rollback_leaves_no_trace(event_store_harness<Store>& h) {
    using namespace store_suite;
    append_committed(h, "a", expected_version::any(), numbered_events(1, 1));
    {
        append_result result;
        auto u = h.begin();
        REQUIRE(describe(h.store.append(u, "a", expected_version::exactly(1), numbered_events(2, 3),
                                        t0, result)) == success);
        roll_back_unit(u);
    }
    {
        append_result result;
        auto u = h.begin();
        REQUIRE(describe(h.store.append(u, "b", expected_version::any(), numbered_events(5, 1), t0,
                                        result)) == success);
    } // destroyed without a commit
    CHECK(version_of(h, "a") == 1);
    CHECK(version_of(h, "b") == 0);
    CHECK(head_of(h) == 1);
    // No version and no position was consumed.
    CHECK(append_committed(h, "b", expected_version::no_stream(), numbered_events(6, 1)) ==
          append_result{1, 2});
    CHECK(positions(all_events(h)) == std::vector<std::uint64_t>{1, 2});
}

template <event_store Store>
void event_check_invalid_appends_refused(event_store_harness<Store>& h) {
    using namespace store_suite;
    const auto good = numbered_events(1, 1);
    auto untyped = numbered_events(2, 2);
    untyped[1].type.clear();
    append_result result;
    auto u = h.begin();
    const auto invalid = describe(errc::invalid_argument);
    CHECK(describe(h.store.append(u, "", expected_version::any(), good, t0, result)) == invalid);
    CHECK(describe(h.store.append(u, "a", expected_version::any(), std::span<const event_data>{},
                                  t0, result)) == invalid);
    CHECK(describe(h.store.append(u, "a", expected_version::any(), untyped, t0, result)) ==
          invalid);
    // Nothing was staged: the unit commits, empty.
    commit_unit(u);
    CHECK(head_of(h) == 0);
    CHECK(describe(h.store.append(u, "a", expected_version::any(), good, t0, result)) ==
          describe(errc::transaction_closed));
    CHECK(head_of(h) == 0);
}

template <event_store Store>
void event_check_times_never_decrease(event_store_harness<Store>& h) {
    using namespace store_suite;
    append_committed(h, "a", expected_version::any(), numbered_events(1, 1), t0 + 10s);
    // A writer whose clock is behind: its event is not recorded before the one it follows.
    append_committed(h, "b", expected_version::any(), numbered_events(2, 1), t0 + 5s);
    append_committed(h, "a", expected_version::any(), numbered_events(3, 1), t0 + 20s);
    const auto all = all_events(h);
    REQUIRE(all.size() == 3);
    CHECK(all[0].recorded_at == t0 + 10s);
    CHECK(all[1].recorded_at == t0 + 10s);
    CHECK(all[2].recorded_at == t0 + 20s);
}

} // namespace letterbox::testing::detail

#include <letterbox/testing/detail/event_store_concurrency_checks.hpp>
