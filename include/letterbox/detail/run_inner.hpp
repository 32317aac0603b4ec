// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/config.hpp>
#include <letterbox/disposition.hpp>
#include <letterbox/error.hpp>
#include <letterbox/handler_failure.hpp>
#include <letterbox/handling.hpp>
#include <letterbox/message.hpp>

#include <boost/system/system_error.hpp>

#include <concepts>
#include <cstdlib>
#include <cxxabi.h>
#include <exception>
#include <functional>
#include <memory>
#include <string>
#include <system_error>
#include <type_traits>
#include <typeinfo>
#include <utility>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::detail {

inline std::string demangle(const char* name) {
    int status = 0;
    std::unique_ptr<char, void (*)(void*)> text(
        abi::__cxa_demangle(name, nullptr, nullptr, &status), std::free);
    return status == 0 && text ? std::string(text.get()) : std::string(name);
}

/// Marks `f` permanent, with its reason, when its error names a reason of its own
/// (`middleware::intrinsic_death_reason`): no layer retries it, and the dead-letter layer records
/// why.
inline middleware::handler_failure with_intrinsic_reason(middleware::handler_failure f) {
    if (const auto reason = middleware::intrinsic_death_reason(f.error); !reason.empty()) {
        f.permanent = true;
        f.reason = std::string(reason);
    }
    return f;
}

/// The failure that the exception being handled (inside a `catch`) describes.
inline middleware::handler_failure current_failure() {
    middleware::handler_failure f;
    f.exception = std::current_exception();
    try {
        throw;
    } catch (const std::system_error& e) {
        f.error = e.code() ? e.code() : make_error_code(errc::handler_failed);
        f.exception_type = demangle(typeid(e).name());
        f.exception_message = e.what();
    } catch (const boost::system::system_error& e) {
        // What `asio::use_awaitable` throws for an operation's error code: keep the code.
        f.error = e.code() ? std::error_code(e.code()) : make_error_code(errc::handler_failed);
        f.exception_type = demangle(typeid(e).name());
        f.exception_message = e.what();
    } catch (const std::exception& e) {
        f.exception_type = demangle(typeid(e).name());
        f.exception_message = e.what();
    } catch (...) {
        const std::type_info* t = abi::__cxa_current_exception_type();
        f.exception_type = t ? demangle(t->name()) : std::string("unknown");
    }
    return with_intrinsic_reason(std::move(f));
}

inline middleware::handler_failure failure_of(std::error_code ec) {
    middleware::handler_failure f;
    f.error = ec;
    f.exception_message = ec.message();
    return with_intrinsic_reason(std::move(f));
}

/// `H` decides a whole handling: the requirements of `letterbox::delivery_handler`, spelled
/// with the standard library alone so that this header stays in the vocabulary, below the
/// concepts (tests/unit/detail/run_inner.cpp checks that the two agree).
template <class H>
concept decides_handling = std::invocable<H&, const middleware::handling&> &&
    std::same_as<std::invoke_result_t<H&, const middleware::handling&>, middleware::disposition>;

/// `H` can stage its writes in a group commit: `h(m, group)` (`middleware::idempotent`).
template <class H>
concept joins_commit_group = requires(H& h, const message& m, commit_group* g) {
    { h(m, g) } -> std::same_as<std::error_code>;
};

/// Runs `h` once for `x`: a delivery handler as it is, a plain handler on the message (in
/// `x.group` if it can join one), with its exceptions and error codes turned into
/// `middleware::disposition::fail`.
template <class H>
middleware::disposition run_inner(H& h, const middleware::handling& x) {
    try {
        if constexpr (decides_handling<H>) {
            return std::invoke(h, x);
        } else if constexpr (joins_commit_group<H>) {
            const std::error_code ec = h(x.d.msg, x.group);
            return ec ? middleware::disposition::fail(failure_of(ec))
                      : middleware::disposition::ack();
        } else if constexpr (std::is_void_v<std::invoke_result_t<H&, const message&>>) {
            std::invoke(h, x.d.msg);
            return middleware::disposition::ack();
        } else {
            const std::error_code ec = std::invoke(h, x.d.msg);
            return ec ? middleware::disposition::fail(failure_of(ec))
                      : middleware::disposition::ack();
        }
    } catch (...) {
        return middleware::disposition::fail(current_failure());
    }
}

} // namespace letterbox::detail

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::middleware::detail {
// The middleware layers spell these `detail::...` from `letterbox::middleware`, where they
// were defined before they moved to the core `detail/`.
using letterbox::detail::current_failure;
using letterbox::detail::failure_of;
using letterbox::detail::run_inner;
} // namespace letterbox::middleware::detail
