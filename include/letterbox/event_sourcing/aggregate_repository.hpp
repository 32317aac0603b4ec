// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/append_result.hpp>
#include <letterbox/concepts/event_fold.hpp>
#include <letterbox/concepts/event_store.hpp>
#include <letterbox/concepts/snapshot_store.hpp>
#include <letterbox/config.hpp>
#include <letterbox/error.hpp>
#include <letterbox/event_data.hpp>
#include <letterbox/event_sourcing/aggregate.hpp>
#include <letterbox/event_sourcing/aggregate_options.hpp>
#include <letterbox/expected_version.hpp>
#include <letterbox/recorded_event.hpp>
#include <letterbox/snapshot.hpp>
#include <letterbox/store_time.hpp>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <concepts>
#include <cstdint>
#include <limits>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE {

/// Loads event-sourced aggregates (`aggregate<State>`) by folding their streams with `Fold`,
/// from the latest usable snapshot; appends their new events with optimistic concurrency; and
/// takes a snapshot every `options.snapshot_every` events. The state must convert to and from
/// `nlohmann::json` (`to_json` / `from_json`), which is how snapshots keep it.
///
/// - **Loads** start from the latest snapshot no later than the point asked for (`load`: the
///   stream's head; `load_at_version`; `load_at_time`: the last event recorded at or before
///   the time), then fold the events after it, up to that point. A snapshot taken by another
///   `Fold::fold_version`, whose state does not parse, or that the snapshot store fails to
///   read, is ignored (`snapshot_ignored`), and the load folds from the first event: a
///   snapshot is a cache, never a source of truth.
/// - **Appends** (`append`) expect the stream to be still at the aggregate's version: a
///   writer that loaded an older version gets `errc::concurrency_conflict`, loads again and
///   decides again. When the loaded aggregate passed a multiple of `snapshot_every` since its
///   snapshot, the same unit saves a snapshot of it, so snapshots hold only committed events
///   (their version, position and time are the store's, not guesses).
///
/// `Events` may be a `publishing_event_store`, so that appends are published through the
/// outbox in the same unit.
///
/// Thread safety: as `Events` and `Snapshots`; the repository holds references and options.
///
/// Example:
///
///     letterbox::aggregate_repository<account_fold, Events, Snapshots> accounts(
///         events, snapshots, {.snapshot_every = 50});
///     std::error_code ec;
///     auto account = accounts.load("account-42", ec);
///     if (ec)
///         return ec;
///     if (account.state.balance < amount)
///         return refuse();
///     auto uow = db.begin();
///     letterbox::append_result at;
///     if (auto e = accounts.append(uow, account, withdrawn(amount), clock.wall_now(), at))
///         return e; // a conflict: another writer moved the account first; load again
///     return uow.commit();
template <event_fold Fold, event_store Events, snapshot_store Snapshots>
    requires std::same_as<typename Events::unit_of_work_type, typename Snapshots::unit_of_work_type>
class aggregate_repository {
public:
    using state_type = typename Fold::state_type;
    using aggregate_type = aggregate<state_type>;
    using unit_of_work_type = typename Events::unit_of_work_type;

    /// Both stores must outlive the repository. `options.read_batch` below 1 counts as 1.
    aggregate_repository(Events& events, Snapshots& snapshots, aggregate_options options = {},
                         Fold fold = {})
        : events_(&events)
        , snapshots_(&snapshots)
        , options_(options)
        , fold_(std::move(fold)) {
        options_.read_batch = std::max<std::size_t>(options_.read_batch, 1);
    }

    /// The aggregate of `stream` with every committed event. A stream without events loads as
    /// the initial state at version 0.
    aggregate_type load(std::string_view stream, std::error_code& ec) {
        return load_until(stream, no_version_bound, no_time_bound, ec);
    }

    /// The aggregate of `stream` as it was after its event `version` (all of them when the
    /// stream is shorter).
    aggregate_type load_at_version(std::string_view stream, std::uint64_t version,
                                   std::error_code& ec) {
        return load_until(stream, version, no_time_bound, ec);
    }

