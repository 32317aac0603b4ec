// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/config.hpp>
#include <letterbox/error.hpp>

#include <functional>
#include <memory>
#include <system_error>
#include <typeinfo>
#include <utility>
#include <vector>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE {

/// The transaction that the deliveries of one group commit share
/// (`consumer_options::group_commit`, docs/group-commit.md). The consumer makes one for each
/// batch, hands it to each delivery's pipeline (`middleware::handling::group`), commits it once
/// all of them ran, and only then acknowledges the deliveries whose pipelines succeeded.
///
/// A transactional handler joins it: `middleware::idempotent` begins the shared unit of work
/// with the batch's first message, and runs each message in a savepoint of it
/// (`savepoint_unit_of_work`), so that a failing message is rolled back alone and its
/// batch-mates stay staged. A handler whose unit is of another type, or has no savepoints,
/// commits on its own, as it does without a group.
///
/// Thread safety: one thread at a time (the consumer runs a batch in one go).
class commit_group {
public:
    commit_group() = default;
    commit_group(const commit_group&) = delete;
    commit_group& operator=(const commit_group&) = delete;
    /// Rolls back the shared unit if it was not committed.
    ~commit_group() = default;

    /// The unit of type `U` that the group's messages share: begun with `begin()` on the first
    /// call, the same one after it. Null when the group already holds a unit of another type,
    /// or is finished (committed or abandoned). What `begin()` throws propagates, and the group
    /// still holds no unit.
    template <class U, class Begin>
    U* unit(Begin& begin) {
        if (finished_)
            return nullptr;
        if (!unit_)
            unit_ = std::make_unique<holder<U>>(begin());
        if (unit_->type() != typeid(U))
            return nullptr;
        return &static_cast<holder<U>&>(*unit_).u;
    }

    /// Whether a member has begun the shared unit.
    bool has_unit() const noexcept { return unit_ != nullptr; }

    /// Registers `f` to run after the group committed, after the unit's own `on_commit`
    /// callbacks, in registration order (a member's crash point after the commit, say).
    void after_commit(std::function<void()> f) { after_commit_.push_back(std::move(f)); }

    /// Commits the shared unit (success when no member began one), then runs the `after_commit`
    /// functions. Returns the unit's commit result, or `errc::transaction_closed` when the group
    /// was already finished. An exception from a callback propagates after the commit applied.
    [[nodiscard]] std::error_code commit() {
        if (finished_)
            return errc::transaction_closed;
        finished_ = true;
        if (unit_)
            if (std::error_code ec = unit_->commit())
                return ec;
        auto then = std::move(after_commit_);
        after_commit_.clear();
        for (auto& f : then)
            f();
        return {};
    }

    /// Rolls the shared unit back and finishes the group: the process stops here (a member hit
    /// a crash point). `commit()` then returns `errc::transaction_closed`.
    void abandon() noexcept {
        finished_ = true;
        unit_.reset();
        after_commit_.clear();
    }

    /// Whether `commit()` or `abandon()` was called.
    bool finished() const noexcept { return finished_; }

private:
    struct holder_base {
        virtual ~holder_base() = default;
        virtual const std::type_info& type() const noexcept = 0;
        virtual std::error_code commit() = 0;
    };

    template <class U>
    struct holder final : holder_base {
        explicit holder(U unit)
            : u(std::move(unit)) {}
        const std::type_info& type() const noexcept override { return typeid(U); }
        std::error_code commit() override { return u.commit(); }
        U u;
    };

    std::unique_ptr<holder_base> unit_;
    std::vector<std::function<void()>> after_commit_;
    bool finished_ = false;
};

} // namespace letterbox
