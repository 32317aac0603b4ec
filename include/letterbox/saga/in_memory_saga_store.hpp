// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/concepts/saga_store.hpp>
#include <letterbox/config.hpp>
#include <letterbox/detail/in_memory_store_operation.hpp>
#include <letterbox/error.hpp>
#include <letterbox/in_memory_unit_of_work.hpp>
#include <letterbox/saga_instance.hpp>
#include <letterbox/store_time.hpp>

#include <algorithm>
#include <cstddef>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <tuple>
#include <utility>
#include <vector>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE {

/// A `saga_store` that keeps its instances in process memory, for tests, simulations and
/// single-process prototypes.
///
/// Limits, plainly: **not durable** (a restart forgets every instance and its timeouts), **not
/// for distributed use**, and `due_timeouts` and `purge_finished` scan every instance. Writes
/// are staged in an `in_memory_unit_of_work`, which can span the in-memory inbox and outbox
/// stores too, so a saga's step commits with its inbox record and its commands. The version
/// and the unique keys are checked again when the unit commits: of two units that update one
/// instance from the same version, or insert the same id or correlation, exactly one commits,
/// and the other's commit fails with `errc::concurrency_conflict` and applies nothing. It
/// raises every conflict a database would, so a test that passes on it does not hide one.
///
/// Fault injection: `fail_nth(n, ec)` makes the `n`-th operation from now (0 = the next one)
/// fail with `ec` and no effect. Every public operation counts as one, and so does the commit
/// of a unit of work that wrote to this store.
///
/// Thread safety: every member function may be called concurrently.
class in_memory_saga_store {
public:
    using saga_store_concept = saga_store_tag;
    using unit_of_work_type = in_memory_unit_of_work;

    in_memory_saga_store() = default;
    in_memory_saga_store(const in_memory_saga_store&) = delete;
    in_memory_saga_store& operator=(const in_memory_saga_store&) = delete;

    /// Stages `instance` as a new instance, at version 1. See `saga_store`: a taken id or
    /// correlation is `errc::concurrency_conflict`, a version other than 0
    /// `errc::precondition_failed`, an empty key `errc::invalid_argument`.
    [[nodiscard]] std::error_code insert(in_memory_unit_of_work& uow,
                                         const saga_instance& instance);

    /// Stages `instance` over the stored one, at version `instance.version + 1`, if that is
    /// still at `instance.version` when `uow` commits; else `errc::concurrency_conflict`.
    [[nodiscard]] std::error_code update(in_memory_unit_of_work& uow,
                                         const saga_instance& instance);

    /// The committed instance of `saga_type` with this id, if any.
    std::optional<saga_instance> find(std::string_view saga_type, std::string_view id,
                                      std::error_code& ec);

    /// The committed instance of `saga_type` with this correlation, if any.
    std::optional<saga_instance> find_by_correlation(std::string_view saga_type,
                                                     std::string_view correlation,
                                                     std::error_code& ec);

    /// How many instances the store holds.
    std::size_t size(std::error_code& ec);

    /// The timeouts due at `now`, earliest first, at most `limit`.
    std::vector<saga_timeout_due> due_timeouts(store_time now, std::size_t limit,
                                               std::error_code& ec);

    /// Deletes the finished instances last written before `older_than`; returns how many.
    std::size_t purge_finished(store_time older_than, std::error_code& ec);

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
    using key_type = std::pair<std::string, std::string>; // (saga type, id or correlation)

    // The keys of the unit of work's staged writes: one per instance, one per correlation.
    // The type's length first, so that no two (type, key) pairs give the same text.
    static std::string staging_key(char kind, std::string_view saga_type, std::string_view key) {
        return kind + std::to_string(saga_type.size()) + ':' + std::string(saga_type) +
               std::string(key);
    }

    // `instance` as it is stored: its timeouts earliest first, then by name.
    static saga_instance stored_form(saga_instance instance, std::uint64_t version) {
        std::sort(instance.timeouts.begin(), instance.timeouts.end(),
                  [](const saga_timeout& a, const saga_timeout& b) {
                      return std::tie(a.due, a.name) < std::tie(b.due, b.name);
                  });
        instance.version = version;
        return instance;
    }

    // Whether the committed instance (type, id) is at `version`. Under the lock.
    bool at_version(const key_type& key, std::uint64_t version) const {
        const auto it = instances_.find(key);
        return it != instances_.end() && it->second.version == version;
    }

    detail::in_memory_participant core_; // mutex + fault counter, shared with commits
    std::map<key_type, saga_instance, std::less<>> instances_;
    std::map<key_type, std::string, std::less<>> ids_by_correlation_;
};

