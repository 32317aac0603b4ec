// SPDX-License-Identifier: BSL-1.0
#pragma once

// The checks of the event_store conformance suite about concurrent writers and readers: two
// writers at one expected version (optimistic concurrency), and a catch-up reader following
// appenders (positions in commit order, without gaps). Included by
// letterbox/testing/event_store_suite.hpp.

#include <letterbox/append_result.hpp>
#include <letterbox/concepts/event_store.hpp>
#include <letterbox/config.hpp>
#include <letterbox/error.hpp>
#include <letterbox/expected_version.hpp>
#include <letterbox/recorded_event.hpp>
#include <letterbox/testing/detail/event_store_checks.hpp>
#include <letterbox/testing/detail/store_suite_support.hpp>
#include <letterbox/testing/event_store_suite.hpp>

#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <latch>
#include <map>
#include <string>
#include <thread>
#include <vector>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::testing::detail {

template <event_store Store>
void event_check_overlapping_appends_one_commits(event_store_harness<Store>& h) {
    using namespace store_suite;
    if (!h.features.overlapping_units_of_work) {
        WARN("no overlapping units of work: checked by the [threads] cases only");
        return;
    }
    append_committed(h, "a", expected_version::no_stream(), numbered_events(1, 1));
    append_result r1;
    append_result r2;
    auto u1 = h.begin();
    auto u2 = h.begin();
    REQUIRE(describe(h.store.append(u1, "a", expected_version::exactly(1), numbered_events(2, 1),
                                    t0, r1)) == success);
    REQUIRE(describe(h.store.append(u2, "b", expected_version::any(), numbered_events(3, 1), t0,
                                    r2)) == success);
    const auto second = describe(
        h.store.append(u2, "a", expected_version::exactly(1), numbered_events(4, 1), t0, r2));
    REQUIRE((second == success || second == describe(errc::concurrency_conflict)));
    commit_unit(u1);
    if (second == success) {
        // The version decides at commit, and the loser applies none of its appends.
        CHECK(describe(u2.commit()) == describe(errc::concurrency_conflict));
        CHECK(version_of(h, "b") == 0);
    }
    CHECK(r2 == append_result{2, 0}); // the current version is reported either way
    CHECK(versions(stream_events(h, "a")) == std::vector<std::uint64_t>{1, 2});
    CHECK(stream_events(h, "a").back().id == numbered_event("deposited", 2).id);
    CHECK(head_of(h) == 2);
}

template <event_store Store>
void event_check_positions_follow_commit_order(event_store_harness<Store>& h) {
    using namespace store_suite;
    if (!h.features.overlapping_units_of_work) {
        WARN("no overlapping units of work: checked by the [threads] reader only");
        return;
    }
    // The unit that appends first commits last: its events come after the other's.
    const auto first = numbered_events(1, 2);
    const auto second = numbered_events(3, 1);
    append_result r1;
    append_result r2;
    auto u1 = h.begin();
    auto u2 = h.begin();
    REQUIRE(describe(h.store.append(u1, "a", expected_version::any(), first, t0, r1)) == success);
    REQUIRE(describe(h.store.append(u2, "b", expected_version::any(), second, t0, r2)) == success);
    commit_unit(u2);
    // A reader now has seen position 1; nothing may appear below it later.
    CHECK(positions(all_events(h)) == std::vector<std::uint64_t>{1});
    commit_unit(u1);
    CHECK(r2 == append_result{1, 1});
    CHECK(r1 == append_result{2, 3});
    CHECK(all_events(h) == std::vector<recorded_event>{recorded(second[0], "b", 1, 1),
                                                       recorded(first[0], "a", 1, 2),
                                                       recorded(first[1], "a", 2, 3)});
}

