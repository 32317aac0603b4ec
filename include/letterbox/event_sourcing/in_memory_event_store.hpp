// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/append_result.hpp>
#include <letterbox/concepts/event_store.hpp>
#include <letterbox/config.hpp>
#include <letterbox/detail/in_memory_store_operation.hpp>
#include <letterbox/error.hpp>
#include <letterbox/event_data.hpp>
#include <letterbox/expected_version.hpp>
#include <letterbox/in_memory_unit_of_work.hpp>
#include <letterbox/recorded_event.hpp>
#include <letterbox/store_time.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE {

/// An `event_store` that keeps its events in process memory, for tests, simulations and
/// single-process prototypes.
///
/// Limits, plainly: **not durable** (a restart forgets every event) and **not for distributed
/// use**. Appends are staged in an `in_memory_unit_of_work`, which can span the in-memory
/// outbox, inbox and saga stores too, so events commit with the outbox rows that publish them.
/// Versions and positions are given when the unit commits, under the store's lock, so positions
/// follow commit order without gaps, as the concept requires. The expected version is checked
/// when `append` is called and again when the unit commits: of two units that append to one
/// stream with the same `exactly(n)`, the second to commit fails with
/// `errc::concurrency_conflict` and applies nothing. It raises every conflict a database
/// would, so a test that passes on it does not hide one.
///
/// `result` is filled when the unit commits (with the stream's version and position 0 when the
/// commit conflicts); keep it alive until then.
///
/// Fault injection: `fail_nth(n, ec)` makes the `n`-th operation from now (0 = the next one)
/// fail with `ec` and no effect. Every public operation counts as one, and so does the commit
/// of a unit of work that wrote to this store.
///
/// Thread safety: every member function may be called concurrently.
class in_memory_event_store {
public:
    using event_store_concept = event_store_tag;
    using unit_of_work_type = in_memory_unit_of_work;

    in_memory_event_store() = default;
    in_memory_event_store(const in_memory_event_store&) = delete;
    in_memory_event_store& operator=(const in_memory_event_store&) = delete;

    /// Stages `events` at the end of `stream`, if it is at the version `expected` names (with
    /// what `uow` appended to it already) now and when `uow` commits; else
    /// `errc::concurrency_conflict`, with `result` = {current version, 0} and nothing staged.
    /// An empty stream name, no event or an empty type is `errc::invalid_argument`.
    [[nodiscard]] std::error_code append(in_memory_unit_of_work& uow, std::string_view stream,
                                         expected_version expected,
                                         std::span<const event_data> events, store_time now,
                                         append_result& result);

    /// Up to `limit` committed events of `stream` with a version above `after_version`.
    std::vector<recorded_event> read_stream(std::string_view stream, std::uint64_t after_version,
                                            std::size_t limit, std::error_code& ec);

    /// Up to `limit` committed events with a position above `after_position`, in order.
    std::vector<recorded_event> read_all(std::uint64_t after_position, std::size_t limit,
                                         std::error_code& ec);

    /// The version of `stream`'s last committed event (0: none).
    std::uint64_t stream_version(std::string_view stream, std::error_code& ec);

    /// The position of the last committed event (0: none).
    std::uint64_t head_position(std::error_code& ec);

    /// Begins a unit of work for this store (and any other in-memory store it spans).
    in_memory_unit_of_work begin() { return {}; }

    /// Makes operation `n` from now (0 = the next one) fail once with `ec`; replaces any
    /// earlier request.
    void fail_nth(std::size_t n, std::error_code ec = errc::internal_error) {
        detail::in_memory_store_fail_nth(core_, n, ec);
    }

    /// How many operations were counted so far (including failed ones and commits).
    std::size_t operation_count() { return detail::in_memory_store_operation_count(core_); }

private:
    // The committed version of `stream`. Under the lock.
    std::uint64_t version_of(std::string_view stream) const {
        const auto it = streams_.find(stream);
        return it == streams_.end() ? 0 : it->second.size();
    }

