// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/concepts/checkpoint_store.hpp>
#include <letterbox/config.hpp>
#include <letterbox/detail/in_memory_store_operation.hpp>
#include <letterbox/error.hpp>
#include <letterbox/in_memory_unit_of_work.hpp>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <string_view>
#include <system_error>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE {

/// A `checkpoint_store` in process memory, for tests and single-process read models kept in
/// memory too: not durable. A save is staged in an `in_memory_unit_of_work` and checked again
/// when it commits. `fail_nth(n, ec)` fails its n-th operation (commits of units that saved here
/// count).
///
/// Thread safety: every member function may be called concurrently.
class in_memory_checkpoint_store {
public:
    using checkpoint_store_concept = checkpoint_store_tag;
    using unit_of_work_type = in_memory_unit_of_work;

    in_memory_checkpoint_store() = default;
    in_memory_checkpoint_store(const in_memory_checkpoint_store&) = delete;
    in_memory_checkpoint_store& operator=(const in_memory_checkpoint_store&) = delete;

    /// The committed checkpoint of `name` (0: none).
    std::uint64_t position(std::string_view name, std::error_code& ec) {
        return detail::in_memory_store_operation(core_, ec, [&] { return at(name); });
    }

    /// Stages the move of `name` from `expected` to `position`, if it is still at `expected`
    /// now and when `uow` commits; else `errc::concurrency_conflict`.
    [[nodiscard]] std::error_code save(in_memory_unit_of_work& uow, std::string_view name,
                                       std::uint64_t expected, std::uint64_t position) {
        std::lock_guard lock(core_.mutex);
        if (auto ec = core_.faults.next())
            return ec;
        if (!uow.is_open())
            return errc::transaction_closed;
        if (name.empty())
            return errc::invalid_argument;
        std::string key(name);
        if (at(key) != expected || uow.has_staged(core_, key))
            return errc::concurrency_conflict;
        return uow.stage(
            core_, key,
            [this, key, expected] {
                return at(key) == expected ? std::error_code{}
                                           : make_error_code(errc::concurrency_conflict);
            },
            [this, key, position] { positions_[key] = position; });
    }

    /// Begins a unit of work for this store (and any other in-memory store it spans).
    in_memory_unit_of_work begin() { return {}; }

    /// Makes operation `n` from now (0 = the next one) fail once with `ec`.
    void fail_nth(std::size_t n, std::error_code ec = errc::internal_error) {
        detail::in_memory_store_fail_nth(core_, n, ec);
    }

private:
    // Under the lock.
    std::uint64_t at(std::string_view name) const {
        const auto it = positions_.find(name);
        return it == positions_.end() ? 0 : it->second;
    }

    detail::in_memory_participant core_;
    std::map<std::string, std::uint64_t, std::less<>> positions_;
};

} // namespace letterbox