template <event_store Store>
void event_check_concurrent_appends_one_commits(event_store_harness<Store>& h) {
    using namespace store_suite;
    for (std::uint32_t round = 0; round < 25; ++round) {
        INFO("round " << round);
        const auto stream = "account-" + std::to_string(round);
        append_committed(h, stream, expected_version::no_stream(), numbered_events(round, 1));
        std::latch read_both(2);
        const int winner = race_two_writers([&](int who, std::string& error) {
            std::error_code ec;
            const auto read = h.store.stream_version(stream, ec);
            read_both.arrive_and_wait(); // both read version 1 before either appends
            if (ec || read != 1) {
                error = "stream_version: " + describe(ec) + " " + std::to_string(read);
                return write_outcome::error;
            }
            const auto mine =
                numbered_events(1000 + 2 * round + static_cast<std::uint32_t>(who), 1);
            return append_and_commit(h, stream, expected_version::exactly(read), mine, &error);
        });
        const auto events = stream_events(h, stream);
        REQUIRE(events.size() == 2);
        CHECK(
            events[1].id ==
            numbered_event("deposited", 1000 + 2 * round + static_cast<std::uint32_t>(winner)).id);
    }
}

/// Four writers append to shared and own streams, in units of one to three events, some of
/// which roll back, while a reader follows `read_all` from its checkpoint in small pages. Every
/// page must continue the checkpoint without a gap, and the reader must end with every
/// committed event: a model whose positions do not follow commit order (or that consumes one
/// in a rollback) fails here.
template <event_store Store>
void event_check_catch_up_reader_misses_nothing(event_store_harness<Store>& h) {
    using namespace store_suite;
    constexpr std::uint32_t writers = 4;
    constexpr std::uint32_t units_per_writer = 40;
    std::atomic<std::uint64_t> committed{0};
    std::atomic<bool> writing{true};
    std::vector<std::string> errors(writers + 1);
    std::latch start(writers + 1);

    auto write = [&](std::uint32_t who) {
        start.arrive_and_wait();
        for (std::uint32_t i = 0; i < units_per_writer; ++i) {
            const auto count = 1 + (who + i) % 3;
            const auto stream =
                i % 2 == 0 ? "shared-" + std::to_string(i % 3) : "own-" + std::to_string(who);
            const auto events = numbered_events(10000 * who + 10 * i, count);
            append_result result;
            auto u = h.begin();
            if (const auto ec =
                    h.store.append(u, stream, expected_version::any(), events, t0, result)) {
                errors[who] = "append: " + describe(ec);
                return;
            }
            const bool keep = (who + i) % 5 != 0;
            if (const auto ec = keep ? u.commit() : u.rollback()) {
                errors[who] = "commit: " + describe(ec);
                return;
            }
            if (keep)
                committed += count;
        }
    };
    std::vector<std::thread> threads;
    for (std::uint32_t who = 0; who < writers; ++who)
        threads.emplace_back(write, who);

    std::vector<recorded_event> seen;
    auto read = [&] {
        start.arrive_and_wait();
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
        std::uint64_t checkpoint = 0;
        for (;;) {
            const bool last_round = !writing.load();
            std::error_code ec;
            const auto page = h.store.read_all(checkpoint, 7, ec);
            if (ec) {
                errors[writers] = "read_all: " + describe(ec);
                return;
            }
            for (const auto& e : page) {
                if (e.position != checkpoint + 1) {
                    errors[writers] = "after position " + std::to_string(checkpoint) +
                                      " the reader got " + std::to_string(e.position);
                    return;
                }
                checkpoint = e.position;
                seen.push_back(e);
            }
            if (page.empty() && last_round)
                return;
            if (page.empty())
                std::this_thread::yield(); // the writers need the core more
            if (std::chrono::steady_clock::now() > deadline) {
                errors[writers] = "the reader did not catch up within 60 s";
                return;
            }
        }
    };
    std::thread reader(read);
    for (auto& t : threads)
        t.join();
    writing = false;
    reader.join();
    for (const auto& e : errors)
        CHECK(e.empty());
    INFO(errors[0] << errors[1] << errors[2] << errors[3] << errors[4]);

    CHECK(seen.size() == committed.load());
    CHECK(seen == all_events(h));
    // Each stream's versions run from 1 without gaps, in position order.
    std::map<std::string, std::uint64_t> last_version;
    for (const auto& e : seen) {
        CHECK(e.version == ++last_version[e.stream]);
    }
    CHECK(head_of(h) == committed.load());
}

} // namespace letterbox::testing::detail
