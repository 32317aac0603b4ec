// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/concepts/delivery_handler.hpp>
#include <letterbox/concepts/handler.hpp>
#include <letterbox/error.hpp>
#include <letterbox/middleware/disposition.hpp>
#include <letterbox/middleware/handler_failure.hpp>
#include <letterbox/middleware/handling.hpp>

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

namespace letterbox::middleware::detail {

inline std::string demangle(const char* name) {
    int status = 0;
    std::unique_ptr<char, void (*)(void*)> text(
        abi::__cxa_demangle(name, nullptr, nullptr, &status), std::free);
    return status == 0 && text ? std::string(text.get()) : std::string(name);
}

/// Marks `f` permanent, with its reason, when its error names a reason of its own
/// (`intrinsic_death_reason`): no layer retries it, and the dead-letter layer records why.
inline handler_failure with_intrinsic_reason(handler_failure f) {
    if (const auto reason = intrinsic_death_reason(f.error); !reason.empty()) {
        f.permanent = true;
        f.reason = std::string(reason);
    }
    return f;
}

/// The failure that the exception being handled (inside a `catch`) describes.
inline handler_failure current_failure() {
    handler_failure f;
    f.exception = std::current_exception();
    try {
        throw;
    } catch (const std::system_error& e) {
        f.error = e.code() ? e.code() : make_error_code(errc::handler_failed);
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

inline handler_failure failure_of(std::error_code ec) {
    handler_failure f;
    f.error = ec;
    f.exception_message = ec.message();
    return with_intrinsic_reason(std::move(f));
}

/// Runs `h` once for `x`: a delivery handler as it is, a plain handler on the message, with
/// its exceptions and error codes turned into `disposition::fail`.
template <class H>
disposition run_inner(H& h, const handling& x) {
    try {
        if constexpr (delivery_handler<H>) {
            return std::invoke(h, x);
        } else if constexpr (std::is_void_v<std::invoke_result_t<H&, const message&>>) {
            std::invoke(h, x.d.msg);
            return disposition::ack();
        } else {
            const std::error_code ec = std::invoke(h, x.d.msg);
            return ec ? disposition::fail(failure_of(ec)) : disposition::ack();
        }
    } catch (...) {
        return disposition::fail(current_failure());
    }
}

/// A plain handler or a delivery handler: what a middleware layer can wrap.
template <class H>
concept wrappable = handler<H> || delivery_handler<H>;

} // namespace letterbox::middleware::detail