    /// The aggregate of `stream` as it was at `time`: with the events recorded at or before it.
    aggregate_type load_at_time(std::string_view stream, store_time time, std::error_code& ec) {
        return load_until(stream, no_version_bound, time, ec);
    }

    /// Appends `events` to `a.stream` in `u`, expecting it to be still at `a.version`, and
    /// saves a snapshot of `a` in `u` when one is due (`snapshot_due`). `a` itself is not
    /// changed: load again to see the new events folded. Errors as `Events::append` (a
    /// conflict leaves `u` usable) or `Snapshots::save`.
    [[nodiscard]] std::error_code append(unit_of_work_type& u, const aggregate_type& a,
                                         std::span<const event_data> events, store_time now,
                                         append_result& result) {
        if (auto ec = events_->append(u, a.stream, expected_version::exactly(a.version), events,
                                      now, result))
            return ec;
        return snapshot_due(a) ? save_snapshot(u, a) : std::error_code{};
    }

    /// Whether `a` passed a multiple of `snapshot_every` since the snapshot it was loaded from.
    bool snapshot_due(const aggregate_type& a) const noexcept {
        const auto every = options_.snapshot_every;
        return every != 0 && a.version / every > a.snapshot_version / every;
    }

    /// Saves a snapshot of `a` in `u` (the state after its event `a.version`). Nothing to save
    /// for an aggregate at version 0, nor for a state that JSON cannot hold (text that is not
    /// UTF-8): a snapshot never fails an append.
    [[nodiscard]] std::error_code save_snapshot(unit_of_work_type& u, const aggregate_type& a) {
        if (a.version == 0)
            return {};
        snapshot s;
        s.stream = a.stream;
        s.version = a.version;
        s.recorded_at = a.recorded_at;
        s.fold_version = static_cast<std::uint32_t>(Fold::fold_version);
        try {
            s.state = nlohmann::json(a.state).dump();
        } catch (const nlohmann::json::exception&) {
            return {}; // a state JSON cannot hold (text that is not UTF-8): no snapshot, loads fold
        }
        return snapshots_->save(u, s);
    }

    const aggregate_options& options() const noexcept { return options_; }

private:
    static constexpr std::uint64_t no_version_bound = std::numeric_limits<std::uint64_t>::max();
    static constexpr store_time no_time_bound = store_time::max();

    aggregate_type load_until(std::string_view stream, std::uint64_t version, store_time time,
                              std::error_code& ec) {
        aggregate_type a;
        a.stream = std::string(stream);
        // A snapshot is a cache: one that cannot be read is ignored, as one of another fold.
        if (auto snap = snapshots_->latest(stream, version, time, ec))
            restore(a, *snap);
        else if (ec)
            a.snapshot_ignored = true;
        ec.clear();
        // Until an empty page: a store may give fewer than asked before the end.
        while (a.version < version) {
            const auto page = events_->read_stream(stream, a.version,
                                                   static_cast<std::size_t>(std::min<std::uint64_t>(
                                                       options_.read_batch, version - a.version)),
                                                   ec);
            if (ec || page.empty())
                return a;
            for (const auto& e : page) {
                if (e.version > version || e.recorded_at > time)
                    return a;
                fold_.apply(a.state, e);
                a.version = e.version;
                a.position = e.position;
                a.recorded_at = e.recorded_at;
                ++a.events_folded;
            }
        }
        return a;
    }

    // Starts `a` from `s` when `s` was taken by this fold and parses; else marks it ignored.
    static void restore(aggregate_type& a, const snapshot& s) {
        if (s.fold_version != static_cast<std::uint32_t>(Fold::fold_version)) {
            a.snapshot_ignored = true;
            return;
        }
        const auto j = nlohmann::json::parse(s.state, nullptr, false);
        if (j.is_discarded()) {
            a.snapshot_ignored = true;
            return;
        }
        try {
            a.state = j.template get<state_type>();
        } catch (const nlohmann::json::exception&) {
            a.state = state_type{};
            a.snapshot_ignored = true;
            return;
        }
        a.version = s.version;
        a.recorded_at = s.recorded_at;
        a.snapshot_version = s.version;
    }

    Events* events_;
    Snapshots* snapshots_;
    aggregate_options options_;
    Fold fold_;
};

} // namespace letterbox
