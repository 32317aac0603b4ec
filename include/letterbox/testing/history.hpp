// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/config.hpp>
#include <letterbox/testing/detail/history_text.hpp>
#include <letterbox/testing/history_event.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::testing {

/// The append-only, ordered record of a pipeline run: business commits and rollbacks, what the
/// relay published, confirmed and marked, what the broker delivered, which effects handlers
/// applied, acks, nacks, dead letters and injected faults, each stamped with virtual time
/// (REPRO-06: record the history, check it offline).
///
/// The invariant checkers (`check_no_loss`, `check_aggregate_order`, ..., `check_all`) are pure
/// functions over a history, so a failing run can be re-checked, printed and kept.
///
/// Recording is cheap: an event is appended to a vector; nothing is formatted until `text()`
/// or `trace_hash()` is asked for. The text form has one line per event (see
/// `to_string(const history_event&)`), and `trace_hash()` is the 64-bit FNV-1a hash of that
/// text: two runs of one seed must give the same hash (I-21, `check_determinism`).
///
/// Order: events are kept in the order they were recorded, which is the order they happened in
/// the single-threaded simulation; time stamps never go backwards.
///
/// Thread safety: none; record from the simulation's thread.
///
/// Example:
///
///     letterbox::testing::history h;
///     h.record(0ns, transaction_committed{{{.id = id, .aggregate = "order/1", .sequence = 1}}});
///     h.record(5ns, broker_delivered{.consumer = "billing", .id = id});
///     h.record(9ns, effect_applied{.consumer = "billing", .id = id, .aggregate = "order/1",
///                                  .sequence = 1});
class history {
public:
    using const_iterator = std::vector<history_event>::const_iterator;

    /// Appends an event that happened at virtual time `at`.
    ///
    /// Throws `std::invalid_argument` if `at` is earlier than the previous event's time: virtual
    /// time never goes backwards in a simulation, so that is a bug in the recorder's caller.
    void record(std::chrono::nanoseconds at, history_event_payload what) {
        if (!events_.empty() && at < events_.back().at) {
            throw std::invalid_argument(
                "letterbox::testing::history::record: time went back from @" +
                std::to_string(events_.back().at.count()) + " to @" + std::to_string(at.count()));
        }
        events_.push_back(history_event{at, std::move(what)});
    }

    /// The events, in the order they were recorded.
    const std::vector<history_event>& events() const noexcept { return events_; }
    const history_event& operator[](std::size_t index) const { return events_.at(index); }
    std::size_t size() const noexcept { return events_.size(); }
    bool empty() const noexcept { return events_.empty(); }
    const_iterator begin() const noexcept { return events_.begin(); }
    const_iterator end() const noexcept { return events_.end(); }

    /// Reserves room for `count` events.
    void reserve(std::size_t count) { events_.reserve(count); }

    /// The text form: `to_string(event)` and a newline for each event, in order.
    std::string text() const {
        std::string out;
        for (const auto& event : events_) {
            out += to_string(event);
            out += '\n';
        }
        return out;
    }

    /// The 64-bit FNV-1a hash of `text()`, computed without building it. Stable across runs,
    /// platforms and compilers; equal histories have equal hashes.
    std::uint64_t trace_hash() const {
        std::uint64_t hash = detail::fnv1a_offset_basis;
        for (const auto& event : events_) {
            hash = detail::fnv1a(hash, to_string(event));
            hash = detail::fnv1a(hash, "\n");
        }
        return hash;
    }

    friend bool operator==(const history&, const history&) = default;

private:
    std::vector<history_event> events_;
};

} // namespace letterbox::testing
