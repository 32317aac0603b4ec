// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/config.hpp>
#include <letterbox/error.hpp>

#include <exception>
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
    /// call, the same one after it. `owner` names what the unit writes to (`idempotent` passes
    /// its inbox store): the first non-null owner claims the unit, and a caller with another
    /// owner, or another type of unit, gets null and commits on its own. A null owner takes the
    /// unit of type `U` whoever claimed it (a handler that writes into the batch beside the
    /// inbox, say). Null too when the group is finished (committed or abandoned). What `begin()`
    /// throws propagates, and is thrown again to every later caller without calling `begin`
    /// again: a database that stayed locked for one message is not waited for once per message.
    template <class U, class Begin>
    U* unit(Begin& begin, const void* owner = nullptr) {
        if (finished_)
            return nullptr;
        if (!unit_) {
            if (begin_failure_)
                std::rethrow_exception(begin_failure_);
            try {
                unit_ = std::make_unique<holder<U>>(begin(), owner);
            } catch (...) {
                begin_failure_ = std::current_exception();
                throw;
            }
            // First of the unit's callbacks: whatever a later one throws, the commit applied.
            (void)static_cast<holder<U>&>(*unit_).u.on_commit([this] { applied_ = true; });
        }
        if (unit_->type() != typeid(U))
            return nullptr;
        if (owner != nullptr && unit_->owner != owner) {
            if (unit_->owner != nullptr)
                return nullptr;
            unit_->owner = owner;
        }
        return &static_cast<holder<U>&>(*unit_).u;
    }

    /// Whether a member has begun the shared unit.
    bool has_unit() const noexcept { return unit_ != nullptr; }

    /// Registers `f` to run after the group committed, after the unit's own `on_commit`
    /// callbacks, in registration order (a member's crash point after the commit, say).
    void after_commit(std::function<void()> f) { after_commit_.push_back(std::move(f)); }

    /// Commits the shared unit (success when no member began one), then runs the `after_commit`
    /// functions. Returns the unit's commit result, or `errc::transaction_closed` when the group
    /// was already finished. An exception propagates: from a callback after the commit applied
    /// (`applied()` then says so), or from the commit itself before it did.
    [[nodiscard]] std::error_code commit() {
        if (finished_)
            return errc::transaction_closed;
        finished_ = true;
        applied_ = !unit_;
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

    /// Whether `commit()` applied the shared unit's writes (or had none to apply).
    bool applied() const noexcept { return applied_; }

private:
    struct holder_base {
        explicit holder_base(const void* o) noexcept
            : owner(o) {}
        virtual ~holder_base() = default;
        virtual const std::type_info& type() const noexcept = 0;
        virtual std::error_code commit() = 0;
        const void* owner;
    };

    template <class U>
    struct holder final : holder_base {
        holder(U unit, const void* o)
            : holder_base(o)
            , u(std::move(unit)) {}
        const std::type_info& type() const noexcept override { return typeid(U); }
        std::error_code commit() override { return u.commit(); }
        U u;
    };

    std::unique_ptr<holder_base> unit_;
    std::vector<std::function<void()>> after_commit_;
    std::exception_ptr begin_failure_;
    bool finished_ = false;
    bool applied_ = false;
};

} // namespace letterbox
