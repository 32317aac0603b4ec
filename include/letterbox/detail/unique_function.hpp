// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/config.hpp>

#include <cstddef>
#include <new>
#include <type_traits>
#include <utility>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::detail {

template <class Signature>
class unique_function;

/// A move-only type-erased callable, for storing Asio completion handlers (which may be
/// move-only) until an operation completes. `std::move_only_function` is C++23.
///
/// A callable of up to four pointers that moves without throwing (an `async_op`, a lambda
/// holding a `shared_ptr` or two) is stored in the object itself; a larger one on the heap.
/// Operations store one or more of these each (a publish's confirm completion, its cancellation
/// hook), so the small case saves a `malloc` and a `free` per operation.
template <class R, class... Args>
class unique_function<R(Args...)> {
public:
    unique_function() = default;
    unique_function(std::nullptr_t) noexcept {}

    template <class F>
        requires(!std::is_same_v<std::decay_t<F>, unique_function> &&
                 std::is_invocable_r_v<R, std::decay_t<F>&, Args...>)
    unique_function(F&& f) {
        using T = std::decay_t<F>;
        if constexpr (stored_inline<T>)
            ::new (static_cast<void*>(storage_)) T(std::forward<F>(f));
        else
            ::new (static_cast<void*>(storage_)) T*(new T(std::forward<F>(f)));
        vtable_ = &vtable_for<T>;
    }

    unique_function(unique_function&& other) noexcept { take(other); }

    // The callable held before is destroyed after the new one is in place (as `unique_ptr`
    // does): its destructor may run code that looks at this object.
    unique_function& operator=(unique_function&& other) noexcept {
        if (this != &other) {
            unique_function old(std::move(*this));
            take(other);
        }
        return *this;
    }

    unique_function& operator=(std::nullptr_t) noexcept {
        unique_function old(std::move(*this));
        return *this;
    }

    unique_function(const unique_function&) = delete;
    unique_function& operator=(const unique_function&) = delete;

    ~unique_function() {
        if (vtable_)
            vtable_->destroy(storage_);
    }

    explicit operator bool() const noexcept { return vtable_ != nullptr; }

    R operator()(Args... args) { return vtable_->call(storage_, std::forward<Args>(args)...); }

private:
    static constexpr std::size_t buffer_size = 4 * sizeof(void*);

    template <class T>
    static constexpr bool
        stored_inline = sizeof(T) <= buffer_size &&
                        alignof(T) <= alignof(void*) && std::is_nothrow_move_constructible_v<T>;

    struct vtable {
        R (*call)(unsigned char*, Args&&...);
        void (*move)(unsigned char* to, unsigned char* from) noexcept; // destroys `from`'s
        void (*destroy)(unsigned char*) noexcept;
    };

    template <class T>
    static T& object(unsigned char* p) noexcept {
        if constexpr (stored_inline<T>)
            return *std::launder(reinterpret_cast<T*>(p));
        else
            return **std::launder(reinterpret_cast<T**>(p));
    }

    template <class T>
    static R call(unsigned char* p, Args&&... args) {
        if constexpr (std::is_void_v<R>)
            object<T>(p)(std::forward<Args>(args)...);
        else
            return object<T>(p)(std::forward<Args>(args)...);
    }

    template <class T>
    static void move(unsigned char* to, unsigned char* from) noexcept {
        if constexpr (stored_inline<T>) {
            T& f = object<T>(from);
            ::new (static_cast<void*>(to)) T(std::move(f));
            f.~T();
        } else {
            ::new (static_cast<void*>(to)) T*(*std::launder(reinterpret_cast<T**>(from)));
        }
    }

    template <class T>
    static void destroy(unsigned char* p) noexcept {
        if constexpr (stored_inline<T>)
            object<T>(p).~T();
        else
            delete &object<T>(p);
    }

    template <class T>
    static constexpr vtable vtable_for{&call<T>, &move<T>, &destroy<T>};

    // Leaves `other` empty.
    void take(unique_function& other) noexcept {
        if (!other.vtable_)
            return;
        other.vtable_->move(storage_, other.storage_);
        vtable_ = other.vtable_;
        other.vtable_ = nullptr;
    }

    const vtable* vtable_ = nullptr;
    alignas(void*) unsigned char storage_[buffer_size];
};

} // namespace letterbox::detail
