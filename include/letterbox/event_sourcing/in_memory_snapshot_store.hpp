// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/concepts/snapshot_store.hpp>
#include <letterbox/config.hpp>
#include <letterbox/detail/in_memory_store_operation.hpp>
#include <letterbox/error.hpp>
#include <letterbox/in_memory_unit_of_work.hpp>
#include <letterbox/snapshot.hpp>
#include <letterbox/store_time.hpp>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE {

/// A `snapshot_store` in process memory, for tests, simulations and single-process
/// prototypes: not durable. Saves are staged in an `in_memory_unit_of_work`, so a snapshot
/// commits with the unit that took it. `fail_nth(n, ec)` fails its n-th operation (commits of
/// units that saved here count).
///
/// Thread safety: every member function may be called concurrently.
class in_memory_snapshot_store {
public:
    using snapshot_store_concept = snapshot_store_tag;
    using unit_of_work_type = in_memory_unit_of_work;

    in_memory_snapshot_store() = default;
    in_memory_snapshot_store(const in_memory_snapshot_store&) = delete;
    in_memory_snapshot_store& operator=(const in_memory_snapshot_store&) = delete;

    /// Stages `snap`, replacing a stored snapshot of the same stream and version when `uow`
    /// commits. An empty stream or a version of 0 is `errc::invalid_argument`.
    [[nodiscard]] std::error_code save(in_memory_unit_of_work& uow, const snapshot& snap) {
        std::lock_guard lock(core_.mutex);
        if (auto ec = core_.faults.next())
            return ec;
        if (!uow.is_open())
            return errc::transaction_closed;
        if (snap.stream.empty() || snap.version == 0)
            return errc::invalid_argument;
        return uow.stage(core_, snap.stream, nullptr,
                         [this, snap] { snapshots_[snap.stream][snap.version] = snap; });
    }

    /// The latest committed snapshot of `stream` at or before both `version` and `time`.
    std::optional<snapshot> latest(std::string_view stream, std::uint64_t version, store_time time,
                                   std::error_code& ec) {
        return detail::in_memory_store_operation(core_, ec, [&]() -> std::optional<snapshot> {
            const auto it = snapshots_.find(stream);
            if (it == snapshots_.end())
                return std::nullopt;
            // Times never decrease along versions, so the first match from the top is the one.
            for (auto s = it->second.upper_bound(version); s != it->second.begin();) {
                --s;
                if (s->second.recorded_at <= time)
                    return s->second;
            }
            return std::nullopt;
        });
    }

    /// Deletes the snapshots of `stream`; says how many. An empty `stream` is
    /// `errc::invalid_argument`.
    std::size_t drop(std::string_view stream, std::error_code& ec) {
        return detail::in_memory_store_operation(core_, ec, [&]() -> std::size_t {
            if (stream.empty()) {
                ec = errc::invalid_argument;
                return 0;
            }
            const auto it = snapshots_.find(stream);
            if (it == snapshots_.end())
                return 0;
            const auto n = it->second.size();
            snapshots_.erase(it);
            return n;
        });
    }

    /// Begins a unit of work for this store (and any other in-memory store it spans).
    in_memory_unit_of_work begin() { return {}; }

    /// Makes operation `n` from now (0 = the next one) fail once with `ec`.
    void fail_nth(std::size_t n, std::error_code ec = errc::internal_error) {
        detail::in_memory_store_fail_nth(core_, n, ec);
    }

private:
    detail::in_memory_participant core_;
    std::map<std::string, std::map<std::uint64_t, snapshot>, std::less<>> snapshots_;
};

} // namespace letterbox
