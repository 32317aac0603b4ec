// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/config.hpp>

#include <memory>
#include <type_traits>
#include <utility>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::detail {

template <class Signature>
class unique_function;

/// A move-only type-erased callable, for storing Asio completion handlers (which may be
/// move-only) until an operation completes. `std::move_only_function` is C++23.
template <class R, class... Args>
class unique_function<R(Args...)> {
public:
    unique_function() = default;
    unique_function(std::nullptr_t) noexcept {}

    template <class F>
        requires(!std::is_same_v<std::decay_t<F>, unique_function> &&
                 std::is_invocable_r_v<R, std::decay_t<F>&, Args...>)
    unique_function(F&& f)
        : impl_(std::make_unique<model<std::decay_t<F>>>(std::forward<F>(f))) {}

    unique_function(unique_function&&) noexcept = default;
    unique_function& operator=(unique_function&&) noexcept = default;

    explicit operator bool() const noexcept { return impl_ != nullptr; }

    R operator()(Args... args) { return impl_->call(std::forward<Args>(args)...); }

private:
    struct concept_t {
        virtual ~concept_t() = default;
        virtual R call(Args... args) = 0;
    };
    template <class F>
    struct model final : concept_t {
        explicit model(F&& f)
            : f_(std::move(f)) {}
        explicit model(const F& f)
            : f_(f) {}
        R call(Args... args) override { return f_(std::forward<Args>(args)...); }
        F f_;
    };

    std::unique_ptr<concept_t> impl_;
};

} // namespace letterbox::detail