inline std::error_code in_memory_saga_store::insert(in_memory_unit_of_work& uow,
                                                    const saga_instance& instance) {
    std::lock_guard lock(core_.mutex);
    if (auto ec = core_.faults.next())
        return ec;
    if (!uow.is_open())
        return errc::transaction_closed;
    if (instance.version != 0)
        return errc::precondition_failed;
    if (instance.saga_type.empty() || instance.id.empty() || instance.correlation.empty() ||
        !has_distinct_timeout_names(instance))
        return errc::invalid_argument;
    key_type id{instance.saga_type, instance.id};
    key_type correlation{instance.saga_type, instance.correlation};
    auto id_staged = staging_key('i', instance.saga_type, instance.id);
    auto correlation_staged = staging_key('c', instance.saga_type, instance.correlation);
    const auto taken = [this, id, correlation] {
        return instances_.contains(id) || ids_by_correlation_.contains(correlation);
    };
    if (taken() || uow.has_staged(core_, id_staged) || uow.has_staged(core_, correlation_staged))
        return errc::concurrency_conflict;
    // Decided again at commit, under the lock the commit holds: a unit that inserted the same
    // id or correlation and committed first makes this one fail.
    if (auto ec = uow.stage(
            core_, std::move(id_staged),
            [taken] {
                return taken() ? make_error_code(errc::concurrency_conflict) : std::error_code{};
            },
            [this, id, correlation, stored = stored_form(instance, 1)] {
                ids_by_correlation_.emplace(correlation, id.second);
                instances_.emplace(id, stored);
            }))
        return ec;
    // Only a key, so that a second insert of the correlation in this unit is refused.
    return uow.stage(core_, std::move(correlation_staged), nullptr, [] {});
}

inline std::error_code in_memory_saga_store::update(in_memory_unit_of_work& uow,
                                                    const saga_instance& instance) {
    std::lock_guard lock(core_.mutex);
    if (auto ec = core_.faults.next())
        return ec;
    if (!uow.is_open())
        return errc::transaction_closed;
    if (!has_distinct_timeout_names(instance))
        return errc::invalid_argument;
    key_type id{instance.saga_type, instance.id};
    auto staged = staging_key('i', instance.saga_type, instance.id);
    if (uow.has_staged(core_, staged) || !at_version(id, instance.version))
        return errc::concurrency_conflict;
    const auto read = instance.version;
    return uow.stage(
        core_, std::move(staged),
        [this, id, read] {
            return at_version(id, read) ? std::error_code{}
                                        : make_error_code(errc::concurrency_conflict);
        },
        [this, id, written = stored_form(instance, read + 1)] {
            auto& stored = instances_.at(id);
            auto correlation = std::move(stored.correlation); // the instance's for life
            stored = written;
            stored.correlation = std::move(correlation);
        });
}

inline std::optional<saga_instance>
in_memory_saga_store::find(std::string_view saga_type, std::string_view id, std::error_code& ec) {
    return detail::in_memory_store_operation(core_, ec, [&]() -> std::optional<saga_instance> {
        const auto it = instances_.find(key_type{saga_type, id});
        if (it == instances_.end())
            return std::nullopt;
        return it->second;
    });
}

inline std::optional<saga_instance>
in_memory_saga_store::find_by_correlation(std::string_view saga_type, std::string_view correlation,
                                          std::error_code& ec) {
    return detail::in_memory_store_operation(core_, ec, [&]() -> std::optional<saga_instance> {
        const auto it = ids_by_correlation_.find(key_type{saga_type, correlation});
        if (it == ids_by_correlation_.end())
            return std::nullopt;
        return instances_.at(key_type{saga_type, it->second});
    });
}

inline std::size_t in_memory_saga_store::size(std::error_code& ec) {
    return detail::in_memory_store_operation(core_, ec, [&] { return instances_.size(); });
}

inline std::vector<saga_timeout_due>
in_memory_saga_store::due_timeouts(store_time now, std::size_t limit, std::error_code& ec) {
    return detail::in_memory_store_operation(core_, ec, [&] {
        std::vector<saga_timeout_due> due;
        for (const auto& [key, instance] : instances_)
            for (const auto& t : instance.timeouts)
                if (t.due <= now)
                    due.push_back({key.first, key.second, t.name, t.due});
        const auto order = [](const saga_timeout_due& t) {
            return std::tie(t.due, t.saga_type, t.id, t.name);
        };
        std::sort(due.begin(), due.end(),
                  [&](const auto& a, const auto& b) { return order(a) < order(b); });
        if (due.size() > limit)
            due.resize(limit);
        return due;
    });
}

inline std::size_t in_memory_saga_store::purge_finished(store_time older_than,
                                                        std::error_code& ec) {
    return detail::in_memory_store_operation(core_, ec, [&] {
        return std::erase_if(instances_, [&](const auto& entry) {
            const auto& instance = entry.second;
            if (!instance.finished || instance.updated_at >= older_than)
                return false;
            ids_by_correlation_.erase(key_type{instance.saga_type, instance.correlation});
            return true;
        });
    });
}

} // namespace letterbox