    // Appends one committed event to `stream` and the log. Under the lock, at commit.
    const recorded_event& record(const std::string& stream, const event_data& event,
                                 store_time now) {
        auto& indexes = streams_[stream];
        recorded_event r;
        r.stream = stream;
        r.version = indexes.size() + 1;
        r.position = log_.size() + 1;
        r.id = event.id;
        r.type = event.type;
        r.data = event.data;
        r.metadata = event.metadata;
        r.recorded_at = log_.empty() ? now : std::max(now, log_.back().recorded_at);
        indexes.push_back(log_.size());
        log_.push_back(std::move(r));
        return log_.back();
    }

    detail::in_memory_participant core_; // mutex + fault counter, shared with commits
    std::vector<recorded_event> log_;    // by position - 1
    std::map<std::string, std::vector<std::size_t>, std::less<>> streams_; // indexes into log_
};

inline std::error_code in_memory_event_store::append(in_memory_unit_of_work& uow,
                                                     std::string_view stream,
                                                     expected_version expected,
                                                     std::span<const event_data> events,
                                                     store_time now, append_result& result) {
    std::lock_guard lock(core_.mutex);
    if (auto ec = core_.faults.next())
        return ec;
    if (!uow.is_open())
        return errc::transaction_closed;
    if (stream.empty() || events.empty() ||
        std::any_of(events.begin(), events.end(),
                    [](const event_data& e) { return e.type.empty(); }))
        return errc::invalid_argument;
    // One staged write per event, keyed by the stream: their count is what this unit appended
    // to the stream before, which this append's expected version counts.
    std::string key(stream);
    const auto committed = version_of(stream);
    const auto current = committed + uow.count_staged(core_, key);
    if (!expected.admits(current)) {
        result = {current, 0};
        return errc::concurrency_conflict;
    }
    for (std::size_t i = 0; i < events.size(); ++i) {
        std::function<std::error_code()> validate;
        if (i == 0 && !expected.is_any())
            // Decided again at commit, under the lock the commit holds: a unit that appended
            // to the stream and committed first makes this one fail.
            // The stream's version is reported then too.
            validate = [this, key, committed, &result] {
                const auto now = version_of(key);
                if (now == committed)
                    return std::error_code{};
                result = {now, 0};
                return make_error_code(errc::concurrency_conflict);
            };
        const bool last = i + 1 == events.size();
        if (auto ec = uow.stage(core_, key, std::move(validate),
                                [this, key, event = events[i], now, last, &result] {
                                    const auto& r = record(key, event, now);
                                    if (last)
                                        result = {r.version, r.position};
                                }))
            return ec;
    }
    return {};
}

inline std::vector<recorded_event> in_memory_event_store::read_stream(std::string_view stream,
                                                                      std::uint64_t after_version,
                                                                      std::size_t limit,
                                                                      std::error_code& ec) {
    return detail::in_memory_store_operation(core_, ec, [&] {
        std::vector<recorded_event> events;
        const auto it = streams_.find(stream);
        if (it == streams_.end() || after_version >= it->second.size())
            return events;
        const auto& indexes = it->second;
        const auto end = indexes.size() - after_version > limit
                             ? after_version + limit
                             : static_cast<std::uint64_t>(indexes.size());
        for (auto v = after_version; v < end; ++v)
            events.push_back(log_[indexes[v]]);
        return events;
    });
}

inline std::vector<recorded_event> in_memory_event_store::read_all(std::uint64_t after_position,
                                                                   std::size_t limit,
                                                                   std::error_code& ec) {
    return detail::in_memory_store_operation(core_, ec, [&] {
        std::vector<recorded_event> events;
        if (after_position >= log_.size())
            return events;
        const auto end = log_.size() - after_position > limit
                             ? after_position + limit
                             : static_cast<std::uint64_t>(log_.size());
        events.assign(log_.begin() + static_cast<std::ptrdiff_t>(after_position),
                      log_.begin() + static_cast<std::ptrdiff_t>(end));
        return events;
    });
}

inline std::uint64_t in_memory_event_store::stream_version(std::string_view stream,
                                                           std::error_code& ec) {
    return detail::in_memory_store_operation(core_, ec, [&] { return version_of(stream); });
}

inline std::uint64_t in_memory_event_store::head_position(std::error_code& ec) {
    return detail::in_memory_store_operation(
        core_, ec, [&] { return static_cast<std::uint64_t>(log_.size()); });
}

} // namespace letterbox
